//! The seam between the runner and a transport's driver: what opening
//! one gets ([`Opening`]), what it answers ([`Driver`], [`OpenError`]),
//! and the small traits through which it tells what it does ([`Notes`])
//! and learns that the run stops ([`Cancel`]). The drivers live with their
//! protocols (`wirebench_transports::<t>::driver`); the runner holds them
//! through these traits only.

use crate::engine::{LoadConfig, LoadOutcome, Observer};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{Endpoint, RunSpec};

/// Runs a transport's loads against its endpoints.
pub trait Driver {
    /// One measured load with `cfg`. `spec` may differ from the session's
    /// between loads in its load settings (rate, channel, wait).
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome;
    /// The prepare phase's report, once (S3: the objects created for reads).
    fn take_prepare(&mut self) -> Option<PhaseReport> {
        None
    }
    /// Undoes what the run created (S3: deletes its objects), once.
    fn close(&mut self, _notes: &mut dyn Notes) -> Option<PhaseReport> {
        None
    }
}

/// Where a driver tells what it does (prepare, cleanup, a server's
/// answer to its check): lines for the people watching.
pub trait Notes {
    fn note(&mut self, text: &str);
}

/// Notes nobody reads.
pub struct Unread;
impl Notes for Unread {
    fn note(&mut self, _: &str) {}
}

/// What runs the users' own programs (a transport whose `About` says
/// `own_program`): the runner's, which starts and watches processes.
pub trait Programs {
    /// The driver that runs `spec`'s program once per load.
    fn open(&mut self, spec: &RunSpec) -> Result<Box<dyn Driver>, OpenError>;
}

/// Why a driver could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The endpoint refused, or is not what the transport speaks.
    #[error("{0}")]
    Failed(String),
    /// The run was cancelled while the driver checked or prepared.
    #[error("{0}")]
    Interrupted(String),
}

impl From<std::io::Error> for OpenError {
    fn from(e: std::io::Error) -> Self {
        OpenError::Failed(e.to_string())
    }
}

/// What opening a transport's driver gets.
pub struct Opening<'a> {
    pub spec: &'a RunSpec,
    /// The target, then the others of its kind (`--target A,B`).
    pub endpoints: Vec<&'a Endpoint>,
    /// Requests are signed with these (a transport that signs).
    pub credentials: Option<Credentials>,
    /// S3: create the target bucket if it does not exist.
    pub create_bucket: bool,
    /// Over TLS: also trust this CA.
    pub ca_file: Option<&'a Path>,
    /// Whether the secrets of this process's environment (`$REDISCLI_AUTH`)
    /// may be sent to the target.
    pub env_secrets: bool,
    pub cancel: &'a Cancel,
    pub notes: &'a mut dyn Notes,
    pub programs: &'a mut dyn Programs,
}

impl Opening<'_> {
    /// The error of a check or a prepare phase that `cancel` stopped.
    pub fn interrupted(&self, what: impl std::fmt::Display) -> OpenError {
        OpenError::Interrupted(format!(
            "{what}: {}",
            self.cancel.reason().unwrap_or("cancelled")
        ))
    }
}

/// A run's cancel flag: set once, with why (a signal's name, or the
/// caller's reason), then possibly forced (a second signal: stop even the
/// cleanup). Cloned into everything that must stop with the run.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    why: Arc<OnceLock<String>>,
    forced: Arc<AtomicBool>,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the run to stop (the first reason wins).
    pub fn cancel(&self, why: impl Into<String>) {
        let _ = self.why.set(why.into());
    }

    /// Asks again: what cleans up stops too, and says what it left.
    pub fn force(&self) {
        self.cancel("forced");
        self.forced.store(true, Ordering::Relaxed);
    }

    /// Why the run was asked to stop, if it was.
    pub fn reason(&self) -> Option<&str> {
        self.why.get().map(String::as_str)
    }

    pub fn is_cancelled(&self) -> bool {
        self.why.get().is_some()
    }

    pub fn is_forced(&self) -> bool {
        self.forced.load(Ordering::Relaxed)
    }

    /// Resolves once the run is cancelled (`forced`: once forced); for
    /// `select!` beside a phase that must obey Ctrl-C at once.
    pub async fn cancelled(&self, forced: bool) {
        loop {
            if (forced && self.is_forced()) || (!forced && self.is_cancelled()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
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
