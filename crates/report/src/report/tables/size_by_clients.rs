//! Throughput and p99 by size x connections, a table per operation type
//! (the S3 report's tables, for any transport).

use super::*;

/// A heading and a table per operation type, where the runs span two
/// sizes or two connection counts.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    size_by_clients(runs)
        .into_iter()
        .flat_map(|(title, t)| [Block::Heading(title), Block::Table(t)])
        .collect()
}

/// Throughput and p99 by message (object) size x connections, with the
/// objectives' pass/fail marks: the S3 report's tables, for any transport.
/// One table per operation type (GET and PUT apart), each None unless its
/// runs span two sizes or two connection counts.
pub(crate) fn size_by_clients(runs: &[RunResult]) -> Vec<(String, Table)> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let mut ops: Vec<&str> = all.iter().map(|c| c.op.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    let mut out = Vec::new();
    for op in &ops {
        let here: Vec<&Cell> = all.iter().filter(|c| c.op == *op).collect();
        let mut sizes: Vec<(u64, String)> = here.iter().map(|c| c.size.clone()).collect();
        let mut conns: Vec<usize> = here.iter().map(|c| c.conns).collect();
        sizes.sort_unstable();
        sizes.dedup();
        conns.sort_unstable();
        conns.dedup();
        if sizes.len() < 2 && conns.len() < 2 {
            continue;
        }
        let mut head = vec!["size".to_string()];
        head.extend(conns.iter().map(|c| format!("{c} conn(s)")));
        let rows = sizes
            .iter()
            .map(|size| {
                let mut row = vec![size.1.clone()];
                for &n in &conns {
                    let at: Vec<&&Cell> = here
                        .iter()
                        .filter(|c| c.size == *size && c.conns == n)
                        .collect();
                    let Some(best) = at.iter().max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
                    else {
                        row.push("-".into());
                        continue;
                    };
                    let mut cell = format!("{:.1} MiB/s", best.mib_per_s);
                    if let Some(p99) = best.p99_ns {
                        cell.push_str(&format!(", p99 {}", format_ns(p99 as f64)));
                    }
                    // S3: the reads' time to first byte (the S3 report's TTFB columns).
                    if let Some(t) = &best.ttfb {
                        cell.push_str(&format!(
                            ", TTFB mean {} p99 {}",
                            format_ns(t.mean_ns),
                            format_ns(t.p99_ns as f64)
                        ));
                    }
                    let slos = &best.run.slos;
                    if !slos.is_empty() {
                        let missed: Vec<&str> = slos
                            .iter()
                            .filter(|o| !o.pass)
                            .map(|o| o.slo.as_str())
                            .collect();
                        if missed.is_empty() {
                            cell.push_str(", SLO met");
                        } else {
                            cell.push_str(&format!(", SLO missed: {}", missed.join(" ")));
                        }
                    }
                    if at.len() > 1 {
                        cell.push_str(&format!(" (best of {})", at.len()));
                    }
                    row.push(cell);
                }
                row
            })
            .collect();
        let title = if ops.len() > 1 {
            format!("Throughput and p99 by size and connections: {op}")
        } else {
            "Throughput and p99 by size and connections".to_string()
        };
        out.push((
            title,
            Table {
                head,
                rows,
                left: Vec::new(),
            },
        ));
    }
    out
}
