use super::*;
use wirebench_core::result::fixture::{interval, sample};

fn run(id: &str, clients: usize, policy: &str, ops: f64) -> RunResult {
    let mut r = sample();
    r.run_id = id.into();
    r.spec.clients = clients;
    r.placement.policy = Some(policy.into());
    r.summary.ops = 10;
    r.summary.ops_per_s = ops;
    r.intervals = (0..3).map(|k| interval(k, ops, 50_000)).collect();
    r
}

/// A run in stages gets a row per stage, a stage behind said so.
#[test]
fn a_staged_run_has_its_stages_table() {
    let mut r = run("staged", 1, "balanced", 1000.0);
    let stages = wirebench_core::stages::parse("1s:100, 2s:100->1k").unwrap();
    r.stages = wirebench_core::ramp::judge::results(&stages, 0, &r.intervals);
    r.stages[1].kept_up = false;
    let md = markdown(&[r], &[], &[]);
    assert!(md.contains("## Stages"), "{md}");
    assert!(md.contains("| staged | 1s:100/s |"), "{md}");
    assert!(md.contains("| behind |"), "{md}");
}

/// The messenger report's study: two servers (by command), clients,
/// two placements; named in the spec or not.
fn crimson_vs_async(named: bool) -> Vec<RunResult> {
    let servers = [
        (
            "crimson",
            "perf-crimson-msgr --poll-mode --mode=2 --server-addr=v2:127.0.0.1:{port} --cpuset={server_cpus}",
        ),
        (
            "async",
            "taskset -ac {server_cpus} perf-async-msgr --addr=v2:127.0.0.1:{port} --threads={clients}",
        ),
    ];
    let mut out = Vec::new();
    for (k, (name, cmd)) in servers.iter().enumerate() {
        for placement in ["balanced", "separated"] {
            for clients in [1usize, 2] {
                let spec = serde_json::json!({
                    "transport": "exec",
                    "parser": "crimson-msgr",
                    "client_cmd": "perf-crimson-msgr --mode=1 --server-addr=v2:127.0.0.1:{port}",
                    "server_cmd": cmd,
                    "clients": clients,
                });
                let scale = if placement == "separated" { 2.0 } else { 1.0 };
                let ops = 1000.0 * scale * clients as f64 * (k + 1) as f64;
                let mut r = measured(
                    &format!("r-{name}-{placement}-{clients}"),
                    &spec.to_string(),
                    ops,
                    50_000,
                );
                r.placement.policy = Some(placement.into());
                if named {
                    r.point = vec![
                        ("server_cmd".into(), name.to_string()),
                        ("clients".into(), clients.to_string()),
                        ("placement".into(), placement.into()),
                    ];
                }
                out.push(r);
            }
        }
    }
    out
}

#[test]
fn issue_36_a_sweep_over_server_commands_gives_a_line_per_server_and_a_panel_per_placement() {
    for named in [true, false] {
        let runs = crimson_vs_async(named);
        let figs = figures(&runs, &Layout::default());
        let panels: Vec<&Figure> = figs
            .iter()
            .filter(|f| f.title.starts_with("Throughput vs"))
            .collect();
        let titles: Vec<&str> = panels.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Throughput vs clients: placement=balanced",
                "Throughput vs clients: placement=separated"
            ]
        );
        let (crimson, asynch) = if named {
            ("server=crimson", "server=async")
        } else {
            ("server=perf-crimson-msgr", "server=perf-async-msgr")
        };
        for f in &panels {
            let t = texts(&f.svg);
            assert!(t.iter().any(|x| x == crimson), "{named}: {t:?}");
            assert!(t.iter().any(|x| x == asynch), "{named}: {t:?}");
            // Shared axes: the separated panel's top (8k) on both.
            assert!(t.iter().any(|x| x == "8.0k"), "{t:?}");
        }
        let md = markdown(&runs, &figs, &[]);
        assert!(
            md.contains(if named {
                "Varied: clients (1, 2); placement (balanced, separated); server (async, crimson)."
            } else {
                "Varied: clients (1, 2); placement (balanced, separated); server (perf-crimson-msgr, perf-async-msgr)."
            }),
            "{md}"
        );
        assert!(md.contains("| server |"), "{md}");
        // One panel per value of any variable, asked for.
        let by_server = figures(
            &runs,
            &Layout {
                panel: Some("server_cmd".into()),
                series: Some(vec!["placement".into()]),
                ..Layout::default()
            },
        );
        assert_eq!(
            by_server
                .iter()
                .filter(|f| f.title.starts_with("Throughput vs"))
                .count(),
            2
        );
    }
    let runs = crimson_vs_async(true);
    // A variable by the name the legends show (issue 48: `server` was
    // refused): the same panels as by its key.
    let by_name = Layout {
        panel: Some("server".into()),
        series: Some(vec!["placement".into()]),
        ..Layout::default()
    };
    assert_eq!(check_layout(&runs, &by_name), Ok(()));
    let titles = |l: &Layout| -> Vec<String> {
        figures(&runs, l)
            .into_iter()
            .map(|f| f.title)
            .filter(|t| t.starts_with("Throughput vs"))
            .collect()
    };
    let by_key = Layout {
        panel: Some("server_cmd".into()),
        ..by_name.clone()
    };
    assert_eq!(titles(&by_name), titles(&by_key));
    assert_eq!(titles(&by_name).len(), 2, "{:?}", titles(&by_name));
    let bad = |l: Layout| check_layout(&runs, &l).unwrap_err();
    let e = bad(Layout {
        series: Some(vec!["sever_cmd".into()]),
        ..Layout::default()
    });
    assert!(e.starts_with("--series sever_cmd: not a variable of these runs; they vary in clients, placement, server_cmd"), "{e}");
    let e = bad(Layout {
        x: Some("server_cmd".into()),
        ..Layout::default()
    });
    assert!(
        e.contains("--x server_cmd: its values are not numbers"),
        "{e}"
    );
    check_layout(
        &runs,
        &Layout {
            series: Some(vec!["server_cmd".into(), "client_cmd".into()]),
            panel: Some("placement".into()),
            ..Layout::default()
        },
    )
    .unwrap();
}

#[test]
fn a_sweep_gives_every_figure_and_the_tables() {
    let runs = vec![
        run("r1", 1, "balanced", 1000.0),
        run("r2", 2, "balanced", 1800.0),
        run("r3", 1, "separated", 1200.0),
        run("r4", 2, "separated", 2100.0),
    ];
    let figs = figures(
        &runs,
        &Layout {
            x: Some("clients".into()),
            series: Some(vec!["placement".into()]),
            labels: BTreeMap::new(),
            panel: None,
            heatmaps: None,
        },
    );
    let titles: Vec<&str> = figs.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(titles[0], "Throughput vs clients");
    assert!(titles.contains(&"Latency-response: latency vs throughput achieved"));
    assert!(titles.contains(&"Latency by percentile"));
    assert!(titles.contains(&"Throughput per second"));
    assert!(
        figs[0].svg.contains("placement=balanced") && figs[0].svg.contains("placement=separated")
    );
    let md = markdown(&runs, &figs, &[]);
    assert!(
        md.contains("| r4 | 2 | separated | 2100 |")
            && md.contains(
                "Every run has transport msgr, mode echo, size 64B, conns/client 1: not repeated in the table."
            ),
        "{md}"
    );
    assert!(
        md.contains("## Throughput and p99 by size and connections"),
        "{md}"
    );
    // The summary and hints as they read (the environment is this machine's).
    let tables = md.split("## Environment").next().unwrap();
    insta::assert_snapshot!(tables);
    let page = html(&runs, &figs, &[]);
    assert_eq!(page.matches("<svg").count(), figs.len());
    assert!(!page.contains("<script"), "the page needs no script");
    assert!(
        !page.contains("http://")
            || page.matches("http://").count()
                == page.matches("http://www.w3.org/2000/svg").count()
    );
}

#[test]
fn s3_runs_show_the_time_to_first_byte_by_size_and_connections() {
    let s3 = |id: &str, size: u64, ttfb_ms: u64| {
        let mut r = run(id, 4, "balanced", 500.0);
        if let wirebench_core::spec::TransportSpec::Msgr(m) = &mut r.spec.transport {
            m.size_bytes = size;
        }
        let mut h = wirebench_core::hist::new_hist();
        wirebench_core::hist::record(&mut h, ttfb_ms * 1_000_000);
        r.summary.by_op.insert(
            "get".into(),
            wirebench_core::result::OpSummary {
                ops: 10,
                ttfb: Some(wirebench_core::hist::LatencySummary::of(&h)),
                ..Default::default()
            },
        );
        r
    };
    let runs = vec![
        s3("a", 4096, 3),
        s3("b", 1 << 20, 40),
        run("c", 4, "balanced", 1.0),
    ];
    let rows = size_by_clients(&runs).remove(0).1.rows;
    let text = format!("{rows:?}");
    assert!(text.contains("TTFB mean 3.00ms p99 3.00ms"), "{text}");
    assert!(text.contains("TTFB mean 39.99ms p99 40.01ms"), "{text}");
    assert_eq!(
        text.matches("TTFB").count(),
        2,
        "only S3 runs have a TTFB: {text}"
    );
}

/// Issue 20's tables: clients and connections apart, MiB/s both ways,
/// S3 size lists and ranges as given.
#[test]
fn the_summary_keeps_clients_and_connections_apart_and_s3_sizes_as_given() {
    let topo = wirebench_core::topo::Topology::with_cpus(
        wirebench_core::topo::CpuList::parse("0-1").unwrap(),
    );
    let spec = |json: &str| {
        serde_json::from_str::<wirebench_core::request::RunRequest>(json)
            .unwrap()
            .check(&topo)
            .unwrap()
            .0
    };
    let mut a = run("list", 1, "balanced", 10.0);
    a.spec = spec(r#"{"transport": "s3", "size": "4KiB,1MiB", "conns_per_client": 4}"#);
    a.summary.mib_per_s_out = 12.5;
    let mut b = run("range", 1, "balanced", 10.0);
    b.spec = spec(r#"{"transport": "s3", "size": "4KiB..1MiB"}"#);
    let md = MarkdownExporter.export(&Document::new("t").table(summary_table(&[a, b])));
    assert!(
        md.contains("| list | s3 | get | 4KiB,1MiB | 1 | 4 | balanced | 10 | 0.000 | 12.500 |"),
        "{md}"
    );
    assert!(
        md.contains("| range | s3 | get | 4KiB..1MiB | 1 | 1 |"),
        "{md}"
    );
}

fn spec_of(json: &str) -> wirebench_core::spec::RunSpec {
    let topo = wirebench_core::topo::Topology::with_cpus(
        wirebench_core::topo::CpuList::parse("0-1").unwrap(),
    );
    serde_json::from_str::<wirebench_core::request::RunRequest>(json)
        .unwrap()
        .check(&topo)
        .unwrap()
        .0
}

/// Each `<text>` of an SVG.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (_, rest) = t.split_once('>')?;
            Some(rest.split_once("</text>")?.0.trim().to_string())
        })
        .collect()
}

/// A run with latencies spread from `lat_ns` up, `ops` of them a second.
fn measured(id: &str, spec: &str, ops: f64, lat_ns: u64) -> RunResult {
    let mut r = run(id, 1, "balanced", ops);
    r.spec = spec_of(spec);
    r.placement.policy = None;
    let mut h = wirebench_core::hist::new_hist();
    for k in 1..=100 {
        h.saturating_record_n(lat_ns * k / 10, 10);
    }
    r.latency_hist = wirebench_core::hist::encode(&h);
    r.summary.latency = wirebench_core::hist::LatencySummary::of(&h);
    r.summary.ops = 1000;
    r.intervals = (0..3)
        .map(|k| {
            let mut i = interval(k, ops, lat_ns);
            i.start_ns = k * 1_000_000_000;
            i.end_ns = (k + 1) * 1_000_000_000;
            if k == 0 {
                i.phase = wirebench_core::result::Phase::Warmup;
            }
            i
        })
        .collect();
    r
}

/// Issue 20: a sweep over arch x depth x instances. Instances come as
/// one run each point; the main plot is throughput vs the first numeric
/// variable that varies, its lines named by the others; no plot repeats
/// a tick label; the tables read as they did.
#[test]
fn a_sweep_over_arch_depth_and_instances_reads_as_it_did() {
    let mut runs = Vec::new();
    let mut n = 0;
    for arch in ["reactor", "pool"] {
        for depth in [1, 16] {
            for instances in [1usize, 2] {
                let clients = 2 / instances;
                let parts: Vec<RunResult> = (0..instances)
                    .map(|i| {
                        n += 1;
                        let ops = 1000.0 * depth as f64 / instances as f64
                            * if arch == "pool" { 1.2 } else { 1.0 };
                        let spec = format!(
                            r#"{{"arch": "{arch}", "depth": {depth}, "clients": {clients}, "size": "4KiB"}}"#
                        );
                        measured(&format!("r{n:02}-{i}"), &spec, ops, 10_000 * depth)
                    })
                    .collect();
                runs.push(wirebench_core::merge::instances(&parts).unwrap());
            }
        }
    }
    let figs = figures(&runs, &Layout::default());
    assert_eq!(figs[0].title, "Throughput vs instances");
    let legend: Vec<String> = texts(&figs[0].svg)
        .into_iter()
        .filter(|t| t.contains('='))
        .collect();
    assert_eq!(
        legend,
        [
            "depth=1 arch=pool",
            "depth=1 arch=reactor",
            "depth=16 arch=pool",
            "depth=16 arch=reactor"
        ]
    );
    for f in &figs {
        let mut t = texts(&f.svg);
        let n = t.len();
        t.sort();
        t.dedup();
        assert_eq!(t.len(), n, "{}: a text repeats: {t:?}", f.title);
    }
    let spectrum = figs
        .iter()
        .find(|f| f.title == "Latency by percentile")
        .unwrap();
    let ticks = texts(&spectrum.svg);
    assert!(ticks.iter().any(|t| t.ends_with("us")) && ticks.iter().any(|t| t.ends_with('%')));
    // The warm-up shaded where time runs.
    let per_second = figs
        .iter()
        .find(|f| f.title == "Throughput per second")
        .unwrap();
    assert!(texts(&per_second.svg).contains(&"warm-up (not measured)".to_string()));
    let md = markdown(&runs, &figs, &[]);
    let tables = md.split("## Environment").next().unwrap();
    insta::assert_snapshot!(tables);
}

/// Issue 20: S3 runs of size lists and mixed operations: sizes as
/// given, a row per operation type under each mixed run, and the size x
/// connections tables apart per operation type.
#[test]
fn s3_sizes_and_mixed_operations_read_as_they_did() {
    let op = |ops: u64, mb: f64, lat_ns: u64, inbound: bool| {
        let mut h = wirebench_core::hist::new_hist();
        h.saturating_record_n(lat_ns, ops);
        wirebench_core::result::OpSummary {
            ops,
            ops_per_s: ops as f64 / 2.0,
            mib_per_s: mb,
            bytes_per_s: mb * 1_048_576.0,
            bytes_in: if inbound { ops * 4096 } else { 0 },
            bytes_out: if inbound { 0 } else { ops * 4096 },
            latency: wirebench_core::hist::LatencySummary::of(&h),
            latency_hist: wirebench_core::hist::encode(&h),
            ..Default::default()
        }
    };
    let mut runs = Vec::new();
    for (k, (size, conns)) in [("4KiB,1MiB", 1), ("4KiB,1MiB", 4), ("4KiB..1MiB", 4)]
        .into_iter()
        .enumerate()
    {
        let spec = format!(
            r#"{{"transport": "s3", "workload": "mixed", "mix": "get=70,put=30", "size": "{size}", "conns_per_client": {conns}}}"#
        );
        let mut r = measured(&format!("s3-{k}"), &spec, 100.0 * conns as f64, 2_000_000);
        r.summary.mib_per_s_in = 7.0 * conns as f64;
        r.summary.mib_per_s_out = 3.0 * conns as f64;
        r.summary.by_op.insert(
            "get".into(),
            op(70 * conns, 7.0 * conns as f64, 2_000_000, true),
        );
        r.summary.by_op.insert(
            "put".into(),
            op(30 * conns, 3.0 * conns as f64, 9_000_000, false),
        );
        runs.push(r);
    }
    let md = MarkdownExporter.export(&document(&runs, &[], &[]));
    // The operation under its run, in the mode column (kept for it).
    assert!(md.contains("| ↳ put | put |  |  | 15 |"), "{md}");
    assert!(
        md.contains("## Throughput and p99 by size and connections: get"),
        "{md}"
    );
    assert!(
        md.contains("## Throughput and p99 by size and connections: put"),
        "{md}"
    );
    let tables = md.split("## Environment").next().unwrap();
    insta::assert_snapshot!(tables);
}

/// Runs that give every table and every kind of figure: a sweep of
/// clients x placement (per-core CPU, a measured server), S3 reads and
/// writes with their times to first byte, a ramp in stages, instances side
/// by side, a run against two endpoints made by two load agents, and an
/// exec program's run.
fn every_kind() -> Vec<RunResult> {
    let mut runs = Vec::new();
    for (k, (clients, policy)) in [
        (1, "balanced"),
        (2, "balanced"),
        (1, "separated"),
        (2, "separated"),
    ]
    .into_iter()
    .enumerate()
    {
        let spec = format!(r#"{{"clients": {clients}, "size": "4KiB"}}"#);
        let mut r = measured(
            &format!("sweep-{k}"),
            &spec,
            1000.0 * (k + 1) as f64,
            50_000,
        );
        r.placement.policy = Some(policy.into());
        r.summary.server_cpu_s = Some(0.4 * clients as f64);
        r.summary.server_cpu_us_per_op = Some(40.0);
        r.summary.server_cores_used = Some(0.2 * clients as f64);
        for (n, i) in r.intervals.iter_mut().enumerate() {
            i.client_cores = vec![wirebench_core::result::CoreBusy {
                cpu: 0,
                busy_pct: 50.0 + n as f64,
                steal_pct: 0.0,
            }];
            i.server_cores = vec![wirebench_core::result::CoreBusy {
                cpu: 1,
                busy_pct: 20.0 * clients as f64,
                steal_pct: 0.0,
            }];
        }
        runs.push(r);
    }
    // S3: reads and writes, each with its time to first byte.
    let op = |ops: u64, mb: f64, lat_ns: u64, get: bool| {
        let mut h = wirebench_core::hist::new_hist();
        h.saturating_record_n(lat_ns, ops);
        wirebench_core::result::OpSummary {
            ops,
            ops_per_s: ops as f64 / 2.0,
            mib_per_s: mb,
            bytes_per_s: mb * 1_048_576.0,
            latency: wirebench_core::hist::LatencySummary::of(&h),
            latency_hist: wirebench_core::hist::encode(&h),
            ttfb: get.then(|| wirebench_core::hist::LatencySummary::of(&h)),
            ttfb_hist: if get {
                wirebench_core::hist::encode(&h)
            } else {
                String::new()
            },
            ..Default::default()
        }
    };
    for (k, conns) in [1u64, 4].into_iter().enumerate() {
        let spec = format!(
            r#"{{"transport": "s3", "workload": "mixed", "mix": "get=70,put=30", "size": "4KiB", "conns_per_client": {conns}}}"#
        );
        let mut r = measured(&format!("s3-{k}"), &spec, 100.0 * conns as f64, 2_000_000);
        r.summary.by_op.insert(
            "get".into(),
            op(70 * conns, 7.0 * conns as f64, 2_000_000, true),
        );
        r.summary.by_op.insert(
            "put".into(),
            op(30 * conns, 3.0 * conns as f64, 9_000_000, false),
        );
        runs.push(r);
    }
    // A ramp in stages, which broke at its last stage.
    let mut r = measured("ramp", r#"{"rate": "1k/s"}"#, 1000.0, 100_000);
    let stages = wirebench_core::stages::parse("1s:1k, 2s:1k->3k").unwrap();
    r.intervals = [100_000, 1_000_000, 10_000_000]
        .into_iter()
        .zip(0u64..)
        .map(|(lat_ns, k)| interval(k, 1000.0 * (k + 1) as f64, lat_ns))
        .collect();
    r.stages = wirebench_core::ramp::judge::results(&stages, 0, &r.intervals);
    r.ramp = wirebench_core::ramp::judge::verdict(&r, &[]);
    runs.push(r);
    // Two instances side by side.
    let parts: Vec<RunResult> = (0..2)
        .map(|i| measured(&format!("inst-{i}"), r#"{"clients": 1}"#, 800.0, 60_000))
        .collect();
    runs.push(wirebench_core::merge::instances(&parts).unwrap());
    // Two endpoints, a load agent's part each.
    let mut r = measured(
        "fleet",
        r#"{"target": "tcp://127.0.0.1:7001"}"#,
        900.0,
        70_000,
    );
    for (k, port) in [7001, 7002].into_iter().enumerate() {
        r.endpoints.push(
            serde_json::from_value(serde_json::json!({
                "endpoint": format!("tcp://127.0.0.1:{port}"),
                "agents": [format!("10.0.0.{k}:7475")],
                "connections": 1,
                "ops": 450, "errors": 0, "ops_per_s": 450.0,
                "p50_ns": 70_000, "p99_ns": 90_000,
                "latency": r.summary.latency,
            }))
            .unwrap(),
        );
        r.agents.push(
            serde_json::from_value(serde_json::json!({
                "agent": format!("10.0.0.{k}:7475"), "run_id": format!("part-{k}"),
                "dir": "results", "clients": 1, "state": "complete",
                "ops": 450, "ops_per_s": 450.0, "p50_ns": 70_000, "p99_ns": 90_000,
                "client_cpu_s": 0.5, "client_cpu_us_per_op": 1.1, "sent_per_s": 450.0,
                "clock_offset_ns": 1200, "clock_uncertainty_ns": 300,
            }))
            .unwrap(),
        );
    }
    runs.push(r);
    // An exec program's run, with the figures it printed.
    let mut r = measured(
        "program",
        r#"{"transport": "exec", "parser": "fio-json", "client_cmd": "fio --output-format=json job.fio"}"#,
        500.0,
        200_000,
    );
    r.summary.tool = Some(wirebench_core::result::ToolReport {
        program: "fio".into(),
        parser: "fio-json".into(),
        command: "fio --output-format=json job.fio".into(),
        exit: "exit 0".into(),
        latency_stats: vec!["p50".into(), "p99".into()],
        method: vec!["completion latency, per I/O".into()],
        ..Default::default()
    });
    runs.push(r);
    runs
}

/// Issue 47: each table and each kind of figure of the registries has its
/// own snapshot, over runs that give every one of them (a new table or
/// figure fails here until the runs show it and its snapshot is taken).
#[test]
fn issue_47_every_table_and_figure_has_its_snapshot() {
    let runs = every_kind();
    for (name, blocks) in tables::TABLES.iter().copied().chain([("env", tables::ENV)]) {
        let blocks = blocks(&runs);
        assert!(!blocks.is_empty(), "table {name}: the runs give none");
        let md = MarkdownExporter.export(&Document {
            title: name.to_string(),
            blocks,
        });
        insta::assert_snapshot!(format!("table_{name}"), md);
    }
    for (name, figs) in figures::by_kind(&runs, &Layout::default()) {
        assert!(!figs.is_empty(), "figure {name}: the runs give none");
        let text: Vec<String> = figs
            .iter()
            .map(|f| format!("## {}\n{}", f.title, texts(&f.svg).join("\n")))
            .collect();
        insta::assert_snapshot!(format!("figure_{name}"), text.join("\n\n"));
    }
}

/// Issue 48: the TTFB histogram never drops a test: 60 reads are two pages
/// (40 and 20, on the same bins, each saying which tests it holds), and
/// writes are a figure of their own, not mixed with the reads.
#[test]
fn issue_48_every_tests_time_to_first_byte_is_drawn_reads_and_writes_apart() {
    let with_ttfb = |id: String, op: &str, ms: u64| {
        let mut r = run(&id, 1, "balanced", 100.0);
        let mut h = wirebench_core::hist::new_hist();
        h.saturating_record_n(ms * 1_000_000, 10);
        r.summary.by_op.insert(
            op.into(),
            wirebench_core::result::OpSummary {
                ops: 10,
                ttfb: Some(wirebench_core::hist::LatencySummary::of(&h)),
                ttfb_hist: wirebench_core::hist::encode(&h),
                ..Default::default()
            },
        );
        r
    };
    let mut runs: Vec<RunResult> = (0..60)
        .map(|k| with_ttfb(format!("get-{k}"), "get", 1 + k))
        .collect();
    runs.extend((0..10).map(|k| with_ttfb(format!("put-{k}"), "put", 5 + k)));
    let figs = figures(&runs, &Layout::default());
    let ttfb: Vec<&Figure> = figs
        .iter()
        .filter(|f| f.title.starts_with("Time to first byte"))
        .collect();
    let titles: Vec<&str> = ttfb.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Time to first byte of get, tests 1-40 of 60",
            "Time to first byte of get, tests 41-60 of 60",
            "Time to first byte of put, 10 tests"
        ]
    );
    // Every test has its line, named in the legend: 40 and 20 reads, 10
    // writes.
    let named = |f: &Figure, prefix: &str| {
        let t = texts(&f.svg);
        let n = t.iter().filter(|t| t.starts_with(prefix)).count();
        (n, t)
    };
    let (n, t) = named(ttfb[0], "get-");
    assert_eq!(n, 40, "{t:?}");
    let (n, t) = named(ttfb[1], "get-");
    assert_eq!(n, 20, "{t:?}");
    assert!(t.contains(&"get-59".to_string()), "{t:?}");
    let (n, t) = named(ttfb[2], "put-");
    assert_eq!(n, 10, "{t:?}");
}
