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
pub mod worker;

use serde::{Deserialize, Serialize};
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

/// S3 credentials: given to a session as a value, never part of a request
/// or a result, never printed (`Debug` hides them).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(***)")
    }
}

impl Credentials {
    /// The credentials of a request's run: for a transport that signs its
    /// requests, the pair given or the environment's; for the others none,
    /// and a key given is refused.
    pub fn for_request(
        req: &RunRequest,
        access_key: Option<String>,
        secret_key: Option<String>,
    ) -> Result<Option<Credentials>, SpecError> {
        if req.transport_kind().about().signs {
            return Credentials::given_or_env(access_key, secret_key);
        }
        let flag = match (&access_key, &secret_key) {
            (Some(_), _) => "--access-key",
            (None, Some(_)) => "--secret-key-file",
            (None, None) => return Ok(None),
        };
        let signing = wirebench_core::kind::all()
            .iter()
            .copied()
            .find(|k| k.about().signs);
        Err(match signing {
            Some(transport) => SpecError::OtherTransport { flag, transport },
            None => SpecError::Flag {
                flag,
                why: "applies to no transport".into(),
            },
        })
    }

    /// The pair given, else the access key given with
    /// `AWS_SECRET_ACCESS_KEY`, else `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY`.
    pub fn given_or_env(
        access_key: Option<String>,
        secret_key: Option<String>,
    ) -> Result<Option<Credentials>, SpecError> {
        match (access_key, secret_key) {
            (Some(access_key), Some(secret_key)) => Ok(Some(Credentials {
                access_key,
                secret_key,
            })),
            (None, None) => {
                let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
                Ok(var("AWS_ACCESS_KEY_ID")
                    .zip(var("AWS_SECRET_ACCESS_KEY"))
                    .map(|(access_key, secret_key)| Credentials {
                        access_key,
                        secret_key,
                    }))
            }
            // The secret of a key given: from the environment.
            (Some(access_key), None) => {
                match std::env::var("AWS_SECRET_ACCESS_KEY")
                    .ok()
                    .filter(|v| !v.is_empty())
                {
                    Some(secret_key) => Ok(Some(Credentials {
                        access_key,
                        secret_key,
                    })),
                    None => Err(SpecError::Flag {
                        flag: "--access-key",
                        why: "needs its secret: --secret-key-file FILE, or AWS_SECRET_ACCESS_KEY"
                            .into(),
                    }),
                }
            }
            (None, Some(_)) => Err(SpecError::Flag {
                flag: "--secret-key-file",
                why: "needs --access-key (or AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY)".into(),
            }),
        }
    }

    /// A random pair, for the embedded fake server.
    pub fn random() -> Credentials {
        let mut b = [0u8; 24];
        let ok = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
            .is_ok();
        if !ok {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let t = wirebench_core::units::nanos(t);
            for (i, x) in b.iter_mut().enumerate() {
                *x = wirebench_core::spec::mix64(t ^ i as u64).to_le_bytes()[0];
            }
        }
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        Credentials {
            access_key: format!("WB{}", &hex[..16].to_uppercase()),
            secret_key: hex[16..].to_string(),
        }
    }
}

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
