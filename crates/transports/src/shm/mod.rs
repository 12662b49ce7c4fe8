//! The shm transport: a session is a pair of bounded rings in shared memory
//! (requests, responses), served by one pinned thread of the server.
//!
//! Rendezvous: the server listens on a Unix socket
//! (`<tmp>/wirebench-shm-<pid>.sock`); a client connects and sends a
//! [`Hello`] line; the server creates the session's memfd (named
//! `wirebench-shm-<pid>-<n>`), and sends it back with a [`Welcome`] over
//! the socket (SCM_RIGHTS). No file exists in /dev/shm at any time: the
//! memory goes when both processes have closed it, however they end. The
//! control socket stays open for the session's life: when it closes, the
//! survivor knows its peer is gone.
//!
//! The same sessions can run over a pipe pair, a Unix socket pair or a TCP
//! loopback connection (the server passes their descriptors the same way),
//! so that `ipc-compare` measures every channel with the same records,
//! server and client.

pub mod chan;
pub mod cleanup;
pub mod client;
pub(crate) mod driver;
pub mod serve;
pub use serve::SERVER;
pub mod proto;
pub mod ring;
pub mod server;
pub mod wake;

pub use proto::*;

#[cfg(test)]
mod tests {
    use super::client::ShmClient;
    use super::server::{self, ShmServerConfig};
    use std::sync::Arc;
    use wirebench_core::spec::{Channel, ShmMode as Mode, Wait};
    use wirebench_load::engine::{EndState, LoadConfig, NoObserver};

    fn socket(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "{}{}-test-{tag}.sock",
            super::PREFIX,
            std::process::id()
        ))
    }

    #[test]
    fn every_mode_over_every_channel_with_verification() {
        let path = socket("modes");
        let srv = server::start(&ShmServerConfig {
            socket: path.clone(),
            cpus: vec![],
        })
        .unwrap();
        let mut sessions = 0;
        for channel in [Channel::Shm, Channel::Pipe, Channel::Unix, Channel::Tcp] {
            for (mode, depth) in [
                (Mode::Sync, 1),
                (Mode::Async, 8),
                (Mode::Nores, 4),
                (Mode::Stream, 1),
            ] {
                let size = 1000;
                let ring = super::default_ring(size).unwrap();
                let c = ShmClient::new(
                    path.clone(),
                    channel,
                    mode,
                    size,
                    ring,
                    Wait::Adaptive,
                    true,
                );
                let cfg = LoadConfig {
                    clients: 2,
                    depth,
                    count: Some(3000),
                    ..LoadConfig::default()
                };
                let out = wirebench_load::blocking::run_load(Arc::new(c), &cfg, &mut NoObserver);
                assert_eq!(out.end, EndState::Complete, "{channel} {mode}");
                assert_eq!(out.measured.ops, 3000, "{channel} {mode}");
                if mode.has_response() {
                    assert_eq!(out.measured.hist.len(), 3000, "{channel} {mode}");
                }
                sessions += 2;
            }
        }
        let stats = srv.shutdown();
        assert_eq!(stats.conns_accepted, sessions);
        assert_eq!(stats.conns_refused, 0);
        assert!(!path.exists(), "the socket file is left behind");
    }

    fn rss_bytes() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let kb: u64 = s
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap();
        kb * 1024
    }

    #[test]
    fn a_slow_reader_holds_the_writer_back_and_memory_stays_flat() {
        use wirebench_load::transport::{BlockingConn, BlockingRx, BlockingTransport};
        let path = socket("slow");
        let srv = server::start(&ShmServerConfig {
            socket: path.clone(),
            cpus: vec![],
        })
        .unwrap();
        let size = 1u64 << 20;
        let ring = super::default_ring(size).unwrap();
        let c = ShmClient::new(
            path,
            Channel::Shm,
            Mode::Stream,
            size,
            ring,
            Wait::Futex,
            false,
        );
        let (_tx, mut rx) = c.connect(0, 0).unwrap().split();
        let before = rss_bytes();
        let (mut msgs, mut bytes) = (0u64, 0u64);
        let mut done = Vec::new();
        while bytes < 4 << 30 {
            let r = rx.recv(&mut done).unwrap();
            msgs += r.ops as u64;
            bytes += r.bytes as u64;
            // The reader is slowed on purpose: the writer must wait for it.
            if r.ops > 0 && msgs % 64 < r.ops as u64 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        let grown = rss_bytes().saturating_sub(before);
        assert!(grown < 64 << 20, "RSS grew by {grown} bytes");
        let stats = srv.shutdown();
        // The writer never ran further ahead than the ring holds.
        let in_ring = ring / super::ring::Rec::stride(size);
        assert!(
            stats.frames_out <= msgs + in_ring,
            "written {}, read {msgs}, the ring holds {in_ring}",
            stats.frames_out
        );
    }

    #[test]
    fn a_message_larger_than_the_ring_is_refused() {
        let path = socket("big");
        let srv = server::start(&ShmServerConfig {
            socket: path.clone(),
            cpus: vec![],
        })
        .unwrap();
        let c = ShmClient::new(
            path,
            Channel::Shm,
            Mode::Sync,
            8192,
            4096,
            Wait::Spin,
            false,
        );
        let out = wirebench_load::blocking::run_load(
            Arc::new(c),
            &LoadConfig::default(),
            &mut NoObserver,
        );
        match out.end {
            EndState::Failed(why) => assert!(why.contains("more than the ring"), "{why}"),
            e => panic!("{e:?}"),
        }
        assert_eq!(srv.shutdown().conns_refused, 1);
    }
}
