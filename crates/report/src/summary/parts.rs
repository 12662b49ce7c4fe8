//! The parts of a run: its load agents, its endpoints, its stages and where
//! a ramp broke.

use super::*;

/// A run made by load agents: each agent's part, one line each.
pub(super) fn print_agents(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    if r.agents.is_empty() {
        return Ok(());
    }
    if let Some(w) = &r.agents_window {
        writeln!(
            out,
            "  every agent:       {:.1}-{:.1} s: {:.1} ops/s, p50 {}, p99 {} (the seconds after are partial)",
            w.from_s,
            w.to_s,
            w.ops_per_s,
            format_ns(w.latency.p50_ns as f64),
            format_ns(w.latency.p99_ns as f64),
        )?;
    }
    let width = r.agents.iter().map(|a| a.agent.len()).max().unwrap_or(0);
    // Open loop: how late each agent's requests left (p99).
    let lagged = r.agents.iter().any(|a| a.schedule_lag_p99_ns.is_some());
    writeln!(
        out,
        "  agents:            {:<width$} {:>7} {:>10} {:>9} {:>9} {:>10}{}  clock offset",
        "",
        "clients",
        "ops/s",
        "p50",
        "p99",
        "CPU us/op",
        if lagged {
            format!(" {:>9}", "lag p99")
        } else {
            String::new()
        }
    )?;
    for a in &r.agents {
        let state = match a.state {
            wirebench_core::result::RunState::Complete => String::new(),
            other => format!(
                "  {}: {}",
                format!("{other:?}").to_lowercase(),
                a.reason.as_deref().unwrap_or("")
            ),
        };
        writeln!(
            out,
            "                     {:<width$} {:>7} {:>10.1} {:>9} {:>9} {:>10.2}{}  {:+.3} ms +/- {:.3} ms{state}",
            a.agent,
            a.clients,
            a.ops_per_s,
            format_ns(a.p50_ns as f64),
            format_ns(a.p99_ns as f64),
            a.client_cpu_us_per_op,
            match (lagged, a.schedule_lag_p99_ns) {
                (false, _) => String::new(),
                (true, Some(l)) => format!(" {:>9}", format_ns(l as f64)),
                (true, None) => format!(" {:>9}", "-"),
            },
            a.clock_offset_ns as f64 / 1e6,
            a.clock_uncertainty_ns as f64 / 1e6,
        )?;
    }
    Ok(())
}

/// A run against several endpoints: each one's part, one line each.
pub(super) fn print_endpoints(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    if !r.endpoints.is_empty() {
        let width = r
            .endpoints
            .iter()
            .map(|e| e.endpoint.len())
            .max()
            .unwrap_or(0);
        let agents = r.endpoints.iter().any(|e| !e.agents.is_empty());
        writeln!(
            out,
            "  endpoints:         {:<width$} {:>6} {:>10} {:>9} {:>9} {:>7}{}",
            "",
            "conns",
            "ops/s",
            "p50",
            "p99",
            "errors",
            if agents { "  agents" } else { "" }
        )?;
        for e in &r.endpoints {
            writeln!(
                out,
                "                     {:<width$} {:>6} {:>10.1} {:>9} {:>9} {:>7}{}",
                e.endpoint,
                e.connections,
                e.ops_per_s,
                format_ns(e.p50_ns as f64),
                format_ns(e.p99_ns as f64),
                e.errors,
                if agents {
                    format!("  {}", e.agents.join(", "))
                } else {
                    String::new()
                }
            )?;
        }
    }
    Ok(())
}

/// A staged run: a row per stage, asked against sent and completed, its
/// latency, and the sends the generator was late with.
pub(super) fn print_stages(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    if r.stages.is_empty() {
        return Ok(());
    }
    let width = r.stages.iter().map(|s| s.text.len()).max().unwrap_or(0);
    writeln!(
        out,
        "  stages:            {:<width$} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7}",
        "", "asked/s", "sent/s", "done/s", "p50", "p99", "late"
    )?;
    for s in &r.stages {
        // A closed loop's stage asks connections, not a rate.
        let (asked, late) = match s.conns {
            Some(_) => ("-".to_string(), "-".to_string()),
            None => (format!("{:.1}", s.asked_per_s), s.late_sends.to_string()),
        };
        writeln!(
            out,
            "                     {:<width$} {:>10} {:>10.1} {:>10.1} {:>9} {:>9} {:>7}{}",
            s.text,
            asked,
            s.sent_per_s,
            s.completed_per_s,
            format_ns(s.latency.p50_ns as f64),
            format_ns(s.latency.p99_ns as f64),
            late,
            if s.kept_up { "" } else { "  behind" }
        )?;
        if s.backlog_in > 0 {
            writeln!(
                out,
                "                     {:<width$} backlog carried in: {} request(s) due before it (in the warm-up or earlier stages), {} sent in it (not its rate; its latency counts them, late since they were due)",
                "", s.backlog_in, s.backlog_sent
            )?;
        }
        // A ramp's bands: its seconds grouped, each with its own rate.
        for b in &s.bands {
            writeln!(
                out,
                "                     {:<width$} {:>10.1} {:>10.1} {:>10.1} {:>9} {:>9}",
                format!("  {:.0}-{:.0}s", b.start_s, b.start_s + b.measured_s),
                b.asked_per_s,
                b.sent_per_s,
                b.completed_per_s,
                format_ns(b.latency.p50_ns as f64),
                format_ns(b.latency.p99_ns as f64),
            )?;
        }
    }
    if let Some(v) = &r.ramp {
        for line in ramp_lines(v) {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// Where a ramp broke, as lines: its knee (or why none), each objective's
/// rate of failing for good.
pub fn ramp_lines(v: &wirebench_core::ramp::RampVerdict) -> Vec<String> {
    let mut out = Vec::new();
    match (&v.knee, &v.knee_undecided) {
        (Some(k), _) => out.push(format!(
            "knee:              {:.0}/s (between {:.0}/s, p50 still within {}x of its low-load {}, and {:.0}/s, from which p50 stayed above: {} there); the server completed at most {:.0}/s past it",
            k.rate_per_s,
            k.last_low_per_s,
            wirebench_core::ramp::KNEE_FACTOR,
            format_ns(k.low_p50_ns as f64),
            k.first_high_per_s,
            format_ns(k.high_p50_ns as f64),
            k.max_completed_per_s
        )),
        (None, Some(why)) => out.push(format!("knee:              undecided: {why}")),
        (None, None) => out.push(format!(
            "knee:              none: p50 stayed within {}x of its low-load level up to {:.0}/s, the highest rate asked",
            wirebench_core::ramp::KNEE_FACTOR,
            v.max_asked_per_s
        )),
    }
    for b in &v.breaks {
        let below = match b.failed_below {
            0 => String::new(),
            n => format!("; it also missed at {n} lower rate(s), then held again"),
        };
        out.push(match (b.failed_from_per_s, b.held_to_per_s) {
            (Some(f), Some(h)) => format!(
                "{}: failed for good from {f:.0}/s (held at {h:.0}/s){below}",
                b.slo
            ),
            (Some(f), None) => format!("{}: failed from {f:.0}/s, the lowest rate asked", b.slo),
            (None, _) => format!(
                "{}: held at the highest rate asked ({:.0}/s){below}",
                b.slo, v.max_asked_per_s
            ),
        });
    }
    out
}
