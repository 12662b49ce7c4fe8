//! The check of a request's endpoints: how many, and their ports.

use crate::limits::MAX_ENDPOINTS;
use crate::request::RunRequest;
use crate::topo::{CpuList, Topology};

fn two_cpus() -> Topology {
    Topology::with_cpus(CpuList::parse("0-1").unwrap())
}

fn req(json: &str) -> RunRequest {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

#[test]
fn more_endpoints_need_a_first_one() {
    let r = req(r#"{"also_target": ["tcp://127.0.0.1:7001"]}"#);
    let e = r.check(&two_cpus()).unwrap_err();
    assert_eq!(e.flag(), "--target", "{e}");
    let r = req(
        r#"{"target": "tcp://127.0.0.1:7000", "also_target": ["tcp://127.0.0.1:7001"], "clients": 2}"#,
    );
    let (spec, _) = r.check(&two_cpus()).unwrap();
    assert_eq!(spec.also_target.len(), 1);
    // At most MAX_ENDPOINTS.
    let mut r = r;
    r.clients = Some(1000);
    r.also_target = (0..MAX_ENDPOINTS)
        .map(|k| format!("tcp://127.0.0.1:{}", 8000 + k).parse().unwrap())
        .collect();
    let e = r.check(&two_cpus()).unwrap_err();
    assert_eq!(e.flag(), "--target", "{e}");
    assert!(e.to_string().contains("at most 256"), "{e}");
}

/// An endpoint of a transport's own scheme without its port gets the
/// transport's default port (memcached's 11211), in every place; a
/// transport without one asks for it.
#[test]
fn a_port_left_out_is_the_transports_default_or_asked_for() {
    let r = req(
        r#"{"target": "memcached://127.0.0.1", "also_target": ["memcached://localhost"], "clients": 2}"#,
    );
    let (spec, _) = r.check(&two_cpus()).unwrap();
    assert_eq!(spec.kind().name(), "memcached");
    assert_eq!(spec.endpoint_label(), "memcached://127.0.0.1:11211");
    assert_eq!(
        spec.also_target[0].to_string(),
        "memcached://localhost:11211"
    );
    for json in [
        r#"{"target": "udp://127.0.0.1"}"#,
        r#"{"transport": "udp-echo", "listen": "udp://127.0.0.1"}"#,
    ] {
        let e = req(json).check(&two_cpus()).unwrap_err();
        assert!(
            e.to_string().contains("give the port: udp://HOST:PORT"),
            "{e}"
        );
    }
}
