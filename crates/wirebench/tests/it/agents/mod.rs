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

mod hosts;
mod parts;
mod pods;

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
                crate::helpers::skip(format!("cannot make network namespaces ({e}); run as root"));
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
