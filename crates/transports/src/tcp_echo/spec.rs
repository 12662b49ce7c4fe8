//! tcp-echo: any TCP echo server (one that sends back each byte it reads),
//! at `--target tcp://HOST:PORT`. A raw transport: no handshake, no
//! framing; each request of `--size` bytes is timed until its bytes are
//! back (`--depth` of them outstanding per connection).

use crate::error::{SpecError, flag, value};
use crate::transport::Asked;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::values::{Endpoint, TargetSpec};
use serde::{Deserialize, Serialize};

/// tcp-echo's own flags: none. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct TcpEchoFlags {}

/// A tcp-echo run's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpEchoSpec {
    /// Bytes of each request, and so of each answer.
    pub size_bytes: u64,
}

pub const ABOUT: About = About {
    shared: &[Shared::Size, Shared::Poll, Shared::Verify],
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    for (f, set) in [
        ("--mode", req.mode.is_some()),
        ("--response-size", req.flags.msgr.response_size.is_some()),
        ("--arch", req.flags.msgr.arch.is_some()),
        ("--max-frame", req.flags.msgr.max_frame.is_some()),
        ("--listen", req.listen.is_some()),
    ] {
        if set {
            return Err(flag(
                f,
                "does not apply to --transport tcp-echo: an echo server sends back what it reads",
            ));
        }
    }
    match &req.target {
        Some(Endpoint::Tcp(_)) => {}
        None => {
            return Err(flag(
                "--target",
                "--transport tcp-echo has no embedded server: give the echo server's address, e.g. --target tcp://127.0.0.1:7",
            ));
        }
        Some(t) => {
            return Err(value("--target", t, "a tcp-echo target is tcp://HOST:PORT"));
        }
    }
    Ok(TransportSpec::TcpEcho(TcpEchoSpec {
        size_bytes: req.fixed_size(64)?,
    }))
}

impl Describe for TcpEchoSpec {
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
        Some("tcp-echo sends raw bytes: no sequence number to trace an operation by")
    }
    fn label(&self, _: &TargetSpec) -> String {
        format!("tcp-echo-{}", self.size_bytes)
    }
}
