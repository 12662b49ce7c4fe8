//! The checked run spec: what the CLI flags (or, later, a spec file) become
//! after validation. Everything downstream takes this, never raw flags.

use crate::topo::CpuList;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which family of transport drives the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    Msgr,
    Shm,
}

/// The design of a reference messenger server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// Shared-nothing: one event loop pinned per core, each accepting and
    /// serving its own connections.
    Reactor,
    /// One shared work-stealing pool of threads serving all connections.
    Pool,
}

/// What one operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Framed request, framed response; latency is send to receive.
    Echo,
    /// Framed request, no response ("nores"); the server reads and drops.
    Oneway,
    /// The server sends frames continuously; the client reads and drops.
    Stream,
    /// Raw fixed-size request and response, no framing (netperf TCP_RR).
    Rr,
    /// shm: one request outstanding, send then wait.
    Sync,
    /// shm: a sender and a receiver thread, up to `depth` outstanding.
    Async,
    /// shm: requests only; the server reads and drops them.
    Nores,
}

impl Mode {
    /// Whether each operation has a response whose latency is measured.
    pub fn has_response(self) -> bool {
        matches!(self, Mode::Echo | Mode::Rr | Mode::Sync | Mode::Async)
    }

    /// The modes of a transport.
    pub fn of(t: TransportKind) -> &'static [Mode] {
        match t {
            TransportKind::Msgr => &[Mode::Echo, Mode::Oneway, Mode::Stream, Mode::Rr],
            TransportKind::Shm => &[Mode::Sync, Mode::Async, Mode::Nores, Mode::Stream],
        }
    }
}

/// How a waiting side of a shared-memory ring waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wait {
    /// Spin on the shared index: ~0.1 us hand-off, a core busy.
    Spin,
    /// Sleep in the kernel on a futex: a wake-up costs a context switch.
    Futex,
    /// Spin a little (about two wake-ups' worth), then sleep.
    Adaptive,
}

/// What carries a shm-transport session: shared memory, or (for
/// comparison) the kernel's channels with the same records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Shm,
    Unix,
    Tcp,
    Pipe,
}

/// Whether shm clients are threads of one process (`mt`) or one process
/// per session (`mp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientsAs {
    Threads,
    Processes,
}

/// What a shm-transport run adds to the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShmSpec {
    pub wait: Wait,
    pub channel: Channel,
    pub clients_as: ClientsAs,
    /// Bytes of each ring (request and response), a power of two.
    pub ring_bytes: u64,
}

macro_rules! text_enum {
    ($t:ty, $($name:literal => $v:expr),+) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let s = match self { $(x if *x == $v => $name,)+ _ => unreachable!() };
                f.write_str(s)
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s { $($name => Ok($v),)+ _ => Err(format!("'{s}' is not one of: {}", [$($name),+].join(", "))) }
            }
        }
    };
}
text_enum!(Arch, "reactor" => Arch::Reactor, "pool" => Arch::Pool);
text_enum!(Mode, "echo" => Mode::Echo, "oneway" => Mode::Oneway, "stream" => Mode::Stream, "rr" => Mode::Rr,
    "sync" => Mode::Sync, "async" => Mode::Async, "nores" => Mode::Nores);
text_enum!(TransportKind, "msgr" => TransportKind::Msgr, "shm" => TransportKind::Shm);
text_enum!(Wait, "spin" => Wait::Spin, "futex" => Wait::Futex, "adaptive" => Wait::Adaptive);
text_enum!(Channel, "shm" => Channel::Shm, "unix" => Channel::Unix, "tcp" => Channel::Tcp, "pipe" => Channel::Pipe);
text_enum!(ClientsAs, "threads" => ClientsAs::Threads, "processes" => ClientsAs::Processes);
text_enum!(Arrival, "uniform" => Arrival::Uniform, "poisson" => Arrival::Poisson);

/// How open-loop requests are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    Uniform,
    Poisson,
}

/// A messenger endpoint: `tcp://HOST:PORT` or `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Endpoint {
    /// `host:port`, as written (resolved when connecting).
    Tcp(String),
    Unix(std::path::PathBuf),
}

impl FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("tcp://") {
            let ok = rest
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !ok {
                return Err(format!(
                    "'{s}': a TCP endpoint is tcp://HOST:PORT, e.g. tcp://127.0.0.1:9000"
                ));
            }
            Ok(Endpoint::Tcp(rest.to_string()))
        } else if let Some(rest) = s.strip_prefix("unix:") {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest.is_empty() {
                return Err(format!(
                    "'{s}': a Unix endpoint is unix:PATH, e.g. unix:/tmp/wb.sock"
                ));
            }
            Ok(Endpoint::Unix(rest.into()))
        } else {
            Err(format!(
                "'{s}' is not an endpoint: write tcp://HOST:PORT or unix:PATH"
            ))
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "tcp://{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl From<Endpoint> for String {
    fn from(e: Endpoint) -> String {
        e.to_string()
    }
}

impl TryFrom<String> for Endpoint {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// The server a run measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum TargetSpec {
    /// A reference server that `run` starts itself, as a separate pinned process.
    Embedded {
        /// The msgr server's design (None for shm, which has one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arch: Option<Arch>,
        cpus: CpuList,
        poll: bool,
        listen: Endpoint,
    },
    /// Something already listening.
    External { endpoint: Endpoint },
}

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopSpec {
    DurationNs(u64),
    /// Total operations completed in the measured phase, over all connections.
    Count(u64),
}

/// A checked spec of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub transport: TransportKind,
    pub target: TargetSpec,
    pub mode: Mode,
    /// Request payload (echo, oneway, rr) or stream frame payload (stream).
    pub size_bytes: u64,
    /// Response payload (echo, rr).
    pub response_size_bytes: u64,
    pub clients: usize,
    pub conns_per_client: usize,
    /// Requests outstanding per connection (closed loop); the most
    /// outstanding per connection (open loop).
    pub depth: usize,
    /// Open loop: total requests per second on a fixed timetable. None: closed loop.
    pub rate_per_s: Option<f64>,
    pub arrival: Arrival,
    pub stop: StopSpec,
    pub warmup_ns: u64,
    /// Client busy-polls instead of sleeping in the kernel.
    pub poll: bool,
    /// Fill and check payloads.
    pub verify: bool,
    pub client_cpus: CpuList,
    pub max_frame_bytes: u64,
    /// The shm transport's settings (None for msgr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm: Option<ShmSpec>,
    /// Event tracing: one operation in this many traced (None: no trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sample: Option<u64>,
}

impl RunSpec {
    pub fn connections(&self) -> usize {
        self.clients * self.conns_per_client
    }

    pub fn endpoint_label(&self) -> String {
        match &self.target {
            TargetSpec::Embedded {
                arch: Some(arch), ..
            } => format!("embedded {arch}"),
            TargetSpec::Embedded { arch: None, .. } => format!("embedded {}", self.transport),
            TargetSpec::External { endpoint } => endpoint.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            "tcp://127.0.0.1:9000".parse(),
            Ok(Endpoint::Tcp("127.0.0.1:9000".into()))
        );
        assert_eq!(
            "tcp://[::1]:9000".parse(),
            Ok(Endpoint::Tcp("[::1]:9000".into()))
        );
        assert_eq!("unix:/tmp/x".parse(), Ok(Endpoint::Unix("/tmp/x".into())));
        for bad in [
            "127.0.0.1:9000",
            "tcp://127.0.0.1",
            "tcp://:80",
            "unix:",
            "http://x:1",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad}");
        }
        assert_eq!(Endpoint::Unix("/a".into()).to_string(), "unix:/a");
    }

    #[test]
    fn enums_round_trip_as_text() {
        for t in [TransportKind::Msgr, TransportKind::Shm] {
            for &m in Mode::of(t) {
                assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
            }
        }
        for w in [Wait::Spin, Wait::Futex, Wait::Adaptive] {
            assert_eq!(w.to_string().parse::<Wait>(), Ok(w));
        }
        for c in [Channel::Shm, Channel::Unix, Channel::Tcp, Channel::Pipe] {
            assert_eq!(c.to_string().parse::<Channel>(), Ok(c));
        }
        assert!(
            "mt".parse::<ClientsAs>()
                .unwrap_err()
                .contains("threads, processes")
        );
        assert!(
            "sink"
                .parse::<Mode>()
                .unwrap_err()
                .contains("echo, oneway, stream, rr, sync, async, nores")
        );
    }
}
