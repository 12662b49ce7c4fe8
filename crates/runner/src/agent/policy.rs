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
//!
//! Nor does a token lend the agent's own standing:
//! - a file a part names (`ca_file`, `proto_set`) is read only from a
//!   directory the operator listed (`--allow-files DIR`, none by default),
//!   named by an absolute path that climbs no `..` and crosses no link,
//!   and only when it is a regular file under [`INPUT_MAX`]; a file
//!   outside them is refused before anything about it is looked at, so
//!   the answer says nothing of it;
//! - the agent's own credentials (`AWS_*`, `$REDISCLI_AUTH`) go only to
//!   the targets the operator listed (`--allow-target HOST:PORT`, none by
//!   default): a coordinator cannot point the agent at a listener of its
//!   own and collect them.

use std::path::{Component, Path, PathBuf};
use wirebench_core::files::INPUT_MAX;
use wirebench_core::request::{RunRequest, Trace};

/// The agent's side of the bargain.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where every part's results and files go.
    pub results: PathBuf,
    /// Whether parts may run commands and write files (under `results`).
    pub allow_exec: bool,
    /// The directories a part may name files in (`--allow-files`), each
    /// canonical.
    pub allow_files: Vec<PathBuf>,
    /// The targets (`HOST:PORT`, as the part writes them) the agent's own
    /// credentials may be used for (`--allow-target`).
    pub allow_targets: Vec<String>,
}

impl Policy {
    /// `--allow-files`: existing directories, canonical (a part names files
    /// by their real path).
    pub fn allowed_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
        dirs.iter()
            .map(|d| match d.canonicalize() {
                Ok(c) if c.is_dir() && c != Path::new("/") => Ok(c),
                Ok(_) => Err(format!(
                    "--allow-files {}: not a directory below /",
                    d.display()
                )),
                Err(e) => Err(format!("--allow-files {}: {e}", d.display())),
            })
            .collect()
    }

    /// `--allow-target HOST:PORT`, each checked.
    pub fn allowed_targets(targets: &[String]) -> Result<Vec<String>, String> {
        for t in targets {
            let ok = t.rsplit_once(':').is_some_and(|(h, p)| {
                !h.is_empty() && !h.contains('/') && p.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !ok {
                return Err(format!("--allow-target {t}: not HOST:PORT"));
            }
        }
        Ok(targets.to_vec())
    }

    /// `req` as this agent makes it (its results directory its own), or
    /// why it is refused.
    pub fn admit(&self, mut req: RunRequest) -> Result<RunRequest, String> {
        let refused = |what: &str, why: &str| Err(format!("refused: {what} {why}"));
        for (what, set) in [
            ("agents (--agents)", !req.fleet.agents.is_empty()),
            ("agents to launch (--launch)", !req.fleet.launch.is_empty()),
            ("a listening server (--listen)", req.listen.is_some()),
            ("--server-pid", !req.server.server_pid.is_empty()),
            ("--server-cgroup", req.server.server_cgroup.is_some()),
            ("--force", req.output.force.unwrap_or(false)),
            // Live metrics are its coordinator's to serve (a listener, a
            // token file to read: nothing a peer may ask of this host).
            (
                "live metrics (--metrics-listen, --live)",
                !req.watch.is_empty(),
            ),
            // An upload is its coordinator's (this host's credentials sent
            // to an endpoint a peer names: never).
            ("an upload (--upload)", req.output.upload.is_some()),
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
            (
                "a command (--client-cmd)",
                req.flags.exec.client_cmd.is_some(),
            ),
            ("a command (--server-cmd)", req.server.server_cmd.is_some()),
            (
                "an environment (--server-env)",
                !req.server.server_env.is_empty(),
            ),
            (
                "an environment (--client-env)",
                !req.flags.exec.client_env.is_empty(),
            ),
            ("a file to write (--hlog)", req.output.hlog.is_some()),
            (
                "a file to write (--trace FILE)",
                req.output.trace_file().is_some(),
            ),
        ];
        if !self.allow_exec
            && let Some((what, _)) = exec.iter().find(|(_, set)| *set)
        {
            return refused(
                what,
                "runs only on an agent started with --allow-exec (its operator's choice)",
            );
        }
        for (flag, file) in [
            ("--ca-file", &req.ca_file),
            ("--proto-set", &req.flags.grpc.proto_set),
        ] {
            if let Some(f) = file {
                self.readable(flag, f)?;
            }
        }
        req.output.hlog = match req.output.hlog.take() {
            Some(f) => Some(self.inside("--hlog", &f)?),
            None => None,
        };
        if let Some(Trace::File(f)) = &req.output.trace {
            req.output.trace = Some(Trace::File(self.inside("--trace", f)?));
        }
        req.output.results = Some(self.results.clone());
        Ok(req)
    }

    /// `name` under the results directory: a relative path that does not
    /// climb out of it, and crosses no link that is there already.
    fn inside(&self, flag: &str, name: &Path) -> Result<PathBuf, String> {
        let plain = name.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || name.as_os_str().is_empty() {
            return Err(format!(
                "refused: {flag} {}: an agent writes only under its results directory: give a relative name without `..`",
                name.display()
            ));
        }
        let mut at = self.results.clone();
        for c in name.components() {
            at.push(c);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "refused: {flag} {}: {} is a link: an agent follows no link inside its results directory",
                    name.display(),
                    at.display()
                ));
            }
        }
        Ok(self.results.join(name))
    }

    /// Whether the part may have the agent read `file`: under a directory
    /// the operator allowed, by a path that climbs no `..` and crosses no
    /// link, a regular file of at most [`INPUT_MAX`] bytes.
    fn readable(&self, flag: &str, file: &Path) -> Result<(), String> {
        if self.allow_files.is_empty() {
            return Err(format!(
                "refused: {flag}: this agent reads no file a coordinator names (its operator may allow a directory with --allow-files DIR)"
            ));
        }
        let plain = file.is_absolute()
            && file
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        let Some(dir) = self
            .allow_files
            .iter()
            .find(|d| plain && file.starts_with(d) && file != d.as_path())
        else {
            // Nothing is looked at: the answer tells nothing of the file.
            return Err(format!(
                "refused: {flag} {}: not under a directory this agent's operator allowed (--allow-files), by an absolute path without `..`",
                file.display()
            ));
        };
        let mut at = dir.clone();
        let rest = file.strip_prefix(dir).expect("under it");
        for c in rest.components() {
            at.push(c);
            let m = std::fs::symlink_metadata(&at)
                .map_err(|e| format!("refused: {flag} {}: {e}", file.display()))?;
            if m.file_type().is_symlink() {
                return Err(format!(
                    "refused: {flag} {}: {} is a link: an agent follows no link to a file a coordinator names",
                    file.display(),
                    at.display()
                ));
            }
            if at == file && !m.is_file() {
                return Err(format!(
                    "refused: {flag} {}: not a regular file",
                    file.display()
                ));
            }
            if at == file && m.len() > INPUT_MAX {
                return Err(format!(
                    "refused: {flag} {}: {} bytes, more than the {INPUT_MAX} an agent reads",
                    file.display(),
                    m.len()
                ));
            }
        }
        Ok(())
    }

    /// Whether the agent's own credentials may go to every endpoint of
    /// `req`: each one the operator listed.
    pub fn credentials_for(&self, req: &RunRequest) -> bool {
        let listed = |e: &wirebench_core::values::Endpoint| {
            e.tcp_addr()
                .is_some_and(|a| self.allow_targets.iter().any(|t| t.eq_ignore_ascii_case(a)))
        };
        req.target.is_some() && req.target.iter().chain(&req.also_target).all(listed)
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
            allow_files: vec![],
            allow_targets: vec![],
        };
        let ok = p
            .admit(part(
                r#"{"target": "tcp://10.0.0.1:7470", "results": "/etc"}"#,
            ))
            .unwrap();
        assert_eq!(ok.output.results.as_deref(), Some(Path::new("/var/agent")));
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
            // Issue 47: live metrics are part of a request now; a part that
            // asks an agent to listen (and read a token file) is refused.
            (
                r#"{"target": "tcp://1.2.3.4:1", "metrics_listen": "0.0.0.0:80", "metrics_token_file": "/etc/shadow"}"#,
                "live metrics (--metrics-listen, --live) is not part",
            ),
            (r#"{"target": "tcp://1.2.3.4:1", "live": true}"#, "--live"),
            // Issue 49: an upload would send this host's credentials to an
            // endpoint the peer names.
            (
                r#"{"target": "tcp://1.2.3.4:1", "upload": "s3://10.9.9.9:9000/loot/x"}"#,
                "an upload (--upload) is not part",
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
            allow_files: vec![],
            allow_targets: vec![],
        };
        let r = p
            .admit(part(
                r#"{"target": "tcp://1.2.3.4:1", "hlog": "h.hlog", "trace": "t/x.trace"}"#,
            ))
            .unwrap();
        assert_eq!(
            r.output.hlog.as_deref(),
            Some(Path::new("/var/agent/h.hlog"))
        );
        assert_eq!(
            r.output.trace_file(),
            Some(Path::new("/var/agent/t/x.trace"))
        );
        for bad in ["/etc/passwd", "../x", "a/../../x", ""] {
            let json = serde_json::json!({"target": "tcp://1.2.3.4:1", "hlog": bad}).to_string();
            let e = p.admit(part(&json)).unwrap_err();
            assert!(e.contains("only under its results directory"), "{bad}: {e}");
        }
    }

    /// Issue 46: files a part names are read only under the directories
    /// the operator allowed, never through a link; a file outside them is
    /// refused alike whether it exists or not.
    #[test]
    fn a_file_a_part_names_is_read_only_from_an_allowed_directory() {
        let root = std::env::temp_dir().join(format!("wirebench-policy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let allowed = root.join("ca");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::write(allowed.join("ok.pem"), "pem").unwrap();
        std::os::unix::fs::symlink("/etc/shadow", allowed.join("shadow")).unwrap();
        std::os::unix::fs::symlink("/etc", allowed.join("etc")).unwrap();
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        let p = |allow: Vec<PathBuf>| Policy {
            results: root.join("results"),
            allow_exec: false,
            allow_files: allow,
            allow_targets: vec![],
        };
        let with = |field: &str, f: &Path| {
            part(
                &serde_json::json!({"target": "grpcs://1.2.3.4:1", "call": "a.B/C", field: f})
                    .to_string(),
            )
        };
        let none = p(vec![]);
        let e = none
            .admit(with("ca_file", Path::new("/dev/zero")))
            .unwrap_err();
        assert!(
            e.contains("reads no file a coordinator names") && e.contains("--allow-files"),
            "{e}"
        );
        let some = p(vec![allowed.clone()]);
        assert!(some.admit(with("ca_file", &allowed.join("ok.pem"))).is_ok());
        assert!(
            some.admit(with("proto_set", &allowed.join("ok.pem")))
                .is_ok()
        );
        // Outside: the same words for a file that exists and one that does not.
        let outside: Vec<String> = ["/etc/shadow", "/etc/no-such-file"]
            .iter()
            .map(|f| some.admit(with("ca_file", Path::new(f))).unwrap_err())
            .collect();
        for e in &outside {
            assert!(
                e.contains("not under a directory this agent's operator allowed"),
                "{e}"
            );
            assert!(!e.contains("denied") && !e.contains("No such"), "{e}");
        }
        let relative = format!("{}/../../etc/shadow", allowed.display());
        for f in [relative.as_str(), "ok.pem", allowed.to_str().unwrap()] {
            let e = some.admit(with("ca_file", Path::new(f))).unwrap_err();
            assert!(e.contains("not under a directory"), "{f}: {e}");
        }
        for (f, needle) in [
            (allowed.join("shadow"), "is a link"),
            (allowed.join("etc/shadow"), "is a link"),
            (allowed.join("sub"), "not a regular file"),
            (allowed.join("absent.pem"), "No such file"),
        ] {
            let e = some.admit(with("ca_file", &f)).unwrap_err();
            assert!(e.contains(needle), "{}: {e}", f.display());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Issue 46: an agent's own credentials go only to listed targets
    /// (every endpoint of the part).
    #[test]
    fn credentials_go_only_to_targets_the_operator_listed() {
        let p = Policy {
            results: "/var/agent".into(),
            allow_exec: false,
            allow_files: vec![],
            allow_targets: vec!["10.0.0.5:6379".into(), "S3.example:9000".into()],
        };
        let req = |t: &str| part(&serde_json::json!({"target": t}).to_string());
        assert!(p.credentials_for(&req("redis://10.0.0.5:6379")));
        assert!(p.credentials_for(&req("s3://s3.example:9000/bench")));
        assert!(!p.credentials_for(&req("redis://10.0.0.6:6379")));
        // The default port is the port.
        assert!(p.credentials_for(&req("redis://10.0.0.5")));
        let both = part(
            r#"{"target": "redis://10.0.0.5:6379", "also_target": ["redis://10.0.0.6:6379"]}"#,
        );
        assert!(!p.credentials_for(&both));
        let none = Policy {
            allow_targets: vec![],
            ..p.clone()
        };
        assert!(!none.credentials_for(&req("redis://10.0.0.5:6379")));
    }
}
