//! shm: shared-memory rings between client and server sessions (the IPC
//! report's transport), or for comparison the kernel's channels (`--channel`).

use crate::error::*;
use crate::limits;
use crate::transport::Asked;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::units::Bytes;
use crate::values::*;
use serde::{Deserialize, Serialize};

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

text_enum!(Wait, "spin" => Wait::Spin, "futex" => Wait::Futex, "adaptive" => Wait::Adaptive);

text_enum!(Channel, "shm" => Channel::Shm, "unix" => Channel::Unix, "tcp" => Channel::Tcp, "pipe" => Channel::Pipe);

text_enum!(ClientsAs, "threads" => ClientsAs::Threads, "processes" => ClientsAs::Processes);

/// shm's own flags: how a side waits, what the clients are, the channel,
/// the rings. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct ShmFlags {
    /// shm: how a side waits for its peer: spin (fastest, a core busy), futex (sleep in the
    /// kernel), adaptive (spin ~50 us, then sleep). Default: adaptive.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
    /// shm: clients as threads of this process (the IPC report's mt) or one process per
    /// session (mp). Default: threads.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_as: Option<ClientsAs>,
    /// shm: what carries the sessions: shm (shared memory), or for comparison pipe, unix
    /// (socket pair) or tcp (loopback), with the same records and server. Default: shm.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// shm: bytes of each ring (requests, responses), a power of two. Default: 1MiB, or room
    /// for four messages.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub ring_size: Option<Bytes>,
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

text_enum!(ShmMode, "sync" => ShmMode::Sync, "async" => ShmMode::Async, "nores" => ShmMode::Nores, "stream" => ShmMode::Stream);

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

impl Asked {
    /// The shm transport's settings.
    pub(crate) fn shm(&self) -> Result<TransportSpec, SpecError> {
        let msgr_flags = [
            ("--arch", self.flags.msgr.arch.is_some()),
            ("--poll", self.poll == Some(true)),
            ("--max-frame", self.flags.msgr.max_frame.is_some()),
            ("--response-size", self.flags.msgr.response_size.is_some()),
        ];
        if let Some((f, _)) = msgr_flags.iter().find(|(_, set)| *set) {
            return Err(flag(
                f,
                "applies to --transport msgr only (shm echoes the request's size; --wait spin is its poll mode)",
            ));
        }
        let mode = self.mode_of(&ShmMode::ALL, TransportKind::Shm)?;
        let size = self.fixed_size(64)?;
        if let Some(t @ (Endpoint::Tcp(_) | Endpoint::S3 { .. })) = &self.target {
            return Err(value(
                "--target",
                t,
                "a shm server listens on a Unix socket: --target unix:PATH",
            ));
        }
        if let Some(l @ (Endpoint::Tcp(_) | Endpoint::S3 { .. })) = &self.listen {
            return Err(value(
                "--listen",
                l,
                "a shm server listens on a Unix socket: --listen unix:PATH",
            ));
        }
        if mode == ShmMode::Sync && self.depth.is_some_and(|d| d != 1) {
            return Err(invalid(
                "--depth",
                "--mode sync has one request outstanding: use --mode async for --depth above 1",
            ));
        }
        if mode == ShmMode::Sync && self.rate.is_some() {
            return Err(invalid(
                "--rate",
                "--mode sync sends when the response is back; use --mode async (or nores) for an open loop",
            ));
        }
        let channel = self.flags.shm.channel.unwrap_or(Channel::Shm);
        let ring = match self.flags.shm.ring_size {
            Some(r) => r.0,
            None => limits::shm_default_ring(size).map_err(|e| value("--size", size, e))?,
        };
        if channel == Channel::Shm {
            limits::shm_check_ring(ring, size)
                .map_err(|e| invalid("--ring-size", format!("{e} (--size {size})")))?;
        } else if self.flags.shm.ring_size.is_some() {
            return Err(flag("--ring-size", "applies to --channel shm only"));
        } else if size > limits::SHM_MAX_FD_MESSAGE {
            return Err(value(
                "--size",
                size,
                format!(
                    "above {} bytes, the largest message over --channel {channel}",
                    limits::SHM_MAX_FD_MESSAGE
                ),
            ));
        }
        if channel != Channel::Shm && self.flags.shm.wait.is_some() {
            return Err(flag(
                "--wait",
                format!("applies to --channel shm only: the kernel does the waiting on {channel}"),
            ));
        }
        Ok(TransportSpec::Shm(ShmSpec {
            mode,
            size_bytes: size,
            wait: self.flags.shm.wait.unwrap_or(Wait::Adaptive),
            channel,
            clients_as: self.flags.shm.clients_as.unwrap_or(ClientsAs::Threads),
            ring_bytes: ring,
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[Shared::Listen, Shared::Mode, Shared::Size, Shared::Verify],
    schemes: &[],
    embedded: Some(|| {
        Endpoint::Unix(
            limits::shm_default_socket_path(0).with_file_name("wirebench-shm-<server-pid>.sock"),
        )
    }),
    arch: false,
    no_agents: Some("shared memory is reached from its own host only: drop --agents"),
    one_endpoint: Some("a shared-memory run reaches one server: give one endpoint"),
    signs: false,
    own_program: false,
    no_conn_stages: Some(
        "a shared-memory run's clients all send from the start: stages of conns= are for the socket transports",
    ),
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.shm()
}

impl Describe for ShmSpec {
    fn cpu_tells_load(&self) -> bool {
        !(self.channel == Channel::Shm && self.wait != Wait::Futex)
    }
    /// A thread per connection; two (a sender and a receiver) in async
    /// mode or an open loop.
    fn client_threads(&self, _clients: usize, connections: usize, open: bool) -> usize {
        let two = self.mode == ShmMode::Async || open;
        connections * if two { 2 } else { 1 }
    }

    fn mode_name(&self) -> String {
        self.mode.to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    fn response_size_bytes(&self) -> u64 {
        if self.mode.has_response() {
            self.size_bytes
        } else {
            0
        }
    }
    fn has_response(&self) -> bool {
        self.mode.has_response()
    }
    fn one_way(&self) -> bool {
        self.mode == ShmMode::Nores
    }
    fn is_stream(&self) -> bool {
        self.mode == ShmMode::Stream
    }
    fn default_depth(&self, open: bool) -> usize {
        match self.mode {
            ShmMode::Async => 64,
            _ if open => 1024,
            _ => 1,
        }
    }
    fn untraceable(&self) -> Option<&'static str> {
        (self.clients_as == ClientsAs::Processes).then_some(
            "clients as processes record into their own processes: trace with --clients-as threads",
        )
    }
    fn headline(&self) -> Option<String> {
        Some(format!(
            "shm over {}, {} wait, clients as {}, rings of {},",
            self.channel,
            self.wait,
            self.clients_as,
            crate::units::format_size(self.ring_bytes)
        ))
    }
    /// The IPC report's words for the clients: mt (threads), mp
    /// (processes); the report's `wait`.
    fn variable(&self, key: &str) -> Option<String> {
        match key {
            "clients_as" => Some(match self.clients_as {
                ClientsAs::Threads => "mt".to_string(),
                ClientsAs::Processes => "mp".to_string(),
            }),
            "wait" => Some(self.wait.to_string()),
            _ => None,
        }
    }
    fn spins(&self) -> bool {
        self.wait == Wait::Spin && self.channel == Channel::Shm
    }
    fn label(&self, target: &TargetSpec) -> String {
        match (target, self.channel) {
            (TargetSpec::Embedded { .. }, Channel::Shm) => {
                format!("shm-{}-{}", self.mode, self.wait)
            }
            (TargetSpec::Embedded { .. }, c) => format!("shm-{}-{c}", self.mode),
            _ => format!("{}-external", self.mode),
        }
    }
}

impl crate::transport::TransportSpec {
    /// The shm spec of a shm run.
    pub fn shm(&self) -> Option<&ShmSpec> {
        match self {
            crate::transport::TransportSpec::Shm(s) => Some(s),
            _ => None,
        }
    }
}

impl From<ShmSpec> for crate::transport::TransportSpec {
    fn from(s: ShmSpec) -> Self {
        crate::transport::TransportSpec::Shm(s)
    }
}
