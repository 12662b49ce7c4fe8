//! The engine's memory stays bounded over a long run: what it keeps of each
//! reported interval is a point of the result (a few KiB), not the interval's
//! histograms (about a megabyte with the hiccup meter on). Counted with this
//! test binary's own allocator, so nothing else running moves the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;
use wirebench_load::engine::{self, EndState, LoadConfig, NoObserver};
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

/// The bytes a run's outcome holds, after a run of `intervals` 20 ms
/// intervals (the hiccup meter on, as by default).
fn held_after(intervals: u64) -> isize {
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
    let out = engine::run_load(t, &cfg, &mut NoObserver);
    let held = LIVE.load(Ordering::Relaxed) - before;
    assert_eq!(out.end, EndState::Complete);
    assert!(out.measured.ops > 0);
    let n = out.intervals.len() as u64;
    assert!(n + 2 >= intervals && n <= intervals + 2, "{n} intervals");
    held
}

#[test]
fn a_long_run_holds_a_few_kib_per_interval() {
    let short = held_after(25);
    let long = held_after(225);
    let per_interval = (long - short) / 200;
    eprintln!(
        "held: {short} B after 25 intervals, {long} B after 225: {per_interval} B an interval"
    );
    // One latency histogram alone takes about 260 KiB; an interval holds
    // four (latency, service time, the probe's twice), so keeping them would
    // cost about a megabyte an interval.
    assert!(
        per_interval < 16 * 1024,
        "{per_interval} bytes held per interval (short run {short}, long run {long})"
    );
}
