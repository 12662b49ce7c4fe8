//! fio `--output-format=json+` (or `json`): every job's reads, writes and
//! trims summed; the completion-latency bins of json+ merged into one HDR
//! histogram, so every percentile is read from the whole distribution.
//! Without bins (plain `json`), only the means are kept, and fio's own
//! percentiles when there is one job and one direction.

use super::parsed::{OutputParser, Parsed, number};
use crate::hist;
use serde_json::Value;

/// fio's JSON.
pub struct FioJson;

impl OutputParser for FioJson {
    fn name(&self) -> &'static str {
        "fio-json"
    }
    fn reads(&self) -> &'static str {
        "fio --output-format=json+, its latency bins made a histogram"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse(stdout)
    }
}

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// fio's percentile keys, as wirebench's statistics.
const PERCENTILES: [(&str, &str); 5] = [
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("99.000000", "p99"),
    ("99.900000", "p999"),
    ("99.990000", "p9999"),
];

/// The JSON document in fio's output (it may print warnings before it).
fn document(out: &str) -> Result<Value, String> {
    let start = out
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| out.starts_with('{').then_some(0))
        .ok_or("no JSON document in the output: run fio with --output-format=json+")?;
    serde_json::Deserializer::from_str(&out[start..])
        .into_iter::<Value>()
        .next()
        .ok_or("an empty JSON document")?
        .map_err(|e| format!("fio's JSON: {e}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Reads fio's report.
pub fn parse(out: &str) -> Result<Parsed, String> {
    let doc = document(out)?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .filter(|j| !j.is_empty())
        .ok_or("fio's JSON has no jobs")?;
    let mut p = Parsed::default();
    let mut h = hist::new_hist();
    let mut binned = true;
    let (mut ops, mut iops, mut n, mut sum_ns) = (0u64, 0.0, 0u64, 0.0);
    let (mut bytes_in, mut bytes_out) = (0u64, 0u64);
    let mut runtime_ms: f64 = 0.0;
    let mut lone: Vec<&Value> = Vec::new();
    for job in jobs {
        let name = job.get("jobname").and_then(Value::as_str).unwrap_or("?");
        if let Some(e) = job.get("error").and_then(Value::as_i64).filter(|e| *e != 0) {
            return Err(format!("fio job {name} failed: error {e}"));
        }
        for dir in DIRS {
            let Some(d) = job.get(dir) else { continue };
            let ios = d.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
            if ios == 0 {
                continue;
            }
            ops += ios;
            iops += f(d, "iops");
            let bytes = d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0);
            if dir == "write" {
                bytes_out += bytes;
            } else {
                bytes_in += bytes;
            }
            runtime_ms = runtime_ms.max(f(d, "runtime"));
            p.figure(format!("{name} {dir} IOPS"), f(d, "iops"));
            p.figure(format!("{name} {dir} ios"), ios as f64);
            let clat = d.get("clat_ns").ok_or("fio's JSON has no clat_ns")?;
            let cn = clat.get("N").and_then(Value::as_u64).unwrap_or(0);
            n += cn;
            sum_ns += f(clat, "mean") * cn as f64;
            p.figure(format!("{name} {dir} clat mean (ns)"), f(clat, "mean"));
            if let Some(pc) = clat.get("percentile") {
                for (key, stat) in PERCENTILES {
                    if let Some(v) = pc.get(key).and_then(Value::as_f64) {
                        p.figure(format!("{name} {dir} clat {stat} (ns)"), v);
                    }
                }
            }
            match clat.get("bins").and_then(Value::as_object) {
                Some(bins) => {
                    for (value, count) in bins {
                        let (Some(ns), Some(c)) = (number(value), count.as_u64()) else {
                            return Err(format!("fio's clat bin {value}: {count}"));
                        };
                        let ns = crate::units::whole(ns).clamp(1, hist::MAX_TRACKED_NS);
                        h.saturating_record_n(ns, c);
                    }
                }
                None => binned = false,
            }
            lone.push(clat);
        }
    }
    if ops == 0 {
        return Err("fio completed no I/O".into());
    }
    p.ops = Some(ops);
    p.ops_per_s = Some(iops);
    p.seconds = Some(runtime_ms / 1e3);
    p.bytes_in = Some(bytes_in);
    p.bytes_out = Some(bytes_out);
    p.latency_count = Some(n);
    p.method.push(
        "operations: the I/Os of every job and direction; the rate is the sum of fio's IOPS; the time the longest job's runtime (1 ms resolution)".into(),
    );
    if binned {
        p.hist = Some(h);
        p.method.push(
            "latency: fio's completion latency (clat: from submission to completion), from its json+ bins merged into one histogram: each value within about 1.6% (64 bins per power of two)".into(),
        );
    } else {
        p.latency_ns.insert("mean", sum_ns / n.max(1) as f64);
        if let [clat] = lone.as_slice()
            && let Some(pc) = clat.get("percentile")
        {
            for (key, stat) in PERCENTILES {
                if let Some(v) = pc.get(key).and_then(Value::as_f64) {
                    p.latency_ns.insert(stat, v);
                }
            }
            p.latency_ns.insert("min", f(clat, "min"));
            p.latency_ns.insert("max", f(clat, "max"));
        }
        p.method.push(
            "latency: fio's completion latency (clat); without json+ bins only its mean over every job (and fio's percentiles for a single job and direction)".into(),
        );
    }
    p.complete("fio")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_of_random_reads() {
        let out = include_str!("fixtures/fio-json-randread-psync.json");
        let p = parse(out).unwrap();
        assert_eq!(p.ops, Some(71604));
        assert_eq!(p.ops_per_s, Some(35784.107946));
        assert_eq!(p.seconds, Some(2.001));
        assert_eq!(p.bytes_in, Some(293289984));
        let h = p.hist.as_ref().unwrap();
        assert_eq!(h.len(), 71604, "every I/O is in a bin");
        // fio's own percentiles are its bins' values: the histogram's
        // agree within its 3 significant digits.
        for (stat, q) in [("p50", 0.5), ("p99", 0.99), ("p9999", 0.9999)] {
            let fio = p.figures[&format!("t read clat {stat} (ns)")];
            let ours = h.value_at_quantile(q) as f64;
            assert!(
                (ours / fio - 1.0).abs() < 0.002,
                "{stat}: {ours} vs fio's {fio}"
            );
        }
    }

    #[test]
    fn jobs_and_directions_are_summed_and_warnings_before_the_json_skipped() {
        let out = format!(
            "fio: this platform does not support process shared mutexes, forcing use of threads\n{}",
            include_str!("fixtures/fio-json-randrw-2jobs.json")
        );
        let p = parse(&out).unwrap();
        assert_eq!(p.ops, Some(18097 + 18135 + 17978 + 18139));
        let iops = 18078.921079 + 18116.883117 + 17960.03996 + 18120.879121;
        assert!((p.ops_per_s.unwrap() - iops).abs() < 1e-6);
        assert_eq!(p.hist.as_ref().unwrap().len(), p.ops.unwrap());
        assert!(p.bytes_out.unwrap() > 0 && p.bytes_in.unwrap() > 0);
    }

    #[test]
    fn plain_json_keeps_fios_percentiles_of_one_job() {
        let mut doc: Value =
            serde_json::from_str(include_str!("fixtures/fio-json-randread-psync.json")).unwrap();
        doc["jobs"][0]["read"]["clat_ns"]
            .as_object_mut()
            .unwrap()
            .remove("bins");
        let p = parse(&doc.to_string()).unwrap();
        assert!(p.hist.is_none());
        assert_eq!(p.latency_ns["p50"], 25984.0);
        assert_eq!(p.latency_ns["p99"], 40704.0);
        assert!(parse("fio: no such file\n").is_err());
    }
}
