//! What a person watching sees: one line per interval on stderr (elapsed
//! time, phase, ops/s, MiB/s out and in, mean and p99 latency, the busy % of
//! each client and server CPU, as the messenger report's `-- 89,95,95`
//! columns), notes, and per run its summary (text), line (csv) or result
//! (json) on stdout.

use std::io::Write;
use std::path::Path;
use wirebench_core::request::Format;
use wirebench_core::result::{Placement, RunResult};
use wirebench_core::slo::Slo;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_core::units::format_ns;
use wirebench_report::progress;
use wirebench_runner::IntervalReport;
use wirebench_runner::run::RunEvents;
use wirebench_runner::session::Events;

/// Prints a command's events: progress (text format only) and results.
pub struct Console {
    pub format: Format,
    /// Runs of the command print a whole JSON result only when alone.
    pub repeat: usize,
    /// Print each saved run (its summary, line or result).
    pub results: bool,
    /// Errors of writing to stdout (a closed pipe), reported at the end.
    pub failed: Option<std::io::Error>,
    /// A second whose hiccup-meter stall passed this is flagged.
    stall_ns: u64,
    /// The CSV header line was printed (it comes before the first line).
    pub csv_header: bool,
    /// Live metrics (`--metrics-listen`), fed each second.
    pub exporter: Option<wirebench_runner::metrics::Exporter>,
    /// Where scrapes are served was said (once).
    said_serving: bool,
    /// The live view (`--live`), in place of the lines.
    pub live: Option<wirebench_report::live::Live>,
    /// Print the connect line, the header and each second (a search prints
    /// a line per step instead).
    pub seconds: bool,
    /// What goes to stdout after the live view's last frame, when both are
    /// on the terminal.
    deferred: Vec<u8>,
}

impl Console {
    pub fn new(format: Format) -> Console {
        Console {
            format,
            repeat: 1,
            results: true,
            failed: None,
            stall_ns: 10_000_000,
            csv_header: false,
            exporter: None,
            said_serving: false,
            live: None,
            seconds: true,
            deferred: Vec::new(),
        }
    }

    fn text(&self) -> bool {
        self.format == Format::Text
    }

    /// The first error of writing to stdout, if any. Live metrics stay
    /// served for their hold, then stop.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.end_live();
        self.failed.map_or(Ok(()), Err)
    }

    /// The live view leaves its last frame; live metrics are served for
    /// their hold, then stop.
    pub fn end_live(&mut self) {
        if let Some(l) = self.live.take() {
            l.finish();
            let text = std::mem::take(&mut self.deferred);
            self.out(|o| o.write_all(&text));
        }
        if let Some(e) = self.exporter.take() {
            e.finish();
        }
    }

    /// Writes to stdout; the first error is kept for [`Console::finish`].
    /// While the live view is drawn on the same terminal, the text waits
    /// for its last frame (then goes below it).
    pub fn out(&mut self, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
        if self.failed.is_some() {
            return;
        }
        if self.live.is_some() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            let _ = f(&mut self.deferred);
            return;
        }
        let mut out = crate::ui::stdout();
        if let Err(e) = f(&mut out).and_then(|_| out.flush()) {
            self.failed = Some(e);
        }
    }
}

impl Events for Console {
    fn note(&mut self, text: &str) {
        match &mut self.live {
            Some(l) => l.note(text),
            None => eprintln!("{text}"),
        }
    }

    fn connected(&mut self, connect_time_ns: u64) {
        if let Some(e) = &mut self.exporter {
            e.connected();
        }
        if let Some(l) = &mut self.live {
            l.note(&format!(
                "connected in {}",
                format_ns(connect_time_ns as f64)
            ));
            l.connected();
        } else if self.text() && self.seconds {
            eprintln!("connected in {}", format_ns(connect_time_ns as f64));
            eprintln!("{}", progress::interval_header());
        }
    }

    fn interval(&mut self, iv: &IntervalReport) {
        if let Some(e) = &mut self.exporter {
            e.interval(iv);
        }
        if let Some(l) = &mut self.live {
            l.interval(&iv.point(), &iv.data.hist);
        } else if self.text() && self.seconds {
            eprintln!("{}", progress::interval_line(&iv.point(), self.stall_ns));
        }
    }

    fn agent_interval(
        &mut self,
        agent: &str,
        iv: &wirebench_core::result::Interval,
        live: &wirebench_runner::events::LiveSecond,
    ) {
        if let Some(e) = &mut self.exporter {
            e.agent_interval(agent, iv, live);
        }
    }
}

impl RunEvents for Console {
    fn started(&mut self, spec: &RunSpec, p: &Placement, endpoint: &Endpoint, pid: Option<u32>) {
        self.stall_ns = spec.hiccup_threshold_ns.unwrap_or(u64::MAX);
        // Said once: where scrapes are served, when it must be the client's
        // CPUs.
        let serving = self.exporter.as_mut().and_then(|e| e.started(spec));
        let serving = serving.filter(|_| !self.said_serving);
        if let Some(s) = &serving {
            self.said_serving = true;
            if self.text() {
                eprintln!("{s}");
            }
        }
        let headline = wirebench_report::summary::headline(spec, p, endpoint, pid);
        if let Some(l) = &mut self.live {
            l.started(spec, p, &headline);
            l.note(&headline);
        } else if self.text() {
            eprintln!("{headline}");
        }
    }

    fn repetition(&mut self, k: usize, n: usize) {
        if let Some(l) = &mut self.live {
            l.note(&format!("repetition {k} of {n}"));
        } else if self.text() {
            eprintln!("repetition {k} of {n}");
        }
    }

    fn saved(&mut self, r: &RunResult, dir: &Path, slos: &[Slo]) {
        if !self.results {
            return;
        }
        let (format, repeat) = (self.format, self.repeat);
        let header = format == Format::Csv && !std::mem::replace(&mut self.csv_header, true);
        let (csv_head, csv_line) = wirebench_runner::record::ipc_csv(r, false);
        self.out(|out| match format {
            Format::Csv if header => writeln!(out, "{csv_head}\n{csv_line}"),
            Format::Text => {
                wirebench_report::summary::print(&mut &mut *out, r, &dir.join("run.json"))?;
                wirebench_report::summary::print_slos(&mut &mut *out, slos, &r.slos)
            }
            Format::Csv => writeln!(out, "{csv_line}"),
            Format::Json if repeat == 1 => {
                serde_json::to_writer_pretty(&mut *out, r)?;
                writeln!(out)
            }
            Format::Json => Ok(()),
        });
    }
}

/// The live metrics and live view the flags ask for, on `console` (the
/// metrics' address printed).
pub fn watch(console: &mut Console, flags: &wirebench_core::live::LiveFlags) -> anyhow::Result<()> {
    console.exporter = match wirebench_runner::metrics::Exporter::of_flags(flags) {
        Ok(e) => e,
        Err(Ok(why)) => return Err(crate::cli::error::UsageError(why).into()),
        Err(Err(e)) => return Err(e.into()),
    };
    if let Some(e) = &console.exporter {
        eprintln!("metrics: http://{}/metrics", e.addr());
    }
    console.live = flags
        .live_view()
        .then(wirebench_report::live::Live::open)
        .flatten();
    Ok(())
}
