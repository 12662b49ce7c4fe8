//! The report's tables: a module each, whose `blocks` give its heading,
//! text and table where the runs allow it (none where they do not), listed
//! once in `registry!` in the report's order (after the hints, before the
//! figures); the environment closes the report. Below: the cells the
//! size and read/write tables share.

use super::*;

/// A table's blocks from the runs.
pub(super) type Blocks = fn(&[RunResult]) -> Vec<Block>;

macro_rules! registry {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every table before the figures, by name, listed once.
        pub(super) const TABLES: &[(&str, Blocks)] = &[$((stringify!($module), $module::blocks)),*];
    };
}

registry!(
    summary,
    size_by_clients,
    read_write,
    server,
    endpoints,
    stages,
    instances,
    agents,
    program
);

#[cfg(test)]
pub(super) use {size_by_clients::size_by_clients, summary::summary_table};

mod env;
/// The environment, which closes the report.
pub(super) const ENV: Blocks = env::blocks;

/// One operation type of one run, as the size x connections table shows it.
pub(super) struct Cell<'a> {
    pub(super) op: String,
    /// Bytes, and the label (an S3 list or range as given).
    pub(super) size: (u64, String),
    pub(super) conns: usize,
    pub(super) ops_per_s: f64,
    pub(super) mib_per_s: f64,
    p99_ns: Option<u64>,
    pub(super) ttfb: Option<wirebench_core::hist::LatencySummary>,
    pub(super) run: &'a RunResult,
}

/// A run's cells: one per operation type when it has several (S3 mixed),
/// else one for its mode.
pub(super) fn cells(r: &RunResult) -> Vec<Cell<'_>> {
    let s = &r.summary;
    let base = |op: String| Cell {
        op,
        size: (
            r.spec.transport.size_bytes(),
            size_label(r).unwrap_or_else(|| {
                wirebench_core::units::format_size(r.spec.transport.size_bytes())
            }),
        ),
        conns: r.spec.connections(),
        ops_per_s: s.ops_per_s,
        mib_per_s: s.mib_per_s_in.max(s.mib_per_s_out),
        p99_ns: (s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns),
        ttfb: s.by_op.get("get").and_then(|o| o.ttfb),
        run: r,
    };
    if s.by_op.len() < 2 {
        return vec![base(r.spec.transport.mode_name())];
    }
    s.by_op
        .iter()
        .map(|(op, o)| Cell {
            ops_per_s: o.ops_per_s,
            mib_per_s: o.mib_per_s,
            p99_ns: (o.latency.count > 0).then_some(o.latency.p99_ns),
            ttfb: o.ttfb,
            ..base(op.clone())
        })
        .collect()
}
