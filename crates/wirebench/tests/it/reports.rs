//! Issue 36: every reference report, reproduced end to end. Each spec of
//! `specs/reports/` runs at its small scale (`sweep --scale small`), then
//! `wirebench report` draws it; each test checks the figures and tables
//! `docs/reproducing.md` lists for its report: their series, axes and
//! units (not pixels).

use crate::helpers::*;
use std::path::{Path, PathBuf};
use wirebench_core::result::RunResult;

/// A spec of specs/reports/ run at its small scale, and its report.
struct Reproduced {
    _dir: TempDir,
    /// The experiment's directory.
    exp: PathBuf,
    /// The report's Markdown.
    md: String,
    /// Each figure's texts, its title first.
    figures: Vec<Vec<String>>,
}

fn reproduce(name: &str) -> Reproduced {
    let dir = TempDir::new(&format!("reports-{name}"));
    let spec = format!(
        "{}/../../specs/reports/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let results = dir.path().join("results");
    let err = sweep_ok(Path::new(&spec), &results, &["--scale", "small"]);
    assert!(err.contains("run(s) complete"), "{err}");
    let exp = results.join(format!("{name}-small"));
    let (md, figures) = report_ok(&exp, &dir.path().join("report.html"), &[]);
    Reproduced {
        _dir: dir,
        exp,
        md,
        figures,
    }
}

impl Reproduced {
    /// The figure whose title holds `title`, its texts.
    fn figure(&self, title: &str) -> &[String] {
        figure(&self.figures, title)
    }

    /// The rows of the Markdown table under heading `heading`, as cells.
    fn table(&self, heading: &str) -> Vec<Vec<String>> {
        let section = self
            .md
            .split(&format!("## {heading}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {heading}: {}", self.md));
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .map(|c| c.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .map(|mut v| {
                v.remove(0);
                v.pop();
                v
            })
            .collect()
    }
}

fn has(texts: &[String], t: &str) -> bool {
    texts.iter().any(|x| x == t)
}

/// The S3 report: the TTFB table (mean, p99), the throughput table with the
/// R/W ratio, and the histogram of every test's TTFB.
#[test]
fn s3_report() {
    let _g = shared();
    let r = reproduce("s3");
    let summary = r.table("Summary");
    let head = &summary[0];
    let mean = head
        .iter()
        .position(|h| h == "TTFB mean")
        .expect("TTFB mean");
    assert_eq!(head[mean + 1], "TTFB p99");
    let rw = r.table("Read and write");
    assert_eq!(
        rw[0],
        [
            "size",
            "connections",
            "read ops/s",
            "read MiB/s",
            "write ops/s",
            "write MiB/s",
            "R/W ratio"
        ]
    );
    assert_eq!(rw.len(), 2 + 6, "3 sizes x 2 client counts: {rw:?}");
    for row in &rw[2..] {
        let ratio: f64 = row[6].parse().unwrap_or_else(|_| panic!("{row:?}"));
        assert!(ratio > 0.0, "{row:?}");
    }
    // Reads and writes apart, every test drawn (issue 48).
    let f = r.figure("Time to first byte of get, 6 tests");
    assert!(
        has(f, "time to first byte") && has(f, "% of requests"),
        "{f:?}"
    );
    assert!(f.iter().any(|t| t.contains("mode=get")), "{f:?}");
    let f = r.figure("Time to first byte of put, 6 tests");
    assert!(f.iter().any(|t| t.contains("mode=put")), "{f:?}");
    // Sixty tests, the full spec's count (issue 48: the histogram stopped
    // at 40): the small scale's reads, each taken ten times as a test of
    // its own, come out on two pages on the same bins, every test a line.
    let gets: Vec<RunResult> = walk_runs(&r.exp)
        .into_iter()
        .filter(|x| x.summary.by_op.get("get").is_some_and(|o| o.ttfb.is_some()))
        .collect();
    assert_eq!(gets.len(), 6, "the small scale's reads");
    let sixty = r.exp.with_file_name("sixty");
    for k in 0..60 {
        let mut x = gets[k % gets.len()].clone();
        x.run_id = format!("{}-{k:02}", x.run_id);
        x.point = vec![("test".into(), format!("t{k:02}"))];
        let d = sixty.join(&x.run_id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("run.json"), serde_json::to_string(&x).unwrap()).unwrap();
    }
    let (_, figures) = report_ok(&sixty, &sixty.with_file_name("sixty.html"), &[]);
    let pages: Vec<&Vec<String>> = figures
        .iter()
        .filter(|f| f[0].starts_with("Time to first byte"))
        .collect();
    let titles: Vec<&str> = pages.iter().map(|f| f[0].as_str()).collect();
    assert_eq!(
        titles,
        [
            "Time to first byte, tests 1-40 of 60",
            "Time to first byte, tests 41-60 of 60"
        ]
    );
    let lines = |f: &[String]| -> Vec<String> {
        f.iter()
            .filter_map(|t| t.split("test=").nth(1).map(str::to_string))
            .collect()
    };
    let (first, second) = (lines(pages[0]), lines(pages[1]));
    assert_eq!((first.len(), second.len()), (40, 20), "{:?}", pages[1]);
    let mut all: Vec<String> = first.into_iter().chain(second).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 60, "every test once: {all:?}");
    // `table` of the sweep: reads' MiB/s come in, writes' go out, each
    // in its own column (issue 48: reads were "out throughput 0.000").
    let table = table_ok(&r.exp, &[]);
    let head: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let col = |name: &str| head.iter().position(|h| *h == name).expect(name);
    let (read, write, mode) = (
        col("in throughput (MiB/s)"),
        col("out throughput (MiB/s)"),
        col("workload"),
    );
    let mut gets = 0;
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let mib = |k: usize| -> f64 { cells[k].parse().unwrap_or_else(|_| panic!("{row}")) };
        if cells[mode] == "get" {
            gets += 1;
            assert!(mib(read) > 0.0 && mib(write) == 0.0, "{row}");
        } else {
            assert!(mib(write) > 0.0 && mib(read) == 0.0, "{row}");
        }
    }
    assert_eq!(gets, 6, "{table}");
}

/// The RAMCloud timeline report's method: the table per event (cumulative
/// and delta, min/mean/max, standard deviation), the time sinks, and each
/// event's CDF.
#[test]
fn timeline_report() {
    let _g = shared();
    let r = reproduce("timeline");
    assert!(r.md.contains("Timeline of the client"), "{}", r.md);
    assert!(
        r.md.contains("(         Cumulative         )  |              Delta"),
        "{}",
        r.md
    );
    assert!(
        r.md.contains("Time sinks (the largest mean deltas"),
        "{}",
        r.md
    );
    let f = r.figure("[time sink 1:");
    assert!(
        has(f, "time since the previous event") && has(f, "fraction of operations"),
        "{f:?}"
    );
    assert!(
        f.iter().any(|t| t.starts_with("mean ")),
        "its mean marked: {f:?}"
    );
}

/// The RAMCloud report's own master timeline (its detailed table's mean
/// deltas, 44 events, three write RPCs), as a TimeTrace log of 1000
/// operations, each delta drawn evenly within half of its mean either
/// side. The time sinks sum an event's repeats, as the report's "3 x
/// ~300ns": its three issue-path sinks come out with their sums, beside
/// the replies' waits; the table keeps tenths of a ns; every event,
/// the first included, has its CDF.
#[test]
fn timeline_of_a_ramcloud_shaped_log() {
    let _g = shared();
    let rpc: [(&str, [f64; 3]); 13] = [
        (
            "Invoking  Send 'write       segment' RPC",
            [139.0, 50.6, 44.6],
        ),
        ("Invoking  client.send()", [141.1, 98.3, 88.6]),
        ("Invoking  session->clientSend()", [16.5, 16.6, 19.2]),
        (
            "Acquired Dispatch::Lock in TransportManager::WorkerSession::clientSend",
            [308.8, 307.6, 302.3],
        ),
        ("Invoking  Instantiate new ClientRpc", [102.8, 45.3, 30.0]),
        ("Completed Instantiate new ClientRpc", [133.4, 49.1, 52.9]),
        ("Invoking  rpc->sendOrQueue", [21.3, 16.6, 16.5]),
        ("Invoking  postSendZeroCopy", [387.9, 114.6, 146.3]),
        ("Completed postSendZeroCopy", [587.0, 334.2, 368.3]),
        ("Completed rpc->sendOrQueue", [196.4, 58.3, 60.1]),
        ("Completed session->clientSend()", [73.2, 71.7, 56.5]),
        ("Completed client.send()", [16.9, 16.3, 16.7]),
        (
            "Completed Send 'write       segment' RPC",
            [21.8, 22.5, 34.4],
        ),
    ];
    let mut events: Vec<(&str, f64)> = vec![("Invoking  sync() to backups", 0.0)];
    for i in 0..3 {
        events.extend(rpc.iter().map(|(name, d)| (*name, d[i])));
    }
    for d in [3600.0, 1600.0, 959.9] {
        events.push(("Reaped outstanding RPC", d));
    }
    events.push(("Completed sync() to backups", 60.2));
    assert_eq!(events.len(), 44);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut text = String::new();
    for _ in 0..1000 {
        let mut t = 0.0f64;
        for (name, mean) in &events {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = mean * (0.5 + (x % 1_000_001) as f64 / 1e6);
            t += d;
            text.push_str(&format!("{t:10.1} ns (+ {d:8.1} ns): {name}\n"));
        }
        text.push('\n');
    }
    let dir = TempDir::new("ramcloud");
    let log = dir.path().join("master.log");
    std::fs::write(&log, text).unwrap();
    let html = dir.path().join("timeline.html");
    let mut p = Proc::spawn(&[
        "timeline",
        log.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let st = p.wait(std::time::Duration::from_secs(60));
    let (out, err) = (p.stdout_all(), p.stderr_all());
    assert!(st.success(), "{err}");
    assert!(
        out.contains("averaged over 1000 same-shape timelines"),
        "{out}"
    );
    // Each sink: its events, "3 x ~MEAN = SUM", within 4% of the report's
    // (the sum is printed to a tenth of its unit).
    let sink = |name: &str| -> f64 {
        let line = out
            .lines()
            .find(|l| l.contains(&format!(". {name} (events ")))
            .unwrap_or_else(|| panic!("no sink {name}: {out}"));
        let sum = line
            .split(" = ")
            .nth(1)
            .and_then(|r| r.split_once(" since"))
            .and_then(|(v, _)| match v.split_once(' ') {
                Some((n, "ns")) => n.parse::<f64>().ok(),
                Some((n, "us")) => n.parse::<f64>().ok().map(|n| n * 1e3),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{line}"));
        assert!(line.contains(": 3 x ~"), "{line}");
        sum
    };
    for (name, truth) in [
        (
            "Acquired Dispatch::Lock in TransportManager::WorkerSession::clientSend",
            918.7,
        ),
        ("Invoking  postSendZeroCopy", 648.8),
        // Printed to a tenth of a us: 1.3 us.
        ("Completed postSendZeroCopy", 1289.5),
    ] {
        let got = sink(name);
        assert!(
            (got / truth - 1.0).abs() < 0.04,
            "{name}: {got} ns against {truth}: {out}"
        );
    }
    // The replies' waits are the largest, summed too (6.2 us of 10.8).
    assert!(
        out.contains("1. Reaped outstanding RPC (events 40, 41, 42): 3 x ~"),
        "{out}"
    );
    // Tenths of a ns, the first event's row all zero.
    assert!(
        out.contains("(   0.0 ns   0.0 ns   0.0 ns )  |    0.0 ns     0.0 ns     0.0 ns  |  [   0.0 ns ] Invoking  sync() to backups"),
        "{out}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("0. Invoking  sync() to backups (the first event"),
        "the first event's CDF"
    );
    assert!(
        page.contains("42. Reaped outstanding RPC [time sink 1, 3 of 3:"),
        "its last wait marked"
    );
}

/// The Crimson update's client figures: fio's IOPS and latency (mean and
/// p99) per test, read and write, 4 KiB and 64 KiB.
#[test]
fn osd_report() {
    let _g = shared();
    for program in ["fio", "nbdkit"] {
        if !Path::new(&format!("/usr/bin/{program}")).exists() {
            assert!(
                std::env::var_os("WIREBENCH_REQUIRE_EXEC").is_none(),
                "{program} is not installed"
            );
            crate::helpers::skip(format!("{program} is not installed"));
            return;
        }
    }
    let r = reproduce("osd");
    // The slides' server measures (issue 48): the block server the runs
    // started (nbdkit, the OSD's stand-in) observed in every run.
    let server = r.table("Server");
    let col = |name: &str| server[0].iter().position(|h| h == name).expect(name);
    let (us, used, per_core, outside) = (
        col("server CPU us/op"),
        col("cores used (cpuset)"),
        col("ops/s per core used"),
        col("threads outside the cpuset"),
    );
    assert_eq!(server.len(), 2 + 4, "a row per run: {server:?}");
    for row in &server[2..] {
        let num = |k: usize| -> f64 {
            row[k]
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{row:?}"))
        };
        assert!(
            num(us) > 0.0 && num(used) > 0.0 && num(per_core) > 0.0,
            "{row:?}"
        );
        assert!(!row[outside].is_empty(), "{row:?}");
    }
    let f = r.figure("Ops/s per server core used vs size");
    assert!(
        has(f, "client=randread") && has(f, "client=randwrite"),
        "{f:?}"
    );
    let f = r.figure("Throughput vs size");
    assert!(
        has(f, "client=randread") && has(f, "client=randwrite"),
        "{f:?}"
    );
    assert!(
        has(f, "4KiB") && has(f, "64KiB") && has(f, "ops/s"),
        "{f:?}"
    );
    let f = r.figure("Latency-response");
    assert!(f.iter().any(|t| t.ends_with(" p99")), "{f:?}");
    // Issue 48: what fio's runs did not measure reads "-", not 0: no
    // connection to time; the server's CPUs are its cpuset's.
    let table = table_ok(&r.exp, &[]);
    let head: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let col = |name: &str| head.iter().position(|h| *h == name).expect(name);
    let (connect, smp) = (col("connect time (s)"), col("server CPUs (smp)"));
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[connect], "-", "{row}");
        let cpus: usize = cells[smp].parse().unwrap_or_else(|_| panic!("{row}"));
        assert!(cpus >= 1, "{row}");
    }
}

/// The messenger report: Figure 1.1 (IOPS against clients, a line per
/// server, a panel per placement), the table of runs in its columns, CPU
/// per core over time.
#[test]
fn messenger_report() {
    // Beside other tests: it asserts what was made, not how fast.
    let _solo = shared();
    let r = reproduce("messenger");
    // Figure 1.1 as the spec's [report] asks: a panel per server, a line
    // per placement.
    for server in ["crimson", "async"] {
        let f = r.figure(&format!("Throughput vs clients: server={server}"));
        assert!(
            has(f, "placement=balanced") && has(f, "placement=separated"),
            "{f:?}"
        );
        assert!(has(f, "clients") && has(f, "ops/s"), "axes: {f:?}");
    }
    // The three heatmaps of the spec's runs, no other; the server's rows
    // the share of each core its threads used.
    let maps: Vec<&Vec<String>> = r
        .figures
        .iter()
        .filter(|f| f[0].starts_with("CPU busy per core"))
        .collect();
    let titles: Vec<&str> = maps.iter().map(|f| f[0].as_str()).collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    for (k, (clients, placement)) in [("1", "balanced"), ("2", "balanced"), ("2", "separated")]
        .into_iter()
        .enumerate()
    {
        let t = titles[k];
        assert!(
            t.starts_with("CPU busy per core, of the server by its threads:")
                && t.contains(&format!("clients={clients}"))
                && t.contains(&format!("placement={placement}"))
                && t.contains("server=crimson"),
            "heatmap {k}: {t}"
        );
        assert!(
            maps[k].iter().any(|x| x.starts_with("client cpu")),
            "{:?}",
            maps[k]
        );
        assert!(
            maps[k].iter().any(|x| x.starts_with("server cpu")),
            "{:?}",
            maps[k]
        );
    }
    let table = table_ok(&r.exp, &[]);
    let head = table.lines().next().unwrap();
    for col in [
        "| server |",
        "IOPS (k)",
        "placement",
        "connect time (s)",
        "latency mean (ms)",
        "messages received",
        "messaging time (s)",
        "out throughput (MiB/s)",
        "server CPUs (smp)",
    ] {
        assert!(head.contains(col), "{col}: {head}");
    }
    assert_eq!(table.matches("| complete |").count(), 8, "{table}");
}

/// The IPC report: its CSV lines (sessions, mt|mp, mode, size, nloop,
/// elapsed, messages/s, GB/s) and mt against mp.
#[test]
fn ipc_report() {
    // Beside other tests: it asserts what was made, not how fast.
    let _solo = shared();
    let r = reproduce("ipc");
    // A panel per message size, a line per mode and mt/mp, in the CSV's
    // unit: messages/s, a round trip counted as two.
    for size in ["128B", "4KiB"] {
        let f = r.figure(&format!("Throughput vs clients: size={size}"));
        for mode in ["sync", "async", "nores"] {
            for c in ["mt", "mp"] {
                let line = format!("mode={mode} clients_as={c}");
                assert!(has(f, &line), "{line}: {f:?}");
            }
        }
        assert!(
            has(f, "clients") && has(f, "messages/s (a round trip is two)"),
            "{f:?}"
        );
    }
    let csv = table_ok(&r.exp, &["--format", "ipc"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "sessions,clients_as,mode,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us"
    );
    assert_eq!(lines.len(), 25, "{csv}");
    let mut order = Vec::new();
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        let sessions: f64 = f[0].parse().unwrap();
        assert!(
            ["mt", "mp"].contains(&f[1]) && ["sync", "async", "nores"].contains(&f[2]),
            "{l}"
        );
        order.push((
            f[0].to_string(),
            f[3].to_string(),
            f[2].to_string(),
            f[1].to_string(),
        ));
        // nloop per session: 20000 operations in all.
        let nloop: f64 = f[4].parse().unwrap();
        assert_eq!(nloop * sessions, 20000.0, "{l}");
        let (elapsed, msgs, gib): (f64, f64, f64) = (
            f[5].parse().unwrap(),
            f[6].parse().unwrap(),
            f[7].parse().unwrap(),
        );
        let per_op = if f[2] == "nores" { 1.0 } else { 2.0 };
        assert!((msgs * elapsed / per_op - 20000.0).abs() < 200.0, "{l}");
        let size: f64 = f[3].parse().unwrap();
        assert!(
            (gib - msgs * size / 1073741824.0).abs() < 0.001 + gib * 0.01,
            "{l}"
        );
    }
    // The sweep's order: clients, then size, mode and mt/mp, as the
    // spec's matrix lists them.
    let mut planned = Vec::new();
    for clients in ["1", "2"] {
        for size in ["128", "4096"] {
            for mode in ["sync", "async", "nores"] {
                for c in ["mt", "mp"] {
                    planned.push((
                        clients.to_string(),
                        size.to_string(),
                        mode.to_string(),
                        c.to_string(),
                    ));
                }
            }
        }
    }
    assert_eq!(order, planned, "{csv}");
}

/// The IPC report's data channel: at small scale wirebench's own (the
/// server writes, the client reads), its CSV lines without a mode column
/// in the sweep's order, one message per operation; at full scale the
/// spec's own command, run with a stand-in data_channel_write that prints
/// the report's line for the report's example, gives that line back
/// exactly.
#[test]
fn ipc_datachannel_report() {
    let _solo = shared();
    let r = reproduce("ipc-datachannel");
    let csv = table_ok(&r.exp, &["--format", "ipc"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "sessions,clients_as,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us"
    );
    let got: Vec<(String, String, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let (elapsed, msgs): (f64, f64) = (f[4].parse().unwrap(), f[5].parse().unwrap());
            assert!(
                (msgs * elapsed - 20000.0).abs() < 200.0,
                "one message per operation: {l}"
            );
            (f[0].to_string(), f[2].to_string(), f[1].to_string())
        })
        .collect();
    let mut planned = Vec::new();
    for clients in ["1", "2"] {
        for size in ["128", "4096"] {
            for c in ["mt", "mp"] {
                planned.push((clients.to_string(), size.to_string(), c.to_string()));
            }
        }
    }
    assert_eq!(got, planned, "{csv}");
    let f = r.figure("Throughput vs clients");
    assert!(has(f, "messages/s (a round trip is two)"), "{f:?}");

    // The full spec's command, as written, with a stand-in program.
    let spec_path = format!(
        "{}/../../specs/reports/ipc-datachannel.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let spec: toml::Value = toml::from_str(&std::fs::read_to_string(spec_path).unwrap()).unwrap();
    let cmd = spec["matrix"]["client_cmd"][0].as_str().unwrap();
    let dir = TempDir::new("datachannel-line");
    let program = dir.path().join("data_channel_write");
    std::fs::write(
        &program,
        "#!/bin/sh\n[ \"$*\" = \"mt 4 1024 1000000\" ] || { echo \"not the report's example: $*\" >&2; exit 1; }\n\
         echo 4,mt,1024,1000000,0.556,7192080.3,6.86\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = cmd.replacen("data_channel_write", program.to_str().unwrap(), 1);
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "run",
        "--transport",
        "exec",
        "--parser",
        spec["base"]["parser"].as_str().unwrap(),
        "--client-cmd",
        &cmd,
        "--clients",
        "4",
        "--size",
        "1KiB",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert!(
        p.wait(std::time::Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    let csv = table_ok(&results, &["--format", "ipc"]);
    assert_eq!(
        csv.lines().nth(1),
        Some("4,mt,1024,1000000,0.556,7192080.3,6.86,4000000,,"),
        "{csv}"
    );
}
