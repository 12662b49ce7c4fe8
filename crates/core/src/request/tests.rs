use super::*;
use crate::spec::*;
use crate::spec::{MsgrMode, ShmMode};
use crate::topo::{CpuList, Topology};
use crate::transport::{
    TransportFlags, exec::ExecFlags, grpc::GrpcFlags, http::HttpFlags, kv::KvFlags,
    msgr::MsgrFlags, s3::S3Flags, shm::ShmFlags,
};
use crate::units::Bytes;
use crate::values::*;
use std::time::Duration;

fn two_cpus() -> Topology {
    Topology::with_cpus(CpuList::parse("0-1").unwrap())
}

fn req(json: &str) -> RunRequest {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

#[test]
fn the_defaults_are_the_readmes_run() {
    let (spec, placement) = RunRequest::default().check(&two_cpus()).unwrap();
    let m = spec.msgr().expect("msgr");
    assert_eq!(
        (m.mode, m.size_bytes, m.response_size_bytes),
        (MsgrMode::Echo, 64, 64)
    );
    assert_eq!((spec.clients, spec.conns_per_client, spec.depth), (1, 1, 1));
    assert_eq!(spec.stop, StopSpec::DurationNs(5_000_000_000));
    assert_eq!(spec.warmup_ns, 1_000_000_000);
    assert_eq!(placement.client_cpus.to_string(), "0");
    assert_eq!(placement.server_cpus.unwrap().to_string(), "1");
    assert!(placement.notes[0].contains("split in two halves"));
    assert!(matches!(
        spec.target,
        TargetSpec::Embedded {
            arch: Some(Arch::Reactor),
            ..
        }
    ));
}

/// Each bad request: the SpecError's variant, its flag and its message.
#[test]
fn bad_requests_name_the_flag_the_value_and_the_fix() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"agents": ["10.0.0.2:7460"]}"#,
            "--agents",
            "--agents make load on other hosts: give them a server they reach with --target",
        ),
        (
            r#"{"agents": ["10.0.0.2"], "target": "tcp://10.0.0.1:7470"}"#,
            "--agents",
            "--agents: '10.0.0.2' is not HOST:PORT",
        ),
        (
            r#"{"agents": ["a:1", "b:1"], "clients": 1, "target": "tcp://10.0.0.1:7470"}"#,
            "--clients",
            "--clients 1: gives agent b:1 no client: give at least one client per agent (2 agents)",
        ),
        (
            r#"{"agents": ["a:1", "b:1"], "agent_weights": [1], "target": "tcp://h:1"}"#,
            "--agent-weights",
            "--agent-weights 1: give one weight per agent (2 agents)",
        ),
        (
            r#"{"agents": ["a:1", "a:1"], "clients": 2, "target": "tcp://h:1"}"#,
            "--agents",
            "--agents: a:1 is named twice",
        ),
        (
            r#"{"agents": ["a:1"], "transport": "shm"}"#,
            "--agents",
            "--agents: shared memory is reached from its own host only",
        ),
        (
            r#"{"agents": ["a:1"], "target": "tcp://h:1", "trace": true}"#,
            "--trace",
            "--trace does not go with --agents yet",
        ),
        (
            r#"{"agent_weights": [1]}"#,
            "--agent-weights",
            "--agent-weights weighs --agents: add them",
        ),
        (
            r#"{"size": 0}"#,
            "--size",
            "--size 0: must be between 1 byte and 4GiB-1",
        ),
        (
            r#"{"depth": 0}"#,
            "--depth",
            "--depth 0: must be between 1 and 1048576",
        ),
        (
            r#"{"clients": 0}"#,
            "--clients",
            "--clients 0: must be between 1 and 4096",
        ),
        (
            r#"{"sessions": 5000}"#,
            "--clients",
            "--clients 5000: must be between 1 and 4096",
        ),
        (
            r#"{"count": 0}"#,
            "--count",
            "--count 0: must be at least 1",
        ),
        (
            r#"{"count": 5, "duration": "1s"}"#,
            "--count",
            "--count and --duration: give one of them",
        ),
        (
            r#"{"duration": "0s"}"#,
            "--duration",
            "--duration must be longer than 0s",
        ),
        (
            r#"{"duration": "18446744074s"}"#,
            "--duration",
            "longer than 30 days",
        ),
        // Found by the property tests: the product overflowed (and
        // wrapped to 0 in a release build, passing the check).
        (
            r#"{"clients": 8, "conns_per_client": 2305843009213693952}"#,
            "--conns-per-client",
            "at most 65536",
        ),
        (
            r#"{"server_cpus": "7"}"#,
            "--server-cpus",
            "--server-cpus 7: CPU 7 is not usable on this machine (usable CPUs: 0-1)",
        ),
        (
            r#"{"arch": "pool", "poll": true}"#,
            "--poll",
            "--poll: the pool server has no poll mode",
        ),
        (
            r#"{"mode": "nores"}"#,
            "--mode",
            "--mode nores: not a mode of --transport msgr; use one of echo, oneway, stream, rr",
        ),
        (
            r#"{"mode": "stream", "depth": 4}"#,
            "--depth",
            "--depth does not apply to --mode stream",
        ),
        (
            r#"{"mode": "stream", "rate": 100}"#,
            "--rate",
            "--rate does not apply to --mode stream",
        ),
        (
            r#"{"mode": "oneway", "response_size": 10}"#,
            "--response-size",
            "--response-size applies to --mode echo and rr only, not oneway",
        ),
        (
            r#"{"size": "2MiB", "max_frame": "1MiB"}"#,
            "--size",
            "above --max-frame 1048576",
        ),
        (
            r#"{"target": "tcp://127.0.0.1:1", "arch": "pool"}"#,
            "--arch",
            "--arch applies to the embedded server",
        ),
        (
            r#"{"rate": "50M/s"}"#,
            "--rate",
            "more than one connection can send",
        ),
        (
            r#"{"rate": 0.01, "clients": 2}"#,
            "--rate",
            "below 0.1/s per connection",
        ),
        (r#"{"arrival": "poisson"}"#, "--arrival", "add --rate"),
        (
            r#"{"slo": ["p99"]}"#,
            "--slo",
            "--slo: 'p99' is not an objective",
        ),
        (
            r#"{"hlog": "/nonexistent/dir/x.hlog"}"#,
            "--hlog",
            "the directory /nonexistent/dir does not exist",
        ),
        (
            r#"{"repeat": 0}"#,
            "--repeat",
            "--repeat 0: must be between 1 and 1000",
        ),
        (
            r#"{"repeat": 2, "trace": true}"#,
            "--trace",
            "records one run's timeline",
        ),
        (
            r#"{"trace_sample": 0, "trace": true}"#,
            "--trace-sample",
            "N at least 1",
        ),
        (
            r#"{"wait": "spin"}"#,
            "--wait",
            "--wait applies to --transport shm only",
        ),
        (
            r#"{"keep": true}"#,
            "--keep",
            "--keep applies to --transport s3 only",
        ),
        (
            r#"{"size": "1KiB..4KiB"}"#,
            "--size",
            "applies to --transport s3 only",
        ),
        (
            r#"{"transport": "msgr", "target": "s3://127.0.0.1:9/bucket"}"#,
            "--target",
            "add --transport s3",
        ),
        (
            r#"{"target": "ftp://127.0.0.1:21"}"#,
            "--target",
            "no transport speaks ftp://",
        ),
        (
            r#"{"transport": "redis", "target": "redis://127.0.0.1:6379", "also_target": ["ftp://127.0.0.1:21"]}"#,
            "--target",
            "no transport speaks ftp://",
        ),
        (
            r#"{"transport": "shm", "mode": "echo"}"#,
            "--mode",
            "use one of sync, async, nores, stream",
        ),
        (
            r#"{"transport": "shm", "mode": "sync", "depth": 4}"#,
            "--depth",
            "use --mode async",
        ),
        (
            r#"{"transport": "shm", "mode": "sync", "rate": 1000}"#,
            "--rate",
            "--mode sync sends when the response is back",
        ),
        (
            r#"{"transport": "shm", "size": "512MiB"}"#,
            "--size",
            "do not fit the largest ring",
        ),
        (
            r#"{"transport": "shm", "ring_size": 1000}"#,
            "--ring-size",
            "must be a power of two",
        ),
        (
            r#"{"transport": "shm", "channel": "pipe", "ring_size": "1MiB"}"#,
            "--ring-size",
            "applies to --channel shm only",
        ),
        (
            r#"{"transport": "shm", "channel": "pipe", "wait": "spin"}"#,
            "--wait",
            "the kernel does the waiting on pipe",
        ),
        (
            r#"{"transport": "shm", "channel": "pipe", "size": "100MiB"}"#,
            "--size",
            "the largest message over --channel pipe",
        ),
        (
            r#"{"transport": "shm", "arch": "pool"}"#,
            "--arch",
            "applies to --transport msgr only",
        ),
        (
            r#"{"transport": "shm", "target": "tcp://127.0.0.1:1"}"#,
            "--target",
            "--target unix:PATH",
        ),
        (
            r#"{"transport": "s3", "mode": "echo"}"#,
            "--mode",
            "an S3 run takes --workload",
        ),
        (
            r#"{"transport": "s3", "depth": 4}"#,
            "--depth",
            "one request outstanding",
        ),
        (
            r#"{"transport": "s3", "part_size": "1MiB"}"#,
            "--part-size",
            "at least 5MiB",
        ),
        (
            r#"{"transport": "s3", "mix": "get=1"}"#,
            "--mix",
            "--mix applies to --workload mixed only",
        ),
        (
            r#"{"transport": "s3", "objects": 0}"#,
            "--objects",
            "--objects 0: must be between 1 and 100000000",
        ),
        (
            r#"{"transport": "s3", "url_style": "virtual"}"#,
            "--url-style",
            "needs a host name",
        ),
        (
            r#"{"transport": "s3", "put_parts": 65}"#,
            "--put-parts",
            "--put-parts 65: must be between 1 and 64",
        ),
        (
            r#"{"mode": "rr", "trace": true}"#,
            "--trace",
            "no sequence number to trace",
        ),
        (
            r#"{"transport": "shm", "clients_as": "processes", "trace": true}"#,
            "--trace",
            "trace with --clients-as threads",
        ),
        (
            r#"{"transport": "exec", "client_cmd": "true", "parser": "fio-json", "trace": true}"#,
            "--trace",
            "measures itself",
        ),
        (
            r#"{"transport": "s3", "workload": "delete", "repeat": 2}"#,
            "--repeat",
            "deletes each object once",
        ),
        (
            r#"{"transport": "s3", "target": "tcp://127.0.0.1:1"}"#,
            "--target",
            "s3://HOST:PORT/BUCKET",
        ),
    ];
    for (json, flag, message) in cases {
        let e = req(json).check(&two_cpus()).expect_err(json);
        assert_eq!(e.flag(), *flag, "{json}: {e}");
        assert!(
            e.to_string().contains(message),
            "{json}: '{e}' does not say '{message}'"
        );
    }
}

#[test]
fn every_key_is_a_field_and_a_request_reads_back() {
    let full = RunRequest {
        targets: vec![],
        transport: Some("s3".parse().unwrap()),
        target: Some("tcp://127.0.0.1:9".parse().unwrap()),
        listen: Some("unix:/tmp/x".parse().unwrap()),
        mode: Some("echo".into()),
        size: Some(SizeSpec::Range {
            min: 1024,
            max: 1 << 20,
        }),
        clients: Some(2),
        conns_per_client: Some(3),
        depth: Some(4),
        rate: Some(Rate(50_000.0)),
        stages: Some("10s:1k->2k/s".into()),
        arrival: Some(Arrival::Poisson),
        duration: Some(Dur(Duration::from_millis(1500))),
        count: Some(7),
        warmup: Some(Dur(Duration::from_secs(2))),
        op_timeout: Some(Dur(Duration::from_secs(3))),
        no_hiccup: Some(true),
        hiccup_threshold: Some(Dur(Duration::from_millis(20))),
        poll: Some(true),
        verify: Some(true),
        server_cpus: Some(CpuList::parse("1").unwrap()),
        client_cpus: Some(CpuList::parse("0").unwrap()),
        repeat: Some(3),
        sweep: crate::placement::SetBySweep {
            placement_policy: Some("balanced".into()),
            instance: Some(1),
            placement_note: vec!["n".into()],
        },
        ca_file: Some("ca.pem".into()),
        keys: Some(1000),
        key_dist: Some(KeyDist::Zipf(0.9)),
        header: vec!["X-A: 1".into()],
        also_target: vec!["tcp://10.0.0.9:7470".parse().unwrap()],
        share: Some(crate::share::ConnShare { first: 2, total: 5 }),
        unknown: NoOtherKeys,
        flags: TransportFlags {
            msgr: MsgrFlags {
                arch: Some(Arch::Pool),
                response_size: Some(Bytes(64)),
                max_frame: Some(Bytes(1 << 20)),
            },
            shm: ShmFlags {
                wait: Some(Wait::Spin),
                clients_as: Some(ClientsAs::Processes),
                channel: Some(Channel::Pipe),
                ring_size: Some(Bytes(1 << 20)),
            },
            s3: S3Flags {
                workload: Some(S3Workload::Mixed),
                mix: Some(Mix::default_mix()),
                objects: Some(10),
                url_style: Some(UrlStyle::Virtual),
                sign: Some(S3Sign::Query),
                region: Some("eu-west-1".into()),
                multipart_threshold: Some(Bytes(64 << 20)),
                part_size: Some(Bytes(16 << 20)),
                put_parts: Some(2),
                get_parts: Some(2),
                keep: Some(true),
                create_bucket: Some(true),
            },
            kv: KvFlags {
                protocol: Some(KvProtocol::Resp3),
                ratio: Some(Ratio(1, 4)),
            },
            http: HttpFlags {
                http: Some(HttpVersion::H2),
                churn: Some(true),
            },
            grpc: GrpcFlags {
                call: Some("p.S/M".into()),
                data: Some("{}".into()),
                proto_set: Some("set.pb".into()),
            },
            exec: ExecFlags {
                client_cmd: Some("sockperf pp -p {port}".into()),
                parser: Some("regex:(?P<ops_per_s>[0-9]+) ops/s".parse().unwrap()),
                client_env: vec!["A=b".parse().unwrap()],
            },
            // The groups without flags (tcp-echo's).
            ..TransportFlags::default()
        },
        output: crate::output::OutputFlags {
            hlog: Some("x.hlog".into()),
            results: Some("r".into()),
            force: Some(true),
            format: Some(Format::Json),
            trace: Some(Trace::File("t.txt".into())),
            trace_sample: Some(10),
            label: vec!["commit=abc123".parse().unwrap()],
            upload: Some("s3://minio.storage:9000/bench/nightly".parse().unwrap()),
        },
        server: crate::observe::ServerFlags {
            server_pid: vec![1, 2],
            server_cgroup: Some("/sys/fs/cgroup/x".into()),
            server_cmd: Some("srv --port {port}".into()),
            server_ready: Some(Ready::Line("listening on \\d+".into())),
            port: Some(7000),
            server_env: vec!["LD_PRELOAD=/x.so".parse().unwrap()],
        },
        watch: crate::live::LiveFlags {
            metrics_listen: Some("127.0.0.1:9464".parse().unwrap()),
            metrics_token_file: Some("token".into()),
            metrics_hold: Some(Dur(Duration::from_secs(5))),
            metrics_point: Some("clients=2".into()),
            live: Some(true),
        },
        objectives: crate::slo::SloFlags {
            slo: vec!["p99<1ms over 10s".into()],
            abort_on_fail: Some(true),
        },
        fleet: crate::share::FleetFlags {
            agents: vec!["10.0.0.2:7460".into()],
            launch: vec!["ssh:bench@10.0.0.3".into()],
            agent_weights: vec![2, 1],
        },
    };
    let json = serde_json::to_value(&full).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.push("sessions");
    keys.sort_unstable();
    let mut want = RunRequest::keys().to_vec();
    want.sort_unstable();
    assert_eq!(keys, want);
    let back: RunRequest = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, full);
    assert_eq!(json["duration"], "1s 500ms");
    assert_eq!(json["size"], "1KiB..1MiB");
    assert_eq!(json["mix"], "get=70,put=20,delete=10");
    assert_eq!(json["key_dist"], "zipf:0.9");
    assert_eq!(json["ratio"], "1:4");
    // TOML writes numbers and booleans bare.
    let t: RunRequest =
        toml::from_str("size = 4096\nrate = 500\npoll = true\ntrace = true\nduration = \"2s\"")
            .unwrap();
    assert_eq!(t.size, Some(SizeSpec::Fixed(4096)));
    assert_eq!(t.rate, Some(Rate(500.0)));
    assert_eq!(t.output.trace, Some(Trace::On(true)));
    let e = toml::from_str::<RunRequest>("clinets = 2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("clinets"), "{e}");
    let e = toml::from_str::<RunRequest>("size = \"4kb!\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a size"), "{e}");
}

#[test]
fn a_request_shows_as_its_command_line() {
    let r = req(
        r#"{"size": "4KiB", "poll": true, "verify": false, "slo": ["p99<1ms", "ops>1k/s"], "trace": true, "server_cpus": "1"}"#,
    );
    assert_eq!(
        r.to_args().join(" "),
        "--size 4KiB --poll --server-cpus 1 --slo p99<1ms --slo ops>1k/s --trace"
    );
}

#[test]
fn a_merge_takes_what_the_point_sets() {
    let mut base = req(r#"{"size": 64, "clients": 1, "poll": true}"#);
    base.merge(req(r#"{"clients": 4, "arch": "pool"}"#));
    assert_eq!(
        base,
        req(r#"{"size": 64, "clients": 4, "poll": true, "arch": "pool"}"#)
    );
}

#[test]
fn transports_get_their_own_settings() {
    let (s, _) = req(r#"{"transport": "shm", "mode": "async"}"#)
        .check(&two_cpus())
        .unwrap();
    assert_eq!(s.depth, 64);
    let shm = s.shm().unwrap();
    assert_eq!(
        (shm.mode, shm.wait, shm.ring_bytes),
        (ShmMode::Async, Wait::Adaptive, 1 << 20)
    );
    let (s, p) =
        req(r#"{"transport": "s3", "workload": "mixed", "target": "s3://127.0.0.1:9000/bench"}"#)
            .check(&two_cpus())
            .unwrap();
    let s3 = s.s3().unwrap();
    assert_eq!(s3.mix, Mix::default_mix().0);
    assert!(
        !s3.signed,
        "an external target is signed only with credentials"
    );
    assert_eq!(p.server_cpus, None);
    assert_eq!(s.label(), "s3-mixed-external");
    let (s, _) = req(r#"{"rate": 1000}"#).check(&two_cpus()).unwrap();
    assert_eq!((s.depth, s.rate_per_s), (1024, Some(1000.0)));
}

#[test]
fn stages_set_the_rate_and_the_length_and_refuse_what_would_contradict_them() {
    let (spec, _) = req(r#"{"stages": "10s:1k/s, 10s:1k->3k/s", "warmup": "2s"}"#)
        .check(&two_cpus())
        .unwrap();
    assert_eq!(spec.stages.len(), 2);
    assert_eq!(spec.stop, StopSpec::DurationNs(20_000_000_000));
    // The mean asked: (10 x 1k + 10 x 2k) / 20 s.
    assert_eq!(spec.rate_per_s, Some(1500.0));
    assert_eq!(spec.depth, 1024, "an open loop's depth");
    for (json, flag, says) in [
        (
            r#"{"stages": "10s:1k", "rate": "1k"}"#,
            "--rate",
            "give one of them",
        ),
        (
            r#"{"stages": "10s:1k", "duration": "5s"}"#,
            "--stages",
            "drop --duration",
        ),
        (
            r#"{"stages": "10s:1k", "count": 5}"#,
            "--stages",
            "drop --duration",
        ),
        (r#"{"stages": "10s:lots"}"#, "--stages", "not a rate"),
        (r#"{"stages": "10s:50M/s"}"#, "--stages", "per connection"),
    ] {
        let e = req(json).check(&two_cpus()).unwrap_err();
        assert_eq!(e.flag(), flag, "{json}: {e}");
        assert!(e.to_string().contains(says), "{json}: {e}");
    }
    // Poisson arrivals in stages.
    let (spec, _) = req(r#"{"stages": "2s:100", "arrival": "poisson"}"#)
        .check(&two_cpus())
        .unwrap();
    assert_eq!(spec.arrival, Arrival::Poisson);
}

#[test]
fn stages_come_as_tables_too_and_travel_as_text() {
    let doc = r#"
        warmup = "2s"
        [[stages]]
        duration = "10s"
        rate = "1k/s"
        [[stages]]
        duration = "10s"
        from = "1k/s"
        to = 3000
    "#;
    let r: RunRequest = toml::from_str(doc).unwrap();
    assert_eq!(r.stages.as_deref(), Some("10s:1k/s, 10s:1k/s->3000"));
    let (spec, _) = r.check(&two_cpus()).unwrap();
    assert_eq!(spec.stages.len(), 2);
    assert_eq!(spec.rate_per_s, Some(1500.0));
    // On the wire (a sweep's child, an agent): the text, read back as such.
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        json.contains(r#""stages":"10s:1k/s, 10s:1k/s->3000""#),
        "{json}"
    );
    let back: RunRequest = serde_json::from_str(&json).unwrap();
    assert_eq!(back.stages, r.stages);
    // A table that is neither constant nor a ramp, or with a stray key.
    for (bad, says) in [
        (
            "[[stages]]\nduration = \"5s\"\n",
            "give rate (constant), or from and to",
        ),
        (
            "[[stages]]\nduration = \"5s\"\nrate = 1\nfrom = 1\nto = 2\n",
            "give rate (constant), or from and to",
        ),
        (
            "[[stages]]\nduration = \"5s\"\nspeed = 1\n",
            "unknown field `speed`",
        ),
    ] {
        let e = toml::from_str::<RunRequest>(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// Issue 47: what a run's headline says its operations carry comes from
/// each transport's own `Describe::workload` (it was a match over every
/// transport in the report crate); the texts are those the headline had.
#[test]
fn each_transport_says_what_its_operations_carry() {
    let said = |json: &str| {
        let (spec, _) = req(json).check(&two_cpus()).unwrap();
        spec.transport.describe().workload(spec.depth)
    };
    assert_eq!(said("{}"), "64B -> 64B");
    assert_eq!(
        said(r#"{"target": "s3://127.0.0.1:9000/bench", "objects": 100, "size": "4KiB"}"#),
        "100 objects of 4KiB"
    );
    assert_eq!(
        said(
            r#"{"target": "s3://127.0.0.1:9000/bench", "objects": 100, "size": "4KiB", "key_dist": "zipf:0.99"}"#
        ),
        "100 objects of 4KiB picked zipf:0.99"
    );
    assert_eq!(
        said(r#"{"target": "redis://127.0.0.1:6379", "keys": 1000, "size": "100B"}"#),
        "1000 keys (uniform) of 100B, resp2"
    );
    let h2 =
        said(r#"{"target": "http://127.0.0.1:80/o/{key}", "http": "2", "depth": 4, "keys": 10}"#);
    assert_eq!(
        h2,
        "HTTP/2, 4 stream(s) per conn, 10 keys (uniform) in the path"
    );
    let data = format!("{{\"name\": \"{}\"}}", "x".repeat(80));
    let g = said(
        &serde_json::json!({"target": "grpc://127.0.0.1:50051", "call": "a.B/C", "data": data})
            .to_string(),
    );
    let cut: String = data.chars().take(57).collect();
    assert_eq!(g, format!("request {cut}... (92B), 1 stream(s) per conn"));
    assert_eq!(
        said(r#"{"transport": "exec", "client_cmd": "fio --name x", "parser": "fio-json"}"#),
        "fio (parser fio-json)"
    );
}

/// Issue 47: whether requests go unanswered is the transport's to say (the
/// summary's latency line read msgr's and shm's modes itself).
#[test]
fn one_way_modes_say_so() {
    let one_way = |json: &str| {
        let (spec, _) = req(json).check(&two_cpus()).unwrap();
        (
            spec.transport.describe().one_way(),
            spec.transport.describe().is_stream(),
        )
    };
    assert_eq!(one_way(r#"{"mode": "oneway"}"#), (true, false));
    assert_eq!(one_way(r#"{"mode": "echo"}"#), (false, false));
    assert_eq!(one_way(r#"{"mode": "stream"}"#), (false, true));
    assert_eq!(
        one_way(r#"{"transport": "shm", "mode": "nores"}"#),
        (true, false)
    );
    assert_eq!(
        one_way(r#"{"transport": "shm", "mode": "sync"}"#),
        (false, false)
    );
}

/// Issue 47: the transports' groups are flattened into the request, which
/// then cannot say `deny_unknown_fields`; a key no field takes is still
/// refused by name, from JSON (an agent's part) and TOML (a spec), and a
/// group's own key still has its value checked.
#[test]
fn a_key_no_group_takes_is_refused_by_name() {
    for bad in [r#"{"depht": 3}"#, r#"{"workload": "get", "objetcs": 3}"#] {
        let e = serde_json::from_str::<RunRequest>(bad)
            .unwrap_err()
            .to_string();
        let key = if bad.contains("depht") {
            "depht"
        } else {
            "objetcs"
        };
        assert!(e.contains(&format!("unknown field `{key}`")), "{bad}: {e}");
    }
    let e = toml::from_str::<RunRequest>("clients = 2\nwrokload = \"put\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `wrokload`"), "{e}");
    let e = toml::from_str::<RunRequest>("workload = \"fly\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("fly"), "{e}");
    // Each group's keys come back as the group's, in JSON and in TOML.
    let r: RunRequest =
        toml::from_str("workload = \"put\"\nobjects = 7\nchurn = true\nring_size = 4096\n")
            .unwrap();
    assert_eq!(r.flags.s3.objects, Some(7));
    assert_eq!(r.flags.http.churn, Some(true));
    assert_eq!(r.flags.shm.ring_size.map(|b| b.0), Some(4096));
    let back: RunRequest = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}

/// Issue 47: what a transport takes is its own group's keys (read from the
/// group) and the shared flags it lists; every shared flag is a key of the
/// request, and no key is two groups'.
#[test]
fn a_transport_takes_its_group_and_the_shared_flags_it_lists() {
    use crate::transport::{Shared, TransportKind};
    assert!(TransportKind::S3.takes("workload") && !TransportKind::Http.takes("workload"));
    assert!(TransportKind::Redis.takes("ratio") && TransportKind::Memcached.takes("ratio"));
    assert!(TransportKind::Http.takes("header") && !TransportKind::S3.takes("header"));
    for s in Shared::ALL {
        assert!(RunRequest::keys().contains(&s.key()), "{s:?}");
        assert!(!TransportFlags::keys().contains(&s.key()), "{s:?}");
    }
    let mut seen = std::collections::BTreeSet::new();
    for k in TransportFlags::keys() {
        assert!(seen.insert(k), "{k} is in two groups");
        assert!(RunRequest::keys().contains(k), "{k}");
    }
}
