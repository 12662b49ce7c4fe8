//! What the transports' drivers share: the load over one transport per
//! endpoint, the phases outside the load that Ctrl-C stops at once, and
//! the sum of several endpoints' prepare phases.

use std::sync::Arc;
use wirebench_core::result::PhaseReport;
use wirebench_load::Transport;
use wirebench_load::calls::{self, CallTransport};
use wirebench_load::driver::{Cancel, OpenError};
use wirebench_load::engine::{self, LoadConfig, LoadOutcome, Observer};
use wirebench_load::spread::Spread;

/// The prepare phases of several endpoints, as one (they ran in turn).
pub(crate) fn sum_phases(a: Option<PhaseReport>, b: Option<PhaseReport>) -> Option<PhaseReport> {
    match (a, b) {
        (Some(a), Some(b)) => Some(PhaseReport {
            objects: a.objects + b.objects,
            bytes: a.bytes + b.bytes,
            seconds: a.seconds + b.seconds,
            errors: a.errors + b.errors,
        }),
        (a, b) => a.or(b),
    }
}

/// Runs the load over one transport per endpoint: the engine's
/// connections dealt to them in turn, `group` in a row to the same one
/// (see [`Spread`]).
pub(crate) fn load<T: Transport>(
    mut each: Vec<T>,
    group: usize,
    cfg: &LoadConfig,
    obs: &mut dyn Observer,
) -> LoadOutcome {
    if each.len() == 1 {
        return engine::run_load(Arc::new(each.remove(0)), cfg, obs);
    }
    engine::run_load(Arc::new(Spread::new(each, cfg, group)), cfg, obs)
}

/// As [`load`], for transports of typed operations.
pub(crate) fn load_calls<T: CallTransport>(
    mut each: Vec<T>,
    group: usize,
    cfg: &LoadConfig,
    obs: &mut dyn Observer,
) -> LoadOutcome {
    if each.len() == 1 {
        return calls::run_load_calls(Arc::new(each.remove(0)), cfg, obs);
    }
    calls::run_load_calls(Arc::new(Spread::new(each, cfg, group)), cfg, obs)
}

/// Runs a phase outside the load (preflight, prepare) until it ends or
/// the run is cancelled: Ctrl-C is obeyed at once, whatever the server does.
pub(crate) fn unless_cancelled<T>(
    rt: &tokio::runtime::Runtime,
    cancel: &Cancel,
    f: impl std::future::Future<Output = T>,
) -> Option<T> {
    rt.block_on(async {
        tokio::select! {
            r = f => Some(r),
            _ = cancel.cancelled(false) => None,
        }
    })
}

/// The runtime of a driver's phases outside the load.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, OpenError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
