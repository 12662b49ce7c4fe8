//! exec's driver: the user's program, run and parsed (see [`crate::exec`]).

use super::*;

/// The program's runner, with the placeholders' values.
pub(super) fn open(at: &mut Opening<'_>, _: &ExecSpec) -> Result<Box<dyn Driver>, RunError> {
    Ok(Box::new(
        crate::exec::ExecDriver::new(at.opts.values.clone(), at.opts.server_dir.as_deref())
            .map_err(RunError::Failed)?,
    ))
}

impl Driver for crate::exec::ExecDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        crate::exec::ExecDriver::drive(self, spec, cfg, obs)
    }
}
