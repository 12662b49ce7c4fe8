//! Sweep points of several instances side by side: a row per instance,
//! and what each kept of its throughput alone (the contention verdict).

use super::*;

/// The table, where a point ran several instances.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match instances_table(runs) {
        Some(t) => vec![
            Block::Heading("Instances".into()),
            Block::Text("Each instance of a point that ran several side by side; kept: its ops/s side by side over its ops/s alone (the same cpusets and clients, the others idle), where the sweep ran each alone (alone = true): within 5% no contention, below 85% contention.".into()),
            Block::Table(t),
        ],
        None => vec![],
    }
}

/// What an instance kept of its throughput alone, as a verdict: within 5%
/// (one run of each: about this VM's noise) is none.
pub(super) fn contention(kept: f64) -> &'static str {
    if kept >= 0.95 {
        "no contention"
    } else if kept >= 0.85 {
        "some contention"
    } else {
        "contention"
    }
}

/// Sweep points of several instances side by side: a row per instance
/// (its ops/s, latency, CPU, cpusets) under the aggregate's, and, where
/// each instance also ran alone (`alone = true`), what it kept of that
/// throughput and the contention verdict. None without such a point.
pub(super) fn instances_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "instance",
        "clients",
        "server CPUs",
        "client CPUs",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "server CPU us/op",
        "alone ops/s",
        "kept",
        "verdict",
    ]);
    t.left = vec![0, 1, 3, 4, 12];
    let opt_ns = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| format_ns(v as f64));
    for r in runs.iter().filter(|r| r.instances.len() > 1) {
        let s = &r.summary;
        let alone: Vec<f64> = r
            .instances
            .iter()
            .filter_map(|i| i.alone_ops_per_s)
            .collect();
        let kept_all =
            (alone.len() == r.instances.len()).then(|| s.ops_per_s / alone.iter().sum::<f64>());
        t.row([
            r.run_id.clone(),
            format!("all {}", r.instances.len()),
            r.spec.clients.to_string(),
            "-".into(),
            "-".into(),
            format_rate(s.ops_per_s),
            opt_ns((s.latency.count > 0 && s.has_latency("p50")).then_some(s.latency.p50_ns)),
            opt_ns((s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns)),
            format!("{:.2}", s.client_cpu_us_per_op),
            s.server_cpu_us_per_op
                .map_or("-".into(), |v| format!("{v:.2}")),
            if kept_all.is_some() {
                format_rate(alone.iter().sum())
            } else {
                "-".into()
            },
            kept_all.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
            kept_all.map_or("-".into(), |k| contention(k).to_string()),
        ]);
        for (k, i) in r.instances.iter().enumerate() {
            let kept = i.kept();
            t.row([
                format!("↳ {}", i.run_id),
                (k + 1).to_string(),
                i.clients.to_string(),
                i.server_cpus.as_ref().map_or("-".into(), |c| c.to_string()),
                i.client_cpus.to_string(),
                format_rate(i.ops_per_s),
                opt_ns(i.p50_ns),
                opt_ns(i.p99_ns),
                format!("{:.2}", i.client_cpu_us_per_op),
                i.server_cpu_us_per_op
                    .map_or("-".into(), |v| format!("{v:.2}")),
                i.alone_ops_per_s.map_or("-".into(), format_rate),
                kept.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
                kept.map_or("-".into(), |k| contention(k).to_string()),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}
