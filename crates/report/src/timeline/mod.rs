//! Timelines: the operations of a trace grouped by shape (the sequence of
//! their event names), and for the most common shape, per event, the
//! cumulative and delta times (min, mean, max, standard deviation), laid
//! out as in the RAMCloud timeline report; and each event's delta CDF.
//!
//! Inputs: wirebench-trace files (operations are the events carrying the
//! same id, from `begin` to `end`), or PerfUtils/RAMCloud TimeTrace text
//! (`  12.3 ns (+   4.5 ns): message`): blocks of lines separated by a
//! blank line, one operation each, or a continuous log cut into operations
//! by [`stream`].

mod op;
pub mod stream;

pub use op::Op;

use crate::export::Figure;
use std::collections::BTreeMap;

mod sinks;
mod stats;
pub use sinks::{SINKS, Sink, sinks_text, time_sinks};
pub use stats::{EventStats, Stat, format_tenths, stats, table};
use wirebench_core::units::format_ns;
use wirebench_trace::{BEGIN, END, Trace};

/// Operations of wirebench traces, merged by time (the files must come from
/// one machine: the time-stamp counter is shared by its processes). With
/// more than one trace, each event is named by its side (`client: begin`,
/// `server: reply sent`, from the file's `# side` line, or `trace N`).
pub fn ops_of_traces(traces: &[Trace]) -> Vec<Op> {
    // Per id: (time, which trace, name).
    let mut by_id: BTreeMap<u64, Vec<(f64, usize, &str)>> = BTreeMap::new();
    // One rate for all: the counter is the machine's, and each process's
    // own estimate differs a little, which on absolute tick counts (~1e13)
    // would shift whole traces by seconds.
    let rate = traces.first().map_or(1.0, |t| t.ticks_per_ns);
    for (i, t) in traces.iter().enumerate() {
        for e in &t.events {
            by_id
                .entry(e.arg)
                .or_default()
                .push((e.ticks as f64 / rate, i, &e.name));
        }
    }
    let sides: Vec<Option<String>> = traces
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (traces.len() > 1).then(|| t.side.clone().unwrap_or(format!("trace {}", i + 1)))
        })
        .collect();
    let mut ops = Vec::new();
    for (_, mut evs) in by_id {
        evs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let Some(b) = evs.iter().position(|e| e.2 == BEGIN) else {
            continue;
        };
        let Some(e) = evs.iter().rposition(|e| e.2 == END) else {
            continue;
        };
        if e <= b {
            continue;
        }
        let t0 = evs[b].0;
        ops.push(Op {
            events: evs[b..=e]
                .iter()
                .map(|&(t, i, n)| {
                    let name = match &sides[i] {
                        Some(side) => format!("{side}: {n}"),
                        None => n.to_string(),
                    };
                    (name, t - t0)
                })
                .collect(),
        });
    }
    ops
}

/// The lines of TimeTrace text (`  12.3 ns (+   4.5 ns): message`, ns, us
/// or ms, with any prefix a logger adds before it), in blocks separated by
/// blank lines, and how many other lines were skipped. An error when no
/// line reads.
pub fn timetrace_lines(text: &str) -> Result<(Vec<Vec<stream::Line>>, usize), String> {
    let re = regex_lite::Regex::new(
        r"([0-9]+(?:\.[0-9]*)?)\s*(ns|us|ms)\s*\(\+\s*[0-9]+(?:\.[0-9]*)?\s*(?:ns|us|ms)\s*\):\s?(.*)$",
    )
    .expect("a valid pattern");
    let mut blocks = Vec::new();
    let mut cur: Vec<stream::Line> = Vec::new();
    let (mut skipped, mut first_bad) = (0, None);
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                blocks.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let Some(c) = re.captures(line) else {
            skipped += 1;
            first_bad.get_or_insert_with(|| {
                (
                    no + 1,
                    wirebench_core::units::excerpt(line, wirebench_core::units::ECHO_MAX)
                        .into_owned(),
                )
            });
            continue;
        };
        let v: f64 = c[1].parse().unwrap_or(0.0);
        let k = match &c[2] {
            "us" => 1e3,
            "ms" => 1e6,
            _ => 1.0,
        };
        cur.push(stream::Line {
            t_ns: v * k,
            msg: c[3].trim().to_string(),
        });
    }
    if !cur.is_empty() {
        blocks.push(cur);
    }
    if blocks.is_empty() {
        return Err(match first_bad {
            Some((no, line)) => format!("line {no}: '{line}' is not 'T ns (+ D ns): message'"),
            None => "no events".into(),
        });
    }
    Ok((blocks, skipped))
}

/// Reads TimeTrace text whose blocks (separated by blank lines) are one
/// operation each.
pub fn parse_timetrace(text: &str) -> Result<Vec<Op>, String> {
    let (blocks, _) = timetrace_lines(text)?;
    Ok(blocks.iter().map(|b| op_of_block(b)).collect())
}

/// Lines taken as one operation, as written (times from its first line).
fn op_of_block(lines: &[stream::Line]) -> Op {
    let t0 = lines.first().map_or(0.0, |l| l.t_ns);
    Op {
        events: lines.iter().map(|l| (l.msg.clone(), l.t_ns - t0)).collect(),
    }
}

/// What reading TimeTrace text found: how the operations were cut, for
/// the reader.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// The cycle found in a continuous log (no rule given).
    pub detected: Option<stream::Detected>,
    /// Lines that were not TimeTrace events.
    pub skipped: usize,
    /// Operations cut from a continuous log (not blocks).
    pub streamed: bool,
    /// Events wirebench traces say their drain lost, per file.
    pub lost: Vec<(String, u64)>,
}

/// The operations of TimeTrace text: its blocks when it has several and no
/// rule is given; else the stream of its lines cut by `split` (or by the
/// cycle detected).
pub fn timetrace_ops(text: &str, split: &stream::Split) -> Result<(Vec<Op>, Reading), String> {
    let (blocks, skipped) = timetrace_lines(text)?;
    let mut reading = Reading {
        skipped,
        ..Reading::default()
    };
    if blocks.len() > 1 && !split.is_given() {
        return Ok((blocks.iter().map(|b| op_of_block(b)).collect(), reading));
    }
    let lines: Vec<stream::Line> = blocks.into_iter().flatten().collect();
    let (ops, detected) = stream::split(&lines, split);
    reading.streamed = true;
    reading.detected = detected;
    if ops.is_empty() && !split.is_given() {
        // Nothing repeats: the log is one operation.
        return Ok((vec![op_of_block(&lines)], reading));
    }
    Ok((ops, reading))
}

/// Shapes, most common first: (event names, operations of that shape).
pub fn shapes(ops: &[Op]) -> Vec<(Vec<String>, Vec<&Op>)> {
    let mut m: BTreeMap<Vec<String>, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        let key: Vec<String> = op.events.iter().map(|e| e.0.clone()).collect();
        m.entry(key).or_default().push(op);
    }
    let mut v: Vec<(Vec<String>, Vec<&Op>)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    v
}

/// About the most bytes the CDFs of one page (or report section) take:
/// past it, each CDF's points are thinned to quantiles and the count said.
pub const PAGE_BUDGET_BYTES: usize = 2_000_000;
/// About what one point of a CDF takes in SVG (its marker and hover).
const POINT_BYTES: usize = 250;
/// Each event's delta CDF as an SVG plot (the first event's too: its
/// delta is 0 in every operation, as the report's "quite boring" first
/// CDF), the time sinks marked (their mean as a line, their rank in the
/// title). The figures stay within about [`PAGE_BUDGET_BYTES`]: each CDF
/// keeps at most its share of points, taken at even quantiles, and says so.
pub fn cdfs(events: &[EventStats]) -> Vec<Figure> {
    use crate::plot::{Axis, Series, lines};
    let sinks = time_sinks(events);
    let per_cdf = (PAGE_BUDGET_BYTES / (events.len().max(1) * POINT_BYTES)).max(50);
    events
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let mut d = e.deltas.clone();
            d.sort_by(|a, b| a.total_cmp(b));
            let n = d.len();
            let keep: Vec<usize> = if n <= per_cdf {
                (0..n).collect()
            } else {
                // Even quantiles, the first and the last among them.
                let mut v: Vec<usize> = (0..per_cdf).map(|i| i * (n - 1) / (per_cdf - 1)).collect();
                v.dedup();
                v
            };
            // A log axis, but for an event always under a ns (the first
            // one's 0): its deltas drawn where they are, not clamped to 1 ns.
            let log = d.last().is_some_and(|v| *v >= 1.0);
            let floor = if log { 1.0 } else { f64::MIN };
            let points = keep
                .iter()
                .map(|&i| (d[i].max(floor), (i + 1) as f64 / n as f64))
                .collect();
            let mut series = vec![Series {
                name: String::new(),
                points,
            }];
            let mut title = format!("{k}. {}", e.name);
            if k == 0 {
                title.push_str(" (the first event: 0 since the operation's start)");
            }
            if let Some(rank) = sinks.iter().position(|s| s.events.contains(&k)) {
                let sink = &sinks[rank];
                let of = match sink.events.len() {
                    1 => String::new(),
                    n => format!(
                        ", {} of {n}",
                        1 + sink.events.iter().position(|x| *x == k).unwrap_or(0)
                    ),
                };
                title.push_str(&format!(
                    " [time sink {}{of}: {:.0}% of the operation]",
                    rank + 1,
                    100.0 * sink.share
                ));
                series[0].name = "CDF".into();
                series.push(Series {
                    name: format!("mean {}", format_tenths(e.delta.mean)),
                    points: vec![(e.delta.mean.max(1.0), 0.0), (e.delta.mean.max(1.0), 1.0)],
                });
            }
            if keep.len() < n {
                title.push_str(&format!(" ({} of {n} points)", keep.len()));
            }
            Figure {
                svg: lines(
                    &title,
                    if log {
                        Axis::log("time since the previous event", format_ns)
                    } else {
                        Axis::linear("time since the previous event", format_ns)
                    },
                    Axis::linear("fraction of operations", |v| format!("{v:.2}")),
                    &series,
                ),
                title,
            }
        })
        .collect()
}

/// What reading the traces said: events lost in a drain, lines skipped,
/// the cycle found in a continuous log and the others it could take.
pub fn reading_text(reading: &Reading) -> String {
    use wirebench_core::units::{ECHO_MAX, excerpt};
    let mut out = String::new();
    for (file, n) in &reading.lost {
        out += &format!(
            "warning: {file}: its drain lost {n} event(s): operations that miss them are left out or fall into other shapes\n"
        );
    }
    if reading.skipped > 0 {
        out += &format!(
            "{} line(s) that are not TimeTrace events skipped\n",
            reading.skipped
        );
    }
    if let Some(d) = &reading.detected {
        out += &format!(
            "a continuous log: operations cut from '{}' to '{}', the repeating cycle found (its most common shape is {} of its {} lines; --begin/--end/--id choose otherwise)\n",
            excerpt(&d.begin, ECHO_MAX),
            excerpt(&d.end, ECHO_MAX),
            d.explained,
            d.lines
        );
        for (b, e, n) in &d.others {
            out += &format!("  another cycle ({n} lines): {}\n", cycle_flags(b, e));
        }
    }
    out
}

/// `--begin REGEX --end REGEX` of a cycle, quoted for a shell, whole (a
/// cut expression would choose another cycle); too long to show: said so.
pub fn cycle_flags(begin: &str, end: &str) -> String {
    const LONGEST: usize = 400;
    let quoted = |name: &str| shlex::try_quote(&stream::regex_of(name)).map(|q| q.into_owned());
    match (quoted(begin), quoted(end)) {
        (Ok(b), Ok(e)) if b.len() + e.len() <= LONGEST => format!("--begin {b} --end {e}"),
        _ => "its events' names are too long to give as --begin/--end here: choose it with --id"
            .into(),
    }
}

/// The operations' shapes, the five most common with their walk.
pub fn shapes_text(ops: usize, shapes: &[(Vec<String>, Vec<&Op>)]) -> String {
    let mut out = format!("{ops} operation(s) in {} shape(s):\n", shapes.len());
    for (i, (names, of)) in shapes.iter().enumerate().take(5) {
        let walk = names.join(" > ");
        let walk = if walk.chars().count() > 160 {
            format!("{}...", walk.chars().take(157).collect::<String>())
        } else {
            walk
        };
        out += &format!(
            "  shape {}: {} operation(s), {} events: {walk}\n",
            i + 1,
            of.len(),
            names.len()
        );
    }
    out
}

/// The trace files `paths` name: a traced run's directory stands for its
/// trace-client.txt and trace-server.txt. The bool: a directory was given
/// (its traces are merged by time).
pub fn trace_files(
    paths: &[std::path::PathBuf],
) -> Result<(Vec<std::path::PathBuf>, bool), String> {
    let (mut files, mut dirs) = (Vec::new(), false);
    for f in paths {
        if !f.is_dir() {
            files.push(f.clone());
            continue;
        }
        let found: Vec<_> = ["trace-client.txt", "trace-server.txt"]
            .iter()
            .map(|n| f.join(n))
            .filter(|p| p.exists())
            .collect();
        if found.is_empty() {
            return Err(format!(
                "{}: a directory without trace-client.txt or trace-server.txt (a run made with --trace has them)",
                f.display()
            ));
        }
        dirs = true;
        files.extend(found);
    }
    Ok((files, dirs))
}

/// The operations of trace files: wirebench's (each file's events; several
/// are merged by time) or PerfUtils / RAMCloud TimeTrace text. The error
/// names the file.
pub fn ops_of_files(
    files: &[std::path::PathBuf],
    split: &stream::Split,
) -> Result<(Vec<Op>, Reading), String> {
    let mut traces = Vec::new();
    let mut ops = Vec::new();
    let mut reading = Reading::default();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        if text.starts_with("# wirebench-trace") {
            let t = wirebench_trace::parse(&text).map_err(|e| format!("{}: {e}", f.display()))?;
            if let Some(n) = t.lost.filter(|&n| n > 0) {
                reading.lost.push((f.display().to_string(), n));
            }
            traces.push(t);
        } else {
            let (o, r) = timetrace_ops(&text, split).map_err(|e| {
                format!(
                    "{}: neither a wirebench trace nor TimeTrace text: {e}",
                    f.display()
                )
            })?;
            ops.extend(o);
            reading.skipped += r.skipped;
            reading.streamed |= r.streamed;
            reading.detected = reading.detected.or(r.detected);
        }
    }
    ops.extend(ops_of_traces(&traces));
    Ok((ops, reading))
}

/// The HTML page of a timeline: the table of shape `shape` (of `shapes`,
/// over `n` operations), its time sinks and each event's CDF.
pub fn page(
    shape: usize,
    shapes: usize,
    n: usize,
    table: &str,
    sinks: &str,
    figures: Vec<Figure>,
) -> String {
    use crate::export::{Block, Document, Exporter, HtmlExporter};
    let doc = Document::new("wirebench timeline")
        .text(format!("Shape {shape} of {shapes}: {n} operation(s)."))
        .push(Block::Pre(table.to_string()))
        .push(Block::Pre(sinks.to_string()))
        .push(Block::Figures(figures));
    HtmlExporter.export(&doc)
}

/// The timelines of traced runs (`trace-*.txt` in their directories: a
/// run directory, or a directory of them), as report sections: the most
/// common shape's table and its CDFs.
pub fn sections_of_runs(paths: &[std::path::PathBuf]) -> Vec<crate::report::Section> {
    let mut dirs = Vec::new();
    for p in paths {
        if p.join("run.json").is_file() {
            dirs.push(p.clone());
        } else if let Ok(rd) = std::fs::read_dir(p) {
            let mut v: Vec<std::path::PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|d| d.join("run.json").is_file())
                .collect();
            v.sort();
            dirs.extend(v);
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        for side in ["client", "server"] {
            let Ok(text) = std::fs::read_to_string(d.join(format!("trace-{side}.txt"))) else {
                continue;
            };
            let Ok(t) = wirebench_trace::parse(&text) else {
                continue;
            };
            let ops = ops_of_traces(&[t]);
            let shapes = shapes(&ops);
            let Some((_, chosen)) = shapes.first() else {
                continue;
            };
            let st = stats(chosen);
            out.push(crate::report::Section {
                title: format!(
                    "Timeline of the {side} ({}): {} same-shape operations",
                    d.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    chosen.len()
                ),
                text: format!("{}\n{}", table(&st), sinks_text(&st)),
                figures: cdfs(&st),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_trace::Event;

    /// Issue 48: the hint of another cycle pastes into a shell as it is:
    /// the shell gives back both expressions whole (an apostrophe in a
    /// log line broke the quoting; a long one was cut), and no control
    /// character reaches the terminal.
    #[test]
    fn issue_48_a_cycles_hint_pastes_into_a_shell_as_it_is() {
        let (b, e) = ("it's #\u{1b}[31m red", "done # (all)");
        let flags = cycle_flags(b, e);
        assert!(!flags.chars().any(char::is_control), "{flags:?}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {flags}"))
            .output()
            .expect("sh runs");
        let args: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(
            args,
            [
                "--begin",
                &stream::regex_of(b),
                "--end",
                &stream::regex_of(e)
            ]
        );
        // The expression still matches the line it came from.
        let re = regex_lite::Regex::new(&stream::regex_of(b)).unwrap();
        assert!(re.is_match("it's 42\u{1b}[31m red"));
        // Too long to paste whole: said so, never cut.
        let long = "x".repeat(500);
        assert!(cycle_flags(&long, e).contains("--id"));
    }

    fn trace(events: &[(u64, u64, &str)]) -> Trace {
        Trace {
            ticks_per_ns: 2.0,
            side: None,
            lost: None,
            threads: vec![],
            events: events
                .iter()
                .map(|&(ticks, arg, name)| Event {
                    thread: 1,
                    ticks,
                    arg,
                    name: name.into(),
                })
                .collect(),
        }
    }

    #[test]
    fn shapes_and_statistics_on_known_deltas() {
        // Ten operations "begin, parsed (+100 ns), sent (+300 or +500 ns), end (+50 ns)",
        // and one of another shape. Ticks are 2 per ns.
        let mut evs = Vec::new();
        for id in 0..10u64 {
            let t = id * 100_000;
            let sent = if id % 2 == 0 { 300 } else { 500 };
            evs.push((t, id, BEGIN));
            evs.push((t + 200, id, "parsed"));
            evs.push((t + 200 + 2 * sent, id, "sent"));
            evs.push((t + 300 + 2 * sent, id, END));
        }
        evs.extend([
            (5_000_000, 99, BEGIN),
            (5_000_100, 99, END),
            (6_000_000, 7777, "orphan"),
        ]);
        let ops = ops_of_traces(&[trace(&evs)]);
        assert_eq!(ops.len(), 11);
        let sh = shapes(&ops);
        assert_eq!(sh[0].1.len(), 10);
        assert_eq!(sh[0].0, vec!["begin", "parsed", "sent", "end"]);
        let st = stats(&sh[0].1);
        assert_eq!(st[1].delta.mean, 100.0);
        assert_eq!(
            (st[2].delta.min, st[2].delta.mean, st[2].delta.max),
            (300.0, 400.0, 500.0)
        );
        assert_eq!(st[2].delta.sd, 100.0);
        assert_eq!(st[3].cumulative.mean, 100.0 + 400.0 + 50.0);
        let t = table(&st);
        assert!(t.contains("] sent"), "{t}");
        assert!(t.contains("400.0 ns"), "{t}");
        assert!(t.contains("(   0.0 ns   0.0 ns   0.0 ns )"), "{t}");
        // Every event has its CDF, the first one's included.
        let c = cdfs(&st);
        assert_eq!(c.len(), 4);
        assert!(
            c[0].title.starts_with("0. begin (the first event"),
            "{}",
            c[0].title
        );
        // Its deltas, all 0, drawn at 0 (a linear axis from 0), not
        // clamped to the log axis's 1 ns; the others on a log axis.
        let ticks = |svg: &str| -> Vec<String> {
            svg.split("<text")
                .skip(1)
                .filter_map(|t| t.split('>').nth(1)?.split('<').next())
                .map(|t| t.trim().to_string())
                .filter(|t| t.ends_with("ns") && !t.contains(' '))
                .collect()
        };
        assert_eq!(ticks(&c[0].svg), ["0ns", "1ns"], "{}", c[0].svg);
        assert!(!ticks(&c[2].svg).contains(&"0ns".to_string()));
    }

    /// A sink is an event by name: its repeats are summed (the RAMCloud
    /// report's "3 x ~300ns"), ranked by the sum, and every occurrence's
    /// CDF is marked.
    #[test]
    fn issue_48_a_repeated_event_is_one_sink_its_deltas_summed() {
        // begin, then 3 x (lock +300, send +100), then end +500: the lock
        // is 900 of 1700 ns, the sends 300, the end 500.
        let mut text = String::new();
        for op in 0..20 {
            let mut t = 0.0;
            let mut line = |d: f64, m: &str| {
                t += d;
                text.push_str(&format!("{t:.1} ns (+ {d:.1} ns): {m}\n"));
            };
            line(0.0, "begin");
            for _ in 0..3 {
                line(if op % 2 == 0 { 250.0 } else { 350.0 }, "lock");
                line(100.0, "send");
            }
            line(500.0, "end");
            text.push('\n');
        }
        let ops = parse_timetrace(&text).unwrap();
        let sh = shapes(&ops);
        let st = stats(&sh[0].1);
        let sinks = time_sinks(&st);
        let names: Vec<&str> = sinks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["lock", "end", "send"]);
        assert_eq!(sinks[0].events, [1, 3, 5]);
        assert!((sinks[0].total - 900.0).abs() < 1e-6, "{sinks:?}");
        assert!((sinks[0].share - 900.0 / 1700.0).abs() < 1e-9, "{sinks:?}");
        let text = sinks_text(&st);
        assert!(
            text.contains("1. lock (events 1, 3, 5): 3 x ~300.0 ns = 900.0 ns since their previous events, 53% of the operation"),
            "{text}"
        );
        assert!(
            text.contains("2. end (event 7): 500.0 ns since the previous event"),
            "{text}"
        );
        let titles: Vec<String> = cdfs(&st).into_iter().map(|f| f.title).collect();
        assert!(
            titles[3].contains("[time sink 1, 2 of 3: 53% of the operation]"),
            "{titles:?}"
        );
    }

    #[test]
    fn timetrace_text_is_read() {
        let text = "     0.0 ns (+   0.0 ns): Invoking sync() to backups\n\
                       90.0 ns (+  90.0 ns): Invoking Send RPC\n\
                      1.5 us (+   1.4 us): Completed sync()\n\
                    \n\
                     10.0 ns (+   0.0 ns): Invoking sync() to backups\n\
                    110.0 ns (+ 100.0 ns): Invoking Send RPC\n\
                      2.0 us (+   1.9 us): Completed sync()\n";
        let ops = parse_timetrace(text).unwrap();
        assert_eq!(ops.len(), 2);
        let sh = shapes(&ops);
        assert_eq!(sh.len(), 1);
        let st = stats(&sh[0].1);
        assert_eq!(st[1].delta.mean, 95.0);
        assert_eq!(st[2].cumulative.max, 1990.0);
        assert!(parse_timetrace("garbage").is_err());
    }
}
