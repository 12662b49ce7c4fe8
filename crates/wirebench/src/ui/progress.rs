//! One line per interval on stderr: elapsed time, phase, ops/s, MB/s out
//! and in, mean and p99 latency, and the busy % of each client and server
//! CPU (as the messenger report's `-- 89,95,95` columns).

use wirebench_core::result::{CoreBusy, Phase};
use wirebench_core::units::{format_ns, format_rate};
use wirebench_load::engine::IntervalReport;

pub struct Progress {
    enabled: bool,
}

fn cores(c: &[CoreBusy]) -> String {
    if c.is_empty() {
        return "-".into();
    }
    c.iter()
        .map(|c| format!("{}:{:.0}", c.cpu, c.busy_pct))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress { enabled }
    }

    pub fn connected(&mut self, connect_time_ns: u64) {
        if self.enabled {
            eprintln!("connected in {}", format_ns(connect_time_ns as f64));
            eprintln!(
                "{:>7} {:<7} {:>9} {:>9} {:>9} {:>9} {:>9}   busy% client CPUs | server CPUs",
                "time", "phase", "ops/s", "MB/s out", "MB/s in", "mean", "p99"
            );
        }
    }

    pub fn interval(&mut self, iv: &IntervalReport) {
        if !self.enabled {
            return;
        }
        let secs = iv.seconds().max(1e-9);
        let h = &iv.data.hist;
        let (mean, p99) = if h.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            (
                format_ns(h.mean()),
                format_ns(h.value_at_quantile(0.99) as f64),
            )
        };
        eprintln!(
            "{:>6.1}s {:<7} {:>9} {:>9.2} {:>9.2} {:>9} {:>9}   {} | {}",
            iv.end_ns as f64 / 1e9,
            if iv.phase == Phase::Warmup {
                "warmup"
            } else {
                "measure"
            },
            format_rate(iv.data.ops as f64 / secs),
            iv.data.bytes_out as f64 / secs / 1e6,
            iv.data.bytes_in as f64 / secs / 1e6,
            mean,
            p99,
            cores(&iv.client_cores),
            cores(&iv.server_cores),
        );
    }
}
