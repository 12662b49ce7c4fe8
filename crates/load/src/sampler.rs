//! Samples CPU use at interval boundaries: busy % and steal % of each CPU of
//! the client and server cpusets (from /proc/stat, 10 ms ticks), and CPU time of the
//! client process and of the server process.

use crate::os;
use wirebench_core::result::CoreBusy;

/// One reading, taken at an interval boundary.
#[derive(Debug, Clone)]
pub struct Sample {
    cpus: Vec<os::CpuTicks>,
    client_ticks: Option<u64>,
    server_ticks: Option<u64>,
    /// (on-CPU ns, run-queue wait ns), summed over threads.
    client_sched: Option<(u64, u64)>,
    server_sched: Option<(u64, u64)>,
}

/// What to sample.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    pub client_cpus: Vec<usize>,
    pub server_cpus: Vec<usize>,
    pub server_pid: Option<u32>,
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
        Sample {
            cpus: os::read_cpu_ticks(),
            client_ticks: Some(ticks.sum()),
            server_ticks: self.server_pid.and_then(os::process_cpu_ticks),
            client_sched: Some(sched.fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))),
            server_sched: self.server_pid.and_then(os::process_schedstat),
        }
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
            d(a.server_ticks, b.server_ticks),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::CpuTicks;

    #[test]
    fn busy_and_steal_shares_between_two_samples() {
        let at = |busy, steal, total| Sample {
            cpus: vec![CpuTicks::default(), CpuTicks { busy, steal, total }],
            client_ticks: Some(0),
            server_ticks: None,
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
