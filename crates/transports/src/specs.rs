//! The transports' specs, one `spec.rs` in each transport's folder,
//! compiled into wirebench-core, not into this crate: core's
//! `transport` module loads this file by path, and the registry's line
//! (`for_each_transport!`) makes each folder's `spec.rs` its module
//! `wirebench_core::transport::<t>`. A spec is what every stage reads
//! (the request, the check, the report), so it lives below them all; its
//! file lives with its transport, so that a transport is one folder.
//!
//! In a spec file `crate` is wirebench-core.

macro_rules! specs {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        $(
            #[doc = concat!(
                "What the transport folder `transports/src/", stringify!($module),
                "/` says of itself (its `spec.rs`): its flags, spec, modes and check."
            )]
            pub mod $module {
                mod spec;
                pub use spec::*;
            }
        )*
    };
}

crate::for_each_transport!(specs);
