//! perf-crimson-msgr and perf-async-msgr (Ceph): a line per second,
//! ```text
//!     sec  depth      IOPS     MB/s  lat(ms) -- client reactor utilisation %,...
//!  1.00516  27043 3.17101e+06  12386.7  8.41057 -- 89,95,95,...
//! ```
//! then a summary line and, at shutdown, a block per connection, per
//! client, and for all:
//! ```text
//! all(depth=28672):
//!   connect time: 0.004654s
//!   messages received: 152236774
//!   messaging time: 60.247898s
//!   latency: 10.910158ms
//!   IOPS: 2526839.747163
//!   out throughput: 9870.467762MB/s
//! ```
//! Their "MB/s" is MiB/s (IOPS x block size / 1048576), and their latency
//! the mean of a sample: only messages whose id is a multiple of 256 are
//! timed, on a low-resolution clock (see ceph's
//! src/crimson/tools/perf_crimson_msgr.cc).

use super::parsed::{OutputParser, Parsed, ParsedInterval, number};

/// perf-crimson-msgr and perf-async-msgr.
pub struct CrimsonMsgr;

impl OutputParser for CrimsonMsgr {
    fn name(&self) -> &'static str {
        "crimson-msgr"
    }
    fn reads(&self) -> &'static str {
        "perf-crimson-msgr and perf-async-msgr: the per-second lines and the all(depth=N): block"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse(stdout)
    }
}

const MIB: f64 = 1048576.0;

/// How the programs measure, for the result.
const METHOD: [&str; 4] = [
    "latency: the mean of a 1-in-256 sample (messages whose id is a multiple of 256), timed on seastar's low-resolution clock (10 ms ticks): no percentile exists",
    "all(depth=N): the latency is the mean over connections of each connection's mean; the messaging time the mean of the connections' times; IOPS their sum",
    "MB/s as printed is MiB/s (IOPS x block size / 1048576), as wirebench shows throughput",
    "per-second lines: depth is the messages in flight at the end of the second; the figures after '--' are each client reactor's utilisation in %",
];

/// Reads a client's output.
pub fn parse(out: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut all: Option<Vec<(&str, &str)>> = None;
    let mut blocks = 0;
    let mut lines = out.lines().peekable();
    let mut summary_next = false;
    let mut summary: Option<[f64; 4]> = None;
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.contains("-- summary --") {
            summary_next = true;
            continue;
        }
        if summary_next {
            summary_next = false;
            summary = summary_line(t);
            continue;
        }
        if let Some(rest) = t.strip_prefix("all(depth=") {
            blocks += 1;
            let depth = rest.trim_end_matches("):");
            let mut fields = vec![("depth", depth)];
            let indent = |l: &str| l.len() - l.trim_start().len();
            let own = indent(line);
            while let Some(next) = lines.peek() {
                let Some((k, v)) = next.trim().split_once(':') else {
                    break;
                };
                if indent(next) <= own {
                    break;
                }
                fields.push((k.trim(), v.trim()));
                lines.next();
            }
            all = Some(fields);
            continue;
        }
        if let Some(iv) = second_line(t) {
            p.intervals.push(iv);
        }
    }
    if blocks > 1 {
        return Err(format!(
            "{blocks} all(depth=…) blocks: the output of one run was expected"
        ));
    }
    if let Some(fields) = all {
        let get = |name: &str, unit: &str| -> Result<f64, String> {
            let v = fields
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| format!("all(depth=…) block without '{name}'"))?;
            let num: String = v
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || ".eE+-".contains(*c))
                .collect();
            let rest = v.trim_start()[num.len()..].trim_start();
            if !rest.starts_with(unit) {
                return Err(format!("'{name}: {v}': expected a value in {unit}"));
            }
            number(&num).ok_or_else(|| format!("'{name}: {v}': not a number"))
        };
        let depth = get("depth", "")?;
        let connect = get("connect time", "s")?;
        let received = get("messages received", "")?;
        let time = get("messaging time", "s")?;
        let latency_ms = get("latency", "ms")?;
        let iops = get("IOPS", "")?;
        let out_mib = get("out throughput", "MB/s")?;
        p.figure("depth", depth);
        p.figure("connect time (s)", connect);
        p.figure("messages received", received);
        p.figure("messaging time (s)", time);
        p.figure("latency (ms)", latency_ms);
        p.figure("IOPS", iops);
        p.figure("out throughput (MB/s, i.e. MiB/s)", out_mib);
        p.ops = Some(crate::units::whole(received));
        p.seconds = Some(time);
        p.ops_per_s = Some(iops);
        p.connect_s = Some(connect);
        p.latency_ns.insert("mean", latency_ms * 1e6);
        p.bytes_out = Some(crate::units::whole((out_mib * MIB * time).round()));
    } else if let Some([secs, iops, mib, lat_ms]) = summary {
        p.figure("summary: seconds", secs);
        p.figure("summary: IOPS", iops);
        p.figure("summary: MB/s (MiB/s)", mib);
        p.figure("summary: lat(ms)", lat_ms);
        p.seconds = Some(secs);
        p.ops_per_s = Some(iops);
        p.latency_ns.insert("mean", lat_ms * 1e6);
        p.bytes_out = Some(crate::units::whole((mib * MIB * secs).round()));
    } else if p.intervals.is_empty() {
        return Err(
            "no per-second line, summary or all(depth=…) block of perf-crimson-msgr in the output"
                .into(),
        );
    } else {
        return Err(format!(
            "{} per-second lines but no summary or all(depth=…) block: the program did not finish",
            p.intervals.len()
        ));
    }
    if let Some([secs, iops, mib, lat_ms]) = summary
        && p.figures.contains_key("IOPS")
    {
        p.figure("summary: seconds", secs);
        p.figure("summary: IOPS", iops);
        p.figure("summary: MB/s (MiB/s)", mib);
        p.figure("summary: lat(ms)", lat_ms);
    }
    p.method = METHOD.iter().map(|m| m.to_string()).collect();
    p.complete("perf-crimson-msgr")
}

/// `1.00516  27043 3.17101e+06  12386.7  8.41057 -- 89,95,...`
fn second_line(t: &str) -> Option<ParsedInterval> {
    let (figures, busy) = t.split_once("--")?;
    let f: Vec<&str> = figures.split_whitespace().collect();
    if f.len() != 5 {
        return None;
    }
    let seconds = number(f[0])?;
    let in_flight = f[1].parse::<u64>().ok()?;
    let ops_per_s = number(f[2])?;
    let mib_per_s = number(f[3])?;
    Some(ParsedInterval {
        seconds,
        ops_per_s,
        in_flight: Some(in_flight),
        mib_per_s: Some(mib_per_s),
        // No sampled message in the second: "nan".
        mean_ns: number(f[4]).map(|ms| ms * 1e6),
        // Each client reactor's utilisation, the list ending in a comma.
        busy_pct: busy
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .filter_map(number)
            .collect(),
    })
}

/// `40.1393     -3.17785e+06 12413.5 8.37097` (the `-` stands for the
/// depth, and touches the IOPS when they are wide).
fn summary_line(t: &str) -> Option<[f64; 4]> {
    let (secs, rest) = t.split_once('-')?;
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(number)
        .collect::<Option<Vec<f64>>>()?;
    match f.as_slice() {
        [iops, mib, lat] => Some([number(secs)?, *iops, *mib, *lat]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From crimson-vs-async-messenger.md: Crimson, 28 clients, separated.
    const SEPARATED: &str = include_str!("fixtures/crimson-msgr-28-separated.txt");
    /// From the same report: the left 14-core instance's all() block.
    const LEFT_ALL: &str = include_str!("fixtures/crimson-msgr-left-14-separated-all.txt");

    #[test]
    fn per_second_lines_and_the_summary_of_the_report() {
        let p = parse(SEPARATED).unwrap();
        assert_eq!(p.intervals.len(), 10);
        assert_eq!(p.intervals[0].seconds, 1.00516);
        assert_eq!(p.intervals[0].ops_per_s, 3.17101e6);
        assert_eq!(p.intervals[0].mean_ns, Some(8.41057e6));
        // Every field of the line: depth and MB/s too (issue 48).
        assert_eq!(p.intervals[0].in_flight, Some(27043));
        assert_eq!(p.intervals[0].mib_per_s, Some(12386.7));
        assert_eq!(p.intervals[0].busy_pct.len(), 28);
        assert_eq!(p.intervals[9].ops_per_s, 3.16717e6);
        assert_eq!(p.seconds, Some(40.1393));
        assert_eq!(p.ops_per_s, Some(3.17785e6));
        assert_eq!(p.latency_ns["mean"], 8.37097e6);
        assert_eq!(p.figures["summary: MB/s (MiB/s)"], 12413.5);
        assert_eq!(
            p.ops,
            Some(crate::units::whole((3.17785e6f64 * 40.1393).round()))
        );
        assert!(p.method.iter().any(|m| m.contains("1-in-256")));
        assert_eq!(p.latency_ns.len(), 1, "a mean, no percentile");
    }

    #[test]
    fn the_all_block_of_the_report() {
        let p = parse(LEFT_ALL).unwrap();
        assert_eq!(p.ops, Some(120069445));
        assert_eq!(p.seconds, Some(60.212315));
        assert_eq!(p.ops_per_s, Some(1994101.163976));
        assert_eq!(p.connect_s, Some(0.001723));
        assert_eq!(p.latency_ns["mean"], 6.414321e6);
        assert_eq!(p.figures["depth"], 14336.0);
        assert_eq!(p.figures["out throughput (MB/s, i.e. MiB/s)"], 7789.457672);
        assert_eq!(
            p.bytes_out,
            Some(crate::units::whole(
                (7789.457672 * MIB * 60.212315f64).round()
            ))
        );
    }

    /// The per-second lines, the summary and the all() block together: the
    /// summary's every field is kept beside the block's (issue 48: its
    /// seconds were dropped).
    #[test]
    fn the_summary_beside_the_all_block_keeps_every_field() {
        let p = parse(&format!("{SEPARATED}\n{LEFT_ALL}")).unwrap();
        assert_eq!(p.figures["summary: seconds"], 40.1393);
        assert_eq!(p.figures["summary: IOPS"], 3.17785e6);
        assert_eq!(p.figures["summary: MB/s (MiB/s)"], 12413.5);
        assert_eq!(p.figures["summary: lat(ms)"], 8.37097);
        assert_eq!(
            p.seconds,
            Some(60.212315),
            "the block's time measures the run"
        );
        assert_eq!(p.intervals.len(), 10);
    }

    #[test]
    fn an_unfinished_or_foreign_output_is_an_error() {
        let cut: String = SEPARATED.lines().take(5).collect::<Vec<_>>().join("\n");
        assert!(parse(&cut).unwrap_err().contains("did not finish"));
        assert!(parse("hello\n").unwrap_err().contains("no per-second line"));
        let two = format!("{LEFT_ALL}\n{LEFT_ALL}");
        assert!(parse(&two).unwrap_err().contains("2 all(depth"));
    }
}
