//! redis's and memcached's driver: a client per endpoint, each with the
//! keys its prepare phase wrote.

use crate::driving::{load, runtime, sum_phases, unless_cancelled};
use crate::kv;
use std::sync::Arc;
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{Endpoint, KvSpec, RunSpec};
use wirebench_load::driver::{Cancel, Driver, Notes, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// A client per endpoint, each checked and prepared.
pub(crate) fn open(at: &mut Opening<'_>, kv: &KvSpec) -> Result<Box<dyn Driver>, OpenError> {
    let mut all = KvDriver {
        clients: vec![],
        prepare: None,
    };
    for e in at.endpoints.clone() {
        let one = KvDriver::open(at.spec, kv, e, at.env_secrets, at.cancel, at.notes)?;
        all.clients.extend(one.clients);
        all.prepare = sum_phases(all.prepare, one.prepare);
    }
    Ok(Box::new(all))
}

/// A key-value run (redis, memcached): a client per endpoint, and the
/// prepare phase.
struct KvDriver {
    clients: Vec<Arc<kv::KvClient>>,
    prepare: Option<PhaseReport>,
}

impl KvDriver {
    /// Checks that the endpoint answers in the protocol (and takes the
    /// password of $REDISCLI_AUTH), then writes the keys reads need.
    fn open(
        spec: &RunSpec,
        kvspec: &wirebench_core::spec::KvSpec,
        endpoint: &Endpoint,
        env_secrets: bool,
        cancel: &Cancel,
        notes: &mut dyn Notes,
    ) -> Result<KvDriver, OpenError> {
        let password = std::env::var("REDISCLI_AUTH")
            .ok()
            .filter(|p| !p.is_empty());
        // An agent's password goes only to a target its operator listed.
        let withheld =
            !env_secrets && password.is_some() && matches!(endpoint, Endpoint::Redis { .. });
        let auth = match endpoint {
            Endpoint::Redis { user, .. } if env_secrets => password.map(|password| kv::Auth {
                user: user.clone(),
                password,
            }),
            _ => None,
        };
        let said = |e: String| match withheld {
            true => OpenError::Failed(format!(
                "{e} (this agent's $REDISCLI_AUTH was not sent: it goes only to the targets its operator listed with --allow-target)"
            )),
            false => OpenError::Failed(e),
        };
        let client = kv::KvClient::new(
            endpoint,
            kvspec.clone(),
            auth,
            spec.verify,
            spec.clients as u64,
            spec.conns_per_client as u64,
        )
        .map_err(OpenError::Failed)?;
        let client = Arc::new(client);
        let rt = runtime()?;
        let timeout = std::time::Duration::from_nanos(spec.op_timeout_ns).clamp(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(30),
        );
        match unless_cancelled(&rt, cancel, kv::preflight(&client, timeout)) {
            None => {
                return Err(OpenError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(r) => r.map_err(|e| said(format!("checking {endpoint}: {e}")))?,
        }
        let mut prepare = None;
        if kv::needs_prepare(kvspec) {
            notes.note(&format!(
                "prepare: writing {} keys {}0..{} of {} in {endpoint} ...",
                kvspec.keys,
                kvspec.prefix,
                kvspec.keys - 1,
                kvspec.sizes
            ));
            match unless_cancelled(&rt, cancel, kv::prepare(&client, timeout)) {
                None => {
                    return Err(OpenError::Interrupted(format!(
                        "interrupted during prepare ({})",
                        cancel.reason().unwrap_or("cancelled")
                    )));
                }
                Some(Ok(p)) => {
                    notes.note(&format!(
                        "prepare: {} keys, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    ));
                    prepare = Some(p);
                }
                Some(Err(e)) => return Err(said(e)),
            }
        }
        Ok(KvDriver {
            clients: vec![client],
            prepare,
        })
    }
}

impl Driver for KvDriver {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let each = self
            .clients
            .iter()
            .map(|c| kv::KvTransport(c.clone()))
            .collect();
        load(each, 1, cfg, obs)
    }

    fn take_prepare(&mut self) -> Option<PhaseReport> {
        self.prepare.take()
    }
}
