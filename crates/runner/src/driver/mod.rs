//! The one `match` on the transport: [`open`] makes the [`Driver`] of a
//! run's transport, which runs each measured load on the engine (async
//! workers for msgr and the key-value stores, blocking threads or processes
//! for shm, typed calls for S3 and HTTP), and undoes what the transport created (S3's objects) at the end.
//! A new transport is one arm here.

use crate::events::Events;
use crate::process::Cancel;
use crate::{Credentials, RunError};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use wirebench_core::request::RunRequest;
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{
    ClientsAs, Endpoint, ExecSpec, GrpcSpec, HttpSpec, KvSpec, MsgrSpec, RunSpec, S3Spec, ShmSpec,
    TransportSpec,
};
use wirebench_load::calls::{self, CallTransport};
use wirebench_load::engine::{self, LoadConfig, LoadOutcome, Observer};
use wirebench_load::spread::Spread;
use wirebench_load::{Transport, blocking, remote};
use wirebench_transports::msgr::client::MsgrClient;
use wirebench_transports::shm::client::ShmClient;

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

/// Runs a transport's loads against one endpoint.
pub trait Driver {
    /// One measured load with `cfg`. `spec` may differ from the session's
    /// between loads in its load settings (rate, channel, wait).
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome;
    /// The prepare phase's report, once (S3: the objects created for reads).
    fn take_prepare(&mut self) -> Option<PhaseReport> {
        None
    }
    /// Undoes what the run created (S3: deletes its objects), once.
    fn close(&mut self, _events: &mut dyn Events) -> Option<PhaseReport> {
        None
    }
}

/// What opening a transport's driver gets.
pub struct Opening<'a> {
    pub spec: &'a RunSpec,
    /// The target, then the others of its kind (`--target A,B`).
    pub endpoints: Vec<&'a Endpoint>,
    pub opts: &'a SessionOptions,
    pub credentials: Option<Credentials>,
    pub cancel: &'a Cancel,
    pub events: &'a mut dyn Events,
}

macro_rules! drivers {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        $(mod $module;)*

        /// The driver of `spec`'s transport against `endpoint` (and the
        /// spec's other endpoints): its module's `open`. For S3 it also
        /// checks the endpoint, the credentials and the bucket, and
        /// prepares the objects reads need (cancelled by `cancel`).
        pub fn open(
            spec: &RunSpec,
            endpoint: &Endpoint,
            opts: &SessionOptions,
            credentials: Option<Credentials>,
            cancel: &Cancel,
            events: &mut dyn Events,
        ) -> Result<Box<dyn Driver>, RunError> {
            let mut at = Opening {
                spec,
                endpoints: std::iter::once(endpoint).chain(&spec.also_target).collect(),
                opts,
                credentials,
                cancel,
                events,
            };
            match &spec.transport {
                $($(TransportSpec::$kind(s) => $module::open(&mut at, s),)+)*
            }
        }
    };
}

wirebench_core::for_each_transport!(drivers);

/// The prepare phases of several endpoints, as one (they ran in turn).
fn sum_phases(a: Option<PhaseReport>, b: Option<PhaseReport>) -> Option<PhaseReport> {
    match (a, b) {
        (Some(a), Some(b)) => Some(PhaseReport {
            objects: a.objects + b.objects,
            bytes: a.bytes + b.bytes,
            seconds: a.seconds + b.seconds,
            errors: a.errors + b.errors,
        }),
        (a, b) => a.or(b),
    }
}

/// Runs the load over one transport per endpoint: the engine's
/// connections dealt to them in turn, `group` in a row to the same one
/// (see [`Spread`]).
fn load<T: Transport>(
    mut each: Vec<T>,
    group: usize,
    cfg: &LoadConfig,
    obs: &mut dyn Observer,
) -> LoadOutcome {
    if each.len() == 1 {
        return engine::run_load(Arc::new(each.remove(0)), cfg, obs);
    }
    engine::run_load(Arc::new(Spread::new(each, cfg, group)), cfg, obs)
}

/// As [`load`], for transports of typed operations.
fn load_calls<T: CallTransport>(
    mut each: Vec<T>,
    group: usize,
    cfg: &LoadConfig,
    obs: &mut dyn Observer,
) -> LoadOutcome {
    if each.len() == 1 {
        return calls::run_load_calls(Arc::new(each.remove(0)), cfg, obs);
    }
    calls::run_load_calls(Arc::new(Spread::new(each, cfg, group)), cfg, obs)
}

/// Runs a phase outside the load (preflight, prepare) until it ends or
/// the run is cancelled: Ctrl-C is obeyed at once, whatever the server does.
fn unless_cancelled<T>(
    rt: &tokio::runtime::Runtime,
    cancel: &Cancel,
    f: impl std::future::Future<Output = T>,
) -> Option<T> {
    rt.block_on(async {
        tokio::select! {
            r = f => Some(r),
            _ = cancel.cancelled(false) => None,
        }
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    /// The modules of a folder (its `.rs` files but `mod.rs`), sorted.
    fn modules_in(dir: &str) -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "mod.rs")
            .map(|n| n.trim_end_matches(".rs").to_string())
            .collect();
        files.sort();
        files
    }

    /// The registry lists every transport module of core's folder, and
    /// each has its driver here: no module, no driver, goes unlisted.
    #[test]
    fn each_module_of_the_registry_has_its_driver() {
        let mut modules: Vec<String> = wirebench_core::kind::all()
            .iter()
            .map(|k| k.module().to_string())
            .collect();
        modules.sort();
        modules.dedup();
        assert_eq!(modules_in("../core/src/transport"), modules);
        assert_eq!(modules_in("src/driver"), modules);
    }
}
