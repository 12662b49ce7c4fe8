//! A worker: one pinned thread per client with its current-thread runtime,
//! its connections and its recorder. It connects, waits for the start,
//! then drives each connection until the run ends, an error, or every
//! connection finished; it sends a snapshot of its recorder at each
//! interval boundary.

use super::coordinator::{Gate, Msg, Schedule, WorkerLink};
use super::pacer::{self, Pacer};
use crate::recorder::{IntervalData, Recorder};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use wirebench_core::result::Phase;

/// Spawns worker `id`'s thread: it runs `f`, then stays until `gate` opens,
/// so that the coordinator's last CPU sample still sees it (the kernel
/// keeps a thread's run-queue wait only while the thread lives).
pub(crate) fn worker_thread(
    id: usize,
    gate: Arc<Gate>,
    f: impl FnOnce() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("wb-client-{id}"))
        .spawn(move || {
            f();
            gate.wait();
        })
        .expect("spawning a worker thread")
}

/// What made a worker stop.
enum Stop {
    /// The last interval of a duration run was sent.
    Duration,
    /// Every connection completed its share of `--count`.
    Count,
    Error(String),
    /// The coordinator asked.
    Asked,
}

/// The first error of a worker's connections, and a wake-up for it.
#[derive(Default)]
pub(crate) struct ErrorSlot {
    first: RefCell<Option<String>>,
    notify: Notify,
}

impl ErrorSlot {
    pub(crate) fn set(&self, e: String) {
        let mut f = self.first.borrow_mut();
        if f.is_none() {
            *f = Some(e);
        }
        self.notify.notify_one();
    }
}

/// A worker of an async transport: connects, waits for the start, then
/// runs `drive` on each connection on its current-thread runtime until the
/// run ends, an error, or every connection finished. `answered`: each
/// request gets an answer (what is unanswered at the end is counted).
pub(crate) fn async_worker_main<C, CF, D, DF>(
    link: WorkerLink,
    answered: bool,
    connect: impl Fn(usize) -> CF,
    lane: impl Fn(usize) -> Option<usize>,
    drive: D,
) where
    C: 'static,
    CF: std::future::Future<Output = std::io::Result<C>>,
    D: Fn(C, ConnCtx) -> DF,
    DF: std::future::Future<Output = std::io::Result<()>> + 'static,
{
    let WorkerLink {
        id,
        cfg,
        msgs,
        start,
        mut stop,
        ..
    } = link;
    let done = |error: Option<String>| {
        let _ = msgs.send(Msg::Done { worker: id, error });
    };
    // Open-loop timetables need timers that fire when due.
    let _ = crate::os::tighten_timer_slack();
    if !cfg.client_cpus.is_empty() {
        let cpu = cfg.client_cpus[id % cfg.client_cpus.len()];
        if let Err(e) = crate::os::pin_current_thread(&[cpu]) {
            return done(Some(format!("client {id}: cannot pin to CPU {cpu}: {e}")));
        }
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return done(Some(format!("client {id}: cannot build its runtime: {e}"))),
    };
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(&rt, async {
        // Connect phase.
        let began = Instant::now();
        let mut conns = Vec::new();
        for j in 0..cfg.conns_per_client {
            let c = tokio::time::timeout(cfg.connect_timeout, connect(j)).await;
            match c {
                Ok(Ok(c)) => conns.push(c),
                Ok(Err(e)) => return Err(format!("client {id} connection {j}: {e}")),
                Err(_) => return Err(format!("client {id} connection {j}: no connection (and handshake) within {} (--op-timeout {0})", wirebench_core::units::Dur(cfg.connect_timeout))),
            }
        }
        let _ = msgs.send(Msg::Ready { connect_ns: began.elapsed().as_nanos() as u64 });
        let sched = tokio::select! {
            s = start => match s { Ok(s) => s, Err(_) => return Ok(()) },
            _ = stop.wait_for(|s| *s) => return Ok(()),
        };
        tokio::time::sleep_until(sched.load_start.into()).await;
        if cfg.poll {
            // Busy-poll: a task that always yields keeps the runtime from
            // parking; it then polls epoll with a zero timeout between tasks.
            tokio::task::spawn_local(async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
        }

        let rec = Rc::new(RefCell::new(WorkerRec::new(id, sched, msgs.clone(), cfg.rate.is_some())));
        rec.borrow_mut().pace(cfg.depth, cfg.conn_gap_ns());
        let errors = Rc::new(ErrorSlot::default());
        let remaining = Rc::new(Cell::new(conns.len()));
        let all_done = Rc::new(Notify::new());
        let mut stalls = Vec::new();
        // Open loop: one timer for the worker's timetables.
        let timer = match cfg.rate {
            Some(_) => match crate::timer::WorkerTimer::start() {
                Ok(t) => Some(t),
                Err(e) => return Err(format!("client {id}: cannot make a timer: {e}")),
            },
            None => None,
        };
        let profile = cfg.profile();
        for (j, conn) in conns.into_iter().enumerate() {
            let (global, nconns_total) = cfg.global_conn(id, j);
            let quota = cfg.count.map(|c| c / nconns_total + u64::from(global < c % nconns_total));
            let quota = Quota { limit: quota, done: 0, measure_start: sched.measure_start };
            let pacer = pacer::of_conn(&cfg, sched.load_start, global, nconns_total, profile.as_ref());
            let stall = Arc::new(Stall::new(sched.load_start));
            stalls.push(stall.clone());
            // What a connection of requests and answers leaves unanswered
            // at the end is counted then.
            if answered {
                rec.borrow_mut().watch(stall.clone(), lane(j));
            }
            let gate = ConnGate::of(&cfg, &sched, id, j);
            let ctx = ConnCtx { rec: rec.clone(), errors: errors.clone(), depth: cfg.depth, quota, pacer, seq_base: global << 40, stall, lane: lane(j), timer: timer.clone(), gate };
            let (remaining, all_done) = (remaining.clone(), all_done.clone());
            let errs = ctx.errors.clone();
            let driving = drive(conn, ctx);
            tokio::task::spawn_local(async move {
                match driving.await {
                    Ok(()) => {
                        remaining.set(remaining.get() - 1);
                        if remaining.get() == 0 {
                            all_done.notify_one();
                        }
                    }
                    Err(e) => errs.set(format!("client {id} connection {j}: {e}")),
                }
            });
        }
        // The watchdog: a connection waiting longer than --op-timeout fails
        // the run (transports that time their own requests set no stall).
        if !cfg.op_timeout.is_zero() {
            let (errors, rec, limit) = (errors.clone(), rec.clone(), cfg.op_timeout);
            tokio::task::spawn_local(async move {
                loop {
                    tokio::time::sleep(watchdog_tick(limit)).await;
                    if rec.borrow().finished {
                        return;
                    }
                    let now = Instant::now();
                    for (j, s) in stalls.iter().enumerate() {
                        if let Some(w) = s.waited(now).filter(|w| *w > limit) {
                            return errors.set(stall_error(id, j, w, limit));
                        }
                    }
                }
            });
        }
        // Intervals end when a recording or this ticker first sees the time
        // past their boundary: a busy connection task may delay the ticker,
        // never the attribution of a measurement to its interval.
        let ticker = {
            let rec = rec.clone();
            async move {
                loop {
                    let next = rec.borrow().next_boundary();
                    tokio::time::sleep_until(next.into()).await;
                    let mut r = rec.borrow_mut();
                    r.advance(Instant::now());
                    if r.finished {
                        return;
                    }
                }
            }
        };
        // Count mode, or connections that may run out of work (typed operations).
        let count_mode = cfg.count.is_some() || cfg.finite_work;
        // Biased: when the run ended and a connection failed at once (the
        // peer saw the end first), the end wins.
        let why = tokio::select! {
            biased;
            _ = ticker => Stop::Duration,
            _ = all_done.notified(), if count_mode => Stop::Count,
            _ = errors.notify.notified() => Stop::Error(errors.first.borrow().clone().unwrap_or_default()),
            _ = stop.wait_for(|s| *s) => Stop::Asked,
        };
        rec.borrow_mut().finish_now(Instant::now());
        match why {
            Stop::Error(e) => Err(e),
            _ => Ok(()),
        }
    });
    // Connections close as the runtime drops its tasks.
    drop(local);
    drop(rt);
    done(result.err());
}

/// A worker's recorder and where it stands in the schedule.
pub(crate) struct WorkerRec {
    pub(crate) rec: Recorder,
    pub(crate) sched: Schedule,
    /// The interval under way.
    pub(crate) index: usize,
    /// The run's last interval was sent: nothing more is recorded.
    pub(crate) finished: bool,
    pub(crate) worker: usize,
    pub(crate) msgs: mpsc::Sender<Msg>,
    /// Each connection's wait (and its endpoint's lane), looked at when
    /// the run ends: what it never got answered is counted then.
    conns: Vec<(Arc<Stall>, Option<usize>)>,
    /// Open loop: a connection's gap between requests.
    open_gap_ns: Option<u64>,
    /// Requests a connection keeps outstanding (closed loop), or at most
    /// (open loop).
    depth: u64,
    /// The measured phase so far (intervals taken): the slowest answer
    /// and the answers.
    measured_max_ns: u64,
    measured_ops: u64,
}

/// A connection still waiting at the end of the run has left requests
/// unanswered when it has waited this long, and more than twice the
/// slowest answer of its worker. (The floor is above the VM's longest
/// platform stalls, ~300 ms: a stall at the very end is not a silent
/// server.)
pub(crate) const UNANSWERED_AFTER: Duration = Duration::from_millis(500);

impl WorkerRec {
    pub(crate) fn new(
        worker: usize,
        sched: Schedule,
        msgs: mpsc::Sender<Msg>,
        open_loop: bool,
    ) -> WorkerRec {
        WorkerRec {
            rec: Recorder::new(open_loop),
            sched,
            index: 0,
            finished: false,
            worker,
            msgs,
            conns: Vec::new(),
            open_gap_ns: None,
            depth: 1,
            measured_max_ns: 0,
            measured_ops: 0,
        }
    }

    /// How the worker's connections send: `depth` outstanding, and in an
    /// open loop one request every `open_gap_ns` each.
    pub(crate) fn pace(&mut self, depth: usize, open_gap_ns: Option<u64>) {
        self.depth = depth as u64;
        self.open_gap_ns = open_gap_ns;
    }

    /// A connection whose wait is looked at when the run ends.
    pub(crate) fn watch(&mut self, stall: Arc<Stall>, lane: Option<usize>) {
        self.conns.push((stall, lane));
    }

    /// Takes the interval under way, keeping the measured phase's slowest
    /// answer and count.
    fn take(&mut self) -> IntervalData {
        if self.measuring() {
            let (max, ops) = self.rec.so_far();
            self.measured_max_ns = self.measured_max_ns.max(max);
            self.measured_ops += ops;
        }
        self.rec.take()
    }

    /// At `end`, the end of the measured phase: each connection that has
    /// waited longer than [`UNANSWERED_AFTER`] and twice the slowest
    /// answer left its requests unanswered; they are counted (see
    /// [`Recorder::unanswered`]), the requests it would have sent at its
    /// pace meanwhile with them (its open-loop gap; in a closed loop, the
    /// worker's measured time per operation and connection).
    fn count_unanswered(&mut self, end: Instant) {
        if !self.measuring() {
            return;
        }
        let (max, ops) = self.rec.so_far();
        let slowest = self.measured_max_ns.max(max);
        let after = (UNANSWERED_AFTER.as_nanos() as u64).max(slowest.saturating_mul(2));
        let ops = self.measured_ops + ops;
        let elapsed = crate::engine::coordinator::ns_between(self.sched.measure_start, end);
        let gap = self.open_gap_ns.or_else(|| {
            (ops > 0).then(|| {
                let per = u128::from(elapsed) * self.conns.len() as u128 / u128::from(ops);
                u64::try_from(per).unwrap_or(u64::MAX)
            })
        });
        let conns = std::mem::take(&mut self.conns);
        for (stall, lane) in &conns {
            let Some(waited) = stall.waited(end) else {
                continue;
            };
            let waited = waited.as_nanos() as u64;
            if waited <= after {
                continue;
            }
            let outstanding = match self.open_gap_ns {
                Some(g) if g > 0 => (waited / g).clamp(1, self.depth),
                _ => self.depth,
            };
            self.rec.set_lane(*lane);
            self.rec.unanswered(waited, gap, outstanding);
        }
        self.rec.set_lane(None);
    }

    pub(crate) fn next_boundary(&self) -> Instant {
        self.sched.boundary(self.index + 1)
    }

    /// Ends (and sends) every interval whose end `now` has passed. Call it
    /// before recording something that happened at `now`.
    pub(crate) fn advance(&mut self, now: Instant) {
        while !self.finished {
            let end = self.next_boundary();
            if now < end {
                break;
            }
            if self.sched.is_last(self.index) {
                self.count_unanswered(end);
            }
            let data = self.take();
            let _ = self.msgs.send(Msg::Interval {
                worker: self.worker,
                index: self.index,
                end,
                data: Box::new(data),
            });
            self.finished = self.sched.is_last(self.index);
            self.index += 1;
        }
    }

    /// Whether what is recorded now goes to the measured phase.
    pub(crate) fn measuring(&self) -> bool {
        self.sched.phase(self.index) == Phase::Measure
    }

    /// Ends the interval under way now (count reached, stop, error).
    pub(crate) fn finish_now(&mut self, now: Instant) {
        self.advance(now);
        if !self.finished {
            self.count_unanswered(now);
            let data = self.take();
            let _ = self.msgs.send(Msg::Interval {
                worker: self.worker,
                index: self.index,
                end: now,
                data: Box::new(data),
            });
            self.finished = true;
        }
    }
}

/// Whether a connection waits for something that does not come: the time
/// it started waiting (for a response, for a send to be taken, for a
/// stream's next message), or none. Shared by a connection's threads (or
/// tasks) and its worker's watchdog.
#[derive(Debug)]
pub(crate) struct Stall {
    epoch: Instant,
    /// Nanoseconds from `epoch` + 1 when the wait began; 0: not waiting.
    since: AtomicU64,
}

impl Stall {
    pub(crate) fn new(epoch: Instant) -> Stall {
        Stall {
            epoch,
            since: AtomicU64::new(0),
        }
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64 + 1
    }

    /// Something is awaited from `now` on (kept if already waiting).
    pub(crate) fn waiting(&self, now: Instant) {
        let _ = self
            .since
            .compare_exchange(0, self.ns(now), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// An operation completed at `now`; `more`: something else is awaited.
    pub(crate) fn progressed(&self, now: Instant, more: bool) {
        self.since
            .store(if more { self.ns(now) } else { 0 }, Ordering::Relaxed);
    }

    /// How long it has waited at `now`, if it waits.
    pub(crate) fn waited(&self, now: Instant) -> Option<Duration> {
        match self.since.load(Ordering::Relaxed) {
            0 => None,
            s => Some(Duration::from_nanos(self.ns(now).saturating_sub(s))),
        }
    }
}

/// The watchdog's message for connection `j` of client `id`.
pub(crate) fn stall_error(id: usize, j: usize, waited: Duration, limit: Duration) -> String {
    format!(
        "client {id} connection {j}: no operation completed for {:.1} s (--op-timeout {}): the server stopped answering, or answers in a way this client does not count (a wrong --response-size, say)",
        waited.as_secs_f64(),
        wirebench_core::units::Dur(limit)
    )
}

/// How often a watchdog looks at its connections.
pub(crate) fn watchdog_tick(limit: Duration) -> Duration {
    (limit / 10).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

pub(crate) struct ConnCtx {
    pub(crate) rec: Rc<RefCell<WorkerRec>>,
    pub(crate) errors: Rc<ErrorSlot>,
    /// Closed loop: requests outstanding. Open loop: the most outstanding
    /// (later requests wait, their latency still runs from their intended time).
    pub(crate) depth: usize,
    pub(crate) quota: Quota,
    /// Open loop only: the timetable, and the worker's timer.
    pub(crate) pacer: Option<Pacer>,
    pub(crate) timer: Option<crate::timer::WorkerTimer>,
    /// The connection's number (over all workers) << 40: unique operation numbers.
    pub(crate) seq_base: u64,
    /// What the watchdog watches (`--op-timeout`).
    pub(crate) stall: Arc<Stall>,
    /// The endpoint it reaches, of several (see `Transport::lane`).
    pub(crate) lane: Option<usize>,
    /// A closed loop in stages: when this connection sends.
    pub(crate) gate: Option<ConnGate>,
}

/// A closed loop in stages (`10s:conns=8, 10s:conns=64`): when one
/// connection may send. The connections are numbered across the workers
/// first (connection 0 of each client, then 1...), so that each stage's
/// are spread over the client threads; the n that send in a stage are the
/// first n. A connection that may not send finishes what it has in flight
/// and waits.
#[derive(Debug, Clone)]
pub(crate) struct ConnGate {
    /// (from when, sends): the first from the load's start (the warm-up
    /// sends as the first stage).
    changes: Vec<(Instant, bool)>,
}

impl ConnGate {
    /// Connection `j` of worker `id`'s gate, None for a run without
    /// closed-loop stages.
    pub(crate) fn of(
        cfg: &super::types::LoadConfig,
        sched: &Schedule,
        id: usize,
        j: usize,
    ) -> Option<ConnGate> {
        if !wirebench_core::stages::closed(&cfg.stages) {
            return None;
        }
        let spread = (j * cfg.clients + id) as u64;
        let rank = cfg.share.map_or(spread, |s| s.first + spread);
        let changes = wirebench_core::stages::conn_steps(&cfg.stages)
            .into_iter()
            .enumerate()
            .map(|(k, (at_ns, n))| {
                let from = if k == 0 {
                    sched.load_start
                } else {
                    sched.measure_start + Duration::from_nanos(at_ns)
                };
                (from, rank < n)
            })
            .collect();
        Some(ConnGate { changes })
    }

    /// Whether it sends at `t`, and when that changes next.
    fn at(&self, t: Instant) -> (bool, Option<Instant>) {
        let mut on = true;
        for (k, &(from, sends)) in self.changes.iter().enumerate() {
            if from > t {
                return (on, Some(from));
            }
            on = sends;
            if k + 1 == self.changes.len() {
                return (on, None);
            }
        }
        (on, None)
    }

    /// Waits until the connection may send (at once when it may now).
    pub(crate) async fn open(&self) {
        loop {
            let now = Instant::now();
            match self.at(now) {
                (true, _) => return,
                (false, Some(next)) => tokio::time::sleep_until(next.into()).await,
                (false, None) => std::future::pending::<()>().await,
            }
        }
    }
}

/// The worker's recorder, its intervals advanced to `now`, recording for
/// a connection of `lane`; None once the run is over (nothing more is
/// recorded).
pub(crate) fn recorder_at(
    rec: &RefCell<WorkerRec>,
    lane: Option<usize>,
    now: Instant,
) -> Option<std::cell::RefMut<'_, WorkerRec>> {
    let mut w = rec.borrow_mut();
    w.advance(now);
    w.rec.set_lane(lane);
    (!w.finished).then_some(w)
}

/// A connection's share of `--count`: operations of the measured phase only.
pub(crate) struct Quota {
    pub(crate) limit: Option<u64>,
    pub(crate) done: u64,
    pub(crate) measure_start: Instant,
}

impl Quota {
    /// How many of `ops` operations count (those beyond the share, in
    /// flight when it was reached, do not); marks them done. `measuring`:
    /// whether the recorder they go to is in the measured phase (the
    /// recorder, not the clock, decides: another thread may have ended the
    /// warm-up between the operation's timestamp and its recording).
    pub(crate) fn take(&mut self, ops: usize, measuring: bool) -> usize {
        match self.limit {
            Some(limit) if measuring => {
                let n = (ops as u64).min(limit - self.done);
                self.done += n;
                n as usize
            }
            _ => ops,
        }
    }

    /// How many operations may still start at `now`, at most `want`.
    pub(crate) fn allow(&self, want: usize, now: Instant) -> usize {
        match self.limit {
            Some(limit) if now >= self.measure_start => {
                (want as u64).min(limit - self.done) as usize
            }
            _ => want,
        }
    }

    pub(crate) fn reached(&self) -> bool {
        self.limit.is_some_and(|l| self.done >= l)
    }
}

/// An error after the run's end is no error: peers may close first.
pub(crate) fn after_end<T: Default>(ctx: &ConnCtx, e: std::io::Error) -> std::io::Result<T> {
    if ctx.rec.borrow().finished {
        Ok(T::default())
    } else {
        Err(e)
    }
}
