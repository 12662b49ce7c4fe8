//! wirebench-trace: event timelines at a few nanoseconds per event.
//!
//! [`record`] stores a timestamp (the CPU's time-stamp counter), a static
//! event name and one integer argument into the calling thread's ring
//! buffer: no lock, no allocation, no system call after the thread's first
//! event. [`dump`] writes every thread's ring to a text file at the end of
//! a run (or whenever asked). An operation is the events that carry its id
//! as their argument, from a [`BEGIN`] event to an [`END`] event, on any
//! thread, so its steps can be gathered across threads and processes (the
//! time-stamp counter is shared by the machine's cores).
//!
//! The file, one event per line after a header:
//! ```text
//! # wirebench-trace 1
//! # ticks_per_ns 2.994
//! # thread 1 wb-client-0
//! 1 8837312887161 42 request sent
//! ```
//! (thread, ticks, argument, name). C and C++ programs record into the same
//! rings through `include/wirebench_trace.h` and the static library.
//!
//! ```
//! wirebench_trace::enable();
//! wirebench_trace::record(wirebench_trace::BEGIN, 7);
//! wirebench_trace::record("step", 7);
//! wirebench_trace::record(wirebench_trace::END, 7);
//! let mut out = Vec::new();
//! wirebench_trace::dump_to(&mut out).unwrap();
//! let t = wirebench_trace::parse(std::str::from_utf8(&out).unwrap()).unwrap();
//! assert!(t.events.iter().any(|e| e.name == "step" && e.arg == 7));
//! ```

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The first event of an operation (its argument: the operation's id).
pub const BEGIN: &str = "begin";
/// The last event of an operation.
pub const END: &str = "end";

/// Events kept per thread (the most recent ones).
pub const RING: usize = 1 << 16;

/// A name stored as a C string (its length is found at dump time).
const C_STRING: u64 = u64::MAX;

#[derive(Default)]
struct Slot {
    ticks: AtomicU64,
    name_ptr: AtomicU64,
    name_len: AtomicU64,
    arg: AtomicU64,
}

struct Ring {
    tid: u64,
    thread_name: String,
    /// Events written so far (slot `next % RING` is the next one).
    next: AtomicUsize,
    slots: Box<[Slot]>,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static REGISTRY: Mutex<Vec<Arc<Ring>>> = Mutex::new(Vec::new());
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    // The ring lives in REGISTRY (never removed), so this pointer stays valid.
    static LOCAL: Cell<*const Ring> = const { Cell::new(std::ptr::null()) };
}

/// The time-stamp counter (on x86_64), or nanoseconds since the process's
/// first reading elsewhere.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc reads a counter; it has no memory effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// Counter ticks per nanosecond, measured once against the monotonic clock
/// (the median of three 30 ms measurements).
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1.0;
        }
        // A counter reading paired with a clock reading taken around it
        // (retried until both clock readings are within 2 us: a VM may be
        // descheduled between two instructions).
        let pair = || loop {
            let a = std::time::Instant::now();
            let c = now();
            let b = std::time::Instant::now();
            if b - a < std::time::Duration::from_micros(2) {
                return (a + (b - a) / 2, c);
            }
        };
        let mut rates: Vec<f64> = (0..3)
            .map(|_| {
                let (t0, c0) = pair();
                std::thread::sleep(std::time::Duration::from_millis(30));
                let (t1, c1) = pair();
                c1.wrapping_sub(c0) as f64 / (t1 - t0).as_nanos().max(1) as f64
            })
            .collect();
        rates.sort_by(|a, b| a.total_cmp(b));
        rates[1]
    })
}

/// Starts recording (and measures the counter's rate).
pub fn enable() {
    ticks_per_ns();
    ENABLED.store(true, Ordering::Release);
}

pub fn disable() {
    ENABLED.store(false, Ordering::Release);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

static SAMPLE: AtomicU64 = AtomicU64::new(1);

/// Trace one operation in `n` (by id): see [`sampled`].
pub fn set_sample(n: u64) {
    SAMPLE.store(n.max(1), Ordering::Relaxed);
}

/// Whether operation `id` is traced: recording is on and `id` falls on the
/// sampling rate.
#[inline(always)]
pub fn sampled(id: u64) -> bool {
    ENABLED.load(Ordering::Relaxed) && id.is_multiple_of(SAMPLE.load(Ordering::Relaxed))
}

#[cold]
fn register() -> *const Ring {
    let t = std::thread::current();
    let ring = Arc::new(Ring {
        tid: NEXT_TID.fetch_add(1, Ordering::Relaxed),
        thread_name: t
            .name()
            .unwrap_or("unnamed")
            .replace(char::is_whitespace, "_"),
        next: AtomicUsize::new(0),
        slots: (0..RING).map(|_| Slot::default()).collect(),
    });
    let p = Arc::as_ptr(&ring);
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ring);
    LOCAL.with(|l| l.set(p));
    p
}

#[inline(always)]
fn put(name_ptr: u64, name_len: u64, arg: u64) {
    let ticks = now();
    let mut p = LOCAL.with(|l| l.get());
    if p.is_null() {
        p = register();
    }
    // SAFETY: `p` points into an Arc held by REGISTRY for the process's life.
    let ring = unsafe { &*p };
    let i = ring.next.load(Ordering::Relaxed);
    let s = &ring.slots[i & (RING - 1)];
    s.ticks.store(ticks, Ordering::Relaxed);
    s.name_ptr.store(name_ptr, Ordering::Relaxed);
    s.name_len.store(name_len, Ordering::Relaxed);
    s.arg.store(arg, Ordering::Relaxed);
    ring.next.store(i + 1, Ordering::Release);
}

/// Records an event (a no-op while recording is off).
#[inline(always)]
pub fn record(name: &'static str, arg: u64) {
    if ENABLED.load(Ordering::Relaxed) {
        put(name.as_ptr() as u64, name.len() as u64, arg);
    }
}

/// Writes every thread's ring (its last [`RING`] events) in the text format.
pub fn dump_to(out: &mut impl Write) -> io::Result<usize> {
    let rings: Vec<Arc<Ring>> = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).clone();
    writeln!(out, "# wirebench-trace 1")?;
    writeln!(out, "# ticks_per_ns {:.6}", ticks_per_ns())?;
    let mut n = 0;
    for r in &rings {
        writeln!(out, "# thread {} {}", r.tid, r.thread_name)?;
        let end = r.next.load(Ordering::Acquire);
        for i in end.saturating_sub(RING)..end {
            let s = &r.slots[i & (RING - 1)];
            let (ptr, len) = (
                s.name_ptr.load(Ordering::Relaxed),
                s.name_len.load(Ordering::Relaxed),
            );
            let name = if len == C_STRING {
                // SAFETY: C callers pass static NUL-terminated names.
                unsafe { std::ffi::CStr::from_ptr(ptr as *const std::ffi::c_char) }
                    .to_string_lossy()
                    .into_owned()
            } else {
                // SAFETY: recorded from a `&'static str`: valid UTF-8 forever.
                unsafe {
                    std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                        ptr as *const u8,
                        len as usize,
                    ))
                }
                .to_string()
            };
            writeln!(
                out,
                "{} {} {} {}",
                r.tid,
                s.ticks.load(Ordering::Relaxed),
                s.arg.load(Ordering::Relaxed),
                name
            )?;
            n += 1;
        }
    }
    Ok(n)
}

/// Writes every thread's ring to `path`; returns the number of events.
pub fn dump(path: &std::path::Path) -> io::Result<usize> {
    let mut f = io::BufWriter::new(std::fs::File::create(path)?);
    let n = dump_to(&mut f)?;
    f.flush()?;
    Ok(n)
}

/// One event read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub thread: u64,
    pub ticks: u64,
    pub arg: u64,
    pub name: String,
}

/// A trace read back: its events in file order, and the counter's rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub ticks_per_ns: f64,
    pub threads: Vec<(u64, String)>,
    pub events: Vec<Event>,
}

/// Reads the text format.
pub fn parse(text: &str) -> Result<Trace, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l.trim() == "# wirebench-trace 1" => {}
        _ => return Err("not a wirebench trace (no '# wirebench-trace 1' line first)".into()),
    }
    let mut t = Trace {
        ticks_per_ns: 1.0,
        threads: Vec::new(),
        events: Vec::new(),
    };
    for (no, line) in lines {
        let bad = || format!("line {}: '{line}' is not an event", no + 1);
        if let Some(rest) = line.strip_prefix("# ticks_per_ns ") {
            t.ticks_per_ns = rest.trim().parse().map_err(|_| bad())?;
        } else if let Some(rest) = line.strip_prefix("# thread ") {
            let (id, name) = rest.split_once(' ').unwrap_or((rest, ""));
            t.threads
                .push((id.parse().map_err(|_| bad())?, name.to_string()));
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else {
            let mut f = line.splitn(4, ' ');
            let mut next = || f.next().ok_or_else(bad);
            let thread = next()?.parse().map_err(|_| bad())?;
            let ticks = next()?.parse().map_err(|_| bad())?;
            let arg = next()?.parse().map_err(|_| bad())?;
            let name = next()?.to_string();
            t.events.push(Event {
                thread,
                ticks,
                arg,
                name,
            });
        }
    }
    if t.ticks_per_ns <= 0.0 {
        return Err("ticks_per_ns must be positive".into());
    }
    Ok(t)
}

/// C: starts recording.
#[unsafe(no_mangle)]
pub extern "C" fn wb_trace_enable() {
    enable();
}

/// C: records an event.
///
/// # Safety
/// `name` must be a NUL-terminated string that lives as long as the
/// process (a string literal).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wb_trace_record(name: *const std::ffi::c_char, arg: u64) {
    if ENABLED.load(Ordering::Relaxed) && !name.is_null() {
        put(name as u64, C_STRING, arg);
    }
}

/// C: writes the trace to `path`; returns the number of events, or -1.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wb_trace_dump(path: *const std::ffi::c_char) -> i64 {
    if path.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let p = unsafe { std::ffi::CStr::from_ptr(path) };
    match dump(std::path::Path::new(&*p.to_string_lossy())) {
        Ok(n) => n as i64,
        Err(_) => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_several_threads_round_trip() {
        enable();
        let h = std::thread::Builder::new()
            .name("tracer test".into())
            .spawn(|| {
                for i in 0..10u64 {
                    record("rt thread step", i);
                }
            })
            .unwrap();
        h.join().unwrap();
        record("rt main step", 99);
        // SAFETY: a string literal with its NUL.
        unsafe { wb_trace_record(c"rt from C".as_ptr(), 5) };
        let mut out = Vec::new();
        dump_to(&mut out).unwrap();
        let t = parse(std::str::from_utf8(&out).unwrap()).unwrap();
        let steps: Vec<u64> = t
            .events
            .iter()
            .filter(|e| e.name == "rt thread step")
            .map(|e| e.arg)
            .collect();
        assert_eq!(steps, (0..10).collect::<Vec<_>>());
        assert!(
            t.events
                .iter()
                .any(|e| e.name == "rt main step" && e.arg == 99)
        );
        assert!(t.events.iter().any(|e| e.name == "rt from C" && e.arg == 5));
        assert!(t.threads.iter().any(|(_, n)| n == "tracer_test"));
        let ticks: Vec<u64> = t
            .events
            .iter()
            .filter(|e| e.name == "rt thread step")
            .map(|e| e.ticks)
            .collect();
        assert!(ticks.windows(2).all(|w| w[0] <= w[1]), "time runs forward");
        assert!(t.ticks_per_ns > 0.0);
    }

    #[test]
    fn a_ring_keeps_its_last_events() {
        enable();
        let h = std::thread::spawn(|| {
            for i in 0..(RING as u64 + 100) {
                record("wrap step", i);
            }
        });
        h.join().unwrap();
        let mut out = Vec::new();
        dump_to(&mut out).unwrap();
        let t = parse(std::str::from_utf8(&out).unwrap()).unwrap();
        let args: Vec<u64> = t
            .events
            .iter()
            .filter(|e| e.name == "wrap step")
            .map(|e| e.arg)
            .collect();
        assert_eq!(args.len(), RING);
        assert_eq!(args[0], 100);
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(parse("hello").is_err());
        assert!(parse("# wirebench-trace 1\n1 x 2 name").is_err());
        assert!(parse("# wirebench-trace 1\n# ticks_per_ns 0\n").is_err());
    }
}
