//! Transports whose connections perform typed operations, one at a time
//! (S3 over HTTP/1.1: GET, PUT, HEAD...): each operation is timed by the
//! engine from its start (closed loop) or its intended start on the
//! timetable (open loop), with its time to first byte, and counted per
//! operation type; a failed operation (an HTTP error status) is counted by
//! cause and the run goes on, while a broken connection ends the run.

use crate::engine::{self, ConnCtx, LoadConfig, LoadOutcome, Observer, WorkerLink};
use crate::recorder::OpTimes;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Instant;

/// What one operation did.
#[derive(Debug, Clone, Default)]
pub struct CallOutcome {
    /// The operation type ("get", "put"...).
    pub op: &'static str,
    /// When the first byte of the response arrived (what counts as the
    /// first byte is the transport's definition).
    pub first_byte: Option<Instant>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Why it failed ("404 NoSuchKey"); None when it succeeded.
    pub failure: Option<String>,
    /// The protocol's status code where it has one (HTTP: 200, 404...),
    /// counted by class.
    pub status: Option<u16>,
    /// The connection it opened first, if it did (HTTP churn, a reconnect):
    /// the TCP connect and the TLS handshake.
    pub connect: Option<std::time::Duration>,
    pub tls: Option<std::time::Duration>,
}

/// Opens connections that perform typed operations.
pub trait CallTransport: Send + Sync + 'static {
    type Conn: CallConn;
    /// Opens connection `index` of worker `worker`.
    fn connect(&self, worker: usize, index: usize) -> impl Future<Output = io::Result<Self::Conn>>;
    /// As [`crate::transport::Transport::lane`].
    fn lane(&self, _worker: usize, _index: usize) -> Option<usize> {
        None
    }
}

pub trait CallConn: 'static {
    /// Performs the connection's next operation, number `seq` (unique over
    /// the run). None: the connection has no more work (it is finished).
    /// An error ends the run (the connection broke).
    fn call(&mut self, seq: u64) -> impl Future<Output = io::Result<Option<CallOutcome>>>;
}

/// Runs the load over a typed-operation transport. The depth is one
/// operation per connection.
pub fn run_load_calls<T: CallTransport>(
    transport: Arc<T>,
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
) -> LoadOutcome {
    let cfg = LoadConfig {
        depth: 1,
        ..cfg.clone()
    };
    engine::coordinate(&cfg, observer, &mut |l: WorkerLink| {
        let t = transport.clone();
        let gate = l.gate.clone();
        engine::worker_thread(l.id, gate, move || {
            let id = l.id;
            engine::async_worker_main(
                l,
                true,
                |j| t.connect(id, j),
                |j| t.lane(id, j),
                drive_calls,
            )
        })
    })
}

async fn drive_calls<C: CallConn>(mut conn: C, mut ctx: ConnCtx) -> io::Result<()> {
    let mut due = Vec::with_capacity(1);
    let mut seq = ctx.seq_base;
    loop {
        if let Some(g) = &ctx.gate {
            g.open().await;
        }
        // Closed loop: the operation is due when it starts (one clock
        // read for both).
        let intended = match ctx.pacer.as_mut() {
            Some(p) => {
                let next = p.next;
                let spun = ctx
                    .timer
                    .as_ref()
                    .expect("an open loop has a timer")
                    .sleep_until(next)
                    .await?;
                ctx.rec.borrow_mut().rec.spun(spun);
                due.clear();
                p.take_due(Instant::now().max(next), 1, &mut due);
                Some(due[0])
            }
            None => None,
        };
        let start = Instant::now();
        let intended = intended.unwrap_or(start);
        if ctx.quota.allow(1, start) == 0 || ctx.rec.borrow().finished {
            return Ok(());
        }
        // Awaited from its start: the watchdog, and the end of the run
        // (an operation never answered is counted then), see how long.
        ctx.stall.waiting(start);
        let out = match conn.call(seq).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(()),
            Err(e) => return engine::after_end(&ctx, e),
        };
        seq += 1;
        let now = Instant::now();
        ctx.stall.progressed(now, false);
        let Some(mut w) = engine::recorder_at(&ctx.rec, ctx.lane, now) else {
            return Ok(());
        };
        let measuring = w.measuring();
        let counted = ctx.quota.take(1, measuring) == 1;
        let rec = &mut w.rec;
        rec.sent(1, out.bytes_out);
        rec.received(1, out.bytes_in);
        if counted {
            let ns = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
            match &out.failure {
                None => rec.op_done(
                    out.op,
                    OpTimes {
                        latency_ns: ns(intended, now),
                        service_ns: ns(start, now),
                        ttfb_ns: out.first_byte.map(|f| ns(intended, f)),
                        connect_ns: out.connect.map(|d| d.as_nanos() as u64),
                        tls_ns: out.tls.map(|d| d.as_nanos() as u64),
                    },
                    out.bytes_out,
                    out.bytes_in,
                ),
                Some(cause) => rec.op_failed(out.op, cause),
            }
            if let Some(code) = out.status {
                rec.op_status(out.op, code);
            }
        }
        drop(w);
        if ctx.quota.reached() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Alternates a fast "get" and a failing "put"; stops after `limit`.
    struct Alternating {
        limit: u64,
    }
    struct AltConn {
        left: u64,
    }
    impl CallTransport for Alternating {
        type Conn = AltConn;
        async fn connect(&self, _w: usize, _i: usize) -> io::Result<AltConn> {
            Ok(AltConn { left: self.limit })
        }
    }
    impl CallConn for AltConn {
        async fn call(&mut self, seq: u64) -> io::Result<Option<CallOutcome>> {
            if self.left == 0 {
                return Ok(None);
            }
            self.left -= 1;
            tokio::time::sleep(Duration::from_micros(200)).await;
            let get = seq.is_multiple_of(2);
            Ok(Some(CallOutcome {
                op: if get { "get" } else { "put" },
                first_byte: get.then(Instant::now),
                bytes_out: if get { 0 } else { 10 },
                bytes_in: if get { 100 } else { 0 },
                failure: (!get).then(|| "503 SlowDown".to_string()),
                ..Default::default()
            }))
        }
    }

    #[test]
    fn typed_operations_are_counted_by_type_and_cause() {
        let cfg = LoadConfig {
            clients: 2,
            duration: Duration::from_secs(30),
            finite_work: true,
            ..LoadConfig::default()
        };
        let t0 = Instant::now();
        let out = run_load_calls(
            Arc::new(Alternating { limit: 40 }),
            &cfg,
            &mut engine::NoObserver,
        );
        // Every connection ran out of work long before the 30 s.
        assert!(t0.elapsed() < Duration::from_secs(20));
        assert_eq!(out.end, engine::EndState::Complete);
        let m = &out.measured;
        assert_eq!(m.ops, 40);
        assert_eq!(m.errors, 40);
        assert_eq!(m.by_op["get"].ops, 40);
        assert_eq!(m.by_op["get"].ttfb_count, 40);
        assert_eq!(m.by_op["get"].bytes_in, 4000);
        assert_eq!(m.by_op["put"].errors, 40);
        assert_eq!(m.by_op["put"].ops, 0);
        assert_eq!(m.failures["503 SlowDown"], 40);
        assert!(m.by_op["get"].ttfb.max() <= m.by_op["get"].hist.max());
    }

    #[test]
    fn count_mode_stops_at_the_count() {
        let cfg = LoadConfig {
            count: Some(30),
            duration: Duration::ZERO,
            ..LoadConfig::default()
        };
        let out = run_load_calls(
            Arc::new(Alternating { limit: 1000 }),
            &cfg,
            &mut engine::NoObserver,
        );
        assert_eq!(out.measured.ops + out.measured.errors, 30);
    }
}
