//! `--live`: a terminal dashboard of the run, redrawn each second in the
//! terminal's last lines (an inline viewport: the last frame stays on the
//! screen, above the summary): the rate, latency percentiles, errors, the
//! stage, the CPU of each core, and the last minute of rate and p99.
//! Notes scroll above it. Without a terminal on stderr, the lines are
//! printed instead (see [`Live::open`]).

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline, Wrap};
use std::collections::VecDeque;
use std::io::{IsTerminal, Stderr};
use wirebench_core::hist::LatencyHist;
use wirebench_core::result::{CoreBusy, Interval, Phase, Placement};
use wirebench_core::spec::RunSpec;
use wirebench_core::units::{format_ns, format_rate};
use wirebench_core::values::StopSpec;

/// Seconds of history the sparklines show (the widest terminal's).
const HISTORY: usize = 240;

/// The dashboard's state and its terminal.
pub struct Live {
    /// Made when the run's CPUs are known (its height depends on them).
    term: Option<Terminal<CrosstermBackend<Stderr>>>,
    height: u16,
    title: String,
    /// Warm-up and measured phase, in s (None: the run stops at a count).
    planned_s: Option<f64>,
    warmup_s: f64,
    stages: Vec<wirebench_core::stages::Stage>,
    /// The last second.
    last: Option<Second>,
    /// The measured phase so far.
    run_hist: LatencyHist,
    run_ops: u64,
    run_errors: u64,
    run_s: f64,
    rates: VecDeque<u64>,
    p99s: VecDeque<u64>,
    /// Which run of the command (a repetition, a search's step).
    run: usize,
}

struct Second {
    end_s: f64,
    phase: Phase,
    ops_per_s: f64,
    errors: u64,
    p50_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    client: Vec<CoreBusy>,
    server: Vec<CoreBusy>,
}

/// Rows of the frame besides the CPUs': borders, status, figures, charts.
const FIXED_ROWS: u16 = 2 + 1 + 2 + 5;
/// The most rows of CPUs (two to a row).
const MAX_CPU_ROWS: u16 = 8;

impl Live {
    /// The dashboard on stderr, or None (a note says why) when stderr is
    /// not a terminal: the lines are printed then.
    pub fn open() -> Option<Live> {
        if !std::io::stderr().is_terminal() {
            eprintln!("--live: stderr is not a terminal; printing a line per second instead");
            return None;
        }
        Some(Live {
            term: None,
            height: 0,
            title: "wirebench".into(),
            planned_s: None,
            warmup_s: 0.0,
            stages: Vec::new(),
            last: None,
            run_hist: wirebench_core::hist::new_hist(),
            run_ops: 0,
            run_errors: 0,
            run_s: 0.0,
            rates: VecDeque::new(),
            p99s: VecDeque::new(),
            run: 0,
        })
    }

    /// The terminal's viewport, tall enough for `cpus` CPUs, made once.
    fn term(&mut self, cpus: usize) -> Option<&mut Terminal<CrosstermBackend<Stderr>>> {
        if self.term.is_none() {
            let rows = u16::try_from(cpus.div_ceil(2)).unwrap_or(u16::MAX);
            self.height = FIXED_ROWS + rows.clamp(1, MAX_CPU_ROWS);
            let t = Terminal::with_options(
                CrosstermBackend::new(std::io::stderr()),
                ratatui::TerminalOptions {
                    viewport: ratatui::Viewport::Inline(self.height),
                },
            );
            match t {
                Ok(t) => self.term = Some(t),
                Err(e) => eprintln!("--live: no terminal ({e})"),
            }
        }
        self.term.as_mut()
    }

    /// The run's headline and plan.
    pub fn started(&mut self, spec: &RunSpec, placement: &Placement, headline: &str) {
        let cpus =
            placement.client_cpus.len() + placement.server_cpus.as_ref().map_or(0, |c| c.len());
        self.term(cpus);
        self.title = headline.lines().next().unwrap_or("wirebench").to_string();
        self.warmup_s = spec.warmup_ns as f64 / 1e9;
        self.planned_s = match spec.stop {
            StopSpec::DurationNs(d) => Some(self.warmup_s + d as f64 / 1e9),
            StopSpec::Count(_) => None,
        };
        self.stages = spec.stages.clone();
        self.draw();
    }

    /// A new run of the command begins: its figures start from nothing.
    pub fn connected(&mut self) {
        self.run += 1;
        self.last = None;
        self.run_hist.reset();
        (self.run_ops, self.run_errors, self.run_s) = (0, 0, 0.0);
        self.rates.clear();
        self.p99s.clear();
        self.draw();
    }

    /// A second of the load, and its latency histogram.
    pub fn interval(&mut self, iv: &Interval, hist: &LatencyHist) {
        let secs = iv.end_ns.saturating_sub(iv.start_ns) as f64 / 1e9;
        let ops_per_s = if secs > 0.0 {
            iv.ops as f64 / secs
        } else {
            0.0
        };
        let q = |q: f64| hist.value_at_quantile(q);
        self.last = Some(Second {
            end_s: iv.end_ns as f64 / 1e9,
            phase: iv.phase,
            ops_per_s,
            errors: iv.errors,
            p50_ns: q(0.5),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            client: iv.client_cores.clone(),
            server: iv.server_cores.clone(),
        });
        if iv.phase == Phase::Measure {
            let _ = self.run_hist.add(hist);
            self.run_ops += iv.ops;
            self.run_errors += iv.errors;
            self.run_s += secs;
        }
        push(&mut self.rates, wirebench_core::units::whole(ops_per_s));
        push(&mut self.p99s, q(0.99));
        self.draw();
    }

    /// Lines above the dashboard (wrapped to the terminal's width), where
    /// they stay; before the dashboard is drawn, plain lines.
    pub fn note(&mut self, text: &str) {
        // A note may carry a peer's text: shown, never obeyed.
        let text = &*wirebench_core::text::visible(text);
        let Some(term) = self.term.as_mut() else {
            eprintln!("{text}");
            return;
        };
        let width = term
            .size()
            .map(|s| usize::from(s.width.max(1)))
            .unwrap_or(80);
        let rows: usize = text
            .lines()
            .map(|l| l.chars().count().div_ceil(width).max(1))
            .sum();
        let n = u16::try_from(rows).unwrap_or(u16::MAX);
        let lines: Vec<Line> = text.lines().map(|l| Line::from(l.to_string())).collect();
        let drawn = term.insert_before(n, |buf| {
            use ratatui::widgets::Widget;
            let area = buf.area;
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .render(area, buf);
        });
        if drawn.is_err() {
            eprintln!("{text}");
        }
    }

    /// The last frame stays; the cursor goes below it.
    pub fn finish(mut self) {
        self.draw();
        let height = self.height;
        if let Some(term) = self.term.as_mut() {
            let _ = term.show_cursor();
            let area = term.get_frame().area();
            let _ = term.set_cursor_position((0, area.y.saturating_add(height)));
            eprintln!();
        }
    }

    fn draw(&mut self) {
        let cores = self
            .last
            .as_ref()
            .map_or(0, |s| s.client.len() + s.server.len());
        let view = View::of(self);
        if let Some(term) = self.term(cores) {
            let _ = term.draw(|f| view.render(f, f.area()));
        }
    }
}

fn push(q: &mut VecDeque<u64>, v: u64) {
    if q.len() == HISTORY {
        q.pop_front();
    }
    q.push_back(v);
}

/// What one frame shows, taken from the state (the terminal is borrowed
/// to draw it).
struct View {
    title: String,
    status: Line<'static>,
    figures: Vec<Line<'static>>,
    rates: Vec<u64>,
    p99s: Vec<u64>,
    cores: Vec<(String, f64)>,
    progress: Option<f64>,
}

impl View {
    fn of(l: &Live) -> View {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        let (phase, elapsed) = match &l.last {
            None => ("connecting", 0.0),
            Some(s) if s.phase == Phase::Warmup => ("warm-up", s.end_s),
            Some(s) => ("measure", s.end_s),
        };
        let plan = match l.planned_s {
            Some(p) => format!("{elapsed:.0}s / {p:.0}s"),
            None => format!("{elapsed:.0}s"),
        };
        let mut status = vec![
            Span::styled(format!(" {phase} "), bold.fg(Color::Black).bg(Color::Cyan)),
            Span::raw(format!("  {plan}")),
        ];
        if l.run > 1 {
            status.push(Span::styled(format!("  run {}", l.run), dim));
        }
        if let Some(stage) = stage_text(&l.stages, elapsed - l.warmup_s) {
            status.push(Span::raw(format!("  stage {stage}")));
        }
        let mut figures = Vec::new();
        match &l.last {
            Some(s) => {
                figures.push(Line::from(vec![
                    Span::styled("last second  ", dim),
                    Span::styled(format!("{:>8} ops/s", format_rate(s.ops_per_s)), bold),
                    Span::raw(format!(
                        "   p50 {:>8}   p99 {:>8}   p99.9 {:>8}",
                        format_ns(s.p50_ns as f64),
                        format_ns(s.p99_ns as f64),
                        format_ns(s.p999_ns as f64)
                    )),
                    Span::styled(
                        format!("   errors {}", s.errors),
                        if s.errors > 0 {
                            Style::default().fg(Color::Red)
                        } else {
                            Style::default()
                        },
                    ),
                ]));
            }
            None => figures.push(Line::styled("waiting for the first second", dim)),
        }
        if l.run_s > 0.0 {
            let h = &l.run_hist;
            figures.push(Line::from(vec![
                Span::styled("measured     ", dim),
                Span::styled(
                    format!("{:>8} ops/s", format_rate(l.run_ops as f64 / l.run_s)),
                    bold,
                ),
                Span::raw(format!(
                    "   p50 {:>8}   p99 {:>8}   p99.9 {:>8}   errors {}",
                    format_ns(h.value_at_quantile(0.5) as f64),
                    format_ns(h.value_at_quantile(0.99) as f64),
                    format_ns(h.value_at_quantile(0.999) as f64),
                    l.run_errors
                )),
            ]));
        }
        let mut cores = Vec::new();
        if let Some(s) = &l.last {
            for (side, cs) in [("client", &s.client), ("server", &s.server)] {
                for c in cs {
                    cores.push((format!("{side} cpu{}", c.cpu), c.busy_pct / 100.0));
                }
            }
        }
        View {
            title: l.title.clone(),
            status: Line::from(status),
            figures,
            rates: l.rates.iter().copied().collect(),
            p99s: l.p99s.iter().copied().collect(),
            cores,
            progress: l.planned_s.map(|p| (elapsed / p).clamp(0.0, 1.0)),
        }
    }

    fn render(&self, f: &mut ratatui::Frame, area: Rect) {
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(
                format!(" {} ", self.title),
                Style::default().add_modifier(Modifier::BOLD),
            ))
            .title_bottom(Line::from(" wirebench --live ").right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        let [status, figures, charts, cpus] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(2),
            Constraint::Length(5),
            Constraint::Min(1),
        ])
        .areas(inner);
        let [status_text, bar] =
            Layout::horizontal([Constraint::Min(30), Constraint::Length(24)]).areas(status);
        f.render_widget(Paragraph::new(self.status.clone()), status_text);
        if let Some(p) = self.progress {
            f.render_widget(
                Gauge::default()
                    .ratio(p)
                    .gauge_style(Style::default().fg(Color::Cyan)),
                bar,
            );
        }
        f.render_widget(Paragraph::new(self.figures.clone()), figures);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(charts);
        let tail = |v: &[u64], width: u16| -> Vec<u64> {
            let w = usize::from(width.saturating_sub(2));
            v[v.len().saturating_sub(w)..].to_vec()
        };
        let rate_max = self.rates.iter().copied().max().unwrap_or(0);
        f.render_widget(
            Sparkline::default()
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(format!(" ops/s (max {}) ", format_rate(rate_max as f64))),
                )
                .data(tail(&self.rates, left.width))
                .style(Style::default().fg(Color::Green)),
            left,
        );
        let p99_max = self.p99s.iter().copied().max().unwrap_or(0);
        f.render_widget(
            Sparkline::default()
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(format!(" p99 (max {}) ", format_ns(p99_max as f64))),
                )
                .data(tail(&self.p99s, right.width))
                .style(Style::default().fg(Color::Yellow)),
            right,
        );
        // The CPUs: as many as fit, two to a row.
        let rows = usize::from(cpus.height);
        let shown: Vec<_> = self.cores.iter().take(rows * 2).collect();
        let row_areas = Layout::vertical(vec![Constraint::Length(1); rows]).split(cpus);
        for (i, (name, busy)) in shown.iter().enumerate() {
            let [a, b] =
                Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(row_areas[i / 2]);
            let at = if i % 2 == 0 { a } else { b };
            f.render_widget(
                Gauge::default()
                    .ratio(busy.clamp(0.0, 1.0))
                    .label(format!("{name} {:>3.0}% busy", busy * 100.0))
                    .gauge_style(Style::default().fg(if *busy > 0.9 {
                        Color::Red
                    } else {
                        Color::Blue
                    })),
                at,
            );
        }
    }
}

/// `2/3 1.0k->20.0k/s, now 6.2k/s`, at `t` s into the measured phase.
fn stage_text(stages: &[wirebench_core::stages::Stage], t: f64) -> Option<String> {
    if stages.is_empty() || t < 0.0 {
        return None;
    }
    let mut start = 0.0;
    for (i, s) in stages.iter().enumerate() {
        let end = start + s.seconds();
        if t <= end || i + 1 == stages.len() {
            if s.conns.is_some() {
                return Some(format!("{}/{} {}", i + 1, stages.len(), s.text()));
            }
            let f = ((t - start) / s.seconds().max(1e-9)).clamp(0.0, 1.0);
            let now = s.from_per_s + (s.to_per_s - s.from_per_s) * f;
            return Some(format!(
                "{}/{} {}, now {}/s",
                i + 1,
                stages.len(),
                s.text(),
                format_rate(now)
            ));
        }
        start = end;
    }
    None
}
