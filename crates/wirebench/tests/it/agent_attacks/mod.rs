//! Issue 35: the load agent against hostile peers, each attack of the
//! issue made by hand: a coordinator without the token, with a forged
//! proof or a forged request hash, one that sends a command or a file to
//! overwrite, peers that drip bytes or send endless lines, a flood of
//! connections under a low descriptor limit, and a second coordinator
//! beside a running one.

use crate::hardening::{cpu_ticks, status_kib};
use crate::helpers::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirebench_core::request::RunRequest;
use wirebench_runner::auth::{self, Token};

mod allowed;

const TOKEN: &str = "the-token-of-the-attack-tests-0123456789";

/// An agent on loopback with `args`, and where it listens.
fn agent(args: &[&str]) -> (Proc, String) {
    let mut all = vec!["agent", "--listen", "tcp://127.0.0.1:0"];
    all.extend_from_slice(args);
    let p = Proc::spawn(&all);
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

/// The build id of the binary under test, as an attacker computes it.
fn build() -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "git_revision": wirebench_runner::GIT_REVISION,
        "sha256": auth::sha256_file(std::path::Path::new(BIN)).unwrap(),
    })
}

/// A coordinator written by hand: JSON lines over TCP.
struct Peer {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Peer {
    /// Connected, with the agent's hello read.
    fn connect(addr: &str) -> (Peer, Value) {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut p = Peer {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        };
        let hello = p.hear().expect("a hello");
        (p, hello["hello"].clone())
    }

    fn say(&mut self, v: Value) -> std::io::Result<()> {
        writeln!(self.w, "{v}")
    }

    /// The next message; None when the agent closed.
    fn hear(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.r.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
        }
    }

    /// The handshake with `proof`; the agent's answer.
    fn auth(&mut self, proof: Value) -> Option<Value> {
        self.say(json!({"auth": {"protocol": 1, "proof": proof, "nonce": "00", "build": build()}}))
            .ok()?;
        self.hear()
    }

    /// Sends `req` as a part, with its true hash unless `hash` is given.
    fn prepare(&mut self, req: Value, hash: Option<&str>) -> std::io::Result<()> {
        let parsed: RunRequest = serde_json::from_value(req).unwrap();
        let ours = auth::sha256(&serde_json::to_vec(&parsed).unwrap());
        let hash = hash.unwrap_or(&ours);
        self.say(json!({"prepare": {"request": parsed, "hash": hash}}))
    }

    /// Messages until a `done` or `failed` (None: the agent closed), with a
    /// beat for each, as a coordinator says something every second; a
    /// `ready` is answered with the start.
    fn outcome(&mut self) -> Option<Value> {
        loop {
            let m = self.hear()?;
            if m.get("done").is_some() || m.get("failed").is_some() {
                return Some(m);
            }
            if m.get("ready").is_some() {
                self.say(json!({"start": {"at_ns": 0}})).ok()?;
            }
            self.say(json!("beat")).ok()?;
        }
    }
}

/// The proof of `TOKEN` over the agent's challenge in `hello`.
fn proof(hello: &Value) -> Value {
    let t = Token::new(TOKEN).unwrap();
    json!(t.prove("coordinator", hello["nonce"].as_str().unwrap()))
}

#[test]
fn issue_35_an_agent_needs_a_token_unless_told_otherwise_on_loopback() {
    let _g = shared();
    let mut p = Proc::spawn(&["agent", "--listen", "tcp://127.0.0.1:0"]);
    let st = p.wait(Duration::from_secs(20));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--token-file is required: an agent runs the load any coordinator with its token sends"
        ),
        "{err}"
    );
    assert!(err.contains("--insecure-no-token"), "{err}");
    let mut p = Proc::spawn(&[
        "agent",
        "--listen",
        "tcp://0.0.0.0:0",
        "--insecure-no-token",
    ]);
    let st = p.wait(Duration::from_secs(20));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("0.0.0.0:0 is reachable beyond this host"),
        "{err}"
    );
    // Without a token, every line it logs says so.
    let (mut a, addr) = agent(&["--insecure-no-token"]);
    drop(TcpStream::connect(&addr).unwrap());
    let (mut peer, _) = Peer::connect(&addr);
    assert!(peer.auth(Value::Null).unwrap().get("welcome").is_some());
    drop(peer);
    a.stderr_until(Duration::from_secs(10), |l| {
        l.contains("closed the connection")
    });
    assert!(
        a.stderr_seen
            .iter()
            .filter(|l| !l.starts_with("warning: this is a debug build"))
            .all(|l| l.starts_with("agent: (insecure: no token) ")),
        "{:#?}",
        a.stderr_seen
    );
}

#[test]
fn issue_35_no_token_a_forged_proof_or_hash_and_a_command_run_nothing() {
    let _g = shared();
    let dir = TempDir::new("agent-attack-cmd");
    let token = dir.path().join("token");
    write_secret(&token, TOKEN);
    let marker = dir.path().join("pwned");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let results = dir.path().join("agent-results");
    let (_a, addr) = agent(&[
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let cmd = json!({
        "transport": "exec",
        "client_cmd": format!("id > {}; echo ops=1 seconds=1", marker.display()),
        "parser": r"regex:ops=(?P<ops>\d+) seconds=(?P<seconds>[0-9.]+)",
        "duration": "1s",
    });
    // No proof, then a forged one: refused, and what follows is not read.
    for forged in [Value::Null, json!("ab".repeat(32))] {
        let (mut peer, hello) = Peer::connect(&addr);
        assert_eq!(hello["token"], true);
        let answer = peer.auth(forged.clone()).unwrap();
        let why = answer["refused"]["why"].as_str().unwrap_or_default();
        assert!(why.contains("token does not match"), "{forged}: {answer}");
        let _ = peer.prepare(cmd.clone(), None);
        assert!(peer.hear().is_none(), "the agent closed after refusing");
    }
    // The token, with a forged request hash: refused.
    let (mut peer, hello) = Peer::connect(&addr);
    let answer = peer.auth(proof(&hello)).unwrap();
    assert!(answer.get("welcome").is_some(), "{answer}");
    peer.prepare(cmd.clone(), Some(&"0".repeat(64))).unwrap();
    let m = peer.outcome().unwrap();
    let why = m["failed"]["why"].as_str().unwrap();
    assert!(why.contains("request hash mismatch"), "{why}");
    // The token and the true hash: a command, and files to overwrite, are
    // still refused without --allow-exec.
    peer.prepare(cmd.clone(), None).unwrap();
    let m = peer.outcome().unwrap();
    let why = m["failed"]["why"].as_str().unwrap();
    assert!(
        why.contains(
            "an exec run (--transport exec) runs only on an agent started with --allow-exec"
        ),
        "{why}"
    );
    let target = "tcp://127.0.0.1:9";
    for (req, needle) in [
        (
            json!({"target": target, "hlog": victim, "force": true}),
            "--force is not part of an agent's share",
        ),
        (
            json!({"target": target, "hlog": victim}),
            "a file to write (--hlog) runs only on an agent started with --allow-exec",
        ),
        (
            json!({"target": target, "server_env": {"LD_PRELOAD": "/tmp/x.so"}}),
            "--server-env",
        ),
        (
            json!({"target": target, "launch": ["ssh:127.0.0.1"]}),
            "--launch",
        ),
    ] {
        peer.prepare(req.clone(), None).unwrap();
        let m = peer.outcome().unwrap();
        let why = m["failed"]["why"].as_str().unwrap();
        assert!(why.contains(needle), "{req}: {why}");
    }
    drop(peer);
    assert!(!marker.exists(), "a refused command ran");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // An operator's choice: with --allow-exec the same part runs, and its
    // files stay in the agent's results directory.
    let (_b, addr) = agent(&[
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--allow-exec",
    ]);
    let (mut peer, hello) = Peer::connect(&addr);
    assert!(peer.auth(proof(&hello)).unwrap().get("welcome").is_some());
    peer.prepare(
        json!({"target": target, "hlog": victim, "duration": "1s"}),
        None,
    )
    .unwrap();
    let m = peer.outcome().unwrap();
    let why = m["failed"]["why"].as_str().unwrap();
    assert!(
        why.contains("an agent writes only under its results directory"),
        "{why}"
    );
    peer.prepare(cmd, None).unwrap();
    let m = peer.outcome().unwrap();
    assert!(m.get("done").is_some(), "{m}");
    assert!(marker.exists(), "--allow-exec ran the command");
    let dir_of_part = m["done"]["dir"].as_str().unwrap();
    assert!(
        std::path::Path::new(dir_of_part).starts_with(results.canonicalize().unwrap()),
        "{dir_of_part}"
    );
}

/// The agent's thread count.
fn threads(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Whether the agent closed `s` within its read timeout.
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn issue_35_drippers_and_endless_lines_hold_no_thread_and_little_memory() {
    let _g = shared();
    let dir = TempDir::new("agent-attack-drip");
    let token = dir.path().join("token");
    write_secret(&token, TOKEN);
    let (a, addr) = agent(&[
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        dir.str(),
    ]);
    let before = threads(a.pid);
    // 300 peers, each dripping a byte every second before the handshake.
    let t0 = Instant::now();
    let mut drips: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let mut most = 0;
    while t0.elapsed() < Duration::from_secs(4) {
        for s in &mut drips {
            let _ = s.write_all(b"{");
        }
        most = most.max(threads(a.pid));
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(
        most <= before,
        "no thread per connection before the handshake: {before} threads idle, {most} with 300 drippers"
    );
    // Each is closed by the handshake's deadline (5 s), dripping or not.
    for s in &mut drips {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(closed(s), "a dripping peer is closed");
    }
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "closed in {:?}",
        t0.elapsed()
    );
    // A line of 4 MiB before the handshake, then after it: cut off at
    // 64 KiB and 1 MiB, the agent's memory not grown by them.
    let chunk = vec![b'x'; 1 << 20];
    for after_handshake in [false, true] {
        let (mut peer, hello) = Peer::connect(&addr);
        if after_handshake {
            assert!(peer.auth(proof(&hello)).unwrap().get("welcome").is_some());
        }
        let mut sent = 0;
        for _ in 0..4 {
            if peer.w.write_all(&chunk).is_err() {
                break;
            }
            sent += 1;
        }
        assert!(peer.hear().is_none(), "closed after {sent} MiB");
    }
    let hwm = status_kib(a.pid, "VmHWM:") as f64 / 1024.0;
    assert!(hwm < 64.0, "peak RSS {hwm:.1} MiB");
    // And the agent still serves a coordinator.
    let (mut peer, hello) = Peer::connect(&addr);
    assert!(peer.auth(proof(&hello)).unwrap().get("welcome").is_some());
}

#[test]
fn issue_35_out_of_descriptors_the_agent_waits_and_logs_once_a_second() {
    let _g = shared();
    let dir = TempDir::new("agent-attack-emfile");
    let mut p = Proc::spawn_program(
        "prlimit",
        &[
            "--nofile=64:64",
            BIN,
            "agent",
            "--listen",
            "tcp://127.0.0.1:0",
            "--insecure-no-token",
            "--results",
            dir.str(),
        ],
    );
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("listening");
    let addr = first
        .strip_prefix("listening on tcp://")
        .unwrap()
        .to_string();
    let conns: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    p.stderr_until(Duration::from_secs(10), |l| l.contains("accept failed"));
    let (t0, c0, lines0) = (Instant::now(), cpu_ticks(p.pid), p.stderr_seen.len());
    std::thread::sleep(Duration::from_secs(3));
    let busy = (cpu_ticks(p.pid) - c0) as f64 / 100.0 / t0.elapsed().as_secs_f64();
    p.stderr_all_until(Duration::from_millis(200));
    let logged = p.stderr_seen[lines0..].len();
    drop(conns);
    assert!(busy < 0.1, "the agent used {:.0}% of a CPU", busy * 100.0);
    assert!(
        logged <= 10,
        "{logged} lines in 3 s: {:#?}",
        &p.stderr_seen[lines0..]
    );
}

#[test]
fn issue_35_a_second_coordinator_does_not_touch_the_running_part() {
    let _g = shared();
    let dir = TempDir::new("agent-attack-second");
    let srv = Server::start(&[]);
    let (mut a, addr) = agent(&["--insecure-no-token", "--results", dir.str()]);
    let run = |duration: &str| {
        Proc::spawn(&[
            "run",
            "--results",
            dir.str(),
            "--format",
            "json",
            "--target",
            &srv.endpoint,
            "--agents",
            &addr,
            "--duration",
            duration,
            "--warmup",
            "0s",
        ])
    };
    let mut first = run("8s");
    a.stderr_until(Duration::from_secs(20), |l| {
        l.contains("coordinator accepted")
    });
    // A connection that comes and goes, one that completes the handshake
    // and closes, and a second real coordinator: each turned away.
    drop(TcpStream::connect(&addr).unwrap());
    let (mut peer, _) = Peer::connect(&addr);
    let answer = peer.auth(Value::Null).unwrap();
    let why = answer["refused"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("is using this agent (one at a time)"),
        "{answer}"
    );
    drop(peer);
    let mut second = run("1s");
    let st = second.wait(Duration::from_secs(60));
    let err = second.stderr_all();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("is using this agent (one at a time)"), "{err}");
    // The first run is whole.
    let st = first.wait(Duration::from_secs(60));
    let err = first.stderr_all();
    assert!(st.success(), "{err}");
    let r: wirebench_core::result::RunResult = serde_json::from_str(&first.stdout_all()).unwrap();
    assert_eq!(r.status.state, wirebench_core::result::RunState::Complete);
    assert!(r.summary.ops > 0);
    srv.stop();
}
