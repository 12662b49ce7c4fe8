//! A run's load split among agents: endpoints, seconds out of order,
//! repetitions, stages and objectives over agents.

use super::*;

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
                    program_in_flight: None,
                    server_share: vec![],
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
