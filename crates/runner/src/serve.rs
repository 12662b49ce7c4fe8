//! A reference server on its own (`wirebench serve`), and the messages a
//! run exchanges with the server it embeds: the run writes one
//! [`ServeOrder`] line on the server's stdin; the server writes
//! [`ServerEvent`] lines on its stdout (`listening`, then `stopped` with
//! its counters). Both sides use these types, so the protocol has no
//! untyped JSON.

use crate::process;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use wirebench_core::request::SpecError;
use wirebench_core::result::ServerStats;
use wirebench_core::spec::{Arch, Endpoint, TransportKind};
use wirebench_core::topo::check_cpus;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::units::{Bytes, Dur};
use wirebench_transports::msgr::server::faults::Faults;
use wirebench_transports::msgr::server::{self, ConnConfig, ServerConfig};
use wirebench_transports::sys;

/// `--stall STALL/PERIOD`: stop answering for STALL at the start of every PERIOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub stall: Duration,
    pub period: Duration,
}

impl FromStr for Stall {
    type Err = String;
    fn from_str(s: &str) -> Result<Stall, String> {
        let form = || {
            format!("'{s}' is not STALL/PERIOD: write e.g. 100ms/1s (stop for 100 ms every second)")
        };
        let (a, b) = s.split_once('/').ok_or_else(form)?;
        let (stall, period) = (
            a.parse::<Dur>().map_err(|_| form())?.0,
            b.parse::<Dur>().map_err(|_| form())?.0,
        );
        if stall.is_zero() || stall >= period {
            return Err(format!(
                "'{s}': the stall must be longer than 0 and shorter than the period"
            ));
        }
        Ok(Stall { stall, period })
    }
}

/// `--wake COST/IDLE`: a request that comes after the server had none for
/// IDLE is held COST longer (a server that sleeps when idle, woken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    pub cost: Duration,
    pub idle: Duration,
}

impl FromStr for Wake {
    type Err = String;
    fn from_str(s: &str) -> Result<Wake, String> {
        let form = || {
            format!(
                "'{s}' is not COST/IDLE: write e.g. 2ms/500us (a request after 500 us without one waits 2 ms more)"
            )
        };
        let (a, b) = s.split_once('/').ok_or_else(form)?;
        let (cost, idle) = (
            a.parse::<Dur>().map_err(|_| form())?.0,
            b.parse::<Dur>().map_err(|_| form())?.0,
        );
        if cost.is_zero() || idle.is_zero() {
            return Err(format!(
                "'{s}': the cost and the idle time must be longer than 0"
            ));
        }
        Ok(Wake { cost, idle })
    }
}

impl std::fmt::Display for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Dur(self.cost), Dur(self.idle))
    }
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Dur(self.stall), Dur(self.period))
    }
}

/// One server, as asked: each field is a flag of `wirebench serve`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ServeRequest {
    /// msgr (framed messenger over TCP or a Unix socket), shm (shared-memory sessions, opened
    /// over a Unix socket; each client states its mode, size and wait strategy) or s3 (a fake
    /// S3 server: metadata in memory, data counted and dropped, reads return zeroes). Default: msgr.
    #[arg(long)]
    #[serde(default)]
    pub transport: Option<TransportKind>,
    /// Server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared
    /// work-stealing thread pool). Default: reactor.
    #[arg(long)]
    #[serde(default)]
    pub arch: Option<Arch>,
    /// Where to listen: tcp://HOST:PORT or unix:PATH. Loopback unless told otherwise. Default:
    /// tcp://127.0.0.1:7470 (msgr), unix:$TMPDIR/wirebench-shm-PID.sock (shm), tcp://127.0.0.1:9000 (s3).
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub listen: Option<Endpoint>,
    /// CPUs to run on (e.g. 0-3,8): one reactor per CPU, or that many pool threads. Default: every usable CPU.
    #[arg(long)]
    #[serde(default)]
    pub cpus: Option<CpuList>,
    /// Reactor only: busy-poll instead of sleeping in the kernel (Seastar's poll mode).
    #[arg(long)]
    #[serde(default)]
    pub poll: bool,
    /// Largest frame payload accepted; a larger one closes that connection. Default: 16MiB.
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub max_frame: Option<Bytes>,
    /// Protocol: msgr (framed, the client's handshake picks echo/oneway/stream) or rr (raw
    /// fixed-size request/response, no framing). Default: msgr.
    #[arg(long)]
    #[serde(default)]
    pub mode: Option<String>,
    /// rr only: request size.
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub size: Option<Bytes>,
    /// rr only: response size (default: the request size).
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub response_size: Option<Bytes>,
    /// Fault injection (echo): hold every response this long (e.g. 1ms; 0: not at all).
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub delay: Option<Dur>,
    /// Fault injection (echo): stop answering for STALL at the start of every PERIOD, e.g. 100ms/1s.
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub stall: Option<Stall>,
    /// Fault injection (echo): a request that comes after the server had none for IDLE waits
    /// COST more, e.g. 2ms/500us: latency worse at low rates (a server that sleeps when idle).
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub wake: Option<Wake>,
    /// Fault injection (echo): each request holds one of --workers workers this long (a queueing
    /// server with a capacity of workers / service requests per second).
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub service: Option<Dur>,
    /// With --service: how many requests are served at once. Default: 1.
    #[arg(long, requires = "service")]
    #[serde(default)]
    pub workers: Option<usize>,
    /// Record an event timeline of the requests (begin, request parsed, reply queued, reply
    /// sent) and stream it to FILE while the server runs; read it with `wirebench timeline`.
    /// msgr, shm and s3; docs/measurement.md lists each one's events.
    #[arg(long)]
    #[serde(default)]
    pub trace: Option<PathBuf>,
    /// With --trace: trace one request in N (by sequence number). Default: 1.
    #[arg(long, requires = "trace")]
    #[serde(default)]
    pub trace_sample: Option<u64>,
    /// s3: buckets that exist from the start (repeatable). Default: wirebench.
    #[arg(long)]
    #[serde(default)]
    pub bucket: Vec<String>,
    /// s3: answer virtual-host-style requests to BUCKET.DOMAIN (path style always works).
    #[arg(long)]
    #[serde(default)]
    pub domain: Option<String>,
    /// s3: serve HTTPS (s3s://) with this certificate chain (PEM), and --tls-key.
    #[arg(long, requires = "tls_key")]
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// s3: the private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// s3: the most objects held (metadata only), which bounds the server's memory. Default: 10000000.
    #[arg(long)]
    #[serde(default)]
    pub max_objects: Option<usize>,
    /// msgr and s3: connections served at once; more are closed as they come (counted). Default: 10000.
    #[arg(long)]
    #[serde(default)]
    pub max_conns: Option<usize>,
    /// msgr and s3: close a connection when nothing moves for this long, or a frame (s3: request
    /// headers, within 10s) is left unfinished. 0s: never. Default: 60s.
    #[arg(long)]
    #[serde(default, with = "wirebench_core::units::text")]
    pub idle_timeout: Option<Dur>,
}

/// What a run hands the server it embeds, on the server's stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeOrder {
    pub request: ServeRequest,
    /// The fake S3 server's credentials (never on a command line).
    #[serde(default)]
    pub credentials: Option<crate::Credentials>,
}

/// What a server tells the run that started it, one JSON line each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum ServerEvent {
    /// Accepting on `endpoint` (the port chosen, when 0 was asked).
    Listening {
        #[serde(with = "endpoint_text")]
        endpoint: Endpoint,
        pid: u32,
        cpus: CpuList,
    },
    /// Stopped by `signal`, with its counters.
    Stopped { signal: String, stats: ServerStats },
}

mod endpoint_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use wirebench_core::spec::Endpoint;
    pub fn serialize<S: Serializer>(e: &Endpoint, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(e)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Endpoint, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Why a server could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Failed(String),
}

fn flag(name: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Flag {
        flag: name,
        why: why.into(),
    }
}

fn value(name: &'static str, v: impl ToString, fix: impl Into<String>) -> SpecError {
    SpecError::Value {
        flag: name,
        value: v.to_string(),
        fix: fix.into(),
    }
}

/// A checked server: what [`serve`] starts.
enum Checked {
    Msgr(ServerConfig),
    Shm(wirebench_transports::shm::server::ShmServerConfig),
    S3(wirebench_transports::s3::fake::FakeConfig),
}

impl ServeRequest {
    /// Refuses the flags of the msgr servers (for shm and s3).
    fn refuse_msgr_flags(&self) -> Result<(), SpecError> {
        let msgr_only = [
            ("--arch", self.arch.is_some()),
            ("--poll", self.poll),
            ("--mode", self.mode.is_some()),
            ("--size", self.size.is_some()),
            ("--response-size", self.response_size.is_some()),
            ("--delay", self.delay.is_some()),
            ("--stall", self.stall.is_some()),
            ("--wake", self.wake.is_some()),
            ("--service", self.service.is_some()),
            ("--max-frame", self.max_frame.is_some()),
        ];
        match msgr_only.iter().find(|(_, set)| *set) {
            Some((f, _)) => Err(SpecError::OtherTransport {
                flag: f,
                transport: TransportKind::Msgr,
            }),
            None => Ok(()),
        }
    }

    fn check(
        &self,
        cpus: &CpuList,
        creds: Option<crate::Credentials>,
    ) -> Result<Checked, SpecError> {
        let kind = self.transport.unwrap_or_default();
        // The fake S3 server's own flags.
        let s3 = TransportKind::S3;
        if kind != s3 {
            let s3_only = [
                ("--bucket", !self.bucket.is_empty()),
                ("--domain", self.domain.is_some()),
                ("--tls-cert", self.tls_cert.is_some()),
                ("--max-objects", self.max_objects.is_some()),
            ];
            if let Some((f, _)) = s3_only.iter().find(|(_, set)| *set) {
                return Err(SpecError::OtherTransport {
                    flag: f,
                    transport: s3,
                });
            }
            if creds.is_some() {
                return Err(SpecError::OtherTransport {
                    flag: "--access-key",
                    transport: s3,
                });
            }
        }
        if self.trace_sample == Some(0) {
            return Err(value(
                "--trace-sample",
                0,
                "trace one request in N, N at least 1",
            ));
        }
        if self.trace_sample.is_some() && self.trace.is_none() {
            return Err(flag("--trace-sample", "needs --trace"));
        }
        match kind {
            TransportKind::Msgr => self.check_msgr(cpus),
            TransportKind::Shm => {
                self.refuse_msgr_flags()?;
                for (f, set) in [
                    ("--max-conns", self.max_conns.is_some()),
                    ("--idle-timeout", self.idle_timeout.is_some()),
                ] {
                    if set {
                        return Err(SpecError::Invalid {
                            flag: f,
                            why: "applies to the msgr and s3 servers: a shm session lives as long as its client".into(),
                        });
                    }
                }
                let socket = match &self.listen {
                    None => wirebench_transports::shm::default_socket_path(std::process::id()),
                    Some(Endpoint::Unix(p)) => p.clone(),
                    Some(l) => {
                        return Err(value(
                            "--listen",
                            l,
                            "a shm server listens on a Unix socket: --listen unix:PATH",
                        ));
                    }
                };
                Ok(Checked::Shm(
                    wirebench_transports::shm::server::ShmServerConfig {
                        socket,
                        cpus: cpus.cpus().to_vec(),
                    },
                ))
            }
            TransportKind::S3 => self.check_s3(cpus, creds),
            k if k.about().own_program => Err(SpecError::Invalid {
                flag: "--transport",
                why: format!(
                    "{k} runs your own programs: run --transport {k} --client-cmd '…' [--server-cmd '…']"
                ),
            }),
            k => Err(SpecError::Invalid {
                flag: "--transport",
                why: format!(
                    "wirebench has no {k} server: run the real one and measure it with run --target"
                ),
            }),
        }
    }

    fn check_msgr(&self, cpus: &CpuList) -> Result<Checked, SpecError> {
        let arch = self.arch.unwrap_or(Arch::Reactor);
        let listen = match &self.listen {
            None => Endpoint::Tcp("127.0.0.1:7470".into()),
            Some(l @ Endpoint::S3 { .. }) => {
                return Err(value(
                    "--listen",
                    l,
                    "a msgr server listens on tcp://HOST:PORT or unix:PATH",
                ));
            }
            Some(l) => l.clone(),
        };
        if self.poll && arch == Arch::Pool {
            return Err(SpecError::Invalid {
                flag: "--poll",
                why: "the pool server has no poll mode; use --arch reactor, or drop --poll".into(),
            });
        }
        let max_frame = self
            .max_frame
            .map_or(wirebench_core::limits::MSGR_DEFAULT_MAX_FRAME, |b| b.0);
        if max_frame == 0 || max_frame > u64::from(u32::MAX) {
            return Err(SpecError::Range {
                flag: "--max-frame",
                value: max_frame.to_string(),
                min: "1 byte".into(),
                max: "4GiB-1".into(),
            });
        }
        let raw = match self.mode.as_deref() {
            Some("rr") => {
                let Some(req) = self.size else {
                    return Err(flag(
                        "--size",
                        "is needed by --mode rr (and optionally --response-size): the raw protocol has fixed sizes",
                    ));
                };
                let resp = self.response_size.unwrap_or(req);
                if req.0 == 0
                    || resp.0 == 0
                    || req.0 > u64::from(u32::MAX)
                    || resp.0 > u64::from(u32::MAX)
                {
                    return Err(flag(
                        "--size",
                        "and --response-size must be between 1 byte and 4GiB-1 in rr mode",
                    ));
                }
                let bytes = |b: Bytes| usize::try_from(b.0).expect("checked: below 4GiB");
                Some((bytes(req), bytes(resp)))
            }
            None | Some("msgr") => {
                if self.size.is_some() || self.response_size.is_some() {
                    return Err(flag(
                        "--size",
                        "and --response-size apply to --mode rr only: msgr clients state sizes in their handshake",
                    ));
                }
                None
            }
            Some(m) => return Err(value("--mode", m, "one of msgr, rr")),
        };
        if self.workers.is_some() && self.service.is_none() {
            return Err(flag("--workers", "goes with --service"));
        }
        if self.workers == Some(0) {
            return Err(value("--workers", 0, "must be at least 1"));
        }
        if self.service.is_some_and(|d| d.0.is_zero()) {
            return Err(flag("--service", "must be longer than 0s"));
        }
        // `--delay 0` is no delay: a nightly loop that steps the delay
        // (0, 0, 50us...) starts from the server as it is.
        let delay = self.delay.filter(|d| !d.0.is_zero());
        let longest = wirebench_core::limits::MAX_PHASE;
        for (f, d) in [
            ("--delay", self.delay.map(|d| d.0)),
            ("--service", self.service.map(|d| d.0)),
            ("--stall", self.stall.map(|s| s.period)),
            ("--wake", self.wake.map(|w| w.cost.max(w.idle))),
        ] {
            if let Some(d) = d.filter(|d| *d > longest) {
                return Err(SpecError::Range {
                    flag: f,
                    value: Dur(d).to_string(),
                    min: "1ns".into(),
                    max: Dur(longest).to_string(),
                });
            }
        }
        let faulty = delay.is_some()
            || self.stall.is_some()
            || self.service.is_some()
            || self.wake.is_some();
        if faulty && raw.is_some() {
            return Err(flag(
                "--delay",
                "--delay, --stall, --wake and --service apply to msgr echo, not to --mode rr",
            ));
        }
        let faults = faulty.then(|| {
            Arc::new(
                Faults::new(
                    delay.map_or(Duration::ZERO, |d| d.0),
                    self.stall.map(|s| (s.stall, s.period)),
                    self.service.map(|s| (s.0, self.workers.unwrap_or(1))),
                )
                .with_wake(self.wake.map(|w| (w.cost, w.idle))),
            )
        });
        let (max_conns, idle_timeout) = self.connection_limits()?;
        Ok(Checked::Msgr(ServerConfig {
            arch,
            listen,
            cpus: cpus.cpus().to_vec(),
            poll: self.poll,
            conn: ConnConfig {
                raw,
                faults,
                max_conns,
                idle_timeout,
                ..ConnConfig::new(max_frame)
            },
        }))
    }

    fn check_s3(
        &self,
        cpus: &CpuList,
        creds: Option<crate::Credentials>,
    ) -> Result<Checked, SpecError> {
        use wirebench_transports::s3::fake;
        self.refuse_msgr_flags()?;
        let listen = match &self.listen {
            None => "127.0.0.1:9000".to_string(),
            Some(Endpoint::Tcp(addr)) => addr.clone(),
            Some(l) => {
                return Err(value(
                    "--listen",
                    l,
                    "the fake S3 server listens on tcp://HOST:PORT",
                ));
            }
        };
        let buckets = if self.bucket.is_empty() {
            vec![wirebench_core::limits::DEFAULT_BUCKET.to_string()]
        } else {
            self.bucket.clone()
        };
        if let Some(b) = buckets
            .iter()
            .find(|b| !wirebench_core::spec::valid_bucket(b))
        {
            return Err(value(
                "--bucket",
                b,
                "a bucket name is 3-63 of a-z, 0-9, '.' and '-'",
            ));
        }
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => match wirebench_transports::s3::tls::server_config(c, k) {
                Ok(t) => Some(t),
                Err(e) => {
                    return Err(SpecError::Invalid {
                        flag: "--tls-cert",
                        why: format!("(and --tls-key) {e}"),
                    });
                }
            },
            (None, None) => None,
            _ => return Err(flag("--tls-cert", "and --tls-key go together")),
        };
        let max_objects = self.max_objects.unwrap_or(10_000_000);
        if max_objects == 0 {
            return Err(value("--max-objects", 0, "must be at least 1"));
        }
        let (max_conns, idle_timeout) = self.connection_limits()?;
        Ok(Checked::S3(fake::FakeConfig {
            buckets,
            creds: creds.map(|c| (c.access_key, c.secret_key)),
            domain: self.domain.clone(),
            threads: cpus.len(),
            max_objects,
            tls,
            max_conns,
            idle_timeout,
            ..fake::FakeConfig::new(&listen, "")
        }))
    }

    /// `--max-conns` and `--idle-timeout`, checked, with their defaults.
    fn connection_limits(&self) -> Result<(usize, Option<Duration>), SpecError> {
        use wirebench_core::limits as l;
        let max_conns = self.max_conns.unwrap_or(l::SERVER_DEFAULT_MAX_CONNS);
        if max_conns == 0 {
            return Err(value("--max-conns", 0, "must be at least 1"));
        }
        let idle = self
            .idle_timeout
            .map_or(Duration::from_secs(l::SERVER_DEFAULT_IDLE_TIMEOUT_S), |d| {
                d.0
            });
        if idle > wirebench_core::limits::MAX_PHASE {
            return Err(SpecError::Range {
                flag: "--idle-timeout",
                value: Dur(idle).to_string(),
                min: "0s (never)".into(),
                max: Dur(wirebench_core::limits::MAX_PHASE).to_string(),
            });
        }
        if !idle.is_zero() && idle < Duration::from_millis(100) {
            return Err(value(
                "--idle-timeout",
                Dur(idle),
                "at least 100ms, or 0s for never",
            ));
        }
        Ok((max_conns, (!idle.is_zero()).then_some(idle)))
    }
}

/// Serves until SIGINT or SIGTERM: checks the request, pins the process to
/// its CPUs, starts the server, writes `listening` on `out` (and gives
/// `note` a line for people), then `stopped` with the counters.
/// `exit_with_parent`: stop (as on SIGTERM) when that process dies.
pub fn serve(
    req: &ServeRequest,
    creds: Option<crate::Credentials>,
    topo: &Topology,
    exit_with_parent: Option<u32>,
    out: &mut impl Write,
    note: &mut dyn FnMut(&str),
) -> Result<(), ServeError> {
    let cpus = req.cpus.clone().unwrap_or_else(|| topo.usable());
    check_cpus("--cpus", &cpus, topo)?;
    let checked = req.check(&cpus, creds)?;
    // Block SIGINT/SIGTERM before any thread starts, so all threads inherit
    // the mask and this thread alone receives them, with sigwait.
    process::block_termination_signals()?;
    if let Some(parent) = exit_with_parent {
        process::terminate_with_parent(parent)?;
    }
    sys::pin_process_threads(cpus.cpus())?;
    let pid = std::process::id();
    // Events stream to the trace file from before the server's threads
    // start until they stopped.
    let drain =
        match &req.trace {
            Some(f) => {
                wirebench_trace::set_sample(req.trace_sample.unwrap_or(1));
                wirebench_trace::enable();
                Some(wirebench_trace::Drain::start(f, "server").map_err(|e| {
                    ServeError::Failed(format!("writing --trace {}: {e}", f.display()))
                })?)
            }
            None => None,
        };
    let (endpoint, note_text, shutdown): (Endpoint, String, Box<dyn FnOnce() -> ServerStats>) =
        match checked {
            Checked::Msgr(cfg) => {
                let srv = server::start(&cfg)?;
                let note = format!(
                    "{} {} on {}, CPUs {cpus}{}",
                    cfg.arch,
                    if cfg.conn.raw.is_some() { "rr" } else { "msgr" },
                    srv.endpoint,
                    if cfg.poll { ", busy-polling" } else { "" }
                );
                let ep = srv.endpoint.clone();
                (ep, note, Box::new(move || srv.shutdown()))
            }
            Checked::Shm(cfg) => {
                let srv = wirebench_transports::shm::server::start(&cfg)?;
                let ep = Endpoint::Unix(cfg.socket.clone());
                let note =
                    format!("shm sessions on {ep}, CPUs {cpus} (a pinned thread per session)");
                (ep, note, Box::new(move || srv.shutdown()))
            }
            Checked::S3(cfg) => {
                let signed = cfg.creds.is_some();
                let tls = cfg.tls.is_some();
                let buckets = cfg.buckets.clone();
                let srv = wirebench_transports::s3::fake::start(&cfg)?;
                let ep = Endpoint::S3 {
                    tls,
                    addr: srv.addr.to_string(),
                    bucket: buckets[0].clone(),
                };
                let note = format!(
                    "fake S3 on {ep} (buckets {}), CPUs {cpus}, {}",
                    buckets.join(", "),
                    if signed {
                        "SigV4 signatures checked"
                    } else {
                        "anonymous requests served"
                    }
                );
                (ep, note, Box::new(move || srv.shutdown()))
            }
        };
    if let Some(w) = exposure_warning(&endpoint, &note_text) {
        note(&w);
    }
    emit(
        out,
        &ServerEvent::Listening {
            endpoint,
            pid,
            cpus: cpus.clone(),
        },
    )?;
    note(&format!("wirebench serve: {note_text}; Ctrl-C to stop"));
    let signal = process::wait_for_termination()?;
    let stats = shutdown();
    // The run may be gone already: the counters then have no reader.
    if let Some(d) = drain {
        d.finish()
            .map_err(|e| ServeError::Failed(format!("writing the trace: {e}")))?;
    }
    let _ = emit(
        out,
        &ServerEvent::Stopped {
            signal: signal.to_string(),
            stats,
        },
    );
    Ok(())
}

/// A warning when a server listens beyond loopback, naming the address,
/// and for the fake S3 server whether anyone who reaches it is served.
fn exposure_warning(endpoint: &Endpoint, note: &str) -> Option<String> {
    let addr = match endpoint {
        Endpoint::Tcp(a)
        | Endpoint::S3 { addr: a, .. }
        | Endpoint::Redis { addr: a, .. }
        | Endpoint::Memcached { addr: a }
        | Endpoint::Http { addr: a, .. }
        | Endpoint::Grpc { addr: a, .. } => a,
        Endpoint::Unix(_) => return None,
    };
    let ip = addr.parse::<std::net::SocketAddr>().ok()?.ip();
    if ip.is_loopback() {
        return None;
    }
    let who = match endpoint {
        Endpoint::S3 { .. } if note.contains("anonymous") => {
            ": the fake S3 server is anonymous, so anyone who reaches it can write and read; give --access-key (its secret from AWS_SECRET_ACCESS_KEY) to require signed requests"
        }
        Endpoint::S3 { .. } => ": the fake S3 server requires signed requests",
        _ => ", with no authentication",
    };
    Some(format!(
        "warning: listening on {addr}, which other hosts can reach (not loopback){who}"
    ))
}

fn emit(out: &mut impl Write, e: &ServerEvent) -> std::io::Result<()> {
    let line = serde_json::to_string(e).map_err(std::io::Error::other)?;
    writeln!(out, "{line}")?;
    out.flush()
}

#[cfg(test)]
mod tests;
