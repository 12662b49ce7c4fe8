//! What an agent agrees to do for a coordinator that proved the token.
//!
//! A token says who may drive the agent, not what they may make it do. A
//! coordinator's part of a run is load toward a target and a result in
//! the agent's own results directory; nothing in it needs to run a
//! program or write anywhere else. So a part that would run a command
//! (`client_cmd`, `server_cmd`, an exec run, an environment for either),
//! write a file (`hlog`, a trace copy), observe this host's processes,
//! listen, or start more agents is refused by name, unless the operator
//! started the agent with `--allow-exec`, and even then the files it
//! writes land under the agent's results directory. The coordinator's own
//! checks keep these out of every part it sends: a part that has one was
//! written by hand.

use std::path::{Component, Path, PathBuf};
use wirebench_core::request::{RunRequest, Trace};

/// The agent's side of the bargain.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where every part's results and files go.
    pub results: PathBuf,
    /// Whether parts may run commands and write files (under `results`).
    pub allow_exec: bool,
}

impl Policy {
    /// `req` as this agent makes it (its results directory its own), or
    /// why it is refused.
    pub fn admit(&self, mut req: RunRequest) -> Result<RunRequest, String> {
        let refused = |what: &str, why: &str| Err(format!("refused: {what} {why}"));
        for (what, set) in [
            ("agents (--agents)", !req.agents.is_empty()),
            ("agents to launch (--launch)", !req.launch.is_empty()),
            ("a listening server (--listen)", req.listen.is_some()),
            ("--server-pid", !req.server_pid.is_empty()),
            ("--server-cgroup", req.server_cgroup.is_some()),
            ("--force", req.force.unwrap_or(false)),
        ] {
            if set {
                return refused(what, "is not part of an agent's share of a run");
            }
        }
        let exec_run = req.transport.is_some_and(|k| k.about().own_program);
        if req.target.is_none() && !exec_run {
            return refused(
                "a part without --target",
                "would start a server on this host: an agent only makes load",
            );
        }
        let exec = [
            ("an exec run (--transport exec)", exec_run),
            ("a command (--client-cmd)", req.client_cmd.is_some()),
            ("a command (--server-cmd)", req.server_cmd.is_some()),
            ("an environment (--server-env)", !req.server_env.is_empty()),
            ("an environment (--client-env)", !req.client_env.is_empty()),
            ("a file to write (--hlog)", req.hlog.is_some()),
            ("a file to write (--trace FILE)", req.trace_file().is_some()),
        ];
        if !self.allow_exec
            && let Some((what, _)) = exec.iter().find(|(_, set)| *set)
        {
            return refused(
                what,
                "runs only on an agent started with --allow-exec (its operator's choice)",
            );
        }
        req.hlog = match req.hlog.take() {
            Some(f) => Some(self.inside("--hlog", &f)?),
            None => None,
        };
        if let Some(Trace::File(f)) = &req.trace {
            req.trace = Some(Trace::File(self.inside("--trace", f)?));
        }
        req.results = Some(self.results.clone());
        Ok(req)
    }

    /// `name` under the results directory: a relative path that does not
    /// climb out of it.
    fn inside(&self, flag: &str, name: &Path) -> Result<PathBuf, String> {
        let plain = name.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || name.as_os_str().is_empty() {
            return Err(format!(
                "refused: {flag} {}: an agent writes only under its results directory: give a relative name without `..`",
                name.display()
            ));
        }
        Ok(self.results.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(json: &str) -> RunRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_part_that_runs_or_writes_anything_is_refused_without_allow_exec() {
        let p = Policy {
            results: "/var/agent".into(),
            allow_exec: false,
        };
        let ok = p
            .admit(part(
                r#"{"target": "tcp://10.0.0.1:7470", "results": "/etc"}"#,
            ))
            .unwrap();
        assert_eq!(ok.results.as_deref(), Some(Path::new("/var/agent")));
        for (json, needle) in [
            (
                r#"{"transport": "exec", "target": "tcp://1.2.3.4:1", "client_cmd": "id"}"#,
                "an exec run (--transport exec) runs only on an agent started with --allow-exec",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "server_cmd": "id"}"#,
                "--server-cmd",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "server_env": {"LD_PRELOAD": "/x.so"}}"#,
                "--server-env",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "hlog": "/etc/passwd"}"#,
                "--hlog",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "trace": "/tmp/t"}"#,
                "--trace FILE",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "hlog": "h", "force": true}"#,
                "--force is not part",
            ),
            (
                r#"{"target": "tcp://1.2.3.4:1", "launch": ["ssh:host"]}"#,
                "--launch",
            ),
            (r#"{"mode": "echo"}"#, "without --target"),
            (
                r#"{"target": "tcp://1.2.3.4:1", "server_pid": [1]}"#,
                "--server-pid",
            ),
        ] {
            let e = p.admit(part(json)).unwrap_err();
            assert!(e.contains(needle), "{json}: {e}");
        }
    }

    #[test]
    fn with_allow_exec_files_stay_under_the_results_directory() {
        let p = Policy {
            results: "/var/agent".into(),
            allow_exec: true,
        };
        let r = p
            .admit(part(
                r#"{"target": "tcp://1.2.3.4:1", "hlog": "h.hlog", "trace": "t/x.trace"}"#,
            ))
            .unwrap();
        assert_eq!(r.hlog.as_deref(), Some(Path::new("/var/agent/h.hlog")));
        assert_eq!(r.trace_file(), Some(Path::new("/var/agent/t/x.trace")));
        for bad in ["/etc/passwd", "../x", "a/../../x", ""] {
            let json = serde_json::json!({"target": "tcp://1.2.3.4:1", "hlog": bad}).to_string();
            let e = p.admit(part(&json)).unwrap_err();
            assert!(e.contains("only under its results directory"), "{bad}: {e}");
        }
    }
}
