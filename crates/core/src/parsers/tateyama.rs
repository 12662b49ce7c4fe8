//! Tsurugi's IPC benchmarks (tateyama): one CSV line each.
//! - reqres_loop: `sessions,mt|mp,sync|async|nores,msg_len,nloop,elapsed_s,messages_per_s,GB/s`
//!   (its documentation lists no `nloop` column; its real output has one,
//!   and both are read);
//! - data_channel_write: `sessions,mt|mp,msg_len,nloop,elapsed_s,messages_per_s,GB/s`.
//!
//! The time runs from the server being ready until every client is done,
//! to the microsecond; a request and its response count as two messages;
//! "GB/s" is GiB/s. No latency is measured.

use super::parsed::{OutputParser, Parsed, number};

/// Tsurugi's reqres_loop.
pub struct Reqres;

impl OutputParser for Reqres {
    fn name(&self) -> &'static str {
        "tateyama-reqres"
    }
    fn reads(&self) -> &'static str {
        "Tsurugi's reqres_loop: one CSV line"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse_reqres(stdout)
    }
}

/// Tsurugi's data_channel_write.
pub struct Datachannel;

impl OutputParser for Datachannel {
    fn name(&self) -> &'static str {
        "tateyama-datachannel"
    }
    fn reads(&self) -> &'static str {
        "Tsurugi's data_channel_write: one CSV line"
    }
    fn parse(&self, _: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse_datachannel(stdout)
    }
}

const ELAPSED: &str = "seconds: from the server ready until every client finished (the program's clock, 1 us resolution); no latency is measured";

/// One CSV line of `columns` fields whose `kind` field is one of `kinds`.
fn csv_line<'a>(
    out: &'a str,
    columns: &[usize],
    kinds: &[&str],
    at: usize,
) -> Option<Vec<&'a str>> {
    out.lines()
        .map(|l| l.trim().split(',').map(str::trim).collect::<Vec<&str>>())
        .rfind(|f| {
            columns.contains(&f.len())
                && f[0].parse::<u64>().is_ok()
                && ["mt", "mp"].contains(&f[1])
                && (kinds.is_empty() || kinds.contains(&f[at]))
        })
}

fn count(f: &str, what: &str) -> Result<u64, String> {
    f.parse().map_err(|_| format!("'{f}' is not a {what}"))
}

/// reqres_loop's line.
pub fn parse_reqres(out: &str) -> Result<Parsed, String> {
    let f = csv_line(out, &[7, 8], &["sync", "async", "nores"], 2).ok_or(
        "no reqres_loop result line (sessions,mt|mp,sync|async|nores,msg_len,[nloop,]seconds,messages/s,GB/s) in the output",
    )?;
    let sessions = count(f[0], "session count")?;
    let mode = f[2];
    let len = count(f[3], "message size")?;
    let nloop = (f.len() == 8)
        .then(|| count(f[4], "loop count"))
        .transpose()?;
    let tail = &f[f.len() - 3..];
    let secs = number(tail[0]).ok_or_else(|| format!("'{}' is not a time", tail[0]))?;
    let msgs_per_s = number(tail[1]).ok_or_else(|| format!("'{}' is not a rate", tail[1]))?;
    let gib_per_s = number(tail[2]).ok_or_else(|| format!("'{}' is not a rate", tail[2]))?;
    let mut p = Parsed::default();
    p.figure("sessions", sessions as f64);
    p.figure("message size (bytes)", len as f64);
    p.figure("elapsed (s)", secs);
    p.figure("messages/s", msgs_per_s);
    p.figure("GB/s (GiB/s)", gib_per_s);
    p.words.insert("clients".into(), f[1].into());
    p.words.insert("mode".into(), mode.into());
    let per_op = if mode == "nores" { 1 } else { 2 };
    p.ops = Some(match nloop {
        Some(n) => {
            p.figure("nloop", n as f64);
            sessions * n
        }
        None => crate::units::whole((msgs_per_s * secs / per_op as f64).round()),
    });
    p.seconds = Some(secs);
    // The program's rate is from its unrounded time.
    p.ops_per_s = Some(msgs_per_s / per_op as f64);
    let ops = p.ops.expect("set");
    p.bytes_out = Some(ops * len);
    if mode != "nores" {
        p.bytes_in = Some(ops * len);
    }
    p.method = vec![
        ELAPSED.into(),
        format!(
            "operations: {} ({mode}: {}), sessions x nloop; messages/s as printed counts {}",
            if mode == "nores" {
                "requests"
            } else {
                "round trips"
            },
            if mode == "nores" {
                "no response"
            } else {
                "a request and its response"
            },
            if mode == "nores" {
                "requests"
            } else {
                "both directions"
            }
        ),
    ];
    p.complete("reqres_loop")
}

/// data_channel_write's line.
pub fn parse_datachannel(out: &str) -> Result<Parsed, String> {
    let f = csv_line(out, &[6, 7], &[], 0).ok_or(
        "no data_channel_write result line (sessions,mt|mp,msg_len,[nloop,]seconds,messages/s,GB/s) in the output",
    )?;
    let sessions = count(f[0], "session count")?;
    let len = count(f[2], "message size")?;
    let nloop = (f.len() == 7)
        .then(|| count(f[3], "loop count"))
        .transpose()?;
    let tail = &f[f.len() - 3..];
    let secs = number(tail[0]).ok_or_else(|| format!("'{}' is not a time", tail[0]))?;
    let msgs_per_s = number(tail[1]).ok_or_else(|| format!("'{}' is not a rate", tail[1]))?;
    let gib_per_s = number(tail[2]).ok_or_else(|| format!("'{}' is not a rate", tail[2]))?;
    let mut p = Parsed::default();
    p.figure("sessions", sessions as f64);
    p.figure("message size (bytes)", len as f64);
    p.figure("elapsed (s)", secs);
    p.figure("messages/s", msgs_per_s);
    p.figure("GB/s (GiB/s)", gib_per_s);
    p.words.insert("clients".into(), f[1].into());
    p.ops = Some(match nloop {
        Some(n) => {
            p.figure("nloop", n as f64);
            sessions * n
        }
        None => crate::units::whole((msgs_per_s * secs).round()),
    });
    // The program's rate is from its unrounded time.
    p.ops_per_s = Some(msgs_per_s);
    p.seconds = Some(secs);
    p.bytes_in = Some(p.ops.expect("set") * len);
    p.method = vec![
        ELAPSED.into(),
        "operations: messages the server sent and the clients received (sessions x nloop); the rate is the program's".into(),
    ];
    p.complete("data_channel_write")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reqres_loop_of_the_report() {
        let p = parse_reqres(include_str!("fixtures/tateyama-reqres-mt4.txt")).unwrap();
        assert_eq!(p.ops, Some(400_000));
        assert_eq!(p.seconds, Some(0.507651));
        assert_eq!(p.ops_per_s, Some(1575884.389323 / 2.0));
        assert_eq!(p.figures["messages/s"], 1575884.389323);
        assert_eq!(p.figures["GB/s (GiB/s)"], 0.19);
        assert_eq!(
            (p.bytes_out, p.bytes_in),
            (Some(51_200_000), Some(51_200_000))
        );
        assert!(p.latency_ns.is_empty());
        // Its printed time, to the microsecond, agrees with its rate.
        assert!((400_000.0 / 0.507651 / p.ops_per_s.unwrap() - 1.0).abs() < 2e-6);
    }

    #[test]
    fn reqres_loop_as_documented_and_nores() {
        let p = parse_reqres("8,mp,nores,1024,1.5,200000,0.19\n").unwrap();
        assert_eq!(p.ops, Some(300_000));
        assert_eq!(p.bytes_in, None);
        assert!(parse_reqres("4,mt,1024,1000000,0.556,7192080.3,6.86").is_err());
    }

    #[test]
    fn data_channel_write_of_the_report() {
        let p = parse_datachannel(include_str!("fixtures/tateyama-datachannel-mt4.txt")).unwrap();
        assert_eq!(p.ops, Some(4_000_000));
        assert_eq!(p.seconds, Some(0.556));
        assert_eq!(p.ops_per_s, Some(7192080.3));
        assert_eq!(p.bytes_in, Some(4_096_000_000));
        assert_eq!(p.figures["GB/s (GiB/s)"], 6.86);
    }
}
