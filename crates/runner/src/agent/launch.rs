//! `--launch ssh:[USER@]HOST`: agents started by the coordinator itself,
//! with the system's ssh (so `~/.ssh/config`, agents and jump hosts work as
//! the user has them).
//!
//! Per host: one master connection (`ControlMaster`, its socket in a
//! private temporary directory) that every later command shares; this
//! binary copied to `~/.cache/wirebench/wirebench-SHA` unless a copy with
//! the same sha256 is there, and the copy's sha256 checked; the agent
//! started on the host's loopback with a fresh random token on its stdin
//! (never on a command line), which also keeps it alive: when the
//! coordinator's end closes, the agent stops; the control connection
//! tunnelled from a local loopback port to the agent's.

use crate::RunError;
use crate::auth::{self, BuildId, Token};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Where a launched agent keeps its parts' results (in the home directory
/// of the user ssh logs in as).
pub const RESULTS: &str = ".cache/wirebench/results";

/// The longest a host may take to connect, take the binary or start.
const STEP: Duration = Duration::from_secs(60);

/// Agents this coordinator started; stopped (their ssh processes by PID,
/// the masters told to exit, the control directory removed) when dropped.
pub struct Launched {
    dir: PathBuf,
    hosts: Vec<Host>,
}

struct Host {
    master: Child,
    agent: Option<Child>,
    lifeline: Option<ChildStdin>,
    /// Where the tunnel to the agent listens, here.
    local: String,
}

impl Launched {
    /// Each host's tunnel to its agent (`127.0.0.1:PORT`), in order.
    pub fn addresses(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.local.clone()).collect()
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            // The agent's stdin closing stops it.
            drop(h.lifeline.take());
            if let Some(mut a) = h.agent.take() {
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline && matches!(a.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = a.kill();
                let _ = a.wait();
            }
            let _ = h.master.kill();
            let _ = h.master.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ssh_base(dir: &Path, config: Option<&Path>) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(c) = config {
        a.extend(["-F".to_string(), c.display().to_string()]);
    }
    for o in [
        "BatchMode=yes",
        "ConnectTimeout=10",
        "ServerAliveInterval=2",
        "ServerAliveCountMax=5",
    ] {
        a.extend(["-o".to_string(), o.to_string()]);
    }
    a.extend([
        "-o".to_string(),
        format!("ControlPath={}/%C", dir.display()),
    ]);
    a
}

fn fail(host: &str, why: impl std::fmt::Display) -> RunError {
    RunError::Failed(format!("--launch ssh:{host}: {why}"))
}

/// Runs `ssh HOST CMD` over the master; its stdout, or why it failed.
fn remote(
    base: &[String],
    host: &str,
    cmd: &str,
    input: Option<&Path>,
) -> Result<String, RunError> {
    let mut c = Command::new("ssh");
    c.args(base)
        .args(["-o", "ControlMaster=no", host, cmd])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.stdin(match input {
        Some(f) => Stdio::from(std::fs::File::open(f).map_err(|e| fail(host, e))?),
        None => Stdio::null(),
    });
    let child = c.spawn().map_err(|e| fail(host, format!("ssh: {e}")))?;
    let out = wait_output(child, STEP).map_err(|e| fail(host, e))?;
    if !out.status.success() {
        return Err(fail(
            host,
            format!(
                "`{cmd}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A child's output, or an error once `limit` passed (the child killed).
fn wait_output(mut child: Child, limit: Duration) -> Result<std::process::Output, String> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(|e| e.to_string()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {limit:?}"));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Starts an agent on each of `hosts` (`[USER@]HOST`) and tunnels to it;
/// `token` is set to the fresh token they were given.
pub fn ssh(
    hosts: &[String],
    config: Option<&Path>,
    build: &BuildId,
    note: &mut dyn FnMut(&str),
) -> Result<(Launched, Token), RunError> {
    let dir = std::env::temp_dir().join(format!("wirebench-ssh-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let secret = auth::nonce();
    let token = Token::new(&secret).expect("a nonce is long enough");
    let mut launched = Launched {
        dir: dir.clone(),
        hosts: Vec::new(),
    };
    let base = ssh_base(&dir, config);
    let exe = std::fs::read_link("/proc/self/exe")?;
    for host in hosts {
        // The master connection: every later command shares it.
        let master = Command::new("ssh")
            .args(&base)
            .args(["-M", "-N", "-o", "ControlMaster=yes", host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(host, format!("ssh: {e}")))?;
        launched.hosts.push(Host {
            master,
            agent: None,
            lifeline: None,
            local: String::new(),
        });
        let h = launched.hosts.last_mut().expect("pushed");
        wait_for_master(&base, host, h)?;
        // The binary, unless the same one is there.
        let path = copy_binary(&base, host, build, &exe, note)?;
        // The agent, on the host's loopback; its stdin gives it the token
        // and keeps it alive.
        let remote_addr = start_agent(&base, host, &path, &secret, h)?;
        // The tunnel.
        h.local = tunnel(&base, host, &remote_addr)?;
        note(&format!(
            "ssh:{host}: agent started ({remote_addr} there, tunnelled from {})",
            h.local
        ));
    }
    Ok((launched, token))
}

/// Waits for the master connection to `host` (every later command shares
/// it), at most [`STEP`]; its error when ssh exits.
fn wait_for_master(base: &[String], host: &str, h: &mut Host) -> Result<(), RunError> {
    let deadline = Instant::now() + STEP;
    loop {
        let ok = Command::new("ssh")
            .args(base)
            .args(["-O", "check", host])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        if let Ok(Some(st)) = h.master.try_wait() {
            let mut err = String::new();
            if let Some(e) = h.master.stderr.as_mut() {
                let _ = std::io::Read::read_to_string(e, &mut err);
            }
            return Err(fail(host, format!("ssh exited ({st}): {}", err.trim())));
        }
        if Instant::now() > deadline {
            return Err(fail(host, format!("no connection within {STEP:?}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Copies this binary to `host` unless the same one is there, and checks
/// the copy's sha256; where it is, relative to the home directory.
fn copy_binary(
    base: &[String],
    host: &str,
    build: &BuildId,
    exe: &Path,
    note: &mut dyn FnMut(&str),
) -> Result<String, RunError> {
    let short = build.sha256.get(..16).unwrap_or(&build.sha256);
    let path = format!(".cache/wirebench/wirebench-{short}");
    let sum = |base: &[String]| -> Result<String, RunError> {
        let out = remote(
            base,
            host,
            &format!("sha256sum {path} 2>/dev/null || true"),
            None,
        )?;
        Ok(out.split_whitespace().next().unwrap_or("").to_string())
    };
    if sum(base)? != build.sha256 {
        note(&format!(
            "ssh:{host}: copying {} to ~/{path}",
            exe.display()
        ));
        remote(
            base,
            host,
            &format!(
                "mkdir -p .cache/wirebench && cat > {path}.part && chmod 755 {path}.part && mv {path}.part {path}"
            ),
            Some(exe),
        )?;
        let got = sum(base)?;
        if got != build.sha256 {
            return Err(fail(
                host,
                format!(
                    "the copy ~/{path} has sha256 {got}, not this binary's {}",
                    build.sha256
                ),
            ));
        }
    }
    Ok(path)
}

/// Starts the agent on `host`'s loopback: its stdin gives it the token and
/// keeps it alive. Where it listens there.
fn start_agent(
    base: &[String],
    host: &str,
    path: &str,
    secret: &str,
    h: &mut Host,
) -> Result<String, RunError> {
    let mut agent = Command::new("ssh")
        .args(base)
        .args([
            "-o",
            "ControlMaster=no",
            host,
            &format!(
                "exec ./{path} agent --listen tcp://127.0.0.1:0 --token-stdin --results {RESULTS}"
            ),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| fail(host, format!("ssh: {e}")))?;
    let mut stdin = agent.stdin.take().expect("piped");
    writeln!(stdin, "{secret}").map_err(|e| fail(host, e))?;
    stdin.flush().map_err(|e| fail(host, e))?;
    let stdout = agent.stdout.take().expect("piped");
    h.agent = Some(agent);
    h.lifeline = Some(stdin);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(STEP)
        .map_err(|_| fail(host, format!("the agent did not start within {STEP:?}")))?;
    let remote_addr = line
        .trim()
        .strip_prefix("listening on tcp://")
        .ok_or_else(|| fail(host, format!("the agent did not start: {}", line.trim())))?
        .to_string();
    Ok(remote_addr)
}

/// A tunnel from a free port here to the agent there; where it listens.
fn tunnel(base: &[String], host: &str, remote_addr: &str) -> Result<String, RunError> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let st = Command::new("ssh")
        .args(base)
        .args([
            "-O",
            "forward",
            "-L",
            &format!("127.0.0.1:{port}:{remote_addr}"),
            host,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| fail(host, format!("ssh: {e}")))?;
    if !st.status.success() {
        return Err(fail(
            host,
            format!(
                "cannot tunnel to the agent: {}",
                String::from_utf8_lossy(&st.stderr).trim()
            ),
        ));
    }
    Ok(format!("127.0.0.1:{port}"))
}
