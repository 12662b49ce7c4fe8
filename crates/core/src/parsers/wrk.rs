//! wrk (HTTP): `N requests in Ts, S read`, the latency's mean and maximum
//! of its thread statistics, the `--latency` distribution (50/75/90/99%),
//! the responses that were not 2xx or 3xx and the socket errors. wrk times
//! each request from when it was sent (coordinated omission included, as
//! wrk2 and wirebench's open loop do not).

use super::parsed::{OutputParser, Parsed, number};

/// wrk's summary.
pub struct Wrk;

impl OutputParser for Wrk {
    fn name(&self) -> &'static str {
        "wrk"
    }
    fn reads(&self) -> &'static str {
        "wrk's summary, with its --latency distribution if given"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse(stdout)
    }
}

/// A number with a unit as wrk prints one (`42.00us`, `45.13MB`), scaled
/// by the unit's factor.
fn scaled(text: &str, units: &[(&str, f64)]) -> Option<f64> {
    let at = text.find(|c: char| c.is_ascii_alphabetic())?;
    let factor = units.iter().find(|(u, _)| *u == &text[at..])?.1;
    Some(number(&text[..at])? * factor)
}

/// A time (`42.00us`, `3.12ms`, `2.10s`, `1.00m`), in ns.
fn time_ns(text: &str) -> Option<f64> {
    scaled(
        text,
        &[
            ("us", 1e3),
            ("ms", 1e6),
            ("s", 1e9),
            ("m", 60e9),
            ("h", 3600e9),
        ],
    )
}

/// A size (`45.13MB`, binary units), in bytes.
fn bytes(text: &str) -> Option<f64> {
    scaled(
        text,
        &[
            ("B", 1.0),
            ("KB", 1024.0),
            ("MB", 1048576.0),
            ("GB", 1073741824.0),
        ],
    )
}

/// Reads wrk's output.
pub fn parse(out: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut distribution = false;
    let mut errors = None;
    for line in out.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Latency", avg, _stdev, max, _] => {
                let (Some(avg), Some(max)) = (time_ns(avg), time_ns(max)) else {
                    return Err(format!("'{line}': not wrk's latency line"));
                };
                p.latency_ns.insert("mean", avg);
                p.latency_ns.insert("max", max);
            }
            ["Latency", "Distribution"] => distribution = true,
            [pct, t] if distribution && pct.ends_with('%') => {
                let ns = time_ns(t).ok_or_else(|| format!("'{line}': not a latency"))?;
                p.figure(format!("latency {pct} us"), ns / 1e3);
                if let Some(s) = [("50%", "p50"), ("90%", "p90"), ("99%", "p99")]
                    .iter()
                    .find(|(q, _)| q == pct)
                {
                    p.latency_ns.insert(s.1, ns);
                }
            }
            [n, "requests", "in", secs, read, "read"] => {
                distribution = false;
                let n = number(n).ok_or_else(|| format!("'{line}': no request count"))?;
                let s = time_ns(secs.trim_end_matches(','))
                    .ok_or_else(|| format!("'{line}': no duration"))?;
                p.ops = Some(crate::units::whole(n));
                p.seconds = Some(s / 1e9);
                p.bytes_in = bytes(read).map(crate::units::whole);
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                let n = number(n).ok_or_else(|| format!("'{line}': no count"))?;
                p.figure("non-2xx or 3xx responses", n);
                *errors.get_or_insert(0.0) += n;
            }
            ["Socket", "errors:", rest @ ..] => {
                // `connect 0, read 12, write 0, timeout 3`
                for pair in rest.join(" ").split(',') {
                    if let Some((what, n)) = pair.trim().split_once(' ')
                        && let Some(n) = number(n)
                    {
                        p.figure(format!("socket errors {what}"), n);
                        *errors.get_or_insert(0.0) += n;
                    }
                }
            }
            ["Requests/sec:", r] => {
                let r = number(r).ok_or_else(|| format!("'{line}': no rate"))?;
                p.figure("Requests/sec", r);
            }
            _ => {}
        }
    }
    if p.ops.is_none() {
        return Err("no 'N requests in T' line: not wrk's output, or wrk did not finish".into());
    }
    p.errors = errors.map(crate::units::whole);
    p.method = vec![
        "operations: wrk's requests, over its run time".into(),
        "latency: wrk's, from each request's send (coordinated omission included); p50/p90/p99 with --latency".into(),
    ];
    p.complete("wrk's output")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk 4.1 -t1 -c4 -d2s --latency against nginx here.
    #[test]
    fn the_summary_and_its_latency_distribution() {
        let p = parse(include_str!("fixtures/wrk-latency.txt")).unwrap();
        assert_eq!(p.ops, Some(197185));
        assert_eq!(p.seconds, Some(2.1));
        assert!((p.ops_per_s.unwrap() - 197185.0 / 2.1).abs() < 1e-6);
        assert_eq!(p.figures["Requests/sec"], 93923.20);
        assert_eq!(p.latency_ns["mean"], 45.25e3);
        assert_eq!(p.latency_ns["max"], 3.12e6);
        assert_eq!(p.latency_ns["p50"], 42e3);
        assert_eq!(p.latency_ns["p90"], 52e3);
        assert_eq!(p.latency_ns["p99"], 84e3);
        assert_eq!(p.figures["latency 75% us"], 48.0);
        assert_eq!(p.bytes_in, Some(crate::units::whole(45.13 * 1048576.0)));
        assert_eq!(p.errors, None);
    }

    /// Every response a 404: wrk counts them as requests, wirebench as
    /// errors; no distribution without --latency.
    #[test]
    fn responses_that_are_not_2xx_are_errors() {
        let p = parse(include_str!("fixtures/wrk-404.txt")).unwrap();
        assert_eq!(p.ops, Some(197467));
        assert_eq!(p.errors, Some(197467));
        assert!(!p.latency_ns.contains_key("p99"));
        assert_eq!(p.latency_ns["mean"], 108.39e3);
        let e = parse("Running 2s test @ http://x/\n").unwrap_err();
        assert!(e.contains("not wrk's output"), "{e}");
    }
}
