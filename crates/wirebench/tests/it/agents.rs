//! Load agents on "hosts" made of network namespaces: the test makes a hub
//! namespace holding a bridge and one namespace per host, joined to it by
//! veth pairs, with addresses (10.77.0.0/24) that exist only inside them.
//! The server and the coordinator run in host 0, the agents in the others.
//! They need root; without it they skip, unless $WIREBENCH_REQUIRE_NETNS
//! is set (as `.ci/run` does): then they fail.

use crate::helpers::write_secret;
use crate::helpers::{Proc, TempDir, running_with, shared};
use std::process::Command;
use std::time::Duration;
use wirebench_core::hist;
use wirebench_core::result::{RunResult, RunState};

/// Namespaces joined by a bridge, deleted (with what runs in them gone
/// first: declare this before the processes) when dropped.
pub(crate) struct Net {
    hub: String,
    hosts: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Net {
    /// `n` hosts, host `i` at 10.77.0.(i+1); None (the test skips) where
    /// namespaces cannot be made and they are not required.
    pub(crate) fn new(n: usize) -> Option<Net> {
        static K: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = K.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("wbit{}-{k}", std::process::id());
        let net = Net {
            hub: format!("{tag}-hub"),
            hosts: (0..n).map(|i| format!("{tag}-h{i}")).collect(),
        };
        match net.make() {
            Ok(()) => Some(net),
            Err(e) => {
                assert!(
                    std::env::var_os("WIREBENCH_REQUIRE_NETNS").is_none(),
                    "network namespaces are required ($WIREBENCH_REQUIRE_NETNS): {e}"
                );
                eprintln!("skipped: cannot make network namespaces ({e}); run as root");
                None
            }
        }
    }

    fn make(&self) -> Result<(), String> {
        let hub = self.hub.as_str();
        ip(&["netns", "add", hub])?;
        ip(&["-n", hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", hub, "link", "set", "br0", "up"])?;
        for (i, h) in self.hosts.iter().enumerate() {
            let v = format!("v{i}");
            ip(&["netns", "add", h])?;
            ip(&[
                "-n", hub, "link", "add", &v, "type", "veth", "peer", "name", "eth0", "netns", h,
            ])?;
            ip(&["-n", hub, "link", "set", &v, "master", "br0", "up"])?;
            ip(&[
                "-n",
                h,
                "addr",
                "add",
                &format!("{}/24", self.addr(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", h, "link", "set", "eth0", "up"])?;
            ip(&["-n", h, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    pub(crate) fn addr(&self, host: usize) -> String {
        format!("10.77.0.{}", host + 1)
    }

    /// wirebench with `args` in host `host`'s namespace (`ip netns exec`
    /// execs it: the PID is wirebench's).
    pub(crate) fn spawn(&self, host: usize, args: &[&str]) -> Proc {
        self.spawn_program(host, crate::helpers::BIN, args)
    }

    /// Another program in host `host`'s namespace.
    fn spawn_program(&self, host: usize, program: &str, args: &[&str]) -> Proc {
        let mut all = vec!["netns", "exec", self.hosts[host].as_str(), program];
        all.extend_from_slice(args);
        Proc::spawn_program("ip", &all)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = ip(&["netns", "del", h]);
        }
        let _ = ip(&["netns", "del", &self.hub]);
    }
}

/// A `wirebench serve` in host 0, on its network address.
pub(crate) fn server(net: &Net, extra: &[&str]) -> (Proc, String) {
    let listen = format!("tcp://{}:0", net.addr(0));
    let mut args = vec!["serve", "--listen", &listen, "--cpus", "0"];
    args.extend_from_slice(extra);
    let p = net.spawn(0, &args);
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("serve prints its listening event");
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let endpoint = v["endpoint"].as_str().unwrap().to_string();
    (p, endpoint)
}

/// An agent in host `host`, on its network address, port 7460.
pub(crate) fn agent(
    net: &Net,
    host: usize,
    token: &str,
    results: &TempDir,
    extra: &[&str],
) -> (Proc, String) {
    let addr = format!("{}:7460", net.addr(host));
    let listen = format!("tcp://{addr}");
    let mut args = vec![
        "agent",
        "--listen",
        &listen,
        "--token-file",
        token,
        "--results",
        results.str(),
    ];
    args.extend_from_slice(extra);
    let p = net.spawn(host, &args);
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("the agent prints where it listens");
    assert_eq!(first, format!("listening on {listen}"));
    (p, addr)
}

pub(crate) fn token_file(dir: &TempDir, secret: &str) -> String {
    let f = dir.path().join(format!("token-{}", secret.len()));
    write_secret(&f, secret);
    f.display().to_string()
}

/// `wirebench run --format json` in host 0: status, result, stderr.
pub(crate) fn coordinate(
    net: &Net,
    results: &TempDir,
    args: &[&str],
) -> (i32, Option<RunResult>, String) {
    let mut all = vec!["run", "--results", results.str(), "--format", "json"];
    all.extend_from_slice(args);
    let mut p = net.spawn(0, &all);
    let st = p.wait(Duration::from_secs(120));
    let out = p.stdout_all();
    let err = p.stderr_all();
    (
        st.code().unwrap_or(-1),
        serde_json::from_str(&out).ok(),
        err,
    )
}

/// Each agent's own result, from where the breakdown says it is kept.
pub(crate) fn parts(r: &RunResult) -> Vec<RunResult> {
    r.agents
        .iter()
        .map(|a| {
            let text = std::fs::read_to_string(std::path::Path::new(&a.dir).join("run.json"))
                .unwrap_or_else(|e| panic!("{}: {e}", a.dir));
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

pub(crate) const TOKEN: &str = "a-token-of-this-test-0123456789";

/// An agent on loopback without a token (`--insecure-no-token`) keeping
/// its parts in `results`, with `extra` flags, and where it listens.
pub(crate) fn loopback_agent(results: &TempDir, extra: &[&str]) -> (Proc, String) {
    let mut args = vec![
        "agent",
        "--listen",
        "tcp://127.0.0.1:0",
        "--insecure-no-token",
        "--results",
        results.str(),
    ];
    args.extend_from_slice(extra);
    bound(Proc::spawn(&args))
}

/// Two loopback agents (see [`loopback_agent`]) keeping their parts in
/// `dir`: their processes, and `--agents` for them.
pub(crate) fn two_loopback_agents(dir: &TempDir) -> ([Proc; 2], String) {
    let (a1, addr1) = loopback_agent(dir, &[]);
    let (a2, addr2) = loopback_agent(dir, &[]);
    ([a1, a2], format!("{addr1},{addr2}"))
}

/// `wirebench run` against `target` over `agents`, one client each, with
/// `args`: spawned.
pub(crate) fn run_on_agents(target: &str, agents: &str, args: &[&str]) -> Proc {
    let mut all = vec![
        "run",
        "--target",
        target,
        "--agents",
        agents,
        "--clients",
        "2",
    ];
    all.extend_from_slice(args);
    Proc::spawn(&all)
}

fn bound(p: Proc) -> (Proc, String) {
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("the agent prints where it listens");
    let addr = first
        .strip_prefix("listening on tcp://")
        .unwrap_or_else(|| panic!("not an address: {first}"))
        .to_string();
    (p, addr)
}

#[test]
fn two_agents_on_two_hosts_merge_exactly_and_measure_a_skewed_clock() {
    let _g = shared();
    let Some(net) = Net::new(3) else { return };
    let dir = TempDir::new("agents");
    let token = token_file(&dir, TOKEN);
    let (srv, endpoint) = server(&net, &[]);
    let (_a1, addr1) = agent(&net, 1, &token, &dir, &[]);
    // Agent 2's clock reads 3 s behind: its start instant must be given on
    // its own clock, and the offset measured within its uncertainty.
    let skew: i64 = -3_000_000_000;
    let (_a2, addr2) = agent(&net, 2, &token, &dir, &[&format!("--clock-skew-ns={skew}")]);
    let agents = format!("{addr1},{addr2}");
    let (code, r, err) = coordinate(
        &net,
        &dir,
        &[
            "--target",
            &endpoint,
            "--agents",
            &agents,
            "--token-file",
            &token,
            "--clients",
            "3",
            "--agent-weights",
            "2,1",
            "--duration",
            "3s",
            "--warmup",
            "1s",
        ],
    );
    let r = r.unwrap_or_else(|| panic!("no result (exit {code}): {err}"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(r.status.state, RunState::Complete);
    assert_eq!(r.spec.clients, 3);
    assert_eq!(r.agents.len(), 2);
    assert_eq!((r.agents[0].clients, r.agents[1].clients), (2, 1));
    // The coordinator's clock is host 0's; agent 2 reads 3 s less.
    let a2 = &r.agents[1];
    let off = a2.clock_offset_ns - skew;
    assert!(
        off.unsigned_abs() <= a2.clock_uncertainty_ns,
        "offset {} measured for a skew of {skew}: {off} ns off, uncertainty {}",
        a2.clock_offset_ns,
        a2.clock_uncertainty_ns
    );
    assert!(a2.clock_uncertainty_ns < 5_000_000, "{a2:?}");
    // The merge is exact: counts add up, and the merged histogram is the
    // sum of the parts' (not an average of their percentiles).
    let parts = parts(&r);
    assert!(
        parts
            .iter()
            .all(|p| p.summary.ops > 0 && p.spec.share.is_some())
    );
    assert_eq!(
        r.summary.ops,
        parts.iter().map(|p| p.summary.ops).sum::<u64>()
    );
    let mut sum = hist::new_hist();
    for p in &parts {
        sum.add(hist::decode(&p.latency_hist).unwrap()).unwrap();
    }
    let merged = hist::decode(&r.latency_hist).unwrap();
    assert_eq!(merged, sum);
    assert_eq!(r.summary.latency.count, r.summary.ops);
    // Seconds line up: every part has each second, and each merged second
    // is the sum of the parts' same second.
    assert_eq!(r.intervals.len(), 4);
    for (k, iv) in r.intervals.iter().enumerate() {
        let of_parts: Vec<u64> = parts.iter().map(|p| p.intervals[k].ops).collect();
        assert!(of_parts.iter().all(|&n| n > 0), "second {k}: {of_parts:?}");
        assert_eq!(iv.ops, of_parts.iter().sum::<u64>(), "second {k}");
    }
    // Both hosts' connections reached the server over the bridge.
    srv.signal(nix::sys::signal::Signal::SIGTERM);
    let stopped = srv
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("serve says it stopped");
    let v: serde_json::Value = serde_json::from_str(&stopped).unwrap();
    assert_eq!(v["stats"]["conns_accepted"], 3, "{stopped}");
}

#[test]
fn a_stopped_agent_degrades_the_run_and_the_window_with_every_agent_is_kept_apart() {
    let _g = shared();
    let Some(net) = Net::new(3) else { return };
    let dir = TempDir::new("agents-stop");
    let token = token_file(&dir, TOKEN);
    let (_srv, endpoint) = server(&net, &[]);
    let (_a1, addr1) = agent(&net, 1, &token, &dir, &[]);
    let (mut a2, addr2) = agent(&net, 2, &token, &dir, &[]);
    let agents = format!("{addr1},{addr2}");
    let mut args = vec!["run", "--results", dir.str(), "--format", "json"];
    let more = [
        "--target",
        &endpoint,
        "--agents",
        &agents,
        "--token-file",
        &token,
        "--clients",
        "2",
        "--duration",
        "12s",
        "--warmup",
        "0s",
    ];
    args.extend_from_slice(&more);
    let mut coord = net.spawn(0, &args);
    // A few seconds into the load, agent 2 stops answering (SIGSTOP).
    a2.stderr_until(Duration::from_secs(30), |l| {
        l.contains("coordinator accepted")
    });
    std::thread::sleep(Duration::from_secs(3));
    a2.signal(nix::sys::signal::Signal::SIGSTOP);
    let st = coord.wait(Duration::from_secs(60));
    let out = coord.stdout_all();
    let err = coord.stderr_all();
    a2.signal(nix::sys::signal::Signal::SIGCONT);
    assert_eq!(st.code(), Some(1), "{err}");
    let r: RunResult = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(r.status.state, RunState::Degraded, "{:?}", r.status);
    let why = r.status.reason.clone().unwrap();
    assert!(
        why.contains(&addr2) && why.contains("silent") && why.contains("partial"),
        "{why}"
    );
    // The other agent went on to the end; the lost one's seconds until the
    // loss are in the merge.
    assert_eq!(r.agents[0].state, RunState::Complete, "{:?}", r.agents[0]);
    assert_eq!(r.agents[1].state, RunState::Failed);
    assert!(
        r.agents[1].reason.as_deref().unwrap().starts_with("lost"),
        "{:?}",
        r.agents[1]
    );
    assert!(r.agents[1].ops > 0, "{:?}", r.agents[1]);
    assert_eq!(r.summary.ops, r.agents[0].ops + r.agents[1].ops);
    // Rates over the run's measured time, not the sum of the parts' rates.
    let rate = r.summary.ops as f64 * 1e9 / r.summary.measured_ns as f64;
    assert!(
        (r.summary.ops_per_s / rate - 1.0).abs() < 1e-9,
        "{} vs {rate}",
        r.summary.ops_per_s
    );
    // The seconds from the loss on are partial, those before are not, and
    // the window with every agent is reported apart.
    let k = r
        .intervals
        .iter()
        .position(|iv| iv.partial)
        .expect("partial seconds");
    assert!(k >= 1, "no second before the loss");
    assert!(r.intervals[k..].iter().all(|iv| iv.partial));
    assert_eq!(r.intervals.len(), 12);
    let w = r
        .agents_window
        .as_ref()
        .expect("the window with every agent");
    assert_eq!(w.to_s, r.intervals[k - 1].end_ns as f64 / 1e9);
    let before: u64 = r.intervals[..k].iter().map(|iv| iv.ops).sum();
    assert_eq!(w.ops, before);
    assert_eq!(w.latency.count, before);
}

#[test]
fn a_wrong_token_and_another_build_are_refused_by_name() {
    let _g = shared();
    let dir = TempDir::new("agents-refused");
    let token = token_file(&dir, TOKEN);
    let wrong = token_file(&dir, "another-token-of-this-test-0123456789");
    let srv = crate::helpers::Server::start(&[]);
    let start = |extra: &[&str]| {
        let mut args = vec![
            "agent",
            "--listen",
            "tcp://127.0.0.1:0",
            "--token-file",
            &token,
        ];
        args.extend_from_slice(extra);
        let p = Proc::spawn(&args);
        bound(p)
    };
    let run = |addr: &str, token: Option<&str>| {
        let mut args = vec![
            "run",
            "--results",
            dir.str(),
            "--target",
            &srv.endpoint,
            "--agents",
            addr,
            "--duration",
            "1s",
        ];
        if let Some(t) = token {
            args.extend(["--token-file", t]);
        }
        let mut p = Proc::spawn(&args);
        let st = p.wait(Duration::from_secs(60));
        (st.code(), p.stderr_all())
    };
    let (_good, addr) = start(&[]);
    let (code, err) = run(&addr, Some(&wrong));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "agent {addr}: refused: the coordinator's token does not match"
        )),
        "{err}"
    );
    let (code, err) = run(&addr, None);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("it requires a token"), "{err}");
    let fake = "f".repeat(64);
    let (_other, addr) = start(&["--pretend-sha256", &fake]);
    let (code, err) = run(&addr, Some(&token));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("build mismatch: the coordinator runs wirebench"),
        "{err}"
    );
    assert!(
        err.contains("sha256 ffffffffffffffff"),
        "both sides named: {err}"
    );
    // Beyond loopback without a token: refused before listening.
    let mut p = Proc::spawn(&["agent", "--listen", "tcp://0.0.0.0:0"]);
    let st = p.wait(Duration::from_secs(20));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("--listen 0.0.0.0:0 is reachable beyond this host"),
        "{err}"
    );
    srv.stop();
}

#[test]
fn an_agent_launched_over_ssh_makes_its_part_and_goes_with_the_run() {
    let _g = shared();
    let Some(net) = Net::new(2) else { return };
    let sshd = "/usr/sbin/sshd";
    if !std::path::Path::new(sshd).exists() {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_NETNS").is_none(),
            "{sshd} is required (openssh-server)"
        );
        eprintln!("skipped: no {sshd}");
        return;
    }
    let dir = TempDir::new("agents-ssh");
    // What the launched agent leaves in root's home (a cache of the binary,
    // its parts' results) is removed at the end unless it was there before.
    let cache = std::path::Path::new("/root/.cache/wirebench");
    let cache_results = cache.join("results");
    let had_results = cache_results.exists();
    let had_copies: Vec<_> = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    let key = |name: &str| {
        let f = dir.path().join(name);
        let st = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&f)
            .status()
            .unwrap();
        assert!(st.success());
        f
    };
    let host_key = key("host_key");
    let id = key("id");
    let authorized = dir.path().join("authorized_keys");
    std::fs::copy(id.with_extension("pub"), &authorized).unwrap();
    let sshd_config = dir.path().join("sshd_config");
    std::fs::write(
        &sshd_config,
        format!(
            "Port 22\nListenAddress {}\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n",
            net.addr(1),
            host_key.display(),
            authorized.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let mut sshd_proc =
        net.spawn_program(1, sshd, &["-D", "-e", "-f", sshd_config.to_str().unwrap()]);
    sshd_proc.stderr_until(Duration::from_secs(20), |l| {
        l.contains("Server listening on")
    });
    let ssh_config = dir.path().join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            id.display()
        ),
    )
    .unwrap();
    let (_srv, endpoint) = server(&net, &[]);
    let launch = format!("ssh:root@{}", net.addr(1));
    let mut all = vec!["run", "--results", dir.str(), "--format", "json"];
    let more = [
        "--target",
        &endpoint,
        "--launch",
        &launch,
        "--ssh-config",
        ssh_config.to_str().unwrap(),
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "1s",
    ];
    all.extend_from_slice(&more);
    let mut coord = net.spawn(0, &all);
    let st = coord.wait(Duration::from_secs(120));
    let out = coord.stdout_all();
    let err = coord.stderr_all();
    assert_eq!(st.code(), Some(0), "{err}");
    let r: RunResult = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(r.status.state, RunState::Complete);
    assert_eq!(r.agents.len(), 1);
    let a = &r.agents[0];
    assert_eq!(a.agent, launch);
    assert_eq!(a.clients, 2);
    assert!(a.ops > 0 && a.ops == r.summary.ops, "{a:?}");
    assert!(err.contains(&format!("{launch}: agent started")), "{err}");
    // The part is kept there (here: the same file system).
    let part = std::path::Path::new(&a.dir);
    assert!(part.join("run.json").exists(), "{}", a.dir);
    // Nothing stays: no agent, no control socket.
    let mut left = running_with("--token-stdin");
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = running_with("--token-stdin");
    }
    assert!(left.is_empty(), "agents left running: {left:?}");
    let control = std::env::temp_dir().join(format!("wirebench-ssh-{}", coord.pid));
    assert!(!control.exists(), "{}", control.display());
    let _ = std::fs::remove_dir_all(part);
    if !had_results {
        let _ = std::fs::remove_dir_all(&cache_results);
    }
    for e in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        let p = e.path();
        if !had_copies.contains(&p) && e.file_name().to_string_lossy().starts_with("wirebench-") {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[test]
fn an_indexed_jobs_agents_are_reached_by_their_names_and_complete() {
    let _g = shared();
    let dir = TempDir::new("agents-k8s");
    let token = token_file(&dir, TOKEN);
    let srv = crate::helpers::Server::start(&[]);
    // The manifests, as a user renders them.
    let out = dir.path().join("manifests");
    let mut p = Proc::spawn(&[
        "k8s",
        "render",
        "--replicas",
        "2",
        "--image",
        "wb:test",
        "--name",
        "wb",
        "--target",
        &srv.endpoint,
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "1s",
        "-o",
        out.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(30));
    assert!(st.success(), "{}", p.stderr_all());
    let job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("coordinator-job.json")).unwrap())
            .unwrap();
    let mut args: Vec<String> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let names: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--agents")
        .map(|w| w[1].clone())
        .collect();
    assert_eq!(
        names,
        ["wb-agents-0.wb-agents:7460", "wb-agents-1.wb-agents:7460"]
    );
    // Here: the pods' results directory is ours, the token a file.
    let at = args.iter().position(|a| a == "--results").unwrap();
    args[at + 1] = dir.str().to_string();
    args.extend([
        "--format".into(),
        "json".into(),
        "--token-file".into(),
        token.clone(),
    ]);
    // Two agents as the Job starts them, each with its index.
    let start = |index: usize| {
        let env = format!("JOB_COMPLETION_INDEX={index}");
        let p = Proc::spawn_program(
            "env",
            &[
                &env,
                crate::helpers::BIN,
                "agent",
                "--listen",
                "tcp://127.0.0.1:0",
                "--runs",
                "1",
                "--token-file",
                &token,
                // Its parts in the test's directory, not the crate's.
                "--results",
                dir.str(),
            ],
        );
        bound(p)
    };
    let coordinate = |map: String| {
        let resolve = format!("WIREBENCH_TEST_RESOLVE={map}");
        let mut all = vec![resolve.as_str(), crate::helpers::BIN];
        all.extend(args.iter().map(String::as_str));
        let mut p = Proc::spawn_program("env", &all);
        let st = p.wait(Duration::from_secs(60));
        (st.code(), p.stdout_all(), p.stderr_all())
    };
    let (mut a0, addr0) = start(0);
    let (mut a1, addr1) = start(1);
    let (code, out, err) = coordinate(format!("{}={addr0},{}={addr1}", names[0], names[1]));
    assert_eq!(code, Some(0), "{err}");
    let r: RunResult = serde_json::from_str(&out).unwrap();
    let parts: Vec<&str> = r.agents.iter().map(|a| a.agent.as_str()).collect();
    assert_eq!(parts, names);
    assert!(r.agents.iter().all(|a| a.ops > 0));
    // Each agent made its one run and exited: the Job completes.
    for a in [&mut a0, &mut a1] {
        let st = a.wait(Duration::from_secs(30));
        assert!(st.success(), "{st}");
    }
    // A name that reaches the wrong pod is refused.
    let (_b0, addr0) = start(0);
    let (_b1, addr1) = start(1);
    let (code, _, err) = coordinate(format!("{}={addr1},{}={addr0}", names[0], names[1]));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("it is agent 1 of its Job (JOB_COMPLETION_INDEX), not 0"),
        "{err}"
    );
    srv.stop();
}

#[test]
fn a_sweep_runs_each_point_on_the_agents() {
    let _g = shared();
    let dir = TempDir::new("agents-sweep");
    let srv = crate::helpers::Server::start(&[]);
    let start = || loopback_agent(&dir, &[]);
    let (_a1, addr1) = start();
    let (_a2, addr2) = start();
    let spec = dir.path().join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"agents\"\n[base]\ntarget = \"{}\"\nagents = [\"{addr1}\", \"{addr2}\"]\nclients = 2\nduration = \"1s\"\nwarmup = \"0s\"\n[matrix]\ndepth = [1, 4]\n",
            srv.endpoint
        ),
    )
    .unwrap();
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "sweep",
        spec.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(120));
    assert!(st.success(), "{}", p.stderr_all());
    let mut depths = Vec::new();
    for e in std::fs::read_dir(results.join("agents")).unwrap().flatten() {
        let f = e.path().join("run.json");
        if !f.exists() {
            continue;
        }
        let r: RunResult = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r.agents.len(), 2, "{:?}", r.agents);
        assert_eq!(r.summary.ops, r.agents.iter().map(|a| a.ops).sum::<u64>());
        depths.push(r.spec.depth);
    }
    depths.sort_unstable();
    assert_eq!(depths, [1, 4]);
    srv.stop();
}

#[test]
fn several_endpoints_are_split_across_agents_with_a_breakdown_each() {
    let _g = shared();
    let dir = TempDir::new("agents-endpoints");
    let s1 = crate::helpers::Server::start(&[]);
    let s2 = crate::helpers::Server::start(&[]);
    let start = || loopback_agent(&dir, &[]);
    let (_a1, addr1) = start();
    let (_a2, addr2) = start();
    let (_a3, addr3) = start();
    let targets = format!("{},{}", s1.endpoint, s2.endpoint);
    let agents = format!("{addr1},{addr2},{addr3}");
    let (st, r, err) = crate::helpers::run_json(
        &dir,
        &[
            "--target",
            &targets,
            "--agents",
            &agents,
            "--clients",
            "3",
            "--duration",
            "2s",
            "--warmup",
            "1s",
        ],
    );
    assert!(st.success(), "{err}");
    // Agents 1 and 3 go to the first endpoint, agent 2 to the second.
    assert_eq!(r.endpoints.len(), 2, "{:?}", r.endpoints);
    assert_eq!(r.endpoints[0].endpoint, s1.endpoint);
    assert_eq!(r.endpoints[0].agents, [addr1.clone(), addr3.clone()]);
    assert_eq!(r.endpoints[1].agents, std::slice::from_ref(&addr2));
    assert!(r.endpoints.iter().all(|e| e.ops > 0));
    assert_eq!(
        r.summary.ops,
        r.endpoints.iter().map(|e| e.ops).sum::<u64>()
    );
    let by_agent = |a: &str| r.agents.iter().find(|p| p.agent == a).unwrap().ops;
    assert_eq!(r.endpoints[0].ops, by_agent(&addr1) + by_agent(&addr3));
    // Each server saw the connections of its agents only.
    assert_eq!(s1.stop()["conns_accepted"], 2);
    assert_eq!(s2.stop()["conns_accepted"], 1);
    // Two fake S3 servers: each agent prepares, reads and cleans up its
    // own objects on its endpoint.
    let fake = || {
        let p = Proc::spawn(&[
            "serve",
            "--transport",
            "s3",
            "--listen",
            "tcp://127.0.0.1:0",
        ]);
        let first = p.stdout.recv_timeout(Duration::from_secs(20)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        (p, v["endpoint"].as_str().unwrap().to_string())
    };
    let (_f1, e1) = fake();
    let (_f2, e2) = fake();
    let targets = format!("{e1},{e2}");
    let agents = format!("{addr1},{addr2}");
    let (st, r, err) = crate::helpers::run_json(
        &dir,
        &[
            "--target",
            &targets,
            "--agents",
            &agents,
            "--workload",
            "get",
            "--objects",
            "20",
            "--clients",
            "2",
            "--duration",
            "2s",
            "--warmup",
            "1s",
        ],
    );
    assert!(st.success(), "{err}");
    let got: Vec<(&str, &[String])> = r
        .endpoints
        .iter()
        .map(|e| (e.endpoint.as_str(), e.agents.as_slice()))
        .collect();
    assert_eq!(
        got,
        [
            (e1.as_str(), std::slice::from_ref(&addr1)),
            (e2.as_str(), std::slice::from_ref(&addr2))
        ]
    );
    assert!(
        r.endpoints.iter().all(|e| e.ops > 0 && e.errors == 0),
        "{:?}",
        r.endpoints
    );
    assert_eq!(r.summary.by_op["get"].ops, r.summary.ops);
    assert_eq!(
        r.summary.ops,
        r.endpoints.iter().map(|e| e.ops).sum::<u64>()
    );
}

#[test]
fn an_agent_that_sends_seconds_out_of_order_is_failed_not_believed() {
    use std::io::{BufRead, BufReader, Write};
    let _g = shared();
    let dir = TempDir::new("agents-hostile");
    let srv = crate::helpers::Server::start(&[]);
    // A peer that passes the handshake (no token on loopback; it echoes the
    // coordinator's build) and then reports a second far ahead.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut say = |v: serde_json::Value| {
            writeln!(w, "{v}").unwrap();
        };
        say(serde_json::json!({"hello": {"protocol": 1, "nonce": "ab", "token": false}}));
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            let m: serde_json::Value = serde_json::from_str(&line).unwrap();
            line.clear();
            if let Some(a) = m.get("auth") {
                say(serde_json::json!({"welcome": {"proof": null, "build": a["build"]}}));
            } else if let Some(p) = m.get("probe") {
                let t = p["t1"].as_u64().unwrap();
                say(serde_json::json!({"probe": {"t1": t, "t2": t, "t3": t}}));
            } else if m.get("prepare").is_some() {
                say(serde_json::json!({"ready": {"connect_ns": 1000}}));
            } else if m.get("start").is_some() {
                let iv = wirebench_core::result::Interval {
                    start_ns: 0,
                    end_ns: 1_000_000_000,
                    phase: wirebench_core::result::Phase::Measure,
                    ops: 1,
                    bytes_out: 0,
                    bytes_in: 0,
                    errors: 0,
                    ops_per_s: 1.0,
                    sent: 1,
                    latency: Default::default(),
                    service_latency: Default::default(),
                    latency_hist: String::new(),
                    client_cores: vec![],
                    server_cores: vec![],
                    hiccup_max_ns: None,
                    hiccup_lost_ns: None,
                    stalled: false,
                    partial: false,
                    program_busy_pct: vec![],
                    server_groups: vec![],
                };
                say(serde_json::json!({"interval": {"index": 1_000_000, "interval": iv}}));
            }
        }
    });
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--target",
        &srv.endpoint,
        "--agents",
        &addr,
        "--duration",
        "5s",
        "--warmup",
        "0s",
    ]);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "agent {addr}: it sent second 1000000, where second 0"
        )),
        "{err}"
    );
    drop(p);
    let _ = peer.join();
    srv.stop();
}

#[test]
fn repeated_runs_on_the_agents_are_one_group() {
    let _g = shared();
    let dir = TempDir::new("agents-repeat");
    let srv = crate::helpers::Server::start(&[]);
    let start = |runs: &[&str]| loopback_agent(&dir, runs);
    let (_a1, addr1) = start(&[]);
    // This one makes two parts, then exits by itself.
    let (mut a2, addr2) = start(&["--runs", "2"]);
    let agents = format!("{addr1},{addr2}");
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "run",
        "--target",
        &srv.endpoint,
        "--agents",
        &agents,
        "--clients",
        "2",
        "--repeat",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--results",
        results.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(120));
    let out = p.stdout_all();
    assert!(st.success(), "{}", p.stderr_all());
    assert!(
        out.contains("compare and report take it as one variant"),
        "{out}"
    );
    // One group directory, with a run per repetition, each merged from
    // both agents' parts.
    let groups: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&groups[0]).unwrap().flatten() {
        let f = e.path().join("run.json");
        if !f.exists() {
            continue;
        }
        let r: RunResult = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r.status.state, RunState::Complete);
        assert_eq!(r.agents.len(), 2, "{:?}", r.agents);
        assert!(r.agents.iter().all(|a| a.ops > 0));
        assert_eq!(r.summary.ops, r.agents.iter().map(|a| a.ops).sum::<u64>());
        names.push(r.run_id.rsplit('-').nth(1).unwrap().to_string());
    }
    names.sort();
    assert_eq!(names, ["r1", "r2"]);
    let st = a2.wait(Duration::from_secs(20));
    assert!(st.success(), "the agent of 2 runs exits after them: {st}");
    // Each repetition connected each agent's client anew.
    assert_eq!(srv.stop()["conns_accepted"], 4);
}

/// Issue 38: stages over load agents. Each agent sends its share of every
/// stage (its connections' part of the one timetable), started at one
/// instant: the merged seconds make each stage's rate, and each part half
/// of it.
#[test]
fn issue_38_a_staged_open_loop_over_two_agents_keeps_each_stage_between_them() {
    let _g = shared();
    let dir = TempDir::new("agents-stages");
    let srv = crate::helpers::Server::start(&[]);
    let (_agents, agents) = two_loopback_agents(&dir);
    let results = dir.path().join("results");
    let mut p = run_on_agents(
        &srv.endpoint,
        &agents,
        &[
            "--stages",
            "2s:400/s, 2s:400->1200/s",
            "--warmup",
            "1s",
            "--format",
            "json",
            "--results",
            results.to_str().unwrap(),
        ],
    );
    let st = p.wait(Duration::from_secs(120));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    let r: RunResult = serde_json::from_str(&p.stdout_all()).unwrap();
    assert_eq!(r.agents.len(), 2);
    let asked: Vec<f64> = r.stages.iter().map(|s| s.asked_per_s).collect();
    assert_eq!(asked, [400.0, 800.0], "{:?}", r.stages);
    for s in &r.stages {
        // Sent on the timetable (a send late past its second would show).
        let off = (s.sent_per_s - s.asked_per_s).abs() / s.asked_per_s;
        assert!(
            off < 0.05,
            "stage {}: sent {}/s of {}/s",
            s.text,
            s.sent_per_s,
            s.asked_per_s
        );
        assert!(s.completed_per_s > 0.0);
    }
    // Each part made half of each stage, and was asked half: it kept up.
    for part in parts(&r) {
        assert_eq!(part.stages.len(), 2, "{:?}", part.stages);
        for (mine, all) in part.stages.iter().zip(&r.stages) {
            let share = mine.sent_per_s / all.sent_per_s;
            assert!(
                (share - 0.5).abs() < 0.05,
                "a part's share of {}: {share}",
                all.text
            );
            assert_eq!(mine.asked_per_s, all.asked_per_s / 2.0, "{mine:?}");
            assert!(mine.kept_up, "{mine:?}");
        }
        assert!(
            !part
                .warnings
                .iter()
                .any(|w| w.to_string().contains("fell behind")),
            "{:?}",
            part.warnings
        );
    }
    assert!(
        !r.warnings
            .iter()
            .any(|w| w.to_string().contains("fell behind")),
        "{:?}",
        r.warnings
    );
    let _ = srv.stop();
}

/// Issue 38: `--abort-on-fail` over agents. The coordinator judges each
/// window on the merged seconds (an agent alone would judge its part);
/// the first miss stops every part, and the run is saved complete, saying
/// why, and exits 3.
#[test]
fn issue_38_abort_on_fail_over_agents_stops_them_all_at_the_first_missed_window() {
    let _g = shared();
    let dir = TempDir::new("agents-abort");
    // Every answer waits 2 ms: a p99 under 1 ms misses the first window.
    let srv = crate::helpers::Server::start(&["--delay", "2ms"]);
    let (_agents, agents) = two_loopback_agents(&dir);
    let results = dir.path().join("results");
    let began = std::time::Instant::now();
    let mut p = run_on_agents(
        &srv.endpoint,
        &agents,
        &[
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--slo",
            "p99<1ms over 2s",
            "--abort-on-fail",
            "--format",
            "json",
            "--results",
            results.to_str().unwrap(),
        ],
    );
    let st = p.wait(Duration::from_secs(60));
    let took = began.elapsed();
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(took < Duration::from_secs(20), "ended after {took:?}");
    let r: RunResult = serde_json::from_str(&p.stdout_all()).unwrap();
    assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
    let why = r.status.reason.clone().unwrap_or_default();
    assert!(
        why.starts_with("ended after 2 s by --abort-on-fail: p99<1ms"),
        "{why}"
    );
    assert_eq!(r.agents.len(), 2);
    assert!(
        r.summary.measured_ns < 10_000_000_000,
        "{}",
        r.summary.measured_ns
    );
    assert!(!r.slos[0].pass, "{:?}", r.slos);
    let _ = srv.stop();
}
