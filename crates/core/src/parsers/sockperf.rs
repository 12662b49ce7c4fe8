//! sockperf (3.x) client output: ping-pong and under-load print the valid
//! duration's messages and a latency summary with percentiles, in usec;
//! throughput prints messages sent and their rate. Colours are stripped.
//! sockperf exits 0 even when it could not connect: an output without
//! figures is an error here, with its ERROR line.

use super::parsed::{OutputParser, Parsed, number, strip_ansi};

/// sockperf's summary.
pub struct Sockperf;

impl OutputParser for Sockperf {
    fn name(&self) -> &'static str {
        "sockperf"
    }
    fn reads(&self) -> &'static str {
        "sockperf ping-pong, under-load or throughput"
    }
    /// sockperf prints its results on stdout, but older builds on stderr.
    fn parse(&self, _: &str, stdout: &str, stderr: &str) -> Result<Parsed, String> {
        parse(stdout).or_else(|e| {
            if stderr.contains("sockperf:") {
                parse(stderr).map_err(|_| e)
            } else {
                Err(e)
            }
        })
    }
}

/// `key=value` in a line (`SentMessages=72778;`).
fn field(line: &str, key: &str) -> Option<f64> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let v: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number(&v)
}

/// The number after `prefix` up to the next space.
fn after(line: &str, prefix: &str) -> Option<f64> {
    let at = line.find(prefix)? + prefix.len();
    number(line[at..].split_whitespace().next()?)
}

const PERCENTILES: [(&str, &str); 5] = [
    ("50.000", "p50"),
    ("90.000", "p90"),
    ("99.000", "p99"),
    ("99.900", "p999"),
    ("99.990", "p9999"),
];

/// Reads a sockperf client's output.
pub fn parse(out: &str) -> Result<Parsed, String> {
    let text = strip_ansi(out);
    let mut p = Parsed::default();
    let mut servers = 0;
    let mut full_rtt = None;
    let mut sent = None;
    for raw in text.lines() {
        let line = raw.trim_start_matches("sockperf:").trim();
        if line.starts_with("========= Printing statistics for Server") {
            servers += 1;
            if servers > 1 {
                break;
            }
        } else if line.starts_with("[Valid Duration]") {
            p.seconds = field(line, "RunTime");
            sent = field(line, "SentMessages");
            if let Some(r) = field(line, "ReceivedMessages") {
                p.figure("valid duration: received messages", r);
            }
        } else if let Some(v) = after(line, "====> avg-latency=") {
            full_rtt = Some(false);
            p.latency_ns.insert("mean", v * 1e3);
            p.figure("avg-latency (usec)", v);
        } else if let Some(v) = after(line, "====> avg-rtt=") {
            full_rtt = Some(true);
            p.latency_ns.insert("mean", v * 1e3);
            p.figure("avg-rtt (usec)", v);
        } else if let Some(rest) = line.strip_prefix("Total ")
            && let Some(n) = rest.split_whitespace().next().and_then(number)
            && rest.contains("observations")
        {
            p.latency_count = Some(crate::units::whole(n));
        } else if let Some(v) = after(line, "---> <MAX> observation =") {
            p.latency_ns.insert("max", v * 1e3);
        } else if let Some(v) = after(line, "---> <MIN> observation =") {
            p.latency_ns.insert("min", v * 1e3);
        } else if let Some(rest) = line.strip_prefix("---> percentile ")
            && let Some((q, v)) = rest.split_once('=')
            && let Some(v) = number(v)
        {
            p.figure(format!("percentile {} (usec)", q.trim()), v);
            if let Some((_, stat)) = PERCENTILES.iter().find(|(k, _)| *k == q.trim()) {
                p.latency_ns.insert(stat, v * 1e3);
            }
        } else if let Some(rest) = line.strip_prefix("Total of ")
            && rest.contains("messages sent in")
        {
            // Throughput mode.
            let mut w = rest.split_whitespace();
            let n = w.next().and_then(number);
            let secs = rest
                .split("sent in")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(number);
            if let (Some(n), Some(s)) = (n, secs) {
                sent = Some(n);
                p.seconds = Some(s);
            }
        } else if let Some(v) = after(line, "Summary: Message Rate is") {
            p.ops_per_s = Some(v);
            p.figure("message rate (msg/sec)", v);
        } else if let Some(v) = after(line, "Summary: BandWidth is") {
            p.figure("bandwidth (MBps, i.e. MiB/s)", v);
            if let Some(s) = p.seconds {
                p.bytes_out = Some(crate::units::whole((v * 1048576.0 * s).round()));
            }
        }
    }
    if servers > 1 {
        return Err("statistics of several servers: run one sockperf target per run".into());
    }
    let Some(sent) = sent else {
        let error = text
            .lines()
            .find(|l| l.contains("ERROR"))
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default();
        return Err(format!("sockperf printed no statistics{error}"));
    };
    p.ops = Some(crate::units::whole(sent));
    p.figure("sent messages", sent);
    let throughput = p.latency_ns.is_empty();
    if throughput {
        p.method.push(
            "throughput mode: messages sent over the test time (warm-up excluded); no latency"
                .into(),
        );
    } else {
        p.method.push(match full_rtt {
            Some(true) => "latency: the round trip (--full-rtt)".into(),
            _ => "latency: half the round trip, as sockperf reports by default (its estimate of one way; --full-rtt gives the round trip)".into(),
        });
        if let (Some(n), Some(s)) = (p.latency_count, p.ops)
            && n < s
        {
            p.method.push(format!(
                "latency: {n} observations of {s} messages sent (sockperf times one reply in many under load)"
            ));
        }
        if p.latency_count.is_some_and(|n| n < 10_000) {
            p.method.push(format!(
                "latency: only {} observations: percentiles past p{} rest on fewer than ten",
                p.latency_count.unwrap_or(0),
                if p.latency_count.unwrap_or(0) < 1000 {
                    "99"
                } else {
                    "99.9"
                }
            ));
        }
        p.method
            .push("operations: messages sent in the valid duration (warm-up excluded)".into());
    }
    p.complete("sockperf")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_pong_reports_half_the_round_trip() {
        let p = parse(include_str!("fixtures/sockperf-pingpong-tcp.txt")).unwrap();
        assert_eq!(p.ops, Some(72778));
        assert_eq!(p.seconds, Some(1.55));
        assert_eq!(p.latency_count, Some(72778));
        assert_eq!(p.latency_ns["mean"], 10.633e3);
        assert_eq!(p.latency_ns["p50"], 10.414e3);
        assert_eq!(p.latency_ns["p99"], 15.744e3);
        assert_eq!(p.latency_ns["p999"], 19.350e3);
        assert_eq!(p.latency_ns["p9999"], 46.115e3);
        assert_eq!(p.latency_ns["max"], 474.266e3);
        assert_eq!(p.latency_ns["min"], 8.145e3);
        assert_eq!(p.figures["percentile 99.999 (usec)"], 461.206);
        assert!(p.method[0].contains("half the round trip"));
    }

    #[test]
    fn full_rtt_and_under_load() {
        let p = parse(include_str!("fixtures/sockperf-pingpong-full-rtt.txt")).unwrap();
        assert_eq!(p.latency_ns["mean"], 21.371e3);
        assert_eq!(p.latency_ns["p50"], 20.848e3);
        assert!(p.method[0].contains("--full-rtt"));
        let p = parse(include_str!("fixtures/sockperf-under-load.txt")).unwrap();
        assert_eq!(p.ops, Some(1301));
        assert_eq!(p.latency_count, Some(14));
        assert_eq!(p.latency_ns["p50"], 24.240e3);
        assert!(
            p.method
                .iter()
                .any(|m| m.contains("14 observations of 1301"))
        );
    }

    #[test]
    fn throughput_mode() {
        let p = parse(include_str!("fixtures/sockperf-throughput.txt")).unwrap();
        assert_eq!(p.ops, Some(747526));
        assert_eq!(p.seconds, Some(2.0));
        assert_eq!(p.ops_per_s, Some(373677.0));
        assert!(p.latency_ns.is_empty());
        assert_eq!(
            p.bytes_out,
            Some(crate::units::whole((22.807 * 1048576.0 * 2.0f64).round()))
        );
    }

    #[test]
    fn a_refused_connection_is_an_error_though_sockperf_exits_0() {
        let e = parse(include_str!("fixtures/sockperf-refused.txt")).unwrap_err();
        assert!(e.contains("Connection refused"), "{e}");
    }
}
