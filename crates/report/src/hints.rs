//! Hints: what the data suggest, each with its evidence. They point where
//! to look; they prove nothing.

use wirebench_core::result::{CoreBusy, Phase, RunResult, Warning};
use wirebench_core::units::{format_ns, format_rate};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The client used nearly all the CPU it may use: it may be the limit.
    ClientBound,
    /// The server used nearly all its CPUs: it is likely the limit.
    ServerBound,
    /// Both did: either may be the limit.
    BothBound,
    /// Run-queue wait or other processes' CPU on the run's CPUs.
    MachineBusy,
    /// The hiccup meter saw the platform stop everything.
    PlatformStalls,
    /// One server core saturated while another idles.
    Imbalance,
    /// Throughput falls as clients grow past a peak.
    Contention,
    /// p99 far above p50.
    Tail,
    /// Of several endpoints, one answers much slower (or not at all).
    SlowEndpoint,
    /// One load agent's part was bound by its own host.
    AgentBound,
}

#[derive(Debug, Clone)]
pub struct Hint {
    pub kind: Kind,
    /// The run it is about (None: about a set of runs).
    pub run_id: Option<String>,
    pub text: String,
    pub evidence: String,
}

/// Mean busy % of each core over the measured seconds.
fn mean_busy(r: &RunResult, server: bool) -> Vec<(usize, f64)> {
    let mut acc: std::collections::BTreeMap<usize, (f64, usize)> = Default::default();
    for iv in r.intervals.iter().filter(|i| i.phase == Phase::Measure) {
        let cores: &Vec<CoreBusy> = if server {
            &iv.server_cores
        } else {
            &iv.client_cores
        };
        for c in cores {
            let e = acc.entry(c.cpu).or_default();
            e.0 += c.busy_pct;
            e.1 += 1;
        }
    }
    acc.into_iter()
        .map(|(cpu, (sum, n))| (cpu, sum / n as f64))
        .collect()
}

/// Hints about one run.
pub fn of_run(r: &RunResult) -> Vec<Hint> {
    let id = Some(r.run_id.clone());
    // The bound and busy rules are the runner's: their verdicts are in the
    // result, with their figures.
    let mut out: Vec<Hint> = r
        .warnings
        .iter()
        .filter_map(warning_hint)
        .map(|(kind, text, evidence)| Hint {
            kind,
            run_id: id.clone(),
            text: text.into(),
            evidence,
        })
        .collect();
    // A result of schema 2 has the client-bound verdict without its figures.
    if r.summary.client_bound
        && !out
            .iter()
            .any(|h| matches!(h.kind, Kind::ClientBound | Kind::BothBound))
    {
        out.push(Hint {
            kind: Kind::ClientBound,
            run_id: id.clone(),
            text: "the result is likely client-bound: a faster server would not show".into(),
            evidence: format!(
                "the run recorded its client as bound (busiest client core {:.0}% busy)",
                r.summary.client_core_max_busy_pct
            ),
        });
    }
    out.extend(imbalance(r));
    out.extend(slow_endpoint(r));
    out.extend(tail(r));
    out
}

/// The hint a warning of the runner's gives (its kind, text and evidence),
/// if it gives one.
fn warning_hint(w: &Warning) -> Option<(Kind, &'static str, String)> {
    Some(match w {
        Warning::ClientBound {
            client_cpu_pct,
            cpus,
        } => (
            Kind::ClientBound,
            "the result is likely client-bound: a faster server would not show",
            format!(
                "the client's own CPU time was {client_cpu_pct:.0}% of the {cpus} CPU(s) it may use over the measured seconds"
            ),
        ),
        Warning::ServerBound {
            server_cpu_pct,
            cpus,
        } => (
            Kind::ServerBound,
            "the server is the limit: it used nearly all its CPUs",
            format!(
                "the server's CPU time was {server_cpu_pct:.0}% of its {cpus} CPU(s) over the measured seconds"
            ),
        ),
        Warning::BothBound {
            client_cpu_pct,
            client_cpus,
            server_cpu_pct,
            server_cpus,
        } => (
            Kind::BothBound,
            "the client and the server both used nearly all their CPUs: either may be the limit",
            format!(
                "the client's own CPU time was {client_cpu_pct:.0}% of the {client_cpus} CPU(s) it may use, the server's {server_cpu_pct:.0}% of its {server_cpus}; give the client more CPUs to tell which"
            ),
        ),
        Warning::MachineBusy {
            runq_wait_s,
            foreign_cpu_s,
            measured_s,
            server_unobserved,
        } => (
            Kind::MachineBusy,
            if *server_unobserved {
                "the run's CPUs were shared, the unobserved server under test among them: observe it to tell its CPU from others'"
            } else {
                "the machine was busy: part of what was measured is contention the server did not cause"
            },
            format!(
                "run-queue wait {runq_wait_s:.2} s and other processes' CPU {foreign_cpu_s:.2} s on the run's CPUs, in {measured_s:.1} s measured"
            ),
        ),
        Warning::Stalls {
            seconds,
            max_ns,
            lost_s,
            ..
        } => (
            Kind::PlatformStalls,
            "the platform stalled: those seconds' figures include stalls the server did not cause",
            format!(
                "the hiccup meter woke up to {} late in {seconds} measured second(s), {:.1} ms lost in all",
                format_ns(*max_ns as f64),
                lost_s * 1e3
            ),
        ),
        Warning::AgentBound { agent, why } => (
            Kind::AgentBound,
            "one load agent may be the limit, not the server",
            format!("agent {agent}: {why}"),
        ),
        _ => return None,
    })
}

/// One server core saturated while another idles.
fn imbalance(r: &RunResult) -> Option<Hint> {
    let server = mean_busy(r, true);
    if server.len() >= 2 && !r.spec.poll {
        let (hi_cpu, hi) = server
            .iter()
            .copied()
            .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let (lo_cpu, lo) = server
            .iter()
            .copied()
            .fold((0, f64::MAX), |a, b| if b.1 < a.1 { b } else { a });
        if hi > 90.0 && lo < 50.0 {
            return Some(Hint {
                kind: Kind::Imbalance,
                run_id: Some(r.run_id.clone()),
                text: "one server core is saturated while another idles: the load is not spread"
                    .into(),
                evidence: format!("server CPU {hi_cpu} {hi:.0}% busy, CPU {lo_cpu} {lo:.0}%"),
            });
        }
    }
    None
}

/// A p99 ten times p50 or more: a tail sets the percentile; its worst
/// seconds.
fn tail(r: &RunResult) -> Option<Hint> {
    let l = &r.summary.latency;
    if l.count > 0 && l.p50_ns > 0 && l.p99_ns >= 10 * l.p50_ns {
        let mut worst: Vec<(usize, u64, f64)> = r
            .intervals
            .iter()
            .enumerate()
            .filter(|(_, i)| i.phase == Phase::Measure && i.latency.count > 0)
            .map(|(k, i)| (k, i.latency.p99_ns, i.start_ns as f64 / 1e9))
            .collect();
        worst.sort_by_key(|w| std::cmp::Reverse(w.1));
        let named: Vec<String> = worst
            .iter()
            .take(3)
            .map(|(_, p99, t)| format!("{t:.0}-{:.0} s: p99 {}", t + 1.0, format_ns(*p99 as f64)))
            .collect();
        return Some(Hint {
            kind: Kind::Tail,
            run_id: Some(r.run_id.clone()),
            text: format!(
                "p99 is {:.0} times p50: a tail, not the typical operation, sets the percentile",
                l.p99_ns as f64 / l.p50_ns as f64
            ),
            evidence: format!(
                "p50 {}, p99 {}; the worst seconds: {}",
                format_ns(l.p50_ns as f64),
                format_ns(l.p99_ns as f64),
                named.join("; ")
            ),
        });
    }
    None
}

/// Of a run's endpoints, one that answered no operation, or whose median
/// is at least twice the fastest one's: the whole run's tail may be its.
fn slow_endpoint(r: &RunResult) -> Option<Hint> {
    if r.endpoints.len() < 2 {
        return None;
    }
    let total = r.endpoints.iter().map(|e| e.ops).sum::<u64>().max(1) as f64;
    let conns = r
        .endpoints
        .iter()
        .map(|e| e.connections)
        .sum::<u64>()
        .max(1) as f64;
    let share = |e: &wirebench_core::result::EndpointPart| {
        format!(
            "{:.1}% of the operations over {:.0}% of the connections",
            e.ops as f64 * 100.0 / total,
            e.connections as f64 * 100.0 / conns
        )
    };
    let hint = |text: String, evidence: String| Hint {
        kind: Kind::SlowEndpoint,
        run_id: Some(r.run_id.clone()),
        text,
        evidence,
    };
    if let Some(idle) = r.endpoints.iter().find(|e| e.ops == 0) {
        return Some(hint(
            format!("endpoint {} completed no operation", idle.endpoint),
            format!("{} errors; {}", idle.errors, share(idle)),
        ));
    }
    let fast = r.endpoints.iter().min_by_key(|e| e.p50_ns)?;
    let slow = r.endpoints.iter().max_by_key(|e| e.p50_ns)?;
    (fast.p50_ns > 0 && slow.p50_ns >= 2 * fast.p50_ns).then(|| {
        hint(
            format!(
                "endpoint {} answers {:.1} times slower than {}",
                slow.endpoint,
                slow.p50_ns as f64 / fast.p50_ns as f64,
                fast.endpoint
            ),
            format!(
                "p50 {} against {}; it completed {}",
                format_ns(slow.p50_ns as f64),
                format_ns(fast.p50_ns as f64),
                share(slow)
            ),
        )
    })
}

/// Hints about a set of runs (an experiment): contention past a peak.
pub fn of_set(runs: &[RunResult]) -> Vec<Hint> {
    let mut by_clients: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for r in runs.iter().filter(|r| r.summary.ops_per_s > 0.0) {
        by_clients
            .entry(r.spec.clients * r.spec.conns_per_client)
            .or_default()
            .push(r.summary.ops_per_s);
    }
    let points: Vec<(usize, f64)> = by_clients
        .into_iter()
        .map(|(c, v)| (c, v.iter().copied().fold(f64::MIN, f64::max)))
        .collect();
    if points.len() < 3 {
        return vec![];
    }
    let (peak_c, peak) = points
        .iter()
        .copied()
        .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
    let after: Vec<&(usize, f64)> = points.iter().filter(|(c, _)| *c > peak_c).collect();
    match after.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((c, v)) if *v < 0.9 * peak => vec![Hint {
            kind: Kind::Contention,
            run_id: None,
            text: format!("throughput peaks at {peak_c} connections and falls beyond: contention"),
            evidence: format!(
                "{} ops/s at {peak_c}, {} ops/s at {c} ({:.0}% less)",
                format_rate(peak),
                format_rate(*v),
                100.0 * (1.0 - v / peak)
            ),
        }],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture::{interval, sample};

    fn busy(cpu: usize, pct: f64) -> CoreBusy {
        CoreBusy {
            cpu,
            busy_pct: pct,
            steal_pct: 0.0,
        }
    }

    #[test]
    fn each_hint_fires_on_data_built_for_it_and_not_otherwise() {
        let mut r = sample();
        r.intervals = (0..4).map(|k| interval(k, 1000.0, 100_000)).collect();
        for iv in &mut r.intervals {
            iv.client_cores = vec![busy(0, 97.0)];
            iv.server_cores = vec![busy(1, 99.0), busy(2, 10.0)];
        }
        r.warnings = vec![Warning::ClientBound {
            client_cpu_pct: 97.0,
            cpus: 1,
        }];
        r.intervals[2].latency.p99_ns = 9_000_000;
        r.summary.latency.p50_ns = 100_000;
        r.summary.latency.p99_ns = 5_000_000;
        let h = of_run(&r);
        let kinds: Vec<Kind> = h.iter().map(|x| x.kind.clone()).collect();
        assert_eq!(kinds, vec![Kind::ClientBound, Kind::Imbalance, Kind::Tail]);
        assert!(h[0].evidence.contains("97% of the 1 CPU(s)"), "{:?}", h[0]);
        assert!(h[1].evidence.contains("CPU 1 99%") && h[1].evidence.contains("CPU 2 10%"));
        assert!(h[2].evidence.contains("2-3 s: p99 9.00ms"), "{:?}", h[2]);

        let mut quiet = sample();
        quiet.intervals = (0..4).map(|k| interval(k, 1000.0, 100_000)).collect();
        for iv in &mut quiet.intervals {
            iv.client_cores = vec![busy(0, 40.0)];
            iv.server_cores = vec![busy(1, 60.0), busy(2, 55.0)];
        }
        quiet.summary.latency.p50_ns = 100_000;
        quiet.summary.latency.p99_ns = 300_000;
        assert!(of_run(&quiet).is_empty());

        let with = |clients: usize, ops: f64| {
            let mut r = sample();
            r.spec.clients = clients;
            r.summary.ops_per_s = ops;
            r
        };
        let set = [
            with(1, 100.0),
            with(2, 190.0),
            with(4, 250.0),
            with(8, 180.0),
        ];
        let h = of_set(&set);
        assert_eq!(h.len(), 1);
        assert!(h[0].text.contains("peaks at 4"), "{:?}", h[0]);
        assert!(h[0].evidence.contains("28% less"), "{:?}", h[0]);
        let rising = [with(1, 100.0), with(2, 190.0), with(4, 250.0)];
        assert!(of_set(&rising).is_empty());
    }

    #[test]
    fn a_slow_or_silent_endpoint_is_named() {
        let part = |e: &str, ops: u64, p50_ns: u64| wirebench_core::result::EndpointPart {
            endpoint: e.into(),
            agents: vec![],
            connections: 3,
            ops,
            errors: 0,
            ops_per_s: ops as f64,
            p50_ns,
            p99_ns: 2 * p50_ns,
        };
        let mut r = sample();
        r.endpoints = vec![
            part("tcp://a:1", 9000, 80_000),
            part("tcp://b:1", 1000, 1_000_000),
        ];
        let h = slow_endpoint(&r).expect("a slow endpoint");
        assert!(
            h.text
                .contains("tcp://b:1 answers 12.5 times slower than tcp://a:1"),
            "{h:?}"
        );
        assert!(
            h.evidence
                .contains("10.0% of the operations over 50% of the connections"),
            "{h:?}"
        );
        r.endpoints[1].p50_ns = 120_000;
        assert!(slow_endpoint(&r).is_none());
        r.endpoints[1].ops = 0;
        let h = slow_endpoint(&r).expect("a silent endpoint");
        assert!(h.text.contains("tcp://b:1 completed no operation"), "{h:?}");
    }
}
