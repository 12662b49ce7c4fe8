//! The progress of one S3 request, shared by its body (each frame that
//! leaves) and the client (each frame that arrives): what the op timeout
//! measures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How many times a request moved (a piece of its body left, a piece of its
/// response came): an idle request fails after the op timeout, however long
/// a large object keeps it busy. A move is counted, not timed: the clock is
/// read only by the watchdog, a few times per timeout.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    moves: Arc<AtomicU64>,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress::default()
    }

    pub(super) fn tick(&self) {
        self.moves.fetch_add(1, Ordering::Relaxed);
    }

    fn moves(&self) -> u64 {
        self.moves.load(Ordering::Relaxed)
    }

    /// Resolves when nothing moved for `limit` (never, for a zero limit),
    /// checked every tenth of it (10 ms to 250 ms): at most that late.
    pub(super) async fn stalled(&self, limit: Duration) {
        if limit.is_zero() {
            return std::future::pending().await;
        }
        let every = (limit / 10).clamp(Duration::from_millis(10), Duration::from_millis(250));
        let (mut seen, mut since) = (self.moves(), Instant::now());
        loop {
            tokio::time::sleep(every).await;
            let now = self.moves();
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() > limit {
                return;
            }
        }
    }
}

/// A connection's one timer for the stall checks of its requests, one
/// request at a time: it fires every tenth of the limit (10 ms to 250 ms)
/// and counts how long it found the same request without a move; a
/// request touches neither the timer nor the clock.
pub struct StallTimer {
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// The request being watched, and what the timer saw when it last
    /// fired: which request, how far it had moved, and since when.
    request: u64,
    seen: (u64, u64, Option<Instant>),
}

impl Default for StallTimer {
    fn default() -> Self {
        StallTimer {
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            request: 0,
            seen: (0, 0, None),
        }
    }
}

impl StallTimer {
    /// `op`'s output, or None once nothing moved on `p` for `limit`
    /// (never, for a zero limit), a check late at most.
    pub(super) async fn run<T>(
        &mut self,
        p: &Progress,
        limit: Duration,
        op: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        if limit.is_zero() {
            return Some(op.await);
        }
        let every = (limit / 10).clamp(Duration::from_millis(10), Duration::from_millis(250));
        self.request += 1;
        tokio::pin!(op);
        loop {
            tokio::select! {
                biased;
                out = &mut op => return Some(out),
                () = &mut self.timer => {
                    let now = Instant::now();
                    let here = (self.request, p.moves());
                    match self.seen {
                        (r, m, Some(since)) if (r, m) == here => {
                            if now - since > limit {
                                return None;
                            }
                        }
                        _ => self.seen = (here.0, here.1, Some(now)),
                    }
                    self.timer.as_mut().reset(now + every);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn it_fires_after_the_limit_without_moves_only() {
        let p = Progress::new();
        let limit = Duration::from_millis(500);
        let start = tokio::time::Instant::now();
        // Moving every 100 ms for 2 s: never stalled meanwhile.
        let mover = {
            let p = p.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    p.tick();
                }
            })
        };
        p.stalled(limit).await;
        mover.await.unwrap();
        let took = start.elapsed();
        // Stalled once the moves stopped (at 2 s), past the limit, and at
        // most a check late.
        assert!(
            took > Duration::from_millis(2500) && took <= Duration::from_millis(2600),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_connections_timer_fails_a_stalled_request_only() {
        let mut t = StallTimer::default();
        let limit = Duration::from_millis(500);
        // Requests of 100 ms, back to back for 3 s: none stalls.
        for _ in 0..30 {
            let p = Progress::new();
            let op = tokio::time::sleep(Duration::from_millis(100));
            assert!(t.run(&p, limit, op).await.is_some());
        }
        // A long request that keeps moving passes; one that stops fails
        // past the limit, a check late at most.
        let p = Progress::new();
        let moving = {
            let p = p.clone();
            async move {
                for _ in 0..30 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    p.tick();
                }
            }
        };
        assert!(t.run(&p, limit, moving).await.is_some());
        let start = Instant::now();
        let stuck = tokio::time::sleep(Duration::from_secs(60));
        assert!(t.run(&p, limit, stuck).await.is_none());
        let took = start.elapsed();
        assert!(
            took > limit && took <= limit + Duration::from_millis(60),
            "{took:?}"
        );
    }
}
