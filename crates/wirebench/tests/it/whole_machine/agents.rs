//! The tests of `agents` that need the machine to themselves (see `whole_machine`).

use crate::agents::*;
use crate::helpers::{Proc, TempDir, exclusive};
use std::time::Duration;
use wirebench_core::result::{RunResult, RunState};

#[test]
fn an_open_loop_split_over_three_agents_keeps_its_rate_and_shows_a_stall() {
    let _g = exclusive();
    let Some(net) = Net::new(4) else { return };
    let dir = TempDir::new("agents-open");
    let token = token_file(&dir, TOKEN);
    let (_srv, endpoint) = server(&net, &["--stall", "100ms/1s"]);
    let mut addrs = Vec::new();
    let mut procs = Vec::new();
    for h in 1..=3 {
        let (p, a) = agent(&net, h, &token, &dir, &[]);
        procs.push(p);
        addrs.push(a);
    }
    let agents = addrs.join(",");
    let ms = |ns: u64| ns as f64 / 1e6;
    // A stall of this VM next to one of the server's adds to it at p99, so
    // one run of three must show exactly the server's.
    let mut seen = Vec::new();
    for _ in 0..3 {
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
                "--rate",
                "1200",
                "--depth",
                "1",
                "--duration",
                "6s",
                "--warmup",
                "0s",
            ],
        );
        let r = r.unwrap_or_else(|| panic!("no result (exit {code}): {err}"));
        assert_eq!(code, 0, "{err}");
        // The agents' timetables interleave into the run's: the total
        // within 2%.
        let sent = r.summary.sent_per_s;
        assert!(
            (sent / 1200.0 - 1.0).abs() < 0.02,
            "sent {sent}/s of 1200/s"
        );
        assert_eq!(r.summary.requested_rate_per_s, Some(1200.0));
        for a in &r.agents {
            let asked = a.requested_rate_per_s.unwrap();
            assert!((asked - 400.0).abs() < 1e-6, "{a:?}");
        }
        // Latency from the intended send time: the 100 ms stalls show at
        // p99, the service time does not have them.
        assert!(
            ms(r.summary.service_latency.p50_ns) < 20.0,
            "{:?}",
            r.summary.service_latency
        );
        let p99 = ms(r.summary.latency.p99_ns);
        seen.push((p99, r.summary.hiccup.map(|h| ms(h.max_ns))));
        if (60.0..=115.0).contains(&p99) {
            break;
        }
    }
    assert!(
        seen.last()
            .is_some_and(|&(p99, _)| (60.0..=115.0).contains(&p99)),
        "p99 and worst hiccup (ms) of each try: {seen:?}"
    );
}

#[test]
fn an_agent_holds_ten_thousand_connections_at_under_64_kib_each() {
    let _g = exclusive();
    // The server and the agent each need ~10,000 descriptors: they raise
    // their soft limit to the hard one, which must allow it.
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    if hard < 10_500 {
        crate::helpers::skip(format!(
            "the hard limit of open files is {hard}, below 10,500"
        ));
        return;
    }
    let dir = TempDir::new("agents-conns");
    let srv = crate::helpers::Server::start(&[]);
    let endpoint = srv.endpoint.clone();
    let (_agent, addr) = loopback_agent(&dir, &[]);
    let rss = |conns_per_client: &str| {
        let (st, r, err) = crate::helpers::run_json(
            &dir,
            &[
                "--target",
                &endpoint,
                "--agents",
                &addr,
                "--clients",
                "2",
                "--conns-per-client",
                conns_per_client,
                "--duration",
                "2s",
                "--warmup",
                "1s",
            ],
        );
        assert!(st.success(), "{err}");
        assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
        assert_eq!(
            r.spec.connections(),
            2 * conns_per_client.parse::<usize>().unwrap()
        );
        r.summary.client_peak_rss_bytes as f64
    };
    let base = rss("100");
    let full = rss("5000");
    let per_conn = (full - base) / 9_800.0;
    assert!(
        per_conn < 64.0 * 1024.0,
        "{:.1} KiB per connection ({:.1} MiB with 200, {:.1} MiB with 10,000)",
        per_conn / 1024.0,
        base / 1048576.0,
        full / 1048576.0
    );
    eprintln!(
        "agent RSS: {:.1} MiB with 200 connections, {:.1} MiB with 10,000: {:.1} KiB per connection",
        base / 1048576.0,
        full / 1048576.0,
        per_conn / 1024.0
    );
}

#[test]
fn a_search_runs_each_step_on_the_agents() {
    let _g = exclusive();
    let dir = TempDir::new("agents-search");
    // One worker x 1 ms: a capacity of 1,000 requests/s.
    let srv = crate::helpers::Server::start(&["--service", "1ms", "--workers", "1"]);
    let start = || loopback_agent(&dir, &[]);
    let (_a1, addr1) = start();
    let (_a2, addr2) = start();
    let agents = format!("{addr1},{addr2}");
    let mut p = Proc::spawn(&[
        "search",
        "--target",
        &srv.endpoint,
        "--agents",
        &agents,
        "--clients",
        "2",
        // An objective that only a server far behind misses (at twice its
        // capacity, p99 is about 170 ms): with p99<20ms, the VM's stalls
        // failed steps at 300/s and 600/s, and the bisection below them
        // used up the steps before any step fell behind (CI, twice). What
        // this test checks is that each step runs on the agents and that
        // the saturation is found, not the objective.
        "--slo",
        "p99<1s",
        "--start-rate",
        "300",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--max-steps",
        "10",
        "--results",
        dir.str(),
        "--format",
        "json",
    ]);
    let st = p.wait(Duration::from_secs(240));
    let out = p.stdout_all();
    // Done, or out of steps (exit 5): either way every step was measured.
    assert!(
        st.success() || st.code() == Some(5),
        "{st}: {}",
        p.stderr_all()
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() >= 3, "{v}");
    let search_dir = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("search.json").is_file())
        .expect("the search's directory");
    for s in steps {
        // Each step is a run of the two agents at the step's rate, merged.
        let id = s["run_id"].as_str().unwrap();
        let text = std::fs::read_to_string(search_dir.join(id).join("run.json")).unwrap();
        let r: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(r.spec.rate_per_s, s["rate_per_s"].as_f64(), "{id}");
        let parts: Vec<&str> = r.agents.iter().map(|a| a.agent.as_str()).collect();
        assert_eq!(parts, [addr1.as_str(), addr2.as_str()], "{id}");
        assert_eq!(
            r.summary.ops,
            r.agents.iter().map(|a| a.ops).sum::<u64>(),
            "{id}"
        );
        // A step measured again pools its tries' seconds: its figure is
        // theirs, the last run's only when it had one try.
        if s["tries"].as_u64() == Some(1) {
            assert_eq!(s["completed_per_s"].as_f64(), Some(r.summary.ops_per_s));
        }
    }
    // Twice the capacity asked: the server fell behind, near its capacity.
    let saturation = v["saturation_ops_per_s"].as_f64().expect("saturated");
    assert!(
        (800.0..=1100.0).contains(&saturation),
        "saturation {saturation}/s"
    );
    srv.stop();
}
