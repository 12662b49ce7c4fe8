//! wirebench-runner: executes runs. A [`RunRequest`] is checked into a
//! spec; a [`session::Session`] starts the target ([`target`]: the
//! embedded server as a pinned child process, or an external endpoint) and
//! opens the transport's driver ([`driver`], generated from the registry of
//! transport); each measured load becomes a result ([`outcome`]: the
//! summary, the warnings and their rules) that [`record`] stamps, checks
//! against the objectives and saves. [`run`], [`search`], [`sweep`],
//! [`ipc_compare`] and [`flame`] are the commands built on these; [`serve`]
//! is the server side; [`process`] holds signals and child processes.
//! Nothing here prints: progress goes to [`session::Events`].
//!
//! ```no_run
//! use wirebench_core::request::RunRequest;
//! use wirebench_core::topo::Topology;
//! use wirebench_runner::{process::Cancel, run, session::SessionOptions};
//!
//! struct Silent;
//! impl wirebench_runner::session::Events for Silent {}
//! impl run::RunEvents for Silent {}
//!
//! let req = RunRequest { duration: Some("2s".parse().unwrap()), ..RunRequest::default() };
//! let report = run::run(&req, &SessionOptions::default(), &Topology::read(), vec![], Cancel::new(), &mut Silent)?;
//! println!("{} ops/s", report.runs[0].0.summary.ops_per_s);
//! # Ok::<(), wirebench_runner::RunError>(())
//! ```
// Input is parsed here: no silent narrowing casts (checked conversions, or
// units::whole for figures).
#![deny(clippy::cast_possible_truncation)]

pub mod abort;
pub mod agent;
pub mod auth;
pub mod capture;
pub mod command;
pub mod driver;
pub mod events;
pub mod exec;
pub mod flame;
pub mod ipc_compare;
pub mod metrics;
pub mod observed;
pub mod outcome;
pub mod process;
pub mod record;
pub mod run;
pub mod search;
pub mod serve;
pub mod session;
pub mod sweep;
pub mod target;
pub mod tree;
pub mod upload;
pub mod worker;

pub use wirebench_core::request::{RunRequest, SpecError};
pub use wirebench_load::engine::IntervalReport;

/// The git revision this build came from (recorded in every result).
pub const GIT_REVISION: &str = env!("WIREBENCH_GIT_REVISION");

pub use wirebench_core::summaries::EXIT_SLO_MISSED;

/// Why a command could not run (a failed *run* is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A bad request: exit status 2.
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{0}")]
    Failed(String),
    /// Stopped by Ctrl-C or SIGTERM before any load (exit status 130).
    #[error("{0}")]
    Interrupted(String),
    #[error(transparent)]
    Store(#[from] wirebench_core::store::StoreError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A run measured but not saved where its results go (a full disk):
    /// where it is kept instead, and the result itself.
    #[error("{0}")]
    Unsaved(Box<Unsaved>),
}

/// A result that could not be saved in its results directory.
#[derive(Debug)]
pub struct Unsaved {
    /// Why (the path and the system's error).
    pub why: String,
    /// Where it was kept instead (memory-backed /dev/shm, else the
    /// temporary directory), if anywhere.
    pub kept: Option<std::path::PathBuf>,
    /// The result, as run.json would have held it.
    pub json: String,
}

impl std::fmt::Display for Unsaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kept {
            Some(p) => write!(
                f,
                "{}; the run's result is kept in {} (only there: move it where results go)",
                self.why,
                p.display()
            ),
            None => write!(
                f,
                "{}; nowhere to keep the run's result: it is written on stdout",
                self.why
            ),
        }
    }
}

/// S3 credentials (see [`wirebench_load::driver::Credentials`]).
pub use wirebench_load::driver::Credentials;

/// The region of a request: the flag, else `AWS_REGION`. Its commit
/// label: the flag's, else `GIT_COMMIT` or `GITHUB_SHA` (what CI systems
/// set), so that a nightly job's runs are labelled by what they measured.
pub fn with_env_region(mut req: RunRequest) -> RunRequest {
    if req.transport_kind().about().signs && req.flags.s3.region.is_none() {
        req.flags.s3.region = std::env::var("AWS_REGION").ok().filter(|r| !r.is_empty());
    }
    let labelled = req.output.label.iter().any(|l| l.0.contains_key("commit"));
    let from_env = ["GIT_COMMIT", "GITHUB_SHA"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|c| !c.trim().is_empty()));
    if let (false, Some(commit)) = (labelled, from_env) {
        let pair = [("commit".to_string(), commit.trim().to_string())];
        req.output
            .label
            .push(wirebench_core::command::EnvVars(pair.into_iter().collect()));
    }
    req
}
