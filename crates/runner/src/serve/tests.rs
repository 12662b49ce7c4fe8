use super::*;
use wirebench_core::spec::Arch;
use wirebench_core::units::Bytes;

#[test]
fn events_are_one_json_line_each_way() {
    let e = ServerEvent::Listening {
        endpoint: "tcp://127.0.0.1:7470".parse().unwrap(),
        pid: 42,
        cpus: CpuList::parse("1").unwrap(),
    };
    let line = serde_json::to_string(&e).unwrap();
    assert_eq!(
        line,
        r#"{"event":"listening","endpoint":"tcp://127.0.0.1:7470","pid":42,"cpus":"1"}"#
    );
    assert_eq!(serde_json::from_str::<ServerEvent>(&line).unwrap(), e);
    let order = ServeOrder {
        request: ServeRequest {
            stall: Some("100ms/1s".parse().unwrap()),
            max_frame: Some(Bytes(1 << 20)),
            ..ServeRequest::default()
        },
        credentials: None,
    };
    let text = serde_json::to_string(&order).unwrap();
    let back: ServeOrder = serde_json::from_str(&text).unwrap();
    assert_eq!(back.request, order.request);
}

#[test]
fn listening_beyond_loopback_is_warned_of() {
    let s3 = |addr: &str| Endpoint::S3 {
        tls: false,
        addr: addr.into(),
        bucket: "b".into(),
    };
    let tcp = |addr: &str| Endpoint::Tcp(addr.into());
    assert_eq!(exposure_warning(&tcp("127.0.0.1:7470"), ""), None);
    assert_eq!(exposure_warning(&tcp("[::1]:7470"), ""), None);
    assert_eq!(exposure_warning(&Endpoint::Unix("/tmp/x".into()), ""), None);
    let w = exposure_warning(&tcp("0.0.0.0:7470"), "").unwrap();
    assert!(w.starts_with("warning: listening on 0.0.0.0:7470"), "{w}");
    let w = exposure_warning(&s3("[::]:9000"), "anonymous requests served").unwrap();
    assert!(w.contains("[::]:9000") && w.contains("anonymous"), "{w}");
    let w = exposure_warning(&s3("10.1.2.3:9000"), "SigV4 signatures checked").unwrap();
    assert!(w.contains("requires signed requests"), "{w}");
}

#[test]
fn bad_servers_name_the_flag() {
    let cpus = CpuList::parse("0").unwrap();
    let cases: &[(ServeRequest, &str)] = &[
        (
            ServeRequest {
                arch: Some(Arch::Pool),
                poll: true,
                ..Default::default()
            },
            "--poll",
        ),
        (
            ServeRequest {
                mode: Some("rr".into()),
                ..Default::default()
            },
            "--size",
        ),
        (
            ServeRequest {
                workers: Some(2),
                ..Default::default()
            },
            "--workers",
        ),
        (
            ServeRequest {
                transport: Some("shm".parse().expect("a transport")),
                poll: true,
                ..Default::default()
            },
            "--poll",
        ),
        (
            ServeRequest {
                bucket: vec!["x".into()],
                ..Default::default()
            },
            "--bucket",
        ),
        (
            ServeRequest {
                delay: Some("18446744074s".parse().unwrap()),
                ..Default::default()
            },
            "--delay",
        ),
        (
            ServeRequest {
                idle_timeout: Some("50ms".parse().unwrap()),
                ..Default::default()
            },
            "--idle-timeout",
        ),
        (
            ServeRequest {
                max_conns: Some(0),
                ..Default::default()
            },
            "--max-conns",
        ),
        (
            ServeRequest {
                transport: Some("shm".parse().expect("a transport")),
                idle_timeout: Some("1s".parse().unwrap()),
                ..Default::default()
            },
            "--idle-timeout",
        ),
    ];
    for (req, f) in cases {
        match check(req, &cpus, None) {
            Err(e) => assert_eq!(e.flag(), *f, "{e}"),
            Ok(_) => panic!("{req:?} passed"),
        }
    }
    assert!("1s/100ms".parse::<Stall>().is_err());
}
