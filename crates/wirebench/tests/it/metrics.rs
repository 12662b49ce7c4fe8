//! Issue 38: live metrics (`--metrics-listen`), scraped by a real
//! Prometheus while a run over two load agents works, and checked through
//! PromQL against the merged run.json.

use crate::agents::{run_on_agents, two_loopback_agents};
use crate::fixtures::daemon::free_port;
use crate::fixtures::prometheus::{Prometheus, get, prometheus_bin};
use crate::helpers::write_secret;
use crate::helpers::{Proc, Server, TempDir, shared};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use wirebench_core::result::RunResult;

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn issue_38_prometheus_scrapes_a_run_over_two_agents_and_promql_agrees_with_run_json() {
    let _g = shared();
    let Some(bin) = prometheus_bin() else { return };
    let dir = TempDir::new("metrics-agents");
    let srv = Server::start(&[]);
    let (_agents, agents) = two_loopback_agents(&dir);
    let metrics = format!("127.0.0.1:{}", free_port());
    // One scrapes the text page (classic buckets), the other protobuf
    // (native histograms too).
    let classic = Prometheus::start(&bin, &metrics, false);
    let native = Prometheus::start(&bin, &metrics, true);
    let results = dir.path().join("results");
    let mut p = run_on_agents(
        &srv.endpoint,
        &agents,
        &[
            "--rate",
            "2000",
            "--warmup",
            "2s",
            "--duration",
            "6s",
            "--metrics-listen",
            &metrics,
            "--metrics-hold",
            "3s",
            "--format",
            "json",
            "--results",
            results.to_str().unwrap(),
        ],
    );
    let st = p.wait(Duration::from_secs(90));
    // The last scrapes were of the final figures, held for 3 s.
    let at = unix_now() - 0.2;
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(
        err.contains(&format!("metrics: http://{metrics}/metrics")),
        "{err}"
    );
    let r: RunResult = serde_json::from_str(&p.stdout_all()).unwrap();
    assert_eq!(r.agents.len(), 2);

    // Both agents' series, under their addresses; summed, every operation
    // of the merged run.
    let measure = "{job=\"wirebench\",phase=\"measure\"}";
    for prom in [&classic, &native] {
        let agents = prom.value(&format!("count(wirebench_operations_total{measure})"), at);
        assert_eq!(agents, 2.0);
        let ops = prom.value(&format!("sum(wirebench_operations_total{measure})"), at);
        assert_eq!(ops, r.summary.ops as f64, "operations scraped vs run.json");
    }

    // p99 from the classic buckets: within the bucket (2^(1/4) wide) that
    // holds run.json's p99.
    let want = r.summary.latency.p99_ns as f64 / 1e9;
    let p99 = classic.value(
        &format!(
            "histogram_quantile(0.99, sum by (le) (wirebench_latency_seconds_bucket{measure}))"
        ),
        at,
    );
    let width = 2f64.powf(0.25);
    assert!(
        p99 >= want / width && p99 <= want * width,
        "PromQL p99 {p99} s (classic) vs run.json {want} s"
    );
    // p99 from the native histogram: within its bucket (2^(1/8) wide).
    let p99n = native.value(
        &format!("histogram_quantile(0.99, sum(wirebench_latency_seconds{measure}))"),
        at,
    );
    let width = 2f64.powf(0.125);
    assert!(
        p99n >= want / width && p99n <= want * width,
        "PromQL p99 {p99n} s (native) vs run.json {want} s"
    );
    let count = native.value(
        &format!("histogram_count(sum(wirebench_latency_seconds{measure}))"),
        at,
    );
    assert_eq!(count, r.summary.ops as f64);

    // rate() in the measured phase's last seconds (it ended 3 s before the
    // process did): the rate the run sent at, as run.json has it.
    let sent_rate = r.summary.messages_sent as f64 / (r.summary.measured_ns as f64 / 1e9);
    let rate = classic.value(
        &format!("sum(rate(wirebench_sent_total{measure}[3s]))"),
        at - 3.5,
    );
    assert!(
        (rate - sent_rate).abs() / sent_rate < 0.15,
        "PromQL rate {rate}/s vs run.json {sent_rate}/s"
    );
    // Every query of the Grafana dashboard is valid PromQL and, but for
    // what this run has none of (stages, typed operations), has data: the
    // schedule's lag too, which agents stream with their seconds.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/grafana/wirebench.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let q = expr
                .replace("$__rate_interval", "3s")
                .replace("$phase", "measure")
                .replace("$job", ".*")
                .replace("$transport", ".*")
                .replace("$run", ".*")
                .replace("$agent", ".*");
            assert!(!q.contains('$'), "a variable left in {q}");
            let got = classic.query(&q, at - 3.5);
            let none_here = ["wirebench_stage", "asked_rate", "operation_latency"];
            if !none_here.iter().any(|n| q.contains(n)) {
                assert!(!got.is_empty(), "no data for the dashboard's {expr}");
            }
            queries += 1;
        }
    }
    assert!(queries >= 15, "{queries} queries");
    eprintln!(
        "run.json p99 {want} s; PromQL p99 {p99} s (classic), {p99n} s (native); rate {rate}/s vs {sent_rate}/s; {count} operations"
    );
    drop((classic, native));
    let _ = srv.stop();
}

#[test]
fn issue_38_metrics_need_a_token_off_loopback_and_serve_only_their_page() {
    let _g = shared();
    // Off loopback without a token: refused, naming the flag.
    let mut p = Proc::spawn(&["run", "--duration", "1s", "--metrics-listen", "0.0.0.0:0"]);
    let st = p.wait(Duration::from_secs(30));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("--metrics-listen") && err.contains("--metrics-token-file"),
        "{err}"
    );
    // Commands that serve none say so.
    let dir = TempDir::new("metrics-token");
    let mut p = Proc::spawn(&["flame", "--metrics-listen", "127.0.0.1:0"]);
    let st = p.wait(Duration::from_secs(30));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("`flame` serves no live metrics"), "{err}");

    // With a token: a scrape without it is refused, one with it served.
    let token = dir.path().join("token");
    write_secret(&token, "metrics-token-0123456789\n");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut p = Proc::spawn(&[
        "run",
        "--stages",
        "1s:200/s, 2s:200->400/s",
        "--warmup",
        "0s",
        "--metrics-listen",
        &addr,
        "--metrics-token-file",
        token.to_str().unwrap(),
        "--results",
        dir.path().join("results").to_str().unwrap(),
    ]);
    p.stderr_until(Duration::from_secs(30), |l| l.starts_with("metrics: "));
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let bearer = [("Authorization", "Bearer metrics-token-0123456789")];
        // Once a second is in: an open loop's lag, and its stage.
        if let Some((200, body)) = get(&addr, "/metrics", &bearer)
            && body.contains("wirebench_schedule_lag_seconds_count{")
        {
            break body;
        }
        assert!(Instant::now() < deadline, "no page with the token");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(page.contains("wirebench_running{"), "{page}");
    assert!(
        page.contains("\nwirebench_stage{run=\"1\",transport=\"msgr\"} "),
        "{page}"
    );
    assert!(
        page.contains("\nwirebench_asked_rate_per_second{"),
        "{page}"
    );
    let (status, _) = get(&addr, "/metrics", &[]).unwrap();
    assert_eq!(status, 401);
    let (status, _) = get(&addr, "/metrics", &[("Authorization", "Bearer wrong")]).unwrap();
    assert_eq!(status, 401);
    let bearer = [("Authorization", "Bearer metrics-token-0123456789")];
    let (status, _) = get(&addr, "/", &bearer).unwrap();
    assert_eq!(status, 404);
    // OpenMetrics when asked, ending as it must.
    let om = [
        bearer[0],
        ("Accept", "application/openmetrics-text; version=1.0.0"),
    ];
    let (status, body) = get(&addr, "/metrics", &om).unwrap();
    assert_eq!(status, 200);
    assert!(body.ends_with("# EOF\n"), "{body}");
    let st = p.wait(Duration::from_secs(30));
    assert!(st.success(), "{}", p.stderr_all());
}

/// A sweep's runs serve their metrics on the sweep's address in turn, each
/// labelled by its point (and the sweep has no live view). Issue 47: the
/// live-metrics flags are part of a run's request, so a spec file sets them
/// as well as `sweep --metrics-listen`, and the sweep hands them to its runs
/// in their requests (no argv rebuilt): both ways are tried.
#[test]
fn issue_38_a_sweep_serves_each_runs_metrics_labelled_by_its_point() {
    let _g = shared();
    let dir = TempDir::new("metrics-sweep");
    for (i, in_spec) in [false, true].into_iter().enumerate() {
        let addr = format!("127.0.0.1:{}", free_port());
        let spec = dir.path().join(format!("two-{i}.toml"));
        let listen = match in_spec {
            true => format!("metrics_listen = \"{addr}\"\n"),
            false => String::new(),
        };
        std::fs::write(
            &spec,
            format!("name = \"two\"\n[base]\nduration = \"3s\"\nwarmup = \"0s\"\n{listen}[matrix]\nclients = [1, 2]\n"),
        )
        .unwrap();
        let results = dir.path().join(format!("results-{i}"));
        let mut args = vec![
            "sweep".to_string(),
            spec.to_str().unwrap().to_string(),
            "--results".to_string(),
            results.to_str().unwrap().to_string(),
        ];
        if !in_spec {
            args.extend(["--metrics-listen".to_string(), addr.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut p = Proc::spawn(&args);
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut points = std::collections::BTreeSet::new();
        while points.len() < 2 && Instant::now() < deadline {
            if let Some((200, page)) = get(&addr, "/metrics", &[]) {
                for line in page.lines().filter(|l| l.starts_with("wirebench_running{")) {
                    if let Some(p) = line.split("point=\"").nth(1) {
                        points.insert(p.split('"').next().unwrap().to_string());
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let st = p.wait(Duration::from_secs(120));
        let err = p.stderr_all();
        assert!(st.success(), "{err}");
        if !in_spec {
            assert!(
                err.contains(&format!("metrics: http://{addr}/metrics")),
                "{err}"
            );
        }
        let want: std::collections::BTreeSet<String> =
            ["clients=1", "clients=2"].map(String::from).into();
        assert_eq!(points, want, "in the spec: {in_spec}: {err}");
    }
    let spec = dir.path().join("two-0.toml");
    // No live view for a sweep.
    let mut p = Proc::spawn(&["sweep", spec.to_str().unwrap(), "--live"]);
    let st = p.wait(Duration::from_secs(30));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("--live: `sweep` has no live view"), "{err}");
}

/// Issue 46: with `--metrics-token-file`, 20 peers without the token that
/// drip their headers held the 16 connection slots before the token was
/// checked, and 16 of 19 authorised scrapes failed. A connection now waits
/// for its first request apart; only one past the token takes a serving
/// slot: every authorised scrape is served while the drippers drip, and a
/// peer without the token is answered 401 and closed.
#[test]
fn issue_46_peers_without_the_token_cannot_keep_a_scraper_out() {
    let _g = shared();
    let dir = TempDir::new("metrics-drip");
    let token = dir.path().join("token");
    write_secret(&token, "metrics-token-0123456789\n");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut p = Proc::spawn(&[
        "run",
        "--rate",
        "200",
        "--duration",
        "20s",
        "--warmup",
        "0s",
        "--metrics-listen",
        &addr,
        "--metrics-token-file",
        token.to_str().unwrap(),
        "--results",
        dir.path().join("results").to_str().unwrap(),
    ]);
    p.stderr_until(Duration::from_secs(30), |l| l.starts_with("metrics: "));
    // 20 drippers: a request line, then a header byte now and then.
    let mut drippers: Vec<std::net::TcpStream> = (0..20)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    let bearer = [("Authorization", "Bearer metrics-token-0123456789")];
    let mut served = 0;
    for _ in 0..19 {
        for d in &mut drippers {
            let _ = d.write_all(b"X");
        }
        if let Some((200, body)) = get(&addr, "/metrics", &bearer) {
            served += usize::from(body.contains("wirebench_running{"));
        }
    }
    assert_eq!(served, 19, "authorised scrapes served while 20 peers drip");
    // Without the token: 401, and the connection is closed after it.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    drop(drippers);
    p.signal(nix::sys::signal::Signal::SIGINT);
    p.wait(Duration::from_secs(30));
}

/// The CPU time and the allowed CPUs of the thread of `pid` named `name`.
fn thread_of(pid: u32, name: &str) -> Option<(f64, String)> {
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let dir = t.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = after.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of stat, 12 and 13 after ')'.
        let ticks: f64 = f[11].parse::<f64>().ok()? + f[12].parse::<f64>().ok()?;
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
            .trim()
            .to_string();
        return Some((ticks / 100.0, allowed));
    }
    None
}

/// Issue 46: about 100 scrapes a second took the metrics thread 2.9 s of
/// CPU in 4 s (a page rendered for each) and 23% of a closed loop's
/// throughput. The page is now rendered once per second of the board and
/// served from that copy, and the thread is kept off the client's CPUs:
/// 100 scrapes a second for 3 s take it well under a tenth of a CPU, and
/// it may not run on the client's CPU.
#[test]
fn issue_46_a_hundred_scrapes_a_second_cost_the_run_little_and_not_its_cpus() {
    let _g = shared();
    let topo = wirebench_core::topo::Topology::read().usable();
    if topo.cpus().len() < 2 {
        crate::helpers::skip("one CPU, nowhere off the client's to serve from");
        return;
    }
    let client = topo.cpus()[0].to_string();
    let dir = TempDir::new("metrics-cost");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut p = Proc::spawn(&[
        "run",
        "--duration",
        "8s",
        "--warmup",
        "0s",
        "--client-cpus",
        &client,
        "--metrics-listen",
        &addr,
        "--results",
        dir.path().join("results").to_str().unwrap(),
    ]);
    p.stderr_until(Duration::from_secs(30), |l| l.starts_with("metrics: "));
    // Let the run start (the thread is moved when it does).
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = |b: &str| {
        b.lines()
            .any(|l| l.starts_with("wirebench_running{") && l.ends_with(" 1.0"))
    };
    while !matches!(get(&addr, "/metrics", &[]), Some((200, b)) if running(&b)) {
        assert!(Instant::now() < deadline, "the run did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (cpu0, allowed) = thread_of(p.pid, "wb-metrics").expect("the metrics thread");
    let began = Instant::now();
    let mut scrapes = 0;
    while began.elapsed() < Duration::from_secs(3) {
        let tick = Instant::now();
        if let Some((200, _)) = get(&addr, "/metrics", &[]) {
            scrapes += 1;
        }
        if let Some(rest) = Duration::from_millis(10).checked_sub(tick.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    let (cpu1, _) = thread_of(p.pid, "wb-metrics").expect("the metrics thread");
    let wall = began.elapsed().as_secs_f64();
    let st = p.wait(Duration::from_secs(30));
    assert!(st.success(), "{}", p.stderr_all());
    assert!(scrapes >= 150, "{scrapes} scrapes in {wall:.1} s");
    let share = (cpu1 - cpu0) / wall;
    assert!(
        share < 0.10,
        "the metrics thread used {:.0}% of a CPU for {scrapes} scrapes in {wall:.1} s",
        100.0 * share
    );
    assert!(
        !allowed
            .split(',')
            .any(|r| r == client || r.starts_with(&format!("{client}-"))),
        "the metrics thread may run on the client's CPU {client}: {allowed}"
    );
}
