//! http's driver (also gRPC's): clients per endpoint on HTTP/1.1 or HTTP/2.

use crate::driving::{load_calls, runtime, unless_cancelled};
use crate::http;
use std::sync::Arc;
use wirebench_core::spec::{Endpoint, HttpSpec, RunSpec};
use wirebench_load::driver::{Cancel, Driver, Notes, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// A client per endpoint.
pub(crate) fn open(at: &mut Opening<'_>, h: &HttpSpec) -> Result<Box<dyn Driver>, OpenError> {
    let mut all = HttpDriver::open(at.spec, h, at.endpoints[0], at.cancel, at.notes)?;
    for e in at.endpoints[1..].iter().copied() {
        let one = HttpDriver::open(at.spec, h, e, at.cancel, at.notes)?;
        all.clients.extend(one.clients);
    }
    Ok(Box::new(all))
}

/// An HTTP run's clients (one per endpoint), checked against the servers
/// before any load.
pub(crate) struct HttpDriver {
    pub(crate) clients: Vec<Arc<http::HttpClient>>,
    pub(crate) streams: usize,
}

impl HttpDriver {
    /// Checks that the endpoint takes a connection and answers a request
    /// in the HTTP version asked (an error status is noted, not refused:
    /// the run counts it as failures).
    fn open(
        spec: &RunSpec,
        h: &wirebench_core::spec::HttpSpec,
        endpoint: &Endpoint,
        cancel: &Cancel,
        notes: &mut dyn Notes,
    ) -> Result<HttpDriver, OpenError> {
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns);
        let client =
            Arc::new(http::HttpClient::new(endpoint, h, timeout).map_err(OpenError::Failed)?);
        let rt = runtime()?;
        match unless_cancelled(&rt, cancel, http::preflight(&client)) {
            None => {
                return Err(OpenError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(Err(e)) => return Err(OpenError::Failed(format!("checking {endpoint}: {e}"))),
            Some(Ok(status)) if status.as_u16() >= 400 => notes.note(&format!(
                "{} {endpoint} answers {status}: each such answer counts as a failure",
                h.method.to_string().to_uppercase()
            )),
            Some(Ok(_)) => {}
        }
        let streams = match h.version {
            wirebench_core::spec::HttpVersion::H2 => spec.depth,
            wirebench_core::spec::HttpVersion::H1 => 1,
        };
        Ok(HttpDriver {
            clients: vec![client],
            streams,
        })
    }
}

impl Driver for HttpDriver {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        // Each HTTP/2 stream is a connection of the engine's, `streams` of
        // them sharing one connection to the server.
        let mut cfg = cfg.clone();
        cfg.conns_per_client *= self.streams;
        let each = self
            .clients
            .iter()
            .map(|c| {
                http::HttpTransport::new(c.clone(), self.streams, cfg.clients, cfg.conns_per_client)
            })
            .collect();
        load_calls(each, self.streams, &cfg, obs)
    }
}
