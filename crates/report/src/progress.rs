//! What a person watching a command sees on stderr while it works: a run's
//! line per interval (the messenger report's `-- 89,95,95` CPU columns
//! included), a search's steps, an ipc-compare's rounds and a sweep's bar.
//! Each is a line of text made from the result types of `core`; the binary
//! decides when and where to print it.

use std::time::Duration;
use wirebench_core::index::Entry;
use wirebench_core::result::{CoreBusy, Interval, Phase, RunResult};
use wirebench_core::spec::RunSpec;
use wirebench_core::summaries::Step;
use wirebench_core::units::{format_ns, format_rate, mib};

/// The heading of the interval lines.
pub fn interval_header() -> String {
    format!(
        "{:>7} {:<7} {:>9} {:>10} {:>10} {:>9} {:>9}   busy% client CPUs | server CPUs",
        "time", "phase", "ops/s", "MiB/s out", "MiB/s in", "mean", "p99"
    )
}

fn cores(c: &[CoreBusy]) -> String {
    if c.is_empty() {
        return "-".into();
    }
    c.iter()
        .map(|c| format!("{}:{:.0}", c.cpu, c.busy_pct))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One interval: elapsed time, phase, rates, mean and p99 latency, the busy
/// % of each client and server CPU, and STALL when the hiccup meter's worst
/// wake-up passed `stall_ns`.
pub fn interval_line(iv: &Interval, stall_ns: u64) -> String {
    let secs = (iv.end_ns.saturating_sub(iv.start_ns) as f64 / 1e9).max(1e-9);
    let l = &iv.latency;
    let (mean, p99) = if l.count == 0 {
        ("-".to_string(), "-".to_string())
    } else {
        (format_ns(l.mean_ns), format_ns(l.p99_ns as f64))
    };
    let stall = match iv.hiccup_max_ns {
        Some(m) if m > stall_ns => format!("   STALL {}", format_ns(m as f64)),
        _ => String::new(),
    };
    format!(
        "{:>6.1}s {:<7} {:>9} {:>10.2} {:>10.2} {:>9} {:>9}   {} | {}{stall}",
        iv.end_ns as f64 / 1e9,
        if iv.phase == Phase::Warmup {
            "warmup"
        } else {
            "measure"
        },
        format_rate(iv.ops as f64 / secs),
        mib(iv.bytes_out as f64 / secs),
        mib(iv.bytes_in as f64 / secs),
        mean,
        p99,
        cores(&iv.client_cores),
        cores(&iv.server_cores),
    )
}

/// One step of a search: the rate asked and completed, p50 and p99, and
/// its verdict with why.
pub fn search_step(n: usize, s: &Step) -> String {
    let verdict = match (s.pass, s.kept_up, s.measured_again) {
        _ if s.remeasured => {
            "measured again where it decides the answer: its tries vote".to_string()
        }
        (_, true, _) if s.undecided => "undecided".to_string(),
        (true, _, _) => "pass".to_string(),
        (false, _, true) => format!(
            "missed while the platform stalled ({} s): measured again",
            s.stalled_seconds
        ),
        (false, true, _) => "missed".to_string(),
        (false, false, _) => "missed (server fell behind)".to_string(),
    };
    let tries = match s.tries {
        0 | 1 => String::new(),
        n if s.voted => format!(" ({} of {n} tries held, each judged alone)", s.tries_passed),
        n => format!(" ({n} tries pooled)"),
    };
    let cpu = step_cpu(s);
    format!(
        "  step {n:>2}: {:>8}/s asked, {:>8}/s completed, {}{}: {verdict}{tries}",
        format_rate(s.rate_per_s),
        format_rate(s.completed_per_s),
        step_figures(s),
        if cpu == "-" {
            String::new()
        } else {
            format!(", CPU client/server {cpu}")
        },
    )
}

/// A step's objectives' figures with their 95% intervals:
/// `p99<1ms 812us [640us-1.02ms]`; its p99 where it has none.
pub fn step_figures(s: &Step) -> String {
    if s.intervals.is_empty() {
        return format!("p99 {}", format_ns(s.p99_ns as f64));
    }
    s.slos
        .iter()
        .zip(&s.intervals)
        .map(|(o, ci)| {
            let f = |v: f64| {
                if o.slo.contains("ops") {
                    format!("{v:.0}/s")
                } else if o.slo.contains("errors") {
                    format!("{v:.2}%")
                } else {
                    format_ns(v)
                }
            };
            format!(
                "{} {} [{}-{}]",
                o.slo,
                f(ci.estimate),
                f(ci.low),
                f(ci.high)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A step's client and server CPU as shares of their CPUs: `55%/97%`.
pub fn step_cpu(s: &Step) -> String {
    match (s.client_cpu_pct, s.server_cpu_pct) {
        (Some(c), Some(v)) => format!("{c:.0}%/{v:.0}%"),
        (Some(c), None) => format!("{c:.0}%/-"),
        _ => "-".into(),
    }
}

/// What an ipc-compare is about to measure (`variants` of them per round).
pub fn ipc_started(s: &RunSpec, rounds: usize, variants: usize) -> String {
    let shm = s.shm().expect("an shm workload");
    format!(
        "wirebench ipc-compare: {} {}B, {} session(s), clients as {}, {rounds} round(s) of {variants} variants",
        shm.mode, shm.size_bytes, s.clients, shm.clients_as,
    )
}

/// One variant measured in one round of an ipc-compare.
pub fn ipc_round(round: usize, rounds: usize, name: &str, r: &RunResult) -> String {
    format!(
        "  round {round}/{rounds} {name:<13} {:>10} ops/s  p50 {}",
        format_rate(r.summary.ops_per_s),
        if r.summary.latency.count > 0 {
            format_ns(r.summary.latency.p50_ns as f64)
        } else {
            "-".into()
        }
    )
}

/// A duration as minutes:seconds.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// A sweep's bar as its run `n` of `total` starts.
pub fn sweep_run(
    n: usize,
    total: usize,
    name: &str,
    elapsed: Duration,
    eta: Option<Duration>,
) -> String {
    let width = 20;
    let filled = width * n.saturating_sub(1) / total.max(1);
    format!(
        "sweep [{}{}] {n}/{total}  {name}  elapsed {}  ETA {}",
        "#".repeat(filled),
        ".".repeat(width - filled.min(width)),
        clock(elapsed),
        eta.map_or("?".into(), clock)
    )
}

/// A sweep's closing lines: how many runs completed, where the index is,
/// and the scaling efficiency of each point of several instances.
pub fn sweep_ended(
    name: &str,
    runs: &[Entry],
    planned: usize,
    elapsed: Duration,
    index: &std::path::Path,
) -> Vec<String> {
    let complete = runs.iter().filter(|e| e.status == "complete").count();
    let mut lines = vec![format!(
        "sweep {name}: {complete} of {planned} run(s) complete in {}; index: {}",
        clock(elapsed),
        index.display()
    )];
    for e in runs {
        if let Some(s) = e.scaling_vs_one_instance {
            lines.push(format!(
                "  scaling efficiency {}: {s:.2} (ops/s of {} instances / one instance on all the cores)",
                e.key, e.instances
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_without_completions_shows_dashes_and_a_stall_past_the_threshold() {
        let iv = Interval {
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
            ops: 5000,
            bytes_out: 5 << 20,
            hiccup_max_ns: Some(40_000_000),
            phase: Phase::Measure,
            bytes_in: 0,
            errors: 0,
            ops_per_s: 5000.0,
            sent: 5000,
            latency: Default::default(),
            service_latency: Default::default(),
            latency_hist: String::new(),
            client_cores: vec![CoreBusy {
                cpu: 1,
                busy_pct: 88.6,
                steal_pct: 0.0,
            }],
            server_cores: vec![],
            hiccup_lost_ns: None,
            stalled: false,
            partial: false,
            server_groups: vec![],
            program_busy_pct: vec![],
            program_in_flight: None,
            server_share: vec![],
        };
        let line = interval_line(&iv, 10_000_000);
        assert!(line.starts_with("   2.0s measure"), "{line}");
        assert!(line.contains("5.00"), "5 MiB/s out: {line}");
        assert!(line.contains("1:89 | -"), "{line}");
        assert!(line.contains("STALL 40"), "{line}");
        assert!(
            line.contains(" - "),
            "no latency without completions: {line}"
        );
        assert!(!interval_line(&iv, u64::MAX).contains("STALL"));
    }

    #[test]
    fn the_sweep_bar_fills_with_the_runs_done() {
        let l = sweep_run(11, 20, "p", Duration::from_secs(75), None);
        assert!(l.starts_with("sweep [##########..........] 11/20  p  elapsed 1:15  ETA ?"));
    }
}
