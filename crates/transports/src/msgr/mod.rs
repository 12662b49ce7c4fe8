//! The msgr protocol: a versioned handshake, then frames (16-byte header +
//! payload). See `frame` for the wire format, `client` for the load side,
//! `server` for the two reference servers. The `rr` mode has neither
//! handshake nor framing: fixed-size raw requests and responses.

pub mod client;
pub(crate) mod driver;
pub mod serve;
pub use serve::SERVER;
pub mod frame;
pub mod server;
pub mod stream;

#[cfg(test)]
mod tests {
    use super::client::MsgrClient;
    use super::frame::DEFAULT_MAX_FRAME;
    use super::server::{self, ConnConfig, ServerConfig};
    use std::sync::Arc;
    use wirebench_core::spec::{Arch, Endpoint, MsgrMode as Mode};
    use wirebench_load::engine::{self, EndState, LoadConfig, NoObserver};

    fn server(arch: Arch, listen: Endpoint, raw: Option<(usize, usize)>) -> server::RunningServer {
        server::start(&ServerConfig {
            arch,
            listen,
            cpus: vec![],
            poll: false,
            conn: ConnConfig {
                raw,
                ..ConnConfig::new(DEFAULT_MAX_FRAME)
            },
        })
        .unwrap()
    }

    #[test]
    fn every_mode_against_both_servers_with_verification() {
        for arch in [Arch::Reactor, Arch::Pool] {
            for mode in [Mode::Echo, Mode::Oneway, Mode::Stream, Mode::Rr] {
                let (size, resp) = (100, if mode == Mode::Rr { 30 } else { 333 });
                let raw = (mode == Mode::Rr).then_some((size, resp));
                let srv = server(arch, "tcp://127.0.0.1:0".parse().unwrap(), raw);
                let client = MsgrClient::new(srv.endpoint.clone(), mode, size, resp).verify(true);
                let cfg = LoadConfig {
                    clients: 2,
                    conns_per_client: 2,
                    depth: 3,
                    count: Some(2000),
                    ..LoadConfig::default()
                };
                let out = engine::run_load(Arc::new(client), &cfg, &mut NoObserver);
                assert_eq!(out.end, EndState::Complete, "{arch} {mode}");
                assert_eq!(out.measured.ops, 2000, "{arch} {mode}");
                let stats = srv.shutdown();
                assert_eq!(stats.conns_accepted, 4, "{arch} {mode}");
                assert_eq!(stats.conns_refused, 0, "{arch} {mode}");
                if mode.has_response() {
                    assert!(
                        stats.max_outstanding_per_conn <= 3,
                        "{arch} {mode}: {stats:?}"
                    );
                    assert!(out.measured.hist.len() == 2000);
                }
            }
        }
    }

    #[test]
    fn unix_sockets_work_and_the_socket_file_is_removed() {
        let path = std::env::temp_dir().join(format!("wb-test-{}.sock", std::process::id()));
        let srv = server(Arch::Reactor, Endpoint::Unix(path.clone()), None);
        let client = MsgrClient::new(srv.endpoint.clone(), Mode::Echo, 4096, 4096).verify(true);
        let cfg = LoadConfig {
            depth: 8,
            count: Some(500),
            ..LoadConfig::default()
        };
        let out = engine::run_load(Arc::new(client), &cfg, &mut NoObserver);
        assert_eq!(out.end, EndState::Complete);
        srv.shutdown();
        assert!(!path.exists());
    }

    #[test]
    fn a_raw_server_is_refused_by_a_framed_client_with_a_hint() {
        let srv = server(
            Arch::Pool,
            "tcp://127.0.0.1:0".parse().unwrap(),
            Some((24, 16)),
        );
        let client = MsgrClient::new(srv.endpoint.clone(), Mode::Echo, 64, 64);
        let out = engine::run_load(Arc::new(client), &LoadConfig::default(), &mut NoObserver);
        match out.end {
            EndState::Failed(r) => assert!(r.contains("--mode rr"), "{r}"),
            e => panic!("{e:?}"),
        }
        srv.shutdown();
    }

    #[test]
    fn oversize_requests_are_refused_at_the_handshake() {
        let srv = server::start(&ServerConfig {
            arch: Arch::Reactor,
            listen: "tcp://127.0.0.1:0".parse().unwrap(),
            cpus: vec![],
            poll: false,
            conn: ConnConfig::new(1024),
        })
        .unwrap();
        let client = MsgrClient::new(srv.endpoint.clone(), Mode::Echo, 2048, 64);
        let out = engine::run_load(Arc::new(client), &LoadConfig::default(), &mut NoObserver);
        match out.end {
            EndState::Failed(r) => assert!(r.contains("maximum frame is 1024"), "{r}"),
            e => panic!("{e:?}"),
        }
        assert_eq!(srv.shutdown().conns_refused, 1);
    }
}
