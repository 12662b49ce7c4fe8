//! wirebench-report: what wirebench says about results already on disk. It
//! reads `run.json` files (and sweep indexes), never a live run:
//! [`inputs`] finds runs, [`compare`] puts variants side by side with their
//! noise, [`hints`] points at what the data suggest, with the evidence.
// Input is parsed here: no silent narrowing casts (checked conversions, or
// units::whole for figures).
#![deny(clippy::cast_possible_truncation)]

/// `eprintln!` that never panics: a closed stderr loses the line, never
/// the report. It stands in for std's in
/// this whole crate (declared before the modules that use it).
/// A peer's text in the line is shown escaped, never obeyed
/// (`wirebench_core::text::visible`).
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", wirebench_core::text::visible(&line));
    }};
}

pub mod compare;
pub mod experiment;
pub mod export;
pub mod flame;
pub mod hints;
pub mod history;
pub mod inputs;
pub mod junit;
pub mod live;
pub mod offcpu;
pub mod plot;
pub mod progress;
pub mod report;
pub mod summary;
pub mod timeline;
pub mod topo;
