//! Continuous TimeTrace logs cut into operations. A real RAMCloud or
//! PerfUtils log prints one line per event, operation after operation, with
//! no blank line between them (and other events between the operations).
//! An operation is cut out of the stream:
//! - by markers: from a line matching `begin` to the next line matching
//!   `end` (without `end`, to the line before the next `begin`);
//! - by an id captured from each line (`rpc (\d+)`): the lines with the
//!   same id, which may interleave with other operations' (a thread or a
//!   core field works the same way), cut again at `begin` when given;
//! - or, with neither, by the repeating cycle found in the stream: the
//!   begin and end events that explain the most lines with one shape (see
//!   [`detect`]), which the caller shows.
//!
//! Event names have their numbers replaced by `#` (`rpc 17 sent` and
//! `rpc 18 sent` are one event), so that ids do not make every operation a
//! shape of its own.

use super::op::Op;
use regex_lite::Regex;
use std::collections::BTreeMap;

/// One line of a TimeTrace log: its time (ns from the log's first line)
/// and its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub t_ns: f64,
    pub msg: String,
}

/// How a stream is cut into operations.
#[derive(Debug, Clone, Default)]
pub struct Split {
    pub begin: Option<Regex>,
    pub end: Option<Regex>,
    pub id: Option<Regex>,
}

impl Split {
    /// The rules of `--begin`, `--end` and `--id`, each a regular
    /// expression (or an error naming the flag).
    pub fn parse(
        begin: Option<&str>,
        end: Option<&str>,
        id: Option<&str>,
    ) -> Result<Split, String> {
        let regex = |flag: &str, v: Option<&str>| -> Result<Option<Regex>, String> {
            v.map(|p| {
                Regex::new(p).map_err(|e| format!("--{flag} {p}: not a regular expression: {e}"))
            })
            .transpose()
        };
        Ok(Split {
            begin: regex("begin", begin)?,
            end: regex("end", end)?,
            id: regex("id", id)?,
        })
    }

    /// Whether any rule was given (else the cycle is detected).
    pub fn is_given(&self) -> bool {
        self.begin.is_some() || self.end.is_some() || self.id.is_some()
    }
}

/// The begin and end events detection chose, and how many lines of the
/// stream the most common shape explains.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub begin: String,
    pub end: String,
    pub explained: usize,
    pub lines: usize,
    /// Other cycles it could have cut (an inner one: each RPC of an
    /// operation), most explaining first: begin, end, lines explained.
    pub others: Vec<(String, String, usize)>,
}

/// A regular expression that matches the lines of an event name (its `#`
/// any number), for `--begin` and `--end`.
pub fn regex_of(name: &str) -> String {
    let mut out = String::from("^");
    for c in name.chars() {
        match c {
            '#' => out.push_str(r"(0x[0-9a-fA-F]+|[0-9][0-9.]*)"),
            c if "\\.+*?()|[]{}^$".contains(c) => {
                out.push('\\');
                out.push(c);
            }
            // A control character as its escape: the expression is shown
            // on a terminal and pasted into a shell.
            c if c.is_control() => out.push_str(&format!("\\x{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('$');
    out
}

/// `msg` with every run of digits (and a `0x` hex number) as `#`.
pub fn event_name(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            if c == '0' && chars.peek() == Some(&'x') {
                chars.next();
                while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                    chars.next();
                }
            }
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

fn op_of(lines: &[&Line]) -> Op {
    let t0 = lines.first().map_or(0.0, |l| l.t_ns);
    Op {
        events: lines
            .iter()
            .map(|l| (event_name(&l.msg), l.t_ns - t0))
            .collect(),
    }
}

/// Operations by markers: `begin` opens one (closing an open one that has
/// no `end`), `end` closes it; lines outside an operation are left out.
fn by_markers(
    lines: &[Line],
    begin: &dyn Fn(&Line) -> bool,
    end: Option<&dyn Fn(&Line) -> bool>,
) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut cur: Vec<&Line> = Vec::new();
    let mut open = false;
    for l in lines {
        if begin(l) {
            if open && end.is_none() && !cur.is_empty() {
                ops.push(op_of(&cur));
            }
            cur.clear();
            open = true;
        }
        if !open {
            continue;
        }
        cur.push(l);
        if end.is_some_and(|e| e(l)) {
            ops.push(op_of(&cur));
            cur.clear();
            open = false;
        }
    }
    if open && end.is_none() && !cur.is_empty() {
        ops.push(op_of(&cur));
    }
    ops
}

/// Operations by an id captured from each line (its first group, or the
/// whole match); a line without one is left out. An id's lines are cut at
/// `begin`, else where the operation's first event comes again.
fn by_id(lines: &[Line], s: &Split, id: &Regex) -> Vec<Op> {
    let mut open: BTreeMap<String, Vec<&Line>> = BTreeMap::new();
    let mut done: Vec<(f64, Op)> = Vec::new();
    let close = |v: Vec<&Line>, done: &mut Vec<(f64, Op)>| {
        if let Some(first) = v.first() {
            done.push((first.t_ns, op_of(&v)));
        }
    };
    for l in lines {
        let Some(c) = id.captures(&l.msg) else {
            continue;
        };
        let key = c
            .get(1)
            .or_else(|| c.get(0))
            .map_or(String::new(), |m| m.as_str().to_string());
        let starts = match &s.begin {
            Some(b) => b.is_match(&l.msg),
            None => open
                .get(&key)
                .and_then(|v| v.first())
                .is_some_and(|f| event_name(&f.msg) == event_name(&l.msg)),
        };
        // An operation without its end is not complete: with --end, dropped.
        if starts
            && let Some(v) = open.remove(&key)
            && s.end.is_none()
        {
            close(v, &mut done);
        }
        if s.begin.is_some() && !starts && !open.contains_key(&key) {
            continue;
        }
        let v = open.entry(key.clone()).or_default();
        v.push(l);
        if s.end.as_ref().is_some_and(|e| e.is_match(&l.msg))
            && let Some(v) = open.remove(&key)
        {
            close(v, &mut done);
        }
    }
    if s.end.is_none() {
        for (_, v) in open {
            close(v, &mut done);
        }
    }
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    done.into_iter().map(|(_, op)| op).collect()
}

fn keyword(name: &str, words: &[&str]) -> bool {
    let l = name.to_lowercase();
    words
        .iter()
        .any(|w| l.split(|c: char| !c.is_alphanumeric()).any(|x| x == *w))
}

/// For operations from event `b` to event `e` (names as numbers): the
/// lines the most common shape explains, and its mean duration.
fn score(ids: &[u32], times: &[f64], b: u32, e: u32) -> (usize, f64) {
    let mut shapes: std::collections::HashMap<&[u32], (usize, f64)> =
        std::collections::HashMap::new();
    let mut start = None;
    for (i, &n) in ids.iter().enumerate() {
        if n == b {
            start = Some(i);
        }
        if n == e
            && let Some(s) = start.take()
        {
            let x = shapes.entry(&ids[s..=i]).or_default();
            x.0 += 1;
            x.1 += times[i] - times[s];
        }
    }
    shapes
        .iter()
        .map(|(k, (c, d))| (k.len() * c, d / *c as f64))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .unwrap_or((0, f64::INFINITY))
}

/// The repeating cycle of a stream: among the events that repeat, a
/// (begin, end) pair named like one ("Begin backup" .. "End backup") when
/// there is one; else the pair whose operations' most common shape
/// explains the most lines (the shorter operations among pairs within 1%
/// of it), then the outermost cycle around it: a pair whose begin comes
/// less often and whose operations last longer (an operation, not each of
/// its RPCs) and explain at least half as many lines. The other cycles are
/// named. None when no event repeats.
pub fn detect(lines: &[Line]) -> Option<Detected> {
    let mut names: Vec<String> = Vec::new();
    let mut index: BTreeMap<String, u32> = BTreeMap::new();
    let mut counts: Vec<usize> = Vec::new();
    let ids: Vec<u32> = lines
        .iter()
        .map(|l| {
            let n = event_name(&l.msg);
            let id = *index.entry(n.clone()).or_insert_with(|| {
                names.push(n);
                counts.push(0);
                u32::try_from(names.len() - 1).unwrap_or(u32::MAX)
            });
            counts[id as usize] += 1;
            id
        })
        .collect();
    let times: Vec<f64> = lines.iter().map(|l| l.t_ns).collect();
    let max = counts.iter().copied().max()?;
    // Events that repeat: a cycle's begin and end do, an outer cycle's
    // less often than an inner one's (an operation of 3 RPCs: a third).
    let mut cands: Vec<u32> = (0..names.len())
        .filter(|&i| counts[i] >= 2 && counts[i] * 8 >= max)
        .filter_map(|i| u32::try_from(i).ok())
        .collect();
    cands.sort_by(|a, b| counts[*b as usize].cmp(&counts[*a as usize]).then(a.cmp(b)));
    if cands.len() > 24 {
        // The most frequent, and the least frequent (an outer cycle's).
        let rare: Vec<u32> = cands[cands.len() - 8..].to_vec();
        cands.truncate(16);
        cands.extend(rare);
    }
    // Every pair: (lines its top shape explains, named like a cycle,
    // mean duration, begin, end).
    let mut pairs: Vec<(usize, bool, f64, u32, u32)> = Vec::new();
    for &b in &cands {
        for &e in &cands {
            if b == e {
                continue;
            }
            let (explained, mean) = score(&ids, &times, b, e);
            let named = keyword(&names[b as usize], &["begin", "start", "starting"])
                && keyword(
                    &names[e as usize],
                    &["end", "done", "complete", "completed", "finish", "finished"],
                );
            if explained > 0 {
                pairs.push((explained, named, mean, b, e));
            }
        }
    }
    let top = pairs.iter().map(|p| p.0).max()?;
    // A pair named like a cycle wins when it explains a fair share: a
    // rotation of the cycle can explain more lines with one shape by
    // leaving out an event that varies.
    let named: Vec<&(usize, bool, f64, u32, u32)> =
        pairs.iter().filter(|p| p.1 && p.0 * 4 >= top).collect();
    let outer_wanted = named.is_empty();
    let pool: Vec<&(usize, bool, f64, u32, u32)> = if named.is_empty() {
        pairs.iter().collect()
    } else {
        named
    };
    // The most explained; within 1% of it, the shorter operations (a pair
    // that straddles the gap between operations is longer).
    let most = pool.iter().map(|p| p.0).max()?;
    let mut best = pool
        .into_iter()
        .filter(|p| (most - p.0) * 100 <= most)
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .copied()?;
    // Then the cycle around it, while there is one: a pair whose begin
    // comes less often (once an operation, not once an RPC), whose
    // operations last longer (they hold the inner ones), explaining at
    // least half as many lines.
    if outer_wanted {
        while let Some(p) = pairs
            .iter()
            .filter(|p| p.0 * 2 >= top)
            .filter(|p| counts[p.3 as usize] < counts[best.3 as usize] && p.2 > best.2)
            .max_by(|a, b| a.0.cmp(&b.0).then(b.2.total_cmp(&a.2)))
        {
            best = *p;
        }
    }
    let fewest = counts[best.3 as usize];
    let best = Some(best);
    let (explained, _, _, b, e) = best?;
    // The other cycles: the best of each other frequency of begin.
    let mut others: Vec<(String, String, usize)> = Vec::new();
    let mut seen = vec![fewest];
    let mut rest: Vec<&(usize, bool, f64, u32, u32)> =
        pairs.iter().filter(|p| p.0 * 4 >= top).collect();
    rest.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.total_cmp(&b.2)));
    for p in rest {
        let c = counts[p.3 as usize];
        if seen.contains(&c) || others.len() == 3 {
            continue;
        }
        seen.push(c);
        others.push((
            names[p.3 as usize].clone(),
            names[p.4 as usize].clone(),
            p.0,
        ));
    }
    Some(Detected {
        begin: names[b as usize].clone(),
        end: names[e as usize].clone(),
        explained,
        lines: lines.len(),
        others,
    })
}

/// The operations of a stream, and what detection chose when no rule was
/// given.
pub fn split(lines: &[Line], s: &Split) -> (Vec<Op>, Option<Detected>) {
    if let Some(id) = &s.id {
        return (by_id(lines, s, id), None);
    }
    if let Some(b) = &s.begin {
        let end = s.end.clone();
        let ops = match &end {
            Some(e) => by_markers(
                lines,
                &|l: &Line| b.is_match(&l.msg),
                Some(&|l: &Line| e.is_match(&l.msg)),
            ),
            None => by_markers(lines, &|l: &Line| b.is_match(&l.msg), None),
        };
        return (ops, None);
    }
    if let Some(e) = &s.end {
        // An end alone: each operation runs from the line after the
        // previous end to this one.
        let mut ops = Vec::new();
        let mut cur: Vec<&Line> = Vec::new();
        for l in lines {
            cur.push(l);
            if e.is_match(&l.msg) {
                ops.push(op_of(&cur));
                cur.clear();
            }
        }
        return (ops, None);
    }
    match detect(lines) {
        Some(d) => {
            let ops = by_markers(
                lines,
                &|l: &Line| event_name(&l.msg) == d.begin,
                Some(&|l: &Line| event_name(&l.msg) == d.end),
            );
            (ops, Some(d))
        }
        None => (Vec::new(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{shapes, stats, timetrace_ops};

    /// What the generator made: the log, and per shape its operations'
    /// count and each event's mean delta.
    struct Made {
        text: String,
        count: [usize; 2],
        mean_delta: [Vec<f64>; 2],
    }

    /// A continuous TimeTrace log of `n` operations: shape 0 ("begin,
    /// sent, reply, end", 70%) and shape 1 ("begin, sent, retry, end"),
    /// deltas drawn from known ranges, 0-3 noise lines between operations,
    /// and, with `prefix`, a logger's prefix before every line.
    fn make(n: usize, prefix: bool) -> Made {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |lo: u64, hi: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + x % (hi - lo + 1)
        };
        let mut text = String::new();
        let (mut t, mut prev) = (0u64, 0u64);
        let mut count = [0; 2];
        let mut sums: [Vec<f64>; 2] = [vec![0.0; 4], vec![0.0; 4]];
        let line = |t: &mut u64, prev: &mut u64, d: u64, msg: &str, text: &mut String| {
            *t += d;
            let p = if prefix {
                "1417221018.620617331 TimeTrace.cc:196 in printInternal NOTICE[1]: "
            } else {
                ""
            };
            text.push_str(&format!(
                "{p}{:8.1} ns (+ {:6.1} ns): {msg}\n",
                *t as f64,
                (*t - *prev) as f64
            ));
            *prev = *t;
        };
        for id in 0..n {
            let shape = usize::from(rnd(0, 99) >= 70);
            count[shape] += 1;
            let d = [
                rnd(2000, 4000),
                rnd(100, 300),
                if shape == 0 {
                    rnd(500, 700)
                } else {
                    rnd(1000, 1400)
                },
                rnd(50, 150),
            ];
            let what = if shape == 0 { "reply" } else { "retry" };
            for (k, msg) in ["begin", "sent", what, "end"].iter().enumerate() {
                if k > 0 {
                    sums[shape][k] += d[k] as f64;
                }
                line(
                    &mut t,
                    &mut prev,
                    d[k],
                    &format!("rpc {id} {msg}"),
                    &mut text,
                );
            }
            for _ in 0..rnd(0, 3) {
                let noise = format!("timer {} fired", rnd(1, 9));
                line(&mut t, &mut prev, rnd(300, 900), &noise, &mut text);
            }
        }
        let mean_delta =
            [0, 1].map(|s| sums[s].iter().map(|v| v / count[s].max(1) as f64).collect());
        Made {
            text,
            count,
            mean_delta,
        }
    }

    fn check(made: &Made, split: &Split) -> Option<Detected> {
        let (ops, reading) = timetrace_ops(&made.text, split).unwrap();
        let sh = shapes(&ops);
        assert_eq!(
            sh.len(),
            2,
            "{:?}",
            sh.iter().map(|s| &s.0).collect::<Vec<_>>()
        );
        for (s, name) in [(0, "rpc # reply"), (1, "rpc # retry")] {
            let (names, of) = sh.iter().find(|x| x.0[2] == name).unwrap();
            assert_eq!(names, &["rpc # begin", "rpc # sent", name, "rpc # end"]);
            assert_eq!(of.len(), made.count[s], "{name}");
            for (k, e) in stats(of).iter().enumerate().skip(1) {
                let want = made.mean_delta[s][k];
                assert!(
                    (e.delta.mean / want - 1.0).abs() < 0.01,
                    "{name} event {k}: {} vs {want}",
                    e.delta.mean
                );
            }
        }
        assert!(reading.streamed);
        reading.detected
    }

    #[test]
    fn a_continuous_log_is_cut_by_markers_by_id_and_by_its_cycle() {
        let made = make(3000, false);
        assert!(made.count[0] > 1900 && made.count[1] > 800);
        let re = |p: &str| Some(Regex::new(p).unwrap());
        check(
            &made,
            &Split {
                begin: re(r"begin$"),
                end: re(r"end$"),
                id: None,
            },
        );
        check(
            &made,
            &Split {
                id: re(r"^rpc (\d+)"),
                ..Split::default()
            },
        );
        let d = check(&made, &Split::default()).expect("a cycle found");
        assert_eq!(
            (d.begin.as_str(), d.end.as_str()),
            ("rpc # begin", "rpc # end")
        );
        // A logger's prefix before each line changes nothing.
        let d = check(&make(500, true), &Split::default()).unwrap();
        assert_eq!(d.begin, "rpc # begin");
    }

    /// Without names to go by, the cycle is the pair that does not straddle
    /// the gap between operations.
    #[test]
    fn the_cycle_is_found_without_telling_names() {
        let made = make(400, false);
        let plain = made
            .text
            .replace(" begin\n", " alpha\n")
            .replace(" end\n", " omega\n");
        let lines: Vec<Line> = crate::timeline::timetrace_lines(&plain).unwrap().0.concat();
        let d = detect(&lines).unwrap();
        assert_eq!(
            (d.begin.as_str(), d.end.as_str()),
            ("rpc # alpha", "rpc # omega")
        );
    }

    /// Issue 36: a log of operations of three RPCs each (the RAMCloud
    /// master's backup: sync, then three write RPCs, then their replies) is
    /// cut into operations, not into RPCs; the RPC cycle is named as
    /// another, with the flags that select it.
    #[test]
    fn issue_36_the_outermost_cycle_is_cut_and_the_inner_one_named() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |lo: u64, hi: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + x % (hi - lo + 1)
        };
        let mut text = String::new();
        let mut t = 0u64;
        let mut line = |d: u64, msg: &str| {
            t += d;
            text.push_str(&format!(
                "{:10.1} ns (+ {:6.1} ns): {msg}\n",
                t as f64, d as f64
            ));
        };
        let rpc = [
            "Invoking Send 'write segment' RPC",
            "Invoking client.send()",
            "Acquired Dispatch::Lock",
            "Invoking postSendZeroCopy",
            "Completed postSendZeroCopy",
            "Completed Send 'write segment' RPC",
        ];
        let ops = 800;
        for _ in 0..ops {
            line(rnd(2000, 9000), "Invoking sync() to backups");
            for _ in 0..3 {
                for m in rpc {
                    line(rnd(20, 400), m);
                }
            }
            // The replies come back in any order a tenth of the time.
            let reaped = if rnd(0, 9) == 0 {
                "Reaped the second RPC"
            } else {
                "Reaped the first RPC"
            };
            line(rnd(500, 4000), reaped);
            line(rnd(200, 2000), "Reaped the last RPC");
            line(rnd(50, 100), "Completed sync() to backups");
            for _ in 0..rnd(0, 2) {
                line(rnd(300, 900), "poller idle");
            }
        }
        let lines: Vec<Line> = crate::timeline::timetrace_lines(&text).unwrap().0.concat();
        let d = detect(&lines).unwrap();
        assert_eq!(
            (d.begin.as_str(), d.end.as_str()),
            ("Invoking sync() to backups", "Completed sync() to backups"),
            "{d:?}"
        );
        let (b, e, _) = d
            .others
            .iter()
            .find(|o| o.0.starts_with("Invoking Send"))
            .unwrap_or_else(|| panic!("the RPC cycle among {:?}", d.others));
        assert_eq!(e, "Completed Send 'write segment' RPC");
        // Its flags select it.
        let split = Split {
            begin: Some(Regex::new(&regex_of(b)).unwrap()),
            end: Some(Regex::new(&regex_of(e)).unwrap()),
            id: None,
        };
        let (inner, _) = crate::timeline::timetrace_ops(&text, &split).unwrap();
        assert_eq!(inner.len(), 3 * ops);
        let (outer, _) = crate::timeline::timetrace_ops(&text, &Split::default()).unwrap();
        assert_eq!(outer.len(), ops);
        assert_eq!(
            regex_of("rpc # sent (x)"),
            r"^rpc (0x[0-9a-fA-F]+|[0-9][0-9.]*) sent \(x\)$"
        );
    }

    /// Operations that interleave (two in flight) come apart by their id.
    #[test]
    fn interleaved_operations_come_apart_by_id() {
        let text = "\
   0.0 ns (+   0.0 ns): rpc 1 begin
 100.0 ns (+ 100.0 ns): rpc 2 begin
 250.0 ns (+ 150.0 ns): rpc 1 end
 400.0 ns (+ 150.0 ns): core 3 idle
 500.0 ns (+ 100.0 ns): rpc 2 end
 600.0 ns (+ 100.0 ns): rpc 1 begin
 900.0 ns (+ 300.0 ns): rpc 1 end
";
        let s = Split {
            id: Some(Regex::new(r"rpc (\d+)").unwrap()),
            ..Split::default()
        };
        let (ops, _) = timetrace_ops(text, &s).unwrap();
        let ends: Vec<f64> = ops.iter().map(|o| o.events[1].1).collect();
        assert_eq!(ends, [250.0, 400.0, 300.0]);
        assert_eq!(event_name("rpc 0x1f at 12.5 us"), "rpc # at # us");
    }
}
