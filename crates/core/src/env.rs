//! Provenance: what machine and build produced a result.

use crate::topo::Topology;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub wirebench_version: String,
    pub git_revision: String,
    /// "release" or "debug": debug numbers are not representative.
    pub build_profile: String,
    pub kernel: String,
    pub cpu_model: String,
    pub hostname: String,
    pub topology: Topology,
}

impl Environment {
    /// Reads this machine. `version` and `git_revision` come from the binary
    /// that was built, so the caller passes them.
    pub fn capture(version: &str, git_revision: &str) -> Environment {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Environment {
            wirebench_version: version.into(),
            git_revision: git_revision.into(),
            build_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            kernel: format!(
                "{} {}",
                read("/proc/sys/kernel/ostype"),
                read("/proc/sys/kernel/osrelease")
            ),
            cpu_model,
            hostname: read("/proc/sys/kernel/hostname"),
            topology: Topology::read(),
        }
    }
}
