//! The flags of a run, shared by `run`, `search`, `flame` and
//! `ipc-compare`: the request's own ([`RunRequest`] is their clap
//! definition: a flag is declared once, as its field), and the few that
//! are not part of a request: the S3 credentials (never stored) and how
//! this process reaches its load agents.

use super::error::UsageError;
use clap::Args;
use std::path::PathBuf;
use wirebench_core::request::RunRequest;
use wirebench_core::units::Dur;
use wirebench_runner::auth::Token;
use wirebench_runner::{Credentials, SpecError};

#[derive(Args, Debug, Default)]
pub struct RunFlags {
    #[command(flatten)]
    pub req: RunRequest,
    /// Access key (default: $AWS_ACCESS_KEY_ID). Never printed nor stored.
    #[arg(long, help_heading = wirebench_core::request::heading::S3)]
    access_key: Option<String>,
    /// Refused: a secret on the command line is seen by every user of the
    /// host (ps, /proc/PID/cmdline) for the whole run. Kept so that the
    /// error names it.
    #[arg(long, hide = true)]
    secret_key: Option<String>,
    /// The secret key, read from this file (its first line; default:
    /// $AWS_SECRET_ACCESS_KEY). Never printed nor stored; never given on
    /// the command line, where ps shows it.
    #[arg(long, value_name = "FILE", help_heading = wirebench_core::request::heading::S3)]
    secret_key_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub agents: AgentFlags,
}

/// How this process reaches its load agents (`--agents` and `--launch` are
/// the request's).
#[derive(Args, Debug, Default)]
pub struct AgentFlags {
    /// --launch: ssh's configuration file (ssh -F), e.g. for an identity or a jump host.
    #[arg(
        long,
        requires = "launch",
        help_heading = wirebench_core::request::heading::AGENTS
    )]
    pub ssh_config: Option<PathBuf>,
    /// How long to keep trying to reach an agent that is not up yet (agents started with the
    /// run, as in a Kubernetes Job): 2m. Default: 0s (fail at once).
    #[arg(
        long,
        help_heading = wirebench_core::request::heading::AGENTS
    )]
    pub agents_wait: Option<Dur>,
    /// The agents' shared token, in this file (default: $WIREBENCH_TOKEN): proven to them,
    /// never sent.
    #[arg(
        long,
        help_heading = wirebench_core::request::heading::AGENTS
    )]
    pub token_file: Option<PathBuf>,
}

/// What every measuring command starts from.
pub struct Begun {
    pub req: RunRequest,
    pub opts: wirebench_runner::session::SessionOptions,
    pub topo: wirebench_core::topo::Topology,
    /// Set by Ctrl-C and SIGTERM, which stop the load (the partial result saved).
    pub cancel: wirebench_runner::process::Cancel,
}

impl RunFlags {
    /// The request, its session options, this machine's topology and the
    /// signals watched; a debug build is warned of.
    pub fn begin(&self) -> anyhow::Result<Begun> {
        let (req, opts) = (self.request(), self.session().map_err(UsageError::from)?);
        let topo = wirebench_core::topo::Topology::read();
        warn_if_debug();
        let cancel = wirebench_runner::process::watch_signals()?;
        Ok(Begun {
            req,
            opts,
            topo,
            cancel,
        })
    }

    /// The request these flags make (the region from $AWS_REGION when not given).
    pub fn request(&self) -> RunRequest {
        wirebench_runner::with_env_region(self.req.clone().from_flags())
    }

    /// The S3 credentials of the flags, else of the AWS_* variables (S3 runs only).
    pub fn credentials(&self) -> Result<Option<Credentials>, SpecError> {
        if self.secret_key.is_some() {
            return Err(SpecError::Invalid {
                flag: "--secret-key",
                why: "on the command line it is seen by every user of this host (ps, /proc/PID/cmdline) for the whole run: give --secret-key-file FILE, or set AWS_SECRET_ACCESS_KEY".into(),
            });
        }
        let s = match &self.secret_key_file {
            Some(f) => Some(secret_from(f)?),
            None => None,
        };
        Credentials::for_request(&self.request(), self.access_key.clone(), s)
    }

    /// The session options of these flags.
    pub fn session(&self) -> Result<wirebench_runner::session::SessionOptions, SpecError> {
        let mut opts =
            wirebench_runner::session::SessionOptions::of(&self.request(), self.credentials()?);
        if !self.req.fleet.agents.is_empty() {
            opts.agent_token =
                Token::given_or_env(self.agents.token_file.as_deref()).map_err(|why| {
                    SpecError::Invalid {
                        flag: "--token-file",
                        why,
                    }
                })?;
        }
        if let Some(f) = &self.agents.ssh_config
            && !f.is_file()
        {
            return Err(SpecError::Invalid {
                flag: "--ssh-config",
                why: format!("{}: no such file", f.display()),
            });
        }
        opts.ssh_config.clone_from(&self.agents.ssh_config);
        if let Some(Dur(d)) = self.agents.agents_wait {
            if self.req.fleet.agents.is_empty() {
                return Err(SpecError::Flag {
                    flag: "--agents-wait",
                    why: "waits for --agents: add them".into(),
                });
            }
            opts.agents_wait = d;
        }
        if self.req.fleet.agents.is_empty() && self.agents.token_file.is_some() {
            return Err(SpecError::Flag {
                flag: "--token-file",
                why: "proves this run to its --agents: add them".into(),
            });
        }
        Ok(opts)
    }
}

/// The warning every measuring command gives a debug build.
pub fn warn_if_debug() {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build: its figures are not representative; build with `cargo build --release`"
        );
    }
}

/// The secret key in `file`: its first line, trimmed; a file too large to
/// be a key (over 4 KiB), or an empty one, is refused by the flag's name.
fn secret_from(file: &std::path::Path) -> Result<String, SpecError> {
    let bad = |why: String| SpecError::Invalid {
        flag: "--secret-key-file",
        why,
    };
    let (key, loose) =
        wirebench_core::files::read_secret(file, "--secret-key-file").map_err(|why| {
            bad(why
                .strip_prefix("--secret-key-file ")
                .unwrap_or(&why)
                .to_string())
        })?;
    if let Some(w) = loose {
        eprintln!("{w}");
    }
    Ok(key)
}
