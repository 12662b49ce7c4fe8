//! The cost of one recorded event against one `rdtsc` read, in the same
//! process (scripts/bench_trace.py runs it). Prints JSON: ns per rdtsc, ns
//! per event, and their ratio; each the median of 7 trials of 1 M calls.

use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    const N: u64 = 1_000_000;
    wirebench_trace::enable();
    // Warm the thread's ring (its first event registers it).
    wirebench_trace::record("warm", 0);
    let rdtsc = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                let mut acc = 0u64;
                for _ in 0..N {
                    acc = acc.wrapping_add(wirebench_trace::now());
                }
                std::hint::black_box(acc);
                t.elapsed().as_nanos() as f64 / N as f64
            })
            .collect(),
    );
    let event = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                for i in 0..N {
                    wirebench_trace::record("bench event", std::hint::black_box(i));
                }
                t.elapsed().as_nanos() as f64 / N as f64
            })
            .collect(),
    );
    println!(
        "{{\"rdtsc_ns\": {rdtsc:.2}, \"event_ns\": {event:.2}, \"ratio\": {:.2}}}",
        event / rdtsc
    );
}
