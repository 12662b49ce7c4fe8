//! The server side of each run that measured it: CPU per op, cores used,
//! thread groups, threads outside its cpuset, memory, context switches.

use super::*;

/// The table, where a run measured its server.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match server_table(runs) {
        Some(t) => vec![Block::Heading("Server".into()), Block::Table(t)],
        None => vec![],
    }
}

/// The server side of each run that measured it (embedded or observed):
/// CPU per op, cores actually used, CPU by thread group, threads outside
/// its cpuset, the allocator's share (`flame`), memory and context
/// switches. None when no run measured a server.
pub(super) fn server_table(runs: &[RunResult]) -> Option<Table> {
    let measured: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.summary.server_cpu_s.is_some())
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "server CPU us/op",
        "cores used (cpuset)",
        "ops/s per core used",
        "CPU by thread group (% of a core)",
        "threads outside the cpuset",
        "allocator share of samples",
        "peak RSS",
        "context switches (vol/invol)",
    ]);
    t.left = vec![4, 5, 6];
    t.rows = measured
        .iter()
        .map(|r| {
            let s = &r.summary;
            let th = s.server_threads.as_ref();
            let dash = || "-".to_string();
            vec![
                r.run_id.clone(),
                s.server_cpu_us_per_op
                    .map_or_else(dash, |v| format!("{v:.2}")),
                s.server_cores_used.map_or_else(dash, |u| {
                    let set = r
                        .placement
                        .server_cpus
                        .as_ref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default();
                    format!("{u:.2}{set}")
                }),
                s.ops_per_core_used.map_or_else(dash, |v| format!("{v:.0}")),
                th.map_or_else(dash, |t| {
                    t.groups
                        .iter()
                        .filter(|g| g.cpu_pct >= 0.5)
                        .take(5)
                        .map(|g| format!("{} {:.0}", g.group, g.cpu_pct))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                th.map_or_else(dash, |t| {
                    if t.outside_cpuset.is_empty() {
                        return "none".into();
                    }
                    t.outside_cpuset
                        .iter()
                        .take(4)
                        .map(|o| format!("{} ({:.2} s)", o.name, o.cpu_s))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                s.server_allocator.as_ref().map_or_else(dash, |a| {
                    let lib = a
                        .top
                        .first()
                        .map(|e| format!(" ({})", e.library))
                        .unwrap_or_default();
                    format!("{:.1}%{lib}", a.share_pct)
                }),
                s.server_peak_rss_bytes
                    .map_or_else(dash, |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64)),
                th.map_or_else(dash, |t| {
                    format!("{} / {}", t.voluntary_switches, t.involuntary_switches)
                }),
            ]
        })
        .collect();
    Some(t)
}
