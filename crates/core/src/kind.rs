//! Which transport a run uses: [`TransportKind`], made from the registry
//! ([`crate::for_each_transport!`]) with the transports' names. What each
//! transport is and says lives in [`crate::transport`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! kinds {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        /// Which transport drives the load (`--transport`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum TransportKind {
            $($(#[serde(rename = $name)] $kind,)+)*
        }

        impl TransportKind {
            /// Every transport, in the registry's order.
            pub const ALL: &[TransportKind] = &[$($(TransportKind::$kind,)+)*];

            /// Its name on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $($(TransportKind::$kind => $name,)+)*
                }
            }

            /// The module it lives in (`kv` for redis and memcached).
            pub fn module(self) -> &'static str {
                match self {
                    $($(TransportKind::$kind => stringify!($module),)+)*
                }
            }
        }
    };
}

crate::for_each_transport!(kinds);

/// The transport of a run that names none, nor a target whose scheme
/// names one: the registry's first (msgr).
impl Default for TransportKind {
    fn default() -> TransportKind {
        TransportKind::ALL[0]
    }
}

/// Every transport, in the registry's order.
pub fn all() -> &'static [TransportKind] {
    TransportKind::ALL
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> Result<TransportKind, String> {
        TransportKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = TransportKind::ALL.iter().map(|k| k.name()).collect();
                format!("'{s}' is not one of: {}", names.join(", "))
            })
    }
}
