//! The processes of a server, however it was given (its PIDs, a process
//! group the run started, or a cgroup v2), and their threads as /proc
//! shows them: name, CPU time, the CPU each last ran on, the CPUs it may
//! run on, and its context switches.
//!
//! Contract (as `os`): safe from any thread, never panics on a missing or
//! odd /proc file; a process or thread that exits between two reads is
//! simply not there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which processes make up the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerProcs {
    /// These processes (the embedded server).
    Pids(Vec<u32>),
    /// These processes and every process they started, at any depth
    /// (`--server-pid`: nginx's master and its workers, a server that
    /// forks a process per connection).
    Tree(PidTree),
    /// Every process of this process group (`--server-cmd`: the command
    /// and whatever it starts).
    Group(u32),
    /// Every process of this cgroup v2 directory (`--server-cgroup`).
    Cgroup(PathBuf),
}

/// One thread, as read at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStat {
    pub pid: u32,
    pub tid: u32,
    /// Its name (`comm`, at most 15 bytes).
    pub name: String,
    /// Time on a CPU, in ns (schedstat; the 10 ms ticks of stat where
    /// schedstat is missing).
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU, in ns (schedstat; 0 without it).
    pub runq_wait_ns: u64,
    /// The CPU it last ran on.
    pub last_cpu: Option<usize>,
    /// Running or runnable now.
    pub running: bool,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

impl ServerProcs {
    /// The processes now, sorted.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = match self {
            ServerProcs::Pids(p) => p
                .iter()
                .copied()
                .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                .collect(),
            ServerProcs::Tree(t) => t.pids(),
            ServerProcs::Group(pgid) => group_members(*pgid),
            ServerProcs::Cgroup(dir) => std::fs::read_to_string(dir.join("cgroup.procs"))
                .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
                .unwrap_or_default(),
        };
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// One reading of the whole server, its processes listed once: CPU
    /// time so far (see [`ServerProcs::cpu_ns`]), run-queue wait summed
    /// over its live threads (None when none is left), and its threads.
    pub fn read(&self) -> (Option<u64>, Option<u64>, Vec<ThreadStat>) {
        let pids = self.pids();
        let threads: Vec<ThreadStat> = pids.iter().flat_map(|&p| process_threads(p)).collect();
        let runq = (!pids.is_empty()).then(|| threads.iter().map(|t| t.runq_wait_ns).sum());
        (self.cpu_ns_of(&pids), runq, threads)
    }

    /// CPU time of the whole server so far, in ns: a cgroup's own counter
    /// (it keeps the time of processes that exited), else the sum over its
    /// live processes. None when none is left.
    pub fn cpu_ns(&self) -> Option<u64> {
        self.cpu_ns_of(&self.pids())
    }

    fn cpu_ns_of(&self, pids: &[u32]) -> Option<u64> {
        if let ServerProcs::Cgroup(dir) = self
            && let Some(us) = cgroup_usage_us(dir)
        {
            return Some(us * 1000);
        }
        let ns_per_tick = 1e9 / crate::os::clock_ticks_per_s();
        if pids.is_empty() {
            return None;
        }
        Some(
            pids.iter()
                .filter_map(|&p| crate::os::process_cpu_ticks(p))
                .map(|t| (t as f64 * ns_per_tick) as u64)
                .sum(),
        )
    }

    /// Every live thread of every process.
    pub fn threads(&self) -> Vec<ThreadStat> {
        self.pids().into_iter().flat_map(process_threads).collect()
    }

    /// Peak RSS, in bytes: a cgroup's `memory.peak` where it has one, else
    /// the sum of its live processes' peaks (VmHWM).
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        if let ServerProcs::Cgroup(dir) = self
            && let Some(b) = std::fs::read_to_string(dir.join("memory.peak"))
                .ok()
                .and_then(|t| t.trim().parse().ok())
        {
            return Some(b);
        }
        let v: Vec<u64> = self
            .pids()
            .into_iter()
            .filter_map(crate::os::process_peak_rss_bytes)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// The CPUs the server may run on: the union of its threads' allowed
    /// CPUs (a cgroup's `cpuset.cpus.effective` where it has one).
    pub fn allowed_cpus(&self) -> Vec<usize> {
        if let ServerProcs::Cgroup(dir) = self
            && let Ok(t) = std::fs::read_to_string(dir.join("cpuset.cpus.effective"))
            && let Ok(l) = wirebench_core::topo::CpuList::parse(t.trim())
        {
            return l.cpus().to_vec();
        }
        let mut all: Vec<usize> = self
            .threads()
            .iter()
            .flat_map(|t| thread_allowed_cpus(t.tid).unwrap_or_default())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// `usage_usec` of a cgroup's cpu.stat.
fn cgroup_usage_us(dir: &Path) -> Option<u64> {
    let t = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))?
        .trim()
        .parse()
        .ok()
}

/// Whether `dir` is a cgroup v2 directory this process can read.
pub fn is_cgroup_v2(dir: &Path) -> bool {
    dir.join("cgroup.procs").is_file() && dir.join("cgroup.controllers").is_file()
}

/// The fields of /proc/…/stat after the command name, which may itself
/// hold spaces or ')'.
fn stat_fields(text: &str) -> Option<(String, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    Some((name, text.get(close + 2..)?.split_whitespace().collect()))
}

/// How long a process tree's members are kept before /proc is read again
/// for them: finding a process's descendants reads every process's stat,
/// and doing that at the thread watch's pace (10 times a second) raised
/// Redis's p99 from 0.2 to 1.9 ms on a 2-vCPU VM. A child started since is
/// seen within this long.
const TREE_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// When a tree's members were found, and which they were.
type Found = (std::time::Instant, Vec<u32>);

/// Processes and their descendants, found again at most every
/// second (clones share what was found).
#[derive(Debug, Clone)]
pub struct PidTree {
    roots: Vec<u32>,
    found: std::sync::Arc<std::sync::Mutex<Option<Found>>>,
}

impl PidTree {
    pub fn new(roots: Vec<u32>) -> PidTree {
        PidTree {
            roots,
            found: Default::default(),
        }
    }

    /// The processes given.
    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// Them and their descendants (those of them still alive).
    pub fn pids(&self) -> Vec<u32> {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        match &*found {
            Some((at, pids)) if at.elapsed() < TREE_REFRESH => pids
                .iter()
                .copied()
                .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                .collect(),
            _ => {
                let pids = with_descendants(&self.roots);
                *found = Some((std::time::Instant::now(), pids.clone()));
                pids
            }
        }
    }
}

impl PartialEq for PidTree {
    fn eq(&self, other: &PidTree) -> bool {
        self.roots == other.roots
    }
}

impl Eq for PidTree {}

/// Each process's parent, of every process now.
fn parents() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, f) = stat_fields(&t)?;
            // state ppid: ppid is the second field after ')'.
            Some((pid, f.get(1)?.parse::<u32>().ok()?))
        })
        .collect()
}

/// The live processes of `roots` and all their descendants.
fn with_descendants(roots: &[u32]) -> Vec<u32> {
    let mut found: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| Path::new(&format!("/proc/{p}")).exists())
        .collect();
    let all = parents();
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for &(pid, ppid) in &all {
            if ppid == parent && !found.contains(&pid) {
                found.push(pid);
            }
        }
        i += 1;
    }
    found
}

/// Every process whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| {
                    let (_, f) = stat_fields(&t)?;
                    // state ppid pgrp: pgrp is the third field after ')'.
                    f.get(2)?.parse::<u32>().ok()
                })
                == Some(pgid)
        })
        .collect()
}

/// The threads of one process.
pub fn process_threads(pid: u32) -> Vec<ThreadStat> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let ns_per_tick = 1e9 / crate::os::clock_ticks_per_s();
    dir.flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let base = e.path();
            let stat = std::fs::read_to_string(base.join("stat")).ok()?;
            let (name, f) = stat_fields(&stat)?;
            let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            // `processor` is field 39 of stat; after ')' the count starts at 3.
            let last_cpu = f.get(36).and_then(|v| v.parse().ok());
            let running = f.first() == Some(&"R");
            let sched: Vec<u64> = std::fs::read_to_string(base.join("schedstat"))
                .map(|t| {
                    t.split_whitespace()
                        .filter_map(|v| v.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            let cpu_ns = sched
                .first()
                .copied()
                .unwrap_or((ticks as f64 * ns_per_tick) as u64);
            let status = std::fs::read_to_string(base.join("status")).unwrap_or_default();
            let field = |key: &str| -> u64 {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            Some(ThreadStat {
                pid,
                tid,
                name,
                cpu_ns,
                runq_wait_ns: sched.get(1).copied().unwrap_or(0),
                last_cpu,
                running,
                voluntary_switches: field("voluntary_ctxt_switches:"),
                involuntary_switches: field("nonvoluntary_ctxt_switches:"),
            })
        })
        .collect()
}

/// The CPUs a thread may run on.
pub fn thread_allowed_cpus(tid: u32) -> Option<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid as i32)).ok()?;
    Some(
        (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
    )
}

/// A thread's group: its name without its numbers (runs of digits that
/// stand alone between separators, or end the name), runs of a separator
/// made one, and no separator at the end (`msgr-worker-2` ->
/// `msgr-worker`, `rocksdb:low0` -> `rocksdb:low`, `wb-s3-fake` and
/// `tp_osd_tp` stay).
pub fn thread_group(name: &str) -> String {
    let sep = |c: char| matches!(c, '-' | '_' | ':' | '.' | '/' | ' ' | '#');
    let chars: Vec<char> = name.chars().collect();
    let mut kept = String::with_capacity(name.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let alone_before = start == 0 || sep(chars[start - 1]);
            let alone_after = i == chars.len() || sep(chars[i]);
            if !((alone_before && alone_after) || i == chars.len()) {
                kept.extend(&chars[start..i]);
            }
            continue;
        }
        kept.push(chars[i]);
        i += 1;
    }
    let mut out = String::with_capacity(kept.len());
    for c in kept.chars() {
        if sep(c) && (out.is_empty() || out.ends_with(c)) {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_end_matches(sep);
    if trimmed.is_empty() {
        name.to_string()
    } else {
        trimmed.to_string()
    }
}

/// CPU time by thread group, in ns, with the ids of the threads seen in
/// each.
pub type GroupTimes = BTreeMap<String, (std::collections::BTreeSet<u32>, u64)>;

/// Adds `more` into `acc`: times added, threads joined.
pub fn add_group_times(acc: &mut GroupTimes, more: GroupTimes) {
    for (g, (tids, ns)) in more {
        let e = acc.entry(g).or_default();
        e.0.extend(tids);
        e.1 += ns;
    }
}

/// The group that holds CPU time no thread /proc still lists can explain:
/// threads that began and ended between two readings.
pub const BETWEEN_LOOKS: &str = "(threads that began and ended between two looks)";

/// CPU time of each thread group between two readings, in ns, with the
/// number of threads seen in each (see [`group_cpu`]).
pub fn group_cpu_ns(
    a: &[ThreadStat],
    b: &[ThreadStat],
    process_ns: Option<u64>,
) -> BTreeMap<String, (usize, u64)> {
    group_cpu(a, b, process_ns)
        .into_iter()
        .map(|(g, (tids, ns))| (g, (tids.len(), ns)))
        .collect()
}

/// CPU time of each thread group between two readings, in ns, with the
/// ids of the threads seen in it. A thread new in `b` counts from zero. A
/// thread of `a` gone from `b` (it ended in between) still counts in its
/// group, and so does its last slice, which /proc no longer shows: the part
/// of `process_ns` (the processes' CPU between the readings, ended threads
/// included) that the threads of `b` do not explain, shared among the
/// ended threads' groups; with no ended thread, a part over the readings'
/// resolution goes to [`BETWEEN_LOOKS`]. No thread group goes missing
/// because its threads ended before the run's last look.
pub fn group_cpu(a: &[ThreadStat], b: &[ThreadStat], process_ns: Option<u64>) -> GroupTimes {
    let before: BTreeMap<u32, u64> = a.iter().map(|t| (t.tid, t.cpu_ns)).collect();
    let mut out = GroupTimes::new();
    let mut explained = 0u64;
    for t in b {
        let d = t
            .cpu_ns
            .saturating_sub(before.get(&t.tid).copied().unwrap_or(0));
        let e = out.entry(thread_group(&t.name)).or_default();
        e.0.insert(t.tid);
        e.1 += d;
        explained += d;
    }
    let live: std::collections::BTreeSet<u32> = b.iter().map(|t| t.tid).collect();
    let ended: Vec<&ThreadStat> = a.iter().filter(|t| !live.contains(&t.tid)).collect();
    for t in &ended {
        out.entry(thread_group(&t.name))
            .or_default()
            .0
            .insert(t.tid);
    }
    let left = process_ns.map_or(0, |p| p.saturating_sub(explained));
    if !ended.is_empty() {
        let each = left / ended.len() as u64;
        for t in &ended {
            out.entry(thread_group(&t.name)).or_default().1 += each;
        }
    } else if left > RESOLUTION_NS * (a.len().max(1) as u64) {
        // Process CPU time comes in clock ticks: below a tick per thread,
        // what is left is rounding, not a thread.
        out.entry(BETWEEN_LOOKS.to_string()).or_default().1 += left;
    }
    out
}

/// The resolution of a process's CPU time in /proc (a clock tick).
const RESOLUTION_NS: u64 = 10_000_000;

/// Context switches between two readings, summed over threads:
/// (voluntary, involuntary).
pub fn switches(a: &[ThreadStat], b: &[ThreadStat]) -> (u64, u64) {
    let before: BTreeMap<u32, (u64, u64)> = a
        .iter()
        .map(|t| (t.tid, (t.voluntary_switches, t.involuntary_switches)))
        .collect();
    b.iter().fold((0, 0), |acc, t| {
        let (v, i) = before.get(&t.tid).copied().unwrap_or((0, 0));
        (
            acc.0 + t.voluntary_switches.saturating_sub(v),
            acc.1 + t.involuntary_switches.saturating_sub(i),
        )
    })
}

/// What a [`Watch`] saw of one thread over its whole life in the run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadSeen {
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    /// CPUs it was seen running on (running at a look, or with more CPU
    /// time than at the look before).
    pub ran_on: Vec<usize>,
    /// The CPUs it may run on, as last read.
    pub allowed: Vec<usize>,
    /// CPU time between the first and the last look, in ns.
    pub cpu_ns: u64,
    /// Its CPU time at the first look, in ns.
    pub first_cpu_ns: u64,
    /// When it was first and last seen.
    pub first_seen: Option<std::time::Instant>,
    pub last_seen: Option<std::time::Instant>,
}

/// Looks at the server's threads every `period` from a thread of its own,
/// to see where they run: a thread on a CPU outside the server's cpuset
/// (Crimson's "2 cores that are really 2.3") shows only to someone who
/// looks often, as `top -H` does.
pub struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<BTreeMap<u32, ThreadSeen>>>,
}

impl Watch {
    /// Starts looking at `procs` every `period`.
    pub fn start(procs: ServerProcs, period: std::time::Duration) -> std::io::Result<Watch> {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wb-watch".into())
            .spawn(move || {
                let mut seen: BTreeMap<u32, ThreadSeen> = BTreeMap::new();
                let mut looks = 0u64;
                loop {
                    let now = std::time::Instant::now();
                    for t in procs.threads() {
                        let e = seen.entry(t.tid).or_insert_with(|| ThreadSeen {
                            pid: t.pid,
                            tid: t.tid,
                            first_cpu_ns: t.cpu_ns,
                            cpu_ns: 0,
                            first_seen: Some(now),
                            ..ThreadSeen::default()
                        });
                        e.last_seen = Some(now);
                        let ran = t.running || t.cpu_ns > e.first_cpu_ns + e.cpu_ns;
                        if ran
                            && let Some(c) = t.last_cpu
                            && !e.ran_on.contains(&c)
                        {
                            e.ran_on.push(c);
                            e.ran_on.sort_unstable();
                        }
                        e.cpu_ns = t.cpu_ns.saturating_sub(e.first_cpu_ns);
                        e.name = t.name;
                        // Affinity changes rarely: read it at first sight
                        // and about once a second after.
                        if e.allowed.is_empty() || looks.is_multiple_of(10) {
                            e.allowed = thread_allowed_cpus(t.tid).unwrap_or_default();
                        }
                    }
                    looks += 1;
                    if flag.load(Ordering::Relaxed) {
                        return seen;
                    }
                    std::thread::park_timeout(period);
                }
            })?;
        Ok(Watch {
            stop,
            handle: Some(handle),
        })
    }

    /// Takes a last look and gives what was seen of each thread.
    pub fn finish(mut self) -> Vec<ThreadSeen> {
        self.stop_thread().into_values().collect()
    }

    fn stop_thread(&mut self) -> BTreeMap<u32, ThreadSeen> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let Some(h) = self.handle.take() else {
            return BTreeMap::new();
        };
        h.thread().unpark();
        h.join().unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45: a server given by its PID is it and what it started
    /// (nginx's master and its workers), at any depth.
    #[test]
    fn issue_45_a_pid_stands_for_its_process_tree() {
        use std::os::unix::process::CommandExt;
        // Its own group, so that one signal stops the whole tree.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sh -c 'sleep 30 & wait' & sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let procs = ServerProcs::Tree(PidTree::new(vec![sh.id()]));
        // sh, a sleep, the inner sh and its sleep: they start within a
        // moment; waited for, up to 10 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut pids = procs.pids();
        while pids.len() < 4 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            // A new tree each time: one's members are kept for a second.
            pids = ServerProcs::Tree(PidTree::new(vec![sh.id()])).pids();
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(sh.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = sh.wait();
        assert_eq!(pids.len(), 4, "{pids:?}");
        assert!(pids.contains(&sh.id()));
    }

    #[test]
    fn groups_strip_digits_and_trailing_separators() {
        assert_eq!(thread_group("msgr-worker-0"), "msgr-worker");
        assert_eq!(thread_group("msgr-worker-12"), "msgr-worker");
        assert_eq!(thread_group("tp_osd_tp"), "tp_osd_tp");
        assert_eq!(thread_group("bstore_kv_sync"), "bstore_kv_sync");
        assert_eq!(thread_group("rocksdb:low0"), "rocksdb:low");
        assert_eq!(thread_group("h2-3-io"), "h2-io");
        assert_eq!(thread_group("wb-s3-fake"), "wb-s3-fake");
        assert_eq!(thread_group("worker12"), "worker");
        assert_eq!(thread_group("wb-reactor-1"), "wb-reactor");
        // A name of digits only keeps its name.
        assert_eq!(thread_group("42"), "42");
    }

    #[test]
    fn this_process_and_its_threads_are_read() {
        let me = std::process::id();
        // A thread names itself as it starts: it says when it has.
        let (tx, rx) = std::sync::mpsc::channel();
        let named = std::thread::Builder::new()
            .name("wb-probe-7".into())
            .spawn(move || {
                tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(300))
            })
            .unwrap();
        rx.recv().unwrap();
        let procs = ServerProcs::Pids(vec![me, u32::MAX]);
        // Other tests of this binary may have children of their own now.
        let pids = procs.pids();
        assert!(pids.contains(&me), "{pids:?}");
        assert!(!pids.contains(&u32::MAX), "a PID that is gone is left out");
        let threads = procs.threads();
        assert!(threads.iter().any(|t| t.tid == me && t.pid == me));
        let probe = threads.iter().find(|t| t.name == "wb-probe-7").unwrap();
        assert!(probe.last_cpu.is_some());
        assert!(procs.cpu_ns().is_some());
        assert!(procs.peak_rss_bytes().unwrap() > 0);
        assert!(!procs.allowed_cpus().is_empty());
        let group = ServerProcs::Group(nix::unistd::getpgrp().as_raw() as u32);
        assert!(group.pids().contains(&me));
        named.join().unwrap();
        assert_eq!(ServerProcs::Pids(vec![u32::MAX]).cpu_ns(), None);
    }

    #[test]
    fn group_cpu_counts_new_threads_from_zero() {
        let t = |tid, name: &str, cpu_ns, v| ThreadStat {
            pid: 1,
            tid,
            name: name.into(),
            cpu_ns,
            runq_wait_ns: 0,
            last_cpu: Some(0),
            running: false,
            voluntary_switches: v,
            involuntary_switches: 0,
        };
        let a = vec![t(1, "w-0", 100, 5), t(2, "w-1", 50, 1), t(3, "gone", 9, 0)];
        let b = vec![t(1, "w-0", 300, 7), t(2, "w-1", 60, 1), t(4, "io", 40, 2)];
        let g = group_cpu_ns(&a, &b, None);
        assert_eq!(g["w"], (2, 210));
        assert_eq!(g["io"], (1, 40));
        // A thread that ended in between still counts, its last slice
        // unknown without the processes' CPU.
        assert_eq!(g["gone"], (1, 0));
        assert_eq!(switches(&a, &b), (4, 0));
    }

    /// Issue 36: the processes' CPU that the live threads do not explain
    /// goes to the threads that ended in between, by their group; with none
    /// ended, to the threads no look saw (past the ticks' rounding).
    #[test]
    fn issue_36_threads_that_ended_keep_their_group_and_their_last_slice() {
        let t = |tid, name: &str, cpu_ns| ThreadStat {
            pid: 1,
            tid,
            name: name.into(),
            cpu_ns,
            runq_wait_ns: 0,
            last_cpu: Some(0),
            running: false,
            voluntary_switches: 0,
            involuntary_switches: 0,
        };
        let a = vec![t(1, "main", 0), t(2, "echo-conn", 0), t(3, "echo-conn", 0)];
        // Both echo-conn threads ended: the processes used 900 ms, main 300.
        let b = vec![t(1, "main", 300_000_000)];
        let g = group_cpu_ns(&a, &b, Some(900_000_000));
        assert_eq!(g["main"], (1, 300_000_000));
        assert_eq!(g["echo-conn"], (2, 600_000_000));
        // Nothing ended, 500 ms unexplained: threads no look saw.
        let g = group_cpu_ns(&b, &b, Some(500_000_000));
        assert_eq!(g[BETWEEN_LOOKS], (0, 500_000_000));
        // Within a tick per thread: rounding, no group.
        let g = group_cpu_ns(&b, &b, Some(5_000_000));
        assert!(!g.contains_key(BETWEEN_LOOKS));
    }
}
