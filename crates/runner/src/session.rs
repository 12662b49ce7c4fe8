//! A session: a target (the embedded server it starts, or an external
//! one) and the driver of the run's transport, against which one or more
//! loads are measured (repetitions, search steps, ipc-compare's variants).
//! It takes a [`Cancel`] and credentials as values and prints nothing: what
//! people should see goes to its [`Events`].

pub use crate::driver::SessionOptions;
use crate::driver::{self, Driver};
pub use crate::events::{Events, Quiet};
use crate::observed::Observed;
use crate::outcome;
use crate::process::Cancel;
use crate::target::{Embedded, External, Target};
use crate::{Credentials, RunError};
use std::path::PathBuf;
use std::time::Duration;
use wirebench_core::result::{Placement, RunResult};
use wirebench_core::slo::Slo;
use wirebench_core::spec::{Endpoint, RunSpec, StopSpec, TargetSpec};
use wirebench_load::engine::{Abort, EndState, IntervalReport, LoadConfig, Observer, Start};
use wirebench_load::procs::ServerProcs;
use wirebench_load::sampler::Sampler;

/// The engine's observer during a load: progress to the events, and a stop
/// when the run is cancelled or the target dies.
struct LoadObserver<'a> {
    events: &'a mut dyn Events,
    cancel: &'a Cancel,
    target: &'a mut dyn Target,
    watch: crate::abort::Watch,
}

impl Observer for LoadObserver<'_> {
    fn connected(&mut self, connect_time_ns: u64) {
        self.events.connected(connect_time_ns);
    }
    fn interval(&mut self, iv: &IntervalReport) {
        self.events.interval(iv);
        if !self.watch.slos.is_empty() {
            self.watch.second(&iv.point());
        }
    }
    fn agreed_start(&mut self) -> Start {
        self.events.agreed_start()
    }
    fn poll_abort(&mut self) -> Option<Abort> {
        if let Some(why) = self.cancel.reason() {
            return Some(Abort::Interrupted(why.to_string()));
        }
        if let Some(why) = self.watch.missed.take() {
            return Some(Abort::Ended(why));
        }
        self.target.server_pid()?;
        let why = self.target.exited(Duration::ZERO)?;
        Some(Abort::Failed(format!("{} {why}", self.target.describe())))
    }
}

/// The engine's configuration of a measured load.
pub fn load_config(
    spec: &RunSpec,
    placement: &Placement,
    server: Option<ServerProcs>,
) -> LoadConfig {
    LoadConfig {
        clients: spec.clients,
        conns_per_client: spec.conns_per_client,
        depth: spec.depth,
        warmup: Duration::from_nanos(spec.warmup_ns),
        duration: match spec.stop {
            StopSpec::DurationNs(ns) => Duration::from_nanos(ns),
            StopSpec::Count(_) => Duration::ZERO,
        },
        count: match spec.stop {
            StopSpec::Count(c) => Some(c),
            StopSpec::DurationNs(_) => None,
        },
        rate: spec.rate_per_s,
        stages: spec.stages.clone(),
        arrival: spec.arrival,
        seed: 1,
        finite_work: false,
        poll: spec.poll,
        client_cpus: placement.client_cpus.cpus().to_vec(),
        sampler: Sampler {
            client_cpus: placement.client_cpus.cpus().to_vec(),
            server_cpus: placement
                .server_cpus
                .as_ref()
                .map(|c| c.cpus().to_vec())
                .unwrap_or_default(),
            server,
            client_children: Default::default(),
        },
        interval: Duration::from_secs(1),
        // Connecting (and a handshake) is an operation like any other.
        connect_timeout: match spec.op_timeout_ns {
            0 => Duration::from_secs(10),
            ns => Duration::from_nanos(ns),
        },
        op_timeout: Duration::from_nanos(spec.op_timeout_ns),
        hiccup: spec.hiccup_threshold_ns.is_some(),
        share: spec.share,
    }
}

/// A target and a driver, ready for loads.
pub struct Session {
    cancel: Cancel,
    target: Box<dyn Target>,
    driver: Option<Box<dyn Driver>>,
    /// S3: whether requests are signed (known once the credentials are).
    signed: Option<bool>,
    /// The stopped server's trace file (`--trace`).
    pub server_trace: Option<PathBuf>,
    /// The files of a started server's output.
    pub server_logs: Vec<PathBuf>,
    /// The last measured phase (what the watch of the server's threads
    /// saw is placed against it).
    measured_window: Option<(std::time::Instant, std::time::Instant)>,
    /// `--abort-on-fail`: the objectives over windows whose first missed
    /// window ends a load.
    pub abort_on: Vec<Slo>,
}

/// The endpoint of an observed server (a target port 0 replaced by the
/// port `{port}` stands for) and its placeholders' values.
fn observed_values(
    spec: &RunSpec,
    endpoint: &Endpoint,
    opts: &SessionOptions,
) -> Result<(Endpoint, std::collections::BTreeMap<&'static str, String>), RunError> {
    use wirebench_core::spec::{Ready, ServerSource};
    let uses_port = match spec.observe.as_ref().map(|o| &o.source) {
        Some(ServerSource::Command { cmd, ready }) => {
            cmd.contains("{port}") || matches!(ready, Some(Ready::Tcp(p)) if p == "{port}")
        }
        _ => false,
    } || spec.transport.describe().uses_port();
    let zero = endpoint.tcp_addr().is_some_and(|a| a.ends_with(":0"));
    let port = match opts.port {
        Some(p) => Some(p),
        None if uses_port || zero => Some(
            crate::observed::free_port()
                .map_err(|e| RunError::Failed(format!("no free port for {{port}}: {e}")))?,
        ),
        None => None,
    };
    let endpoint = match (zero, port) {
        (true, Some(p)) => {
            let addr = endpoint.tcp_addr().expect("tcp");
            let with = format!("{}:{p}", &addr[..addr.len() - 2]);
            endpoint
                .to_string()
                .replacen(addr, &with, 1)
                .parse()
                .map_err(|e| RunError::Failed(format!("--target with port {p}: {e}")))?
        }
        _ => endpoint.clone(),
    };
    let values =
        crate::observed::placeholders(spec, port, opts.instance, opts.server_dir.as_deref());
    Ok((endpoint, values))
}

impl Session {
    /// Starts the embedded server if the spec wants one, and opens the
    /// transport's driver against the target (S3: checks the endpoint and
    /// prepares the objects). On an error, what was started is stopped.
    pub fn open(
        spec: &RunSpec,
        opts: &SessionOptions,
        cancel: Cancel,
        events: &mut dyn Events,
    ) -> Result<Session, RunError> {
        let s3 = spec.kind().about().signs;
        let mut spec = spec.clone();
        let credentials = match &spec.target {
            TargetSpec::Embedded { .. } if s3 => {
                Some(opts.credentials.clone().unwrap_or_else(Credentials::random))
            }
            _ if s3 => opts.credentials.clone(),
            _ => None,
        };
        let signed = s3.then_some(credentials.is_some());
        let mut opts = opts.clone();
        // A command the run starts (a server, exec's program): its
        // placeholders' values, and the endpoint a target port 0 becomes.
        let mut resolved = None;
        if spec.observe.is_some() || spec.kind().about().own_program {
            let given = match &spec.target {
                TargetSpec::External { endpoint } => endpoint.clone(),
                _ => Endpoint::Tcp("127.0.0.1:1".into()),
            };
            let (endpoint, values) = observed_values(&spec, &given, &opts)?;
            opts.values = values;
            resolved = Some(endpoint);
        }
        let opts = &opts;
        if s3 {
            spec.transport.set_signed(credentials.is_some());
        }
        let target: Box<dyn Target> = match (&spec.target, resolved) {
            (TargetSpec::Embedded { .. }, _) => {
                Box::new(Embedded::start(&spec, credentials.clone()).map_err(RunError::Failed)?)
            }
            (TargetSpec::External { .. }, Some(endpoint)) if spec.observe.is_some() => Box::new(
                Observed::start(
                    &spec,
                    &endpoint,
                    &spec.server_env,
                    &opts.values,
                    opts.server_dir.as_deref(),
                )
                .map_err(RunError::Failed)?,
            ),
            (TargetSpec::External { endpoint }, _) => Box::new(External(endpoint.clone())),
            // A program of the user's without a target, its server given
            // by PID, cgroup or command: observed all the same.
            (TargetSpec::None, Some(endpoint)) if spec.observe.is_some() => Box::new(
                Observed::start(
                    &spec,
                    &endpoint,
                    &spec.server_env,
                    &opts.values,
                    opts.server_dir.as_deref(),
                )
                .map_err(RunError::Failed)?,
            ),
            (TargetSpec::None, _) => Box::new(External(Endpoint::Tcp("127.0.0.1:0".into()))),
        };
        let mut session = Session {
            cancel,
            target,
            driver: None,
            signed,
            server_trace: None,
            server_logs: vec![],
            measured_window: None,
            abort_on: Vec::new(),
        };
        let endpoint = session.endpoint().clone();
        let cancel = session.cancel.clone();
        match driver::open(&spec, &endpoint, opts, credentials, &cancel, events) {
            Ok(d) => session.driver = Some(d),
            Err(e) => {
                session.close(None, events);
                return Err(e);
            }
        }
        Ok(session)
    }

    /// A session over any target and driver (tests use doubles).
    pub fn with(target: Box<dyn Target>, driver: Box<dyn Driver>, cancel: Cancel) -> Session {
        Session {
            cancel,
            target,
            driver: Some(driver),
            signed: None,
            server_trace: None,
            server_logs: vec![],
            measured_window: None,
            abort_on: Vec::new(),
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        self.target.endpoint()
    }

    pub fn server_pid(&self) -> Option<u32> {
        self.target.server_pid()
    }

    /// `spec` with the target the session reaches (a `--server-cmd`'s
    /// target port 0 became the port it was given).
    pub fn resolve(&self, spec: &mut RunSpec) {
        if let TargetSpec::External { endpoint } = &mut spec.target {
            *endpoint = self.endpoint().clone();
        }
    }

    /// Every process of the server now (one for the embedded server).
    pub fn server_pids(&self) -> Vec<u32> {
        self.target.procs().map(|p| p.pids()).unwrap_or_default()
    }

    /// The cpuset of an observed server given none (its affinity when the
    /// run began): where its per-core CPU is read.
    pub fn observed_cpuset(&self) -> Option<wirebench_core::topo::CpuList> {
        wirebench_core::topo::CpuList::from_cpus(self.target.cpuset()?).ok()
    }

    /// Whether the run was cancelled (Ctrl-C, SIGTERM).
    pub fn interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// One measured load against the session's target. The result has no
    /// identity (run id, command line, start time) and no server report yet.
    pub fn measure(
        &mut self,
        spec: &RunSpec,
        placement: &Placement,
        events: &mut dyn Events,
    ) -> RunResult {
        let cfg = load_config(spec, placement, self.target.procs());
        let driver = self.driver.as_mut().expect("measure before close");
        let outcome = {
            let mut obs = LoadObserver {
                events,
                cancel: &self.cancel,
                target: self.target.as_mut(),
                watch: crate::abort::Watch::of(true, &self.abort_on),
            };
            driver.drive(spec, &cfg, &mut obs)
        };
        let mut end = outcome.end.clone();
        if let EndState::Failed(r) = &end
            && self.target.server_pid().is_some()
            && !r.contains(&self.target.describe())
            && let Some(why) = self.target.exited(Duration::from_secs(1))
        {
            end = EndState::Failed(format!("{r}; {} {why}", self.target.describe()));
        }
        self.measured_window = outcome.measured_window;
        let mut r = outcome::from_outcome(spec, placement.clone(), &outcome, end);
        r.prepare = driver.take_prepare();
        if let Some(signed) = self.signed {
            r.spec.transport.set_signed(signed);
        }
        r
    }

    /// Undoes what the run created, stops the embedded server, and puts
    /// their reports (cleanup, server counters, peak RSS) into `result`.
    /// Safe to call twice.
    pub fn close(&mut self, mut result: Option<&mut RunResult>, events: &mut dyn Events) {
        if let Some(mut d) = self.driver.take()
            && let Some(c) = d.close(&mut driver::NotesTo(events))
            && let Some(r) = result.as_deref_mut()
        {
            r.cleanup = Some(c);
        }
        if let Some(s) = self.target.stop() {
            self.server_trace = s.trace_file;
            self.server_logs = s.logs;
            if let Some(r) = result {
                r.summary.server_peak_rss_bytes = s.peak_rss_bytes;
                if let Some(t) = &mut r.summary.server_threads
                    && !s.cpuset.is_empty()
                {
                    t.outside_cpuset = crate::observed::outside(&s.threads, &s.cpuset);
                    t.cpuset = wirebench_core::topo::CpuList::from_cpus(s.cpuset).ok();
                }
                if let (Some(t), Some(w)) = (&mut r.summary.server_threads, self.measured_window) {
                    let secs = r.summary.measured_ns as f64 / 1e9;
                    crate::observed::add_unseen_groups(&mut t.groups, &s.threads, w, secs);
                }
                r.server = Some(s.report);
            }
        }
        // A shm server that died without removing its control socket
        // (SIGKILL): the survivor removes it.
        if let Endpoint::Unix(path) = self.target.endpoint()
            && let Some(pid) = wirebench_transports::shm::cleanup::remove_if_owner_gone(path)
        {
            events.note(&format!(
                "removed {}, left by the server (pid {pid}) that died",
                path.display()
            ));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close(None, &mut Quiet);
        // A server trace no run took (the run failed before): not left in
        // the temporary directory.
        if let Some(f) = self.server_trace.take() {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Stopped;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use wirebench_core::request::RunRequest;
    use wirebench_core::result::{RunState, ServerReport};
    use wirebench_core::topo::{CpuList, Topology};
    use wirebench_load::engine::LoadOutcome;
    use wirebench_load::mock::MockTransport;
    use wirebench_load::transport::Pattern;

    /// A target that is "listening" until told it died.
    #[derive(Clone, Default)]
    struct FakeTarget {
        dead: Arc<AtomicBool>,
        stopped: Arc<AtomicBool>,
    }

    impl Target for FakeTarget {
        fn endpoint(&self) -> &Endpoint {
            static E: std::sync::OnceLock<Endpoint> = std::sync::OnceLock::new();
            E.get_or_init(|| Endpoint::Tcp("127.0.0.1:1".into()))
        }
        fn server_pid(&self) -> Option<u32> {
            Some(4242)
        }
        fn exited(&mut self, _: Duration) -> Option<String> {
            self.dead
                .load(Ordering::Relaxed)
                .then(|| "killed by signal 9 (SIGKILL)".to_string())
        }
        fn stop(&mut self) -> Option<Stopped> {
            if self.stopped.swap(true, Ordering::Relaxed) {
                return None;
            }
            Some(Stopped {
                report: ServerReport {
                    pid: 4242,
                    endpoint: "tcp://127.0.0.1:1".into(),
                    stats: None,
                    exit: None,
                },
                peak_rss_bytes: Some(1 << 20),
                trace_file: None,
                threads: vec![],
                cpuset: vec![],
                logs: vec![],
            })
        }
    }

    /// The mock transport on the real engine; what `close` undid.
    struct MockDriver {
        transport: Arc<MockTransport>,
        closed: Arc<Mutex<u32>>,
        /// Called at each interval (to kill the target or cancel the run).
        on_interval: Option<Box<dyn FnMut()>>,
    }

    struct Hook<'a>(&'a mut dyn Observer, &'a mut Option<Box<dyn FnMut()>>);
    impl Observer for Hook<'_> {
        fn connected(&mut self, ns: u64) {
            self.0.connected(ns);
        }
        fn interval(&mut self, iv: &IntervalReport) {
            if let Some(f) = self.1.as_mut() {
                f();
            }
            self.0.interval(iv);
        }
        fn poll_abort(&mut self) -> Option<Abort> {
            self.0.poll_abort()
        }
    }

    impl Driver for MockDriver {
        fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
            let mut hook = Hook(obs, &mut self.on_interval);
            wirebench_load::engine::run_load(self.transport.clone(), cfg, &mut hook)
        }
        fn close(
            &mut self,
            _: &mut dyn wirebench_load::driver::Notes,
        ) -> Option<wirebench_core::result::PhaseReport> {
            *self.closed.lock().unwrap() += 1;
            None
        }
    }

    fn spec(json: &str) -> (RunSpec, Placement) {
        let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
        serde_json::from_str::<RunRequest>(json)
            .unwrap()
            .check(&topo)
            .unwrap()
    }

    fn session(
        target: FakeTarget,
        on_interval: Option<Box<dyn FnMut()>>,
        cancel: Cancel,
    ) -> (Session, Arc<Mutex<u32>>) {
        let closed = Arc::new(Mutex::new(0));
        let driver = MockDriver {
            transport: Arc::new(MockTransport::new(
                Pattern::RequestResponse,
                Duration::from_micros(100),
            )),
            closed: closed.clone(),
            on_interval,
        };
        (
            Session::with(Box::new(target), Box::new(driver), cancel),
            closed,
        )
    }

    #[derive(Default)]
    struct Seen {
        connected: bool,
        intervals: usize,
    }
    impl Events for Seen {
        fn connected(&mut self, _: u64) {
            self.connected = true;
        }
        fn interval(&mut self, _: &IntervalReport) {
            self.intervals += 1;
        }
    }

    #[test]
    fn a_load_completes_and_close_reports_the_server() {
        let (spec, placement) = spec(r#"{"count": 300, "warmup": "0s"}"#);
        let target = FakeTarget::default();
        let (mut s, closed) = session(target.clone(), None, Cancel::new());
        let mut seen = Seen::default();
        let mut r = s.measure(&spec, &placement, &mut seen);
        assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
        assert_eq!(r.summary.ops, 300);
        assert!(seen.connected && seen.intervals >= 1);
        s.close(Some(&mut r), &mut Quiet);
        assert_eq!(r.server.as_ref().map(|x| x.pid), Some(4242));
        assert_eq!(r.summary.server_peak_rss_bytes, Some(1 << 20));
        s.close(None, &mut Quiet);
        drop(s);
        assert_eq!(*closed.lock().unwrap(), 1, "the driver is closed once");
        assert!(target.stopped.load(Ordering::Relaxed));
    }

    #[test]
    fn a_target_that_dies_fails_the_run_and_keeps_what_was_measured() {
        let (spec, placement) = spec(r#"{"duration": "60s", "warmup": "0s"}"#);
        let target = FakeTarget::default();
        let dead = target.dead.clone();
        let kill = Box::new(move || dead.store(true, Ordering::Relaxed));
        let (mut s, _) = session(target, Some(kill), Cancel::new());
        let began = std::time::Instant::now();
        let r = s.measure(&spec, &placement, &mut Quiet);
        assert!(began.elapsed() < Duration::from_secs(10));
        assert_eq!(r.status.state, RunState::Failed);
        let why = r.status.reason.unwrap_or_default();
        assert!(
            why.contains("the embedded server (pid 4242) killed by signal 9"),
            "{why}"
        );
        assert!(r.summary.ops > 0, "what was measured is kept");
    }

    #[test]
    fn cancel_interrupts_the_load() {
        let (spec, placement) = spec(r#"{"duration": "60s", "warmup": "0s"}"#);
        let cancel = Cancel::new();
        let c = cancel.clone();
        let stop = Box::new(move || c.cancel("SIGINT received"));
        let (mut s, _) = session(FakeTarget::default(), Some(stop), cancel);
        let r = s.measure(&spec, &placement, &mut Quiet);
        assert_eq!(r.status.state, RunState::Interrupted);
        assert_eq!(r.status.reason.as_deref(), Some("SIGINT received"));
        assert!(s.interrupted());
    }

    #[test]
    fn a_failing_connection_fails_the_load() {
        let (spec, placement) = spec(r#"{"duration": "60s", "warmup": "0s"}"#);
        let closed = Arc::new(Mutex::new(0));
        let driver = MockDriver {
            transport: Arc::new(
                MockTransport::new(Pattern::RequestResponse, Duration::from_micros(100))
                    .failing_after(50),
            ),
            closed,
            on_interval: None,
        };
        let mut s = Session::with(
            Box::new(External("tcp://127.0.0.1:1".parse().unwrap())),
            Box::new(driver),
            Cancel::new(),
        );
        let r = s.measure(&spec, &placement, &mut Quiet);
        assert_eq!(r.status.state, RunState::Failed);
        assert!(r.status.reason.unwrap_or_default().contains("mock failure"));
    }
}
