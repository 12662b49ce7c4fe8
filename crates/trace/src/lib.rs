//! wirebench-trace: event timelines at a few nanoseconds per event.
//!
//! [`record`] stores a timestamp (the CPU's time-stamp counter), a static
//! event name and one integer argument into the calling thread's ring
//! buffer: no lock, no allocation, no system call after the thread's first
//! event. A [`Drain`] streams the rings to a text file while the program
//! runs (a thread that reads behind the writers, never locking them out),
//! and counts what it could not read in time; [`dump`] writes what the
//! rings hold now (their last [`RING`] events each). An operation is the events that carry its id
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

/// Events kept per thread (the most recent ones; the oldest is the slot the
/// thread writes next, so a reader takes one less).
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
    // The index (i, stored by the last event) before the slot: a drain that
    // reads a slot being rewritten then sees an index that says so.
    std::sync::atomic::fence(Ordering::Release);
    let s = &ring.slots[i & (RING - 1)];
    s.ticks.store(ticks, Ordering::Relaxed);
    s.name_ptr.store(name_ptr, Ordering::Relaxed);
    s.name_len.store(name_len, Ordering::Relaxed);
    s.arg.store(arg, Ordering::Relaxed);
    ring.next.store(i + 1, Ordering::Release);
}

/// Records `name` for the operation `id` when it is traced (`Some`).
#[inline]
pub fn record_traced(name: &'static str, id: Option<u64>) {
    if let Some(id) = id {
        record(name, id);
    }
}

/// Numbers a side's connections for operation ids: the connection's
/// number in the high bits, the operation's sequence number below.
pub struct Connections(AtomicU64);

impl Connections {
    pub const fn new() -> Connections {
        Connections(AtomicU64::new(0))
    }

    /// The next connection's base id.
    pub fn next_base(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) << 40
    }
}

impl Default for Connections {
    fn default() -> Connections {
        Connections::new()
    }
}

/// Records an event (a no-op while recording is off).
#[inline(always)]
pub fn record(name: &'static str, arg: u64) {
    if ENABLED.load(Ordering::Relaxed) {
        put(name.as_ptr() as u64, name.len() as u64, arg);
    }
}

/// One slot as read, before it is known whether the writer overwrote it
/// meanwhile.
#[derive(Clone, Copy)]
struct Raw {
    ticks: u64,
    name_ptr: u64,
    name_len: u64,
    arg: u64,
}

/// The name a slot points to.
///
/// # Safety
/// The slot must have been read whole (see [`Ring::read`]): its pointer and
/// length come from one [`record`] or [`wb_trace_record`] call.
unsafe fn name_of(r: &Raw) -> String {
    if r.name_len == C_STRING {
        // SAFETY: C callers pass static NUL-terminated names.
        unsafe { std::ffi::CStr::from_ptr(r.name_ptr as *const std::ffi::c_char) }
            .to_string_lossy()
            .into_owned()
    } else {
        // SAFETY: recorded from a `&'static str`: valid UTF-8 forever.
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                r.name_ptr as *const u8,
                r.name_len as usize,
            ))
        }
        .to_string()
    }
}

impl Ring {
    /// Reads the events from index `from` on into `out` (cleared first),
    /// without stopping the writer: the slots are read, then the write
    /// index again, and a slot the writer may have reused meanwhile is
    /// dropped (a seqlock's check). Returns the index read up to and the
    /// number of events lost: overwritten before they could be read.
    fn read(&self, from: usize, out: &mut Vec<Raw>) -> (usize, u64) {
        out.clear();
        let end = self.next.load(Ordering::Acquire);
        let start = from.max(end.saturating_sub(RING));
        for i in start..end {
            let s = &self.slots[i & (RING - 1)];
            out.push(Raw {
                ticks: s.ticks.load(Ordering::Relaxed),
                name_ptr: s.name_ptr.load(Ordering::Relaxed),
                name_len: s.name_len.load(Ordering::Relaxed),
                arg: s.arg.load(Ordering::Relaxed),
            });
        }
        // The slot reads above happen before the index read below; the
        // writer's fence in `put` orders its index before its slot writes.
        std::sync::atomic::fence(Ordering::Acquire);
        let now = self.next.load(Ordering::Relaxed);
        // The slot of index i is reused by index i + RING, written while
        // the index reads i + RING: it was read whole if now < i + RING.
        let torn = (now + 1)
            .saturating_sub(RING)
            .saturating_sub(start)
            .min(out.len());
        out.drain(..torn);
        ((end), (start - from.min(start) + torn) as u64)
    }
}

fn header(out: &mut impl Write, side: Option<&str>) -> io::Result<()> {
    writeln!(out, "# wirebench-trace 1")?;
    writeln!(out, "# ticks_per_ns {:.6}", ticks_per_ns())?;
    if let Some(side) = side {
        writeln!(out, "# side {side}")?;
    }
    Ok(())
}

fn rings() -> Vec<Arc<Ring>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Writes every thread's ring (its last [`RING`] events) in the text format.
pub fn dump_to(out: &mut impl Write) -> io::Result<usize> {
    header(out, None)?;
    let mut n = 0;
    let mut buf = Vec::new();
    for r in &rings() {
        writeln!(out, "# thread {} {}", r.tid, r.thread_name)?;
        r.read(0, &mut buf);
        for e in &buf {
            // SAFETY: `read` kept only slots read whole.
            let name = unsafe { name_of(e) };
            writeln!(out, "{} {} {} {name}", r.tid, e.ticks, e.arg)?;
            n += 1;
        }
    }
    Ok(n)
}

/// What a [`Drain`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    pub events: u64,
    /// [`BEGIN`] events written: operations traced.
    pub begins: u64,
    /// [`END`] events written: operations traced to their end.
    pub ends: u64,
    /// Events overwritten before the drain read them: it fell behind.
    pub lost: u64,
}

/// A thread that streams every ring to a file while the program runs:
/// the events recorded from its start on, and those of threads that start
/// later. Memory stays bounded (the rings, and one ring's worth of
/// buffer); the recording path takes no lock. A ring that fills faster
/// than the drain reads loses its oldest events, counted in
/// [`Drained::lost`] and in the file's last line (`# lost N`).
pub struct Drain {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<io::Result<Drained>>>,
}

/// How often the drain reads the rings: a ring holds 65,536 events, so a
/// thread would have to record over 6 million events a second to lose any.
const DRAIN_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// A ring being drained: where its next unread event is, and whether its
/// thread's name was written.
struct Cursor {
    ring: Arc<Ring>,
    at: usize,
    named: bool,
}

impl Drain {
    /// Creates `path` (its header names `side`, e.g. client or server) and
    /// starts draining into it.
    /// The file must not exist (nor be a link there: O_EXCL, so that a
    /// link planted in a shared directory is not followed).
    pub fn start(path: &std::path::Path, side: &str) -> io::Result<Drain> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        header(&mut out, Some(side))?;
        // Rings that exist now start at their current end: their older
        // events belong to an earlier drain or to none.
        let mut cursors: Vec<Cursor> = rings()
            .into_iter()
            .map(|ring| Cursor {
                at: ring.next.load(Ordering::Acquire),
                ring,
                named: false,
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wb-trace-drain".into())
            .spawn(move || {
                let mut d = Drained::default();
                let mut buf = Vec::with_capacity(RING);
                let mut names: std::collections::HashMap<(u64, u64), String> =
                    std::collections::HashMap::new();
                loop {
                    // After the stop, one more pass: the last events.
                    let last = stopping.load(Ordering::Acquire);
                    let known = cursors.len();
                    cursors.extend(rings().into_iter().skip(known).map(|ring| Cursor {
                        ring,
                        at: 0,
                        named: false,
                    }));
                    let mut busiest = 0;
                    for c in &mut cursors {
                        let (end, lost) = c.ring.read(c.at, &mut buf);
                        busiest = busiest.max(buf.len());
                        c.at = end;
                        d.lost += lost;
                        if buf.is_empty() {
                            continue;
                        }
                        if !c.named {
                            writeln!(out, "# thread {} {}", c.ring.tid, c.ring.thread_name)?;
                            c.named = true;
                        }
                        for e in &buf {
                            let name = names
                                .entry((e.name_ptr, e.name_len))
                                // SAFETY: `read` kept only slots read whole.
                                .or_insert_with(|| unsafe { name_of(e) });
                            d.begins += u64::from(name == BEGIN);
                            d.ends += u64::from(name == END);
                            writeln!(out, "{} {} {} {name}", c.ring.tid, e.ticks, e.arg)?;
                        }
                        d.events += buf.len() as u64;
                    }
                    if last {
                        break;
                    }
                    // A ring a quarter full since the last pass: read again
                    // at once, or it may wrap before the next.
                    if busiest < RING / 4 {
                        std::thread::sleep(DRAIN_EVERY);
                    }
                }
                writeln!(out, "# events {}", d.events)?;
                writeln!(out, "# lost {}", d.lost)?;
                out.flush()?;
                Ok(d)
            })?;
        Ok(Drain {
            stop,
            thread: Some(thread),
        })
    }

    /// Reads the rings a last time, closes the file, and says what it
    /// wrote. Call it once the traced work has stopped.
    pub fn finish(mut self) -> io::Result<Drained> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the trace drain thread panicked")),
            None => Ok(Drained::default()),
        }
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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
    /// Whose events (`# side client`), when the file says.
    pub side: Option<String>,
    pub threads: Vec<(u64, String)>,
    pub events: Vec<Event>,
    /// Events the drain lost (`# lost N`, its last line): None when the
    /// file does not say (a dump, or a drain that did not finish).
    pub lost: Option<u64>,
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
        side: None,
        threads: Vec::new(),
        events: Vec::new(),
        lost: None,
    };
    for (no, line) in lines {
        let bad = || format!("line {}: '{line}' is not an event", no + 1);
        if let Some(rest) = line.strip_prefix("# ticks_per_ns ") {
            t.ticks_per_ns = rest.trim().parse().map_err(|_| bad())?;
        } else if let Some(rest) = line.strip_prefix("# side ") {
            t.side = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("# lost ") {
            t.lost = Some(rest.trim().parse().map_err(|_| bad())?);
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

    /// The rings are the process's: tests that record take turns, so that
    /// a drain counts only its own test's events.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn events_of_several_threads_round_trip() {
        let _t = turn();
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
        let _t = turn();
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
        // The oldest slot is the one the writer fills next: never read, a
        // write may be under way.
        assert_eq!(args.len(), RING - 1);
        assert_eq!(args[0], 101);
    }

    #[test]
    fn a_drain_streams_more_than_a_ring_and_counts_what_it_loses() {
        let _t = turn();
        enable();
        let path = std::env::temp_dir().join(format!("wb-drain-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let drain = Drain::start(&path, "client").unwrap();
        // Four rings' worth, in bursts the drain keeps up with.
        let n = 4 * RING as u64;
        std::thread::spawn(move || {
            for i in 0..n {
                record(BEGIN, i);
                record(END, i);
                if i % 4096 == 0 {
                    std::thread::sleep(2 * DRAIN_EVERY);
                }
            }
        })
        .join()
        .unwrap();
        let d = drain.finish().unwrap();
        let t = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(t.side.as_deref(), Some("client"));
        assert_eq!(t.lost, Some(d.lost));
        assert_eq!(d.lost, 0, "the drain kept up");
        // Other tests record in their own threads meanwhile, with other
        // names.
        let begins = t.events.iter().filter(|e| e.name == BEGIN).count() as u64;
        assert_eq!(begins, n);
        assert_eq!((d.begins, d.ends), (n, n));

        // A burst of many rings between two reads loses events, and the
        // drain says how many: every event written or counted, none torn.
        let path = std::env::temp_dir().join(format!("wb-drain-lost-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let drain = Drain::start(&path, "server").unwrap();
        let n = 64 * RING as u64;
        std::thread::spawn(move || {
            for i in 0..n {
                record("burst", i);
            }
        })
        .join()
        .unwrap();
        let d = drain.finish().unwrap();
        let t = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let burst: Vec<u64> = t
            .events
            .iter()
            .filter(|e| e.name == "burst")
            .map(|e| e.arg)
            .collect();
        assert!(d.lost > 0, "a burst of 64 rings outruns a 10 ms drain");
        assert!(burst.windows(2).all(|w| w[0] < w[1]), "in order, none torn");
        assert_eq!(burst.len() as u64 + d.lost, n);
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(parse("hello").is_err());
        assert!(parse("# wirebench-trace 1\n1 x 2 name").is_err());
        assert!(parse("# wirebench-trace 1\n# ticks_per_ns 0\n").is_err());
    }
}
