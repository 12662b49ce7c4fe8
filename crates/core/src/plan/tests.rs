use super::*;

fn exp(text: &str) -> Result<Experiment, PlanError> {
    Experiment::from_table("spec.toml", &text.parse().unwrap(), Path::new("."))
}

#[test]
fn issue_35_a_matrix_too_large_is_refused_before_it_is_expanded() {
    let values: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    let list = values.join(", ");
    let spec = format!(
        "name = \"x\"\n[base]\nsize = 64\n[matrix]\nclients = [{list}]\ndepth = [{list}]\n"
    );
    let e = exp(&spec).unwrap_err().to_string();
    assert!(
        e.contains(
            "[matrix] 1000 clients x 1000 depth x 1 repetition(s) = 1000000 runs: at most 100000"
        ),
        "{e}"
    );
}

#[test]
fn issue_36_matrix_values_may_be_named_and_points_show_the_names() {
    let e = exp(
        "name = \"x\"\n[base]\ntransport = \"exec\"\nparser = \"crimson-msgr\"\nclient_cmd = \"c {port}\"\n[matrix]\nserver_cmd = { crimson = \"perf-crimson-msgr --port {port}\", async = \"perf-async-msgr --port {port}\" }\nclients = [1, 2]\n",
    )
    .unwrap();
    let topo = Topology::with_cpus(CpuList::parse("0-3").unwrap());
    let runs = plan(&e, &topo, false).unwrap();
    let keys: Vec<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "server_cmd=crimson clients=1",
            "server_cmd=crimson clients=2",
            "server_cmd=async clients=1",
            "server_cmd=async clients=2"
        ]
    );
    // The request carries the value, not its name.
    assert_eq!(
        runs[2].requests[0].server.server_cmd.as_deref(),
        Some("perf-async-msgr --port {port}")
    );
    let bad = exp("name = \"x\"\n[matrix]\nserver_cmd = { \"a b\" = \"x\" }\n")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("[matrix] server_cmd: the name 'a b'"), "{bad}");
    let twice = exp("name = \"x\"\n[matrix]\nclients = { a = 1, b = 1 }\n")
        .unwrap_err()
        .to_string();
    assert!(twice.contains("two names for one value"), "{twice}");
}

/// Issue 36: the messenger report's contention study, 1 x 28 against
/// 2 x 14, on its machine: each instance gets whole cores (a core and
/// its sibling), one socket each when balanced, never the other's
/// siblings.
#[test]
fn issue_36_instances_never_share_a_core_on_the_reports_machine() {
    let dir = crate::topo::fixture::TempSys::new("inst");
    crate::topo::fixture::write(
        dir.path(),
        2,
        28,
        2,
        crate::topo::fixture::Numbering::ThreadMajor,
    );
    let topo = Topology::read_from(dir.path(), None);
    let e = exp(
        "name = \"x\"\n[base]\nsize = 64\nclients = 28\n[matrix]\ninstances = [1, 2]\nplacement = [\"balanced\", \"separated\"]\n",
    )
    .unwrap();
    let runs = plan(&e, &topo, false).unwrap();
    let cpus = |r: &PlannedRun| -> Vec<(String, String)> {
        r.requests
            .iter()
            .map(|q| {
                (
                    q.server_cpus.as_ref().unwrap().to_string(),
                    q.client_cpus.as_ref().unwrap().to_string(),
                )
            })
            .collect()
    };
    let at = |key: &str| runs.iter().find(|r| r.key == key).unwrap();
    // 1 x 28: the report's own cpusets.
    assert_eq!(
        cpus(at("instances=1 placement=balanced")),
        [(
            "0-6,28-34,56-62,84-90".to_string(),
            "7-13,35-41,63-69,91-97".to_string()
        )]
    );
    assert_eq!(
        cpus(at("instances=1 placement=separated")),
        [("0-27".to_string(), "28-55".to_string())]
    );
    // 2 x 14: a socket each, with its own siblings.
    assert_eq!(
        cpus(at("instances=2 placement=balanced")),
        [
            ("0-6,56-62".to_string(), "7-13,63-69".to_string()),
            ("28-34,84-90".to_string(), "35-41,91-97".to_string())
        ]
    );
    assert_eq!(
        cpus(at("instances=2 placement=separated")),
        [
            ("0-13".to_string(), "28-41".to_string()),
            ("14-27".to_string(), "42-55".to_string())
        ]
    );
    let core = |cpu: usize| {
        let c = topo.cpus.iter().find(|c| c.id == cpu).unwrap();
        (c.socket, c.core)
    };
    for r in &runs {
        let sets = cpus(r);
        for (i, a) in sets.iter().enumerate() {
            for b in &sets[i + 1..] {
                let cores = |l: &str| -> Vec<(usize, usize)> {
                    CpuList::parse(l)
                        .unwrap()
                        .cpus()
                        .iter()
                        .map(|&c| core(c))
                        .collect()
                };
                for x in cores(&a.0).iter().chain(&cores(&a.1)) {
                    assert!(
                        !cores(&b.0).contains(x) && !cores(&b.1).contains(x),
                        "{}: instances share core {x:?}",
                        r.key
                    );
                }
            }
        }
    }
}

#[test]
fn issue_36_a_scale_replaces_the_sections_it_gives_and_names_the_results() {
    let dir = std::env::temp_dir().join(format!("wb-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("s.toml");
    std::fs::write(
        &f,
        "name = \"study\"\nrepetitions = 3\n[base]\nsize = 64\nduration = \"60s\"\n[matrix]\nclients = [2, 4, 8, 16]\n[scale.small]\nrepetitions = 1\n[scale.small.base]\nsize = 64\nduration = \"2s\"\n[scale.small.matrix]\nclients = [1, 2]\n",
    )
    .unwrap();
    let full = Experiment::read(&f).unwrap();
    assert_eq!(
        (full.name.as_str(), full.repetitions, full.matrix[0].1.len()),
        ("study", 3, 4)
    );
    let small = Experiment::read_scaled(&f, Some("small")).unwrap();
    assert_eq!(
        (
            small.name.as_str(),
            small.repetitions,
            small.matrix[0].1.len()
        ),
        ("study-small", 1, 2)
    );
    assert!(
        small
            .base
            .iter()
            .any(|(k, v)| k == "duration" && v.as_str() == Some("2s"))
    );
    let e = Experiment::read_scaled(&f, Some("huge"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--scale huge: the spec has scales small"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_matrix_expands_into_every_combination() {
    let e = exp(
        "name = \"x\"\n[base]\nsize = 64\n[matrix]\nclients = [1, 2]\narch = [\"reactor\", \"pool\"]\nplacement = [\"balanced\", \"separated\"]\n",
    )
    .unwrap();
    let pts = expand(&e.matrix);
    assert_eq!(pts.len(), 8);
    let text = |p: &[(String, toml::Value)]| {
        point_text(
            &p.iter()
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(text(&pts[0]), "clients=1 arch=reactor placement=balanced");
    assert_eq!(text(&pts[7]), "clients=2 arch=pool placement=separated");
    assert_eq!(expand(&[]).len(), 1);
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    let runs = plan(&e, &topo, true).unwrap();
    assert_eq!(runs.len(), 8);
    let r = &runs[7].requests[0];
    assert_eq!(r.clients, Some(2));
    assert_eq!(r.flags.msgr.arch, Some(crate::spec::Arch::Pool));
    assert_eq!(r.sweep.placement_policy.as_deref(), Some("separated"));
    assert!(r.server_cpus.is_some() && r.client_cpus.is_some());
}

#[test]
fn issue_38_a_specs_stages_may_be_tables_and_each_point_gets_them() {
    let e = exp(
        "name = \"x\"\n[base]\nwarmup = \"1s\"\n[[base.stages]]\nduration = \"2s\"\nrate = \"1k/s\"\n[[base.stages]]\nduration = \"3s\"\nfrom = \"1k/s\"\nto = \"2k/s\"\n[matrix]\nclients = [1, 2]\n",
    )
    .unwrap();
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    let runs = plan(&e, &topo, true).unwrap();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let req = &r.requests[0];
        assert_eq!(req.stages.as_deref(), Some("2s:1k/s, 3s:1k/s->2k/s"));
        let (spec, _) = req.check(&topo).unwrap();
        assert_eq!(spec.stages.len(), 2);
    }
    let bad = exp("name = \"x\"\n[base]\n[[base.stages]]\nduration = \"2s\"\n")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("[base] stages"), "{bad}");
    assert!(
        bad.contains("give rate (constant), or from and to"),
        "{bad}"
    );
}

#[test]
fn unknown_keys_get_the_closest_valid_one() {
    assert_eq!(closest("clinets", run_keys()), "clients");
    assert_eq!(closest("conns_per_clent", run_keys()), "conns_per_client");
    assert_eq!(closest("repetitons", TOP_KEYS), "repetitions");
    assert_eq!(distance("kitten", "sitting"), 3);
    let e = exp("name = \"x\"\n[base]\nclinets = 2\n").unwrap_err();
    assert!(e.0.contains("'clinets' (did you mean 'clients'?)"), "{e}");
    let e = exp("name = \"x\"\n[base]\nsize = \"4kb!\"\n").unwrap_err();
    assert!(
        e.0.contains("[base] size = \"4kb!\": '4kb!' is not a size"),
        "{e}"
    );
    let e = exp("name = \"x\"\n[base]\nresults = \"/tmp\"\n").unwrap_err();
    assert!(e.0.contains("the sweep sets it itself"), "{e}");
    let e = exp("name = \"x\"\n[base]\nlive = true\n").unwrap_err();
    assert!(e.0.contains("a sweep has no live view"), "{e}");
    let e = exp("name = \"x\"\n[base]\nmetrics_point = \"p\"\n").unwrap_err();
    assert!(e.0.contains("the sweep sets it itself"), "{e}");
    // Live metrics are keys of a spec like any flag (issue 47).
    let e = exp("name = \"x\"\n[base]\nmetrics_listen = \"127.0.0.1:0\"\nmetrics_hold = \"2s\"\n")
        .unwrap();
    assert_eq!(e.base[0].0, "metrics_listen");
    // Dashes and underscores alike; sessions is clients.
    let e = exp("name = \"x\"\n[base]\nconns-per-client = 2\nsessions = 2\n").unwrap();
    assert_eq!(e.base[1].0, "clients");
}

#[test]
fn the_example_spec_documents_every_key() {
    let text = include_str!("../../../../specs/example.toml");
    for k in run_keys().into_iter().chain(TOP_KEYS) {
        if k == "sessions" {
            continue;
        }
        assert!(
            text.contains(&format!("{k} ="))
                || text.contains(&format!("[{k}]"))
                || text.contains(&format!("[{k}.")),
            "specs/example.toml does not document '{k}'"
        );
    }
    let e = Experiment::read(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../specs/example.toml"
    )))
    .expect("the example reads");
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    assert!(!plan(&e, &topo, true).unwrap().is_empty());
}

#[test]
fn instances_take_the_endpoints_in_turn() {
    let e = exp(
        "name = \"x\"\n[base]\ntarget = \"tcp://127.0.0.1:7001\"\nalso_target = [\"tcp://127.0.0.1:7002\", \"tcp://127.0.0.1:7003\"]\nclients = 6\n[matrix]\ninstances = [1, 2, 6]\n",
    )
    .unwrap();
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    let runs = plan(&e, &topo, true).unwrap();
    let ports = |r: &PlannedRun| -> Vec<String> {
        r.requests
            .iter()
            .map(|q| {
                q.target
                    .iter()
                    .chain(&q.also_target)
                    .map(|t| t.to_string().rsplit(':').next().unwrap().to_string())
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect()
    };
    // One instance reaches all three; two take 1 and 3, and 2; six take
    // one each, in turn.
    assert_eq!(ports(&runs[0]), ["7001+7002+7003"]);
    assert_eq!(ports(&runs[1]), ["7001+7003", "7002"]);
    assert_eq!(
        ports(&runs[2]),
        ["7001", "7002", "7003", "7001", "7002", "7003"]
    );
    // A dry run shows each instance's endpoints as one --target.
    let args = runs[1].requests[0].to_args();
    let at = args.iter().position(|a| a == "--target").unwrap();
    assert_eq!(args[at + 1], "tcp://127.0.0.1:7001,tcp://127.0.0.1:7003");
    assert!(!args.iter().any(|a| a == "--also-target"));
}

#[test]
fn cpusets_split_among_instances() {
    let l = CpuList::parse("0-7").unwrap();
    assert_eq!(split(&l, 2, 0).to_string(), "0-3");
    assert_eq!(split(&l, 2, 1).to_string(), "4-7");
    assert_eq!(split(&CpuList::parse("3").unwrap(), 2, 1).to_string(), "3");
}

/// Issue 48: a spec's `[report]` section is read, an unknown key of it
/// refused naming the section, and a scale may replace it.
#[test]
fn issue_48_a_report_section_is_read_and_checked() {
    let e =
        exp("name = \"x\"\n[report]\npanel = \"server\"\nheatmaps = [\"clients=2\"]\n").unwrap();
    let r = e.report.expect("its [report]");
    assert_eq!(r.panel.as_deref(), Some("server"));
    assert_eq!(r.heatmaps, Some(vec!["clients=2".to_string()]));
    let err = exp("name = \"x\"\n[report]\npanels = \"server\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("[report]") && err.contains("panels"), "{err}");
    let doc: toml::Table =
        "name = \"x\"\n[report]\npanel = \"a\"\n[scale.s.report]\npanel = \"b\"\n"
            .parse()
            .unwrap();
    let small = scaled("spec.toml", doc, "s").unwrap();
    let e = Experiment::from_table("spec.toml", &small, Path::new(".")).unwrap();
    assert_eq!(e.report.and_then(|r| r.panel).as_deref(), Some("b"));
}
