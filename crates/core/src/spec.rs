//! The checked run spec: what the CLI flags (or, later, a spec file) become
//! after validation. Everything downstream takes this, never raw flags.

use crate::topo::CpuList;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which family of transport drives the load (`--transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    Msgr,
    Shm,
    /// S3 over HTTP/1.1, against any endpoint or the embedded fake server.
    S3,
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

/// What one msgr operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MsgrMode {
    /// Framed request, framed response; latency is send to receive.
    Echo,
    /// Framed request, no response ("nores"); the server reads and drops.
    Oneway,
    /// The server sends frames continuously; the client reads and drops.
    Stream,
    /// Raw fixed-size request and response, no framing (netperf TCP_RR).
    Rr,
}

/// What one shm operation is (the IPC report's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShmMode {
    /// One request outstanding, send then wait.
    Sync,
    /// A sender and a receiver thread, up to `depth` outstanding.
    Async,
    /// Requests only; the server reads and drops them.
    Nores,
    /// The data channel: the server writes, the client reads every byte.
    Stream,
}

/// One S3 operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum S3Op {
    Get,
    Put,
    Head,
    Delete,
    List,
}

/// An S3 workload (`--workload`): one operation type, or a weighted mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum S3Workload {
    Get,
    Put,
    Head,
    Delete,
    List,
    Mixed,
}

impl S3Workload {
    /// The one operation of the workload (None: mixed).
    pub fn op(self) -> Option<S3Op> {
        match self {
            S3Workload::Get => Some(S3Op::Get),
            S3Workload::Put => Some(S3Op::Put),
            S3Workload::Head => Some(S3Op::Head),
            S3Workload::Delete => Some(S3Op::Delete),
            S3Workload::List => Some(S3Op::List),
            S3Workload::Mixed => None,
        }
    }
}

impl MsgrMode {
    pub const ALL: [MsgrMode; 4] = [
        MsgrMode::Echo,
        MsgrMode::Oneway,
        MsgrMode::Stream,
        MsgrMode::Rr,
    ];
    /// Whether each operation has a response whose latency is measured.
    pub fn has_response(self) -> bool {
        matches!(self, MsgrMode::Echo | MsgrMode::Rr)
    }
}

impl ShmMode {
    pub const ALL: [ShmMode; 4] = [
        ShmMode::Sync,
        ShmMode::Async,
        ShmMode::Nores,
        ShmMode::Stream,
    ];
    /// Whether each operation has a response whose latency is measured.
    pub fn has_response(self) -> bool {
        matches!(self, ShmMode::Sync | ShmMode::Async)
    }
}

impl S3Workload {
    pub const ALL: [S3Workload; 6] = [
        S3Workload::Get,
        S3Workload::Put,
        S3Workload::Head,
        S3Workload::Delete,
        S3Workload::List,
        S3Workload::Mixed,
    ];
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
text_enum!(MsgrMode, "echo" => MsgrMode::Echo, "oneway" => MsgrMode::Oneway, "stream" => MsgrMode::Stream, "rr" => MsgrMode::Rr);
text_enum!(ShmMode, "sync" => ShmMode::Sync, "async" => ShmMode::Async, "nores" => ShmMode::Nores, "stream" => ShmMode::Stream);
text_enum!(S3Op, "get" => S3Op::Get, "put" => S3Op::Put, "head" => S3Op::Head, "delete" => S3Op::Delete, "list" => S3Op::List);
text_enum!(S3Workload, "get" => S3Workload::Get, "put" => S3Workload::Put, "head" => S3Workload::Head,
    "delete" => S3Workload::Delete, "list" => S3Workload::List, "mixed" => S3Workload::Mixed);
text_enum!(TransportKind, "msgr" => TransportKind::Msgr, "shm" => TransportKind::Shm, "s3" => TransportKind::S3);
text_enum!(UrlStyle, "path" => UrlStyle::Path, "virtual" => UrlStyle::Virtual);
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
    /// `s3://HOST:PORT/BUCKET` (`s3s://` with TLS).
    S3 {
        tls: bool,
        /// `host:port`, as written.
        addr: String,
        bucket: String,
    },
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
        } else if let Some((tls, rest)) = s
            .strip_prefix("s3://")
            .map(|r| (false, r))
            .or_else(|| s.strip_prefix("s3s://").map(|r| (true, r)))
        {
            let bad = || {
                format!(
                    "'{s}': an S3 endpoint is s3://HOST:PORT/BUCKET (s3s:// for TLS), e.g. s3://127.0.0.1:9000/bench"
                )
            };
            let (addr, bucket) = rest.split_once('/').ok_or_else(bad)?;
            let bucket = bucket.trim_end_matches('/');
            let addr_ok = addr
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !addr_ok || !valid_bucket(bucket) {
                return Err(bad());
            }
            Ok(Endpoint::S3 {
                tls,
                addr: addr.to_string(),
                bucket: bucket.to_string(),
            })
        } else {
            Err(format!(
                "'{s}' is not an endpoint: write tcp://HOST:PORT, unix:PATH or s3://HOST:PORT/BUCKET"
            ))
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "tcp://{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::S3 { tls, addr, bucket } => {
                write!(f, "{}://{addr}/{bucket}", if *tls { "s3s" } else { "s3" })
            }
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

/// Whether `b` is a valid S3 bucket name (3-63 of a-z, 0-9, '.', '-';
/// starting and ending with a letter or digit).
pub fn valid_bucket(b: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&b.len())
        && b.chars().all(ok_char)
        && edge(b.chars().next())
        && edge(b.chars().last())
}

/// How S3 requests name the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlStyle {
    /// `http://host/bucket/key`.
    Path,
    /// `http://bucket.host/key` (the connection still goes to the endpoint's address).
    Virtual,
}

/// Object sizes: one, a list (objects take them in turn), or a range
/// (log-uniform, so small and large sizes are equally represented by
/// order of magnitude). An object's size follows from its number alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeSpec {
    Fixed(u64),
    List(Vec<u64>),
    Range { min: u64, max: u64 },
}

impl SizeSpec {
    /// Parses `4KiB`, `4KiB,1MiB`, or `1KiB..1MiB`.
    pub fn parse(text: &str) -> Result<SizeSpec, String> {
        let one = |t: &str| crate::units::parse_size(t.trim()).map_err(|e| e.to_string());
        if let Some((a, b)) = text.split_once("..") {
            let (min, max) = (one(a)?, one(b)?);
            if min == 0 || min >= max {
                return Err(format!(
                    "'{text}': a size range is MIN..MAX with 0 < MIN < MAX"
                ));
            }
            Ok(SizeSpec::Range { min, max })
        } else if text.contains(',') {
            let v = text.split(',').map(one).collect::<Result<Vec<_>, _>>()?;
            Ok(SizeSpec::List(v))
        } else {
            Ok(SizeSpec::Fixed(one(text)?))
        }
    }

    /// The size of object number `i`.
    pub fn size_of(&self, i: u64) -> u64 {
        match self {
            SizeSpec::Fixed(n) => *n,
            SizeSpec::List(v) => {
                v[usize::try_from(i % v.len() as u64).expect("less than the length")]
            }
            SizeSpec::Range { min, max } => {
                let u = (crate::spec::mix64(i) >> 11) as f64 / (1u64 << 53) as f64;
                let (lo, hi) = ((*min as f64).ln(), (*max as f64).ln());
                crate::units::whole((lo + u * (hi - lo)).exp().round()).clamp(*min, *max)
            }
        }
    }

    /// The largest size.
    pub fn max(&self) -> u64 {
        match self {
            SizeSpec::Fixed(n) => *n,
            SizeSpec::List(v) => v.iter().copied().max().unwrap_or(0),
            SizeSpec::Range { max, .. } => *max,
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::units::format_size as fs;
        match self {
            SizeSpec::Fixed(n) => write!(f, "{}", fs(*n)),
            SizeSpec::List(v) => {
                let v: Vec<String> = v.iter().map(|n| fs(*n)).collect();
                write!(f, "{}", v.join(","))
            }
            SizeSpec::Range { min, max } => write!(f, "{}..{}", fs(*min), fs(*max)),
        }
    }
}

impl FromStr for SizeSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<SizeSpec, String> {
        SizeSpec::parse(s)
    }
}

/// The weights of a mixed S3 workload: `get=70,put=20,delete=10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<(S3Op, u32)>);

impl Mix {
    /// 70% GET, 20% PUT, 10% DELETE.
    pub fn default_mix() -> Mix {
        Mix(vec![(S3Op::Get, 70), (S3Op::Put, 20), (S3Op::Delete, 10)])
    }
}

impl FromStr for Mix {
    type Err = String;
    /// Parses `get=70,put=20,delete=10`; zero weights are dropped.
    fn from_str(s: &str) -> Result<Mix, String> {
        let mut v = Vec::new();
        for part in s.split(',') {
            let (op, w) = part.split_once('=').ok_or_else(|| {
                format!("'{part}': write OP=WEIGHT, e.g. get=70,put=20,delete=10")
            })?;
            let op: S3Op = op.trim().parse().map_err(|_| {
                format!(
                    "'{}': the operations are get, put, head, delete, list",
                    op.trim()
                )
            })?;
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| format!("'{w}': a weight is a whole number"))?;
            if v.iter().any(|(o, _)| *o == op) {
                return Err(format!("'{op}' appears twice"));
            }
            if w > 0 {
                v.push((op, w));
            }
        }
        if v.is_empty() {
            return Err(format!("'{s}': every weight is 0"));
        }
        Ok(Mix(v))
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(o, w)| format!("{o}={w}")).collect();
        f.write_str(&parts.join(","))
    }
}

/// splitmix64's finalizer: a well-mixed 64-bit hash of `x`.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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

/// The msgr transport's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgrSpec {
    pub mode: MsgrMode,
    /// Request payload (echo, oneway, rr) or stream frame payload (stream).
    pub size_bytes: u64,
    /// Response payload (echo, rr; 0 otherwise).
    pub response_size_bytes: u64,
    /// Largest frame payload the embedded server accepts.
    pub max_frame_bytes: u64,
}

/// The shm transport's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShmSpec {
    pub mode: ShmMode,
    /// Message payload (a response has the request's size).
    pub size_bytes: u64,
    pub wait: Wait,
    pub channel: Channel,
    pub clients_as: ClientsAs,
    /// Bytes of each ring (request and response), a power of two.
    pub ring_bytes: u64,
}

/// The S3 transport's settings. Credentials are never part of a spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct S3Spec {
    pub workload: S3Workload,
    /// Weights of the operations of `--workload mixed` (empty otherwise).
    pub mix: Vec<(S3Op, u32)>,
    /// Objects the workload works on (created by the prepare phase for reads).
    pub objects: u64,
    pub sizes: SizeSpec,
    /// Keys are `<prefix><number>`.
    pub prefix: String,
    pub style: UrlStyle,
    pub region: String,
    /// Objects larger than this are uploaded in parts of `part_size`.
    pub multipart_threshold: u64,
    pub part_size: u64,
    /// Parts uploaded at once (extra connections per connection).
    pub put_parts: usize,
    /// GETs: ranged reads of `part_size` at once (1: one streamed GET).
    pub get_parts: usize,
    /// Keep the objects the run created.
    pub keep: bool,
    /// Requests are signed (credentials were given).
    pub signed: bool,
}

/// What drives the load: one variant per transport, each with its own
/// modes and settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum TransportSpec {
    Msgr(MsgrSpec),
    Shm(ShmSpec),
    S3(S3Spec),
}

impl TransportSpec {
    pub fn kind(&self) -> TransportKind {
        match self {
            TransportSpec::Msgr(_) => TransportKind::Msgr,
            TransportSpec::Shm(_) => TransportKind::Shm,
            TransportSpec::S3(_) => TransportKind::S3,
        }
    }

    /// The mode (msgr, shm) or workload (s3), as written on the command line.
    pub fn mode_name(&self) -> String {
        match self {
            TransportSpec::Msgr(m) => m.mode.to_string(),
            TransportSpec::Shm(s) => s.mode.to_string(),
            TransportSpec::S3(s) => s.workload.to_string(),
        }
    }

    /// Whether each operation has a response whose latency is measured
    /// (S3's operations are timed to their response too, but carry their
    /// own per-type figures).
    pub fn has_response(&self) -> bool {
        match self {
            TransportSpec::Msgr(m) => m.mode.has_response(),
            TransportSpec::Shm(s) => s.mode.has_response(),
            TransportSpec::S3(_) => false,
        }
    }

    /// Request (or stream frame) payload; for S3 the largest object size.
    pub fn size_bytes(&self) -> u64 {
        match self {
            TransportSpec::Msgr(m) => m.size_bytes,
            TransportSpec::Shm(s) => s.size_bytes,
            TransportSpec::S3(s) => s.sizes.max(),
        }
    }

    /// Response payload: 0 where an operation has none (or, for S3, no fixed one).
    pub fn response_size_bytes(&self) -> u64 {
        match self {
            TransportSpec::Msgr(m) => m.response_size_bytes,
            TransportSpec::Shm(s) if s.mode.has_response() => s.size_bytes,
            _ => 0,
        }
    }
}

/// A checked spec of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub transport: TransportSpec,
    pub target: TargetSpec,
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
    /// A connection waiting this long for an operation fails the run (0: no limit).
    #[serde(default = "default_op_timeout_ns")]
    pub op_timeout_ns: u64,
    /// The hiccup meter's threshold: a measured second with a stall longer
    /// than this is flagged. None: the meter is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup_threshold_ns: Option<u64>,
    /// Client busy-polls instead of sleeping in the kernel.
    pub poll: bool,
    /// Fill and check payloads.
    pub verify: bool,
    pub client_cpus: CpuList,
    /// Event tracing: one operation in this many traced (None: no trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sample: Option<u64>,
}

fn default_op_timeout_ns() -> u64 {
    10_000_000_000
}

impl RunSpec {
    pub fn connections(&self) -> usize {
        self.clients * self.conns_per_client
    }

    pub fn kind(&self) -> TransportKind {
        self.transport.kind()
    }

    pub fn msgr(&self) -> Option<&MsgrSpec> {
        match &self.transport {
            TransportSpec::Msgr(m) => Some(m),
            _ => None,
        }
    }

    pub fn shm(&self) -> Option<&ShmSpec> {
        match &self.transport {
            TransportSpec::Shm(s) => Some(s),
            _ => None,
        }
    }

    pub fn s3(&self) -> Option<&S3Spec> {
        match &self.transport {
            TransportSpec::S3(s) => Some(s),
            _ => None,
        }
    }

    pub fn endpoint_label(&self) -> String {
        match &self.target {
            TargetSpec::Embedded {
                arch: Some(arch), ..
            } => format!("embedded {arch}"),
            TargetSpec::Embedded { arch: None, .. } => format!("embedded {}", self.kind()),
            TargetSpec::External { endpoint } => endpoint.to_string(),
        }
    }

    /// What names a run's results: `echo-reactor`, `shm-sync-adaptive`,
    /// `s3-get-external`.
    pub fn label(&self) -> String {
        let external = matches!(self.target, TargetSpec::External { .. });
        match (&self.transport, &self.target) {
            (TransportSpec::S3(s3), _) => {
                format!(
                    "s3-{}{}",
                    s3.workload,
                    if external { "-external" } else { "" }
                )
            }
            (TransportSpec::Shm(shm), TargetSpec::Embedded { .. }) => match shm.channel {
                Channel::Shm => format!("shm-{}-{}", shm.mode, shm.wait),
                c => format!("shm-{}-{c}", shm.mode),
            },
            (t, TargetSpec::Embedded { arch, .. }) => format!(
                "{}-{}",
                t.mode_name(),
                arch.map_or(String::new(), |a| a.to_string())
            ),
            (t, TargetSpec::External { .. }) => format!("{}-external", t.mode_name()),
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
        for m in MsgrMode::ALL {
            assert_eq!(m.to_string().parse::<MsgrMode>(), Ok(m));
        }
        for m in ShmMode::ALL {
            assert_eq!(m.to_string().parse::<ShmMode>(), Ok(m));
        }
        for m in S3Workload::ALL {
            assert_eq!(m.to_string().parse::<S3Workload>(), Ok(m));
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
                .parse::<ShmMode>()
                .unwrap_err()
                .contains("sync, async, nores, stream")
        );
    }
}
