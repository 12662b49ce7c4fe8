//! The progress of one S3 request, shared by its body (each frame that
//! leaves) and the client (each frame that arrives): what the op timeout
//! measures.

use std::time::{Duration, Instant};

/// When a request last moved (a byte of its body left, a byte of its
/// response came): an idle request fails after the op timeout, however long
/// a large object keeps it busy.
#[derive(Debug, Clone)]
pub struct Progress {
    base: Instant,
    last_ns: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            base: Instant::now(),
            last_ns: Default::default(),
        }
    }

    pub(super) fn tick(&self) {
        self.last_ns.store(
            self.base.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    pub(super) fn idle(&self) -> Duration {
        let last = self.last_ns.load(std::sync::atomic::Ordering::Relaxed);
        self.base
            .elapsed()
            .saturating_sub(Duration::from_nanos(last))
    }

    /// Resolves when nothing moved for `limit` (never, for a zero limit).
    pub(super) async fn stalled(&self, limit: Duration) {
        if limit.is_zero() {
            return std::future::pending().await;
        }
        let tick = (limit / 10).clamp(Duration::from_millis(10), Duration::from_millis(250));
        while self.idle() <= limit {
            tokio::time::sleep(tick).await;
        }
    }
}
