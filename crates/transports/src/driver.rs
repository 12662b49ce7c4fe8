//! The one `match` on the transport: [`open`] makes the [`Driver`] of a
//! run's transport, its module's `driver::open`, generated from the
//! registry (`wirebench_core::for_each_transport!`). Each driver runs
//! the measured loads on the engine (async workers for msgr and the
//! key-value stores, blocking threads or processes for shm, typed calls
//! for S3 and HTTP) and undoes what its transport created (S3's objects).
//! What they share is in `driving`.

use wirebench_core::spec::TransportSpec;
use wirebench_load::driver::{Driver, OpenError, Opening};

macro_rules! drivers {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        /// The driver of the opening's transport against its endpoints.
        /// S3, HTTP, gRPC and the key-value stores also check each
        /// endpoint (and S3 the credentials and bucket), and prepare what
        /// reads need, cancelled by the opening's `cancel`.
        pub fn open(at: &mut Opening<'_>) -> Result<Box<dyn Driver>, OpenError> {
            match &at.spec.transport {
                $($(TransportSpec::$kind(s) => crate::$module::driver::open(at, s),)+)*
            }
        }
    };
}

wirebench_core::for_each_transport!(drivers);

#[cfg(test)]
mod tests {
    /// The registry lists every transport module of core's folder, and
    /// each has its folder here with its driver: no module, no driver,
    /// goes unlisted.
    #[test]
    fn each_module_of_the_registry_has_its_driver() {
        let mut modules: Vec<String> = wirebench_core::kind::all()
            .iter()
            .map(|k| k.module().to_string())
            .collect();
        modules.sort();
        modules.dedup();
        let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src/transport");
        let mut in_core: Vec<String> = std::fs::read_dir(&core)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "mod.rs")
            .map(|n| n.trim_end_matches(".rs").to_string())
            .collect();
        in_core.sort();
        assert_eq!(in_core, modules);
        for m in &modules {
            let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src")
                .join(m)
                .join("driver.rs");
            assert!(driver.is_file(), "{} is missing", driver.display());
        }
    }
}
