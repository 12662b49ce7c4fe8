//! msgr's driver: the messenger client, one per endpoint.

use crate::driving::load;
use crate::msgr::client::MsgrClient;
use wirebench_core::spec::{Endpoint, MsgrSpec, RunSpec};
use wirebench_load::driver::{Driver, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// The msgr client against every endpoint.
pub(crate) fn open(at: &mut Opening<'_>, _: &MsgrSpec) -> Result<Box<dyn Driver>, OpenError> {
    Ok(Box::new(MsgrDriver(
        at.endpoints.iter().map(|e| (*e).clone()).collect(),
    )))
}

/// msgr: its endpoints.
struct MsgrDriver(Vec<Endpoint>);

impl Driver for MsgrDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let m = spec.msgr().expect("a msgr spec");
        let each = self
            .0
            .iter()
            .map(|e| {
                MsgrClient::new(
                    e.clone(),
                    m.mode,
                    usize::try_from(m.size_bytes).expect("checked: at most 4GiB"),
                    usize::try_from(m.response_size_bytes).expect("checked: at most 4GiB"),
                )
                .verify(spec.verify)
            })
            .collect();
        load(each, 1, cfg, obs)
    }
}
