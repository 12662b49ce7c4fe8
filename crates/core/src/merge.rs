//! Several runs that ran side by side (a sweep point's instances) as one:
//! counts and rates added, latency histograms merged exactly, never
//! percentiles averaged; per-second intervals merged by their position.
//!
//! What cannot be added is taken from the first part and says so in its
//! name (`spec`, `env`, the hiccup meter, which watched the same machine).

use crate::hist::{self, LatencyHist, LatencySummary};
use crate::result::{CoreBusy, Interval, OpSummary, RunResult, RunState};
use std::collections::BTreeMap;

/// Why parts do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no runs to merge")]
    Empty,
    #[error("{run}: its latency histogram does not read: {why}")]
    Histogram { run: String, why: String },
}

/// Adds the encoded histogram `text` (of run `run`) into `into`; an empty
/// text is an empty histogram.
fn add_hist(into: &mut LatencyHist, text: &str, run: &str) -> Result<(), MergeError> {
    if text.is_empty() {
        return Ok(());
    }
    let bad = |why: String| MergeError::Histogram {
        run: run.to_string(),
        why,
    };
    let h = hist::decode(text).map_err(|e| bad(e.to_string()))?;
    into.add(&h).map_err(|e| bad(e.to_string()))
}

fn worst(a: RunState, b: RunState) -> RunState {
    let rank = |s: RunState| match s {
        RunState::Complete => 0,
        RunState::Interrupted => 1,
        RunState::Degraded => 2,
        RunState::Failed => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// Per-core busy shares of two sides that may share cores: the busier.
fn cores(into: &mut Vec<CoreBusy>, more: &[CoreBusy]) {
    for c in more {
        match into.iter_mut().find(|x| x.cpu == c.cpu) {
            Some(x) => {
                x.busy_pct = x.busy_pct.max(c.busy_pct);
                x.steal_pct = x.steal_pct.max(c.steal_pct);
            }
            None => into.push(*c),
        }
    }
    into.sort_by_key(|c| c.cpu);
}

fn intervals(parts: &[RunResult]) -> Result<Vec<Interval>, MergeError> {
    let n = parts.iter().map(|r| r.intervals.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let here: Vec<(&str, &Interval)> = parts
            .iter()
            .filter_map(|r| Some((r.run_id.as_str(), r.intervals.get(k)?)))
            .collect();
        if !here.is_empty() {
            out.push(row(&here)?);
        }
    }
    Ok(out)
}

/// The same second of several parts (load agents) as one.
pub fn intervals_of(parts: &[Interval]) -> Result<Interval, MergeError> {
    let names: Vec<String> = (0..parts.len()).map(|k| format!("part {k}")).collect();
    let here: Vec<(&str, &Interval)> = names.iter().map(String::as_str).zip(parts).collect();
    if here.is_empty() {
        return Err(MergeError::Empty);
    }
    row(&here)
}

/// One second of several parts, by the parts' names (not empty).
fn row(here: &[(&str, &Interval)]) -> Result<Interval, MergeError> {
    let (first_name, first) = here[0];
    let mut iv = first.clone();
    let mut lat = hist::new_hist();
    add_hist(&mut lat, &first.latency_hist, first_name)?;
    for (r, x) in &here[1..] {
        iv.ops += x.ops;
        iv.bytes_out += x.bytes_out;
        iv.bytes_in += x.bytes_in;
        iv.errors += x.errors;
        iv.sent += x.sent;
        iv.ops_per_s += x.ops_per_s;
        iv.start_ns = iv.start_ns.min(x.start_ns);
        iv.end_ns = iv.end_ns.max(x.end_ns);
        iv.stalled |= x.stalled;
        iv.partial |= x.partial;
        add_hist(&mut lat, &x.latency_hist, r)?;
        cores(&mut iv.client_cores, &x.client_cores);
        cores(&mut iv.server_cores, &x.server_cores);
        iv.server_groups.extend(x.server_groups.iter().cloned());
    }
    iv.latency = LatencySummary::of(&lat);
    // Intervals keep one histogram, of latency: the service time of
    // several merges only where it equals the latency (closed loop);
    // elsewhere it is left out (count 0) rather than made up.
    if here.len() > 1 {
        iv.service_latency = if here.iter().all(|(_, x)| x.service_latency == x.latency) {
            iv.latency
        } else {
            LatencySummary::default()
        };
    }
    iv.latency_hist = hist::encode(&lat);
    Ok(iv)
}

fn by_op(parts: &[RunResult]) -> Result<BTreeMap<String, OpSummary>, MergeError> {
    let mut out: BTreeMap<String, (OpSummary, LatencyHist, LatencyHist)> = BTreeMap::new();
    for r in parts {
        for (op, s) in &r.summary.by_op {
            let (o, lat, ttfb) = out
                .entry(op.clone())
                .or_insert_with(|| (OpSummary::default(), hist::new_hist(), hist::new_hist()));
            o.ops += s.ops;
            o.errors += s.errors;
            o.ops_per_s += s.ops_per_s;
            o.bytes_out += s.bytes_out;
            o.bytes_in += s.bytes_in;
            o.bytes_per_s += s.bytes_per_s;
            o.mib_per_s += s.mib_per_s;
            add_hist(lat, &s.latency_hist, &r.run_id)?;
            add_hist(ttfb, &s.ttfb_hist, &r.run_id)?;
            for (class, n) in &s.statuses {
                *o.statuses.entry(class.clone()).or_default() += n;
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(op, (mut o, lat, ttfb))| {
            o.latency = LatencySummary::of(&lat);
            o.latency_hist = hist::encode(&lat);
            if !ttfb.is_empty() {
                o.ttfb = Some(LatencySummary::of(&ttfb));
                o.ttfb_hist = hist::encode(&ttfb);
            }
            (op, o)
        })
        .collect())
}

/// The runs of one sweep point's instances, which ran at the same time,
/// as one run: its id is the first part's, `merged_from` names them all.
pub fn instances(parts: &[RunResult]) -> Result<RunResult, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    if parts.len() == 1 {
        return Ok(first.clone());
    }
    let mut m = first.clone();
    m.instances = parts
        .iter()
        .map(|r| {
            let s = &r.summary;
            let stat =
                |name: &str, v: u64| (s.latency.count > 0 && s.has_latency(name)).then_some(v);
            crate::result::InstancePart {
                run_id: r.run_id.clone(),
                state: r.status.state,
                clients: r.spec.clients,
                ops_per_s: s.ops_per_s,
                p50_ns: stat("p50", s.latency.p50_ns),
                p99_ns: stat("p99", s.latency.p99_ns),
                client_cpu_us_per_op: s.client_cpu_us_per_op,
                server_cpu_us_per_op: s.server_cpu_us_per_op,
                client_cpus: r.placement.client_cpus.clone(),
                server_cpus: r.placement.server_cpus.clone(),
                alone_ops_per_s: None,
            }
        })
        .collect();
    let (mut lat, mut svc) = (hist::new_hist(), hist::new_hist());
    for r in parts {
        add_hist(&mut lat, &r.latency_hist, &r.run_id)?;
        add_hist(&mut svc, &r.service_hist, &r.run_id)?;
    }
    let s = &mut m.summary;
    // Each part's lag is its own: run.json keeps no histogram of it to add.
    s.schedule_lag = None;
    for r in &parts[1..] {
        let x = &r.summary;
        m.spec.clients += r.spec.clients;
        m.status.state = worst(m.status.state, r.status.state);
        if m.status.reason.is_none() {
            m.status.reason.clone_from(&r.status.reason);
        }
        s.messages_sent += x.messages_sent;
        s.messages_received += x.messages_received;
        s.ops += x.ops;
        s.errors += x.errors;
        s.measured_ns = s.measured_ns.max(x.measured_ns);
        s.connect_time_ns = s.connect_time_ns.max(x.connect_time_ns);
        s.ops_per_s += x.ops_per_s;
        s.bytes_out += x.bytes_out;
        s.bytes_in += x.bytes_in;
        s.bytes_per_s_out += x.bytes_per_s_out;
        s.bytes_per_s_in += x.bytes_per_s_in;
        s.mib_per_s_out += x.mib_per_s_out;
        s.mib_per_s_in += x.mib_per_s_in;
        s.wire_bytes_out = s.wire_bytes_out.zip(x.wire_bytes_out).map(|(a, b)| a + b);
        s.wire_bytes_in = s.wire_bytes_in.zip(x.wire_bytes_in).map(|(a, b)| a + b);
        s.sent_per_s += x.sent_per_s;
        s.requested_rate_per_s = match (s.requested_rate_per_s, x.requested_rate_per_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        s.client_cpu_s += x.client_cpu_s;
        s.server_cpu_s = match (s.server_cpu_s, x.server_cpu_s) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        s.client_peak_rss_bytes += x.client_peak_rss_bytes;
        s.server_peak_rss_bytes = match (s.server_peak_rss_bytes, x.server_peak_rss_bytes) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        s.server_cores_used = match (s.server_cores_used, x.server_cores_used) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        s.client_core_max_busy_pct = s.client_core_max_busy_pct.max(x.client_core_max_busy_pct);
        s.client_bound |= x.client_bound;
        s.server_bound |= x.server_bound;
        s.max_steal_pct = s.max_steal_pct.max(x.max_steal_pct);
        for (why, n) in &x.failures {
            *s.failures.entry(why.clone()).or_default() += n;
        }
        // One warning of each kind: the first instance's figures stand for
        // the kind (the instances shared the machine).
        for w in &r.warnings {
            let kind = std::mem::discriminant(w);
            if !m.warnings.iter().any(|x| std::mem::discriminant(x) == kind) {
                m.warnings.push(w.clone());
            }
        }
    }
    s.latency = LatencySummary::of(&lat);
    s.service_latency = LatencySummary::of(&svc);
    s.client_cpu_us_per_op = if s.ops > 0 {
        s.client_cpu_s * 1e6 / s.ops as f64
    } else {
        0.0
    };
    s.server_cpu_us_per_op = s
        .server_cpu_s
        .filter(|_| s.ops > 0)
        .map(|c| c * 1e6 / s.ops as f64);
    s.ops_per_core_used = s
        .server_cores_used
        .filter(|u| *u > 0.0)
        .map(|u| s.ops_per_s / u);
    // Per-instance figures with no exact sum.
    s.server_threads = None;
    s.server_allocator = None;
    s.throughput_trend = None;
    s.client_cpu_pct = None;
    s.server_cpu_pct = None;
    if parts.iter().any(|r| r.summary.tool.is_some()) {
        // A program's own statistics do not merge (see index::aggregate).
        s.tool = None;
    }
    s.by_op = by_op(parts)?;
    m.latency_hist = hist::encode(&lat);
    m.service_hist = hist::encode(&svc);
    m.intervals = intervals(parts)?;
    // The stages of the merged seconds: each instance asked its stages'
    // rates, so together they asked as many times as much.
    if !m.spec.stages.is_empty() {
        let k = parts.len() as f64;
        let asked: Vec<crate::stages::Stage> = m
            .spec
            .stages
            .iter()
            .map(|s| crate::stages::Stage {
                from_per_s: s.from_per_s * k,
                to_per_s: s.to_per_s * k,
                ..*s
            })
            .collect();
        m.stages = crate::ramp::judge::results(&asked, m.spec.warmup_ns, &m.intervals);
    }
    m.placement.notes.clear();
    m.server = None;
    m.merged_from = parts.iter().map(|r| r.run_id.clone()).collect();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::fixture::{interval, sample};

    /// Two instances of a staged run, side by side: the merged stage asked
    /// twice each one's rate and sent what both sent.
    #[test]
    fn instances_in_stages_merge_their_stages() {
        let mut parts = Vec::new();
        for id in ["a", "b"] {
            let mut r = part(id, 1000, 100);
            r.spec.stages = crate::stages::parse("2s:100").unwrap();
            r.spec.warmup_ns = 0;
            parts.push(r);
        }
        let m = instances(&parts).unwrap();
        assert_eq!(m.stages.len(), 1, "{:?}", m.stages);
        assert_eq!(m.stages[0].asked_per_s, 200.0);
        assert_eq!(m.stages[0].sent_per_s, 200.0);
        assert!(m.stages[0].kept_up);
    }

    fn part(id: &str, lat_ns: u64, n: u64) -> RunResult {
        let mut r = sample();
        r.run_id = id.into();
        let mut h = hist::new_hist();
        h.saturating_record_n(lat_ns, n);
        r.latency_hist = hist::encode(&h);
        r.service_hist = r.latency_hist.clone();
        r.summary.ops = n;
        r.summary.ops_per_s = n as f64;
        r.summary.client_cpu_s = 0.5;
        r.intervals = (0..2).map(|k| interval(k, n as f64, lat_ns)).collect();
        r
    }

    #[test]
    fn instances_add_up_and_their_histograms_merge_exactly() {
        // 900 ops at 10us and 100 at 1ms: the merged p99 is 1ms, which
        // no average of the parts' percentiles (10us and 1ms) gives.
        let a = part("a", 10_000, 900);
        let b = part("b", 1_000_000, 100);
        let m = instances(&[a.clone(), b]).unwrap();
        assert_eq!(m.run_id, "a");
        assert_eq!(m.merged_from, ["a", "b"]);
        assert_eq!(m.summary.ops, 1000);
        assert_eq!(m.summary.ops_per_s, 1000.0);
        assert_eq!(m.spec.clients, 2 * a.spec.clients);
        assert_eq!(m.summary.latency.count, 1000);
        assert!((m.summary.latency.p50_ns as f64 / 10_000.0 - 1.0).abs() < 0.01);
        assert!((m.summary.latency.p99_ns as f64 / 1e6 - 1.0).abs() < 0.01);
        // 1 s of CPU over 1000 ops.
        assert!((m.summary.client_cpu_us_per_op - 1000.0).abs() < 1e-9);
        assert_eq!(m.intervals.len(), 2);
        assert_eq!(m.intervals[1].ops, 1000);
        assert_eq!(m.intervals[1].latency.count, 1000);
        // One part is itself.
        assert_eq!(instances(std::slice::from_ref(&a)).unwrap(), a);
        assert!(instances(&[]).is_err());
    }
}
