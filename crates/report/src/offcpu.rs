//! Time off CPU per stack, from the scheduler events perf recorded
//! (`perf script --ns` of `sched:sched_switch` with call graphs and
//! `sched:sched_waking`): each interval a thread spent switched out, from
//! the switch that took it off a CPU to the one that put it back, weighted
//! by its length and filed under the stack it blocked in, with what woke it
//! as the last frame. Read as a stream: a run makes millions of lines.
//!
//! Rules:
//! - only the threads the recording names count; others' events are
//!   skipped (the waker is named whoever it is);
//! - intervals are clipped to the window;
//! - a thread whose first event is a switch onto a CPU was off CPU from the
//!   window's start, in a stack perf did not see: it is filed under where
//!   it slept when the window opened (`wchan`);
//! - a thread with no event at all either ran or slept throughout: its
//!   time off CPU is the window less its time on CPU (schedstat), filed
//!   under its `wchan`;
//! - a thread switched out while runnable (state R) was preempted: its
//!   last frame says it waited for a CPU, not for an event.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead};

// The window and its threads are what the runner records (core's words).
pub use wirebench_core::summaries::{OffCpuThread as Thread, OffCpuWindow as Window};

/// Time off CPU by stack, and the figures to check it by.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OffCpu {
    /// `thread;frame;...;[woken by X] ns` lines, sorted.
    pub folded: String,
    /// Total time off CPU of the threads, in ns.
    pub off_cpu_ns: u64,
    /// Their time on CPU, as schedstat counted it.
    pub on_cpu_ns: u64,
    pub threads: usize,
    pub window_ns: u64,
    /// Switches off a CPU of the threads, and of those how many were
    /// preemptions (runnable).
    pub switches_out: u64,
    pub preempted: u64,
    /// Intervals ended by a wake-up whose waker was seen.
    pub woken_seen: u64,
    /// Wake-ups and intervals whose waker was not seen.
    pub woken_unseen: u64,
}

impl OffCpu {
    /// Off CPU + on CPU over threads x window: 1 when every nanosecond of
    /// every thread is accounted for.
    pub fn accounted(&self) -> f64 {
        let all = self.threads as f64 * self.window_ns as f64;
        if all > 0.0 {
            (self.off_cpu_ns + self.on_cpu_ns) as f64 / all
        } else {
            0.0
        }
    }
}

/// Names that differ only by digits as one (`wb-pool-3` -> `wb-pool-N`).
fn merged(name: &str) -> String {
    let mut m: String = name.chars().filter(|c| !c.is_ascii_digit()).collect();
    if m.len() != name.len() {
        m.push('N');
    }
    m
}

/// A thread's last switch off a CPU, while it is not known to be back.
struct Out {
    at: u64,
    /// Folded, root first.
    stack: String,
    /// Preempted (runnable), not blocked.
    runnable: bool,
    /// The first wake-up after it: when, and by whom.
    woken: Option<(u64, String)>,
}

/// What the events say of a thread so far.
#[derive(Default)]
struct Seen {
    out: Option<Out>,
    /// A switch onto a CPU seen since `out`.
    back_at: Option<u64>,
    /// CPU time reported (sched_stat_runtime) since `out`, and when last.
    ran_ns: u64,
    ran_last: u64,
    /// Any event of it at all.
    any: bool,
}

impl Seen {
    /// When it came back onto a CPU after `out`, if it did: the switch
    /// seen, or else the CPU time it reported since, counted back from
    /// its last report (a switch from the idle task is not always traced).
    fn back(&self) -> Option<u64> {
        self.back_at
            .or_else(|| (self.ran_ns > 0).then(|| self.ran_last.saturating_sub(self.ran_ns)))
    }
}

/// One event of the script.
enum Event {
    Switch {
        prev: u32,
        prev_state: String,
        next: u32,
    },
    Waking {
        wakee: u32,
    },
    Runtime {
        pid: u32,
        ns: u64,
    },
    Other,
}

/// `COMM TID [CPU] SECS.FRACTION: EVENT: FIELDS`: (comm, time ns, event).
fn parse_header(line: &str) -> Option<(String, u64, Event)> {
    // The comm may hold spaces: the fields are found from the event name.
    // perf pads the event name to a column: `123.456:   sched:x: ...`.
    let i = line.find(" sched:sched_")?;
    let (head, rest) = (line[..i].trim_end().strip_suffix(':')?, &line[i + 7..]);
    let (event, fields) = rest.split_once(": ").unwrap_or((rest, ""));
    let words: Vec<&str> = head.split_whitespace().collect();
    let [comm @ .., _tid, cpu, time] = words.as_slice() else {
        return None;
    };
    if !cpu.starts_with('[') {
        return None;
    }
    let comm = comm.join(" ");
    let (secs, frac) = time.split_once('.')?;
    let mut frac = frac.to_string();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    let ns = secs.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?;
    let fields = format!(" {fields}");
    let field = |key: &str| -> Option<&str> {
        let i = fields.find(key)? + key.len();
        fields[i..].split_whitespace().next()
    };
    let e = match event.trim() {
        "sched_switch" => Event::Switch {
            prev: field(" prev_pid=")?.parse().ok()?,
            prev_state: field(" prev_state=")?.to_string(),
            next: field(" next_pid=")?.parse().ok()?,
        },
        "sched_waking" => Event::Waking {
            wakee: field(" pid=")?.parse().ok()?,
        },
        "sched_stat_runtime" => Event::Runtime {
            pid: field(" pid=")?.parse().ok()?,
            ns: field(" runtime=")?.parse().ok()?,
        },
        _ => Event::Other,
    };
    Some((comm, ns, e))
}

/// A frame line (`\t  addr sym+0x1f (dso)`) as a folded frame.
fn frame(line: &str) -> Option<String> {
    let l = line.trim();
    let (_addr, rest) = l.split_once(char::is_whitespace)?;
    let rest = rest.trim();
    let (sym, dso) = match rest.rfind(" (") {
        Some(i) => (&rest[..i], rest[i + 2..].trim_end_matches(')')),
        None => (rest, ""),
    };
    let sym = match sym.rfind("+0x") {
        Some(i) => &sym[..i],
        None => sym,
    };
    Some(if sym == "[unknown]" || sym.is_empty() {
        format!("[{}]", dso.rsplit('/').next().unwrap_or("unknown"))
    } else {
        sym.replace(';', ":")
    })
}

/// Folded stacks and the counts that go with them.
struct Acc {
    window: Window,
    stacks: BTreeMap<String, u64>,
    out: OffCpu,
}

impl Acc {
    fn add(&mut self, key: String, from: u64, to: u64) {
        let ns = self.window.clip(from, to);
        if ns > 0 {
            *self.stacks.entry(key).or_default() += ns;
        }
    }

    /// A thread first seen coming onto a CPU at `back`: off CPU from the
    /// window's start, in a stack perf did not see (where it slept when
    /// the window opened).
    fn before_window(&mut self, name: &str, th: &Thread, back: u64) {
        self.add(
            format!(
                "{name};[off CPU from before the window: {}]",
                if th.wchan.is_empty() { "?" } else { &th.wchan }
            ),
            self.window.start_ns,
            back,
        );
    }

    /// Files the interval `o` began, ended at `back`: blocked until its
    /// wake-up, then runnable until it ran.
    fn close(&mut self, o: Out, back: u64) {
        // Counted back from CPU time, `back` may fall a little early.
        let back = back.max(o.at);
        if o.runnable {
            self.add(
                format!("{};[preempted: runnable, waiting for a CPU]", o.stack),
                o.at,
                back,
            );
            return;
        }
        match o.woken {
            Some((at, by)) if at <= back => {
                self.out.woken_seen += 1;
                let woken = format!("{};[woken by {by}]", o.stack);
                self.add(woken.clone(), o.at, at);
                self.add(format!("{woken};[runnable after the wake-up]"), at, back);
            }
            _ => {
                self.out.woken_unseen += 1;
                self.add(format!("{};[wake-up not seen]", o.stack), o.at, back);
            }
        }
    }
}

/// Time off CPU per stack of `threads` over `window`, from `perf script`.
pub fn fold(
    script: impl BufRead,
    threads: &[Thread],
    window: Window,
    merge_threads: bool,
) -> io::Result<OffCpu> {
    let mut f = Folder {
        known: threads.iter().map(|t| (t.tid, t)).collect(),
        seen: HashMap::new(),
        merge_threads,
        acc: Acc {
            window,
            stacks: BTreeMap::new(),
            out: OffCpu {
                threads: threads.len(),
                window_ns: window.len_ns(),
                on_cpu_ns: threads.iter().map(|t| t.on_cpu_ns).sum(),
                ..OffCpu::default()
            },
        },
    };
    // The event being read: its header, then its frames (leaf first).
    let mut header: Option<(String, u64, Event)> = None;
    let mut frames: Vec<String> = Vec::new();
    let mut lines = script.lines();
    loop {
        let line = lines.next().transpose()?;
        let ends = match &line {
            None => true,
            Some(l) => !l.starts_with('\t') || l.trim().is_empty(),
        };
        if ends && let Some((comm, t, e)) = header.take() {
            f.event(&comm, t, e, &frames);
        }
        let Some(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('\t') {
            if header.is_some()
                && let Some(fr) = frame(&line)
            {
                frames.push(fr);
            }
        } else {
            frames.clear();
            header = parse_header(&line);
        }
    }
    Ok(f.finish(threads, window))
}

/// What the fold keeps while it reads: the threads it follows, what it saw
/// of each, and the stacks so far.
struct Folder<'a> {
    known: HashMap<u32, &'a Thread>,
    seen: HashMap<u32, Seen>,
    merge_threads: bool,
    acc: Acc,
}

impl Folder<'_> {
    /// A thread's name as its stacks start (merged: without its number).
    fn name(&self, n: &str) -> String {
        if self.merge_threads {
            merged(n)
        } else {
            n.to_string()
        }
    }

    /// One event, at `t`, of `comm`, with its frames (leaf first).
    fn event(&mut self, comm: &str, t: u64, e: Event, frames: &[String]) {
        match e {
            Event::Switch {
                prev,
                prev_state,
                next,
            } => {
                if let Some(th) = self.known.get(&prev).copied() {
                    self.acc.out.switches_out += 1;
                    let runnable = prev_state.starts_with('R');
                    self.acc.out.preempted += u64::from(runnable);
                    let mut stack = self.name(&th.name);
                    for f in frames.iter().rev() {
                        stack.push(';');
                        stack.push_str(f);
                    }
                    let s = self.seen.entry(prev).or_default();
                    let back = s.back();
                    // (A first event that is a switch off: it ran when the
                    // window opened.)
                    if let Some(o) = s.out.take() {
                        self.acc.close(o, back.unwrap_or(t));
                    }
                    *s = Seen {
                        out: Some(Out {
                            at: t,
                            stack,
                            runnable,
                            woken: None,
                        }),
                        any: true,
                        ..Seen::default()
                    };
                }
                if let Some(th) = self.known.get(&next).copied() {
                    let name = self.name(&th.name);
                    let s = self.seen.entry(next).or_default();
                    if !s.any {
                        self.acc.before_window(&name, th, t);
                    }
                    if s.out.is_some() && s.back_at.is_none() {
                        s.back_at = Some(t);
                    }
                    s.any = true;
                }
            }
            Event::Waking { wakee } => {
                let waker = self.name(comm);
                if let Some(Seen {
                    out:
                        Some(Out {
                            woken: woken @ None,
                            runnable: false,
                            ..
                        }),
                    ..
                }) = self.seen.get_mut(&wakee)
                {
                    *woken = Some((t, waker));
                }
            }
            Event::Runtime { pid, ns } => {
                if let Some(th) = self.known.get(&pid).copied() {
                    let name = self.name(&th.name);
                    let s = self.seen.entry(pid).or_default();
                    if !s.any {
                        self.acc.before_window(&name, th, t.saturating_sub(ns));
                    }
                    s.ran_ns += ns;
                    s.ran_last = t;
                    s.any = true;
                }
            }
            Event::Other => {}
        }
    }

    /// Off CPU when the window closed, or back and not out again; or no
    /// event at all. The result.
    fn finish(mut self, threads: &[Thread], window: Window) -> OffCpu {
        for th in threads {
            let s = self.seen.remove(&th.tid).unwrap_or_default();
            let back = s.back();
            match s.out {
                Some(o) => {
                    if back.is_none() && !o.runnable {
                        self.acc.add(
                            format!("{};[still waiting when the window closed]", o.stack),
                            o.at,
                            window.end_ns,
                        );
                    } else {
                        self.acc.close(o, back.unwrap_or(window.end_ns));
                    }
                }
                None if !s.any => {
                    let name = self.name(&th.name);
                    self.acc.add(
                        format!(
                            "{name};[asleep throughout: {}]",
                            if th.wchan.is_empty() { "?" } else { &th.wchan }
                        ),
                        window.start_ns,
                        window.end_ns.saturating_sub(th.on_cpu_ns),
                    )
                }
                None => {}
            }
        }
        let mut out = self.acc.out;
        out.off_cpu_ns = self.acc.stacks.values().sum();
        out.folded = self
            .acc
            .stacks
            .into_iter()
            .map(|(k, v)| format!("{k} {v}\n"))
            .collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Script in the shape `perf script --ns` prints (the header's comm may
    /// hold a space; frames leaf first).
    const SCRIPT: &str = "\
wb-pool 101 [001] 100.000000000: sched:sched_switch: prev_comm=wb-pool prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff82265ec8 __schedule+0x628 ([kernel.kallsyms])
\tffffffff81750f98 do_epoll_wait+0x588 ([kernel.kallsyms])
\t          108f36 epoll_wait+0x56 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          e55975 tokio::runtime::io::driver::Driver::turn+0xd5 (/bin/wirebench)

wb-client 0 200 [000] 100.000300000:       sched:sched_waking: comm=wb-pool pid=101 prio=120 target_cpu=001 ffffffff813b4986 try_to_wake_up ([kernel.kallsyms])

wb-client 0 200 [000] 100.000350000: sched:sched_waking: comm=wb-pool pid=101 prio=120 target_cpu=001

swapper/1 0 [001] 100.000400000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wb-pool next_pid=101 next_prio=120
\tffffffff82265ec8 __schedule+0x628 ([kernel.kallsyms])

wb-pool 101 [001] 100.000500000: sched:sched_switch: prev_comm=wb-pool prev_pid=101 prev_prio=120 prev_state=R+ ==> next_comm=other next_pid=300 next_prio=120
\tffffffff82265ec8 __schedule+0x628 ([kernel.kallsyms])
\t          aaaa [unknown] (/usr/lib/libfoo.so)

other 300 [001] 100.000600000: sched:sched_switch: prev_comm=other prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=wb-pool next_pid=101 next_prio=120

wb-pool 102 [001] 100.000700000: sched:sched_switch: prev_comm=wb-pool prev_pid=102 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff82265ec8 __schedule+0x628 ([kernel.kallsyms])
\tffffffff81750f98 futex_wait+0x10 ([kernel.kallsyms])

swapper/1 0 [001] 100.000800000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wb-acceptor next_pid=103 next_prio=120
";

    fn threads() -> Vec<Thread> {
        let t = |tid, name: &str, wchan: &str, on| Thread {
            tid,
            name: name.into(),
            wchan: wchan.into(),
            on_cpu_ns: on,
        };
        vec![
            t(101, "wb-pool", "", 400_000),
            t(102, "wb-pool", "", 0),
            t(103, "wb-acceptor", "do_accept", 0),
            t(104, "wb-main", "futex_wait_queue", 100_000),
        ]
    }

    #[test]
    fn intervals_are_filed_under_their_stack_and_waker_and_clipped() {
        let w = Window {
            start_ns: 100_000_000_000,
            end_ns: 100_001_000_000,
        };
        let o = fold(SCRIPT.as_bytes(), &threads(), w, false).unwrap();
        let lines: Vec<&str> = o.folded.lines().collect();
        assert_eq!(
            lines,
            [
                // 800 us from the window's start to its first switch in.
                "wb-acceptor;[off CPU from before the window: do_accept] 800000",
                // Asleep throughout: the window less its time on CPU.
                "wb-main;[asleep throughout: futex_wait_queue] 900000",
                // An unknown symbol by its library; preempted, not woken.
                "wb-pool;[libfoo.so];__schedule;[preempted: runnable, waiting for a CPU] 100000",
                "wb-pool;futex_wait;__schedule;[still waiting when the window closed] 300000",
                // Root first, offsets gone, blocked until the first waker
                // woke it, then runnable until the switch onto a CPU.
                "wb-pool;tokio::runtime::io::driver::Driver::turn;epoll_wait;do_epoll_wait;__schedule;[woken by wb-client 0] 300000",
                "wb-pool;tokio::runtime::io::driver::Driver::turn;epoll_wait;do_epoll_wait;__schedule;[woken by wb-client 0];[runnable after the wake-up] 100000",
            ]
        );
        assert_eq!(
            o.off_cpu_ns,
            800_000 + 900_000 + 400_000 + 100_000 + 300_000
        );
        assert_eq!((o.switches_out, o.preempted), (3, 1));
        assert_eq!((o.woken_seen, o.woken_unseen), (1, 0));
        assert_eq!(o.on_cpu_ns, 500_000);
        assert_eq!(o.window_ns, 1_000_000);
        // Thread 101: off 500 us, on 400 us by schedstat, and 100 us
        // between its switch in and out the events show it ran: 4 threads x
        // 1 ms, accounted 2.5 ms + 0.5 ms (the rest ran unseen by schedstat
        // in this made-up script).
        assert!((o.accounted() - 0.75).abs() < 1e-9, "{}", o.accounted());
        let m = fold(SCRIPT.as_bytes(), &threads(), w, true).unwrap();
        assert!(m.folded.contains("wb-main;[asleep"), "{}", m.folded);
        assert!(m.folded.contains("[woken by wb-client N]"), "{}", m.folded);
    }

    #[test]
    fn without_switches_onto_a_cpu_the_cpu_time_reported_says_when_it_came_back() {
        // Some kernels trace no switch from the idle task: the thread's
        // CPU time (sched_stat_runtime) since its last switch off, counted
        // back from its last report, is when it came back.
        let script = "\
t 7 [001] 10.000000000: sched:sched_switch: prev_comm=t prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff8226de44 futex_wait+0x114 ([kernel.kallsyms])

               w     9 [000] 10.000010000:       sched:sched_waking: comm=t pid=7 prio=120 target_cpu=001
               t     7 [001] 10.000050000: sched:sched_stat_runtime: comm=t pid=7 runtime=20000 [ns] ffffffff813b972a update_se ([kernel.kallsyms])
t 7 [001] 10.000050500: sched:sched_switch: prev_comm=t prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff8226de44 futex_wait+0x114 ([kernel.kallsyms])

t 7 [001] 10.000090000: sched:sched_stat_runtime: comm=t pid=7 runtime=10000 [ns]
";
        let th = [Thread {
            tid: 7,
            name: "t".into(),
            wchan: String::new(),
            on_cpu_ns: 30_000,
        }];
        let w = Window {
            start_ns: 10_000_000_000,
            end_ns: 10_000_100_000,
        };
        let o = fold(script.as_bytes(), &th, w, false).unwrap();
        let lines: Vec<&str> = o.folded.lines().collect();
        assert_eq!(
            lines,
            [
                // Out at 0, woken at 10 us, back at 50 - 20 = 30 us; out
                // at 50.5 us, back at 90 - 10 = 80 us (no wake-up seen).
                "t;futex_wait;[wake-up not seen] 29500",
                "t;futex_wait;[woken by w] 10000",
                "t;futex_wait;[woken by w];[runnable after the wake-up] 20000",
            ]
        );
        // 30 + 29.5 us off of the 100 us window: the rest it ran.
        assert_eq!(o.off_cpu_ns, 59_500);
    }

    #[test]
    fn a_window_clips_what_falls_outside_it() {
        // The window opens after the first switch out and closes before
        // the thread is back: only the window's part counts.
        let w = Window {
            start_ns: 100_000_100_000,
            end_ns: 100_000_200_000,
        };
        let o = fold(SCRIPT.as_bytes(), &threads()[..1], w, false).unwrap();
        assert_eq!(o.off_cpu_ns, 100_000, "{}", o.folded);
    }
}
