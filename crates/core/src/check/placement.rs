//! The check of where client and server run: the cpusets given, or the
//! usable CPUs split in two halves.

use super::*;

impl RunRequest {
    /// Where client and server run: the cpusets given, or the usable CPUs
    /// split in two halves.
    pub(crate) fn placement(
        &self,
        topo: &Topology,
        clients: usize,
    ) -> Result<Placement, SpecError> {
        let usable = topo.usable();
        let mut notes = Vec::new();
        for (name, list) in [
            ("--client-cpus", &self.client_cpus),
            ("--server-cpus", &self.server_cpus),
        ] {
            if let Some(l) = list {
                check_cpus(name, l, topo)?;
            }
        }
        let half = |upper: bool| -> CpuList {
            let cpus = usable.cpus();
            let mid = cpus.len() / 2;
            let part = if upper { &cpus[mid..] } else { &cpus[..mid] };
            CpuList::from_cpus(part.to_vec()).unwrap_or_else(|_| usable.clone())
        };
        let others = |taken: &CpuList| -> Option<CpuList> {
            CpuList::from_cpus(
                usable
                    .cpus()
                    .iter()
                    .copied()
                    .filter(|c| !taken.contains(*c))
                    .collect(),
            )
            .ok()
        };
        // exec's server, if any, is the user's: placed like an external one.
        let external = self.target.is_some() || self.transport_kind().about().own_program;
        let (client_cpus, server_cpus) = match external {
            // An observed server with the cpuset it was given: the client
            // keeps off it unless told otherwise.
            true if self.server_cpus.is_some() => {
                let s = self.server_cpus.clone().expect("matched");
                let c = self
                    .client_cpus
                    .clone()
                    .unwrap_or_else(|| others(&s).unwrap_or_else(|| usable.clone()));
                (c, Some(s))
            }
            true => {
                // A server on this host that nothing observes may share the
                // client's CPUs: its CPU then reads as other processes'.
                let observed = !self.server.server_pid.is_empty()
                    || self.server.server_cgroup.is_some()
                    || self.server.server_cmd.is_some();
                let here = self.target.as_ref().is_some_and(|t| t.on_this_host());
                if self.client_cpus.is_none() && here && !observed && self.fleet.agents.is_empty() {
                    notes.push(format!(
                        "the server runs on this host, unobserved, and may share the client's CPUs ({usable}): its CPU would read as other processes'; keep them apart with --client-cpus, and observe it with --server-pid or --server-cmd"
                    ));
                }
                (
                    self.client_cpus.clone().unwrap_or_else(|| usable.clone()),
                    None,
                )
            }
            false => {
                let (c, s) = match (&self.client_cpus, &self.server_cpus) {
                    (Some(c), Some(s)) => (c.clone(), s.clone()),
                    (Some(c), None) => (c.clone(), others(c).unwrap_or_else(|| c.clone())),
                    (None, Some(s)) => (others(s).unwrap_or_else(|| s.clone()), s.clone()),
                    (None, None) if usable.len() >= 2 => {
                        notes.push(format!(
                            "default placement: the usable CPUs ({usable}) split in two halves"
                        ));
                        (half(false), half(true))
                    }
                    (None, None) => (usable.clone(), usable.clone()),
                };
                if c.overlaps(&s) {
                    notes.push(format!(
                        "client CPUs {c} and server CPUs {s} overlap: they compete for the same cores"
                    ));
                }
                (c, Some(s))
            }
        };
        if clients > client_cpus.len() {
            notes.push(format!(
                "{clients} clients share {} client CPU(s) ({client_cpus})",
                client_cpus.len()
            ));
        }
        Ok(Placement {
            client_cpus,
            server_cpus,
            notes: self
                .sweep
                .placement_note
                .iter()
                .cloned()
                .chain(notes)
                .collect(),
            policy: self.sweep.placement_policy.clone(),
        })
    }
}
