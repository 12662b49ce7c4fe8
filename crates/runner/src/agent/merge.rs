//! A coordinated run's parts as one result: the parts the agents sent,
//! and for an agent lost during the load the seconds it streamed until
//! then, merged exactly (`wirebench_core::merge`), with each agent's part
//! beside the merge, the status (`degraded` when an agent was lost), and
//! the parts' own warnings about their hosts named by agent.

use super::clock::ClockEstimate;
use crate::RunError;
use wirebench_core::hist;
use wirebench_core::result::{
    AgentPart, EndpointPart, Interval, Placement, RunResult, RunState, Warning,
};
use wirebench_core::spec::RunSpec;
use wirebench_core::units;

/// How an agent's part ended, as its coordinator saw it.
pub(super) enum Ended {
    /// Its whole result, and where the agent keeps it.
    Done(Box<RunResult>, String),
    /// It did not run, or failed (before the start, or by its own word).
    Failed(String),
    /// Gone while the load ran: the seconds it streamed until then.
    Lost { why: String, seconds: Vec<Interval> },
}

/// What the coordinator knows of an agent.
pub(super) struct Seen {
    pub address: String,
    pub clients: usize,
    pub clock: ClockEstimate,
    /// Its clock's drift over the run (None: not measured again).
    pub drift: Option<f64>,
}

/// The parts as one result of `spec`.
pub(super) fn parts(
    ended: Vec<Ended>,
    seen: &[Seen],
    spec: &RunSpec,
    placement: &Placement,
) -> Result<RunResult, RunError> {
    let mut results = Vec::new();
    let mut failures = Vec::new();
    // Lost agents: (index, seconds streamed before the loss, why).
    let mut lost: Vec<(usize, usize, String)> = Vec::new();
    let mut breakdown = Vec::new();
    let mut streamed = vec![Vec::new(); seen.len()];
    for (i, p) in ended.into_iter().enumerate() {
        let l = &seen[i];
        match p {
            Ended::Done(r, dir) => {
                breakdown.push(part_of(l, &r, &dir));
                results.push(*r);
            }
            Ended::Lost { why, seconds } => {
                lost.push((i, seconds.len(), why));
                streamed[i] = seconds;
            }
            Ended::Failed(why) => {
                failures.push(format!("agent {}: {why}", l.address));
                breakdown.push(failed_part(l, why));
            }
        }
    }
    if results.is_empty() {
        let mut why = failures;
        why.extend(
            lost.iter()
                .map(|(i, _, w)| format!("agent {}: lost ({w})", seen[*i].address)),
        );
        return Err(RunError::Failed(why.join("; ")));
    }
    // A lost agent's part: what it streamed before the loss.
    for (i, _, why) in &lost {
        let part = partial_part(&results[0], &streamed[*i], why)?;
        let mut p = part_of(&seen[*i], &part, "");
        p.reason = Some(format!(
            "lost: {why}; its seconds until then are in the merge"
        ));
        breakdown.insert((*i).min(breakdown.len()), p);
        results.push(part);
    }
    let mut m =
        wirebench_core::merge::instances(&results).map_err(|e| RunError::Failed(e.to_string()))?;
    m.spec = spec.clone();
    m.summary.requested_rate_per_s = spec.rate_per_s;
    // The stages of the merged seconds (each part's were its share's).
    m.stages = wirebench_core::ramp::judge::results(&spec.stages, spec.warmup_ns, &m.intervals);
    m.warnings
        .retain(|w| !matches!(w, Warning::StageBehind { .. }));
    m.warnings.extend(crate::outcome::stage_warnings(&m.stages));
    // Each part's CPUs are its own host's: the first part's stand for the
    // cpuset (a result always has one), and a note says so.
    m.placement = placement.clone();
    m.placement.client_cpus = results[0].placement.client_cpus.clone();
    m.placement.notes = vec![format!(
        "the load was made by {} agents; client CPUs are the first agent's, each part's placement is in its run.json on its agent",
        seen.len()
    )];
    m.env =
        wirebench_core::env::Environment::capture(env!("CARGO_PKG_VERSION"), crate::GIT_REVISION);
    if !failures.is_empty() {
        m.status.state = RunState::Failed;
        m.status.reason = Some(failures.join("; "));
    } else if let Some(&(first, at, ref why)) = lost.iter().min_by_key(|(_, at, _)| *at) {
        degraded(&mut m, &lost, seen, first, at, why)?;
    } else if let Some(r) = results
        .iter()
        .find(|r| r.status.state != RunState::Complete)
    {
        m.status = r.status.clone();
    }
    agents_bound(&mut m, &results, &breakdown);
    if let Some(rate) = spec.rate_per_s
        && m.summary.measured_ns > 0
        && m.summary.ops_per_s < crate::outcome::RATE_REACHED * rate
        && spec.transport.has_response()
    {
        m.warnings.push(Warning::RateNotAnswered {
            ops_per_s: m.summary.ops_per_s,
            rate_per_s: rate,
            errors_per_s: m.summary.errors as f64 / (m.summary.measured_ns as f64 / 1e9),
        });
    }
    m.endpoints = by_endpoint(&results, &breakdown)?;
    m.agents = breakdown;
    Ok(m)
}

/// The breakdown's line of an agent whose part failed.
fn failed_part(l: &Seen, why: String) -> AgentPart {
    AgentPart {
        agent: l.address.clone(),
        run_id: String::new(),
        dir: String::new(),
        clients: l.clients,
        state: RunState::Failed,
        reason: Some(why),
        ops: 0,
        ops_per_s: 0.0,
        p50_ns: 0,
        p99_ns: 0,
        client_cpu_s: 0.0,
        client_cpu_us_per_op: 0.0,
        requested_rate_per_s: None,
        sent_per_s: 0.0,
        schedule_lag_p99_ns: None,
        clock_offset_ns: l.clock.offset_ns,
        clock_uncertainty_ns: l.clock.uncertainty_ns,
        clock_drift_ppm: l.drift,
    }
}

/// A run that lost agent `first` after `at` seconds (and maybe others):
/// its seconds from then on partial, its window with every agent, its
/// rates over its whole measured time, and why.
fn degraded(
    m: &mut RunResult,
    lost: &[(usize, usize, String)],
    seen: &[Seen],
    first: usize,
    at: usize,
    why: &str,
) -> Result<(), RunError> {
    // The seconds from the first loss on miss a part.
    for iv in m.intervals.iter_mut().skip(at) {
        iv.partial = true;
    }
    m.agents_window = window(&m.intervals[..at.min(m.intervals.len())])?;
    m.status.state = RunState::Degraded;
    // The parts measured for different lengths: rates are the totals
    // over the run's measured time, not the sum of the parts' rates.
    let sm = &mut m.summary;
    if sm.measured_ns > 0 {
        let secs = sm.measured_ns as f64 / 1e9;
        sm.ops_per_s = sm.ops as f64 / secs;
        sm.sent_per_s = sm.messages_sent as f64 / secs;
        sm.bytes_per_s_out = sm.bytes_out as f64 / secs;
        sm.bytes_per_s_in = sm.bytes_in as f64 / secs;
        sm.mib_per_s_out = units::mib(sm.bytes_per_s_out);
        sm.mib_per_s_in = units::mib(sm.bytes_per_s_in);
    }
    // The throughput's trend is the loss, said by the status.
    m.warnings.retain(|w| !matches!(w, Warning::Drift { .. }));
    m.summary.throughput_trend = None;
    let names: Vec<String> = lost
        .iter()
        .map(|(i, _, _)| seen[*i].address.clone())
        .collect();
    m.status.reason = Some(format!(
        "lost agent {} after {at} second(s) ({why}); from then on the seconds are partial{}",
        seen[first].address,
        match m.agents_window {
            Some(ref w) => format!(
                "; with every agent, {:.0} ops/s over {:.1} s",
                w.ops_per_s,
                w.to_s - w.from_s
            ),
            None => "; no measured second had every agent".to_string(),
        }
    ));
    if names.len() > 1 {
        m.status.reason = m
            .status
            .reason
            .take()
            .map(|r| format!("{r}; lost: {}", names.join(", ")));
    }
    Ok(())
}

/// The parts' own warnings that name their host's limits, by agent; an
/// open loop's agent whose requests leave much later than the others'.
fn agents_bound(m: &mut RunResult, results: &[RunResult], breakdown: &[AgentPart]) {
    // The parts' own warnings that name their host's limits, by agent.
    m.warnings.retain(|w| {
        !matches!(
            w,
            Warning::ClientBound { .. }
                | Warning::RateNotSent { .. }
                | Warning::RateNotAnswered { .. }
        )
    });
    for (r, p) in results
        .iter()
        .zip(breakdown.iter().filter(|p| !p.run_id.is_empty()))
    {
        for w in &r.warnings {
            let why = match w {
                Warning::ClientBound {
                    client_cpu_pct,
                    cpus,
                } => format!("used {client_cpu_pct:.0}% of the {cpus} CPU(s) it may use"),
                Warning::RateNotSent {
                    sent_per_s,
                    rate_per_s,
                    ..
                } => format!(
                    "sent {sent_per_s:.0}/s of its {rate_per_s:.0}/s ({:.0}%)",
                    100.0 * sent_per_s / rate_per_s
                ),
                _ => continue,
            };
            m.warnings.push(Warning::AgentBound {
                agent: p.agent.clone(),
                why,
            });
        }
    }
    // An open loop's agent whose requests leave much later than the
    // others' falls behind its timetable: its host is the limit.
    for (agent, why) in lag_stands_out(breakdown) {
        let named = |w: &Warning| matches!(w, Warning::AgentBound { agent: a, .. } if *a == agent);
        if !m.warnings.iter().any(named) {
            m.warnings.push(Warning::AgentBound { agent, why });
        }
    }
}

/// Each endpoint's share, when the parts went to several: the exact merge
/// of the parts that went to it.
fn by_endpoint(
    results: &[RunResult],
    breakdown: &[AgentPart],
) -> Result<Vec<EndpointPart>, RunError> {
    let endpoint = |r: &RunResult| match &r.spec.target {
        wirebench_core::spec::TargetSpec::External { endpoint } => endpoint.to_string(),
        _ => String::new(),
    };
    let mut all: Vec<String> = Vec::new();
    for n in results.iter().map(endpoint) {
        if !all.contains(&n) {
            all.push(n);
        }
    }
    if all.len() < 2 {
        return Ok(vec![]);
    }
    all.into_iter()
        .map(|e| {
            let (parts, agents): (Vec<RunResult>, Vec<String>) = results
                .iter()
                .filter(|r| endpoint(r) == e)
                .map(|r| {
                    let agent = breakdown
                        .iter()
                        .find(|p| p.run_id == r.run_id && p.ops == r.summary.ops)
                        .map(|p| p.agent.clone())
                        .unwrap_or_default();
                    (r.clone(), agent)
                })
                .unzip();
            let m = wirebench_core::merge::instances(&parts)
                .map_err(|x| RunError::Failed(x.to_string()))?;
            Ok(EndpointPart {
                endpoint: e,
                agents,
                connections: parts.iter().map(|r| r.spec.connections() as u64).sum(),
                ops: m.summary.ops,
                errors: m.summary.errors,
                ops_per_s: m.summary.ops_per_s,
                p50_ns: m.summary.latency.p50_ns,
                p99_ns: m.summary.latency.p99_ns,
            })
        })
        .collect()
}

/// The agents whose schedule lag (p99) is over [`LAG_STANDS_OUT`] and
/// over 5 times the least of the others', with why.
fn lag_stands_out(parts: &[AgentPart]) -> Vec<(String, String)> {
    let lags: Vec<(&str, u64)> = parts
        .iter()
        .filter_map(|p| Some((p.agent.as_str(), p.schedule_lag_p99_ns?)))
        .collect();
    lags.iter()
        .filter_map(|&(agent, lag)| {
            let least = lags
                .iter()
                .filter(|(a, _)| *a != agent)
                .map(|(_, l)| *l)
                .min()?;
            (lag > LAG_STANDS_OUT && lag > 5 * least).then(|| {
                (
                    agent.to_string(),
                    format!(
                        "its requests left up to {} after their intended send time (p99), the others' {}",
                        wirebench_core::units::format_ns(lag as f64),
                        wirebench_core::units::format_ns(least as f64)
                    ),
                )
            })
        })
        .collect()
}

/// A schedule lag (p99) below this is no agent's limit.
const LAG_STANDS_OUT: u64 = 1_000_000;

fn part_of(l: &Seen, r: &RunResult, dir: &str) -> AgentPart {
    let s = &r.summary;
    AgentPart {
        agent: l.address.clone(),
        run_id: r.run_id.clone(),
        dir: dir.to_string(),
        clients: l.clients,
        state: r.status.state,
        reason: r.status.reason.clone(),
        ops: s.ops,
        ops_per_s: s.ops_per_s,
        p50_ns: s.latency.p50_ns,
        p99_ns: s.latency.p99_ns,
        client_cpu_s: s.client_cpu_s,
        client_cpu_us_per_op: s.client_cpu_us_per_op,
        requested_rate_per_s: s.requested_rate_per_s,
        sent_per_s: s.sent_per_s,
        schedule_lag_p99_ns: s.schedule_lag.map(|l| l.p99_ns),
        clock_offset_ns: l.clock.offset_ns,
        clock_uncertainty_ns: l.clock.uncertainty_ns,
        clock_drift_ppm: l.drift,
    }
}

/// The measured seconds among `seconds` as one (`core::merge`: counts and
/// histograms added); None when none was measured.
fn measured(seconds: &[Interval]) -> Result<Option<Interval>, RunError> {
    let m: Vec<Interval> = seconds
        .iter()
        .filter(|iv| iv.phase == wirebench_core::result::Phase::Measure)
        .cloned()
        .collect();
    if m.is_empty() {
        return Ok(None);
    }
    wirebench_core::merge::intervals_of(&m)
        .map(Some)
        .map_err(|e| RunError::Failed(format!("a lost agent's seconds: {e}")))
}

/// A lost agent's part, made of the seconds it streamed (its CPU and
/// service time are not known: left at zero).
fn partial_part(
    template: &RunResult,
    seconds: &[Interval],
    why: &str,
) -> Result<RunResult, RunError> {
    let mut r = template.clone();
    let m = measured(seconds)?;
    let s = &mut r.summary;
    *s = wirebench_core::result::Summary::default();
    r.latency_hist = hist::encode(&hist::new_hist());
    if let Some(m) = m {
        let ns = m.end_ns.saturating_sub(m.start_ns);
        s.ops = m.ops;
        s.errors = m.errors;
        s.bytes_out = m.bytes_out;
        s.bytes_in = m.bytes_in;
        s.messages_sent = m.sent;
        s.messages_received = m.ops;
        s.measured_ns = ns;
        s.latency = m.latency;
        if ns > 0 {
            s.ops_per_s = s.ops as f64 * 1e9 / ns as f64;
            s.sent_per_s = s.messages_sent as f64 * 1e9 / ns as f64;
        }
        r.latency_hist = m.latency_hist;
    }
    r.intervals = seconds.to_vec();
    r.service_hist = hist::encode(&hist::new_hist());
    r.status = wirebench_core::result::RunStatus {
        state: RunState::Failed,
        reason: Some(format!("lost: {why}")),
    };
    r.run_id = String::new();
    r.warnings.clear();
    Ok(r)
}

/// The measured seconds of `seconds` merged: the window with every agent.
fn window(seconds: &[Interval]) -> Result<Option<wirebench_core::result::AgentsWindow>, RunError> {
    let Some(m) = measured(seconds)? else {
        return Ok(None);
    };
    let ns = m.end_ns.saturating_sub(m.start_ns);
    Ok(Some(wirebench_core::result::AgentsWindow {
        from_s: m.start_ns as f64 / 1e9,
        to_s: m.end_ns as f64 / 1e9,
        ops: m.ops,
        ops_per_s: if ns > 0 {
            m.ops as f64 * 1e9 / ns as f64
        } else {
            0.0
        },
        latency: m.latency,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_whose_requests_leave_late_is_named() {
        let part = |agent: &str, lag: Option<u64>| AgentPart {
            agent: agent.into(),
            run_id: "r".into(),
            dir: String::new(),
            clients: 1,
            state: RunState::Complete,
            reason: None,
            ops: 1,
            ops_per_s: 1.0,
            p50_ns: 1,
            p99_ns: 1,
            client_cpu_s: 0.0,
            client_cpu_us_per_op: 0.0,
            requested_rate_per_s: Some(1.0),
            sent_per_s: 1.0,
            schedule_lag_p99_ns: lag,
            clock_offset_ns: 0,
            clock_uncertainty_ns: 0,
            clock_drift_ppm: None,
        };
        let parts = [
            part("a:1", Some(40_000)),
            part("b:1", Some(9_000_000)),
            part("c:1", Some(60_000)),
        ];
        let named = lag_stands_out(&parts);
        assert_eq!(named.len(), 1, "{named:?}");
        assert_eq!(named[0].0, "b:1");
        assert!(
            named[0].1.contains("9.00ms") && named[0].1.contains("40.0us"),
            "{named:?}"
        );
        // Late, but no later than the others: the server, not one host.
        let even = [part("a:1", Some(8_000_000)), part("b:1", Some(9_000_000))];
        assert!(lag_stands_out(&even).is_empty());
        // Small lags are nobody's limit; a closed loop has none.
        let small = [part("a:1", Some(10_000)), part("b:1", Some(900_000))];
        assert!(lag_stands_out(&small).is_empty());
        assert!(lag_stands_out(&[part("a:1", None), part("b:1", None)]).is_empty());
    }
}
