//! A time limit on one operation at a time without a timer per operation:
//! a connection keeps one timer that fires ten times per limit and counts
//! how many times in a row it found the same operation unfinished.
//! Operations far shorter than the limit, the usual case, touch neither
//! the timer nor the clock.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

pub struct Watchdog {
    limit: Duration,
    /// A tenth of the limit: how often the timer checks.
    every: Duration,
    timer: Pin<Box<Sleep>>,
    /// The operation being watched, and what the timer saw when it last
    /// fired: which operation, and how many times in a row it found the
    /// same one unfinished.
    op: u64,
    seen: (u64, u32),
}

impl Watchdog {
    /// A watchdog of operations that may take `limit` each (zero: no limit).
    pub fn new(limit: Duration) -> Watchdog {
        let every = limit / 10;
        Watchdog {
            limit,
            every,
            timer: Box::pin(tokio::time::sleep(every)),
            op: 0,
            seen: (0, 0),
        }
    }

    /// `op`'s output, or None when it took longer than the limit (found
    /// unfinished by 11 checks a tenth of the limit apart: between the
    /// limit and 1.1 times it). The clock is read only when the timer fires.
    pub async fn run<T>(&mut self, op: impl Future<Output = T>) -> Option<T> {
        if self.limit.is_zero() {
            return Some(op.await);
        }
        self.op += 1;
        tokio::pin!(op);
        loop {
            tokio::select! {
                biased;
                out = &mut op => return Some(out),
                () = &mut self.timer => {
                    self.seen = match self.seen {
                        (op, n) if op == self.op => (op, n + 1),
                        _ => (self.op, 0),
                    };
                    if self.seen.1 > 10 {
                        return None;
                    }
                    self.timer.as_mut().reset(Instant::now() + self.every);
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
        // One longer than the limit fails past the limit, a check late at
        // most.
        let start = Instant::now();
        assert!(
            w.run(tokio::time::sleep(Duration::from_secs(60)))
                .await
                .is_none()
        );
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(1) && took <= Duration::from_millis(1100),
            "{took:?}"
        );
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
