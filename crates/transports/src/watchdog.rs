//! A time limit on one operation at a time without a timer per operation:
//! a connection keeps one timer, which an operation re-arms at its own
//! deadline only when the timer fires early (it was set for an earlier
//! operation). Operations far shorter than the limit, the usual case,
//! touch no timer at all.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

pub struct Watchdog {
    limit: Duration,
    timer: Pin<Box<Sleep>>,
}

impl Watchdog {
    /// A watchdog of operations that may take `limit` each (zero: no limit).
    pub fn new(limit: Duration) -> Watchdog {
        Watchdog {
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
        }
    }

    /// `op`'s output, or None when it took longer than the limit.
    pub async fn run<T>(&mut self, op: impl Future<Output = T>) -> Option<T> {
        if self.limit.is_zero() {
            return Some(op.await);
        }
        let deadline = Instant::now() + self.limit;
        tokio::pin!(op);
        loop {
            tokio::select! {
                biased;
                out = &mut op => return Some(out),
                () = &mut self.timer => {
                    if Instant::now() >= deadline {
                        return None;
                    }
                    self.timer.as_mut().reset(deadline);
                }
            }
        }
    }
}

/// `op`'s output, or None when it took longer than `limit` (zero: no
/// limit): for operations apart from the load (a preflight, a lookup).
pub async fn within<T>(limit: Duration, op: impl Future<Output = T>) -> Option<T> {
    if limit.is_zero() {
        return Some(op.await);
    }
    tokio::time::timeout(limit, op).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn each_operation_gets_the_whole_limit_and_no_more() {
        let mut w = Watchdog::new(Duration::from_secs(1));
        // Many operations shorter than the limit, together far longer.
        for _ in 0..30 {
            let r = w.run(tokio::time::sleep(Duration::from_millis(300))).await;
            assert!(r.is_some());
        }
        // After a pause longer than the limit, a short one still passes.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            w.run(tokio::time::sleep(Duration::from_millis(900)))
                .await
                .is_some()
        );
        // One longer than the limit fails at the limit.
        let start = Instant::now();
        assert!(
            w.run(tokio::time::sleep(Duration::from_secs(60)))
                .await
                .is_none()
        );
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        // Zero: no limit.
        let mut never = Watchdog::new(Duration::ZERO);
        assert!(
            never
                .run(tokio::time::sleep(Duration::from_secs(3600)))
                .await
                .is_some()
        );
    }
}
