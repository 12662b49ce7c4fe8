//! Experiments: `topo` on the report's machine (a fixture /sys tree), a bad
//! spec, a small real sweep producing the table, and resuming a sweep
//! killed mid-run.

use crate::helpers::*;
use std::time::{Duration, Instant};
use wirebench_core::topo::fixture;

fn write_spec(dir: &TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn sweep_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap()
}

#[test]
fn topo_gives_the_reports_cpusets_on_its_machine() {
    let _g = shared();
    let sys = fixture::TempSys::new("it-report");
    fixture::write(sys.path(), 2, 28, 2, fixture::Numbering::ThreadMajor);
    let mut p = Proc::spawn(&[
        "topo",
        "--sys",
        sys.path().to_str().unwrap(),
        "--counts",
        "2,8,28",
        "--format",
        "json",
    ]);
    assert!(p.wait(Duration::from_secs(30)).success());
    let v: serde_json::Value = serde_json::from_str(&p.stdout_all()).unwrap();
    assert_eq!(v["balanced"]["server"]["2"], "0,56");
    assert_eq!(v["balanced"]["client"]["8"], "2-3,30-31,58-59,86-87");
    assert_eq!(v["separated"]["server"]["28"], "0-27");
    assert_eq!(v["separated"]["client"]["28"], "28-55");
    let mut t = Proc::spawn(&["topo", "--sys", sys.path().to_str().unwrap()]);
    assert!(t.wait(Duration::from_secs(30)).success());
    let text = t.stdout_all();
    assert!(
        text.contains("2 socket(s), 2 NUMA node(s), 56 physical cores, 2 thread(s) per core"),
        "{text}"
    );
}

#[test]
fn a_bad_spec_names_the_key_and_the_closest_valid_one() {
    let _g = shared();
    let dir = TempDir::new("badspec");
    let results = dir.path().join("results");
    let cases = [
        (
            "name = \"x\"\nrepetitons = 2\n",
            "'repetitons' (did you mean 'repetitions'?)",
        ),
        (
            "name = \"x\"\n[base]\nclinets = 2\n",
            "'clinets' (did you mean 'clients'?)",
        ),
        (
            "name = \"x\"\n[matrix]\nconns_per_clent = [1]\n",
            "did you mean 'conns_per_client'?",
        ),
        ("name = \"x\"\n[matrix]\nclients = 2\n", "a list of values"),
        (
            "name = \"x\"\n[matrix]\nplacement = [\"balance\"]\n",
            "did you mean 'balanced'?",
        ),
        ("name = \"x\"\n[base]\ndepth = 0\n", "--depth"),
        (
            "name = \"x\"\n[base]\nresults = \"/tmp\"\n",
            "the sweep sets it itself",
        ),
        ("[base]\ndepth = 1\n", "needs a name"),
        (
            "name = \"x\"\n[base]\nclients = 3\n[matrix]\ninstances = [2]\n",
            "divide evenly",
        ),
        (
            "name = \"x\"\n[matrix]\nplacement = [\"explicit\"]\n",
            "cpusets",
        ),
        ("name = \"x\"\nrepetitions = [\n", "not TOML"),
    ];
    for (text, expect) in cases {
        let spec = write_spec(&dir, "bad.toml", text);
        let mut p = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(expect),
            "{text}: expected '{expect}' in: {err}"
        );
    }
    assert!(!results.exists(), "a refused spec left results");
}

#[test]
fn a_small_sweep_on_loopback_produces_the_table() {
    let _g = shared();
    let dir = TempDir::new("sweep");
    let results = dir.path().join("results");
    let spec = write_spec(
        &dir,
        "small.toml",
        r#"
name = "small"
[base]
duration = "2s"
warmup = "200ms"
[matrix]
arch = ["reactor", "pool"]
clients = [1, 2]
placement = ["balanced", "separated"]
"#,
    );
    let mut p = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
    let st = p.wait(Duration::from_secs(300));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(err.contains("sweep [") && err.contains("ETA"), "{err}");
    // Issue 48: it ends with its points' table (not only progress bars);
    // no point ran instances, so no scaling column of "-" in every row.
    let out = p.stdout_all();
    assert!(
        out.contains("IOPS (k)") && !out.contains("scaling"),
        "{out}"
    );
    assert_eq!(out.matches("complete").count(), 8, "{out}");
    let exp = results.join("small");
    let ix = sweep_json(&exp);
    let runs = ix["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let id = r["run_ids"][0].as_str().unwrap();
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(exp.join(id).join("run.json")).unwrap())
                .unwrap();
        // The run records the policy that placed it, and its cpusets.
        assert_eq!(run["placement"]["policy"], r["placement"]["policy"]);
        assert_eq!(
            run["placement"]["server_cpus"], r["placement"]["server"],
            "{r}"
        );
        assert!(r["aggregate"]["ops_per_s"].as_f64().unwrap() > 0.0);
    }
    let mut t = Proc::spawn(&["table", exp.to_str().unwrap()]);
    assert!(t.wait(Duration::from_secs(30)).success());
    let md = t.stdout_all();
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines.len(), 10, "{md}");
    for col in [
        "IOPS (k)",
        "placement",
        "clients",
        "connect time (s)",
        "latency mean (ms)",
        "messages received",
        "messaging time (s)",
        "out throughput (MiB/s)",
        "server CPUs (smp)",
        "p99 (ms)",
        "client CPU (us/op)",
    ] {
        assert!(lines[0].contains(col), "no column {col}: {}", lines[0]);
    }
    assert_eq!(md.matches("| complete |").count(), 8, "{md}");
    let mut c = Proc::spawn(&["table", exp.to_str().unwrap(), "--format", "csv"]);
    assert!(c.wait(Duration::from_secs(30)).success());
    let csv = c.stdout_all();
    assert_eq!(csv.lines().count(), 9, "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("reactor,"), "{csv}");
}

#[test]
fn a_sweep_killed_mid_run_resumes_where_it_stopped() {
    let _g = shared();
    let dir = TempDir::new("resume");
    let results = dir.path().join("results");
    let spec = write_spec(
        &dir,
        "resume.toml",
        r#"
name = "resume"
[base]
duration = "1s"
warmup = "0s"
[matrix]
arch = ["reactor", "pool"]
depth = [1, 2]
"#,
    );
    let exp = results.join("resume");
    let mut p = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done = exp.join("sweep.json").exists()
            && !sweep_json(&exp)["runs"].as_array().unwrap().is_empty();
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "no run completed in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    p.signal(nix::sys::signal::Signal::SIGKILL);
    p.wait(Duration::from_secs(10));
    let before = sweep_json(&exp)["runs"].as_array().unwrap().len();
    assert!(before < 4, "the sweep finished before it was killed");
    // Without --resume, an existing experiment is never overwritten.
    let mut again = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
    assert_eq!(again.wait(Duration::from_secs(30)).code(), Some(2));
    assert!(again.stderr_all().contains("--resume"));
    let mut r = Proc::spawn(&[
        "sweep",
        &spec,
        "--results",
        results.to_str().unwrap(),
        "--resume",
    ]);
    let st = r.wait(Duration::from_secs(120));
    let err = r.stderr_all();
    assert!(st.success(), "{err}");
    assert!(
        err.contains(&format!("resuming: {before} of 4 run(s) complete already")),
        "{err}"
    );
    let runs = sweep_json(&exp)["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "complete"));
    let mut keys: Vec<&str> = runs.iter().map(|r| r["key"].as_str().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 4, "a run was done twice: {keys:?}");

    // The spec edited: --resume refuses and names what changed; with
    // --force, the changed points run again.
    let edited = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("warmup = \"0s\"", "warmup = \"0s\"\nsize = 128");
    std::fs::write(&spec, edited).unwrap();
    let resume = |force: bool| {
        let mut args = vec![
            "sweep",
            &spec,
            "--results",
            results.to_str().unwrap(),
            "--resume",
        ];
        if force {
            args.push("--force");
        }
        let mut p = Proc::spawn(&args);
        let st = p.wait(Duration::from_secs(120));
        (st, p.stderr_all())
    };
    let (st, err) = resume(false);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("spec changed") && err.contains("size: (unset) -> 128B"),
        "{err}"
    );
    assert_eq!(
        sweep_json(&exp)["runs"],
        serde_json::Value::Array(runs.clone())
    );
    let (st, err) = resume(true);
    assert!(st.success(), "{err}");
    let rerun = sweep_json(&exp)["runs"].as_array().unwrap().clone();
    assert_eq!(rerun.len(), 4);
    for r in &rerun {
        assert_eq!(r["status"], "complete");
        assert!(
            runs.iter().all(|old| old["run_ids"] != r["run_ids"]),
            "not run again: {r}"
        );
    }

    // Issue 35: a value taken out of the matrix is a change too: refused,
    // named; --resume-changed leaves the old points out of the count.
    let edited = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("depth = [1, 2]", "depth = [1]");
    std::fs::write(&spec, edited).unwrap();
    let (st, err) = resume(false);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("4 run(s) planned, 2 now") && err.contains("no longer planned: "),
        "{err}"
    );
    let mut p = Proc::spawn(&[
        "sweep",
        &spec,
        "--results",
        results.to_str().unwrap(),
        "--resume-changed",
    ]);
    let st = p.wait(Duration::from_secs(120));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(
        err.contains("resuming: 2 of 2 run(s) complete already"),
        "{err}"
    );
}

#[test]
fn issue_35_a_sweep_stopped_with_sigint_records_sigint() {
    let _g = shared();
    let dir = TempDir::new("sweep-sigint");
    let results = dir.path().join("results");
    let spec = write_spec(
        &dir,
        "sigint.toml",
        "name = \"sigint\"\n[base]\nduration = \"30s\"\nwarmup = \"0s\"\n[matrix]\ndepth = [1, 2]\n",
    );
    let mut p = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
    p.stderr_until(Duration::from_secs(30), |l| l.contains("sweep ["));
    // The run under way has started its server (its load follows).
    let exp = results.join("sigint");
    let deadline = Instant::now() + Duration::from_secs(30);
    let sweep_pid = p.pid.to_string();
    while !running_with(&format!("--exit-with-parent\0{sweep_pid}"))
        .iter()
        .any(|&pid| {
            running_with("--order-stdin").iter().any(|s| {
                std::fs::read_to_string(format!("/proc/{s}/stat")).is_ok_and(|st| {
                    st.rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().nth(1))
                        == Some(&pid.to_string())
                })
            })
        })
    {
        assert!(Instant::now() < deadline, "no run under way");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    p.signal(nix::sys::signal::Signal::SIGINT);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(130), "{err}");
    let runs = sweep_json(&exp)["runs"].as_array().unwrap().clone();
    let reason = runs[0]["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason.contains("SIGINT"), "{runs:?}");
}

#[test]
fn a_dry_run_plans_for_another_machine() {
    let _g = shared();
    let dir = TempDir::new("dry");
    let sys = fixture::TempSys::new("it-dry");
    fixture::write(sys.path(), 2, 28, 2, fixture::Numbering::ThreadMajor);
    let spec = write_spec(
        &dir,
        "dry.toml",
        "name = \"dry\"\n[matrix]\nclients = [4]\nplacement = [\"balanced\"]\ninstances = [1, 2]\n",
    );
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "sweep",
        &spec,
        "--dry-run",
        "--sys",
        sys.path().to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    assert!(p.wait(Duration::from_secs(30)).success());
    let out = p.stdout_all();
    assert!(
        out.contains("placement balanced: server 0,28,56,84, client 1,29,57,85"),
        "{out}"
    );
    // Two instances share the cpusets: each gets half, by whole cores (a
    // core and its hyper-thread sibling together, issue 36).
    assert!(
        out.contains("instance 1: wirebench run") && out.contains("--server-cpus 0,56 "),
        "{out}"
    );
    assert!(out.contains("--server-cpus 28,84 "), "{out}");
    assert!(!results.exists(), "a dry run wrote results");
}

/// Issue 48: a dry run says what each point writes before it measures
/// (an S3 read's objects: 10000 of 256 MiB are 2.44 TiB), the whole plan's
/// time and data, and warns of the runs past 100 GiB.
#[test]
fn issue_48_a_dry_run_states_the_data_written_first_and_the_time() {
    let _g = shared();
    let dir = TempDir::new("dry-cost");
    let spec = write_spec(
        &dir,
        "big.toml",
        "name = \"big\"\n[base]\ntransport = \"s3\"\nobjects = 10000\nduration = \"1m\"\nwarmup = \"5s\"\n\
         [matrix]\nsize = [\"1MiB\", \"256MiB\"]\nworkload = [\"get\", \"put\"]\n",
    );
    let mut p = Proc::spawn(&["sweep", &spec, "--dry-run", "--results", dir.str()]);
    assert!(
        p.wait(Duration::from_secs(30)).success(),
        "{}",
        p.stderr_all()
    );
    let out = p.stdout_all();
    let writes: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("before it measures ("))
        .collect();
    assert_eq!(writes.len(), 2, "the two reads, not the puts: {out}");
    assert!(out.contains("writes 9.77 GiB before it measures"), "{out}");
    assert!(
        out.contains(
            "writes 2.44 TiB before it measures (its prepare phase; at 1GiB/s about 41m 40s)"
        ),
        "{out}"
    );
    // 4 runs of 1m05s; 2500 GiB and 9.77 GiB written first.
    assert!(
        out.contains(
            "in all: about 4m 20s of warm-ups and measuring; prepare phases write 2.45 TiB first"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "warning: 1 run(s) each write more than 100GiB before they measure (the most: ["
        ) && out.contains("size=256MiB workload=get, 2.44 TiB)"),
        "{out}"
    );
}

#[test]
fn instances_side_by_side_each_take_their_endpoints() {
    let _g = shared();
    let dir = TempDir::new("sweep-endpoints");
    let results = dir.path().join("results");
    let (s1, s2) = (Server::start(&[]), Server::start(&[]));
    let spec = write_spec(
        &dir,
        "two.toml",
        &format!(
            r#"
name = "two"
[base]
target = "{}"
also_target = ["{}"]
clients = 2
duration = "1s"
warmup = "0s"
[matrix]
instances = [1, 2]
"#,
            s1.endpoint, s2.endpoint
        ),
    );
    let mut p = Proc::spawn(&["sweep", &spec, "--results", results.to_str().unwrap()]);
    let st = p.wait(Duration::from_secs(120));
    assert!(st.success(), "{}", p.stderr_all());
    let exp = results.join("two");
    let ix = sweep_json(&exp);
    let runs = ix["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let read = |id: &serde_json::Value| -> wirebench_core::result::RunResult {
        let path = exp.join(id.as_str().unwrap()).join("run.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    // One instance: both endpoints, a connection each, each one's part.
    let one = read(&runs[0]["run_ids"][0]);
    let parts: Vec<(&str, u64)> = one
        .endpoints
        .iter()
        .map(|e| (e.endpoint.as_str(), e.connections))
        .collect();
    assert_eq!(
        parts,
        [(s1.endpoint.as_str(), 1), (s2.endpoint.as_str(), 1)]
    );
    // Two instances: each its own endpoint, with its one client.
    let ids = runs[1]["run_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 2);
    let mut targets: Vec<String> = ids
        .iter()
        .map(|id| {
            let r = read(id);
            assert!(r.spec.also_target.is_empty() && r.endpoints.is_empty());
            assert!(r.summary.ops > 0);
            match r.spec.target {
                wirebench_core::spec::TargetSpec::External { endpoint } => endpoint.to_string(),
                t => panic!("{t:?}"),
            }
        })
        .collect();
    targets.sort();
    let mut want = vec![s1.endpoint.clone(), s2.endpoint.clone()];
    want.sort();
    assert_eq!(targets, want);
    // Each server saw a connection of each point: 1 + 1.
    assert_eq!(s1.stop()["conns_accepted"], 2);
    assert_eq!(s2.stop()["conns_accepted"], 2);
}

/// Issue 46: `sweep --metrics-listen 127.0.0.1:0` said
/// `http://127.0.0.1:0/metrics` and never the ports the runs bound; each
/// point now says its own, as it binds it.
#[test]
fn issue_46_a_sweep_on_port_0_prints_each_points_bound_port() {
    let _g = shared();
    let dir = TempDir::new("sweep-port0");
    let results = dir.path().join("results");
    let spec = write_spec(
        &dir,
        "port0.toml",
        "name = \"port0\"\n[base]\nduration = \"1s\"\nwarmup = \"0s\"\n[matrix]\ndepth = [1, 2]\n",
    );
    let mut p = Proc::spawn(&[
        "sweep",
        &spec,
        "--results",
        results.to_str().unwrap(),
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let st = p.wait(Duration::from_secs(120));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(!err.contains("127.0.0.1:0/"), "{err}");
    let ports: Vec<u16> = err
        .lines()
        .filter_map(|l| l.trim().strip_prefix("metrics: http://127.0.0.1:"))
        .map(|rest| rest.trim_end_matches("/metrics").parse().unwrap())
        .collect();
    assert_eq!(ports.len(), 2, "a port for each point: {err}");
    assert!(ports.iter().all(|&p| p != 0), "{err}");
}
