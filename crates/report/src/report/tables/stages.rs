//! Runs in stages: a row per stage, and a ramp's verdict (its knee, each
//! objective's break) with its latency-against-rate figure.

use super::*;

/// The table, then each ramp's verdict and figure, where a run had stages.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    let Some(t) = stages_table(runs) else {
        return vec![];
    };
    let mut out = vec![
        Block::Heading("Stages".into()),
        Block::Text("Each stage of an open loop in stages: the rate it asked, the rates sent and completed, its latency, and the requests still due at its end (behind: sent more than 2% below the rate asked); a ramp's seconds in bands under it.".into()),
        Block::Table(t),
    ];
    for r in runs {
        if let Some(v) = &r.ramp {
            let lines: Vec<(String, String)> = crate::summary::ramp_lines(v)
                .into_iter()
                .map(|l| {
                    let (k, rest) = l.split_once(':').unwrap_or(("", &l));
                    (k.trim().to_string(), rest.trim().to_string())
                })
                .collect();
            out.push(Block::List(lines));
            out.push(Block::Figures(vec![ramp_figure(r, v)]));
        }
    }
    out
}

/// A row per stage of each run in stages (`--stages`): asked against sent
/// and completed, latency, and the sends late at its end.
pub(super) fn stages_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run", "stage", "asked/s", "sent/s", "done/s", "p50", "p99", "late", "kept up",
    ]);
    t.left = vec![1];
    for r in runs {
        for s in &r.stages {
            t.rows.push(vec![
                r.run_id.clone(),
                s.text.clone(),
                // A closed loop's stage asks connections, not a rate.
                match s.conns {
                    Some(_) => "-".into(),
                    None => format_rate(s.asked_per_s),
                },
                format_rate(s.sent_per_s),
                format_rate(s.completed_per_s),
                format_ns(s.latency.p50_ns as f64),
                format_ns(s.latency.p99_ns as f64),
                match s.conns {
                    Some(_) => "-".into(),
                    None => s.late_sends.to_string(),
                },
                if s.kept_up {
                    "yes".to_string()
                } else if s.backlog_in > 0 {
                    format!("behind ({} due before it)", s.backlog_in)
                } else {
                    "behind".into()
                },
            ]);
            for b in &s.bands {
                t.rows.push(vec![
                    String::new(),
                    format!("  {:.0}-{:.0}s", b.start_s, b.start_s + b.measured_s),
                    format_rate(b.asked_per_s),
                    format_rate(b.sent_per_s),
                    format_rate(b.completed_per_s),
                    format_ns(b.latency.p50_ns as f64),
                    format_ns(b.latency.p99_ns as f64),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    (!t.rows.is_empty()).then_some(t)
}
