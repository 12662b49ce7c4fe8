//! exec's driver: the user's own program, run once per load by the
//! runner, which starts and watches processes (see `Programs`).

use wirebench_core::spec::ExecSpec;
use wirebench_load::driver::{Driver, OpenError, Opening};

/// The runner's driver of the program.
pub(crate) fn open(at: &mut Opening<'_>, _: &ExecSpec) -> Result<Box<dyn Driver>, OpenError> {
    at.programs.open(at.spec)
}
