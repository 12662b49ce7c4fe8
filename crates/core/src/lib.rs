//! wirebench-core: the pure data and algorithms of wirebench. No sockets, no
//! threads: the checked run spec, units, CPU lists and topology, latency
//! histograms, the result model and its store.
//!
//! ```
//! use wirebench_core::units::parse_size;
//! use wirebench_core::topo::CpuList;
//! assert_eq!(parse_size("4KiB").unwrap(), 4096);
//! assert_eq!(CpuList::parse("0-2,8").unwrap().cpus(), &[0, 1, 2, 8]);
//! ```
// Input is parsed here: no silent narrowing casts (checked conversions, or
// units::whole for figures).
#![deny(clippy::cast_possible_truncation)]

/// Display and FromStr of an enum by its names on the command line.
macro_rules! text_enum {
    ($t:ty, $($name:literal => $v:expr),+) => {
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let s = match self { $(x if *x == $v => $name,)+ _ => unreachable!() };
                f.write_str(s)
            }
        }
        impl ::std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s { $($name => Ok($v),)+ _ => Err(format!("'{s}' is not one of: {}", [$($name),+].join(", "))) }
            }
        }
    };
}

pub mod check;
pub mod command;
pub mod env;
pub mod error;
pub mod files;
pub mod hash;
pub mod hist;
pub mod hlog;
pub mod index;
pub mod kind;
pub mod legacy;
pub mod limits;
pub mod live;
pub mod merge;
pub mod observe;
pub mod output;
pub mod parsers;
pub mod placement;
pub mod plan;
pub mod ramp;
pub mod request;
pub mod result;
pub mod serve;
pub mod share;
pub mod slo;
pub mod spec;
pub mod stages;
pub mod stats;
pub mod store;
pub mod summaries;
pub mod text;
pub mod topo;
pub mod transport;
pub mod units;
pub mod values;
pub mod vars;
