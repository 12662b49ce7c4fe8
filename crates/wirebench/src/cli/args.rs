//! Value parsers shared by the subcommands: each error names the value and
//! the expected form (clap adds the flag's name).

use std::time::Duration;
use wirebench_core::spec::Endpoint;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::units;

pub fn size(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

pub fn rate(s: &str) -> Result<f64, String> {
    units::parse_rate(s).map_err(|e| e.to_string())
}

pub fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| e.to_string())
}

pub fn endpoint(s: &str) -> Result<Endpoint, String> {
    s.parse()
}

pub fn cpu_list(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s).map_err(|e| e.to_string())
}

/// Checks that every CPU of `list` exists and may be used by this process.
pub fn check_cpus(flag: &str, list: &CpuList, topo: &Topology) -> Result<(), crate::UsageError> {
    let usable = topo.usable();
    let missing = list.missing_from(&usable);
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
    Err(crate::UsageError(format!(
        "{flag} {list}: CPU {} is not usable on this machine (usable CPUs: {usable}); pick CPUs from that list",
        missing.join(",")
    )))
}
