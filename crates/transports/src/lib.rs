//! wirebench-transports: the protocols wirebench speaks, their clients (which
//! plug into the load engine through `wirebench_load::Transport`) and their
//! reference servers. All OS glue lives in [`sys`].
//!
//! ```no_run
//! use wirebench_transports::msgr::client::MsgrClient;
//! use wirebench_core::spec::MsgrMode;
//! let client = MsgrClient::new("tcp://127.0.0.1:9000".parse().unwrap(), MsgrMode::Echo, 64, 64);
//! # let _ = client;
//! ```

/// `eprintln!` that never panics: a server whose stderr was closed (its
/// parent's `2>&1 | head -1`) goes on serving. It stands in for std's in
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

pub mod accept;
pub mod driver;
mod driving;
pub mod keys;
pub mod server;
pub mod sys;
pub mod tls;
pub mod watchdog;

/// One module per transport, each with its `driver`: the registry's list
/// (`wirebench_core::for_each_transport!`). Each folder's `spec.rs` is
/// not one of them: wirebench-core compiles it (see `specs.rs`).
macro_rules! transports {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        $(pub mod $module;)*
    };
}
wirebench_core::for_each_transport!(transports);

/// The cases of each property test: `n`, or `PROPTEST_CASES` for a longer hunt.
#[cfg(test)]
fn test_cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}
