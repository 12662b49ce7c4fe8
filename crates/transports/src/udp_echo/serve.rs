//! The embedded UDP echo server, as `wirebench serve --transport udp-echo`
//! and a run start it: a thread per CPU on one socket, each sending every
//! datagram back to its sender, counted.

use crate::server::{Checked, Server, Started, value};
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use wirebench_core::error::SpecError;
use wirebench_core::result::ServerStats;
use wirebench_core::serve::ServeRequest;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_core::topo::CpuList;
use wirebench_load::driver::Credentials;

/// The UDP echo server.
pub static SERVER: Option<Server> = Some(Server {
    own_flag_set: |_| None,
    check,
    order: |_: &RunSpec, _: &mut ServeRequest| {},
});

/// How often a waiting thread looks whether the server stops.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Where it listens, and its threads.
struct UdpEchoConfig {
    addr: String,
    threads: usize,
}

fn check(
    req: &ServeRequest,
    cpus: &CpuList,
    _: Option<Credentials>,
) -> Result<Box<dyn Checked>, SpecError> {
    for (f, set) in [
        ("--max-conns", req.max_conns.is_some()),
        ("--idle-timeout", req.idle_timeout.is_some()),
    ] {
        if set {
            return Err(SpecError::Invalid {
                flag: f,
                why: "applies to servers of connections: a UDP echo server has none".into(),
            });
        }
    }
    let addr = match &req.listen {
        None => "127.0.0.1:7470".to_string(),
        Some(Endpoint::Addr { scheme, addr }) if scheme == "udp" => addr.clone(),
        Some(l) => {
            return Err(value(
                "--listen",
                l,
                "a UDP echo server listens on udp://HOST:PORT",
            ));
        }
    };
    Ok(Box::new(UdpEchoConfig {
        addr,
        threads: cpus.len().max(1),
    }))
}

/// What the threads counted.
#[derive(Default)]
struct Counts {
    datagrams: AtomicU64,
    bytes: AtomicU64,
}

impl Checked for UdpEchoConfig {
    fn start(self: Box<Self>, cpus: &CpuList) -> std::io::Result<Started> {
        let sock = UdpSocket::bind(&self.addr).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on udp://{}: {e}", self.addr),
            )
        })?;
        sock.set_read_timeout(Some(STOP_CHECK))?;
        let local = sock.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let mut threads = Vec::with_capacity(self.threads);
        for i in 0..self.threads {
            let sock = sock.try_clone()?;
            let (stop, counts) = (stop.clone(), counts.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("udp-echo-{i}"))
                    .spawn(move || echo(&sock, &stop, &counts))?,
            );
        }
        let endpoint = Endpoint::Addr {
            scheme: "udp".into(),
            addr: local.to_string(),
        };
        let note = format!(
            "UDP echo on {endpoint}, CPUs {cpus} ({} threads)",
            self.threads
        );
        Ok(Started {
            endpoint,
            note,
            shutdown: Box::new(move || {
                stop.store(true, Ordering::Relaxed);
                for t in threads {
                    let _ = t.join();
                }
                let datagrams = counts.datagrams.load(Ordering::Relaxed);
                let bytes = counts.bytes.load(Ordering::Relaxed);
                ServerStats {
                    frames_in: datagrams,
                    frames_out: datagrams,
                    bytes_in: bytes,
                    bytes_out: bytes,
                    ..ServerStats::default()
                }
            }),
        })
    }
}

/// Sends each datagram back to its sender until `stop`.
fn echo(sock: &UdpSocket, stop: &AtomicBool, counts: &Counts) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        // An error is the timeout (to look at `stop`), or an earlier
        // answer's sender gone: go on.
        if let Ok((n, from)) = sock.recv_from(&mut buf)
            // A sender gone (ICMP unreachable) costs that answer only.
            && sock.send_to(&buf[..n], from).is_ok()
        {
            counts.datagrams.fetch_add(1, Ordering::Relaxed);
            counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}
