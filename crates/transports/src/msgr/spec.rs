//! msgr: wirebench's framed messenger over TCP or Unix sockets, against
//! the embedded reactor or pool server or any server that speaks it, and
//! its raw `rr` mode (fixed-size request and response, no framing).

use crate::error::*;
use crate::limits;
use crate::transport::Asked;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec, loopback};
use crate::units::Bytes;
use crate::values::*;
use serde::{Deserialize, Serialize};

/// msgr's own flags: the embedded server's design, the response size,
/// the largest frame. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct MsgrFlags {
    /// Embedded server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared work-stealing pool). Default: reactor.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// Response payload (echo, rr). Default: --size.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub response_size: Option<Bytes>,
    /// Largest frame payload the embedded server accepts. Default: 16MiB.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub max_frame: Option<Bytes>,
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

text_enum!(MsgrMode, "echo" => MsgrMode::Echo, "oneway" => MsgrMode::Oneway, "stream" => MsgrMode::Stream, "rr" => MsgrMode::Rr);

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

/// The header of a msgr frame, in bytes (the transport's `HEADER_LEN`).
pub const MSGR_HEADER_BYTES: u64 = 16;

impl Asked {
    /// The msgr transport's settings.
    pub(crate) fn msgr(&self) -> Result<TransportSpec, SpecError> {
        let mode = self.mode_of(&MsgrMode::ALL, TransportKind::Msgr)?;
        let size = self.fixed_size(64)?;
        if self.flags.msgr.response_size.is_some() && !mode.has_response() {
            return Err(flag(
                "--response-size",
                format!("applies to --mode echo and rr only, not {mode}"),
            ));
        }
        let response = self.flags.msgr.response_size.map_or(size, |b| b.0);
        if response == 0 || response > u64::from(u32::MAX) {
            return Err(range("--response-size", response, "1 byte", "4GiB-1"));
        }
        let max_frame = self
            .flags
            .msgr
            .max_frame
            .map_or(limits::MSGR_DEFAULT_MAX_FRAME, |b| b.0);
        if max_frame == 0 || max_frame > u64::from(u32::MAX) {
            return Err(range("--max-frame", max_frame, "1 byte", "4GiB-1"));
        }
        if self.target.is_none()
            && mode != MsgrMode::Rr
            && (size > max_frame || response > max_frame)
        {
            return Err(value(
                "--size",
                format!("{size} / --response-size {response}"),
                format!("above --max-frame {max_frame}; raise --max-frame or lower the size"),
            ));
        }
        match &self.target {
            None | Some(Endpoint::Tcp(_) | Endpoint::Unix(_)) => {}
            Some(t) => {
                return Err(value(
                    "--target",
                    t,
                    "a msgr target is tcp://HOST:PORT or unix:PATH",
                ));
            }
        }
        Ok(TransportSpec::Msgr(MsgrSpec {
            mode,
            size_bytes: size,
            response_size_bytes: if mode.has_response() { response } else { 0 },
            max_frame_bytes: max_frame,
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[
        Shared::Listen,
        Shared::Mode,
        Shared::Size,
        Shared::Poll,
        Shared::Verify,
    ],
    embedded: Some(loopback),
    arch: true,
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.msgr()
}

impl Describe for MsgrSpec {
    fn mode_name(&self) -> String {
        self.mode.to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    fn response_size_bytes(&self) -> u64 {
        self.response_size_bytes
    }
    fn has_response(&self) -> bool {
        self.mode.has_response()
    }
    fn frame_header_bytes(&self) -> u64 {
        if self.mode == MsgrMode::Rr {
            0
        } else {
            MSGR_HEADER_BYTES
        }
    }
    fn one_way(&self) -> bool {
        self.mode == MsgrMode::Oneway
    }
    fn is_stream(&self) -> bool {
        self.mode == MsgrMode::Stream
    }
    fn untraceable(&self) -> Option<&'static str> {
        (self.mode == MsgrMode::Rr)
            .then_some("--mode rr sends raw bytes: no sequence number to trace an operation by")
    }
}

impl crate::transport::TransportSpec {
    /// The msgr spec of a msgr run.
    pub fn msgr(&self) -> Option<&MsgrSpec> {
        match self {
            crate::transport::TransportSpec::Msgr(s) => Some(s),
            _ => None,
        }
    }
}

impl From<MsgrSpec> for crate::transport::TransportSpec {
    fn from(s: MsgrSpec) -> Self {
        crate::transport::TransportSpec::Msgr(s)
    }
}
