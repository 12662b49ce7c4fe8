//! A server the run does not embed but observes: processes given by PID,
//! every process of a cgroup, or a command the run starts itself (pinned
//! to its cpuset, with its output kept in the run's directory, ready when
//! a port accepts or a line appears, and stopped at the end: TERM to its
//! process group, then KILL). Its CPU, threads and memory are measured as
//! the embedded server's are (see `wirebench_load::procs`).

use crate::process;
use crate::target::{Stopped, Target};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wirebench_core::result::ServerReport;
use wirebench_core::spec::{Endpoint, ObservedSpec, Ready, RunSpec, ServerSource};
use wirebench_load::procs::{ServerProcs, ThreadSeen, Watch};

/// How long a started server has to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server has to stop on SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often the threads are looked at for where they run.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// The values of a command template's placeholders.
pub fn placeholders(
    spec: &RunSpec,
    port: Option<u16>,
    instance: usize,
    run_dir: Option<&Path>,
) -> BTreeMap<&'static str, String> {
    let cpus = |c: Option<&wirebench_core::topo::CpuList>| c.map(|c| c.to_string());
    let size = spec
        .transport
        .describe()
        .sizes_as_given()
        .unwrap_or_else(|| spec.transport.size_bytes().to_string());
    let duration_s = match spec.stop {
        wirebench_core::spec::StopSpec::DurationNs(ns) => format!("{}", ns.div_ceil(1_000_000_000)),
        wirebench_core::spec::StopSpec::Count(_) => String::new(),
    };
    let mut v = BTreeMap::from([
        ("clients", spec.clients.to_string()),
        ("conns", spec.connections().to_string()),
        ("depth", spec.depth.to_string()),
        ("size", size),
        ("duration_s", duration_s),
        (
            "rate",
            spec.rate_per_s.map(|r| format!("{r}")).unwrap_or_default(),
        ),
        ("client_cpus", spec.client_cpus.to_string()),
        ("instance", instance.to_string()),
    ]);
    // This wirebench, to start its own servers as a server of the user's.
    if let Ok(exe) = std::env::current_exe() {
        v.insert("wirebench", exe.display().to_string());
    }
    if let Some(c) = cpus(spec.observe.as_ref().and_then(|o| o.cpus.as_ref())) {
        v.insert("server_cpus", c);
    }
    if let Some(p) = port {
        v.insert("port", p.to_string());
    }
    if let Some(d) = run_dir {
        v.insert("run_dir", d.display().to_string());
    }
    v
}

/// `template` with each `{name}` replaced by its value; a placeholder with
/// no value here is an error that names it.
pub fn expand(template: &str, values: &BTreeMap<&'static str, String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.find('}').map(|c| &after[..c]);
        match name.and_then(|n| values.get_key_value(n)) {
            Some((n, v)) => {
                out.push_str(v);
                rest = &after[n.len() + 1..];
            }
            None if name.is_some_and(|n| wirebench_core::command::PLACEHOLDERS.contains(&n)) => {
                return Err(format!(
                    "{{{}}} has no value in this run",
                    name.expect("matched")
                ));
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A free loopback port (the kernel's pick; free when this returns).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The server the run started from `--server-cmd`.
struct Started {
    child: Child,
    pid: u32,
    /// It and what it starts (see [`crate::tree`]).
    tree: crate::tree::Tree,
    /// Its output files (stdout, stderr) in the run's directory.
    logs: Vec<PathBuf>,
    /// The threads that copy its output.
    captures: Vec<crate::capture::Capture>,
    stopped: bool,
}

impl Started {
    /// TERM to the tree, KILL after the grace; how it ended.
    fn stop(&mut self) -> Option<String> {
        if self.stopped {
            return None;
        }
        self.stopped = true;
        if let Ok(Some(s)) = self.child.try_wait() {
            self.tree.kill();
            return Some(format!("exited during the run: {}", process::describe(s)));
        }
        match self.tree.stop(&mut self.child, STOP_GRACE) {
            Some(s) => {
                let how = process::describe(s);
                (how != "exit status 0" && how != "killed by signal 15 (SIGTERM)")
                    .then(|| format!("stopped with {how}"))
            }
            None => Some(format!(
                "did not stop within {} s of SIGTERM: killed",
                STOP_GRACE.as_secs()
            )),
        }
    }

    /// The last lines of its stderr (then stdout), for an error message;
    /// once it exited, after its output is all copied (1 s at most: what
    /// it started may hold the pipes).
    fn tail(&self) -> String {
        for c in &self.captures {
            c.finish(Duration::from_secs(1));
        }
        last_output(&self.logs)
    }
}

/// "; its last output (FILE):" and the last lines (at most 8, of its last
/// 2 KiB) of the last of `files` (stderr, then stdout) that has any; empty
/// when none has.
pub fn last_output(files: &[PathBuf]) -> String {
    for path in files.iter().rev() {
        let Ok(mut f) = File::open(path) else {
            continue;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(2048)));
        let mut text = String::new();
        let _ = f.read_to_string(&mut text);
        let lines: Vec<&str> = text.lines().rev().take(8).collect();
        if !lines.is_empty() {
            let t: Vec<&str> = lines.into_iter().rev().collect();
            return format!("; its last output ({}):\n{}", path.display(), t.join("\n"));
        }
    }
    String::new()
}

impl Drop for Started {
    /// A server the run started is never left behind.
    fn drop(&mut self) {
        if !self.stopped {
            self.stopped = true;
            self.tree.kill();
            let _ = self.child.wait();
        }
    }
}

/// An observed server: a [`Target`] whose processes the sampler reads.
pub struct Observed {
    endpoint: Endpoint,
    procs: ServerProcs,
    started: Option<Started>,
    /// Its cpuset: as given, or its affinity when the run began.
    cpuset: Vec<usize>,
    watch: Option<Watch>,
    done: bool,
}

impl Observed {
    /// Finds (PIDs, cgroup) or starts (command) the server of `spec`,
    /// waits until it is ready, and starts watching its threads. A
    /// command's output goes to `dir` (`server-stdout.txt`,
    /// `server-stderr.txt`), which is made if need be.
    pub fn start(
        spec: &RunSpec,
        endpoint: &Endpoint,
        env: &BTreeMap<String, String>,
        values: &BTreeMap<&'static str, String>,
        dir: Option<&Path>,
    ) -> Result<Observed, String> {
        let obs = spec.observe.as_ref().expect("an observed server");
        let (procs, started) = match &obs.source {
            ServerSource::Pids(p) => (
                ServerProcs::Tree(wirebench_load::procs::PidTree::new(p.clone())),
                None,
            ),
            ServerSource::Cgroup(d) => (ServerProcs::Cgroup(d.clone()), None),
            ServerSource::Command { cmd, ready } => {
                let s = start_command(obs, cmd, ready.as_ref(), endpoint, env, values, dir)?;
                (ServerProcs::Group(s.pid), Some(s))
            }
        };
        if procs.pids().is_empty() {
            return Err(match &obs.source {
                ServerSource::Cgroup(d) => {
                    format!("--server-cgroup {}: no process in it", d.display())
                }
                _ => "--server-pid: the processes are gone".into(),
            });
        }
        let cpuset = match &obs.cpus {
            Some(c) => c.cpus().to_vec(),
            None => procs.allowed_cpus(),
        };
        let watch = Watch::start(procs.clone(), WATCH_PERIOD).ok();
        Ok(Observed {
            endpoint: endpoint.clone(),
            procs,
            started,
            cpuset,
            watch,
            done: false,
        })
    }
}

/// Starts `sh -c CMD` in a process group of its own, pinned, its output
/// into files, and waits until it is ready.
fn start_command(
    obs: &ObservedSpec,
    template: &str,
    ready: Option<&Ready>,
    endpoint: &Endpoint,
    env: &BTreeMap<String, String>,
    values: &BTreeMap<&'static str, String>,
    dir: Option<&Path>,
) -> Result<Started, String> {
    let cmd_line = expand(template, values).map_err(|e| format!("--server-cmd: {e}"))?;
    let ready = match ready {
        Some(Ready::Tcp(p)) => Some(Ready::Tcp(
            expand(p, values).map_err(|e| format!("--server-ready: {e}"))?,
        )),
        r => r.cloned(),
    };
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => return Err("--server-cmd: no directory for the server's output".into()),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let logs = vec![dir.join("server-stdout.txt"), dir.join("server-stderr.txt")];
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", &cmd_line])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    process::unblock_termination_signals_in_child(&mut cmd);
    if let Some(c) = &obs.cpus {
        process::pin_child(&mut cmd, c.cpus()).map_err(|e| format!("--server-cpus {c}: {e}"))?;
    }
    // Its own process group (Ctrl-C reaches only wirebench, which stops it
    // after the load; the whole group is what is observed) and its own
    // cgroup, with a guard: it never outlives wirebench.
    let prepared = crate::tree::prepare(&mut cmd, "server");
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            crate::tree::Tree::abandon(prepared);
            return Err(format!("--server-cmd: cannot start /bin/sh: {e}"));
        }
    };
    let pid = child.id();
    let tree = crate::tree::Tree::started(prepared, pid);
    // Each stream copied to its file (bounded), and its lines offered to
    // the ready pattern until it matches.
    let pattern = match &ready {
        Some(Ready::Line(r)) => Some(regex_lite::Regex::new(r).map_err(|e| e.to_string())?),
        _ => None,
    };
    let (tx, seen) = mpsc::channel::<()>();
    let outs: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().expect("piped")),
        Box::new(child.stderr.take().expect("piped")),
    ];
    let mut started = Started {
        child,
        pid,
        tree,
        logs: logs.clone(),
        captures: Vec::new(),
        stopped: false,
    };
    for ((out, path), name) in outs.into_iter().zip(&logs).zip(["stdout", "stderr"]) {
        let on_line = pattern.clone().map(|p| {
            let tx = tx.clone();
            Box::new(move |line: &str| {
                let matched = p.is_match(line);
                if matched {
                    let _ = tx.send(());
                }
                !matched
            }) as crate::capture::OnLine
        });
        started
            .captures
            .push(crate::capture::Capture::start(out, path, name, on_line)?);
    }
    drop(tx);
    let addr = match &ready {
        Some(Ready::Tcp(p)) => Some(format!("127.0.0.1:{p}")),
        Some(Ready::Line(_)) => None,
        None => endpoint.tcp_addr().map(str::to_string),
    };
    let unix = match (&ready, endpoint) {
        (None, Endpoint::Unix(p)) => Some(p.clone()),
        _ => None,
    };
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(s)) = started.child.try_wait() {
            started.stopped = true;
            started.tree.kill();
            let tail = started.tail();
            return Err(format!(
                "--server-cmd exited before it was ready ({}){tail}",
                process::describe(s)
            ));
        }
        let is_ready = match (&addr, &unix, &pattern) {
            (Some(a), _, _) => a
                .parse()
                .ok()
                .or_else(|| {
                    use std::net::ToSocketAddrs;
                    a.to_socket_addrs().ok()?.next()
                })
                .is_some_and(|sa| {
                    TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok()
                }),
            (None, Some(p), _) => std::os::unix::net::UnixStream::connect(p).is_ok(),
            _ => seen.try_recv().is_ok(),
        };
        if is_ready {
            return Ok(started);
        }
        if Instant::now() >= deadline {
            let what = ready
                .as_ref()
                .map(|r| r.to_string())
                .unwrap_or_else(|| format!("{endpoint} accepting"));
            let tail = started.tail();
            started.stop();
            return Err(format!(
                "--server-cmd was not ready ({what}) within {} s{tail}",
                READY_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Target for Observed {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn server_pid(&self) -> Option<u32> {
        match &self.started {
            Some(s) => Some(s.pid),
            None => self.procs.pids().first().copied(),
        }
    }

    fn procs(&self) -> Option<ServerProcs> {
        Some(self.procs.clone())
    }

    fn describe(&self) -> String {
        match (&self.started, &self.procs) {
            (Some(s), _) => format!("the server command (pid {})", s.pid),
            (None, ServerProcs::Cgroup(d)) => format!("the server's cgroup {}", d.display()),
            (None, ServerProcs::Pids(p)) => format!(
                "the observed server (pid {})",
                p.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (None, ServerProcs::Tree(t)) => {
                let p = t.roots();
                let given = p
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                // Its workers are observed too: said, with how many.
                match self.procs.pids().len().saturating_sub(p.len()) {
                    0 => format!("the observed server (pid {given})"),
                    more => format!(
                        "the observed server (pid {given} and {more} process(es) it started: {} in all)",
                        more + p.len()
                    ),
                }
            }
            (None, ServerProcs::Group(g)) => format!("the observed server (group {g})"),
        }
    }

    fn cpuset(&self) -> Option<Vec<usize>> {
        (!self.cpuset.is_empty()).then(|| self.cpuset.clone())
    }

    fn exited(&mut self, grace: Duration) -> Option<String> {
        let deadline = Instant::now() + grace;
        loop {
            let why = match &mut self.started {
                Some(s) => s.child.try_wait().ok().flatten().map(process::describe),
                None => self
                    .procs
                    .pids()
                    .is_empty()
                    .then(|| "has no process left".to_string()),
            };
            if why.is_some() || Instant::now() >= deadline {
                return why;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop(&mut self) -> Option<Stopped> {
        if self.done {
            return None;
        }
        self.done = true;
        let peak_rss_bytes = self.procs.peak_rss_bytes();
        let threads = self.watch.take().map(Watch::finish).unwrap_or_default();
        let pid = self.server_pid().unwrap_or(0);
        let exit = self.started.as_mut().and_then(Started::stop);
        Some(Stopped {
            report: ServerReport {
                pid,
                endpoint: self.endpoint.to_string(),
                stats: None,
                exit,
            },
            peak_rss_bytes,
            trace_file: None,
            threads,
            cpuset: self.cpuset.clone(),
            logs: self
                .started
                .as_ref()
                .map(|s| s.logs.clone())
                .unwrap_or_default(),
        })
    }
}

/// Adds to `groups` the thread groups the measured phase's looks (once a
/// second) missed and the watch (ten times a second) saw during
/// `window`: threads that began and ended between two looks. Each such
/// thread counts in its group with its CPU time in proportion to the part
/// of its seen life inside the window. That time was counted already, by
/// the processes' CPU: it is taken from the group of threads no look saw,
/// then from groups credited with more than the watch saw of them (the
/// groups of threads that ended, credited with what no thread explained).
pub fn add_unseen_groups(
    groups: &mut Vec<wirebench_core::result::GroupCpu>,
    threads: &[ThreadSeen],
    window: (std::time::Instant, std::time::Instant),
    measured_s: f64,
) {
    use wirebench_load::procs::{BETWEEN_LOOKS, thread_group};
    let (from, to) = window;
    // Per group: threads and CPU seconds the watch saw inside the window.
    let mut watched: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for t in threads {
        let (Some(first), Some(last)) = (t.first_seen, t.last_seen) else {
            continue;
        };
        if last < from || first > to {
            continue;
        }
        let life = last.duration_since(first).as_secs_f64();
        let inside = last.min(to).duration_since(first.max(from)).as_secs_f64();
        let share = if life > 0.0 { inside / life } else { 1.0 };
        let e = watched.entry(thread_group(&t.name)).or_default();
        e.0 += 1;
        e.1 += t.cpu_ns as f64 / 1e9 * share;
    }
    let pct = |cpu_s: f64| {
        if measured_s > 0.0 {
            100.0 * cpu_s / measured_s
        } else {
            0.0
        }
    };
    // A group the looks saw with fewer threads than the watch saw inside
    // the window (a thread per connection, some still unnamed at the first
    // look and gone by the last): the watch's count.
    for g in groups.iter_mut() {
        if let Some((n, _)) = watched.get(&g.group) {
            g.threads = g.threads.max(*n);
        }
    }
    let known: Vec<String> = groups.iter().map(|g| g.group.clone()).collect();
    for (group, (n, cpu_s)) in watched.iter().filter(|(g, _)| !known.contains(g)) {
        let mut left = *cpu_s;
        for g in groups.iter_mut() {
            let excess = if g.group == BETWEEN_LOOKS {
                g.cpu_s
            } else {
                let seen = watched.get(&g.group).map_or(0.0, |w| w.1);
                g.cpu_s - seen * 1.1 - 0.02
            };
            let moved = left.min(excess.max(0.0));
            g.cpu_s -= moved;
            g.cpu_pct = pct(g.cpu_s);
            left -= moved;
        }
        groups.push(wirebench_core::result::GroupCpu {
            group: group.clone(),
            threads: *n,
            cpu_s: *cpu_s,
            cpu_pct: pct(*cpu_s),
        });
    }
    groups.retain(|g| g.group != BETWEEN_LOOKS || g.cpu_s > 0.005);
    groups.sort_by(|x, y| y.cpu_s.total_cmp(&x.cpu_s).then(x.group.cmp(&y.group)));
}

/// The threads that ran outside `cpuset`, or may: from what the watch saw.
pub fn outside(
    threads: &[ThreadSeen],
    cpuset: &[usize],
) -> Vec<wirebench_core::result::OutsideThread> {
    let mut out: Vec<wirebench_core::result::OutsideThread> = threads
        .iter()
        .filter_map(|t| {
            let ran_outside: Vec<usize> = t
                .ran_on
                .iter()
                .copied()
                .filter(|c| !cpuset.contains(c))
                .collect();
            let wider = t.allowed.iter().any(|c| !cpuset.contains(c));
            (!ran_outside.is_empty() || wider).then(|| wirebench_core::result::OutsideThread {
                pid: t.pid,
                tid: t.tid,
                name: t.name.clone(),
                cpu_s: t.cpu_ns as f64 / 1e9,
                ran_outside,
                allowed: wider
                    .then(|| wirebench_core::topo::CpuList::from_cpus(t.allowed.clone()).ok())
                    .flatten(),
            })
        })
        .collect();
    out.sort_by(|a, b| b.cpu_s.total_cmp(&a.cpu_s).then(a.tid.cmp(&b.tid)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: the looks saw one of a group's three threads (the others
    /// unnamed at the first look, gone by the last); the watch saw all
    /// three inside the window: the group counts three, its CPU kept.
    #[test]
    fn a_group_counts_every_thread_the_watch_saw_in_the_window() {
        let now = std::time::Instant::now();
        let s = std::time::Duration::from_secs;
        let conn = |tid| ThreadSeen {
            tid,
            name: "echo-conn".into(),
            cpu_ns: 20_000_000,
            first_seen: Some(now + s(1)),
            last_seen: Some(now + s(2)),
            ..ThreadSeen::default()
        };
        let mut groups = vec![wirebench_core::result::GroupCpu {
            group: "echo-conn".into(),
            threads: 1,
            cpu_s: 0.08,
            cpu_pct: 8.0,
        }];
        add_unseen_groups(
            &mut groups,
            &[conn(1), conn(2), conn(3)],
            (now, now + s(3)),
            1.0,
        );
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(
            (groups[0].threads, groups[0].cpu_s),
            (3, 0.08),
            "{groups:?}"
        );
        // Threads seen only outside the window do not count.
        let mut groups = vec![wirebench_core::result::GroupCpu {
            group: "echo-conn".into(),
            threads: 1,
            cpu_s: 0.08,
            cpu_pct: 8.0,
        }];
        add_unseen_groups(
            &mut groups,
            &[conn(1), conn(2)],
            (now + s(5), now + s(6)),
            1.0,
        );
        assert_eq!(groups[0].threads, 1, "{groups:?}");
    }

    #[test]
    fn placeholders_expand_and_unknown_braces_stay() {
        let v = BTreeMap::from([("port", "7000".to_string()), ("clients", "4".into())]);
        assert_eq!(
            expand("srv --port {port} -c {clients} -j '{\"a\": 1}'", &v).unwrap(),
            "srv --port 7000 -c 4 -j '{\"a\": 1}'"
        );
        assert_eq!(
            expand("x {run_dir}/y", &v).unwrap_err(),
            "{run_dir} has no value in this run"
        );
        assert_eq!(expand("{", &v).unwrap(), "{");
    }

    #[test]
    fn outside_the_cpuset_by_running_or_by_affinity() {
        let t = |tid, ran_on: Vec<usize>, allowed: Vec<usize>| ThreadSeen {
            pid: 1,
            tid,
            name: format!("t{tid}"),
            ran_on,
            allowed,
            cpu_ns: tid as u64 * 1_000_000,
            ..ThreadSeen::default()
        };
        let seen = [
            t(1, vec![1], vec![1]),
            t(2, vec![0, 1], vec![0, 1]),
            t(3, vec![], vec![0, 1]),
        ];
        let o = outside(&seen, &[1]);
        assert_eq!(o.iter().map(|o| o.tid).collect::<Vec<_>>(), [3, 2]);
        assert_eq!(o[1].ran_outside, [0]);
        assert_eq!(o[0].ran_outside, Vec::<usize>::new());
        assert_eq!(o[0].allowed.as_ref().unwrap().to_string(), "0-1");
    }
}
