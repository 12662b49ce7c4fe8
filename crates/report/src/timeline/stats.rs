//! Per-event statistics of one shape and the table in the RAMCloud
//! report's layout.

use super::op::Op;

/// min, mean, max, standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub sd: f64,
}

fn stat(xs: &[f64]) -> Stat {
    let n = xs.len().max(1) as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    Stat {
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        mean,
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        sd: var.sqrt(),
    }
}

/// Per event of one shape: name, cumulative, delta, and the deltas.
pub struct EventStats {
    pub name: String,
    pub cumulative: Stat,
    pub delta: Stat,
    pub deltas: Vec<f64>,
}

pub fn stats(ops: &[&Op]) -> Vec<EventStats> {
    let Some(first) = ops.first() else {
        return vec![];
    };
    (0..first.events.len())
        .map(|k| {
            let cum: Vec<f64> = ops.iter().map(|o| o.events[k].1).collect();
            let deltas: Vec<f64> = ops
                .iter()
                .map(|o| {
                    if k == 0 {
                        0.0
                    } else {
                        o.events[k].1 - o.events[k - 1].1
                    }
                })
                .collect();
            EventStats {
                name: first.events[k].0.clone(),
                cumulative: stat(&cum),
                delta: stat(&deltas),
                deltas,
            }
        })
        .collect()
}

/// A duration as the RAMCloud report writes it: to a tenth of its unit
/// (`90.0 ns`, `5.4 us`), so that a 16.5 ns step is not read as 17.
pub fn format_tenths(ns: f64) -> String {
    if ns.abs() < 1e3 {
        format!("{ns:.1} ns")
    } else if ns.abs() < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else if ns.abs() < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.1} s", ns / 1e9)
    }
}

/// The table in the RAMCloud report's layout.
pub fn table(events: &[EventStats]) -> String {
    let f = |x: f64| format!("{:>8}", format_tenths(x));
    let mut s = format!(
        "( {:^26} )  |  {:^30}  |  [ {:^8} ] Event\n( {:>8} {:>8} {:>8} )  |  {:>8}   {:>8}   {:>8}  |  [ {:8} ]\n",
        "Cumulative", "Delta", "Std.Dev.", "Min", "Mean", "Max", "Min", "Mean", "Max", ""
    );
    for e in events {
        s.push_str(&format!(
            "( {} {} {} )  |  {}   {}   {}  |  [ {} ] {}\n",
            f(e.cumulative.min),
            f(e.cumulative.mean),
            f(e.cumulative.max),
            f(e.delta.min),
            f(e.delta.mean),
            f(e.delta.max),
            f(e.delta.sd),
            e.name
        ));
    }
    s
}
