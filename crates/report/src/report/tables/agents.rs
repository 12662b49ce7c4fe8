//! Runs made by load agents: each agent's part, its CPU and its clock.

use super::*;

/// The table, where load agents made a run.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match agents_table(runs) {
        Some(t) => vec![Block::Heading("Load agents".into()), Block::Table(t)],
        None => vec![],
    }
}

/// Runs made by load agents: each agent's part, its CPU and its clock.
/// None without such a run.
pub(super) fn agents_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "agent",
        "state",
        "clients",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "schedule lag p99",
        "clock offset (uncertainty)",
    ]);
    t.left = vec![1, 2];
    for r in runs.iter().filter(|r| !r.agents.is_empty()) {
        for a in &r.agents {
            t.rows.push(vec![
                r.run_id.clone(),
                a.agent.clone(),
                format!("{:?}", a.state).to_lowercase(),
                a.clients.to_string(),
                format_rate(a.ops_per_s),
                format_ns(a.p50_ns as f64),
                format_ns(a.p99_ns as f64),
                format!("{:.2}", a.client_cpu_us_per_op),
                a.schedule_lag_p99_ns
                    .map_or_else(|| "-".into(), |l| format_ns(l as f64)),
                format!(
                    "{:+.3} ms (±{:.3} ms)",
                    a.clock_offset_ns as f64 / 1e6,
                    a.clock_uncertainty_ns as f64 / 1e6
                ),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}
