//! What the servers' accept loops share: a cap on the connections served
//! at once, and a pause after a failed accept (out of descriptors: EMFILE,
//! ENFILE), so that a server under either never spins or floods its log.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a log line goes.
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A log line at most once a period ([`RateLimitedLog::EVERY`] unless told
/// otherwise); the lines held back are counted in the next one. Lines go
/// to stderr as the server's, or to a sink of the caller's.
#[derive(Default)]
pub struct RateLimitedLog {
    last: Option<Instant>,
    held: u64,
    every: Option<Duration>,
    sink: Option<LogSink>,
}

impl std::fmt::Debug for RateLimitedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitedLog")
            .field("last", &self.last)
            .field("held", &self.held)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl RateLimitedLog {
    pub const EVERY: Duration = Duration::from_secs(10);

    /// Lines to `sink`, at most one `every`.
    pub fn to(sink: LogSink, every: Duration) -> RateLimitedLog {
        RateLimitedLog {
            every: Some(every),
            sink: Some(sink),
            ..RateLimitedLog::default()
        }
    }

    /// Logs `line`, unless a line went out less than a period ago.
    pub fn log(&mut self, who: &str, line: impl FnOnce() -> String) {
        let every = self.every.unwrap_or(Self::EVERY);
        let now = Instant::now();
        if self.last.is_some_and(|t| now - t < every) {
            self.held += 1;
            return;
        }
        let held = std::mem::take(&mut self.held);
        let more = if held > 0 {
            format!(" ({held} more like it in the last {every:?})")
        } else {
            String::new()
        };
        match &self.sink {
            Some(sink) => sink(&format!("{who}: {}{more}", line())),
            None => eprintln!("wirebench serve: {who}: {}{more}", line()),
        }
        self.last = Some(now);
    }
}

/// The pause after failed accepts: 10 ms, doubling to 1 s while they fail.
#[derive(Debug)]
pub struct AcceptErrors {
    pause: Duration,
    log: RateLimitedLog,
}

impl Default for AcceptErrors {
    fn default() -> AcceptErrors {
        AcceptErrors {
            pause: Self::FIRST,
            log: RateLimitedLog::default(),
        }
    }
}

impl AcceptErrors {
    /// Its lines to `sink`, at most one `every` (a load agent's log).
    pub fn logging_to(sink: LogSink, every: Duration) -> AcceptErrors {
        AcceptErrors {
            log: RateLimitedLog::to(sink, every),
            ..AcceptErrors::default()
        }
    }

    const FIRST: Duration = Duration::from_millis(10);
    const MOST: Duration = Duration::from_secs(1);

    /// After a failed accept: logs (rate-limited) and waits.
    pub async fn failed(&mut self, e: &io::Error) {
        let pause = self.pause;
        self.log.log("listener", || {
            use nix::errno::Errno;
            let out_of_fds = [Errno::EMFILE, Errno::ENFILE].map(|e| Some(e as i32));
            let hint = if out_of_fds.contains(&e.raw_os_error()) {
                " (out of file descriptors: raise `ulimit -n`, or lower --max-conns)"
            } else {
                ""
            };
            format!("accept failed: {e}{hint}; pausing accepts")
        });
        tokio::time::sleep(pause).await;
        self.pause = (pause * 2).min(Self::MOST);
    }

    /// After an accept that worked.
    pub fn succeeded(&mut self) {
        self.pause = Self::FIRST;
    }

    /// A connection closed because `max` are served already.
    pub fn over_cap(&mut self, max: usize) {
        self.log.log("listener", || {
            format!("{max} connections served already: closing a new one (--max-conns {max})")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failures_pause_longer_each_time_up_to_a_second() {
        let mut a = AcceptErrors::default();
        let e = io::Error::from_raw_os_error(nix::errno::Errno::EMFILE as i32);
        let t0 = tokio::time::Instant::now();
        for _ in 0..10 {
            a.failed(&e).await;
        }
        // 10+20+40+...+640 ms, then 1 s three times.
        let took = tokio::time::Instant::now() - t0;
        assert_eq!(took, Duration::from_millis(1270 + 3000));
        a.succeeded();
        assert_eq!(a.pause, AcceptErrors::FIRST);
        assert!(a.log.held >= 9);
    }
}
