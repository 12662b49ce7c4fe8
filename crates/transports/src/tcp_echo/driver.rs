//! tcp-echo's driver: the messenger client in its raw request/response
//! mode, whose answer is the request's own bytes.

use crate::driving::load;
use crate::msgr::client::MsgrClient;
use wirebench_core::spec::Endpoint;
use wirebench_core::spec::MsgrMode;
use wirebench_core::spec::RunSpec;
use wirebench_core::transport::tcp_echo::TcpEchoSpec;
use wirebench_load::driver::{Driver, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// The raw client against every endpoint.
pub(crate) fn open(at: &mut Opening<'_>, s: &TcpEchoSpec) -> Result<Box<dyn Driver>, OpenError> {
    let size = usize::try_from(s.size_bytes).expect("checked: at most 4GiB");
    let endpoints = at.endpoints.iter().map(|e| (*e).clone()).collect();
    Ok(Box::new(TcpEchoDriver { endpoints, size }))
}

struct TcpEchoDriver {
    endpoints: Vec<Endpoint>,
    size: usize,
}

impl Driver for TcpEchoDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let each = self
            .endpoints
            .iter()
            .map(|e| {
                MsgrClient::new(e.clone(), MsgrMode::Rr, self.size, self.size).verify(spec.verify)
            })
            .collect();
        load(each, 1, cfg, obs)
    }
}
