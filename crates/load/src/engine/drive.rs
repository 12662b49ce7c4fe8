//! Driving one connection of an async transport by its pattern:
//! request/response with `depth` outstanding (closed loop) or on a
//! timetable (open loop), send-only, or receive-only.

use super::coordinator::WorkerLink;
use super::worker::{ConnCtx, after_end, async_worker_main, recorder_at};
use crate::recorder::OpTimes;
use crate::transport::{Conn, ConnRx, ConnTx, Pattern, Transport};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

/// The worker of an async transport: each connection driven by its pattern.
pub(crate) fn worker_main<T: Transport>(transport: Arc<T>, link: WorkerLink) {
    let (id, pattern) = (link.id, transport.pattern());
    async_worker_main(
        link,
        pattern == Pattern::RequestResponse,
        |j| transport.connect(id, j),
        |j| transport.lane(id, j),
        move |conn, ctx| drive_conn(conn, pattern, ctx),
    )
}

/// Requests sent together: when they were meant to leave (open loop: the
/// timetable; closed loop: when sent), when they left, how many.
struct Run {
    intended: Instant,
    sent: Instant,
    n: usize,
}

/// Requests in flight on one connection, in order, and how many more may
/// be sent (`credits`: the depth less those in flight).
struct InFlight {
    runs: RefCell<VecDeque<Run>>,
    credits: Cell<usize>,
}

impl InFlight {
    /// The credits, once there are some. Only the receiver gives credits
    /// back, and [`receiver_first`] polls the sender right after it in the
    /// same pass: so waiting needs no waker of its own.
    fn credits(&self) -> impl Future<Output = usize> + '_ {
        std::future::poll_fn(|_| match self.credits.get() {
            0 => Poll::Pending,
            n => Poll::Ready(n),
        })
    }
}

/// Drives a connection's receiver and its sender in one task: the receiver
/// first, then (while the receiver is pending and the sender not ended) the
/// sender. Replies counted and credits given back in a pass are sent on in
/// the same pass, as a hand-written event loop would: no other connection's
/// work comes in between, and no wake-up of a task of its own.
async fn receiver_first<R: Future, S: Future<Output = ()>>(receiver: R, sender: S) -> R::Output {
    let (mut receiver, mut sender) = (pin!(receiver), pin!(sender));
    let mut sender_ended = false;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = receiver.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        if !sender_ended {
            sender_ended = sender.as_mut().poll(cx).is_ready();
        }
        Poll::Pending
    })
    .await
}

async fn drive_conn<C: Conn>(conn: C, pattern: Pattern, mut ctx: ConnCtx) -> std::io::Result<()> {
    let (mut tx, mut rx) = conn.split();
    match pattern {
        Pattern::RequestResponse => {
            let shared = InFlight {
                runs: RefCell::new(VecDeque::new()),
                credits: Cell::new(ctx.depth),
            };
            let sender = {
                let (shared, rec, errors) = (&shared, ctx.rec.clone(), ctx.errors.clone());
                let stall = ctx.stall.clone();
                let mut pacer = ctx.pacer.take();
                let timer = ctx.timer.clone();
                let gate = ctx.gate.take();
                async move {
                    let mut due = Vec::new();
                    loop {
                        if let Some(g) = &gate {
                            g.open().await;
                        }
                        if let Some(p) = pacer.as_mut() {
                            match timer
                                .as_ref()
                                .expect("an open loop has a timer")
                                .sleep_until(p.next)
                                .await
                            {
                                Ok(spun) => rec.borrow_mut().rec.spun(spun),
                                Err(e) => return errors.set(format!("timer: {e}")),
                            }
                        }
                        let credits = shared.credits().await;
                        let t = Instant::now();
                        if rec.borrow().finished {
                            // Keep the sending half open until the worker
                            // ends: closing it would make the server close
                            // the connection under the receiver's feet.
                            return std::future::pending().await;
                        }
                        let n = match pacer.as_mut() {
                            None => {
                                shared.runs.borrow_mut().push_back(Run {
                                    intended: t,
                                    sent: t,
                                    n: credits,
                                });
                                credits
                            }
                            Some(p) => {
                                due.clear();
                                p.take_due(t, credits, &mut due);
                                let mut runs = shared.runs.borrow_mut();
                                runs.extend(due.iter().map(|&intended| Run {
                                    intended,
                                    sent: t,
                                    n: 1,
                                }));
                                due.len()
                            }
                        };
                        if n == 0 {
                            continue;
                        }
                        shared.credits.set(credits - n);
                        match tx.send(n).await {
                            Ok(bytes) => {
                                stall.waiting(t);
                                let mut w = rec.borrow_mut();
                                w.advance(t);
                                w.rec.sent(n as u64, bytes as u64);
                            }
                            Err(_) if rec.borrow().finished => return std::future::pending().await,
                            Err(e) => return errors.set(format!("send: {e}")),
                        }
                    }
                }
            };
            let receiver = async {
                loop {
                    let r = rx.recv().await.or_else(|e| after_end(&ctx, e))?;
                    let now = Instant::now();
                    let Some(mut w) = recorder_at(&ctx.rec, ctx.lane, now) else {
                        return Ok(());
                    };
                    let measuring = w.measuring();
                    let rec = &mut w.rec;
                    rec.received(r.ops as u64, r.bytes as u64);
                    let counted = ctx.quota.take(r.ops, measuring);
                    let mut runs = shared.runs.borrow_mut();
                    let replies = rx.replies();
                    if !replies.is_empty() && replies.len() != r.ops {
                        return Err(std::io::Error::other(format!(
                            "transport error: {} replies told for {} responses",
                            replies.len(),
                            r.ops
                        )));
                    }
                    let mut left = r.ops;
                    let mut to_count = counted;
                    let mut next_reply = replies.iter();
                    while left > 0 {
                        let Some(front) = runs.front_mut() else {
                            return Err(std::io::Error::other(
                                "protocol error: more responses than requests sent",
                            ));
                        };
                        let k = front.n.min(left);
                        let kc = k.min(to_count);
                        let latency_ns =
                            now.saturating_duration_since(front.intended).as_nanos() as u64;
                        let service_ns =
                            now.saturating_duration_since(front.sent).as_nanos() as u64;
                        if replies.is_empty() {
                            rec.timing(latency_ns, service_ns, kc as u64);
                        } else {
                            // Typed: each counted response by its type, a
                            // failure by its cause (and not in the histograms).
                            for reply in next_reply.by_ref().take(kc) {
                                match &reply.failure {
                                    None => rec.op_done(
                                        reply.op,
                                        OpTimes {
                                            latency_ns,
                                            service_ns,
                                            ttfb_ns: None,
                                            connect_ns: None,
                                            tls_ns: None,
                                        },
                                        reply.bytes_out,
                                        reply.bytes_in,
                                    ),
                                    Some(cause) => rec.op_failed(reply.op, cause),
                                }
                            }
                            next_reply.by_ref().take(k - kc).for_each(drop);
                        }
                        to_count -= kc;
                        left -= k;
                        front.n -= k;
                        if front.n == 0 {
                            runs.pop_front();
                        }
                    }
                    if replies.is_empty() {
                        rec.completed(counted as u64);
                    }
                    if ctx.quota.reached() {
                        return Ok(());
                    }
                    shared.credits.set(shared.credits.get() + r.ops);
                    ctx.stall.progressed(now, shared.credits.get() < ctx.depth);
                }
            };
            receiver_first(receiver, sender).await
        }
        Pattern::SendOnly => {
            // Anything the peer sends, or its closing, ends this connection.
            let watcher = {
                let (errors, rec_w) = (ctx.errors.clone(), ctx.rec.clone());
                tokio::task::spawn_local(async move {
                    match rx.recv().await {
                        Ok(_) => errors.set(
                            "protocol error: the server sent data on a one-way connection".into(),
                        ),
                        Err(_) if rec_w.borrow().finished => {}
                        Err(e) => errors.set(format!("receive: {e}")),
                    }
                })
            };
            let _abort_watcher = AbortOnDrop(watcher);
            let mut due = Vec::new();
            loop {
                if let Some(p) = ctx.pacer.as_mut() {
                    let spun = ctx
                        .timer
                        .as_ref()
                        .expect("an open loop has a timer")
                        .sleep_until(p.next)
                        .await?;
                    ctx.rec.borrow_mut().rec.spun(spun);
                }
                let t0 = Instant::now();
                let want = ctx.quota.allow(ctx.depth, t0);
                due.clear();
                match ctx.pacer.as_mut() {
                    Some(p) => p.take_due(t0, want, &mut due),
                    None => due.resize(want, t0),
                }
                let n = due.len();
                if want == 0 {
                    return Ok(());
                }
                if n == 0 {
                    continue;
                }
                ctx.stall.waiting(t0);
                let bytes = tx.send(n).await.or_else(|e| after_end(&ctx, e))?;
                let t1 = Instant::now();
                ctx.stall.progressed(t1, false);
                let Some(mut w) = recorder_at(&ctx.rec, ctx.lane, t0) else {
                    return Ok(());
                };
                let measuring = w.measuring();
                let rec = &mut w.rec;
                rec.sent(n as u64, bytes as u64);
                rec.completed(ctx.quota.take(n, measuring) as u64);
                // One-way: the operation is done when handed to the kernel.
                let service = t1.saturating_duration_since(t0).as_nanos() as u64;
                for &intended in &due {
                    rec.timing(
                        t1.saturating_duration_since(intended).as_nanos() as u64,
                        service,
                        1,
                    );
                }
            }
        }
        Pattern::ReceiveOnly => {
            // Keep the sending half open: dropping it would half-close the
            // connection, which a stream server may take as goodbye.
            let _keep = tx;
            ctx.stall.waiting(Instant::now());
            loop {
                let r = rx.recv().await.or_else(|e| after_end(&ctx, e))?;
                let now = Instant::now();
                ctx.stall.progressed(now, true);
                let Some(mut w) = recorder_at(&ctx.rec, ctx.lane, now) else {
                    return Ok(());
                };
                w.rec.received(r.ops as u64, r.bytes as u64);
                let counted = ctx.quota.take(r.ops, w.measuring());
                w.rec.completed(counted as u64);
                if ctx.quota.reached() {
                    return Ok(());
                }
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context, Waker};

    /// Pending once (waking its task), then ready: a reply still to come.
    fn reply_later() -> impl Future<Output = ()> {
        let mut asked = false;
        std::future::poll_fn(move |cx| {
            if asked {
                return Poll::Ready(());
            }
            asked = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    }

    #[test]
    fn credits_given_back_are_sent_in_the_same_pass() {
        let shared = InFlight {
            runs: RefCell::new(VecDeque::new()),
            credits: Cell::new(1),
        };
        let (pass, log) = (Cell::new(0), RefCell::new(Vec::new()));
        let receiver = async {
            for _ in 0..5 {
                reply_later().await;
                log.borrow_mut().push(("reply", pass.get()));
                shared.credits.set(shared.credits.get() + 1);
            }
        };
        let sender = async {
            loop {
                let n = shared.credits().await;
                shared.credits.set(0);
                log.borrow_mut().push(("send", pass.get()));
                assert_eq!(n, 1, "one request at a time");
            }
        };
        {
            let mut both = pin!(receiver_first(receiver, sender));
            let mut cx = Context::from_waker(Waker::noop());
            while both.as_mut().poll(&mut cx).is_pending() {
                pass.set(pass.get() + 1);
                assert!(pass.get() < 20, "the receiver ends after its replies");
            }
        }
        let log = log.into_inner();
        // The first send, then each reply with the send it freed, in the
        // same pass: nothing waits for another pass (or another task). The
        // last reply ends the receiver, and with it the connection.
        assert_eq!(log[0], ("send", 0));
        assert_eq!(log.len(), 10, "{log:?}");
        assert_eq!(log[9], ("reply", 5));
        for pair in log[1..9].chunks(2) {
            assert_eq!(pair[0].0, "reply");
            assert_eq!(pair[1], ("send", pair[0].1), "{log:?}");
        }
    }
}
