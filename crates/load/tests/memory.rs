//! The engine's memory stays bounded over a long run: what it keeps of each
//! reported interval while the run goes is a point of the result without
//! its encoded histogram (parked in a temporary file), not the interval's
//! histograms (about a megabyte with the hiccup meter on). Counted with this
//! test binary's own allocator, so nothing else running moves the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;
use wirebench_load::engine::{self, EndState, IntervalReport, LoadConfig, Observer};
use wirebench_load::mock::MockTransport;
use wirebench_load::transport::Pattern;

/// Bytes allocated and not yet freed.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The bytes allocated and not freed when each interval was reported.
struct Watch(Vec<isize>);

impl Observer for Watch {
    fn interval(&mut self, _: &IntervalReport) {
        self.0.push(LIVE.load(Ordering::Relaxed));
    }
}

/// The bytes allocated and not freed, as each of `intervals` 20 ms
/// intervals was reported (the hiccup meter on, as by default), and what
/// the outcome holds at the end.
fn held_during(intervals: u64) -> (Vec<isize>, isize) {
    let t = Arc::new(MockTransport::new(
        Pattern::RequestResponse,
        Duration::from_micros(100),
    ));
    let cfg = LoadConfig {
        interval: Duration::from_millis(20),
        duration: Duration::from_millis(20 * intervals),
        depth: 2,
        hiccup: true,
        ..LoadConfig::default()
    };
    let before = LIVE.load(Ordering::Relaxed);
    let mut watch = Watch(Vec::new());
    let out = engine::run_load(t, &cfg, &mut watch);
    let held = LIVE.load(Ordering::Relaxed) - before;
    let during = watch.0.iter().map(|l| l - before).collect();
    assert_eq!(out.end, EndState::Complete);
    assert!(out.measured.ops > 0);
    let n = out.intervals.len() as u64;
    assert!(n + 2 >= intervals && n <= intervals + 2, "{n} intervals");
    assert!(
        out.intervals.iter().all(|iv| !iv.latency_hist.is_empty()),
        "every point has its histogram back at the end"
    );
    (during, held)
}

#[test]
fn a_long_run_holds_a_few_kib_per_interval_at_most() {
    let (during, held) = held_during(250);
    // The least held over intervals 25-49 (everything warmed up) and over
    // the last 25: the least, so that what is in flight at one moment
    // (a probe's histogram, a pending interval) does not count.
    let n = during.len();
    assert!(n >= 200, "{n} intervals reported");
    let least = |w: &[isize]| *w.iter().min().expect("not empty");
    let (a, b) = (least(&during[25..50]), least(&during[n - 25..]));
    let per_interval = (b - a) / (n as isize - 50);
    eprintln!(
        "held: {a} B early, {b} B late, {per_interval} B an interval over {n} intervals; {held} B in the outcome"
    );
    // One latency histogram alone takes about 260 KiB; an interval holds
    // four (latency, service time, the probe's twice), so keeping them would
    // cost about a megabyte an interval. (The encoded histogram a point
    // parks in the spool is too small here, a few hundred bytes for the
    // mock's narrow latencies, to tell from the noise of histograms in
    // flight: the spool's own tests and the soak cover it.)
    assert!(
        per_interval < 16 * 1024,
        "{per_interval} bytes held per interval while the run goes ({a} B at interval 25, {b} B at the end)"
    );
}
