//! The check of the load agents (`--agents`, `--launch`, `--agent-weights`),
//! the endpoints (`--target A,B`) and an agent's share of the connections.

use super::*;

impl RunRequest {
    /// `--agents` and `--agent-weights`, checked: each agent `HOST:PORT`
    /// with a weight, a target they can reach, a client for each.
    pub(crate) fn agents_checked(
        &self,
        kind: TransportKind,
        clients: usize,
    ) -> Result<Vec<crate::share::AgentSpec>, SpecError> {
        if self.fleet.agents.is_empty() && self.fleet.launch.is_empty() {
            if !self.fleet.agent_weights.is_empty() {
                return Err(flag("--agent-weights", "weighs --agents: add them"));
            }
            self.endpoints_checked(kind, clients)?;
            return Ok(vec![]);
        }
        if self.share.is_some() {
            return Err(flag("--agents", "an agent's share of a run has no agents"));
        }
        for a in &self.fleet.agents {
            crate::share::check_address(a).map_err(|e| invalid("--agents", e))?;
        }
        for l in &self.fleet.launch {
            match l.strip_prefix("ssh:") {
                Some(h)
                    if !h.is_empty() && !h.contains(char::is_whitespace) && !h.starts_with('-') => {
                }
                _ => {
                    return Err(invalid("--launch", format!("'{l}' is not ssh:[USER@]HOST")));
                }
            }
        }
        let all: Vec<&String> = self.fleet.agents.iter().chain(&self.fleet.launch).collect();
        if let Some(dup) = all.iter().enumerate().find(|(i, a)| all[..*i].contains(a)) {
            return Err(invalid(
                "--agents",
                format!(
                    "{} is named twice: one agent makes one run at a time",
                    dup.1
                ),
            ));
        }
        let weights = match self.fleet.agent_weights.len() {
            0 => vec![1; all.len()],
            n if n == all.len() => self.fleet.agent_weights.clone(),
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
            ("--trace", self.output.traced()),
            ("--server-pid", !self.server.server_pid.is_empty()),
            ("--server-cgroup", self.server.server_cgroup.is_some()),
            ("--server-cmd", self.server.server_cmd.is_some()),
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
        let kind = |e: &Endpoint| e.scheme_transport().unwrap_or_default();
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
                    if self.fleet.agent_weights.is_empty() {
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
        let same_kind = |e: &Endpoint| e.scheme_transport().unwrap_or_default();
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
        if self.server.server_cmd.is_some() {
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
        if self.fleet.agents.is_empty() && self.fleet.launch.is_empty() {
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
            // The share is the coordinator's (made from `--agents`), never
            // a flag of its own: the error names the flag it comes from.
            return Err(invalid(
                "--agents",
                format!(
                    "this agent's share, connections {}+{conns}, is not among the run's {}",
                    s.first, s.total
                ),
            ));
        }
        Ok(Some(s))
    }
}
