//! The two reference msgr servers and what they share:
//! - [`reactor`]: shared-nothing, one current-thread event loop pinned to
//!   each core of the cpuset, each accepting and serving its own connections;
//!   optional busy-poll.
//! - [`pool`]: one shared work-stealing pool of threads (tokio's
//!   multi-thread runtime) serving all connections.
//!
//! Both serve connections with [`conn::serve_conn`], so the difference
//! measured between them is the threading design, nothing else.

pub mod conn;
pub mod faults;
pub mod pool;
pub mod reactor;
mod shared;

pub use shared::{ConnConfig, ConnStats, Listener, ServerConfig, StatsRegistry, StdListener};

use std::io;
use std::sync::Arc;
use wirebench_core::result::ServerStats;
use wirebench_core::spec::{Arch, Endpoint};

/// A server serving in this process.
pub struct RunningServer {
    pub endpoint: Endpoint,
    registry: Arc<StatsRegistry>,
    stop: Box<dyn FnOnce() + Send>,
}

impl RunningServer {
    pub fn stats(&self) -> ServerStats {
        self.registry.snapshot()
    }

    /// Stops serving, closes every connection and removes a Unix socket file.
    pub fn shutdown(self) -> ServerStats {
        (self.stop)();
        if let Endpoint::Unix(p) = &self.endpoint {
            let _ = std::fs::remove_file(p);
        }
        self.registry.snapshot()
    }
}

/// Binds and starts a server of the configured design.
pub fn start(cfg: &ServerConfig) -> io::Result<RunningServer> {
    let (listener, endpoint) = StdListener::bind(&cfg.listen)?;
    let registry = Arc::new(StatsRegistry::default());
    let stop: Box<dyn FnOnce() + Send> = match cfg.arch {
        Arch::Reactor => reactor::start(listener, cfg, registry.clone())?,
        Arch::Pool => pool::start(listener, cfg, registry.clone())?,
    };
    Ok(RunningServer {
        endpoint,
        registry,
        stop,
    })
}
