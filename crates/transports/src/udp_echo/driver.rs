//! udp-echo's driver: the client against every endpoint.

use super::UdpEchoClient;
use crate::driving::load;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_core::transport::udp_echo::UdpEchoSpec;
use wirebench_load::driver::{Driver, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// The client of each endpoint (each a `udp://HOST:PORT`).
pub(crate) fn open(at: &mut Opening<'_>, s: &UdpEchoSpec) -> Result<Box<dyn Driver>, OpenError> {
    let size = usize::try_from(s.size_bytes).expect("checked: one datagram");
    let mut addrs = vec![];
    for e in &at.endpoints {
        match e {
            Endpoint::Addr { scheme, addr } if scheme == "udp" => addrs.push(addr.clone()),
            other => return Err(OpenError::Failed(format!("{other}: not a udp:// endpoint"))),
        }
    }
    Ok(Box::new(UdpEchoDriver { addrs, size }))
}

struct UdpEchoDriver {
    addrs: Vec<String>,
    size: usize,
}

impl Driver for UdpEchoDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let each = self
            .addrs
            .iter()
            .map(|a| UdpEchoClient::new(a, self.size, spec.verify))
            .collect();
        load(each, 1, cfg, obs)
    }
}
