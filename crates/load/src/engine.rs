//! The engine's phases: connect (timed), start together, warm-up, measure,
//! stop. One pinned thread per client, each running a current-thread tokio
//! runtime with its connections; the calling thread coordinates: it samples
//! CPU at each interval boundary, assembles the per-second series from the
//! workers' snapshots, asks the observer whether to abort, and merges the
//! measured histograms exactly at the end.
//!
//! Interval boundaries are aligned on the start of the measured phase, so
//! the summary is an exact merge of whole intervals: with a 2.5 s warm-up
//! the first interval lasts 0.5 s and every later one 1 s.

use crate::recorder::{IntervalData, Recorder};
use crate::sampler::{Sample, Sampler};
use crate::transport::{BlockingTransport, Conn, ConnRx, ConnTx, Pattern, Transport};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot, watch};
use wirebench_core::result::{CoreBusy, Phase};

/// What the engine runs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadConfig {
    pub clients: usize,
    pub conns_per_client: usize,
    /// Requests outstanding per connection (closed loop); for send-only
    /// transports, requests per send call.
    pub depth: usize,
    pub warmup: Duration,
    /// Length of the measured phase, unless `count` is set.
    pub duration: Duration,
    /// Operations to complete in the measured phase, over all connections.
    pub count: Option<u64>,
    /// Open loop: total requests per second over all connections, sent on a
    /// timetable whatever the responses do. None: closed loop.
    pub rate: Option<f64>,
    pub arrival: Arrival,
    /// Seeds the Poisson timetables (one stream per connection).
    pub seed: u64,
    /// Connections may finish before the run's end (they ran out of work):
    /// the run ends when all have.
    #[serde(default)]
    pub finite_work: bool,
    /// Busy-poll: the worker runtimes never sleep in the kernel.
    pub poll: bool,
    /// Worker `i` is pinned to `client_cpus[i % len]`; empty: not pinned.
    pub client_cpus: Vec<usize>,
    /// The coordinator's (a worker in another process needs none).
    #[serde(skip)]
    pub sampler: Sampler,
    pub interval: Duration,
    pub connect_timeout: Duration,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            clients: 1,
            conns_per_client: 1,
            depth: 1,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
            count: None,
            rate: None,
            arrival: Arrival::Uniform,
            seed: 1,
            finite_work: false,
            poll: false,
            client_cpus: Vec::new(),
            sampler: Sampler::default(),
            interval: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

pub use wirebench_core::spec::Arrival;

/// Why the caller wants the run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abort {
    Interrupted(String),
    Failed(String),
}

/// How the load ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndState {
    Complete,
    Interrupted(String),
    Failed(String),
}

/// One assembled interval of the series.
#[derive(Debug, Clone)]
pub struct IntervalReport {
    pub index: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub phase: Phase,
    pub data: IntervalData,
    pub client_cores: Vec<CoreBusy>,
    pub server_cores: Vec<CoreBusy>,
}

impl IntervalReport {
    pub fn seconds(&self) -> f64 {
        (self.end_ns.saturating_sub(self.start_ns)) as f64 / 1e9
    }
}

/// Watches a run from the coordinating thread.
pub trait Observer {
    /// Every connection is ready; the load starts.
    fn connected(&mut self, _connect_time_ns: u64) {}
    /// An interval is complete.
    fn interval(&mut self, _iv: &IntervalReport) {}
    /// Asked about every 50 ms: should the run stop?
    fn poll_abort(&mut self) -> Option<Abort> {
        None
    }
}

/// An observer that watches nothing.
pub struct NoObserver;
impl Observer for NoObserver {}

/// Everything the engine measured.
#[derive(Debug)]
pub struct LoadOutcome {
    pub end: EndState,
    pub connect_time_ns: u64,
    pub intervals: Vec<IntervalReport>,
    /// Merge of the measured-phase intervals.
    pub measured: IntervalData,
    pub measured_ns: u64,
    pub client_cpu_s: f64,
    pub server_cpu_s: Option<f64>,
    /// Run-queue wait over the measured phase (from schedstat).
    pub client_runq_wait_s: Option<f64>,
    pub server_runq_wait_s: Option<f64>,
    /// Busy % of each client CPU over the measured phase.
    pub client_cores: Vec<CoreBusy>,
}

/// Interval boundaries, aligned on the start of the measured phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub(crate) load_start: Instant,
    pub(crate) measure_start: Instant,
    warmup_intervals: usize,
    end: Option<Instant>,
    interval: Duration,
}

impl Schedule {
    pub(crate) fn new(load_start: Instant, cfg: &LoadConfig) -> Schedule {
        let measure_start = load_start + cfg.warmup;
        let warmup_intervals = cfg.warmup.as_nanos().div_ceil(cfg.interval.as_nanos()) as usize;
        let end = cfg.count.is_none().then(|| measure_start + cfg.duration);
        Schedule {
            load_start,
            measure_start,
            warmup_intervals,
            end,
            interval: cfg.interval,
        }
    }

    /// Start of interval `i` (and end of interval `i - 1`).
    pub(crate) fn boundary(&self, i: usize) -> Instant {
        let w = self.warmup_intervals;
        let b = if i == 0 {
            self.load_start
        } else if i <= w {
            self.measure_start - self.interval * (w - i) as u32
        } else {
            self.measure_start + self.interval * (i - w) as u32
        };
        match self.end {
            Some(e) if b > e => e,
            _ => b,
        }
    }

    pub(crate) fn phase(&self, i: usize) -> Phase {
        if i < self.warmup_intervals {
            Phase::Warmup
        } else {
            Phase::Measure
        }
    }

    /// Whether interval `i` is the last one (duration mode only).
    pub(crate) fn is_last(&self, i: usize) -> bool {
        self.end.is_some_and(|e| self.boundary(i + 1) >= e)
    }
}

pub(crate) enum Msg {
    Ready {
        connect_ns: u64,
    },
    Interval {
        worker: usize,
        index: usize,
        end: Instant,
        data: Box<IntervalData>,
    },
    Done {
        worker: usize,
        error: Option<String>,
    },
}

/// Runs the load and returns what was measured. Never panics on transport
/// errors: they end the run with `EndState::Failed`.
pub fn run_load<T: Transport>(
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

/// Holds finished worker threads until the coordinator has sampled them.
#[derive(Default)]
pub(crate) struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Gate {
    /// A gate that never holds anyone (a worker in a child process).
    pub(crate) fn opened() -> Arc<Gate> {
        let g = Gate::default();
        g.open();
        Arc::new(g)
    }

    pub(crate) fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Opens the gate when dropped: no worker is held if the coordinator unwinds.
struct OpenOnDrop(Arc<Gate>);
impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// Like [`run_load`], for a transport whose calls block: each connection
/// gets its own threads (see `blocking`).
pub fn run_load_blocking<T: BlockingTransport>(
    transport: Arc<T>,
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
) -> LoadOutcome {
    coordinate(cfg, observer, &mut |l: WorkerLink| {
        let t = transport.clone();
        let gate = l.gate.clone();
        worker_thread(l.id, gate, move || crate::blocking::worker_main(t, l))
    })
}

/// What connects a worker to the coordinator.
pub(crate) struct WorkerLink {
    pub id: usize,
    pub cfg: LoadConfig,
    pub msgs: mpsc::Sender<Msg>,
    pub start: oneshot::Receiver<Schedule>,
    pub stop: watch::Receiver<bool>,
    /// Holds the worker's thread after it is done, until the last sample.
    pub gate: Arc<Gate>,
}

/// The coordinator: starts a worker per client with `spawn`, and runs the
/// phases.
pub(crate) fn coordinate(
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
    spawn: &mut dyn FnMut(WorkerLink) -> std::thread::JoinHandle<()>,
) -> LoadOutcome {
    assert!(
        cfg.clients > 0 && cfg.conns_per_client > 0 && cfg.depth > 0,
        "validated by the caller"
    );
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let gate = Arc::new(Gate::default());
    let _open_on_unwind = OpenOnDrop(gate.clone());
    let mut starts = Vec::new();
    let mut handles = Vec::new();
    for w in 0..cfg.clients {
        let (start_tx, start_rx) = oneshot::channel::<Schedule>();
        starts.push(start_tx);
        handles.push(spawn(WorkerLink {
            id: w,
            cfg: cfg.clone(),
            msgs: msg_tx.clone(),
            start: start_rx,
            stop: stop_rx.clone(),
            gate: gate.clone(),
        }));
    }
    drop(msg_tx);

    let mut end: Option<EndState> = None;
    let mut done = vec![false; cfg.clients];
    let connect_began = Instant::now();
    let mut ready = 0;
    let mut connect_time_ns = 0;
    // Connect phase.
    while ready < cfg.clients && end.is_none() {
        match msg_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Ready { connect_ns }) => {
                ready += 1;
                connect_time_ns = connect_time_ns.max(connect_ns);
            }
            Ok(Msg::Done { worker, error }) => {
                done[worker] = true;
                end = Some(EndState::Failed(error.unwrap_or_else(|| {
                    format!("client {worker} ended while connecting")
                })));
            }
            Ok(Msg::Interval { .. }) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                end = Some(EndState::Failed(
                    "all client workers ended while connecting".into(),
                ))
            }
        }
        if end.is_none() {
            end = observer.poll_abort().map(abort_state);
        }
    }
    if let Some(end) = end {
        let _ = stop_tx.send(true);
        drop(starts);
        gate.open();
        for h in handles {
            let _ = h.join();
        }
        let zero = cfg.sampler.sample();
        return LoadOutcome {
            end,
            connect_time_ns: connect_began.elapsed().as_nanos() as u64,
            intervals: vec![],
            measured: IntervalData::new(),
            measured_ns: 0,
            client_cpu_s: 0.0,
            server_cpu_s: None,
            client_runq_wait_s: None,
            server_runq_wait_s: None,
            client_cores: Sampler::busy(&cfg.client_cpus, &zero, &zero),
        };
    }
    observer.connected(connect_time_ns);

    // Start everybody at one instant, a little ahead so all receive it first.
    let sched = Schedule::new(Instant::now() + Duration::from_millis(20), cfg);
    for s in starts {
        let _ = s.send(sched);
    }
    sleep_until(sched.load_start);
    let mut samples: Vec<Sample> = vec![cfg.sampler.sample()];
    let mut pending: BTreeMap<usize, (IntervalData, usize, Instant)> = BTreeMap::new();
    let mut reported = vec![0usize; cfg.clients]; // intervals received per worker
    let mut intervals: Vec<IntervalReport> = Vec::new();
    let mut final_sample: Option<Sample> = None;

    loop {
        let all_done = done.iter().all(|d| *d);
        if all_done && final_sample.is_none() {
            final_sample = Some(cfg.sampler.sample());
        }
        // Emit every interval that is complete, in order.
        loop {
            let i = intervals.len();
            let Some((_, n, _)) = pending.get(&i) else {
                break;
            };
            let everyone = (0..cfg.clients).all(|w| reported[w] > i || done[w]);
            let expected = (0..cfg.clients).filter(|&w| reported[w] > i).count();
            if !everyone || *n < expected {
                break;
            }
            let after = samples.get(i + 1).or(final_sample.as_ref());
            let Some(after) = after else { break };
            let (data, _, iv_end) = pending.remove(&i).expect("present");
            let before = &samples[i.min(samples.len() - 1)];
            let iv = IntervalReport {
                index: i,
                start_ns: ns_between(sched.load_start, sched.boundary(i)),
                end_ns: ns_between(sched.load_start, iv_end),
                phase: sched.phase(i),
                data,
                client_cores: Sampler::busy(&cfg.client_cpus, before, after),
                server_cores: Sampler::busy(&cfg.sampler.server_cpus, before, after),
            };
            observer.interval(&iv);
            intervals.push(iv);
        }
        if all_done {
            break;
        }
        // Sample CPU at each boundary the run reaches (in duration mode the
        // last boundary is the end of the run).
        let k = samples.len();
        let more = match sched.end {
            Some(e) => sched.boundary(k - 1) < e,
            None => true,
        };
        let next = sched.boundary(k);
        let now = Instant::now();
        if more && next <= now {
            samples.push(cfg.sampler.sample());
            continue;
        }
        let wait = if more {
            next.saturating_duration_since(now)
        } else {
            Duration::from_millis(50)
        };
        let wait = wait.clamp(Duration::from_millis(1), Duration::from_millis(50));
        match msg_rx.recv_timeout(wait) {
            Ok(Msg::Interval {
                worker,
                index,
                end: iv_end,
                data,
            }) => {
                reported[worker] = index + 1;
                let slot = pending
                    .entry(index)
                    .or_insert_with(|| (IntervalData::new(), 0, iv_end));
                slot.0.merge(&data);
                slot.1 += 1;
                slot.2 = slot.2.max(iv_end);
            }
            Ok(Msg::Done { worker, error }) => {
                done[worker] = true;
                if let Some(e) = error
                    && end.is_none()
                {
                    end = Some(EndState::Failed(e));
                    let _ = stop_tx.send(true);
                }
            }
            Ok(Msg::Ready { .. }) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => done.iter_mut().for_each(|d| *d = true),
        }
        if end.is_none()
            && let Some(a) = observer.poll_abort()
        {
            end = Some(abort_state(a));
            let _ = stop_tx.send(true);
        }
    }
    // The last sample was taken with every worker thread still alive.
    gate.open();
    for h in handles {
        let _ = h.join();
    }

    // Totals of the measured phase.
    let mut measured = IntervalData::new();
    let mut measured_end = sched.measure_start;
    for iv in intervals.iter().filter(|iv| iv.phase == Phase::Measure) {
        measured.merge(&iv.data);
        measured_end = measured_end.max(sched.load_start + Duration::from_nanos(iv.end_ns));
    }
    let last = final_sample.expect("taken when all workers were done");
    let w = sched.warmup_intervals;
    let measure_end_sample = samples
        .get(
            intervals
                .iter()
                .filter(|iv| iv.phase == Phase::Measure)
                .count()
                + w,
        )
        .unwrap_or(&last);
    let measure_start_sample = samples.get(w).filter(|_| intervals.len() > w);
    let (client_cpu_s, server_cpu_s, client_cores) = match measure_start_sample {
        Some(a) => {
            let (c, s) = Sampler::cpu_seconds(a, measure_end_sample);
            (c, s, Sampler::busy(&cfg.client_cpus, a, measure_end_sample))
        }
        None => (0.0, None, Sampler::busy(&cfg.client_cpus, &last, &last)),
    };
    let (client_runq_wait_s, server_runq_wait_s) = measure_start_sample.map_or((None, None), |a| {
        Sampler::runq_wait_seconds(a, measure_end_sample)
    });
    LoadOutcome {
        end: end.unwrap_or(EndState::Complete),
        connect_time_ns,
        intervals,
        measured,
        measured_ns: ns_between(sched.measure_start, measured_end),
        client_cpu_s,
        server_cpu_s,
        client_runq_wait_s,
        server_runq_wait_s,
        client_cores,
    }
}

fn abort_state(a: Abort) -> EndState {
    match a {
        Abort::Interrupted(r) => EndState::Interrupted(r),
        Abort::Failed(r) => EndState::Failed(r),
    }
}

pub(crate) fn ns_between(a: Instant, b: Instant) -> u64 {
    b.saturating_duration_since(a).as_nanos() as u64
}

pub(crate) fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
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

fn worker_main<T: Transport>(transport: Arc<T>, link: WorkerLink) {
    let (id, pattern) = (link.id, transport.pattern());
    async_worker_main(
        link,
        |j| transport.connect(id, j),
        move |conn, ctx| drive_conn(conn, pattern, ctx),
    )
}

/// A worker of an async transport: connects, waits for the start, then
/// runs `drive` on each connection on its current-thread runtime until the
/// run ends, an error, or every connection finished.
pub(crate) fn async_worker_main<C, CF, D, DF>(
    link: WorkerLink,
    connect: impl Fn(usize) -> CF,
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
                Err(_) => return Err(format!("client {id} connection {j}: connect timed out after {:?}", cfg.connect_timeout)),
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

        let rec = Rc::new(RefCell::new(WorkerRec::new(id, sched, msgs.clone())));
        let errors = Rc::new(ErrorSlot::default());
        let remaining = Rc::new(Cell::new(conns.len()));
        let all_done = Rc::new(Notify::new());
        let nconns_total = (cfg.clients * cfg.conns_per_client) as u64;
        for (j, conn) in conns.into_iter().enumerate() {
            let global = (id * cfg.conns_per_client + j) as u64;
            let quota = cfg.count.map(|c| c / nconns_total + u64::from(global < c % nconns_total));
            let quota = Quota { limit: quota, done: 0, measure_start: sched.measure_start };
            let pacer = match cfg.rate {
                Some(rate) => {
                    let offset = global as f64 / nconns_total as f64;
                    let seed = cfg.seed ^ global.wrapping_mul(0xA076_1D64_78BD_642F);
                    match Pacer::new(sched.load_start, rate / nconns_total as f64, cfg.arrival, seed, offset, true) {
                        Ok(p) => Some(p),
                        Err(e) => return Err(format!("client {id}: cannot make a timer: {e}")),
                    }
                }
                None => None,
            };
            let ctx = ConnCtx { rec: rec.clone(), errors: errors.clone(), depth: cfg.depth, quota, pacer, seq_base: global << 40 };
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
}

impl WorkerRec {
    pub(crate) fn new(worker: usize, sched: Schedule, msgs: mpsc::Sender<Msg>) -> WorkerRec {
        WorkerRec {
            rec: Recorder::default(),
            sched,
            index: 0,
            finished: false,
            worker,
            msgs,
        }
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
            let data = self.rec.take();
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
            let data = self.rec.take();
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

pub(crate) struct ConnCtx {
    pub(crate) rec: Rc<RefCell<WorkerRec>>,
    pub(crate) errors: Rc<ErrorSlot>,
    /// Closed loop: requests outstanding. Open loop: the most outstanding
    /// (later requests wait, their latency still runs from their intended time).
    depth: usize,
    pub(crate) quota: Quota,
    /// Open loop only.
    pub(crate) pacer: Option<Pacer>,
    /// The connection's number (over all workers) << 40: unique operation numbers.
    pub(crate) seq_base: u64,
}

/// The timetable of one open-loop connection.
pub(crate) struct Pacer {
    pub(crate) next: Instant,
    gap_ns: f64,
    poisson: bool,
    rng: u64,
    /// For async workers; blocking ones sleep with `os::sleep_precise`.
    pub(crate) timer: Option<crate::os::PreciseTimer>,
}

impl Pacer {
    pub(crate) fn new(
        start: Instant,
        rate_per_conn: f64,
        arrival: Arrival,
        seed: u64,
        offset: f64,
        timer: bool,
    ) -> std::io::Result<Pacer> {
        let gap_ns = 1e9 / rate_per_conn;
        let mut p = Pacer {
            next: start,
            gap_ns,
            poisson: arrival == Arrival::Poisson,
            rng: seed,
            timer: if timer {
                Some(crate::os::PreciseTimer::new()?)
            } else {
                None
            },
        };
        // Spread the connections' timetables over one gap, so that uniform
        // timetables do not all fire at the same instant.
        let first = p.gap();
        p.next += Duration::from_nanos((offset * first) as u64);
        Ok(p)
    }

    /// The next gap, in nanoseconds.
    fn gap(&mut self) -> f64 {
        if !self.poisson {
            return self.gap_ns;
        }
        // splitmix64, then an exponential draw by inversion.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        -u.ln() * self.gap_ns
    }

    /// Takes the intended send times due by `now`, at most `max`.
    pub(crate) fn take_due(&mut self, now: Instant, max: usize, out: &mut Vec<Instant>) {
        while out.len() < max && self.next <= now {
            out.push(self.next);
            let g = self.gap();
            self.next += Duration::from_nanos(g as u64);
        }
    }
}

/// The worker's recorder, its intervals advanced to `now`; None once the
/// run is over (nothing more is recorded).
pub(crate) fn recorder_at(
    rec: &RefCell<WorkerRec>,
    now: Instant,
) -> Option<std::cell::RefMut<'_, WorkerRec>> {
    let mut w = rec.borrow_mut();
    w.advance(now);
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

/// Requests sent together: when they were meant to leave (open loop: the
/// timetable; closed loop: when sent), when they left, how many.
struct Run {
    intended: Instant,
    sent: Instant,
    n: usize,
}

/// Requests in flight on one connection, in order.
struct InFlight {
    runs: RefCell<VecDeque<Run>>,
    credits: Cell<usize>,
    wake_tx: Notify,
}

/// An error after the run's end is no error: peers may close first.
pub(crate) fn after_end<T: Default>(ctx: &ConnCtx, e: std::io::Error) -> std::io::Result<T> {
    if ctx.rec.borrow().finished {
        Ok(T::default())
    } else {
        Err(e)
    }
}

async fn drive_conn<C: Conn>(conn: C, pattern: Pattern, mut ctx: ConnCtx) -> std::io::Result<()> {
    let (mut tx, mut rx) = conn.split();
    match pattern {
        Pattern::RequestResponse => {
            let shared = Rc::new(InFlight {
                runs: RefCell::new(VecDeque::new()),
                credits: Cell::new(ctx.depth),
                wake_tx: Notify::new(),
            });
            let sender = {
                let (shared, rec, errors) = (shared.clone(), ctx.rec.clone(), ctx.errors.clone());
                let mut pacer = ctx.pacer.take();
                tokio::task::spawn_local(async move {
                    let mut due = Vec::new();
                    loop {
                        if let Some(p) = pacer.as_mut()
                            && let Err(e) = p
                                .timer
                                .as_mut()
                                .expect("async pacer")
                                .sleep_until(p.next)
                                .await
                        {
                            return errors.set(format!("timer: {e}"));
                        }
                        let credits = shared.credits.get();
                        if credits == 0 {
                            shared.wake_tx.notified().await;
                            continue;
                        }
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
                                let mut w = rec.borrow_mut();
                                w.advance(t);
                                w.rec.sent(n as u64, bytes as u64);
                            }
                            Err(_) if rec.borrow().finished => return std::future::pending().await,
                            Err(e) => return errors.set(format!("send: {e}")),
                        }
                    }
                })
            };
            let _abort_sender = AbortOnDrop(sender);
            loop {
                let r = rx.recv().await.or_else(|e| after_end(&ctx, e))?;
                let now = Instant::now();
                let Some(mut w) = recorder_at(&ctx.rec, now) else {
                    return Ok(());
                };
                let measuring = w.measuring();
                let rec = &mut w.rec;
                rec.received(r.ops as u64, r.bytes as u64);
                let counted = ctx.quota.take(r.ops, measuring);
                let mut runs = shared.runs.borrow_mut();
                let mut left = r.ops;
                let mut to_count = counted;
                while left > 0 {
                    let Some(front) = runs.front_mut() else {
                        return Err(std::io::Error::other(
                            "protocol error: more responses than requests sent",
                        ));
                    };
                    let k = front.n.min(left);
                    let kc = k.min(to_count);
                    rec.timing(
                        now.saturating_duration_since(front.intended).as_nanos() as u64,
                        now.saturating_duration_since(front.sent).as_nanos() as u64,
                        kc as u64,
                    );
                    to_count -= kc;
                    left -= k;
                    front.n -= k;
                    if front.n == 0 {
                        runs.pop_front();
                    }
                }
                rec.completed(counted as u64);
                if ctx.quota.reached() {
                    return Ok(());
                }
                shared.credits.set(shared.credits.get() + r.ops);
                shared.wake_tx.notify_one();
            }
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
                    p.timer
                        .as_mut()
                        .expect("async pacer")
                        .sleep_until(p.next)
                        .await?;
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
                let bytes = tx.send(n).await.or_else(|e| after_end(&ctx, e))?;
                let t1 = Instant::now();
                let Some(mut w) = recorder_at(&ctx.rec, t0) else {
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
            loop {
                let r = rx.recv().await.or_else(|e| after_end(&ctx, e))?;
                let now = Instant::now();
                let Some(mut w) = recorder_at(&ctx.rec, now) else {
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
    use crate::mock::MockTransport;

    #[test]
    fn schedule_aligns_on_the_measured_phase() {
        let t0 = Instant::now();
        let cfg = LoadConfig {
            warmup: Duration::from_millis(2500),
            duration: Duration::from_millis(1500),
            ..LoadConfig::default()
        };
        let s = Schedule::new(t0, &cfg);
        assert_eq!(s.warmup_intervals, 3);
        assert_eq!(s.boundary(0), t0);
        assert_eq!(s.boundary(1), t0 + Duration::from_millis(500));
        assert_eq!(s.boundary(3), t0 + Duration::from_millis(2500));
        assert_eq!(s.boundary(4), t0 + Duration::from_millis(3500));
        assert_eq!(s.boundary(5), t0 + Duration::from_millis(4000));
        assert_eq!(s.phase(2), Phase::Warmup);
        assert_eq!(s.phase(3), Phase::Measure);
        assert!(!s.is_last(3));
        assert!(s.is_last(4));
    }

    #[test]
    fn count_mode_completes_exactly_the_count() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(100),
        ));
        let cfg = LoadConfig {
            clients: 2,
            conns_per_client: 3,
            depth: 4,
            count: Some(1001),
            ..LoadConfig::default()
        };
        let out = run_load(t.clone(), &cfg, &mut NoObserver);
        assert_eq!(out.end, EndState::Complete);
        assert_eq!(out.measured.ops, 1001);
        assert_eq!(out.measured.hist.len(), 1001);
        assert!(
            out.measured.hist.min() >= 100_000,
            "latency below the mock's service time"
        );
        assert!(
            t.max_outstanding() <= 4,
            "depth exceeded: {}",
            t.max_outstanding()
        );
        assert!(t.max_outstanding() >= 1);
    }

    #[test]
    fn duration_mode_reports_warmup_and_measured_intervals() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(200),
        ));
        let cfg = LoadConfig {
            warmup: Duration::from_millis(300),
            duration: Duration::from_millis(600),
            interval: Duration::from_millis(200),
            depth: 2,
            ..LoadConfig::default()
        };
        struct Seen(Vec<Phase>);
        impl Observer for Seen {
            fn interval(&mut self, iv: &IntervalReport) {
                self.0.push(iv.phase);
            }
        }
        let mut seen = Seen(vec![]);
        let out = run_load(t, &cfg, &mut seen);
        assert_eq!(out.end, EndState::Complete);
        assert_eq!(
            seen.0,
            vec![
                Phase::Warmup,
                Phase::Warmup,
                Phase::Measure,
                Phase::Measure,
                Phase::Measure
            ]
        );
        let measured_sum: u64 = out
            .intervals
            .iter()
            .filter(|i| i.phase == Phase::Measure)
            .map(|i| i.data.ops)
            .sum();
        assert_eq!(out.measured.ops, measured_sum);
        assert!(out.measured.ops > 0);
        assert!(
            (out.measured_ns as i64 - 600_000_000).abs() < 50_000_000,
            "{}",
            out.measured_ns
        );
    }

    #[test]
    fn abort_stops_the_run_and_keeps_what_was_measured() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(100),
        ));
        let cfg = LoadConfig {
            duration: Duration::from_secs(60),
            interval: Duration::from_millis(100),
            ..LoadConfig::default()
        };
        struct StopAfter(usize);
        impl Observer for StopAfter {
            fn interval(&mut self, _: &IntervalReport) {
                self.0 = self.0.saturating_sub(1);
            }
            fn poll_abort(&mut self) -> Option<Abort> {
                (self.0 == 0).then(|| Abort::Interrupted("test".into()))
            }
        }
        let began = Instant::now();
        let out = run_load(t, &cfg, &mut StopAfter(2));
        assert!(began.elapsed() < Duration::from_secs(10));
        assert_eq!(out.end, EndState::Interrupted("test".into()));
        assert!(out.intervals.len() >= 2);
        assert!(out.measured.ops > 0);
    }

    #[test]
    fn a_failing_connection_fails_the_run() {
        let t = Arc::new(
            MockTransport::new(Pattern::RequestResponse, Duration::from_micros(100))
                .failing_after(50),
        );
        let cfg = LoadConfig {
            duration: Duration::from_secs(60),
            ..LoadConfig::default()
        };
        let out = run_load(t, &cfg, &mut NoObserver);
        match out.end {
            EndState::Failed(r) => assert!(r.contains("mock failure"), "{r}"),
            e => panic!("expected failure, got {e:?}"),
        }
    }

    #[test]
    fn open_loop_keeps_its_timetable_and_times_from_the_intended_send() {
        for arrival in [Arrival::Uniform, Arrival::Poisson] {
            let t = Arc::new(MockTransport::new(
                Pattern::RequestResponse,
                Duration::from_millis(2),
            ));
            let cfg = LoadConfig {
                conns_per_client: 2,
                depth: 64,
                rate: Some(2000.0),
                arrival,
                duration: Duration::from_millis(500),
                interval: Duration::from_millis(100),
                ..LoadConfig::default()
            };
            let out = run_load(t, &cfg, &mut NoObserver);
            assert_eq!(out.end, EndState::Complete);
            // 2000/s for 0.5 s: about 1000 sent, whatever the 2 ms service time
            // (a closed loop with depth 1 would send about 500).
            let sent = out.measured.sent as f64;
            let tolerance = if arrival == Arrival::Uniform {
                0.05
            } else {
                0.2
            };
            assert!(
                (sent - 1000.0).abs() < 1000.0 * tolerance,
                "{arrival:?}: sent {sent}"
            );
            assert!(
                out.measured.hist.min() >= 1_990_000,
                "{arrival:?}: {}",
                out.measured.hist.min()
            );
            assert!(out.measured.service.min() >= 1_990_000, "{arrival:?}");
        }
    }

    #[test]
    fn send_only_and_receive_only_count_operations() {
        for pattern in [Pattern::SendOnly, Pattern::ReceiveOnly] {
            let t = Arc::new(MockTransport::new(pattern, Duration::from_micros(50)));
            let cfg = LoadConfig {
                depth: 8,
                count: Some(500),
                ..LoadConfig::default()
            };
            let out = run_load(t, &cfg, &mut NoObserver);
            assert_eq!(out.end, EndState::Complete, "{pattern:?}");
            assert_eq!(out.measured.ops, 500, "{pattern:?}");
        }
    }
}
