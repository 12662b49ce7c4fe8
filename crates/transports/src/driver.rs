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
    /// The registry lists every transport folder, and each has its spec
    /// (compiled into core) and its driver: no folder, no spec, no driver,
    /// goes unlisted.
    #[test]
    fn each_module_of_the_registry_has_its_folder_spec_and_driver() {
        let mut modules: Vec<String> = wirebench_core::kind::all()
            .iter()
            .map(|k| k.module().to_string())
            .collect();
        modules.sort();
        modules.dedup();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut folders: Vec<String> = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("spec.rs").exists())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        folders.sort();
        assert_eq!(folders, modules);
        for m in &modules {
            for file in ["mod.rs", "spec.rs", "driver.rs"] {
                let f = src.join(m).join(file);
                assert!(f.is_file(), "{} is missing", f.display());
            }
        }
        // Nothing is left in core's folder but the registry.
        let core = src.join("../../core/src/transport");
        let left: Vec<_> = std::fs::read_dir(&core)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left,
            ["mod.rs"],
            "core/src/transport/ holds only the registry"
        );
    }
}
