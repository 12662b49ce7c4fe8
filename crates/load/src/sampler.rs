//! Samples CPU use at interval boundaries: busy % and steal % of each CPU of
//! the client and server cpusets (from /proc/stat, 10 ms ticks), CPU time of
//! the client process and of the server's processes, and the server's
//! threads (CPU by thread group, context switches).

use crate::os;
use crate::procs::{self, ServerProcs, ThreadStat};
use wirebench_core::result::{CoreBusy, GroupCpu};

/// One reading, taken at an interval boundary.
#[derive(Debug, Clone)]
pub struct Sample {
    cpus: Vec<os::CpuTicks>,
    client_ticks: Option<u64>,
    server_cpu_ns: Option<u64>,
    /// The server's threads (empty without a server).
    server_threads: Vec<ThreadStat>,
    /// (on-CPU ns, run-queue wait ns), summed over threads.
    client_sched: Option<(u64, u64)>,
    server_sched: Option<(u64, u64)>,
}

/// What to sample.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    pub client_cpus: Vec<usize>,
    pub server_cpus: Vec<usize>,
    /// The server's processes (None: a server the run does not observe).
    pub server: Option<ServerProcs>,
    /// Client processes besides this one (clients run as processes); their
    /// CPU counts as the client's.
    pub client_children: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
}

impl Sampler {
    pub fn sample(&self) -> Sample {
        let mut pids = vec![std::process::id()];
        pids.extend(self.client_children.lock().expect("not poisoned").iter());
        let ticks = pids.iter().filter_map(|&p| os::process_cpu_ticks(p));
        let sched = pids.iter().filter_map(|&p| os::process_schedstat(p));
        // The server's processes are listed once per sample (a process
        // group or cgroup is a scan of /proc or of its cgroup.procs).
        let (server_cpu_ns, server_runq_ns, server_threads) = self
            .server
            .as_ref()
            .map(ServerProcs::read)
            .unwrap_or_default();
        Sample {
            cpus: os::read_cpu_ticks(),
            client_ticks: Some(ticks.sum()),
            server_cpu_ns,
            server_threads,
            client_sched: Some(sched.fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))),
            server_sched: server_runq_ns.map(|w| (0, w)),
        }
    }

    /// The server's CPU time by thread group between two samples, most
    /// first, each as a share of `seconds` (empty without a server).
    pub fn groups(a: &Sample, b: &Sample, seconds: f64) -> Vec<GroupCpu> {
        Sampler::groups_of(&Sampler::group_cpu(a, b), seconds)
    }

    /// The server's CPU time by thread group between two samples, with the
    /// threads of each: threads that ended in between included (see
    /// [`procs::group_cpu`]).
    pub fn group_cpu(a: &Sample, b: &Sample) -> procs::GroupTimes {
        let process = a
            .server_cpu_ns
            .zip(b.server_cpu_ns)
            .map(|(x, y)| y.saturating_sub(x));
        procs::group_cpu(&a.server_threads, &b.server_threads, process)
    }

    /// Group times as the result has them, most CPU first.
    pub fn groups_of(times: &procs::GroupTimes, seconds: f64) -> Vec<GroupCpu> {
        let mut g: Vec<GroupCpu> = times
            .iter()
            .map(|(group, (threads, ns))| GroupCpu {
                group: group.clone(),
                threads: threads.len(),
                cpu_s: *ns as f64 / 1e9,
                cpu_pct: if seconds > 0.0 {
                    100.0 * *ns as f64 / 1e9 / seconds
                } else {
                    0.0
                },
            })
            .collect();
        g.sort_by(|x, y| y.cpu_s.total_cmp(&x.cpu_s).then(x.group.cmp(&y.group)));
        g
    }

    /// The server's context switches between two samples, (voluntary,
    /// involuntary), summed over its threads (None without a server).
    pub fn switches(a: &Sample, b: &Sample) -> Option<(u64, u64)> {
        (!b.server_threads.is_empty())
            .then(|| procs::switches(&a.server_threads, &b.server_threads))
    }

    /// Busy % of each listed CPU between two samples.
    pub fn busy(cpus: &[usize], a: &Sample, b: &Sample) -> Vec<CoreBusy> {
        cpus.iter()
            .map(|&cpu| {
                let (x, y) = (
                    a.cpus.get(cpu).copied().unwrap_or_default(),
                    b.cpus.get(cpu).copied().unwrap_or_default(),
                );
                let total = y.total.saturating_sub(x.total);
                let pct = |v: u64| {
                    if total == 0 {
                        0.0
                    } else {
                        100.0 * v as f64 / total as f64
                    }
                };
                CoreBusy {
                    cpu,
                    busy_pct: pct(y.busy.saturating_sub(x.busy)),
                    steal_pct: pct(y.steal.saturating_sub(x.steal)),
                }
            })
            .collect()
    }

    /// The share of each core the server's threads used between two
    /// samples over `seconds`, in % of the core: each thread's CPU time put
    /// on the core it last ran on (exact for a thread pinned to one core,
    /// as a reactor is). Every core of `cpus` (the server's cpuset) comes,
    /// used or not, and any other core a thread ran on. Empty where no
    /// thread of the server was read.
    pub fn server_share(cpus: &[usize], a: &Sample, b: &Sample, seconds: f64) -> Vec<CoreBusy> {
        if b.server_threads.is_empty() || seconds <= 0.0 {
            return vec![];
        }
        let before: std::collections::BTreeMap<u32, u64> =
            a.server_threads.iter().map(|t| (t.tid, t.cpu_ns)).collect();
        let mut by: std::collections::BTreeMap<usize, u64> = cpus.iter().map(|c| (*c, 0)).collect();
        for t in &b.server_threads {
            let Some(cpu) = t.last_cpu else { continue };
            let d = t
                .cpu_ns
                .saturating_sub(before.get(&t.tid).copied().unwrap_or(0));
            *by.entry(cpu).or_default() += d;
        }
        by.into_iter()
            .map(|(cpu, ns)| CoreBusy {
                cpu,
                busy_pct: 100.0 * ns as f64 / 1e9 / seconds,
                steal_pct: 0.0,
            })
            .collect()
    }

    /// Seconds the client's and the server's threads spent runnable but
    /// waiting for a CPU between two samples (threads that exited in between
    /// are not counted).
    pub fn runq_wait_seconds(a: &Sample, b: &Sample) -> (Option<f64>, Option<f64>) {
        let d = |x: Option<(u64, u64)>, y: Option<(u64, u64)>| {
            Some(y?.1.saturating_sub(x?.1) as f64 / 1e9)
        };
        (
            d(a.client_sched, b.client_sched),
            d(a.server_sched, b.server_sched),
        )
    }

    /// CPU seconds used by the client and the server between two samples.
    pub fn cpu_seconds(a: &Sample, b: &Sample) -> (f64, Option<f64>) {
        let hz = os::clock_ticks_per_s();
        let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?) as f64 / hz);
        (
            d(a.client_ticks, b.client_ticks).unwrap_or(0.0),
            a.server_cpu_ns
                .zip(b.server_cpu_ns)
                .map(|(x, y)| y.saturating_sub(x) as f64 / 1e9),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::CpuTicks;

    /// The server's share of each core: each thread's CPU time on the core
    /// it last ran on, every core of its cpuset shown, a core outside it
    /// too when a thread ran there.
    #[test]
    fn the_servers_share_of_each_core_from_its_threads() {
        let thread = |tid, cpu_ns, cpu| crate::procs::ThreadStat {
            pid: 1,
            tid,
            name: "reactor".into(),
            cpu_ns,
            runq_wait_ns: 0,
            last_cpu: Some(cpu),
            running: true,
            voluntary_switches: 0,
            involuntary_switches: 0,
        };
        let at = |threads| Sample {
            cpus: vec![],
            client_ticks: None,
            server_cpu_ns: None,
            server_threads: threads,
            client_sched: None,
            server_sched: None,
        };
        let a = at(vec![thread(10, 1_000_000_000, 2), thread(11, 0, 3)]);
        // Over 2 s: thread 10 used 1.5 s on cpu 2, 11 used 0.5 s on cpu 3,
        // and 12 (new) 0.2 s on cpu 5, outside the cpuset 2-4.
        let b = at(vec![
            thread(10, 2_500_000_000, 2),
            thread(11, 500_000_000, 3),
            thread(12, 200_000_000, 5),
        ]);
        let s = Sampler::server_share(&[2, 3, 4], &a, &b, 2.0);
        let got: Vec<(usize, f64)> = s.iter().map(|c| (c.cpu, c.busy_pct)).collect();
        assert_eq!(got, [(2, 75.0), (3, 25.0), (4, 0.0), (5, 10.0)]);
        assert!(Sampler::server_share(&[2], &a, &at(vec![]), 2.0).is_empty());
    }

    #[test]
    fn busy_and_steal_shares_between_two_samples() {
        let at = |busy, steal, total| Sample {
            cpus: vec![CpuTicks::default(), CpuTicks { busy, steal, total }],
            client_ticks: Some(0),
            server_cpu_ns: None,
            server_threads: vec![],
            client_sched: None,
            server_sched: None,
        };
        let (a, b) = (at(100, 10, 1000), at(160, 20, 1100));
        let c = Sampler::busy(&[1], &a, &b);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].cpu, c[0].busy_pct, c[0].steal_pct), (1, 60.0, 10.0));
        // A CPU missing from /proc/stat reads as idle, not as an error.
        assert_eq!(Sampler::busy(&[7], &a, &b)[0].busy_pct, 0.0);
    }
}
