//! Reads and writes side by side by size and connections (the S3 report's
//! throughput table), with the R/W ratio.

use super::*;

/// The table, where the runs have both reads and writes.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match read_write_table(runs) {
        Some(t) => vec![
            Block::Heading("Read and write".into()),
            Block::Text("Reads (GET) and writes (PUT) by size and connections, each the best run's; R/W ratio: read MiB/s over write MiB/s, how much faster reads are (the S3 report's).".into()),
            Block::Table(t),
        ],
        None => vec![],
    }
}

/// Reads and writes side by side by size and connections (the S3
/// report's throughput table): each the best run's ops/s and MiB/s, and
/// the R/W ratio. None unless the runs have both.
pub(super) fn read_write_table(runs: &[RunResult]) -> Option<Table> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let best = |op: &str, size: &(u64, String), conns: usize| {
        all.iter()
            .filter(|c| c.op == op && c.size == *size && c.conns == conns)
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
    };
    if !all.iter().any(|c| c.op == "get") || !all.iter().any(|c| c.op == "put") {
        return None;
    }
    let mut keys: Vec<((u64, String), usize)> = all
        .iter()
        .filter(|c| c.op == "get" || c.op == "put")
        .map(|c| (c.size.clone(), c.conns))
        .collect();
    keys.sort();
    keys.dedup();
    let mut t = Table::new([
        "size",
        "connections",
        "read ops/s",
        "read MiB/s",
        "write ops/s",
        "write MiB/s",
        "R/W ratio",
    ]);
    for (size, conns) in keys {
        let (r, w) = (best("get", &size, conns), best("put", &size, conns));
        let figs = |c: Option<&Cell>| match c {
            Some(c) => [format!("{:.1}", c.ops_per_s), format!("{:.3}", c.mib_per_s)],
            None => ["-".into(), "-".into()],
        };
        let ratio = match (r, w) {
            (Some(r), Some(w)) if w.mib_per_s > 0.0 => format!("{:.2}", r.mib_per_s / w.mib_per_s),
            _ => "-".into(),
        };
        let mut row = vec![size.1.clone(), conns.to_string()];
        row.extend(figs(r));
        row.extend(figs(w));
        row.push(ratio);
        t.row(row);
    }
    Some(t)
}
