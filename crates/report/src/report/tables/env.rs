//! The environment of each run: host, kernel, CPU, build; it closes the
//! report.

use super::*;

/// The table, always.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    vec![
        Block::Heading("Environment".into()),
        Block::Table(env_table(runs)),
    ]
}

pub(super) fn env_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "host",
        "kernel",
        "CPU",
        "build",
        "wirebench",
        "started",
    ]);
    t.left = (1..7).collect();
    t.rows = runs
        .iter()
        .map(|r| {
            let e = &r.env;
            vec![
                r.run_id.clone(),
                e.hostname.clone(),
                e.kernel.clone(),
                e.cpu_model.clone(),
                e.build_profile.clone(),
                format!("{} ({})", e.wirebench_version, e.git_revision),
                r.started_at.clone(),
            ]
        })
        .collect();
    t
}
