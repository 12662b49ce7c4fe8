//! exec: the users' own benchmark programs, run and parsed, against real
//! servers: sockperf's server and client, fio on a small file,
//! redis-benchmark against a redis-server the run starts; a failing, a
//! silent, an overdue and an interrupted program; a sweep of exec runs
//! with its table and report; compare never showing a mean as a
//! percentile.

use crate::helpers::*;
use std::time::{Duration, Instant};
use wirebench_core::result::{RunResult, RunState};

const CRIMSON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../core/src/parsers/fixtures/crimson-msgr-28-separated.txt"
);

/// Whether `program` is installed; a missing one fails the test when
/// $WIREBENCH_REQUIRE_EXEC is set (as `.ci/run` does), else skips it.
pub(crate) fn installed(program: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_EXEC").is_none(),
            "{program} is not installed (apt-get install {program})"
        );
        crate::helpers::skip(format!("{program} is not installed"));
    }
    found
}

/// The run's own directory, from its result.
pub(crate) fn run_dir(results: &TempDir, r: &RunResult) -> std::path::PathBuf {
    results.path().join(&r.run_id)
}

/// Whether `pid` is gone (or a zombie) within 5 s: SIGKILL takes effect
/// when the process is next scheduled, and an orphan is reaped by init.
fn gone(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next())
                    .map(str::to_string)
            });
        match state.as_deref() {
            None | Some("Z") | Some("X") => return true,
            _ if Instant::now() >= until => return false,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A value after `key` in sockperf's text (`percentile 50.000 =   10.414`).
pub(crate) fn sockperf_value(out: &str, key: &str) -> f64 {
    let line = out.lines().find(|l| l.contains(key)).expect(key);
    line.rsplit('=').next().unwrap().trim().parse().unwrap()
}

#[test]
fn fio_json_plus_gives_iops_and_percentiles_from_its_bins() {
    let _g = shared();
    if !installed("fio") {
        return;
    }
    let results = TempDir::new("exec-fio");
    let data = TempDir::new("exec-fio-data");
    let cmd = format!(
        "fio --name=wb --directory={} --size=4M --rw=randread --bs=4k --ioengine=psync --time_based --runtime={{duration_s}} --output-format=json+",
        data.str()
    );
    let (st, r, err) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--client-cmd",
            &cmd,
            "--parser",
            "fio-json",
            "--duration",
            "5s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
    let out = std::fs::read_to_string(run_dir(&results, &r).join("client-stdout.txt")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let read = &doc["jobs"][0]["read"];
    let s = &r.summary;
    assert_eq!(s.ops, read["total_ios"].as_u64().unwrap());
    assert_eq!(s.ops_per_s, read["iops"].as_f64().unwrap());
    assert_eq!(s.bytes_in, read["io_bytes"].as_u64().unwrap());
    assert!(
        (4.9..=5.2).contains(&(s.measured_ns as f64 / 1e9)),
        "{}",
        s.measured_ns
    );
    // Every percentile from its bins: fio's own within the bins' width.
    let t = s.tool.as_ref().unwrap();
    assert!(t.histogram && s.has_latency("p9999"));
    for (key, ours) in [
        ("50.000000", s.latency.p50_ns),
        ("99.000000", s.latency.p99_ns),
    ] {
        let fio = read["clat_ns"]["percentile"][key].as_f64().unwrap();
        assert!(
            (ours as f64 / fio - 1.0).abs() < 0.005,
            "p{key}: {ours} vs fio's {fio}"
        );
    }
    let h = wirebench_core::hist::decode(&r.latency_hist).unwrap();
    assert_eq!(h.len(), s.ops);
}

#[test]
fn redis_benchmark_against_a_redis_server_the_run_starts() {
    let _g = shared();
    if !installed("redis-server") || !installed("redis-benchmark") {
        return;
    }
    let results = TempDir::new("exec-redis");
    let (st, r, err) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--server-cmd",
            "exec redis-server --port {port} --save '' --appendonly no",
            "--client-cmd",
            "redis-benchmark -p {port} -t get -n 20000 -c {clients} --csv",
            "--parser",
            "redis-benchmark",
            "--clients",
            "4",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
    let csv = std::fs::read_to_string(run_dir(&results, &r).join("client-stdout.txt")).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let cell = |i: usize| row[i].trim_matches('"').parse::<f64>().unwrap();
    let s = &r.summary;
    assert_eq!(s.ops_per_s, cell(1), "{csv}");
    assert_eq!(s.latency.p99_ns, (cell(6) * 1e6).round() as u64);
    // It gives no p90 and no p99.9: absent, not zero.
    assert!(!s.has_latency("p90") && !s.has_latency("p999"));
    let th = s.server_threads.as_ref().unwrap();
    assert!(
        th.groups.iter().any(|g| g.group == "redis-server"),
        "{th:?}"
    );
    assert!(!pid_alive(r.server.as_ref().unwrap().pid));
}

#[test]
fn a_program_that_fails_or_says_nothing_fails_the_run_with_its_output() {
    let _g = shared();
    let results = TempDir::new("exec-fail");
    let base = [
        "--transport",
        "exec",
        "--parser",
        "sockperf",
        "--duration",
        "1s",
    ];
    let mut args = base.to_vec();
    args.extend(["--client-cmd", "echo 'no such host' >&2; exit 3"]);
    let (st, r, _) = run_json(&results, &args);
    assert!(!st.success());
    assert_eq!(r.status.state, RunState::Failed);
    let why = r.status.reason.unwrap();
    assert!(
        why.contains("exit status 3") && why.contains("no such host"),
        "{why}"
    );
    // Exit 0, no figures (sockperf's way when it cannot connect).
    let refused = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/src/parsers/fixtures/sockperf-refused.txt"
    );
    let cmd = format!("cat {refused}");
    let mut args = base.to_vec();
    args.extend(["--client-cmd", &cmd]);
    let (st, r, _) = run_json(&results, &args);
    assert!(!st.success());
    let why = r.status.reason.unwrap();
    assert!(
        why.contains("--parser sockperf") && why.contains("Connection refused"),
        "{why}"
    );
}

#[test]
fn an_overdue_or_interrupted_program_is_stopped_with_what_it_started() {
    let _g = shared();
    let results = TempDir::new("exec-stop");
    let pids = TempDir::new("exec-stop-pids");
    // A child of the shell that would outlive it: the group goes.
    let cmd = |tag: &str| format!("sleep 60 & echo $! > {}/{tag}; wait", pids.str());
    let began = Instant::now();
    let c = cmd("overdue");
    let (st, r, _) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--parser",
            "sockperf",
            "--duration",
            "1s",
            "--op-timeout",
            "1s",
            "--client-cmd",
            &c,
        ],
    );
    assert!(!st.success());
    assert!(began.elapsed() < Duration::from_secs(20));
    let why = r.status.reason.unwrap();
    assert!(why.contains("did not exit within 2 s"), "{why}");
    let sleeper = |tag: &str| -> u32 {
        std::fs::read_to_string(pids.path().join(tag))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert!(gone(sleeper("overdue")), "the program's child is gone");

    let c = cmd("interrupted");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        results.str(),
        "--transport",
        "exec",
        "--parser",
        "sockperf",
        "--duration",
        "30s",
        "--client-cmd",
        &c,
    ]);
    let file = pids.path().join("interrupted");
    let until = Instant::now() + Duration::from_secs(10);
    while !file.exists() || std::fs::read_to_string(&file).unwrap().trim().is_empty() {
        assert!(Instant::now() < until, "the program never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    p.signal(nix::sys::signal::Signal::SIGINT);
    assert_eq!(p.wait(Duration::from_secs(15)).code(), Some(130));
    assert!(gone(sleeper("interrupted")));
}

/// `compare` of two runs of a program that gives only a mean latency:
/// the mean is compared, no percentile is.
#[test]
fn a_programs_mean_is_never_shown_as_a_percentile() {
    let _g = shared();
    let results = TempDir::new("exec-crimson");
    let cmd = format!("cat {CRIMSON}");
    let mut dirs = vec![];
    for _ in 0..2 {
        let (st, r, err) = run_json(
            &results,
            &[
                "--transport",
                "exec",
                "--parser",
                "crimson-msgr",
                "--client-cmd",
                &cmd,
            ],
        );
        assert!(st.success(), "{err}");
        assert_eq!(r.intervals.len(), 10, "its per-second lines");
        assert_eq!(r.summary.latency.mean_ns, 8.37097e6);
        assert!(!r.summary.has_latency("p50") && !r.summary.has_latency("p99"));
        dirs.push(run_dir(&results, &r));
    }
    let mut c = Proc::spawn(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
    ]);
    c.wait(Duration::from_secs(30));
    let text = c.stdout_all();
    assert!(text.contains("latency mean"), "{text}");
    for p in ["latency p50", "latency p99"] {
        let shown = text
            .lines()
            .find(|l| l.contains(p))
            .is_some_and(|l| l.chars().any(|c| c.is_ascii_digit()) && !l.contains(" - "));
        assert!(!shown, "{p} shown for a program that gave none:\n{text}");
    }
}

/// The report studies as specs: their plans for the report's machine
/// (a /sys tree `topo --write-sys` makes), every run checked.
#[test]
fn the_report_studies_plan_for_the_reports_machine() {
    let _g = shared();
    let dir = TempDir::new("exec-specs");
    let sys = dir.path().join("sys");
    let mut w = Proc::spawn(&[
        "topo",
        "--write-sys",
        sys.to_str().unwrap(),
        "--shape",
        "2x28x2",
    ]);
    assert!(w.wait(Duration::from_secs(30)).success());
    let spec = |name: &str| format!("{}/../../specs/{name}", env!("CARGO_MANIFEST_DIR"));
    let crimson = spec("reports/messenger.toml");
    let mut p = Proc::spawn(&[
        "sweep",
        &crimson,
        "--dry-run",
        "--sys",
        sys.to_str().unwrap(),
    ]);
    assert!(
        p.wait(Duration::from_secs(30)).success(),
        "{}",
        p.stderr_all()
    );
    let plan = format!("{}{}", p.stdout_all(), p.stderr_all());
    assert!(plan.contains("44 run(s)"), "{plan}");
    // The report's own cpusets (its JSON table) for 28 clients.
    assert!(plan.contains("server 0-6,28-34,56-62,84-90, client 7-13,35-41,63-69,91-97"));
    assert!(plan.contains("server 0-27, client 28-55"));
    assert!(plan.contains("perf-async-msgr") && plan.contains("--parser crimson-msgr"));
    let mut p = Proc::spawn(&["sweep", &spec("reports/ipc.toml"), "--dry-run"]);
    assert!(
        p.wait(Duration::from_secs(30)).success(),
        "{}",
        p.stderr_all()
    );
    let plan = format!("{}{}", p.stdout_all(), p.stderr_all());
    assert!(
        plan.contains("810 run(s) (270 point(s) x 3 repetition(s))"),
        "{plan}"
    );
}

/// `--client-env` reaches the program; each repetition keeps its own
/// output; `{instance}` is each instance's own in a sweep; the `regex`
/// parser reads what the program printed.
#[test]
fn environment_repetitions_and_instances_of_a_program() {
    let _g = shared();
    let results = TempDir::new("exec-env");
    let regex = r"regex:ops=(?P<ops>\d+) seconds=(?P<seconds>[0-9.]+)";
    let (st, r, err) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--client-cmd",
            "echo \"ops=$WB_OPS seconds=0.5\"",
            "--client-env",
            "WB_OPS=1234",
            "--parser",
            regex,
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!((r.summary.ops, r.summary.ops_per_s), (1234, 2468.0));
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        results.str(),
        "--transport",
        "exec",
        "--client-cmd",
        "echo \"ops=$$ seconds=1\"",
        "--parser",
        regex,
        "--repeat",
        "2",
    ]);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    let group = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.file_name().unwrap().to_str().unwrap().contains("-x2"))
        .expect("the repetitions' group");
    let first = std::fs::read_dir(&group)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.join("client-stdout.txt").exists())
        .expect("the first run's output");
    let a = std::fs::read_to_string(first.join("client-stdout.txt")).unwrap();
    let b = std::fs::read_to_string(first.join("client-stdout-r2.txt")).unwrap();
    assert_ne!(a, b, "each repetition's own output (its own shell's pid)");

    let dir = TempDir::new("exec-instances");
    let spec = dir.path().join("inst.toml");
    std::fs::write(
        &spec,
        r#"
name = "inst"
[base]
transport = "exec"
client_cmd = "echo \"ops=1{instance} seconds=1\""
parser = "regex:ops=(?P<ops>\\d+) seconds=(?P<seconds>[0-9.]+)"
clients = 2
[matrix]
instances = [2]
"#,
    )
    .unwrap();
    let out = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "sweep",
        spec.to_str().unwrap(),
        "--results",
        out.to_str().unwrap(),
    ]);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    let mut ops: Vec<u64> = std::fs::read_dir(out.join("inst"))
        .unwrap()
        .map(|e| e.unwrap().path().join("run.json"))
        .filter(|f| f.exists())
        .map(|f| {
            let r: RunResult = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            r.summary.ops
        })
        .collect();
    ops.sort();
    assert_eq!(ops, vec![10, 11], "{{instance}} is 0 and 1");
}

/// Issue 36: `--format csv` of a run parsed from reqres_loop or
/// data_channel_write gives the IPC report's own line back, field for
/// field, then wirebench's columns (operations in all, p50, p99).
#[test]
fn issue_36_the_ipc_reports_own_lines_come_back_as_its_csv() {
    let _g = shared();
    let results = TempDir::new("exec-ipc-csv");
    let cases = [
        (
            "tateyama-reqres",
            "4,mt,sync,128,100000,0.507651,1575884.389323,0.19",
            "sessions,clients_as,mode,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us",
            "4,mt,sync,128,100000,0.507651,1575884.389323,0.19,400000,,",
        ),
        (
            "tateyama-reqres",
            "8,mp,nores,1024,100000,0.25,3200000,3.05",
            "sessions,clients_as,mode,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us",
            "8,mp,nores,1024,100000,0.25,3200000,3.05,800000,,",
        ),
        (
            // As the program's documentation has it: no nloop column.
            "tateyama-reqres",
            "4,mt,async,256,0.4,2000000,0.48",
            "sessions,clients_as,mode,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us",
            "4,mt,async,256,100000,0.4,2000000,0.48,400000,,",
        ),
        (
            "tateyama-datachannel",
            "4,mt,1024,1000000,0.556,7192080.3,6.86",
            "sessions,clients_as,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us",
            "4,mt,1024,1000000,0.556,7192080.3,6.86,4000000,,",
        ),
    ];
    for (parser, printed, head, line) in cases {
        let cmd = format!("echo '{printed}'");
        let mut p = Proc::spawn(&[
            "run",
            "--results",
            results.str(),
            "--transport",
            "exec",
            "--parser",
            parser,
            "--client-cmd",
            &cmd,
            "--format",
            "csv",
        ]);
        let st = p.wait(Duration::from_secs(60));
        assert!(st.success(), "{}", p.stderr_all());
        let out = p.stdout_all();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, [head, line], "{printed}");
    }
}

/// Issue 36: the IPC report's mt vs mp, from a sweep of reqres_loop
/// commands (a stand-in printing its lines): two lines named by what the
/// program said (clients_as=mt, clients_as=mp), not by the commands.
#[test]
fn issue_36_reqres_loop_mt_and_mp_are_two_lines() {
    let _g = shared();
    let dir = TempDir::new("exec-mtmp");
    let spec = dir.path().join("ipc.toml");
    std::fs::write(
        &spec,
        r#"
name = "ipc"
[base]
transport = "exec"
parser = "tateyama-reqres"
[matrix]
clients = [1, 2, 4]
client_cmd = ["echo {clients},mt,sync,128,1000,0.5,400000,0.05", "echo {clients},mp,sync,128,1000,0.5,300000,0.04"]
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    sweep_ok(&spec, &results, &[]);
    let (md, figures) = report_ok(&results.join("ipc"), &dir.path().join("report.html"), &[]);
    assert!(md.contains("clients_as (mp, mt)"), "{md}");
    let f = figure(&figures, "Throughput vs clients");
    assert!(
        f.iter().any(|t| t == "clients_as=mt") && f.iter().any(|t| t == "clients_as=mp"),
        "{f:?}"
    );
    assert!(
        !f.iter().any(|t| t.contains("client=")),
        "lines named by the command: {f:?}"
    );
}

/// A sweep of sockperf runs (clients x placement), then its table and
/// report.
#[test]
fn a_sweep_of_exec_runs_gives_a_table_and_a_report() {
    // Beside other tests: it asserts what was made, not how fast.
    let _solo = shared();
    if !installed("sockperf") {
        return;
    }
    let dir = TempDir::new("exec-sweep");
    let spec = dir.path().join("sockperf.toml");
    std::fs::write(
        &spec,
        r#"
name = "sockperf"
[base]
transport = "exec"
server_cmd = "exec sockperf server -i 127.0.0.1 -p {port} --tcp"
client_cmd = "sockperf ping-pong -i 127.0.0.1 -p {port} --tcp -m 64 -t {duration_s}"
parser = "sockperf"
duration = "1s"
[matrix]
clients = [1, 2]
placement = ["balanced", "separated"]
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "sweep",
        spec.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(240));
    assert!(st.success(), "{}", p.stderr_all());
    let exp = results.join("sockperf");
    let mut t = Proc::spawn(&["table", exp.to_str().unwrap()]);
    assert!(t.wait(Duration::from_secs(30)).success());
    let md = t.stdout_all();
    assert_eq!(md.matches("| complete |").count(), 4, "{md}");
    let report = dir.path().join("report.html");
    let mut r = Proc::spawn(&[
        "report",
        exp.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert!(
        r.wait(Duration::from_secs(60)).success(),
        "{}",
        r.stderr_all()
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Programs (exec)") && html.contains("half the round trip"));
    let md = std::fs::read_to_string(report.with_extension("md")).unwrap();
    assert!(md.contains("| sockperf |"), "{md}");
}

/// Issue 36: the messenger report's Figure 1.1 from a sweep whose matrix
/// names its servers: two fake servers (Python's HTTP server, started by
/// the run as `server_cmd`), a client that prints the report's own output,
/// clients x placement. The report draws one panel per placement, a line
/// per server named by the spec's names; `table` names them too.
#[test]
fn issue_36_a_sweep_over_named_servers_gives_a_line_per_server_and_a_panel_per_placement() {
    // Beside other tests: it asserts what was made, not how fast.
    let _solo = shared();
    let dir = TempDir::new("exec-named");
    let spec = dir.path().join("crimson-vs-async.toml");
    std::fs::write(
        &spec,
        format!(
            r#"
name = "named"
[base]
transport = "exec"
parser = "crimson-msgr"
client_cmd = "cat {CRIMSON}"
[matrix]
server_cmd = {{ crimson = "exec python3 -m http.server --bind 127.0.0.1 {{port}}", async = "exec python3 -u -m http.server --bind 127.0.0.1 {{port}}" }}
clients = [1, 2]
placement = ["balanced", "separated"]
"#
        ),
    )
    .unwrap();
    let results = dir.path().join("results");
    sweep_ok(&spec, &results, &[]);
    let exp = results.join("named");
    let table = table_ok(&exp, &[]);
    assert!(table.starts_with("| server |"), "{table}");
    assert_eq!(table.matches("| crimson |").count(), 4, "{table}");
    assert_eq!(table.matches("| async |").count(), 4, "{table}");
    let (md, figures) = report_ok(&exp, &dir.path().join("report.html"), &[]);
    assert!(
        md.contains(
            "Varied: clients (1, 2); placement (balanced, separated); server (async, crimson)."
        ),
        "{md}"
    );
    for placement in ["balanced", "separated"] {
        let f = figure(
            &figures,
            &format!("Throughput vs clients: placement={placement}"),
        );
        for line in ["server=crimson", "server=async"] {
            assert!(f.iter().any(|t| t == line), "{placement}: no {line}: {f:?}");
        }
        // The placement is the panel's, not in a line's name.
        assert!(!f[1..].iter().any(|t| t.contains("placement=")), "{f:?}");
    }
    // Any variable may make the lines or the panels; a name that is none
    // is refused with the ones there are.
    let (md, _) = report_ok(
        &exp,
        &dir.path().join("by-server.html"),
        &["--series", "placement", "--panel", "server_cmd"],
    );
    assert!(md.contains("Throughput vs clients: server=crimson"), "{md}");
    let mut r = Proc::spawn(&[
        "report",
        exp.to_str().unwrap(),
        "-o",
        dir.path().join("bad.html").to_str().unwrap(),
        "--series",
        "sever_cmd",
    ]);
    assert_eq!(r.wait(Duration::from_secs(60)).code(), Some(2));
    assert!(
        r.stderr_all()
            .contains("--series sever_cmd: not a variable of these runs; they vary in clients, placement, server_cmd"),
        "{}",
        r.stderr_all()
    );
}

/// Issue 48: a program of the user's without a target, its server given
/// by PID (the OSD slides' route: fio against a cluster, the OSD's PID),
/// gets the server's CPU, cores used, ops per core and threads. Before,
/// `--server-pid` was ignored without a word ("no server", no CPU).
#[test]
fn issue_48_an_exec_run_without_a_target_observes_the_server_it_is_given() {
    let _g = shared();
    // The server: a process that keeps one CPU busy.
    let mut server = std::process::Command::new("python3")
        .args(["-c", "while True: pass"])
        .spawn()
        .expect("python3 runs");
    let dir = TempDir::new("exec-observed");
    // Its own CPU time over the run, from /proc: what it really used.
    let ticks = |pid: u32| -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
    };
    let before = ticks(server.id());
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "exec",
            "--parser",
            "regex:ops=(?P<ops>\\d+) seconds=(?P<seconds>[0-9.]+)",
            "--client-cmd",
            "python3 -c 'import time; time.sleep(1.5); print(\"ops=3000 seconds=1.5\")'",
            "--server-pid",
            &server.id().to_string(),
        ],
    );
    let used = ticks(server.id()) - before;
    let _ = server.kill();
    let _ = server.wait();
    assert!(st.success(), "{err}");
    let s = &r.summary;
    let cpu = s.server_cpu_s.expect("the server's CPU");
    let cores = s.server_cores_used.expect("the cores it used");
    // It spun the whole run: the run's measured window (1.5 s of it) saw
    // most of what /proc says it used over the run, however busy the
    // machine was (a tick of slack), and never more than one core.
    assert!(
        cpu > 0.0 && cpu <= used + 0.02 && cpu >= 0.4 * used && cores < 1.3,
        "{cpu} s observed, {used} s used over the run, {cores} cores"
    );
    let threads = s.server_threads.as_ref().expect("its threads");
    assert!(
        threads.groups.iter().any(|g| g.group.starts_with("python")),
        "{threads:?}"
    );
    assert!(s.server_cpu_us_per_op.is_some_and(|us| us > 0.0));
}
