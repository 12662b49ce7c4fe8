//! The check of the server under test, observed (`--server-pid`,
//! `--server-cgroup`, `--server-cmd`).

use super::*;

impl RunRequest {
    /// The server to observe (`--server-pid`, `--server-cgroup`,
    /// `--server-cmd`), checked: one of them, with a target.
    pub(crate) fn observed(&self) -> Result<Option<ObservedSpec>, SpecError> {
        let given: Vec<&'static str> = [
            ("--server-pid", !self.server.server_pid.is_empty()),
            ("--server-cgroup", self.server.server_cgroup.is_some()),
            ("--server-cmd", self.server.server_cmd.is_some()),
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
        if self.server.server_ready.is_some() && self.server.server_cmd.is_none() {
            return Err(flag("--server-ready", "applies to --server-cmd"));
        }
        if self.server.port.is_some() && self.server.server_cmd.is_none() {
            return Err(flag("--port", "fills {port} of --server-cmd: add one"));
        }
        for e in &self.server.server_env {
            e.check("--server-env")?;
        }
        for e in &self.output.label {
            e.check("--label")?;
        }
        if self.objectives.abort_on_fail == Some(true)
            && !self.slos()?.iter().any(|s| s.window_s.is_some())
        {
            return Err(flag(
                "--abort-on-fail",
                "ends the run when a window misses an objective checked over windows: add one, e.g. --slo 'p99<1ms over 10s'",
            ));
        }
        if !self.server.server_env.is_empty()
            && (self.target.is_some() || self.transport_kind().about().own_program)
            && self.server.server_cmd.is_none()
        {
            return Err(flag(
                "--server-env",
                "applies to a server the run starts (embedded, or --server-cmd)",
            ));
        }
        if self.server.server_cmd.is_none()
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
            && self.server.server_ready.is_none()
            && self
                .server
                .server_cmd
                .as_ref()
                .is_some_and(|c| !c.contains("{port}"))
        {
            return Err(flag(
                "--server-ready",
                "is needed: say when --server-cmd is ready (tcp:PORT or line:REGEX), or let it listen on {port}, or give --target",
            ));
        }
        if self.server.port == Some(0) {
            return Err(range("--port", 0, 1, 65535));
        }
        let source = if let Some(cmd) = &self.server.server_cmd {
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
                ready: self.server.server_ready.clone(),
            }
        } else if let Some(dir) = &self.server.server_cgroup {
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
            for pid in &self.server.server_pid {
                if *pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
                    return Err(value("--server-pid", pid, "no such process"));
                }
            }
            ServerSource::Pids(self.server.server_pid.clone())
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
}
