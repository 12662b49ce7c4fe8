//! exec: the users' own benchmark programs. Running them is the runner's
//! (`wirebench_runner::exec`); reading their output is the parsers'
//! (`wirebench_core::parsers`); here is only its driver's opening.

pub(crate) mod driver;

/// No embedded server: a run measures the real one (`--target`).
pub static SERVER: Option<crate::server::Server> = None;
