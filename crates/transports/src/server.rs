//! The embedded servers (`wirebench serve`, and the server a run starts):
//! each transport folder says in its `SERVER` whether it has one, and how
//! its flags are checked, how it starts and what a run's spec asks of it.
//! [`of`], generated from the registry, finds it; below it, what the
//! servers' checks share.

use std::time::Duration;
use wirebench_core::error::SpecError;
use wirebench_core::result::ServerStats;
use wirebench_core::serve::ServeRequest;
use wirebench_core::spec::{Endpoint, RunSpec, TransportKind};
use wirebench_core::topo::CpuList;
use wirebench_core::units::Dur;
use wirebench_load::driver::Credentials;

/// A server's check: the request, its CPUs and the credentials it
/// checks requests with, into a server to start.
pub type CheckFn =
    fn(&ServeRequest, &CpuList, Option<Credentials>) -> Result<Box<dyn Checked>, SpecError>;

/// A transport's embedded server.
pub struct Server {
    /// The first flag of `serve` that only this server takes, if `req`
    /// sets one (the others refuse it, naming this transport).
    pub own_flag_set: fn(&ServeRequest) -> Option<&'static str>,
    /// The request checked into a server to start on `cpus`.
    pub check: CheckFn,
    /// What a run of `spec` asks of the server it embeds, beyond the
    /// transport, CPUs, place and trace every server gets.
    pub order: fn(&RunSpec, &mut ServeRequest),
}

/// A server checked, ready to start.
pub trait Checked {
    /// Starts it on `cpus` (the process is pinned to them already).
    fn start(self: Box<Self>, cpus: &CpuList) -> std::io::Result<Started>;
}

/// A server started: where it listens, a line for people, and how it
/// stops (giving its counters).
pub struct Started {
    pub endpoint: Endpoint,
    pub note: String,
    pub shutdown: Box<dyn FnOnce() -> ServerStats>,
}

macro_rules! servers {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        /// The transport's embedded server (None: it has none).
        pub fn of(kind: TransportKind) -> Option<&'static Server> {
            match kind {
                $($(TransportKind::$kind => crate::$module::SERVER.as_ref(),)+)*
            }
        }
    };
}

wirebench_core::for_each_transport!(servers);

pub(crate) fn flag(name: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Flag {
        flag: name,
        why: why.into(),
    }
}

pub(crate) fn value(name: &'static str, v: impl ToString, fix: impl Into<String>) -> SpecError {
    SpecError::Value {
        flag: name,
        value: v.to_string(),
        fix: fix.into(),
    }
}

/// `--max-conns` and `--idle-timeout`, checked, with their defaults (the
/// servers that hold connections: msgr's and the fake S3's).
pub(crate) fn connection_limits(
    req: &ServeRequest,
) -> Result<(usize, Option<Duration>), SpecError> {
    use wirebench_core::limits as l;
    let max_conns = req.max_conns.unwrap_or(l::SERVER_DEFAULT_MAX_CONNS);
    if max_conns == 0 {
        return Err(value("--max-conns", 0, "must be at least 1"));
    }
    let idle = req
        .idle_timeout
        .map_or(Duration::from_secs(l::SERVER_DEFAULT_IDLE_TIMEOUT_S), |d| {
            d.0
        });
    if idle > l::MAX_PHASE {
        return Err(SpecError::Range {
            flag: "--idle-timeout",
            value: Dur(idle).to_string(),
            min: "0s (never)".into(),
            max: Dur(l::MAX_PHASE).to_string(),
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
