//! Issue 36: every reference report, reproduced end to end. Each spec of
//! `specs/reports/` runs at its small scale (`sweep --scale small`), then
//! `wirebench report` draws it; each test checks the figures and tables
//! `docs/reproducing.md` lists for its report: their series, axes and
//! units (not pixels).

use crate::helpers::*;
use std::path::{Path, PathBuf};

/// A spec of specs/reports/ run at its small scale, and its report.
pub(crate) struct Reproduced {
    _dir: TempDir,
    /// The experiment's directory.
    pub(crate) exp: PathBuf,
    /// The report's Markdown.
    md: String,
    /// Each figure's texts, its title first.
    figures: Vec<Vec<String>>,
}

pub(crate) fn reproduce(name: &str) -> Reproduced {
    let dir = TempDir::new(&format!("reports-{name}"));
    let spec = format!(
        "{}/../../specs/reports/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let results = dir.path().join("results");
    let err = sweep_ok(Path::new(&spec), &results, &["--scale", "small"]);
    assert!(err.contains("run(s) complete"), "{err}");
    let exp = results.join(format!("{name}-small"));
    let (md, figures) = report_ok(&exp, &dir.path().join("report.html"), &[]);
    Reproduced {
        _dir: dir,
        exp,
        md,
        figures,
    }
}

impl Reproduced {
    /// The figure whose title holds `title`, its texts.
    pub(crate) fn figure(&self, title: &str) -> &[String] {
        figure(&self.figures, title)
    }

    /// The rows of the Markdown table under heading `heading`, as cells.
    pub(crate) fn table(&self, heading: &str) -> Vec<Vec<String>> {
        let section = self
            .md
            .split(&format!("## {heading}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {heading}: {}", self.md));
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .map(|c| c.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .map(|mut v| {
                v.remove(0);
                v.pop();
                v
            })
            .collect()
    }
}

pub(crate) fn has(texts: &[String], t: &str) -> bool {
    texts.iter().any(|x| x == t)
}

/// The S3 report: the TTFB table (mean, p99), the throughput table with the
/// R/W ratio, and the histogram of every test's TTFB.
#[test]
fn s3_report() {
    let _g = shared();
    let r = reproduce("s3");
    let summary = r.table("Summary");
    let head = &summary[0];
    let mean = head
        .iter()
        .position(|h| h == "TTFB mean")
        .expect("TTFB mean");
    assert_eq!(head[mean + 1], "TTFB p99");
    let rw = r.table("Read and write");
    assert_eq!(
        rw[0],
        [
            "size",
            "connections",
            "read ops/s",
            "read MiB/s",
            "write ops/s",
            "write MiB/s",
            "R/W ratio"
        ]
    );
    assert_eq!(rw.len(), 2 + 6, "3 sizes x 2 client counts: {rw:?}");
    for row in &rw[2..] {
        let ratio: f64 = row[6].parse().unwrap_or_else(|_| panic!("{row:?}"));
        assert!(ratio > 0.0, "{row:?}");
    }
    let f = r.figure("Time to first byte, 12 tests");
    assert!(
        has(f, "time to first byte") && has(f, "% of requests"),
        "{f:?}"
    );
    assert!(f.iter().any(|t| t.contains("mode=get")), "{f:?}");
    assert!(f.iter().any(|t| t.contains("mode=put")), "{f:?}");
}

/// The RAMCloud timeline report's method: the table per event (cumulative
/// and delta, min/mean/max, standard deviation), the time sinks, and each
/// event's CDF.
#[test]
fn timeline_report() {
    let _g = shared();
    let r = reproduce("timeline");
    assert!(r.md.contains("Timeline of the client"), "{}", r.md);
    assert!(
        r.md.contains("(         Cumulative           )  |               Delta"),
        "{}",
        r.md
    );
    assert!(
        r.md.contains("Time sinks (the largest mean deltas"),
        "{}",
        r.md
    );
    let f = r.figure("[time sink 1:");
    assert!(
        has(f, "time since the previous event") && has(f, "fraction of operations"),
        "{f:?}"
    );
    assert!(
        f.iter().any(|t| t.starts_with("mean ")),
        "its mean marked: {f:?}"
    );
}

/// The Crimson update's client figures: fio's IOPS and latency (mean and
/// p99) per test, read and write, 4 KiB and 64 KiB.
#[test]
fn osd_report() {
    let _g = shared();
    if !Path::new("/usr/bin/fio").exists() {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_EXEC").is_none(),
            "fio is not installed"
        );
        eprintln!("skipped: fio is not installed");
        return;
    }
    let r = reproduce("osd");
    let f = r.figure("Throughput vs size");
    assert!(
        has(f, "client=randread") && has(f, "client=randwrite"),
        "{f:?}"
    );
    assert!(
        has(f, "4KiB") && has(f, "64KiB") && has(f, "ops/s"),
        "{f:?}"
    );
    let f = r.figure("Latency-response");
    assert!(f.iter().any(|t| t.ends_with(" p99")), "{f:?}");
}
