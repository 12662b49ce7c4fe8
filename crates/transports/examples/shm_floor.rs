//! The machine's floors for the shm benchmark (scripts/bench_shm.py),
//! printed as one JSON object:
//! - `pingpong_rtt_ns`: two threads pinned on two CPUs pass a counter back
//!   and forth through one cache line (the cheapest possible round trip);
//! - `rtrb_stream_gbps`: the data channel's hand-off in one process: a
//!   writer thread copies 64 KiB chunks into an rtrb ring (1 MiB, the
//!   size of a shm ring for 64 KiB messages), a reader thread copies each
//!   chunk out;
//! - `memcpy_gbps`: one thread copying 64 KiB, in cache.
//!
//! Each figure is the median of 5 trials. Usage:
//! `shm_floor [pingpong|rtrb|memcpy|all] [CPU_A CPU_B]` (default: all, on
//! CPUs 0 and 1).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wirebench_load::os::pin_current_thread;

const CHUNK: usize = 64 * 1024;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[repr(align(128))]
struct Line(AtomicU64);

fn pingpong(a: usize, b: usize, rounds: u64) -> f64 {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let l2 = line.clone();
    let peer = std::thread::spawn(move || {
        pin_current_thread(&[b]).expect("pin");
        for i in 0..rounds {
            while l2.0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            l2.0.store(2 * i + 2, Ordering::Release);
        }
    });
    pin_current_thread(&[a]).expect("pin");
    let t = Instant::now();
    for i in 0..rounds {
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / rounds as f64;
    peer.join().unwrap();
    ns
}

/// A round trip through two wirebench rings (request, response) between
/// two pinned threads, spinning: the ring's own cost, without the engine.
fn ring_pingpong(a: usize, b: usize, rounds: u64) -> f64 {
    use wirebench_transports::shm::ring::{Consumer, Producer, REQUESTS, RESPONSES, Rec, Shm};
    let shm = Shm::create("wirebench-shm-floor", 1 << 20).expect("memfd");
    let s2 = shm.clone();
    let peer = std::thread::spawn(move || {
        pin_current_thread(&[b]).expect("pin");
        let mut rx = Consumer::new(s2.clone(), REQUESTS, false);
        let mut tx = Producer::new(s2, RESPONSES, false);
        let mut buf = [0u8; 64];
        for _ in 0..rounds {
            let rec = loop {
                if let Some(r) = rx.peek().unwrap() {
                    break r;
                }
                std::hint::spin_loop();
            };
            rx.take(&rec, &mut buf);
            rx.release();
            assert!(tx.try_write(&rec, &buf));
            tx.publish();
        }
    });
    pin_current_thread(&[a]).expect("pin");
    let mut tx = Producer::new(shm.clone(), REQUESTS, false);
    let mut rx = Consumer::new(shm, RESPONSES, false);
    let mut buf = [0u8; 64];
    let t = Instant::now();
    for i in 0..rounds {
        let rec = Rec {
            len: 64,
            seq: i,
            ..Rec::default()
        };
        assert!(tx.try_write(&rec, &buf));
        tx.publish();
        let got = loop {
            if let Some(r) = rx.peek().unwrap() {
                break r;
            }
            std::hint::spin_loop();
        };
        rx.take(&got, &mut buf);
        rx.release();
    }
    let ns = t.elapsed().as_nanos() as f64 / rounds as f64;
    peer.join().unwrap();
    ns
}

fn rtrb_stream(a: usize, b: usize, total: usize) -> f64 {
    let (mut p, mut c) = rtrb::RingBuffer::<u8>::new(1 << 20);
    let writer = std::thread::spawn(move || {
        pin_current_thread(&[b]).expect("pin");
        let src = vec![7u8; CHUNK];
        let mut sent = 0;
        while sent < total {
            match p.write_chunk(CHUNK) {
                Ok(mut w) => {
                    let (x, y) = w.as_mut_slices();
                    x.copy_from_slice(&src[..x.len()]);
                    y.copy_from_slice(&src[x.len()..]);
                    w.commit_all();
                    sent += CHUNK;
                }
                Err(_) => std::hint::spin_loop(),
            }
        }
    });
    pin_current_thread(&[a]).expect("pin");
    let mut dst = vec![0u8; CHUNK];
    let mut got = 0;
    let t = Instant::now();
    while got < total {
        match c.read_chunk(CHUNK) {
            Ok(r) => {
                let (x, y) = r.as_slices();
                dst[..x.len()].copy_from_slice(x);
                dst[x.len()..].copy_from_slice(y);
                r.commit_all();
                got += CHUNK;
            }
            Err(_) => std::hint::spin_loop(),
        }
    }
    let secs = t.elapsed().as_secs_f64();
    writer.join().unwrap();
    std::hint::black_box(&dst);
    total as f64 / secs / 1e9
}

fn memcpy(a: usize, time: Duration) -> f64 {
    pin_current_thread(&[a]).expect("pin");
    let src = vec![3u8; CHUNK];
    let mut dst = vec![0u8; CHUNK];
    let mut n = 0u64;
    let t = Instant::now();
    while t.elapsed() < time {
        for _ in 0..256 {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
        }
        n += 256;
    }
    (n as f64 * CHUNK as f64) / t.elapsed().as_secs_f64() / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cpus: Vec<usize> = args
        .iter()
        .skip(1)
        .map(|a| a.parse().expect("CPU numbers"))
        .collect();
    let (a, b) = match cpus.as_slice() {
        [a, b] => (*a, *b),
        _ => (0, 1),
    };
    let what = args.first().map(String::as_str).unwrap_or("all");
    let mut out = Vec::new();
    if matches!(what, "pingpong" | "all") {
        let pp = median((0..5).map(|_| pingpong(a, b, 300_000)).collect());
        out.push(format!("\"pingpong_rtt_ns\": {pp:.1}"));
    }
    if matches!(what, "ring" | "all") {
        let r = median((0..5).map(|_| ring_pingpong(a, b, 300_000)).collect());
        out.push(format!("\"ring_rtt_ns\": {r:.1}"));
    }
    if matches!(what, "rtrb" | "all") {
        let rt = median((0..5).map(|_| rtrb_stream(a, b, 1 << 30)).collect());
        out.push(format!("\"rtrb_stream_gbps\": {rt:.2}"));
    }
    if matches!(what, "memcpy" | "all") {
        let mc = median(
            (0..5)
                .map(|_| memcpy(a, Duration::from_millis(200)))
                .collect(),
        );
        out.push(format!("\"memcpy_gbps\": {mc:.2}"));
    }
    if out.is_empty() {
        eprintln!("usage: shm_floor [pingpong|ring|rtrb|memcpy|all] [CPU_A CPU_B]");
        std::process::exit(2);
    }
    println!("{{{}, \"cpus\": [{a}, {b}]}}", out.join(", "));
}
