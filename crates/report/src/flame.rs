//! Flamegraphs from `perf script` output (inferno): folded stacks, threads
//! of one kind merged into one stack on request (the messenger report's
//! "all reactors merged"), the SVG, and the differential flamegraph of two
//! profiles.

use inferno::collapse::Collapse;
use inferno::collapse::perf::Folder;
use std::collections::BTreeMap;
use std::io;
use wirebench_core::result::{AllocatorEntry, AllocatorShare};

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

/// The allocator's share of the samples of `perf script` output: a sample
/// counts when any user-space frame of its stack is in an allocator
/// library (jemalloc, tcmalloc, mimalloc: by the library, since Debian's
/// are stripped) or is an allocation function (malloc, free, operator
/// new/delete... in libc or the program). Kernel frames above it (page
/// faults) count with it. Each sample is entered under its outermost
/// allocator frame.
pub fn allocator_share(perf_script: &str) -> AllocatorShare {
    let mut total = 0u64;
    let mut hits = 0u64;
    let mut entries: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut frames: Vec<(&str, &str)> = Vec::new();
    let mut flush = |frames: &mut Vec<(&str, &str)>| {
        if frames.is_empty() {
            return;
        }
        total += 1;
        // Frames are listed leaf first: the outermost is the last found.
        if let Some((sym, lib)) = frames.iter().rev().find(|(s, l)| is_allocator(s, l)) {
            hits += 1;
            *entries
                .entry((
                    sym.to_string(),
                    lib.rsplit('/').next().unwrap_or(lib).to_string(),
                ))
                .or_default() += 1;
        }
        frames.clear();
    };
    for line in perf_script.lines() {
        if line.trim().is_empty() {
            flush(&mut frames);
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            flush(&mut frames);
            continue;
        }
        // "\t  7f12 malloc+0x12 (/usr/lib/x86_64-linux-gnu/libc.so.6)"
        let l = line.trim();
        let Some((rest, lib)) = l.rsplit_once(" (") else {
            continue;
        };
        let lib = lib.trim_end_matches(')');
        let sym = rest.split_once(' ').map_or("", |(_, s)| s);
        let sym = match sym.rfind("+0x") {
            Some(i) => &sym[..i],
            None => sym,
        };
        frames.push((sym, lib));
    }
    flush(&mut frames);
    let pct = |n: u64| {
        if total > 0 {
            100.0 * n as f64 / total as f64
        } else {
            0.0
        }
    };
    let mut top: Vec<AllocatorEntry> = entries
        .into_iter()
        .map(|((function, library), samples)| AllocatorEntry {
            function,
            library,
            samples,
            share_pct: pct(samples),
        })
        .collect();
    top.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    top.truncate(10);
    AllocatorShare {
        samples: hits,
        total_samples: total,
        share_pct: pct(hits),
        top,
    }
}

/// Whether a frame (symbol, library path) is the allocator's.
fn is_allocator(sym: &str, lib: &str) -> bool {
    if lib.contains("kernel.kallsyms") || lib.starts_with('[') {
        return false;
    }
    let file = lib.rsplit('/').next().unwrap_or(lib);
    if ["libjemalloc", "libtcmalloc", "libmimalloc"]
        .iter()
        .any(|a| file.starts_with(a))
    {
        return true;
    }
    const FUNCTIONS: [&str; 31] = [
        "malloc",
        "free",
        "calloc",
        "realloc",
        "reallocarray",
        "posix_memalign",
        "aligned_alloc",
        "memalign",
        "valloc",
        "pvalloc",
        "cfree",
        "__libc_malloc",
        "__libc_free",
        "__libc_calloc",
        "__libc_realloc",
        "__libc_memalign",
        "_int_malloc",
        "_int_free",
        "_int_realloc",
        "_int_memalign",
        "malloc_consolidate",
        "sysmalloc",
        "unlink_chunk",
        "tcache_init",
        "__rust_alloc",
        "__rust_dealloc",
        "__rust_realloc",
        "__rust_alloc_zeroed",
        "__rdl_alloc",
        "__rdl_dealloc",
        "__rdl_realloc",
    ];
    let name = sym.split('(').next().unwrap_or(sym).trim();
    FUNCTIONS.contains(&name)
        || name.starts_with("_int_free")
        || name.starts_with("operator new")
        || name.starts_with("operator delete")
        || ["_Znwm", "_Znam", "_ZdlPv", "_ZdaPv"]
            .iter()
            .any(|m| name.starts_with(m))
        || name.starts_with("je_")
        || name.starts_with("tc_")
        || name.starts_with("tcmalloc::")
        || name.starts_with("mi_")
}

/// The weight of folded stacks (cpu-clock: nanoseconds on CPU).
pub fn samples(folded: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

/// The flamegraph of folded stacks of time on CPU, as SVG.
pub fn flamegraph(folded: &str, title: &str) -> io::Result<String> {
    flamegraph_of(folded, title, "ns on CPU")
}

/// The flamegraph of folded stacks weighted in `count_name`, as SVG.
pub fn flamegraph_of(folded: &str, title: &str, count_name: &str) -> io::Result<String> {
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    if count_name.contains("off CPU") {
        // Waiting in blue, as off-CPU flamegraphs are drawn.
        opt.colors = inferno::flamegraph::color::Palette::Basic(
            inferno::flamegraph::color::BasicPalette::Io,
        );
    }
    opt.count_name = count_name.into();
    opt.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, folded.lines(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The differential flamegraph of `after` against `before` (red: more
/// samples in `after`, blue: fewer), the first normalised to the second.
/// The differential flamegraph of run `b` against run `a`: each a run's
/// directory (its `flame-server.folded`, or `flame-offcpu.folded` when
/// `off_cpu`) or a `.folded` file.
pub fn differential_of(
    a: &std::path::Path,
    b: &std::path::Path,
    off_cpu: bool,
) -> io::Result<String> {
    let folded = |p: &std::path::Path| {
        let f = match p.is_dir() {
            true if off_cpu => p.join("flame-offcpu.folded"),
            true => p.join("flame-server.folded"),
            false => p.to_path_buf(),
        };
        std::fs::read_to_string(&f)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", f.display())))
    };
    let title = format!("{} vs {}", b.display(), a.display());
    differential(&folded(a)?, &folded(b)?, &title)
}

pub fn differential(before: &str, after: &str, title: &str) -> io::Result<String> {
    let mut diff = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    inferno::differential::from_readers(opt, before.as_bytes(), after.as_bytes(), &mut diff)?;
    flamegraph_of(&String::from_utf8_lossy(&diff), title, "ns")
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

/// What `flame` made of a run's on-CPU profile: its files in the run's
/// directory (folded stacks, SVG, the cost per operation), the allocator's
/// share written into the result (saved again), and the lines it says.
/// None: perf recorded no samples of the server.
pub fn write_on_cpu(
    dir: &std::path::Path,
    script: &str,
    counters: &str,
    result: &mut wirebench_core::result::RunResult,
    merge_threads: bool,
) -> io::Result<Option<Vec<String>>> {
    let folded = fold(script, merge_threads)?;
    if folded.trim().is_empty() {
        return Ok(None);
    }
    std::fs::write(dir.join("flame-server.folded"), &folded)?;
    let title = format!(
        "server of {} ({})",
        result.run_id,
        result.spec.endpoint_label()
    );
    std::fs::write(dir.join("flame-server.svg"), flamegraph(&folded, &title)?)?;
    let alloc = allocator_share(script);
    result.summary.server_allocator = Some(alloc.clone());
    if let Some(root) = dir.parent() {
        wirebench_core::store::save(root, result).map_err(io::Error::other)?;
    }
    let top: Vec<String> = alloc
        .top
        .iter()
        .take(3)
        .map(|e| format!("{} in {} {:.1}%", e.function, e.library, e.share_pct))
        .collect();
    let cost = cost_per_op(counters, result.summary.ops);
    std::fs::write(dir.join("perf-stat.txt"), format!("{cost}\n"))?;
    let mut lines = run_summary(result, &dir.join("run.json"));
    lines.extend([
        format!(
            "allocator: {:.1}% of the server's samples{}",
            alloc.share_pct,
            if top.is_empty() {
                String::new()
            } else {
                format!(" ({})", top.join(", "))
            }
        ),
        format!("server cost per operation: {cost}"),
        format!(
            "flamegraph of the server: {} ({:.1} ms on CPU sampled); run result: {}",
            dir.join("flame-server.svg").display(),
            samples(&folded) as f64 / 1e6,
            dir.join("run.json").display()
        ),
    ]);
    Ok(Some(lines))
}

/// The run's summary as `run` prints it, a line each: what the profiled
/// load measured.
fn run_summary(result: &wirebench_core::result::RunResult, path: &std::path::Path) -> Vec<String> {
    let mut text = Vec::new();
    match crate::summary::print(&mut text, result, path) {
        Ok(()) => String::from_utf8_lossy(&text)
            .lines()
            .map(String::from)
            .collect(),
        Err(_) => vec![],
    }
}

/// What `flame --off-cpu` made of a recording: the folded stacks, their
/// flamegraph and `offcpu.json` in the run's directory, the lines it says
/// and a warning when off + on CPU is not the whole window. None: no
/// switch of the server's threads was recorded.
pub fn write_off_cpu(
    dir: &std::path::Path,
    script: impl io::BufRead,
    threads: &[crate::offcpu::Thread],
    window: crate::offcpu::Window,
    result: &wirebench_core::result::RunResult,
    merge_threads: bool,
) -> io::Result<Option<(Vec<String>, Option<String>)>> {
    let o = crate::offcpu::fold(script, threads, window, merge_threads)?;
    if o.switches_out == 0 && o.folded.trim().is_empty() {
        return Ok(None);
    }
    std::fs::write(dir.join("flame-offcpu.folded"), &o.folded)?;
    let title = format!(
        "server of {} ({}) off CPU",
        result.run_id,
        result.spec.endpoint_label()
    );
    std::fs::write(
        dir.join("flame-offcpu.svg"),
        flamegraph_of(&o.folded, &title, "ns off CPU")?,
    )?;
    let figures = serde_json::json!({
        "window_ns": o.window_ns,
        "threads": o.threads,
        "off_cpu_ns": o.off_cpu_ns,
        "on_cpu_ns": o.on_cpu_ns,
        "accounted": o.accounted(),
        "switches_out": o.switches_out,
        "preempted": o.preempted,
        "woken_seen": o.woken_seen,
        "woken_unseen": o.woken_unseen,
    });
    std::fs::write(
        dir.join("offcpu.json"),
        serde_json::to_string_pretty(&figures)? + "\n",
    )?;
    let s = |ns: u64| ns as f64 / 1e9;
    let mut lines = run_summary(result, &dir.join("run.json"));
    lines.extend([
        format!(
            "off CPU: {:.3} s over {} thread(s) in {:.3} s (on CPU {:.3} s by schedstat; off + on = {:.0}% of threads x wall), {} switches off a CPU ({} preempted), the waker seen for {} of {} wake-ups",
            s(o.off_cpu_ns),
            o.threads,
            s(o.window_ns),
            s(o.on_cpu_ns),
            100.0 * o.accounted(),
            o.switches_out,
            o.preempted,
            o.woken_seen,
            o.woken_seen + o.woken_unseen
        ),
        format!(
            "flamegraph of where the server waits: {}; run result: {}",
            dir.join("flame-offcpu.svg").display(),
            dir.join("run.json").display()
        ),
    ]);
    let warning = ((o.accounted() - 1.0).abs() > 0.1).then(|| format!(
        "off CPU + on CPU is {:.0}% of threads x wall, not 100%: threads that started during the window are not recorded, and perf may have lost events (see its messages above)",
        100.0 * o.accounted()
    ));
    Ok(Some((lines, warning)))
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
    fn the_allocator_share_counts_allocator_stacks_once_under_their_entry() {
        // Shapes as perf script prints them: a stripped jemalloc frame with
        // a page fault above it, libc's malloc called from the program, a
        // kernel kfree (not the program's allocator), and plain work.
        let script = "\
srv 10 1.000001:    1001001 cpu-clock: 
\tffffffff8160 handle_mm_fault+0xd0 ([kernel.kallsyms])
\t           3d210 [unknown] (/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)
\t           5000 handle_request+0x10 (/usr/bin/srv)

srv 10 1.000002:    1001001 cpu-clock: 
\t           a0 _int_malloc+0x40 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           b0 malloc+0x12 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           c0 operator new(unsigned long)+0x1c (/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30)
\t           5000 handle_request+0x10 (/usr/bin/srv)

srv 10 1.000003:    1001001 cpu-clock: 
\tffffffff8170 kfree+0x20 ([kernel.kallsyms])
\t           5100 __send+0x10 (/usr/lib/x86_64-linux-gnu/libc.so.6)

srv 10 1.000004:    1001001 cpu-clock: 
\t           5200 parse+0x10 (/usr/bin/srv)
";
        let a = allocator_share(script);
        assert_eq!((a.samples, a.total_samples), (2, 4));
        assert_eq!(a.share_pct, 50.0);
        let names: Vec<(&str, &str)> = a
            .top
            .iter()
            .map(|e| (e.function.as_str(), e.library.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("[unknown]", "libjemalloc.so.2"),
                ("operator new(unsigned long)", "libstdc++.so.6.0.30")
            ]
        );
        assert_eq!(allocator_share("").share_pct, 0.0);
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
