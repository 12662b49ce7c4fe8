//! Flamegraphs from `perf script` output (inferno): folded stacks, threads
//! of one kind merged into one stack on request (the messenger report's
//! "all reactors merged"), the SVG, and the differential flamegraph of two
//! profiles.

use inferno::collapse::Collapse;
use inferno::collapse::perf::Folder;
use std::collections::BTreeMap;
use std::io;

/// `perf script` text to folded stacks (`thread;frame;frame count`). With
/// `merge_threads`, thread names that differ only by their digits
/// (`wb-reactor-0`, `wb-reactor-1`) become one (`wb-reactor-N`).
pub fn fold(perf_script: &str, merge_threads: bool) -> io::Result<String> {
    let mut out = Vec::new();
    Folder::default().collapse(perf_script.as_bytes(), &mut out)?;
    let folded = String::from_utf8_lossy(&out).into_owned();
    if !merge_threads {
        return Ok(folded);
    }
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let count: u64 = count.parse().unwrap_or(0);
        let (thread, rest) = stack.split_once(';').unwrap_or((stack, ""));
        let mut name: String = thread.chars().filter(|c| !c.is_ascii_digit()).collect();
        if name.len() != thread.len() {
            name.push('N');
        }
        let key = if rest.is_empty() {
            name
        } else {
            format!("{name};{rest}")
        };
        *merged.entry(key).or_default() += count;
    }
    Ok(merged
        .into_iter()
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect())
}

/// The weight of folded stacks (cpu-clock: nanoseconds on CPU).
pub fn samples(folded: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

/// The flamegraph of folded stacks, as SVG.
pub fn flamegraph(folded: &str, title: &str) -> io::Result<String> {
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = "ns on CPU".into();
    opt.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, folded.lines(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The differential flamegraph of `after` against `before` (red: more
/// samples in `after`, blue: fewer), the first normalised to the second.
pub fn differential(before: &str, after: &str, title: &str) -> io::Result<String> {
    let mut diff = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    inferno::differential::from_readers(opt, before.as_bytes(), after.as_bytes(), &mut diff)?;
    flamegraph(&String::from_utf8_lossy(&diff), title)
}

/// Cycles and instructions per operation from `perf stat -x,` output, or
/// why they are unavailable.
pub fn cost_per_op(stat: &str, ops: u64) -> String {
    let mut parts = Vec::new();
    for event in ["cycles", "instructions"] {
        let line = stat.lines().find(|l| l.split(',').nth(2) == Some(event));
        match line.and_then(|l| l.split(',').next()) {
            Some(v) if v.trim().parse::<f64>().is_ok() && ops > 0 => {
                let n: f64 = v.trim().parse().unwrap_or(0.0);
                parts.push(format!("{:.0} {event}/op", n / ops as f64));
            }
            Some(v) => parts.push(format!(
                "{event}: unavailable (perf stat says {})",
                v.trim()
            )),
            None => parts.push(format!("{event}: unavailable (no perf stat reading)")),
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two samples of `perf script` output, two reactor threads.
    const SCRIPT: &str = "wb-reactor-0 100/101 [000] 1.000: 1001001 cpu-clock:
\t    55d0 handle_request+0x10 (/bin/wb)
\t    55c0 main+0x20 (/bin/wb)

wb-reactor-1 100/102 [001] 1.001: 1001001 cpu-clock:
\t    55d0 handle_request+0x10 (/bin/wb)
\t    55c0 main+0x20 (/bin/wb)

wb-reactor-1 100/102 [001] 1.002: 1001001 cpu-clock:
\t    55e0 parse+0x1 (/bin/wb)
\t    55c0 main+0x20 (/bin/wb)

";

    #[test]
    fn stacks_fold_and_threads_merge() {
        let f = fold(SCRIPT, false).unwrap();
        assert!(
            f.contains("wb-reactor-0;main;handle_request 1001001"),
            "{f}"
        );
        // Weighted by the cpu-clock period: nanoseconds on CPU.
        assert_eq!(samples(&f), 3 * 1001001);
        let m = fold(SCRIPT, true).unwrap();
        assert!(
            m.contains("wb-reactor-N;main;handle_request 2002002"),
            "{m}"
        );
        assert!(m.contains("wb-reactor-N;main;parse 1001001"), "{m}");
        let svg = flamegraph(&m, "server").unwrap();
        assert!(svg.contains("<svg") && svg.contains("handle_request"));
        let d = differential(&f, &m, "diff").unwrap();
        assert!(d.contains("<svg"));
    }

    #[test]
    fn counters_or_why_not() {
        let ok = "5000000,,cycles,100,100.00,,\n2500000,,instructions,100,100.00,,\n";
        assert_eq!(
            cost_per_op(ok, 1000),
            "5000 cycles/op, 2500 instructions/op"
        );
        let vm = "<not supported>,,cycles,0,100.00,,\n<not supported>,,instructions,0,100.00,,\n";
        assert!(
            cost_per_op(vm, 1000).contains("cycles: unavailable (perf stat says <not supported>)")
        );
    }
}
