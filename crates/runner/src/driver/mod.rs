//! The runner's side of the drivers: [`open`] hands a session's options to
//! the transport's driver (`wirebench_transports::driver`, one per
//! transport folder, through `wirebench_load::driver`'s small traits),
//! with the runner's own [`Programs`] for the users' programs and its
//! [`Events`] as the driver's notes.

use crate::events::Events;
use crate::process::Cancel;
use crate::{Credentials, RunError};
use std::path::PathBuf;
use wirebench_core::request::RunRequest;
use wirebench_core::spec::{Endpoint, RunSpec};
pub use wirebench_load::driver::Driver;
use wirebench_load::driver::{Notes, OpenError, Opening, Programs};

/// What opening a session needs besides the spec.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// S3: requests are signed with these (the embedded fake server gets
    /// random ones when none are given).
    pub credentials: Option<Credentials>,
    /// S3: create the target bucket if it does not exist.
    pub create_bucket: bool,
    /// S3 over TLS: also trust this CA.
    pub ca_file: Option<PathBuf>,
    /// Where a started server's output goes, and what `{run_dir}` is.
    pub server_dir: Option<PathBuf>,
    /// What `{port}` is (None: a free port, when a template uses it).
    pub port: Option<u16>,
    /// What `{instance}` is.
    pub instance: usize,
    /// The placeholders' values of the run (set by the session).
    pub values: std::collections::BTreeMap<&'static str, String>,
    /// What proves this coordinator to its load agents.
    pub agent_token: Option<crate::auth::Token>,
    /// `ssh -F` of `--launch ssh:` (None: the user's ssh configuration).
    pub ssh_config: Option<PathBuf>,
    /// How long the coordinator tries again to reach an agent that is not
    /// up yet (zero: not at all).
    pub agents_wait: std::time::Duration,
    /// The history every saved run is indexed in (None: none; a sweep's
    /// runs are indexed by the sweep, in its results' history).
    pub history: Option<PathBuf>,
    /// Whether the secrets of this process's environment (`$REDISCLI_AUTH`)
    /// may be sent to the target (an agent's: only to targets its operator
    /// listed).
    pub env_secrets: bool,
}

impl SessionOptions {
    /// The options of a request, with these credentials.
    pub fn of(req: &RunRequest, credentials: Option<Credentials>) -> SessionOptions {
        SessionOptions {
            credentials,
            create_bucket: req.flags.s3.create_bucket.unwrap_or(false),
            ca_file: req.ca_file.clone(),
            server_dir: None,
            port: req.server.port,
            instance: req.sweep.instance.unwrap_or(0),
            values: Default::default(),
            agent_token: None,
            ssh_config: None,
            agents_wait: std::time::Duration::ZERO,
            history: Some(wirebench_history::History::path_in(
                &req.output.results_dir(),
            )),
            env_secrets: true,
        }
    }
}

/// A session's events, as the notes a driver writes.
pub struct NotesTo<'a>(pub &'a mut dyn Events);

impl Notes for NotesTo<'_> {
    fn note(&mut self, text: &str) {
        self.0.note(text)
    }
}

impl From<OpenError> for RunError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Failed(why) => RunError::Failed(why),
            OpenError::Interrupted(why) => RunError::Interrupted(why),
        }
    }
}

/// The runner runs the users' programs (`crate::exec`).
struct Runner<'a>(&'a SessionOptions);

impl Programs for Runner<'_> {
    fn open(&mut self, _: &RunSpec) -> Result<Box<dyn Driver>, OpenError> {
        let d = crate::exec::ExecDriver::new(self.0.values.clone(), self.0.server_dir.as_deref())
            .map_err(OpenError::Failed)?;
        Ok(Box::new(d))
    }
}

/// The driver of `spec`'s transport against `endpoint` (and the spec's
/// other endpoints). For S3 it also checks the endpoint, the credentials
/// and the bucket, and prepares the objects reads need (cancelled by
/// `cancel`).
pub fn open(
    spec: &RunSpec,
    endpoint: &Endpoint,
    opts: &SessionOptions,
    credentials: Option<Credentials>,
    cancel: &Cancel,
    events: &mut dyn Events,
) -> Result<Box<dyn Driver>, RunError> {
    let mut notes = NotesTo(events);
    let mut programs = Runner(opts);
    let mut at = Opening {
        spec,
        endpoints: std::iter::once(endpoint).chain(&spec.also_target).collect(),
        credentials,
        create_bucket: opts.create_bucket,
        ca_file: opts.ca_file.as_deref(),
        env_secrets: opts.env_secrets,
        cancel,
        notes: &mut notes,
        programs: &mut programs,
    };
    Ok(wirebench_transports::driver::open(&mut at)?)
}
