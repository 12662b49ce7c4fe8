//! redis-benchmark `--csv`: a header, then a line per test:
//! `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"`
//! (redis-benchmark 6 prints only `"test","rps"`). One test per run: its
//! tests run one after another, so their rates and percentiles do not add
//! up; a sweep over `-t` compares them.

use super::parsed::{OutputParser, Parsed, number};

/// redis-benchmark's CSV.
pub struct RedisBenchmark;

impl OutputParser for RedisBenchmark {
    fn name(&self) -> &'static str {
        "redis-benchmark"
    }
    fn reads(&self) -> &'static str {
        "redis-benchmark --csv"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse(stdout)
    }
}

/// The columns wirebench keeps as latency statistics.
const LATENCY: [(&str, &str); 5] = [
    ("avg_latency_ms", "mean"),
    ("min_latency_ms", "min"),
    ("p50_latency_ms", "p50"),
    ("p99_latency_ms", "p99"),
    ("max_latency_ms", "max"),
];

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect()
}

/// Reads redis-benchmark's CSV.
pub fn parse(out: &str) -> Result<Parsed, String> {
    let mut lines = out.lines().map(str::trim).filter(|l| l.starts_with('"'));
    let header = lines
        .next()
        .map(cells)
        .filter(|h| h.first().is_some_and(|c| c == "test") && h.iter().any(|c| c == "rps"))
        .ok_or(
            "no CSV header (\"test\",\"rps\",...) in the output: run redis-benchmark with --csv",
        )?;
    let rows: Vec<Vec<String>> = lines
        .map(cells)
        .filter(|r| r.len() == header.len())
        .collect();
    let row = match rows.as_slice() {
        [] => return Err("redis-benchmark printed its CSV header but no test".into()),
        [row] => row,
        many => {
            return Err(format!(
                "{} tests ({}): give redis-benchmark one test per run (-t NAME), and sweep over them",
                many.len(),
                many.iter()
                    .map(|r| r[0].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    };
    let mut p = Parsed::default();
    for (name, cell) in header.iter().zip(row).skip(1) {
        let v = number(cell).ok_or_else(|| format!("{name} = '{cell}': not a number"))?;
        p.figure(format!("{} {name}", row[0]), v);
        if name == "rps" {
            p.ops_per_s = Some(v);
        } else if let Some((_, stat)) = LATENCY.iter().find(|(c, _)| c == name) {
            p.latency_ns.insert(stat, v * 1e6);
        }
    }
    p.method = vec![
        format!("test {}: redis-benchmark's requests per second", row[0]),
        "latency: from its histogram, printed to 1 us (ms with 3 decimals); p95 is kept as a figure".into(),
    ];
    if p.ops_per_s.is_none() {
        return Err("no rps column".into());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_test_with_its_percentiles() {
        // redis-benchmark 7 -t get -n 20000 --csv against redis-server 7.
        let p = parse(include_str!("fixtures/redis-benchmark-get.csv")).unwrap();
        assert_eq!(p.ops_per_s, Some(101010.10));
        assert_eq!(p.latency_ns["p50"], 0.247e6);
        assert_eq!(p.latency_ns["p99"], 0.655e6);
        assert_eq!(p.latency_ns["mean"], 0.267e6);
        assert_eq!(p.figures["GET p95_latency_ms"], 0.407);
        assert!(!p.latency_ns.contains_key("p90"));
    }

    #[test]
    fn several_tests_are_refused_by_name() {
        let e = parse(include_str!("fixtures/redis-benchmark-get-set.csv")).unwrap_err();
        assert!(e.contains("2 tests (SET, GET)"), "{e}");
        // redis-benchmark 6: rates only.
        let p = parse("\"test\",\"rps\"\n\"PING_INLINE\",\"90090.09\"\n").unwrap();
        assert!(p.latency_ns.is_empty());
        assert!(parse("Could not connect to Redis at 127.0.0.1:1: Connection refused\n").is_err());
    }
}
