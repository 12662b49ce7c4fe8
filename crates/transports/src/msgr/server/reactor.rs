//! The shared-nothing server: one thread per CPU of the cpuset, pinned,
//! each running its own current-thread runtime that accepts and serves its
//! own connections. All reactors accept from the same listening socket;
//! a reactor that accepts while it holds more connections than the
//! least-loaded one hands the new connection over, so N connections spread
//! evenly over N reactors (the kernel's choice of which epoll wakes is not
//! balanced).

use super::conn::serve_conn;
use super::shared::{ServerConfig, StatsRegistry, StdListener, log};
use crate::accept::AcceptErrors;
use crate::msgr::stream::Stream;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, watch};

/// A connection moved between reactors, detached from any runtime.
enum Detached {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Detached {
    fn detach(s: Stream) -> io::Result<Detached> {
        Ok(match s {
            Stream::Tcp(s) => Detached::Tcp(s.into_std()?),
            Stream::Unix(s) => Detached::Unix(s.into_std()?),
        })
    }

    fn attach(self) -> io::Result<Stream> {
        Ok(match self {
            Detached::Tcp(s) => Stream::Tcp(tokio::net::TcpStream::from_std(s)?),
            Detached::Unix(s) => Stream::Unix(tokio::net::UnixStream::from_std(s)?),
        })
    }
}

struct Shared {
    conns: Vec<AtomicUsize>,
    handoff: Vec<mpsc::UnboundedSender<(Detached, String)>>,
}

pub(super) fn start(
    listener: StdListener,
    cfg: &ServerConfig,
    registry: Arc<StatsRegistry>,
) -> io::Result<Box<dyn FnOnce() + Send>> {
    let n = cfg.cpus.len().max(1);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut inboxes = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..n {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(tx);
        inboxes.push(rx);
    }
    let shared = Arc::new(Shared {
        conns: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        handoff: senders,
    });
    let conn_cfg = Arc::new(cfg.conn.clone());
    let mut threads = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
    for (i, inbox) in inboxes.into_iter().enumerate() {
        let cpu = cfg.cpus.get(i).copied();
        let l = listener.try_clone()?;
        let (shared, registry, conn_cfg, mut stop, ready) = (
            shared.clone(),
            registry.clone(),
            conn_cfg.clone(),
            stop_rx.clone(),
            ready_tx.clone(),
        );
        let poll = cfg.poll;
        let t = std::thread::Builder::new().name(format!("wb-reactor-{i}")).spawn(move || {
            let setup = (|| -> io::Result<_> {
                if let Some(cpu) = cpu {
                    crate::sys::pin_current_thread(&[cpu])?;
                }
                // Injected delays are timed precisely.
                let _ = wirebench_load::os::tighten_timer_slack();
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                let l = {
                    let _g = rt.enter();
                    l.into_tokio()?
                };
                Ok((rt, l))
            })();
            let (rt, l) = match setup {
                Ok(x) => {
                    let _ = ready.send(Ok(()));
                    x
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                if poll {
                    // Busy-poll, as Seastar's poll mode: a task that always
                    // yields keeps the runtime polling epoll with a zero timeout.
                    tokio::task::spawn_local(async {
                        loop {
                            tokio::task::yield_now().await;
                        }
                    });
                }
                let mut inbox = inbox;
                let serve = |s: Stream, peer: String| {
                    shared.conns[i].fetch_add(1, Ordering::Relaxed);
                    let (shared, registry, conn_cfg) = (shared.clone(), registry.clone(), conn_cfg.clone());
                    tokio::task::spawn_local(async move {
                        serve_conn(s, peer, conn_cfg, registry).await;
                        shared.conns[i].fetch_sub(1, Ordering::Relaxed);
                    });
                };
                let mut errors = AcceptErrors::default();
                loop {
                    tokio::select! {
                        a = l.accept() => match a {
                            Ok(_) if !registry.admit(conn_cfg.max_conns) => {
                                errors.over_cap(conn_cfg.max_conns);
                            }
                            Ok((s, peer)) => {
                                errors.succeeded();
                                let (least, count) = shared.conns.iter().enumerate()
                                    .map(|(j, c)| (j, c.load(Ordering::Relaxed)))
                                    .min_by_key(|&(j, c)| (c, j != i))
                                    .expect("at least one reactor");
                                if least != i && count < shared.conns[i].load(Ordering::Relaxed) {
                                    match Detached::detach(s) {
                                        Ok(d) => {
                                            if shared.handoff[least].send((d, peer)).is_err() {
                                                registry.release();
                                            }
                                        }
                                        Err(e) => {
                                            registry.release();
                                            log(&peer, &format!("cannot hand over the connection: {e}"));
                                        }
                                    }
                                } else {
                                    serve(s, peer);
                                }
                            }
                            Err(e) => errors.failed(&e).await,
                        },
                        Some((d, peer)) = inbox.recv() => match d.attach() {
                            Ok(s) => serve(s, peer),
                            Err(e) => log(&peer, &format!("cannot take over the connection: {e}")),
                        },
                        _ = stop.wait_for(|s| *s) => return,
                    }
                }
            });
        })?;
        threads.push(t);
    }
    drop(ready_tx);
    for _ in 0..n {
        ready_rx
            .recv()
            .map_err(|_| io::Error::other("a reactor thread died while starting"))??;
    }
    Ok(Box::new(move || {
        let _ = stop_tx.send(true);
        for t in threads {
            let _ = t.join();
        }
    }))
}
