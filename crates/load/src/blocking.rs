//! Workers for blocking transports (shared-memory rings, pipes). Each
//! connection runs on its own thread (two in request/response with depth
//! above 1 or an open loop: a sender and a receiver, as the IPC report's
//! `async` mode); the worker's own thread ends intervals at their
//! boundaries and watches for the end. Every transport call returns within
//! a slice, so a connection thread sees the end within about 10 ms.
//!
//! Requests carry their stamps (intended and actual send time) and
//! responses bring them back: the receiver times each response without a
//! queue shared with the sender.

use crate::engine::{
    LoadConfig, LoadOutcome, Msg, Observer, Pacer, Quota, Stall, WorkerLink, WorkerRec, coordinate,
    ns_between, sleep_until, stall_error, worker_thread,
};
use crate::os;
use crate::recorder::Recorder;
use crate::transport::{
    BlockingConn, BlockingRx, BlockingTransport, BlockingTx, Pattern, Received, Stamp,
};
use linux_futex::{AsFutex, Private};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Scope;
use std::time::{Duration, Instant};

/// How long a waiting thread sleeps before looking at the run again.
const STEP: Duration = Duration::from_millis(10);

/// What a worker's connection threads share.
struct Shared {
    rec: Mutex<WorkerRec>,
    /// The run is over for this worker: threads return.
    over: AtomicBool,
    error: Mutex<Option<String>>,
    /// Connections still running (count mode ends when none is).
    remaining: AtomicUsize,
    epoch: Instant,
}

impl Shared {
    fn over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    fn fail(&self, e: String) {
        let mut f = self.error.lock().expect("not poisoned");
        if f.is_none() && !self.over() {
            *f = Some(e);
        }
        self.over.store(true, Ordering::Relaxed);
    }

    /// The recorder advanced to `now`; None once nothing more is recorded.
    fn rec_at(&self, now: Instant) -> Option<MutexGuard<'_, WorkerRec>> {
        let mut w = self.rec.lock().expect("not poisoned");
        w.advance(now);
        (!w.finished).then_some(w)
    }

    fn ns(&self, t: Instant) -> u64 {
        ns_between(self.epoch, t)
    }

    /// An error once the run is over is no error: peers may close first.
    fn after_end<T: Default>(&self, r: io::Result<T>) -> io::Result<T> {
        match r {
            Err(_) if self.over() => Ok(T::default()),
            r => r,
        }
    }
}

struct ConnCtx {
    /// What the worker's thread watches (`--op-timeout`).
    stall: Arc<Stall>,
    depth: usize,
    quota: Quota,
    pacer: Option<Pacer>,
    /// Spin instead of sleeping when waiting for credits.
    spin: bool,
}

/// Like [`crate::engine::run_load`], for a transport whose calls block:
/// each connection gets its own threads.
pub fn run_load<T: BlockingTransport>(
    transport: Arc<T>,
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
) -> LoadOutcome {
    coordinate(cfg, observer, &mut |l: WorkerLink| {
        let t = transport.clone();
        let gate = l.gate.clone();
        worker_thread(l.id, gate, move || worker_main(t, l))
    })
}

pub(crate) fn worker_main<T: BlockingTransport>(transport: Arc<T>, l: WorkerLink) {
    let WorkerLink {
        id,
        cfg,
        msgs,
        start,
        stop,
        ..
    } = l;
    let done = |error: Option<String>| {
        let _ = msgs.send(Msg::Done { worker: id, error });
    };
    let _ = os::tighten_timer_slack();
    if !cfg.client_cpus.is_empty() {
        let cpu = cfg.client_cpus[id % cfg.client_cpus.len()];
        if let Err(e) = os::pin_current_thread(&[cpu]) {
            return done(Some(format!("client {id}: cannot pin to CPU {cpu}: {e}")));
        }
    }
    let began = Instant::now();
    let mut conns = Vec::new();
    for j in 0..cfg.conns_per_client {
        match transport.connect(id, j) {
            Ok(c) => conns.push(c),
            Err(e) => return done(Some(format!("client {id} connection {j}: {e}"))),
        }
    }
    let _ = msgs.send(Msg::Ready {
        connect_ns: began.elapsed().as_nanos() as u64,
    });
    let Ok(sched) = start.blocking_recv() else {
        return done(None);
    };
    sleep_until(sched.load_start);
    let shared = Shared {
        rec: Mutex::new(WorkerRec::new(id, sched, msgs.clone(), cfg.rate.is_some())),
        over: AtomicBool::new(false),
        error: Mutex::new(None),
        remaining: AtomicUsize::new(conns.len()),
        epoch: sched.load_start,
    };
    let pattern = transport.pattern();
    let count_mode = cfg.count.is_some();
    let stalls: Vec<Arc<Stall>> = (0..conns.len())
        .map(|_| Arc::new(Stall::new(sched.load_start)))
        .collect();
    {
        // What a connection leaves unanswered at the end is counted then.
        let mut r = shared.rec.lock().unwrap_or_else(|e| e.into_inner());
        r.pace(cfg.depth, cfg.conn_gap_ns());
        if pattern == Pattern::RequestResponse {
            for s in &stalls {
                r.watch(s.clone(), None);
            }
        }
    }
    std::thread::scope(|scope| {
        let profile = cfg.profile();
        for (j, conn) in conns.into_iter().enumerate() {
            let (global, nconns_total) = cfg.global_conn(id, j);
            let quota = Quota {
                limit: cfg
                    .count
                    .map(|c| c / nconns_total + u64::from(global < c % nconns_total)),
                done: 0,
                measure_start: sched.measure_start,
            };
            let pacer = crate::engine::pacer_of_conn(
                &cfg,
                sched.load_start,
                global,
                nconns_total,
                profile.as_ref(),
            );
            let ctx = ConnCtx {
                stall: stalls[j].clone(),
                depth: cfg.depth,
                quota,
                pacer,
                spin: cfg.poll,
            };
            let sh = &shared;
            std::thread::Builder::new()
                .name(format!("wb-client-{id}.{j}"))
                .spawn_scoped(scope, move || {
                    match drive(conn, pattern, ctx, sh, scope) {
                        Ok(()) => {}
                        Err(e) => sh.fail(format!("client {id} connection {j}: {e}")),
                    }
                    sh.remaining.fetch_sub(1, Ordering::Relaxed);
                })
                .expect("spawning a connection thread");
        }
        // This thread ends the intervals and watches for the end.
        loop {
            if stop.has_changed().unwrap_or(true)
                || shared.over()
                || (count_mode && shared.remaining.load(Ordering::Relaxed) == 0)
            {
                break;
            }
            let now = Instant::now();
            let limit = cfg.op_timeout;
            let stalled = stalls.iter().enumerate().find_map(|(j, s)| {
                let w = s.waited(now).filter(|w| !limit.is_zero() && *w > limit)?;
                Some(stall_error(id, j, w, limit))
            });
            if let Some(e) = stalled {
                shared.fail(e);
                break;
            }
            let next = {
                let mut w = shared.rec.lock().expect("not poisoned");
                w.advance(now);
                if w.finished {
                    break;
                }
                w.next_boundary()
            };
            std::thread::sleep(next.saturating_duration_since(now).min(STEP));
        }
        shared.over.store(true, Ordering::Relaxed);
        shared
            .rec
            .lock()
            .expect("not poisoned")
            .finish_now(Instant::now());
    });
    let error = shared.error.lock().expect("not poisoned").take();
    done(error)
}

fn drive<'s, C: BlockingConn>(
    conn: C,
    pattern: Pattern,
    ctx: ConnCtx,
    sh: &'s Shared,
    scope: &'s Scope<'s, '_>,
) -> io::Result<()> {
    let (tx, rx) = conn.split();
    match pattern {
        Pattern::RequestResponse if ctx.depth == 1 && ctx.pacer.is_none() => {
            request_response_sync(tx, rx, ctx, sh)
        }
        Pattern::RequestResponse => request_response_async(tx, rx, ctx, sh, scope),
        Pattern::SendOnly => {
            let _keep = rx;
            send_only(tx, ctx, sh)
        }
        Pattern::ReceiveOnly => {
            let _keep = tx;
            receive_only(rx, ctx, sh)
        }
    }
}

/// Waits for at least one message; None once the run is over.
fn recv_some(
    rx: &mut impl BlockingRx,
    done: &mut Vec<Stamp>,
    sh: &Shared,
) -> io::Result<Option<Received>> {
    loop {
        done.clear();
        let r = sh.after_end(rx.recv(done))?;
        if r.ops > 0 {
            return Ok(Some(r));
        }
        if sh.over() {
            return Ok(None);
        }
    }
}

/// Records messages received at `now`: counts, and the latency of each
/// response in `done` that counts. False once nothing more is recorded.
fn record_received(
    sh: &Shared,
    quota: &mut Quota,
    r: Received,
    done: &[Stamp],
    now: Instant,
    sent: Option<usize>,
) -> bool {
    let Some(mut w) = sh.rec_at(now) else {
        return false;
    };
    if let Some(bytes) = sent {
        w.rec.sent(1, bytes as u64);
    }
    w.rec.received(r.ops as u64, r.bytes as u64);
    let counted = quota.take(r.ops, w.measuring());
    record_responses(&mut w.rec, &done[..counted.min(done.len())], sh.ns(now));
    w.rec.completed(counted as u64);
    true
}

/// Records the responses of `done` counted at `now`.
fn record_responses(rec: &mut Recorder, done: &[Stamp], now_ns: u64) {
    for s in done {
        rec.timing(
            now_ns.saturating_sub(s.intended),
            now_ns.saturating_sub(s.sent),
            1,
        );
    }
}

/// One request outstanding: send, wait for its response, again (the IPC
/// report's `sync`). One thread, one lock per operation.
fn request_response_sync(
    mut tx: impl BlockingTx,
    mut rx: impl BlockingRx,
    mut ctx: ConnCtx,
    sh: &Shared,
) -> io::Result<()> {
    let mut done = Vec::with_capacity(16);
    loop {
        if sh.over() {
            return Ok(());
        }
        let t = Instant::now();
        if ctx.quota.allow(1, t) == 0 {
            return Ok(());
        }
        let st = sh.ns(t);
        ctx.stall.waiting(t);
        let (n, bytes) = sh.after_end(tx.send(&[Stamp {
            intended: st,
            sent: st,
        }]))?;
        if n == 0 {
            continue;
        }
        let Some(r) = recv_some(&mut rx, &mut done, sh)? else {
            return Ok(());
        };
        let now = Instant::now();
        ctx.stall.progressed(now, false);
        if !record_received(sh, &mut ctx.quota, r, &done, now, Some(bytes)) {
            return Ok(());
        }
        if ctx.quota.reached() {
            return Ok(());
        }
    }
}

/// A sender thread and a receiver thread, up to `depth` outstanding (the
/// IPC report's `async`); with a rate, the sender keeps the timetable.
fn request_response_async<'s>(
    mut tx: impl BlockingTx,
    mut rx: impl BlockingRx,
    mut ctx: ConnCtx,
    sh: &'s Shared,
    scope: &'s Scope<'s, '_>,
) -> io::Result<()> {
    let credits = Arc::new(AtomicU32::new(ctx.depth as u32));
    let conn_over = Arc::new(AtomicBool::new(false));
    let spin = ctx.spin;
    {
        let (credits, conn_over) = (credits.clone(), conn_over.clone());
        let stall = ctx.stall.clone();
        let mut pacer = ctx.pacer.take();
        std::thread::Builder::new()
            .name("wb-client-tx".into())
            .spawn_scoped(scope, move || {
                let gone = || sh.over() || conn_over.load(Ordering::Relaxed);
                let mut stamps: Vec<Stamp> = Vec::new();
                let mut due = Vec::new();
                while !gone() {
                    if let Some(p) = pacer.as_ref() {
                        match os::sleep_precise(p.next, STEP, gone) {
                            Some(spun) => sh.rec.lock().expect("not poisoned").rec.spun(spun),
                            None => return,
                        }
                    }
                    let c = credits.load(Ordering::Acquire);
                    if c == 0 {
                        wait_credits(&credits, spin);
                        continue;
                    }
                    let t = Instant::now();
                    let st = sh.ns(t);
                    stamps.clear();
                    match pacer.as_mut() {
                        None => stamps.resize(
                            c as usize,
                            Stamp {
                                intended: st,
                                sent: st,
                            },
                        ),
                        Some(p) => {
                            due.clear();
                            p.take_due(t, c as usize, &mut due);
                            stamps.extend(due.iter().map(|&i| Stamp {
                                intended: sh.ns(i),
                                sent: st,
                            }));
                        }
                    }
                    if stamps.is_empty() {
                        continue;
                    }
                    credits.fetch_sub(stamps.len() as u32, Ordering::AcqRel);
                    stall.waiting(t);
                    let mut off = 0;
                    while off < stamps.len() {
                        match tx.send(&stamps[off..]) {
                            Ok((0, _)) if gone() => return,
                            Ok((0, _)) => {}
                            Ok((n, bytes)) => {
                                off += n;
                                if let Some(mut w) = sh.rec_at(t) {
                                    w.rec.sent(n as u64, bytes as u64);
                                }
                            }
                            Err(_) if gone() => return,
                            Err(e) => return sh.fail(format!("send: {e}")),
                        }
                    }
                }
            })?;
    }
    // Whatever ends the receiver ends the sender too.
    struct EndSender(Arc<AtomicBool>);
    impl Drop for EndSender {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _end = EndSender(conn_over);
    let mut done = Vec::with_capacity(1024);
    loop {
        let Some(r) = recv_some(&mut rx, &mut done, sh)? else {
            return Ok(());
        };
        if !record_received(sh, &mut ctx.quota, r, &done, Instant::now(), None) {
            return Ok(());
        }
        let prev = credits.fetch_add(r.ops as u32, Ordering::AcqRel);
        let in_flight = (prev as usize + r.ops) < ctx.depth;
        ctx.stall.progressed(Instant::now(), in_flight);
        if prev == 0 && !spin {
            AsFutex::<Private>::as_futex(&*credits).wake(1);
        }
        if ctx.quota.reached() {
            return Ok(());
        }
    }
}

/// Waits up to a step for credits to come back.
fn wait_credits(credits: &AtomicU32, spin: bool) {
    if spin {
        // Yield between checks: the receiver that returns the credits may
        // share this CPU.
        let until = Instant::now() + STEP;
        while credits.load(Ordering::Acquire) == 0 && Instant::now() < until {
            std::thread::yield_now();
        }
    } else {
        let _ = AsFutex::<Private>::as_futex(credits).wait_for(0, STEP);
    }
}

/// Requests only (`nores`): an operation completes when it is in the
/// channel; `depth` requests per send call.
fn send_only(mut tx: impl BlockingTx, mut ctx: ConnCtx, sh: &Shared) -> io::Result<()> {
    let mut stamps: Vec<Stamp> = Vec::new();
    let mut due = Vec::new();
    let gone = || sh.over();
    loop {
        if sh.over() {
            return Ok(());
        }
        if let Some(p) = ctx.pacer.as_ref() {
            match os::sleep_precise(p.next, STEP, gone) {
                Some(spun) => sh.rec.lock().expect("not poisoned").rec.spun(spun),
                None => return Ok(()),
            }
        }
        let t0 = Instant::now();
        let want = ctx.quota.allow(ctx.depth, t0);
        if want == 0 {
            return Ok(());
        }
        let s0 = sh.ns(t0);
        stamps.clear();
        match ctx.pacer.as_mut() {
            None => stamps.resize(
                want,
                Stamp {
                    intended: s0,
                    sent: s0,
                },
            ),
            Some(p) => {
                due.clear();
                p.take_due(t0, want, &mut due);
                stamps.extend(due.iter().map(|&i| Stamp {
                    intended: sh.ns(i),
                    sent: s0,
                }));
            }
        }
        let mut off = 0;
        ctx.stall.waiting(t0);
        while off < stamps.len() {
            let (n, bytes) = sh.after_end(tx.send(&stamps[off..]))?;
            if n == 0 {
                if sh.over() {
                    return Ok(());
                }
                continue;
            }
            let t1 = Instant::now();
            ctx.stall.progressed(t1, off + n < stamps.len());
            let Some(mut w) = sh.rec_at(t0) else {
                return Ok(());
            };
            w.rec.sent(n as u64, bytes as u64);
            let counted = ctx.quota.take(n, w.measuring());
            w.rec.completed(counted as u64);
            record_responses(&mut w.rec, &stamps[off..off + counted], sh.ns(t1));
            off += n;
        }
    }
}

/// The peer sends (`stream`): an operation is a message received.
fn receive_only(mut rx: impl BlockingRx, mut ctx: ConnCtx, sh: &Shared) -> io::Result<()> {
    let mut done = Vec::new();
    ctx.stall.waiting(Instant::now());
    loop {
        let Some(r) = recv_some(&mut rx, &mut done, sh)? else {
            return Ok(());
        };
        ctx.stall.progressed(Instant::now(), true);
        if !record_received(sh, &mut ctx.quota, r, &done, Instant::now(), None) {
            return Ok(());
        }
        if ctx.quota.reached() {
            return Ok(());
        }
    }
}
