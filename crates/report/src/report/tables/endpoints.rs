//! Runs against several endpoints: each endpoint's part and share.

use super::*;

/// The table, where a run reached several endpoints.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match endpoints_table(runs) {
        Some(t) => vec![Block::Heading("Endpoints".into()), Block::Table(t)],
        None => vec![],
    }
}

/// Runs against several endpoints: each endpoint's part, and its share of
/// the run's operations (an uneven share points at a slow endpoint). None
/// without such a run.
pub(super) fn endpoints_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "endpoint",
        "conns",
        "ops/s",
        "share of ops",
        "p50",
        "p99",
        "errors",
        "agents",
    ]);
    t.left = vec![1, 8];
    for r in runs.iter().filter(|r| !r.endpoints.is_empty()) {
        let total = r.endpoints.iter().map(|e| e.ops).sum::<u64>().max(1);
        for e in &r.endpoints {
            t.rows.push(vec![
                r.run_id.clone(),
                e.endpoint.clone(),
                e.connections.to_string(),
                format_rate(e.ops_per_s),
                format!("{:.1}%", e.ops as f64 * 100.0 / total as f64),
                format_ns(e.p50_ns as f64),
                format_ns(e.p99_ns as f64),
                e.errors.to_string(),
                if e.agents.is_empty() {
                    "-".into()
                } else {
                    e.agents.join(", ")
                },
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}
