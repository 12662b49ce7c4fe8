//! The flags of `wirebench serve`, one server as asked: [`ServeRequest`]
//! (also what a run hands the server it embeds), and the values of its
//! fault injection. Each embedded server's check and start are its
//! transport's (`wirebench_transports::<t>::serve`).

use crate::spec::{Arch, Endpoint, TransportKind};
use crate::topo::CpuList;
use crate::units::{Bytes, Dur};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

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
    #[serde(default, with = "crate::units::text")]
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
    #[serde(default, with = "crate::units::text")]
    pub max_frame: Option<Bytes>,
    /// Protocol: msgr (framed, the client's handshake picks echo/oneway/stream) or rr (raw
    /// fixed-size request/response, no framing). Default: msgr.
    #[arg(long)]
    #[serde(default)]
    pub mode: Option<String>,
    /// rr only: request size.
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
    pub size: Option<Bytes>,
    /// rr only: response size (default: the request size).
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
    pub response_size: Option<Bytes>,
    /// Fault injection (echo): hold every response this long (e.g. 1ms; 0: not at all).
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
    pub delay: Option<Dur>,
    /// Fault injection (echo): stop answering for STALL at the start of every PERIOD, e.g. 100ms/1s.
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
    pub stall: Option<Stall>,
    /// Fault injection (echo): a request that comes after the server had none for IDLE waits
    /// COST more, e.g. 2ms/500us: latency worse at low rates (a server that sleeps when idle).
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
    pub wake: Option<Wake>,
    /// Fault injection (echo): each request holds one of --workers workers this long (a queueing
    /// server with a capacity of workers / service requests per second).
    #[arg(long)]
    #[serde(default, with = "crate::units::text")]
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
    #[serde(default, with = "crate::units::text")]
    pub idle_timeout: Option<Dur>,
}
