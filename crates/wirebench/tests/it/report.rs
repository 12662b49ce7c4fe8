//! Reports and comparisons end to end: real runs, `compare` on them, and the
//! HTML report opened in headless Chromium (installed by .ci/run).

use crate::helpers::*;
use std::path::Path;
use std::time::Duration;

pub(crate) fn run_into(dir: &Path, args: &[&str]) {
    let mut all = vec![
        "run",
        "--results",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "--duration",
        "2s",
        "--warmup",
        "200ms",
    ];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
}

#[test]
fn the_html_report_opens_in_a_browser_with_every_plot() {
    let _g = shared();
    let dir = TempDir::new("report");
    let runs = dir.path().join("runs");
    run_into(&runs, &["--clients", "1"]);
    run_into(&runs, &["--clients", "2"]);
    let page = dir.path().join("report.html");
    let html = report_page(&[runs.to_str().unwrap()], &page);
    let md = std::fs::read_to_string(page.with_extension("md")).unwrap();
    assert!(
        md.contains("## What it found")
            && md.contains("## Summary")
            && md.contains("## Environment"),
        "{md}"
    );
    // The Markdown's figures are SVG files beside it, each linked.
    let fig_dir = dir.path().join("report-figures");
    let mut svgs: Vec<String> = std::fs::read_dir(&fig_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    svgs.sort();
    assert_eq!(svgs.len(), 8, "{svgs:?}");
    assert_eq!(svgs[0], "01-throughput-vs-clients.svg");
    for f in &svgs {
        assert!(
            md.contains(&format!("](report-figures/{f})")),
            "{f} unlinked: {md}"
        );
    }
    let figures = html.matches("<figure").count();
    // Throughput vs clients, ops/s per server core used, latency-response,
    // percentiles, per-second throughput and p99, and a CPU heatmap per run.
    assert_eq!(figures, 8, "figures in the page");

    if std::env::var_os("WIREBENCH_SKIP_BROWSER").is_some() {
        crate::helpers::skip("WIREBENCH_SKIP_BROWSER is set: the page is not opened in a browser");
        return;
    }
    let chromium = "/usr/bin/chromium";
    assert!(
        Path::new(chromium).exists(),
        "Debian's chromium is needed (apt-get install chromium; .ci/run installs it), or set WIREBENCH_SKIP_BROWSER=1"
    );
    let profile = TempDir::new("chromium-profile");
    // The screenshot is kept for a person to look at.
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-test");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("report.png");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", page.display());
    let dom = std::process::Command::new(chromium)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.str()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs");
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let err = String::from_utf8_lossy(&dom.stderr);
    assert!(
        !err.contains("CONSOLE") && !err.contains("Uncaught"),
        "console messages: {err}"
    );
    // Every plot is in the rendered page and draws something.
    let dom = String::from_utf8_lossy(&dom.stdout);
    let plots: Vec<&str> = dom.split("<figure").skip(1).collect();
    assert_eq!(plots.len(), 8);
    for f in plots {
        assert!(f.contains("<svg"), "a figure without its plot");
        assert!(
            f.contains("<polyline") || f.contains("<rect"),
            "an empty plot: {}",
            &f[..200.min(f.len())]
        );
    }
    let out = std::process::Command::new(chromium)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.str()))
        .args([
            "--window-size=1280,3000",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}

/// `wirebench report PATHS -o PAGE`, which must succeed: the page.
pub(crate) fn report_page(paths: &[&str], page: &Path) -> String {
    let mut args = vec!["report"];
    args.extend_from_slice(paths);
    args.extend(["-o", page.to_str().unwrap()]);
    let mut p = Proc::spawn(&args);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    std::fs::read_to_string(page).unwrap()
}

/// `wirebench timeline ARGS`' standard output.
pub(crate) fn timeline(args: &[&str]) -> String {
    let mut all = vec!["timeline"];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    p.stdout_all()
}

/// The words of the last row of a timeline's table for `event`.
pub(crate) fn row(out: &str, event: &str) -> Vec<String> {
    let line = out
        .lines()
        .rfind(|l| l.ends_with(&format!("] {event}")))
        .unwrap_or_else(|| panic!("no '{event}' row: {out}"));
    let mut words: Vec<String> = Vec::new();
    for w in line
        .split(['(', ')', '|', '[', ']'])
        .flat_map(str::split_whitespace)
    {
        // A value and its unit (`90.0 ns`) are one word.
        match words.last_mut() {
            Some(last) if ["ns", "us", "ms", "s"].contains(&w) => last.push_str(w),
            _ => words.push(w.to_string()),
        }
    }
    words
}

/// An event's mean cumulative time in a timeline's table, in ns.
pub(crate) fn cumulative_mean_ns(out: &str, event: &str) -> f64 {
    let cum_mean = &row(out, event)[1];
    wirebench_core::units::parse_duration(cum_mean)
        .unwrap()
        .as_nanos() as f64
}

/// Why perf cannot sample here (None: it can).
pub(crate) fn perf_cannot_sample() -> Option<String> {
    let probe = std::env::temp_dir().join(format!("wb-it-perf-{}.data", std::process::id()));
    let out = std::process::Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(&probe)
        .args(["--", "true"])
        .output();
    let _ = std::fs::remove_file(&probe);
    match out {
        Err(e) => Some(format!("perf is missing: {e}")),
        Ok(o) if !o.status.success() => Some(String::from_utf8_lossy(&o.stderr).into_owned()),
        Ok(_) => None,
    }
}

/// `wirebench flame --off-cpu ARGS`: the run's directory and its figures
/// (offcpu.json).
pub(crate) fn flame_off_cpu(
    dir: &TempDir,
    args: &[&str],
) -> (std::path::PathBuf, serde_json::Value) {
    let mut all = vec![
        "flame",
        "--off-cpu",
        "--duration",
        "2s",
        "--warmup",
        "300ms",
        "--results",
        dir.str(),
        "--format",
        "json",
    ];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    assert!(
        p.wait(Duration::from_secs(180)).success(),
        "{args:?}: {}",
        p.stderr_all()
    );
    let out = p.stdout_all();
    let line = out
        .lines()
        .find(|l| l.starts_with("flamegraph of where the server waits: "))
        .unwrap_or_else(|| panic!("{args:?}: {out}"));
    let svg = Path::new(line.split(' ').nth(6).unwrap().trim_end_matches(';')).to_path_buf();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let run = svg.parent().unwrap().to_path_buf();
    let figures =
        serde_json::from_str(&std::fs::read_to_string(run.join("offcpu.json")).unwrap()).unwrap();
    (run, figures)
}

/// Why the scheduler's tracepoints cannot be recorded here (None: they can).
pub(crate) fn sched_tracepoints_missing() -> Option<String> {
    let probe = std::env::temp_dir().join(format!("wb-it-sched-{}.data", std::process::id()));
    let out = std::process::Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-e",
            "sched:sched_stat_runtime",
        ])
        .arg("-o")
        .arg(&probe)
        .args(["--", "true"])
        .output();
    let _ = std::fs::remove_file(&probe);
    match out {
        Err(e) => Some(format!("perf is missing: {e}")),
        Ok(o) if !o.status.success() => Some(String::from_utf8_lossy(&o.stderr).into_owned()),
        Ok(_) => None,
    }
}

/// Issue 21: a continuous TimeTrace log (one line per event, no blank line
/// between operations, other events between them, a logger's prefix) is
/// cut into operations by the cycle found, by --begin/--end and by --id;
/// a bad pattern is refused naming its flag.
#[test]
fn a_continuous_timetrace_log_is_cut_into_operations() {
    let _g = shared();
    let dir = TempDir::new("timetrace");
    let log = dir.path().join("backup.log");
    let mut text = String::new();
    let mut t = 0.0f64;
    for id in 0..300 {
        let third = if id % 4 == 0 {
            "Retry write RPC"
        } else {
            "Third write RPC sent out"
        };
        for (d, msg) in [
            (2500.0, format!("Begin backup {id}")),
            (1800.0, format!("First write RPC sent out {id}")),
            (1400.0, format!("Second write RPC sent out {id}")),
            (1200.0, format!("{third} {id}")),
            (6400.0, format!("End backup {id}")),
            (900.0, "Dispatch poll".to_string()),
        ] {
            t += d;
            text.push_str(&format!(
                "1417221018.6 TimeTrace.cc:196 NOTICE: {t:9.1} ns (+ {d:7.1} ns): {msg}\n"
            ));
        }
    }
    std::fs::write(&log, text).unwrap();
    let timeline = |args: &[&str]| {
        let mut all = vec!["timeline", log.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(60));
        (st, p.stdout_all(), p.stderr_all())
    };
    let (st, out, err) = timeline(&[]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains("operations cut from 'Begin backup #' to 'End backup #'"),
        "{out}"
    );
    assert!(out.contains("300 operation(s) in 2 shape(s)"), "{out}");
    assert!(out.contains("shape 1: 225 operation(s), 5 events"), "{out}");
    assert!(out.contains("shape 2: 75 operation(s), 5 events"), "{out}");
    // The most common shape's end: 1.8 + 1.4 + 1.2 + 6.4 us after its begin.
    assert!(out.contains("10.8 us"), "{out}");
    let (st, out, err) = timeline(&["--begin", "^Begin", "--end", "^End", "--shape", "2"]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains("shape 2, averaged over 75 same-shape timelines"),
        "{out}"
    );
    assert!(out.contains("] Retry write RPC #"), "{out}");
    let (st, out, err) = timeline(&["--id", r"(\d+)$"]);
    assert!(st.success(), "{err}");
    assert!(out.contains("300 operation(s) in 2 shape(s)"), "{out}");
    let (st, _, err) = timeline(&["--begin", "("]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("--begin ("), "{err}");
}

#[test]
fn flamegraphs_of_two_runs_and_their_difference() {
    // Beside other tests: it asserts what was made, not how fast.
    let _g = shared();
    if let Some(why) = perf_cannot_sample() {
        crate::helpers::skip(format!(
            "perf cannot sample on this machine ({why}); .ci/run installs linux-perf"
        ));
        return;
    }
    let dir = TempDir::new("flame");
    let mut runs = Vec::new();
    for arch in ["reactor", "pool"] {
        let mut p = Proc::spawn(&[
            "flame",
            "--arch",
            arch,
            "--merge-threads",
            "--duration",
            "2s",
            "--warmup",
            "300ms",
            "--results",
            dir.str(),
            "--format",
            "json",
        ]);
        assert!(
            p.wait(Duration::from_secs(120)).success(),
            "{}",
            p.stderr_all()
        );
        let out = p.stdout_all();
        assert!(out.contains("server cost per operation:"), "{out}");
        // Issue 48: what the profiled load measured, as `run` says it.
        assert!(
            out.contains("-------------- summary --------------") && out.contains("ops/s:"),
            "{out}"
        );
        let svg_line = out
            .lines()
            .find(|l| l.starts_with("flamegraph of the server: "))
            .unwrap();
        let svg = Path::new(svg_line.split(' ').nth(4).unwrap()).to_path_buf();
        let folded = std::fs::read_to_string(svg.with_file_name("flame-server.folded")).unwrap();
        // The server's stacks are there: its threads, named as wirebench names them.
        assert!(folded.lines().count() > 5, "{folded}");
        assert!(folded.contains("wb-"), "no wirebench thread in:\n{folded}");
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
        runs.push(svg.parent().unwrap().to_path_buf());
    }
    let diff = dir.path().join("diff.svg");
    let mut d = Proc::spawn(&[
        "flame",
        "--diff",
        runs[0].to_str().unwrap(),
        runs[1].to_str().unwrap(),
        "-o",
        diff.to_str().unwrap(),
    ]);
    assert!(
        d.wait(Duration::from_secs(30)).success(),
        "{}",
        d.stderr_all()
    );
    assert!(std::fs::read_to_string(&diff).unwrap().contains("<svg"));
}
