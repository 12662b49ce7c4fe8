//! gRPC's driver: HTTP/2 clients per endpoint (see [`crate::http::driver`]).

use crate::driving::{runtime, unless_cancelled};
use crate::grpc;
use crate::http::driver::HttpDriver;
use std::sync::Arc;
use wirebench_core::spec::{Endpoint, GrpcSpec, RunSpec};
use wirebench_load::driver::{Cancel, Driver, Notes, OpenError, Opening};

/// A client per endpoint, each with the method's descriptor.
pub(crate) fn open(at: &mut Opening<'_>, g: &GrpcSpec) -> Result<Box<dyn Driver>, OpenError> {
    let mut all = HttpDriver::grpc(at.spec, g, at.endpoints[0], at.cancel, at.notes)?;
    for e in at.endpoints[1..].iter().copied() {
        let one = HttpDriver::grpc(at.spec, g, e, at.cancel, at.notes)?;
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
        notes: &mut dyn Notes,
    ) -> Result<HttpDriver, OpenError> {
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns);
        let rt = runtime()?;
        let interrupted = || {
            OpenError::Interrupted(format!(
                "checking {endpoint}: {}",
                cancel.reason().unwrap_or("cancelled")
            ))
        };
        let prepared = unless_cancelled(&rt, cancel, grpc::prepare(endpoint, g, timeout))
            .ok_or_else(interrupted)?
            .map_err(|e| OpenError::Failed(format!("{endpoint}: {e}")))?;
        notes.note(&format!(
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
            Err(e) => return Err(OpenError::Failed(format!("checking {endpoint}: {e}"))),
            Ok(Some(cause)) => notes.note(&format!(
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
