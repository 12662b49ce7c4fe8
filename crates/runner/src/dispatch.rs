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
use wirebench_core::spec::{ClientsAs, Endpoint, RunSpec, TransportSpec};
use wirebench_load::calls::{self, CallTransport};
use wirebench_load::engine::{self, LoadConfig, LoadOutcome, Observer};
use wirebench_load::spread::Spread;
use wirebench_load::{Transport, blocking, remote};
use wirebench_transports::grpc;
use wirebench_transports::http;
use wirebench_transports::kv;
use wirebench_transports::msgr::client::MsgrClient;
use wirebench_transports::s3;
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
    pub agent_token: Option<crate::agent::auth::Token>,
    /// `ssh -F` of `--launch ssh:` (None: the user's ssh configuration).
    pub ssh_config: Option<PathBuf>,
    /// How long the coordinator tries again to reach an agent that is not
    /// up yet (zero: not at all).
    pub agents_wait: std::time::Duration,
}

impl SessionOptions {
    /// The options of a request, with these credentials.
    pub fn of(req: &RunRequest, credentials: Option<Credentials>) -> SessionOptions {
        SessionOptions {
            credentials,
            create_bucket: req.create_bucket.unwrap_or(false),
            ca_file: req.ca_file.clone(),
            server_dir: None,
            port: req.port,
            instance: req.instance.unwrap_or(0),
            values: Default::default(),
            agent_token: None,
            ssh_config: None,
            agents_wait: std::time::Duration::ZERO,
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

/// The driver of `spec`'s transport against `endpoint`. For S3 it also
/// checks the endpoint, the credentials and the bucket, and prepares the
/// objects reads need (cancelled by `opts.cancel`).
pub fn open(
    spec: &RunSpec,
    endpoint: &Endpoint,
    opts: &SessionOptions,
    credentials: Option<Credentials>,
    cancel: &Cancel,
    events: &mut dyn Events,
) -> Result<Box<dyn Driver>, RunError> {
    let endpoints: Vec<&Endpoint> = std::iter::once(endpoint).chain(&spec.also_target).collect();
    Ok(match &spec.transport {
        TransportSpec::Msgr(_) => Box::new(MsgrDriver(endpoints.into_iter().cloned().collect())),
        TransportSpec::Shm(_) => match endpoint {
            Endpoint::Unix(path) => Box::new(ShmDriver(path.clone())),
            other => {
                return Err(RunError::Failed(format!(
                    "{other}: a shm server listens on a Unix socket"
                )));
            }
        },
        TransportSpec::Redis(kv) | TransportSpec::Memcached(kv) => {
            let mut all = KvDriver {
                clients: vec![],
                prepare: None,
            };
            for e in endpoints {
                let one = KvDriver::open(spec, kv, e, cancel, events)?;
                all.clients.extend(one.clients);
                all.prepare = sum_phases(all.prepare, one.prepare);
            }
            Box::new(all)
        }
        TransportSpec::Http(h) => {
            let mut all = HttpDriver::open(spec, h, endpoint, cancel, events)?;
            for e in &endpoints[1..] {
                let one = HttpDriver::open(spec, h, e, cancel, events)?;
                all.clients.extend(one.clients);
            }
            Box::new(all)
        }
        TransportSpec::Grpc(g) => {
            let mut all = HttpDriver::grpc(spec, g, endpoint, cancel, events)?;
            for e in &endpoints[1..] {
                let one = HttpDriver::grpc(spec, g, e, cancel, events)?;
                all.clients.extend(one.clients);
            }
            Box::new(all)
        }
        TransportSpec::Exec(_) => Box::new(
            crate::exec::ExecDriver::new(opts.values.clone(), opts.server_dir.as_deref())
                .map_err(RunError::Failed)?,
        ),
        TransportSpec::S3(s3spec) => {
            let mut all = S3Drivers(vec![]);
            for e in endpoints {
                match S3Driver::open(spec, s3spec, e, opts, credentials.clone(), cancel, events) {
                    Ok(d) => all.0.push(d),
                    Err(err) => {
                        // The objects made in the endpoints opened are deleted.
                        all.close(events);
                        return Err(err);
                    }
                }
            }
            Box::new(all)
        }
    })
}

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

impl Driver for crate::exec::ExecDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        crate::exec::ExecDriver::drive(self, spec, cfg, obs)
    }
}

/// msgr: its endpoints.
struct MsgrDriver(Vec<Endpoint>);

impl Driver for MsgrDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let m = spec.msgr().expect("a msgr spec");
        let each = self
            .0
            .iter()
            .map(|e| {
                MsgrClient::new(
                    e.clone(),
                    m.mode,
                    usize::try_from(m.size_bytes).expect("checked: at most 4GiB"),
                    usize::try_from(m.response_size_bytes).expect("checked: at most 4GiB"),
                )
                .verify(spec.verify)
            })
            .collect();
        load(each, 1, cfg, obs)
    }
}

struct ShmDriver(std::path::PathBuf);

impl Driver for ShmDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let shm = spec.shm().expect("a shm spec");
        let client = ShmClient::new(
            self.0.clone(),
            shm.channel,
            shm.mode,
            shm.size_bytes,
            shm.ring_bytes,
            shm.wait,
            spec.verify,
        );
        match shm.clients_as {
            ClientsAs::Threads => blocking::run_load(Arc::new(client), cfg, obs),
            ClientsAs::Processes => remote::run_load_processes(cfg, obs, &mut |worker| {
                start_client_process(worker, cfg, &client)
            }),
        }
    }
}

/// Starts the process of client `worker` (`wirebench shm-worker`) and
/// gives it its order.
fn start_client_process(
    worker: usize,
    cfg: &LoadConfig,
    client: &ShmClient,
) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args([
            "shm-worker",
            "--exit-with-parent",
            &std::process::id().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: Ctrl-C reaches this process only, which
        // then ends the clients after saving what they measured.
        .process_group(0)
        .spawn()?;
    let order = remote::WorkerOrder {
        worker,
        cfg: cfg.clone(),
        transport: client.clone(),
    };
    let mut line = serde_json::to_vec(&order).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let stdin = child.stdin.as_mut().expect("piped");
    if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}

/// Concurrent requests of the S3 prepare and cleanup phases (at most).
const S3_PHASE_CONCURRENCY: usize = 32;

/// An S3 run's workload, and what its prepare phase did.
struct S3Driver {
    endpoint: Endpoint,
    workload: Arc<s3::Workload>,
    prepare: Option<PhaseReport>,
    concurrency: usize,
    closed: bool,
    /// A second signal stops the cleanup too.
    cancel: Cancel,
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

impl S3Driver {
    fn open(
        spec: &RunSpec,
        s3spec: &wirebench_core::spec::S3Spec,
        endpoint: &Endpoint,
        opts: &SessionOptions,
        credentials: Option<Credentials>,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<S3Driver, RunError> {
        let Endpoint::S3 { addr, bucket, tls } = endpoint else {
            return Err(RunError::Failed(format!("{endpoint}: not an S3 endpoint")));
        };
        let creds = credentials.map(|c| rusty_s3::Credentials::new(c.access_key, c.secret_key));
        let tls = tls.then_some(opts.ca_file.as_deref());
        let client =
            s3::client::S3Client::new(addr, bucket, s3spec.style, &s3spec.region, creds, tls)
                .map_err(RunError::Failed)?
                .with_sign(s3spec.sign);
        let workload = Arc::new(s3::Workload::new(
            client,
            s3spec.clone(),
            spec.verify,
            spec.clients as u64,
            spec.conns_per_client as u64,
        ));
        let concurrency = spec.connections().clamp(1, S3_PHASE_CONCURRENCY);
        let rt = runtime()?;
        match unless_cancelled(
            &rt,
            cancel,
            s3::preflight(&workload.client, opts.create_bucket),
        ) {
            None => {
                return Err(RunError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(r) => r.map_err(|e| RunError::Failed(format!("checking {endpoint}: {e}")))?,
        }
        let mut driver = S3Driver {
            endpoint: endpoint.clone(),
            workload,
            prepare: None,
            concurrency,
            closed: false,
            cancel: cancel.clone(),
        };
        if driver.workload.needs_prepare() {
            events.note(&format!(
                "prepare: creating {} objects of {} in {endpoint}, keys {}* ...",
                s3spec.objects, s3spec.sizes, s3spec.prefix
            ));
            match unless_cancelled(&rt, cancel, s3::prepare(&driver.workload, concurrency)) {
                None => {
                    let made = driver.workload.existing();
                    events.note(&format!(
                        "prepare: interrupted ({}) after creating {made} objects",
                        cancel.reason().unwrap_or("cancelled")
                    ));
                    driver.close(events);
                    return Err(RunError::Interrupted(format!(
                        "interrupted during prepare; the {made} objects created are deleted"
                    )));
                }
                Some(Ok(p)) => {
                    events.note(&format!(
                        "prepare: {} objects, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    ));
                    driver.prepare = Some(p);
                }
                Some(Err(e)) => {
                    // What was created is deleted before the error is told.
                    driver.close(events);
                    return Err(RunError::Failed(e));
                }
            }
        }
        Ok(driver)
    }
}

/// S3: one driver per endpoint, each with its objects.
struct S3Drivers(Vec<S3Driver>);

impl Driver for S3Drivers {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let mut cfg = cfg.clone();
        // DELETE takes each object once: connections run out of work.
        cfg.finite_work =
            self.0[0].workload.spec.workload == wirebench_core::spec::S3Workload::Delete;
        let each = self
            .0
            .iter()
            .map(|d| s3::S3Transport(d.workload.clone()))
            .collect();
        load_calls(each, 1, &cfg, obs)
    }

    fn take_prepare(&mut self) -> Option<PhaseReport> {
        self.0
            .iter_mut()
            .fold(None, |all, d| sum_phases(all, d.prepare.take()))
    }

    fn close(&mut self, events: &mut dyn Events) -> Option<PhaseReport> {
        self.0
            .iter_mut()
            .fold(None, |all, d| sum_phases(all, d.close(events)))
    }
}

impl S3Driver {
    /// Deletes the objects the run created (unless kept), once.
    fn close(&mut self, events: &mut dyn Events) -> Option<PhaseReport> {
        if self.closed || self.workload.spec.keep {
            return None;
        }
        self.closed = true;
        let n = self.workload.existing();
        if n > 0 {
            events.note(&format!(
                "cleanup: deleting the {n} objects this run created in {} ...",
                self.endpoint
            ));
        }
        let rt = runtime().ok()?;
        // A second Ctrl-C stops the cleanup: it then says what it left.
        let c = rt.block_on(async {
            tokio::select! {
                c = s3::cleanup(&self.workload, self.concurrency) => Some(c),
                _ = self.cancel.cancelled(true) => None,
            }
        });
        let Some(c) = c else {
            let left = self.workload.existing();
            events.note(&format!(
                "cleanup: stopped by a second signal; {left} objects left under {}{}",
                self.workload.spec.prefix,
                if left > 0 { " (delete them by hand, or run again with the same --objects and --workload delete)" } else { "" }
            ));
            return Some(PhaseReport {
                objects: 0,
                bytes: 0,
                seconds: 0.0,
                errors: left,
            });
        };
        if c.errors > 0 {
            events.note(&format!(
                "cleanup: {} objects could not be deleted (prefix {})",
                c.errors, self.workload.spec.prefix
            ));
        }
        Some(c)
    }
}

/// A key-value run (redis, memcached): a client per endpoint, and the
/// prepare phase.
struct KvDriver {
    clients: Vec<Arc<kv::KvClient>>,
    prepare: Option<PhaseReport>,
}

impl KvDriver {
    /// Checks that the endpoint answers in the protocol (and takes the
    /// password of $REDISCLI_AUTH), then writes the keys reads need.
    fn open(
        spec: &RunSpec,
        kvspec: &wirebench_core::spec::KvSpec,
        endpoint: &Endpoint,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<KvDriver, RunError> {
        let auth = match endpoint {
            Endpoint::Redis { user, .. } => std::env::var("REDISCLI_AUTH")
                .ok()
                .filter(|p| !p.is_empty())
                .map(|password| kv::Auth {
                    user: user.clone(),
                    password,
                }),
            _ => None,
        };
        let client = kv::KvClient::new(
            endpoint,
            kvspec.clone(),
            auth,
            spec.verify,
            spec.clients as u64,
            spec.conns_per_client as u64,
        )
        .map_err(RunError::Failed)?;
        let client = Arc::new(client);
        let rt = runtime()?;
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns).clamp(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(30),
        );
        match unless_cancelled(&rt, cancel, kv::preflight(&client, timeout)) {
            None => {
                return Err(RunError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(r) => r.map_err(|e| RunError::Failed(format!("checking {endpoint}: {e}")))?,
        }
        let mut prepare = None;
        if kv::needs_prepare(kvspec) {
            events.note(&format!(
                "prepare: writing {} keys {}0..{} of {} in {endpoint} ...",
                kvspec.keys,
                kvspec.prefix,
                kvspec.keys - 1,
                kvspec.sizes
            ));
            match unless_cancelled(&rt, cancel, kv::prepare(&client, timeout)) {
                None => {
                    return Err(RunError::Interrupted(format!(
                        "interrupted during prepare ({})",
                        cancel.reason().unwrap_or("cancelled")
                    )));
                }
                Some(Ok(p)) => {
                    events.note(&format!(
                        "prepare: {} keys, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    ));
                    prepare = Some(p);
                }
                Some(Err(e)) => return Err(RunError::Failed(e)),
            }
        }
        Ok(KvDriver {
            clients: vec![client],
            prepare,
        })
    }
}

impl Driver for KvDriver {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let each = self
            .clients
            .iter()
            .map(|c| kv::KvTransport(c.clone()))
            .collect();
        load(each, 1, cfg, obs)
    }

    fn take_prepare(&mut self) -> Option<PhaseReport> {
        self.prepare.take()
    }
}

/// An HTTP run's clients (one per endpoint), checked against the servers
/// before any load.
struct HttpDriver {
    clients: Vec<Arc<http::HttpClient>>,
    streams: usize,
}

impl HttpDriver {
    /// Checks that the endpoint takes a connection and answers a request
    /// in the HTTP version asked (an error status is noted, not refused:
    /// the run counts it as failures).
    fn open(
        spec: &RunSpec,
        h: &wirebench_core::spec::HttpSpec,
        endpoint: &Endpoint,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<HttpDriver, RunError> {
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns);
        let client =
            Arc::new(http::HttpClient::new(endpoint, h, timeout).map_err(RunError::Failed)?);
        let rt = runtime()?;
        match unless_cancelled(&rt, cancel, http::preflight(&client)) {
            None => {
                return Err(RunError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(Err(e)) => return Err(RunError::Failed(format!("checking {endpoint}: {e}"))),
            Some(Ok(status)) if status.as_u16() >= 400 => events.note(&format!(
                "{} {endpoint} answers {status}: each such answer counts as a failure",
                h.method.to_string().to_uppercase()
            )),
            Some(Ok(_)) => {}
        }
        let streams = match h.version {
            wirebench_core::spec::HttpVersion::H2 => spec.depth,
            wirebench_core::spec::HttpVersion::H1 => 1,
        };
        Ok(HttpDriver {
            clients: vec![client],
            streams,
        })
    }
}

impl HttpDriver {
    /// Finds the gRPC method's types (descriptor set or reflection),
    /// encodes the request, and checks with one call that the server
    /// implements the method (an error status is noted, not refused).
    fn grpc(
        spec: &RunSpec,
        g: &wirebench_core::spec::GrpcSpec,
        endpoint: &Endpoint,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<HttpDriver, RunError> {
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns);
        let rt = runtime()?;
        let interrupted = || {
            RunError::Interrupted(format!(
                "checking {endpoint}: {}",
                cancel.reason().unwrap_or("cancelled")
            ))
        };
        let prepared = unless_cancelled(&rt, cancel, grpc::prepare(endpoint, g, timeout))
            .ok_or_else(interrupted)?
            .map_err(|e| RunError::Failed(format!("{endpoint}: {e}")))?;
        events.note(&format!(
            "{}: {} method, types from {}",
            g.call,
            if prepared.server_streaming {
                "server-streaming"
            } else {
                "unary"
            },
            prepared.source
        ));
        match unless_cancelled(&rt, cancel, grpc::preflight(&prepared)).ok_or_else(interrupted)? {
            Err(e) => return Err(RunError::Failed(format!("checking {endpoint}: {e}"))),
            Ok(Some(cause)) => events.note(&format!(
                "{} answers {cause}: each such answer counts as a failure",
                g.call
            )),
            Ok(None) => {}
        }
        Ok(HttpDriver {
            clients: vec![Arc::new(prepared.client)],
            streams: spec.depth,
        })
    }
}

impl Driver for HttpDriver {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        // Each HTTP/2 stream is a connection of the engine's, `streams` of
        // them sharing one connection to the server.
        let mut cfg = cfg.clone();
        cfg.conns_per_client *= self.streams;
        let each = self
            .clients
            .iter()
            .map(|c| {
                http::HttpTransport::new(c.clone(), self.streams, cfg.clients, cfg.conns_per_client)
            })
            .collect();
        load_calls(each, self.streams, &cfg, obs)
    }
}
