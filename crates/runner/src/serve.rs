//! A reference server on its own (`wirebench serve`), and the messages a
//! run exchanges with the server it embeds: the run writes one
//! [`ServeOrder`] line on the server's stdin; the server writes
//! [`ServerEvent`] lines on its stdout (`listening`, then `stopped` with
//! its counters). Both sides use these types, so the protocol has no
//! untyped JSON.

use crate::process;
use serde::{Deserialize, Serialize};
use std::io::Write;
use wirebench_core::request::SpecError;
use wirebench_core::result::ServerStats;
use wirebench_core::spec::Endpoint;
use wirebench_core::topo::check_cpus;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_transports::server::{self, Checked, Started};
use wirebench_transports::sys;

pub use wirebench_core::serve::{ServeRequest, Stall, Wake};

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

/// The request checked into the server to start: every other server's
/// own flags refused (naming that server), the credentials only for a
/// transport that signs, the trace, then the transport's own check.
fn check(
    req: &ServeRequest,
    cpus: &CpuList,
    creds: Option<crate::Credentials>,
) -> Result<Box<dyn Checked>, SpecError> {
    let kind = req.transport.unwrap_or_default();
    for &other in wirebench_core::kind::all() {
        if other != kind
            && let Some(s) = server::of(other)
            && let Some(f) = (s.own_flag_set)(req)
        {
            return Err(SpecError::OtherTransport {
                flag: f,
                transport: other,
            });
        }
    }
    if creds.is_some() && !kind.about().signs {
        let signer = wirebench_core::kind::all()
            .iter()
            .copied()
            .find(|k| k.about().signs && server::of(*k).is_some());
        return Err(match signer {
            Some(transport) => SpecError::OtherTransport {
                flag: "--access-key",
                transport,
            },
            None => flag("--access-key", "applies to no server"),
        });
    }
    if req.trace_sample == Some(0) {
        return Err(SpecError::Value {
            flag: "--trace-sample",
            value: "0".into(),
            fix: "trace one request in N, N at least 1".into(),
        });
    }
    if req.trace_sample.is_some() && req.trace.is_none() {
        return Err(flag("--trace-sample", "needs --trace"));
    }
    match server::of(kind) {
        Some(s) => (s.check)(req, cpus, creds),
        None if kind.about().own_program => Err(SpecError::Invalid {
            flag: "--transport",
            why: format!(
                "{kind} runs your own programs: run --transport {kind} --client-cmd '…' [--server-cmd '…']"
            ),
        }),
        None => Err(SpecError::Invalid {
            flag: "--transport",
            why: format!(
                "wirebench has no {kind} server: run the real one and measure it with run --target"
            ),
        }),
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
    let checked = check(req, &cpus, creds)?;
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
    let Started {
        endpoint,
        note: note_text,
        shutdown,
    } = checked.start(&cpus)?;
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
        | Endpoint::Http { addr: a, .. }
        | Endpoint::Grpc { addr: a, .. }
        | Endpoint::Addr { addr: a, .. } => a,
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
