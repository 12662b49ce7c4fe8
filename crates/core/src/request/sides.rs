//! Where each side of a run is and what it reaches: the load agents and
//! their weights, the endpoints, the observed server, the CPU placement.

use super::*;

impl RunRequest {
    /// `--agents` and `--agent-weights`, checked: each agent `HOST:PORT`
    /// with a weight, a target they can reach, a client for each.
    pub(crate) fn agents_checked(
        &self,
        kind: TransportKind,
        clients: usize,
    ) -> Result<Vec<crate::share::AgentSpec>, SpecError> {
        if self.agents.is_empty() && self.launch.is_empty() {
            if !self.agent_weights.is_empty() {
                return Err(flag("--agent-weights", "weighs --agents: add them"));
            }
            self.endpoints_checked(kind, clients)?;
            return Ok(vec![]);
        }
        if self.share.is_some() {
            return Err(flag("--agents", "an agent's share of a run has no agents"));
        }
        for a in &self.agents {
            crate::share::check_address(a).map_err(|e| invalid("--agents", e))?;
        }
        for l in &self.launch {
            match l.strip_prefix("ssh:") {
                Some(h)
                    if !h.is_empty() && !h.contains(char::is_whitespace) && !h.starts_with('-') => {
                }
                _ => {
                    return Err(invalid("--launch", format!("'{l}' is not ssh:[USER@]HOST")));
                }
            }
        }
        let all: Vec<&String> = self.agents.iter().chain(&self.launch).collect();
        if let Some(dup) = all.iter().enumerate().find(|(i, a)| all[..*i].contains(a)) {
            return Err(invalid(
                "--agents",
                format!(
                    "{} is named twice: one agent makes one run at a time",
                    dup.1
                ),
            ));
        }
        let weights = match self.agent_weights.len() {
            0 => vec![1; all.len()],
            n if n == all.len() => self.agent_weights.clone(),
            n => {
                return Err(value(
                    "--agent-weights",
                    n,
                    format!("give one weight per agent ({} agents)", all.len()),
                ));
            }
        };
        if weights.contains(&0) {
            return Err(value(
                "--agent-weights",
                0,
                "every agent's weight is at least 1; leave an agent out instead",
            ));
        }
        if let Some(why) = kind.about().no_agents {
            return Err(invalid("--agents", why));
        }
        if self.target.is_none() {
            return Err(flag(
                "--agents",
                "make load on other hosts: give them a server they reach with --target (the embedded server listens on this host's loopback)",
            ));
        }
        for (name, set) in [
            ("--trace", self.traced()),
            ("--server-pid", !self.server_pid.is_empty()),
            ("--server-cgroup", self.server_cgroup.is_some()),
            ("--server-cmd", self.server_cmd.is_some()),
            ("--client-cpus", self.client_cpus.is_some()),
        ] {
            if set {
                return Err(flag(
                    name,
                    "does not go with --agents yet: each agent places and records its own part",
                ));
            }
        }
        let endpoints = 1 + self.also_target.len();
        if endpoints > all.len() {
            return Err(value(
                "--target",
                format!("{endpoints} endpoints"),
                format!(
                    "each endpoint takes the part of at least one agent: give as many agents ({}) or more",
                    all.len()
                ),
            ));
        }
        let kind = |e: &Endpoint| e.scheme_transport().unwrap_or(TransportKind::DEFAULT);
        if let Some(t) = &self.target
            && let Some(other) = self.also_target.iter().find(|e| kind(e) != kind(t))
        {
            return Err(invalid(
                "--target",
                format!("{other} is not a server of the same kind as {t}"),
            ));
        }
        let parts = crate::share::split(clients, &weights);
        if let Some(i) = parts.iter().position(|&n| n == 0) {
            return Err(value(
                "--clients",
                clients,
                format!(
                    "gives agent {} no client: give at least one client per agent ({} agents{})",
                    all[i],
                    all.len(),
                    if self.agent_weights.is_empty() {
                        ""
                    } else {
                        ", by their weights"
                    }
                ),
            ));
        }
        Ok(all
            .into_iter()
            .zip(weights)
            .map(|(a, weight)| crate::share::AgentSpec {
                address: a.clone(),
                weight,
            })
            .collect())
    }

    /// Several endpoints without agents (`--target A,B`): one process
    /// deals its connections to them in turn. Each gets at least one, and
    /// all are servers of one kind.
    pub(crate) fn endpoints_checked(
        &self,
        kind: TransportKind,
        clients: usize,
    ) -> Result<(), SpecError> {
        if self.also_target.is_empty() {
            return Ok(());
        }
        let Some(first) = &self.target else {
            return Err(flag(
                "--target",
                "is missing: more endpoints (also_target) go with a first one",
            ));
        };
        let all: Vec<&Endpoint> = std::iter::once(first).chain(&self.also_target).collect();
        if let Some(why) = kind.about().one_endpoint {
            return Err(invalid("--target", why));
        }
        if all.len() > MAX_ENDPOINTS {
            return Err(value(
                "--target",
                format!("{} endpoints", all.len()),
                format!(
                    "at most {MAX_ENDPOINTS} without agents (each client keeps a histogram per endpoint): spread them over load agents"
                ),
            ));
        }
        let same_kind = |e: &Endpoint| e.scheme_transport().unwrap_or(TransportKind::DEFAULT);
        if let Some(other) = all.iter().find(|e| same_kind(e) != same_kind(first)) {
            return Err(invalid(
                "--target",
                format!("{other} is not a server of the same kind as {first}"),
            ));
        }
        if let Some((_, dup)) = all.iter().enumerate().find(|(i, e)| all[..*i].contains(e)) {
            return Err(invalid(
                "--target",
                format!("{dup} is named twice: name each endpoint once"),
            ));
        }
        if self.server_cmd.is_some() {
            return Err(flag(
                "--server-cmd",
                "starts one server at one endpoint: with several endpoints, start them yourself (observe them with --server-pid or --server-cgroup)",
            ));
        }
        let conns = clients * self.conns_per_client.unwrap_or(1);
        if all.len() > conns {
            return Err(value(
                "--target",
                format!("{} endpoints", all.len()),
                format!(
                    "each endpoint takes at least one connection: give as many connections ({conns}, --clients x --conns-per-client) or more"
                ),
            ));
        }
        Ok(())
    }

    /// Refuses `--agents` for a command that makes its load here.
    pub fn no_agents(&self, command: &str) -> Result<(), SpecError> {
        if self.agents.is_empty() && self.launch.is_empty() {
            return Ok(());
        }
        Err(flag(
            "--agents",
            format!("is for `run`, `search` and sweeps: `{command}` makes its load on this host"),
        ))
    }

    /// An agent's share: this run's connections among the whole run's.
    pub(crate) fn share_checked(
        &self,
        conns: usize,
    ) -> Result<Option<crate::share::ConnShare>, SpecError> {
        let Some(s) = self.share else {
            return Ok(None);
        };
        let end = s.first.checked_add(conns as u64);
        if end.is_none_or(|e| e > s.total) {
            return Err(invalid(
                "share",
                format!(
                    "connections {}+{conns} are not among the run's {}",
                    s.first, s.total
                ),
            ));
        }
        Ok(Some(s))
    }

    /// Whether a server is observed (its cpuset may then be given).
    pub(crate) fn observing(&self) -> bool {
        !self.server_pid.is_empty() || self.server_cgroup.is_some() || self.server_cmd.is_some()
    }

    /// The server to observe (`--server-pid`, `--server-cgroup`,
    /// `--server-cmd`), checked: one of them, with a target.
    pub(crate) fn observed(&self) -> Result<Option<ObservedSpec>, SpecError> {
        let given: Vec<&'static str> = [
            ("--server-pid", !self.server_pid.is_empty()),
            ("--server-cgroup", self.server_cgroup.is_some()),
            ("--server-cmd", self.server_cmd.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, set)| set.then_some(f))
        .collect();
        if given.len() > 1 {
            return Err(flag(
                given[1],
                format!("and {}: give one of them", given[0]),
            ));
        }
        if self.server_ready.is_some() && self.server_cmd.is_none() {
            return Err(flag("--server-ready", "applies to --server-cmd"));
        }
        if self.port.is_some() && self.server_cmd.is_none() {
            return Err(flag("--port", "fills {port} of --server-cmd: add one"));
        }
        self.server_env.check("--server-env")?;
        if !self.server_env.is_empty()
            && (self.target.is_some() || self.transport_kind().about().own_program)
            && self.server_cmd.is_none()
        {
            return Err(flag(
                "--server-env",
                "applies to a server the run starts (embedded, or --server-cmd)",
            ));
        }
        if self.server_cmd.is_none()
            && let Some(t) = &self.target
            && t.tcp_addr().is_some_and(|a| a.ends_with(":0"))
        {
            return Err(value(
                "--target",
                t,
                "port 0 is only for a --server-cmd, whose {port} it becomes; give the server's port",
            ));
        }
        let Some(&first) = given.first() else {
            return Ok(None);
        };
        let exec = self.transport_kind().about().own_program;
        if self.target.is_none() && !exec {
            return Err(flag(
                first,
                "observes an external server: add --target, where the load goes",
            ));
        }
        if exec
            && self.target.is_none()
            && self.server_ready.is_none()
            && self
                .server_cmd
                .as_ref()
                .is_some_and(|c| !c.contains("{port}"))
        {
            return Err(flag(
                "--server-ready",
                "is needed: say when --server-cmd is ready (tcp:PORT or line:REGEX), or let it listen on {port}, or give --target",
            ));
        }
        if self.port == Some(0) {
            return Err(range("--port", 0, 1, 65535));
        }
        let source = if let Some(cmd) = &self.server_cmd {
            if cmd.trim().is_empty() {
                return Err(value(
                    "--server-cmd",
                    "''",
                    "give the command that starts the server",
                ));
            }
            check_placeholders("--server-cmd", cmd)?;
            ServerSource::Command {
                cmd: cmd.clone(),
                ready: self.server_ready.clone(),
            }
        } else if let Some(dir) = &self.server_cgroup {
            let v2 = dir.join("cgroup.procs").is_file() && dir.join("cgroup.controllers").is_file();
            if !v2 {
                return Err(value(
                    "--server-cgroup",
                    dir.display(),
                    "not a cgroup v2 directory (e.g. /sys/fs/cgroup/system.slice/redis.service)",
                ));
            }
            ServerSource::Cgroup(dir.clone())
        } else {
            for pid in &self.server_pid {
                if *pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
                    return Err(value("--server-pid", pid, "no such process"));
                }
            }
            ServerSource::Pids(self.server_pid.clone())
        };
        if matches!(&source, ServerSource::Command { ready: None, .. })
            && self.target.as_ref().is_some_and(|t| t.tcp_addr().is_none())
            && !matches!(&self.target, Some(Endpoint::Unix(_)))
        {
            return Err(flag(
                "--server-ready",
                "is needed: the target is not a socket",
            ));
        }
        Ok(Some(ObservedSpec {
            source,
            cpus: self.server_cpus.clone(),
        }))
    }

    /// The mode a transport reads from `--mode`, or its first mode.
    pub(crate) fn mode_of<M: std::str::FromStr + Copy + std::fmt::Display>(
        &self,
        all: &[M],
        kind: TransportKind,
    ) -> Result<M, SpecError> {
        let Some(text) = &self.mode else {
            return Ok(all[0]);
        };
        text.parse().map_err(|_| {
            let names: Vec<String> = all.iter().map(|m| m.to_string()).collect();
            value(
                "--mode",
                text,
                format!(
                    "not a mode of --transport {kind}; use one of {}",
                    names.join(", ")
                ),
            )
        })
    }

    /// `--size` as one size (msgr, shm), between 1 byte and 4GiB-1.
    pub(crate) fn fixed_size(&self, default: u64) -> Result<u64, SpecError> {
        let size = match &self.size {
            None => default,
            Some(SizeSpec::Fixed(n)) => *n,
            Some(s) => {
                return Err(value(
                    "--size",
                    s,
                    "a list or a range of sizes applies to --transport s3 only",
                ));
            }
        };
        if size == 0 || size > u64::from(u32::MAX) {
            return Err(range("--size", size, "1 byte", "4GiB-1"));
        }
        Ok(size)
    }

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
                let observed = !self.server_pid.is_empty()
                    || self.server_cgroup.is_some()
                    || self.server_cmd.is_some();
                let here = self.target.as_ref().is_some_and(|t| t.on_this_host());
                if self.client_cpus.is_none() && here && !observed && self.agents.is_empty() {
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
            notes: self.placement_note.iter().cloned().chain(notes).collect(),
            policy: self.placement_policy.clone(),
        })
    }
}

/// The length of a phase in ns, at most [`MAX_PHASE`].
pub(crate) fn phase_ns(name: &'static str, d: Duration) -> Result<u64, SpecError> {
    if d > MAX_PHASE {
        return Err(value(
            name,
            Dur(d),
            "longer than 30 days: a phase is at most 720h; for a longer soak, repeat runs",
        ));
    }
    Ok(crate::units::nanos(d))
}

/// A file's directory must exist (checked before any load).
pub(crate) fn parent_exists(name: &'static str, f: &Path) -> Result<(), SpecError> {
    let parent = f
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if parent.is_dir() {
        Ok(())
    } else {
        Err(value(
            name,
            f.display(),
            format!("the directory {} does not exist", parent.display()),
        ))
    }
}

/// Checks that every CPU of `list` exists and may be used by this process.
pub fn check_cpus(name: &'static str, list: &CpuList, topo: &Topology) -> Result<(), SpecError> {
    let usable = topo.usable();
    let missing = list.missing_from(&usable);
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
    Err(value(
        name,
        list,
        format!(
            "CPU {} is not usable on this machine (usable CPUs: {usable}); pick CPUs from that list",
            missing.join(",")
        ),
    ))
}
