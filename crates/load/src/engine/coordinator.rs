//! The coordinator: starts a worker per client, hands them one start
//! instant, samples CPU at each interval boundary, assembles the
//! per-second series from the workers' snapshots, asks the observer whether
//! to abort, and merges the measured histograms exactly, interval by
//! interval, as each is reported.
//! Interval boundaries are aligned on the start of the measured phase (see
//! [`Schedule`]).

use super::spool::Spool;
use super::types::{Abort, EndState, IntervalReport, LoadConfig, LoadOutcome, Observer, Start};
use crate::procs;
use crate::recorder::IntervalData;
use crate::sampler::{Sample, Sampler};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use wirebench_core::hist::LatencyHist;
use wirebench_core::result::{Interval, Phase};

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

    pub(crate) fn wait(&self) {
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
    let mut load_start = None;
    if end.is_none() {
        observer.connected(connect_time_ns);
        match observer.agreed_start() {
            Start::Now => load_start = Some(Instant::now() + Duration::from_millis(20)),
            Start::At(t) => load_start = Some(t),
            Start::Abort(a) => end = Some(abort_state(a)),
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
            server_groups: vec![],
            server_switches: None,
            client_cores: Sampler::busy(&cfg.client_cpus, &zero, &zero),
            hiccup: None,
            tool: None,
            measured_window: None,
            cpu_seconds: vec![],
        };
    }
    let load_start = load_start.expect("set when the load goes on");
    // The hiccup meter: sampled with the CPU at each boundary.
    let probe = cfg
        .hiccup
        .then(|| crate::hiccup::Probe::start(cfg.client_cpus.first().copied()).ok())
        .flatten();

    // Start everybody at one instant, a little ahead so all receive it first.
    let sched = Schedule::new(load_start, cfg);
    for s in starts {
        let _ = s.send(sched);
    }
    sleep_until(sched.load_start);
    // What is kept stays bounded however long the run: a boundary's CPU
    // sample and probe are dropped once the interval after it is reported
    // (the sample that starts the measured phase, and the latest, are kept),
    // and a reported interval is kept as a point of the result, its
    // histograms merged into the measured totals and its encoded latency
    // histogram parked in the spool until the run ends.
    // samples[k]: CPU at boundary k (0: the start of the load).
    let mut samples: BTreeMap<usize, Sample> = BTreeMap::from([(0, cfg.sampler.sample())]);
    let mut boundaries = 1; // boundaries sampled
    // probes[k]: the probe's wake-ups up to boundary k (0: before the load).
    let mut probes: BTreeMap<usize, LatencyHist> = BTreeMap::new();
    if let Some(p) = &probe {
        let _ = p.take();
    }
    let mut pending: BTreeMap<usize, (IntervalData, usize, Instant)> = BTreeMap::new();
    let mut reported = vec![0usize; cfg.clients]; // intervals received per worker
    let mut intervals: Vec<Interval> = Vec::new();
    let mut spool = Spool::new();
    let mut measured = IntervalData::new();
    let mut measured_groups = procs::GroupTimes::new();
    let mut measured_end = sched.measure_start;
    let mut hiccup: Option<LatencyHist> = None;
    let mut final_sample: Option<Sample> = None;

    let mut final_probe: Option<LatencyHist> = None;
    loop {
        let all_done = done.iter().all(|d| *d);
        if all_done && final_sample.is_none() {
            final_sample = Some(cfg.sampler.sample());
            final_probe = probe.as_ref().map(|p| p.take());
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
            let after = samples.get(&(i + 1)).or(final_sample.as_ref());
            let Some(after) = after else { break };
            let (data, _, iv_end) = pending.remove(&i).expect("present");
            // The boundary's sample, or the latest one taken before it.
            let (_, before) = samples.range(..=i).next_back().expect("boundary 0 is kept");
            let probed = match probes.remove(&(i + 1)) {
                Some(h) => Some(h),
                None if i + 1 < boundaries => None,
                None => final_probe.take(),
            };
            let (start_ns, end_ns) = (
                ns_between(sched.load_start, sched.boundary(i)),
                ns_between(sched.load_start, iv_end),
            );
            let iv = IntervalReport {
                index: i,
                start_ns,
                end_ns,
                phase: sched.phase(i),
                data,
                client_cores: Sampler::busy(&cfg.client_cpus, before, after),
                server_cores: Sampler::busy(&cfg.sampler.server_cpus, before, after),
                server_share: Sampler::server_share(
                    &cfg.sampler.server_cpus,
                    before,
                    after,
                    end_ns.saturating_sub(start_ns) as f64 / 1e9,
                ),
                server_groups: Sampler::groups(
                    before,
                    after,
                    end_ns.saturating_sub(start_ns) as f64 / 1e9,
                ),
                hiccup: probed,
            };
            observer.interval(&iv);
            if iv.phase == Phase::Measure {
                // Thread groups over the measured phase, second by second:
                // a thread that ended before its last look still counts.
                procs::add_group_times(&mut measured_groups, Sampler::group_cpu(before, after));
                measured.merge(&iv.data);
                if let Some(h) = &iv.hiccup {
                    hiccup
                        .get_or_insert_with(wirebench_core::hist::new_hist)
                        .add(h)
                        .expect("histograms share bounds");
                }
                measured_end = measured_end.max(sched.load_start + Duration::from_nanos(iv.end_ns));
            }
            intervals.push(spool.park(iv.point()));
            if i != sched.warmup_intervals && samples.contains_key(&(i + 1)) {
                samples.remove(&i);
            }
        }
        if all_done {
            break;
        }
        // Sample CPU at each boundary the run reaches (in duration mode the
        // last boundary is the end of the run).
        let k = boundaries;
        let more = match sched.end {
            Some(e) => sched.boundary(k - 1) < e,
            None => true,
        };
        let next = sched.boundary(k);
        let now = Instant::now();
        if more && next <= now {
            samples.insert(k, cfg.sampler.sample());
            if let Some(p) = &probe {
                probes.insert(k, p.take());
            }
            boundaries += 1;
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

    drop(probe);
    let last = final_sample.expect("taken when all workers were done");
    let w = sched.warmup_intervals;
    let measure_end_sample = samples
        .get(
            &(intervals
                .iter()
                .filter(|iv| iv.phase == Phase::Measure)
                .count()
                + w),
        )
        .unwrap_or(&last);
    let measure_start_sample = samples.get(&w).filter(|_| intervals.len() > w);
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
    let measured_ns = ns_between(sched.measure_start, measured_end);
    let (server_groups, server_switches) = measure_start_sample.map_or((vec![], None), |a| {
        (
            if measured_groups.is_empty() {
                Sampler::groups(a, measure_end_sample, measured_ns as f64 / 1e9)
            } else {
                Sampler::groups_of(&measured_groups, measured_ns as f64 / 1e9)
            },
            Sampler::switches(a, measure_end_sample),
        )
    });
    let lost = spool.restore(&mut intervals);
    if lost > 0 && end.is_none() {
        end = Some(EndState::Failed(format!(
            "{lost} per-second latency histograms could not be read back from the engine's temporary file"
        )));
    }
    LoadOutcome {
        end: end.unwrap_or(EndState::Complete),
        connect_time_ns,
        intervals,
        measured,
        measured_ns,
        client_cpu_s,
        server_cpu_s,
        client_runq_wait_s,
        server_runq_wait_s,
        server_groups,
        server_switches,
        client_cores,
        hiccup,
        tool: None,
        measured_window: (measured_ns > 0).then_some((sched.measure_start, measured_end)),
        cpu_seconds: vec![],
    }
}

fn abort_state(a: Abort) -> EndState {
    match a {
        Abort::Interrupted(r) => EndState::Interrupted(r),
        Abort::Failed(r) => EndState::Failed(r),
        Abort::Ended(r) => EndState::Ended(r),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
