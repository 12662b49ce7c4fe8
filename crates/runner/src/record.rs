//! Keeping what a run measured: its identity stamped (run id, command line,
//! start time), its objectives checked, `run.json` saved (temporary file,
//! then rename) and its line appended to `summary.csv`, right after each
//! run, so that a crash later loses nothing already measured. Also the
//! optional outputs: the histogram log and the traces.

use crate::RunError;
use crate::events::Events;
use std::path::{Path, PathBuf};
use wirebench_core::result::{RunResult, TraceCounts, Warning};
use wirebench_core::slo::Slo;
use wirebench_core::store;

/// Where and how a command records its runs.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Results go to `root/<run-id>/`.
    pub root: PathBuf,
    /// The command line stored with every run (credentials redacted).
    pub command_line: Vec<String>,
    /// Checked against every run.
    pub slos: Vec<Slo>,
    /// Another `summary.csv` that gets each run's line too (a group's
    /// runs are also listed in the results root's).
    pub also_csv: Option<PathBuf>,
    /// The history database each run is indexed in after it is saved.
    pub history: Option<PathBuf>,
    /// Where each run's directory is copied once saved (`--upload`), under
    /// its path in the results directory (`upload_base`).
    pub upload: Option<Upload>,
}

/// `--upload`: the URL, the results directory the keys are relative to,
/// and the CAs of an s3s:// endpoint.
#[derive(Debug, Clone)]
pub struct Upload {
    pub url: wirebench_core::output::UploadUrl,
    pub base: PathBuf,
    pub ca_file: Option<PathBuf>,
}

impl Recorder {
    /// A recorder of runs under `root`.
    pub fn new(root: PathBuf, command_line: Vec<String>, slos: Vec<Slo>) -> Recorder {
        Recorder {
            root,
            command_line,
            slos,
            also_csv: None,
            history: None,
            upload: None,
        }
    }

    /// A recorder of a group of runs (repetitions, a variant): they go to
    /// `<root>/<group>/`, a directory `compare` and `report` take as one.
    pub fn group(&self, group: &str) -> Recorder {
        Recorder {
            root: self.root.join(group),
            also_csv: Some(self.root.clone()),
            ..self.clone()
        }
    }
}

impl Recorder {
    /// Stamps `r` with a new run id made of `label`, the command line and
    /// `started_at`; checks the objectives; saves it. Returns its directory.
    pub fn save(
        &self,
        r: &mut RunResult,
        label: &str,
        started_at: String,
        events: &mut dyn Events,
    ) -> Result<PathBuf, RunError> {
        self.save_as(r, store::new_run_id(label), started_at, events)
    }

    /// As [`Recorder::save`], with a run id chosen beforehand (a server the
    /// run started wrote into its directory already).
    pub fn save_as(
        &self,
        r: &mut RunResult,
        run_id: String,
        started_at: String,
        events: &mut dyn Events,
    ) -> Result<PathBuf, RunError> {
        r.run_id = run_id;
        r.command_line = self.command_line.clone();
        r.started_at = started_at;
        let checked: Result<Vec<_>, String> = self.slos.iter().map(|s| s.check_run(r)).collect();
        r.slos = checked.map_err(RunError::Failed)?;
        r.ramp = wirebench_core::ramp::judge::verdict(r, &self.slos);
        let made = self.root.join(&r.run_id);
        let saved = if made.is_dir() && !made.join("run.json").exists() {
            store::save(&self.root, r)
        } else {
            store::save_new(&self.root, r)
        };
        let dir = match saved {
            Ok(dir) => dir,
            Err(e) => return Err(self.unsaved(r, format!("saving the result: {e}"))),
        };
        for root in std::iter::once(&self.root).chain(&self.also_csv) {
            store::append_summary_csv(root, r).map_err(|e| {
                RunError::Failed(format!(
                    "the result is saved in {}, but not its line in summary.csv: {e}",
                    dir.display()
                ))
            })?;
        }
        if let Some(db) = &self.history {
            index(db, &dir, r, &mut |n| events.note(n))?;
        }
        if let Some(up) = &self.upload {
            upload(up, &dir, events)?;
        }
        Ok(dir)
    }

    /// A result its directory could not take (a full disk, a directory
    /// taken away): what the failed save made and left empty is removed,
    /// and the result is kept in memory-backed /dev/shm (else the temporary
    /// directory), or handed back whole to be written on stdout.
    fn unsaved(&self, r: &RunResult, why: String) -> RunError {
        let _ = std::fs::remove_dir(self.root.join(&r.run_id));
        let json = serde_json::to_string_pretty(r).expect("a result always serializes");
        let name = format!("wirebench-unsaved-{}.json", r.run_id);
        let kept = [PathBuf::from("/dev/shm"), std::env::temp_dir()]
            .into_iter()
            .filter(|d| d.is_dir())
            .find_map(|d| {
                let p = d.join(&name);
                let mut f = store::create_new(&p).ok()?;
                match std::io::Write::write_all(&mut f, json.as_bytes()) {
                    Ok(()) => Some(p),
                    Err(_) => {
                        // Ours, half-written: removed.
                        let _ = std::fs::remove_file(&p);
                        None
                    }
                }
            });
        RunError::Unsaved(Box::new(crate::Unsaved { why, kept, json }))
    }
}

/// Copies the run saved in `dir` to its place under `up` (its path under
/// the results directory); a failure fails the command, the run kept here
/// and the command that completes the copy said.
fn upload(up: &Upload, dir: &Path, events: &mut dyn Events) -> Result<(), RunError> {
    let rel = match dir.strip_prefix(&up.base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => PathBuf::from(dir.file_name().unwrap_or_default()),
    };
    let url = crate::upload::under(&up.url, &rel);
    match crate::upload::upload_dir(&url, dir, up.ca_file.as_deref()) {
        Ok(c) => {
            events.note(&format!("uploaded to {url}: {}", crate::upload::said(&c)));
            Ok(())
        }
        Err(e) => Err(RunError::Failed(format!(
            "the run is saved in {dir}, but its upload to {url} failed: {e}; `wirebench s3 upload {dir} {url}` sends what is missing",
            dir = dir.display()
        ))),
    }
}

/// Indexes the run saved in `dir` in the history at `db` (a damaged
/// database made again, a locked one leaving the run queued: each said in
/// a note). A run saved but not indexed otherwise fails loudly, saying how
/// to index it later: the index is made again from the files by `history
/// import`.
pub fn index(
    db: &Path,
    dir: &Path,
    r: &RunResult,
    note: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    let results = db.parent().unwrap_or(Path::new("."));
    match wirebench_history::upkeep::record(results, dir, &mut |h| h.index(dir, r)) {
        Ok(notes) => {
            notes.iter().for_each(|n| note(n));
            Ok(())
        }
        Err(e) => Err(RunError::Failed(format!(
            "the result is saved in {}, but not indexed in the history: {e}; `wirebench history import {}` indexes it",
            dir.display(),
            results.display()
        ))),
    }
}

/// Writes the run's per-second histograms to `path` (HdrHistogram
/// interval-log format).
pub fn write_hlog(path: &Path, r: &RunResult) -> Result<(), RunError> {
    let mut buf = Vec::new();
    wirebench_core::hlog::write(&mut buf, r)
        .map_err(|e| RunError::Failed(format!("--hlog {}: {e}", path.display())))?;
    store::write_atomic(path, &buf)
        .map_err(|e| RunError::Failed(format!("writing --hlog {}: {e}", path.display())))
}

/// The client's trace of one run, streamed into the run's directory while
/// it runs.
pub struct ClientTrace {
    drain: wirebench_trace::Drain,
    dir: PathBuf,
}

impl ClientTrace {
    /// Starts draining this process's events into `dir/trace-client.txt`
    /// (`dir` is made: the run's directory, before its result is saved).
    pub fn start(dir: &Path) -> Result<ClientTrace, RunError> {
        let file = dir.join("trace-client.txt");
        let drain = std::fs::create_dir_all(dir)
            .and_then(|()| wirebench_trace::Drain::start(&file, "client"))
            .map_err(|e| RunError::Failed(format!("writing {}: {e}", file.display())))?;
        Ok(ClientTrace {
            drain,
            dir: dir.to_path_buf(),
        })
    }

    /// Ends the client's trace, moves the server's (if it wrote one) beside
    /// it, copies the client's to `copy_to`, and puts their counts in the
    /// result, with a warning for each side that lost events.
    pub fn finish(
        self,
        r: &mut RunResult,
        server: Option<PathBuf>,
        copy_to: Option<&Path>,
    ) -> Result<Traces, RunError> {
        let client = self.dir.join("trace-client.txt");
        // The server's trace is moved beside the client's, and in any case
        // not left in the temporary directory.
        let mut moved = None;
        let mut server_counts = None;
        let mut failed = None;
        if let Some(f) = server.filter(|f| f.exists()) {
            let to = self.dir.join("trace-server.txt");
            match store::copy_atomic(&f, &to) {
                Ok(()) => {
                    server_counts = Some(footer(&to));
                    moved = Some(to);
                }
                Err(e) => failed = Some(format!("writing {}: {e}", to.display())),
            }
            let _ = std::fs::remove_file(&f);
        }
        let d = self
            .drain
            .finish()
            .map_err(|e| RunError::Failed(format!("writing {}: {e}", client.display())))?;
        if let Some(why) = failed {
            return Err(RunError::Failed(why));
        }
        if let Some(f) = copy_to {
            store::copy_atomic(&client, f)
                .map_err(|e| RunError::Failed(format!("writing --trace {}: {e}", f.display())))?;
        }
        let counts = TraceCounts {
            sample: r.spec.trace_sample.unwrap_or(1),
            client_events: d.events,
            client_begun: d.begins,
            client_ended: d.ends,
            client_lost: d.lost,
            server_events: server_counts.and_then(|c| c.0),
            server_lost: server_counts.and_then(|c| c.1),
        };
        for (side, lost, events) in [
            ("client", Some(d.lost), Some(d.events)),
            ("server", counts.server_lost, counts.server_events),
        ] {
            if let Some(lost) = lost.filter(|&l| l > 0) {
                r.warnings.push(Warning::TraceLost {
                    side: side.into(),
                    lost,
                    events: events.unwrap_or(0),
                });
            }
        }
        r.trace = Some(counts);
        Ok(Traces {
            client,
            client_events: d.events,
            server: moved,
        })
    }
}

/// A drained trace file's last lines: events written and lost (None where
/// the file does not say: its drain did not finish).
fn footer(path: &Path) -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut found = (None, None);
    for line in text.lines().rev().take(4) {
        if let Some(n) = line.strip_prefix("# events ") {
            found.0 = n.trim().parse().ok();
        } else if let Some(n) = line.strip_prefix("# lost ") {
            found.1 = n.trim().parse().ok();
        }
    }
    found
}

/// Where [`ClientTrace::finish`] put the traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traces {
    pub client: PathBuf,
    pub client_events: u64,
    /// None when the server wrote no trace (it did not stop cleanly).
    pub server: Option<PathBuf>,
}

/// A run in the IPC report's CSV shape (its reqres_loop and
/// data_channel_write lines): the header, then the line. The report's
/// columns come first, in its order and meaning: sessions, mt|mp, the mode
/// (reqres_loop's sync|async|nores; data_channel_write has none), the
/// message size in bytes, nloop (per session), the elapsed seconds,
/// messages per second (a round trip is two) and "GB/s" (GiB of messages
/// per second, as the report computes it). Then wirebench's: the
/// operations in all, p50 and p99 in us (empty without latency).
///
/// A run of reqres_loop or data_channel_write (`--parser tateyama-*`)
/// gives the program's own figures as it printed them; a native shm run
/// its measured ones. With `with_mode`, the mode column is always there
/// (ipc-compare's table mixes modes).
pub fn ipc_csv(r: &RunResult, with_mode: bool) -> (String, String) {
    let s = &r.summary;
    let spec = &r.spec;
    let tool = s
        .tool
        .as_ref()
        .filter(|t| t.parser.starts_with("tateyama-") && t.figures.contains_key("sessions"));
    let (p50, p99) = if s.latency.count > 0 && s.has_latency("p50") {
        (
            format!("{:.3}", s.latency.p50_ns as f64 / 1e3),
            format!("{:.3}", s.latency.p99_ns as f64 / 1e3),
        )
    } else {
        (String::new(), String::new())
    };
    // sessions, mt|mp, mode (None: the data channel's), size, nloop,
    // elapsed, messages/s, GiB/s.
    let (sessions, clients, mode, size, nloop, elapsed, msgs, gib) = match tool {
        Some(t) => {
            let fig = |k: &str| t.figures.get(k).copied().unwrap_or(f64::NAN);
            let sessions = fig("sessions");
            let nloop = t
                .figures
                .get("nloop")
                .copied()
                .unwrap_or(s.ops as f64 / sessions);
            // As the program printed them (the shortest text of each number).
            (
                format!("{sessions}"),
                t.words.get("clients").cloned().unwrap_or_default(),
                t.words.get("mode").cloned(),
                format!("{}", fig("message size (bytes)")),
                format!("{nloop}"),
                format!("{}", fig("elapsed (s)")),
                format!("{}", fig("messages/s")),
                format!("{}", fig("GB/s (GiB/s)")),
            )
        }
        None => {
            let clients = match spec.shm().map(|x| x.clients_as) {
                Some(wirebench_core::spec::ClientsAs::Processes) => "mp",
                _ => "mt",
            };
            let size = spec.transport.size_bytes();
            let msgs_per_s = r.messages_per_s().unwrap_or(s.ops_per_s);
            let gib_per_s = msgs_per_s * size as f64 / (1u64 << 30) as f64;
            let sessions = spec.connections().max(1);
            let per_session = s.ops as f64 / sessions as f64;
            let stream = spec
                .shm()
                .is_some_and(|x| x.mode == wirebench_core::spec::ShmMode::Stream);
            (
                sessions.to_string(),
                clients.to_string(),
                (!stream).then(|| spec.transport.mode_name()),
                size.to_string(),
                if per_session.fract() == 0.0 {
                    format!("{per_session:.0}")
                } else {
                    format!("{per_session:.1}")
                },
                format!("{:.6}", s.measured_ns as f64 / 1e9),
                format!("{msgs_per_s:.6}"),
                format!("{gib_per_s:.3}"),
            )
        }
    };
    let mode = match (mode, with_mode) {
        (Some(m), _) => Some(m),
        (None, true) => Some(spec.transport.mode_name()),
        (None, false) => None,
    };
    let mut head = vec!["sessions", "clients_as"];
    let mut line = vec![sessions, clients];
    if let Some(m) = mode {
        head.push("mode");
        line.push(m);
    }
    head.extend([
        "size_bytes",
        "nloop",
        "elapsed_s",
        "messages_per_s",
        "gib_per_s",
        "operations",
        "p50_us",
        "p99_us",
    ]);
    line.extend([size, nloop, elapsed, msgs, gib, s.ops.to_string(), p50, p99]);
    (head.join(","), line.join(","))
}
