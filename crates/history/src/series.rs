//! What makes runs comparable over time: a series is the runs of the same
//! settings on the same machine. The settings are the run's resolved spec
//! without what changes from one run to the next of the same benchmark:
//! its labels, and the port of an external target (a CI job's server
//! listens where the system put it). The machine is its CPU model, its
//! CPUs and its kernel.

use wirebench_core::result::RunResult;

/// The series of a run: a short id, the settings it stands for, and the
/// machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// 16 hex digits, a hash of the settings and the machine.
    pub id: String,
    /// The settings as JSON (the spec, labels and target port left out).
    pub settings: String,
    /// "Intel(R) Xeon(R) ... / 2 CPUs / Linux 6.1.0"
    pub machine: String,
}

impl Series {
    pub fn of(r: &RunResult) -> Series {
        Series::of_settings(r, |_| {})
    }

    /// A search's series: its steps' settings without what a step varies
    /// (its rate, its length), with the search's objectives and headroom.
    pub fn of_search(step: &RunResult, slos: &[String], headroom: f64) -> Series {
        Series::of_settings(step, |o| {
            for k in ["rate_per_s", "stop", "stages"] {
                o.remove(k);
            }
            o.insert("search_slos".into(), serde_json::json!(slos));
            o.insert("search_headroom".into(), serde_json::json!(headroom));
        })
    }

    fn of_settings(
        r: &RunResult,
        adjust: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
    ) -> Series {
        let mut spec = serde_json::to_value(&r.spec).expect("a spec serializes");
        if let Some(o) = spec.as_object_mut() {
            adjust(o);
        }
        if let Some(o) = spec.as_object_mut() {
            o.remove("labels");
        }
        if let Some(ep) = spec.pointer_mut("/target/endpoint")
            && let Some(s) = ep.as_str()
        {
            *ep = serde_json::Value::String(without_port(s));
        }
        let settings = spec.to_string();
        let machine = format!(
            "{} / {} CPUs / {}",
            r.env.cpu_model,
            r.env.topology.online.len(),
            r.env.kernel
        );
        let h = wirebench_core::hash::fnv1a(settings.bytes().chain([b'\n']).chain(machine.bytes()));
        Series {
            id: format!("{h:016x}"),
            settings,
            machine,
        }
    }
}

/// `tcp://127.0.0.1:7000` -> `tcp://127.0.0.1`; an endpoint with no port
/// (a Unix socket's path) as it is.
fn without_port(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = match authority.rfind(':') {
        // [::1]:7000, host:7000; not a bare IPv6 address without brackets.
        Some(i)
            if !authority[i + 1..].is_empty()
                && authority[i + 1..].bytes().all(|b| b.is_ascii_digit())
                && (authority.starts_with('[') || authority.matches(':').count() == 1) =>
        {
            &authority[..i]
        }
        _ => authority,
    };
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

/// The metrics a series is followed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    OpsPerS,
    P50,
    P99,
    P999,
    CpuPerOp,
    ServerCpuPerOp,
    Errors,
}

/// Which way is better, where it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::OpsPerS,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::CpuPerOp,
        Metric::ServerCpuPerOp,
        Metric::Errors,
    ];

    /// The name on the command line, in the database and in the output.
    pub fn name(self) -> &'static str {
        match self {
            Metric::OpsPerS => "ops_per_s",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::CpuPerOp => "cpu_per_op",
            Metric::ServerCpuPerOp => "server_cpu_per_op",
            Metric::Errors => "errors",
        }
    }

    /// The database column (latencies in microseconds, CPU per operation
    /// in microseconds).
    pub fn column(self) -> &'static str {
        match self {
            Metric::OpsPerS => "ops_per_s",
            Metric::P50 => "p50_us",
            Metric::P99 => "p99_us",
            Metric::P999 => "p999_us",
            Metric::CpuPerOp => "cpu_us_per_op",
            Metric::ServerCpuPerOp => "server_cpu_us_per_op",
            Metric::Errors => "errors",
        }
    }

    pub fn better(self) -> Better {
        match self {
            Metric::OpsPerS => Better::Higher,
            _ => Better::Lower,
        }
    }

    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The metrics `--metric` names; the error names the one that is none.
    pub fn parse_list(names: &[String]) -> Result<Vec<Metric>, String> {
        names
            .iter()
            .map(|n| {
                Metric::parse(n.trim()).ok_or_else(|| {
                    format!(
                        "--metric {n}: not a metric; give any of {}",
                        Metric::ALL.map(|m| m.name()).join(", ")
                    )
                })
            })
            .collect()
    }

    /// The run's value of this metric (None: not measured, e.g. the CPU of
    /// a server not observed).
    pub fn of(self, r: &RunResult) -> Option<f64> {
        let s = &r.summary;
        let us = |ns: u64| ns as f64 / 1e3;
        match self {
            Metric::OpsPerS => Some(s.ops_per_s),
            Metric::P50 => Some(us(s.latency.p50_ns)),
            Metric::P99 => Some(us(s.latency.p99_ns)),
            Metric::P999 => Some(us(s.latency.p999_ns)),
            Metric::CpuPerOp => Some(s.client_cpu_us_per_op),
            Metric::ServerCpuPerOp => s.server_cpu_us_per_op,
            Metric::Errors => Some(s.errors as f64),
        }
    }

    /// A value as people read it: `412us`, `18.2k/s`, `3.1us/op`.
    pub fn show(self, v: f64) -> String {
        match self {
            Metric::OpsPerS if v >= 1e6 => format!("{:.2}M/s", v / 1e6),
            Metric::OpsPerS if v >= 1e3 => format!("{:.1}k/s", v / 1e3),
            Metric::OpsPerS => format!("{v:.0}/s"),
            Metric::P50 | Metric::P99 | Metric::P999 if v >= 10_000.0 => {
                format!("{:.2}ms", v / 1e3)
            }
            Metric::P50 | Metric::P99 | Metric::P999 => format!("{v:.0}us"),
            Metric::CpuPerOp | Metric::ServerCpuPerOp => format!("{v:.2}us/op"),
            Metric::Errors => format!("{v:.0}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_left_out_of_the_settings_and_nothing_else() {
        assert_eq!(without_port("tcp://127.0.0.1:7000"), "tcp://127.0.0.1");
        assert_eq!(without_port("tcp://[::1]:7000"), "tcp://[::1]");
        assert_eq!(
            without_port("s3://127.0.0.1:9000/bucket"),
            "s3://127.0.0.1/bucket"
        );
        assert_eq!(without_port("unix:/tmp/x.sock"), "unix:/tmp/x.sock");
        assert_eq!(without_port("http://host/path"), "http://host/path");
    }

    #[test]
    fn every_metric_parses_from_its_name() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()), Some(m));
        }
        assert_eq!(Metric::parse("p98"), None);
    }
}
