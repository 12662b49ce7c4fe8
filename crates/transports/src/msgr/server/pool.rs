//! The shared-pool server: one multi-thread tokio runtime (work-stealing,
//! epoll-driven) with as many worker threads as CPUs in the cpuset, all
//! pinned to the whole cpuset; any thread may serve any connection.

use super::conn::serve_conn;
use super::shared::{ServerConfig, StatsRegistry, StdListener, log};
use crate::accept::AcceptErrors;
use std::io;
use std::sync::Arc;

pub(super) fn start(
    listener: StdListener,
    cfg: &ServerConfig,
    registry: Arc<StatsRegistry>,
) -> io::Result<Box<dyn FnOnce() + Send>> {
    let cpus = cfg.cpus.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.cpus.len().max(1))
        .thread_name("wb-pool")
        .on_thread_start(move || {
            let _ = wirebench_load::os::tighten_timer_slack();
            if !cpus.is_empty()
                && let Err(e) = crate::sys::pin_current_thread(&cpus)
            {
                log("pool", &format!("cannot pin a worker thread: {e}"));
            }
        })
        .enable_all()
        .build()?;
    let l = {
        let _g = rt.enter();
        listener.into_tokio()?
    };
    let conn_cfg = Arc::new(cfg.conn.clone());
    rt.spawn(async move {
        let mut errors = AcceptErrors::default();
        loop {
            match l.accept().await {
                Ok((s, peer)) => {
                    errors.succeeded();
                    if registry.admit(conn_cfg.max_conns) {
                        tokio::spawn(serve_conn(s, peer, conn_cfg.clone(), registry.clone()));
                    } else {
                        errors.over_cap(conn_cfg.max_conns);
                    }
                }
                Err(e) => errors.failed(&e).await,
            }
        }
    });
    Ok(Box::new(move || {
        rt.shutdown_timeout(std::time::Duration::from_secs(1))
    }))
}
