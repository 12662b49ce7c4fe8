//! gRPC's driver: HTTP/2 clients per endpoint (see [`super::http`]).

use super::http::HttpDriver;
use super::*;
use wirebench_transports::grpc;

/// A client per endpoint, each with the method's descriptor.
pub(super) fn open(at: &mut Opening<'_>, g: &GrpcSpec) -> Result<Box<dyn Driver>, RunError> {
    let mut all = HttpDriver::grpc(at.spec, g, at.endpoints[0], at.cancel, at.events)?;
    for e in at.endpoints[1..].iter().copied() {
        let one = HttpDriver::grpc(at.spec, g, e, at.cancel, at.events)?;
        all.clients.extend(one.clients);
    }
    Ok(Box::new(all))
}

impl HttpDriver {
    /// Finds the gRPC method's types (descriptor set or reflection),
    /// encodes the request, and checks with one call that the server
    /// implements the method (an error status is noted, not refused).
    fn grpc(
        spec: &RunSpec,
        g: &wirebench_core::spec::GrpcSpec,
        endpoint: &Endpoint,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<HttpDriver, RunError> {
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns);
        let rt = runtime()?;
        let interrupted = || {
            RunError::Interrupted(format!(
                "checking {endpoint}: {}",
                cancel.reason().unwrap_or("cancelled")
            ))
        };
        let prepared = unless_cancelled(&rt, cancel, grpc::prepare(endpoint, g, timeout))
            .ok_or_else(interrupted)?
            .map_err(|e| RunError::Failed(format!("{endpoint}: {e}")))?;
        events.note(&format!(
            "{}: {} method, types from {}",
            g.call,
            if prepared.server_streaming {
                "server-streaming"
            } else {
                "unary"
            },
            prepared.source
        ));
        match unless_cancelled(&rt, cancel, grpc::preflight(&prepared)).ok_or_else(interrupted)? {
            Err(e) => return Err(RunError::Failed(format!("checking {endpoint}: {e}"))),
            Ok(Some(cause)) => events.note(&format!(
                "{} answers {cause}: each such answer counts as a failure",
                g.call
            )),
            Ok(None) => {}
        }
        Ok(HttpDriver {
            clients: vec![Arc::new(prepared.client)],
            streams: spec.depth,
        })
    }
}
