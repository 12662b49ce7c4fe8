//! udp-echo: any UDP echo server (one that sends each datagram back to
//! its sender), at `--target udp://HOST:PORT`, or the embedded one. Each
//! request is one datagram of `--size` bytes, timed until it is back
//! (`--depth` of them outstanding per connection, answered in order).

use crate::error::{SpecError, flag, range, value};
use crate::transport::{About, Asked, Describe, Shared, TransportKind, TransportSpec};
use crate::values::{Endpoint, TargetSpec};
use serde::{Deserialize, Serialize};

/// udp-echo's own flags: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct UdpEchoFlags {}

/// A udp-echo run's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpEchoSpec {
    /// Bytes of each datagram, and so of each answer.
    pub size_bytes: u64,
}

/// The largest payload of one UDP datagram over IPv4.
pub const MAX_DATAGRAM: u64 = 65_507;

/// Where the embedded server listens: a free loopback port.
fn loopback_udp() -> Endpoint {
    Endpoint::Addr {
        scheme: "udp".into(),
        addr: "127.0.0.1:0".into(),
    }
}

pub const ABOUT: About = About {
    schemes: &["udp"],
    embedded: Some(loopback_udp),
    shared: &[Shared::Listen, Shared::Size, Shared::Verify],
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    if req.mode.is_some() {
        return Err(flag(
            "--mode",
            "does not apply to --transport udp-echo: an echo server sends back each datagram",
        ));
    }
    for (f, e) in [("--target", &req.target), ("--listen", &req.listen)] {
        if let Some(e) = e
            && e.scheme() != "udp"
        {
            return Err(value(f, e, "a udp-echo endpoint is udp://HOST:PORT"));
        }
    }
    let size_bytes = req.fixed_size(64)?;
    if size_bytes > MAX_DATAGRAM {
        return Err(range(
            "--size",
            size_bytes,
            "1 byte",
            "65507 bytes (one datagram)",
        ));
    }
    Ok(TransportSpec::UdpEcho(UdpEchoSpec { size_bytes }))
}

impl Describe for UdpEchoSpec {
    fn mode_name(&self) -> String {
        "echo".into()
    }
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    fn response_size_bytes(&self) -> u64 {
        self.size_bytes
    }
    fn has_response(&self) -> bool {
        true
    }
    fn untraceable(&self) -> Option<&'static str> {
        Some("udp-echo sends raw datagrams: no sequence number to trace an operation by")
    }
    fn label(&self, _: &TargetSpec) -> String {
        format!("udp-echo-{}", self.size_bytes)
    }
}
