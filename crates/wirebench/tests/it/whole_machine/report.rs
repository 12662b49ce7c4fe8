//! The tests of `report` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;
use crate::report::*;
use std::path::Path;
use std::time::Duration;

#[test]
fn compare_says_same_within_noise_for_twins_and_faster_for_a_real_gain() {
    let _g = exclusive();
    // A and B: the same spec, against a server that holds every response
    // 2 ms. C: the embedded server without a delay, many times A's ops/s on
    // any machine (busy-polling, which this test used before, gains 1.4x
    // to 4x depending on how fast the VM's CPUs are that day).
    let slow = Server::start(&["--delay", "2ms"]);
    let target = slow.endpoint.clone();
    // Twins are never told apart. The gain may be: in a noisy spell of
    // this VM, C's three runs read 8.7k +- 12.0k ops/s in CI, and compare
    // rightly said the 29x was within that noise; so a second set of runs
    // may show it.
    let (mut tries, mut found) = (Vec::new(), false);
    for attempt in 0..2 {
        let dir = TempDir::new(&format!("compare{attempt}"));
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        for _ in 0..3 {
            run_into(&a, &["--target", &target]);
            run_into(&b, &["--target", &target]);
            run_into(&c, &[]);
        }
        let mut p = Proc::spawn(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            c.to_str().unwrap(),
        ]);
        assert!(p.wait(Duration::from_secs(30)).success());
        let out = p.stdout_all();
        let ops = out
            .lines()
            .find(|l| l.starts_with("| ops/s |"))
            .expect("an ops/s row");
        let cells: Vec<String> = ops.split('|').map(|c| c.trim().to_string()).collect();
        // | ops/s | A | B | B/A | B vs A | C | C/A | C vs A |
        assert_eq!(cells[5], "same within noise", "{out}");
        assert!(cells[2].contains("(n=3)"), "{out}");
        found = cells[8] == "faster";
        tries.push(out);
        if found {
            assert!(
                cells[7].parse::<f64>().unwrap() > 1.5,
                "{}",
                tries.join("\n")
            );
            break;
        }
    }
    slow.stop();
    assert!(
        found,
        "C's gain was not seen in two sets of runs:\n{}",
        tries.join("\n")
    );
}

#[test]
fn a_traced_run_of_more_events_than_its_rings_traces_every_operation_or_says_what_it_lost() {
    let _g = exclusive();
    let dir = TempDir::new("trace-long");
    // 40,000 operations (4 client events each), not 5 s: with the VM's
    // CPUs 25-70% stolen, 5 s made 19,489 operations in CI, one ring's
    // worth.
    let (st, r, err) = run_json(
        &dir,
        &[
            "--trace", "--count", "40000", "--warmup", "0s", "--depth", "1",
        ],
    );
    assert!(st.success(), "{err}");
    let c = r.trace.as_ref().expect("a traced run counts its trace");
    // Over 65,536 events a thread: more than one ring, so the drain did
    // its job (a dump at the end would have kept only the last ring).
    assert!(c.client_events > 2 * 65_536, "{c:?}");
    let run_dir = only_run_dir(&dir);
    let text = std::fs::read_to_string(run_dir.join("trace-client.txt")).unwrap();
    let t = wirebench_trace::parse(&text).unwrap();
    assert_eq!(t.lost, Some(c.client_lost));
    let ends = t.events.iter().filter(|e| e.name == "end").count() as u64;
    assert_eq!(ends, c.client_ended);
    if c.client_lost == 0 {
        // Every operation completed is traced; one more may have ended
        // after the measured phase closed (depth 1, one connection).
        assert!(
            c.client_ended.abs_diff(r.summary.ops) <= 1,
            "traced {} of {} ops: {c:?}",
            c.client_ended,
            r.summary.ops
        );
    } else {
        assert!(
            r.warnings
                .iter()
                .any(|w| w.to_string().contains("trace lost")),
            "{:?}",
            r.warnings
        );
    }
    assert!(err.contains("operations traced to their end"), "{err}");
    // The server's trace too, with its own count.
    assert_eq!(c.server_lost, Some(0), "{c:?}");
    assert!(c.server_events.unwrap() > 2 * 65_536, "{c:?}");
}

#[test]
fn a_traced_run_gives_a_timeline_that_adds_up_to_its_latency() {
    let _g = exclusive();
    let dir = TempDir::new("trace");
    let (st, r, err) = run_json(&dir, &["--trace", "--duration", "2s", "--warmup", "200ms"]);
    assert!(st.success(), "{err}");
    assert_eq!(r.spec.trace_sample, Some(1));
    let run_dir = only_run_dir(&dir);
    let (client, server) = (
        run_dir.join("trace-client.txt"),
        run_dir.join("trace-server.txt"),
    );
    assert!(client.exists() && server.exists(), "{err}");
    let out = timeline(&[client.to_str().unwrap()]);
    // begin, request sent, response received, end: the last event's mean
    // cumulative time is a round trip, as the run measured it.
    let ns = cumulative_mean_ns(&out, "response received");
    let lat = r.summary.latency.mean_ns;
    assert!(
        (ns - lat).abs() < 0.15 * lat,
        "timeline {ns} ns vs measured mean latency {lat} ns\n{out}"
    );
    let out = timeline(&[server.to_str().unwrap()]);
    for ev in ["request parsed", "reply queued", "reply sent"] {
        row(&out, ev);
    }
    // Client and server merged by time: the server's events fall between
    // the request's sending and the response's arrival.
    let out = timeline(&[
        "--merge",
        client.to_str().unwrap(),
        server.to_str().unwrap(),
    ]);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.rsplit_once("] ").map(|x| x.1))
        .filter(|n| !n.is_empty())
        .collect();
    let i = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n}: {out}"))
    };
    // Each event named by its side, begin and end included.
    assert!(
        i("client: request sent") < i("server: request parsed"),
        "{out}"
    );
    assert!(
        i("server: reply sent") < i("client: response received"),
        "{out}"
    );
    assert!(i("client: begin") < i("server: begin"), "{out}");
    assert!(i("server: end") < i("client: end"), "{out}");
    // The run's directory stands for both files, merged.
    let by_dir = timeline(&[run_dir.to_str().unwrap()]);
    assert!(by_dir.contains("] client: response received"), "{by_dir}");
    assert!(by_dir.contains("] server: reply sent"), "{by_dir}");
    // The run's report carries both timelines and their CDFs.
    let page = dir.path().join("traced.html");
    let html = report_page(&[run_dir.to_str().unwrap()], &page);
    assert!(html.contains("Timeline of the client") && html.contains("Timeline of the server"));
    // Each event's CDF, titled by its number and name, its x the time
    // since the previous event.
    assert!(html.contains("2. response received"));
    assert!(html.contains("time since the previous event"));
}

#[test]
fn shm_s3_and_one_way_runs_are_traced_on_both_sides() {
    let _g = exclusive();
    let cases: [(&[&str], &[&str], &[&str]); 3] = [
        (
            &["--transport", "shm", "--wait", "futex"],
            &["begin", "request sent", "response received", "end"],
            &[
                "begin",
                "request received",
                "reply written",
                "reply sent",
                "end",
            ],
        ),
        (
            &["--transport", "s3"],
            &[
                "begin",
                "headers sent",
                "response headers",
                "first body byte",
                "end",
            ],
            &["begin", "handled", "end"],
        ),
        (
            // At a rate the trace drains keep up with: unbounded, one-way
            // sends outrun them, and the drains' losses (each reported)
            // can leave a shape of one side the most common.
            &["--mode", "oneway", "--rate", "20000"],
            &["begin", "request sent", "end"],
            &["begin", "request received", "end"],
        ),
    ];
    for (args, client_events, server_events) in cases {
        let dir = TempDir::new("trace-transports");
        let mut all = vec!["--trace", "--duration", "2s", "--warmup", "200ms"];
        all.extend_from_slice(args);
        let (st, r, err) = run_json(&dir, &all);
        assert!(st.success(), "{args:?}: {err}");
        let c = r.trace.as_ref().expect("a traced run counts its trace");
        assert!(c.client_ended > 1000, "{args:?}: {c:?}");
        assert!(c.server_events.unwrap() > 1000, "{args:?}: {c:?}");
        let run_dir = only_run_dir(&dir);
        let (client, server) = (
            run_dir.join("trace-client.txt"),
            run_dir.join("trace-server.txt"),
        );
        let out = timeline(&[client.to_str().unwrap()]);
        for ev in client_events {
            row(&out, ev);
        }
        if args[0] != "--mode" {
            // A round trip's events add up to the latency the run measured.
            let ns = cumulative_mean_ns(&out, "end");
            let lat = r.summary.latency.mean_ns;
            assert!(
                (ns - lat).abs() < 0.15 * lat,
                "{args:?}: timeline {ns} ns vs measured mean latency {lat} ns\n{out}"
            );
        }
        let out = timeline(&[server.to_str().unwrap()]);
        for ev in server_events {
            row(&out, ev);
        }
        // Merged, the server's operations meet the client's by id: the most
        // common shape, tabled, has the events of both sides.
        let out = timeline(&[
            "--merge",
            client.to_str().unwrap(),
            server.to_str().unwrap(),
        ]);
        for ev in client_events {
            row(&out, &format!("client: {ev}"));
        }
        for ev in server_events {
            row(&out, &format!("server: {ev}"));
        }
    }
}

#[test]
fn off_cpu_flamegraphs_account_for_the_time_the_server_waits() {
    let _g = exclusive();
    if let Some(why) = perf_cannot_sample().or_else(sched_tracepoints_missing) {
        crate::helpers::skip(format!("perf cannot record scheduler events here ({why})"));
        return;
    }
    let dir = TempDir::new("offcpu");
    let (pool, f) = flame_off_cpu(&dir, &["--arch", "pool", "--depth", "1"]);
    let n = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k}: {f}"));
    // Every thread's time is on a CPU (schedstat) or off it (the events):
    // the time off is the rest of threads x wall, within 30%.
    let expected = n("threads") * n("window_ns") - n("on_cpu_ns");
    assert!(
        (n("off_cpu_ns") - expected).abs() < 0.3 * expected,
        "off CPU {} ns, expected {expected} ns: {f}",
        n("off_cpu_ns")
    );
    // At depth 1 the pool's thread waits in epoll for the next request,
    // woken by the client's thread; a wake-up is seen for nearly all.
    let folded = std::fs::read_to_string(pool.join("flame-offcpu.folded")).unwrap();
    let weight = |pat: &str| -> f64 {
        folded
            .lines()
            .filter(|l| l.contains(pat))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    };
    let waits = weight("epoll_wait") + weight("futex");
    assert!(
        waits > 0.2 * n("off_cpu_ns"),
        "epoll/futex waits {waits} ns:\n{folded}"
    );
    assert!(weight("[woken by wb-client") > 0.0, "{folded}");
    assert!(
        n("woken_seen") > 0.9 * (n("woken_seen") + n("woken_unseen")),
        "{f}"
    );

    // A server given by command (redis-server, observed): its waits too.
    if crate::fixtures::daemon::installed("redis-server", "WIREBENCH_REQUIRE_KV") {
        let cmd = "exec redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no";
        let (redis, f) = flame_off_cpu(
            &dir,
            &[
                "--target",
                "redis://127.0.0.1:0",
                "--server-cmd",
                cmd,
                "--depth",
                "1",
            ],
        );
        let folded = std::fs::read_to_string(redis.join("flame-offcpu.folded")).unwrap();
        assert!(folded.contains("redis-server;"), "{folded}");
        assert!(folded.contains("epoll_wait"), "{folded}");
        assert!(f["switches_out"].as_u64().unwrap() > 1000, "{f}");
        // The differential of the two: off-CPU stacks compared.
        let diff = dir.path().join("offcpu-diff.svg");
        let mut d = Proc::spawn(&[
            "flame",
            "--diff",
            pool.to_str().unwrap(),
            redis.to_str().unwrap(),
            "--off-cpu",
            "-o",
            diff.to_str().unwrap(),
        ]);
        assert!(
            d.wait(Duration::from_secs(30)).success(),
            "{}",
            d.stderr_all()
        );
        let svg = std::fs::read_to_string(&diff).unwrap();
        assert!(svg.contains("<svg") && svg.contains("redis-server"));
    }
}

#[test]
fn issue_15_compare_gates_ci_on_a_regression_and_passes_twins() {
    // Alone: the gate must see the regression beyond the noise, and the
    // noise of a machine shared with other tests can hide it (rightly).
    let _g = exclusive();
    let dir = TempDir::new("gate");
    // Servers that hold each response 1 ms and 2 ms: a regression of
    // about 1.9x on any machine. (A 1.3x one was too close to what one of
    // the VM's host throttles does to a 4 s run: CI saw ratios of 0.59 and
    // 0.68 where 0.78 was due, and once a gate that rightly called it noise.)
    let fast = Server::start(&["--delay", "1ms"]);
    let slow = Server::start(&["--delay", "2ms"]);
    let (a, twin, b) = (
        dir.path().join("a"),
        dir.path().join("twin"),
        dir.path().join("b"),
    );
    let run4 = |dir: &Path, target: &str| {
        let mut p = Proc::spawn(&[
            "run",
            "--results",
            dir.to_str().unwrap(),
            "--format",
            "json",
            "--duration",
            "4s",
            "--warmup",
            "200ms",
            "--target",
            target,
        ]);
        assert!(
            p.wait(Duration::from_secs(60)).success(),
            "{}",
            p.stderr_all()
        );
    };
    run4(&a, &fast.endpoint);
    run4(&twin, &fast.endpoint);
    run4(&b, &slow.endpoint);
    fast.stop();
    slow.stop();
    let gate = |x: &Path, y: &Path| {
        let mut p = Proc::spawn(&[
            "compare",
            x.to_str().unwrap(),
            y.to_str().unwrap(),
            "--fail-if",
            "ops_per_s<-10%,p50>+10%",
            "--format",
            "json",
        ]);
        let st = p.wait(Duration::from_secs(30));
        let v: serde_json::Value = serde_json::from_str(&p.stdout_all()).unwrap();
        (st.code(), v, p.stderr_all())
    };
    let (code, v, err) = gate(&a, &b);
    assert_eq!(code, Some(4), "{v}\n{err}");
    assert!(
        err.contains("fail-if ops_per_s<-10%: variant B changed"),
        "{err}"
    );
    // The ratio is B's ops/s over A's, as their results say.
    let ops_of = |dir: &Path| {
        let run = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path().join("run.json"))
            .find(|p| p.is_file())
            .expect("a run.json");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
        r["summary"]["ops_per_s"].as_f64().unwrap()
    };
    assert_eq!(v["metrics"][0]["metric"], "ops_per_s", "{v}");
    let ratio = v["metrics"][0]["against_first"][0]["ratio"]
        .as_f64()
        .unwrap();
    let expected = ops_of(&b) / ops_of(&a);
    assert!((ratio - expected).abs() < 1e-9, "{ratio} != {expected}");
    assert!(ratio < 0.9, "{ratio}");
    let (code, v, err) = gate(&a, &twin);
    assert_eq!(code, Some(0), "{v}\n{err}");
    assert_eq!(v["fail_if"].as_array().unwrap().len(), 0, "{v}");
    let mut bad = Proc::spawn(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--fail-if",
        "iops<5%",
    ]);
    assert_eq!(bad.wait(Duration::from_secs(30)).code(), Some(2));
    assert!(bad.stderr_all().contains("--fail-if"));
}

/// Issue 36: `flame --instances 2 --instance 2` profiles one instance while
/// the other runs beside it (the messenger report's left and right): two
/// runs, each its share of the clients, the flamegraph of the second's
/// server only.
#[test]
fn issue_36_flame_profiles_one_instance_while_the_other_runs() {
    let _g = exclusive();
    if let Some(why) = perf_cannot_sample() {
        crate::helpers::skip(format!(
            "perf cannot sample on this machine ({why}); .ci/run installs linux-perf"
        ));
        return;
    }
    let dir = TempDir::new("flame-instance");
    let mut p = Proc::spawn(&[
        "flame",
        "--instances",
        "2",
        "--instance",
        "2",
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "300ms",
        "--results",
        dir.str(),
        "--format",
        "json",
    ]);
    assert!(
        p.wait(Duration::from_secs(120)).success(),
        "{}",
        p.stderr_all()
    );
    assert!(
        p.stderr_all()
            .contains("instance 2 of 2 profiled (server CPUs"),
        "{}",
        p.stderr_all()
    );
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|d| d.join("run.json").is_file())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let profiled: Vec<&std::path::PathBuf> = dirs
        .iter()
        .filter(|d| d.join("flame-server.svg").is_file())
        .collect();
    assert_eq!(profiled.len(), 1, "one instance profiled: {dirs:?}");
    for d in &dirs {
        let r = wirebench_core::store::load(d).unwrap();
        assert_eq!(r.spec.clients, 1, "its share of the clients");
        assert_eq!(r.status.state, wirebench_core::result::RunState::Complete);
        assert!(r.summary.ops > 0);
    }
    // Both ran at once: their measured phases overlap.
    let starts: Vec<String> = dirs
        .iter()
        .map(|d| wirebench_core::store::load(d).unwrap().started_at)
        .collect();
    let t = |s: &str| -> i64 {
        let hms = &s[11..19];
        let p: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
        p[0] * 3600 + p[1] * 60 + p[2]
    };
    assert!((t(&starts[0]) - t(&starts[1])).abs() <= 2, "{starts:?}");
    let bad =
        Proc::spawn(&["flame", "--instances", "2", "--clients", "2"]).wait(Duration::from_secs(30));
    assert_eq!(bad.code(), Some(2));
}
