//! exec runs: the program, the statistics it gave, how it measured.

use super::*;

/// The table, where a run was an exec run.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    match program_table(runs) {
        Some(t) => vec![
            Block::Heading("Programs (exec): their own figures".into()),
            Block::Table(t),
        ],
        None => vec![],
    }
}

/// exec runs: the program, the latency statistics it gave, and how it
/// measured. None without an exec run.
pub(super) fn program_table(runs: &[RunResult]) -> Option<Table> {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| {
            let t = r.summary.tool.as_ref()?;
            Some(vec![
                r.run_id.clone(),
                t.program.clone(),
                t.parser.clone(),
                if t.histogram {
                    "a histogram (every percentile)".into()
                } else if t.latency_stats.is_empty() {
                    "none".into()
                } else {
                    t.latency_stats.join(", ")
                },
                t.method.join("; "),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "program",
        "parser",
        "latency it gave",
        "how it measured",
    ]);
    t.left = vec![1, 2, 3, 4];
    t.rows = rows;
    Some(t)
}
