//! A report of runs: the summary and environment tables, the hints, and the
//! plots of the reports wirebench grew from, as a self-contained HTML page
//! (inline SVG, no script, nothing fetched) and as Markdown (the tables).

use crate::export::{Block, Document, Exporter, HtmlExporter, MarkdownExporter, Table};
use crate::hints;
use crate::plot::{self, Axis, Series};
use std::collections::BTreeMap;
use wirebench_core::hist::{self, LatencyHist};
use wirebench_core::result::RunResult;
use wirebench_core::units::{format_ns, format_rate};
use wirebench_core::vars;

mod figures;

/// Latency against the rate asked over a ramp's points (its bands and its
/// constant stages), the knee a vertical line.
fn ramp_figure(r: &RunResult, v: &wirebench_core::ramp::RampVerdict) -> crate::export::Figure {
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for s in r.stages.iter().filter(|s| s.conns.is_none()) {
        let points: Vec<(f64, u64, u64)> = if s.bands.is_empty() {
            vec![(s.asked_per_s, s.latency.p50_ns, s.latency.p99_ns)]
        } else {
            s.bands
                .iter()
                .map(|b| (b.asked_per_s, b.latency.p50_ns, b.latency.p99_ns))
                .collect()
        };
        for (x, a, b) in points {
            p50.push((x, a as f64));
            p99.push((x, b as f64));
        }
    }
    let mut series = vec![
        Series {
            name: "p50".into(),
            points: p50,
        },
        Series {
            name: "p99".into(),
            points: p99.clone(),
        },
    ];
    if let Some(k) = &v.knee {
        let (lo, hi) = p99
            .iter()
            .chain(&series[0].points)
            .map(|p| p.1)
            .filter(|y| *y > 0.0)
            .fold((f64::MAX, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
        series.push(Series {
            name: format!("knee {}", format_rate(k.rate_per_s)),
            points: vec![(k.rate_per_s, lo), (k.rate_per_s, hi)],
        });
    }
    let title = format!("Latency vs rate asked over the ramp [{}]", r.run_id);
    crate::export::Figure {
        svg: plot::lines(
            &title,
            Axis::linear("rate asked (ops/s)", format_rate),
            Axis::log("latency", format_ns),
            &series,
        ),
        title,
    }
}
mod names;
mod tables;

pub use self::figures::figures;
use names::*;
pub use names::{NUMERIC, VARIABLES, check_layout, variable, variables};
use tables::*;

/// What to plot throughput against, and what makes a line.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// None: the first of [`NUMERIC`] that varies.
    pub x: Option<String>,
    /// None: every other variable that varies, but those the x decides
    /// (the connections of a sweep over clients).
    pub series: Option<Vec<String>>,
    /// Run id to a label that names its line instead (compare's variants).
    pub labels: BTreeMap<String, String>,
    /// One throughput plot per value of this variable, on shared axes
    /// (small multiples). None: by placement when the lines would
    /// otherwise be split by placement and something else.
    pub panel: Option<String>,
}

pub use crate::export::Figure;

/// The hints as (what, evidence) items, or a line saying there are none.
/// A hint that several runs share is one item naming them (by what varies
/// between them), with the first one's evidence.
fn hints_block(runs: &[RunResult]) -> Block {
    let all: Vec<&RunResult> = runs.iter().collect();
    let vary = varying(&all);
    let shown = Shown::of(&all);
    let l = Layout::default();
    let mut grouped: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut add = |text: String, who: Option<String>, evidence: String| match grouped
        .iter_mut()
        .find(|(t, _, _)| *t == text)
    {
        Some((_, names, _)) => names.extend(who.filter(|w| !names.contains(w))),
        None => grouped.push((text, who.into_iter().collect(), evidence)),
    };
    for r in runs {
        for h in hints::of_run(r) {
            add(h.text, Some(run_name(r, &l, &vary, &shown)), h.evidence);
        }
    }
    for h in hints::of_set(runs) {
        add(h.text, h.run_id, h.evidence);
    }
    if grouped.is_empty() {
        return Block::Text(
            "None: no client- or server-bound run, no busy machine, no server imbalance, no contention, no p99 far above p50."
                .into(),
        );
    }
    Block::List(
        grouped
            .into_iter()
            .map(|(text, names, evidence)| {
                let about = match names.len() {
                    0 => String::new(),
                    1 => format!(" ({})", names[0]),
                    n if n == runs.len() => format!(" (all {n} runs)"),
                    n => format!(" ({n} runs: {})", names.join("; ")),
                };
                let evidence = if names.len() > 1 {
                    format!("{evidence} (the first; the others alike)")
                } else {
                    evidence
                };
                (format!("{text}{about}"), evidence)
            })
            .collect(),
    )
}

/// One paragraph: how many runs, what varied and over which values, what
/// was the same in all.
fn what_varied(runs: &[RunResult]) -> String {
    let all: Vec<&RunResult> = runs.iter().collect();
    let failed = runs
        .iter()
        .filter(|r| r.status.state != wirebench_core::result::RunState::Complete)
        .count();
    let mut text = format!("{} run(s)", runs.len());
    if failed > 0 {
        text.push_str(&format!(", {failed} not complete"));
    }
    let vary = varying(&all);
    let shown = Shown::of(&all);
    if vary.is_empty() {
        text.push_str(", with the same parameters.");
    } else {
        let parts: Vec<String> = vary
            .iter()
            .map(|v| {
                let vals = values_of(&all, v);
                let vals: Vec<String> = if v == "size" {
                    vals.iter().map(|x| size_text(x)).collect()
                } else {
                    vals.into_iter().map(|x| shown.name(v, x)).collect()
                };
                // A list of sizes is one value: quoted among the others.
                let vals: Vec<String> = vals
                    .into_iter()
                    .map(|x| {
                        if x.contains(',') {
                            format!("\"{x}\"")
                        } else {
                            x
                        }
                    })
                    .collect();
                format!("{} ({})", vars::label(v), vals.join(", "))
            })
            .collect();
        text.push_str(&format!(". Varied: {}.", parts.join("; ")));
    }
    let same: Vec<String> = ["transport", "mode", "size", "clients", "placement"]
        .iter()
        .filter(|v| !vary.iter().any(|x| x == *v))
        .filter_map(|v| {
            let vals = values_of(&all, v);
            let one = vals.first()?;
            Some(match *v {
                "size" => format!("size {}", size_text(one)),
                "clients" => format!("{one} client(s)"),
                _ => format!("{v} {one}"),
            })
        })
        .collect();
    if !same.is_empty() {
        text.push_str(&format!(" The same in all: {}.", same.join(", ")));
    }
    text
}

/// The best throughput and the best p99 among the runs, each named by
/// what varies; one run's figures when there is one.
fn best_of(runs: &[RunResult]) -> Vec<(String, String)> {
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    let l = Layout::default();
    let shown = Shown::of(&ok);
    let name = |r: &RunResult| run_name(r, &l, &vary, &shown);
    let lat = |r: &RunResult| {
        let s = &r.summary;
        ["p50", "p99"]
            .iter()
            .filter(|st| s.latency.count > 0 && s.has_latency(st))
            .map(|st| {
                let v = if *st == "p50" {
                    s.latency.p50_ns
                } else {
                    s.latency.p99_ns
                };
                format!("{st} {}", format_ns(v as f64))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(top) = ok
        .iter()
        .max_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s))
    else {
        return vec![(
            "Nothing measured".into(),
            "no run completed an operation".into(),
        )];
    };
    let with_lat = |r: &RunResult| {
        let l = lat(r);
        if l.is_empty() {
            String::new()
        } else {
            format!(", {l}")
        }
    };
    if ok.len() == 1 {
        return vec![(
            "Throughput".into(),
            format!(
                "{} ops/s{}",
                format_rate(top.summary.ops_per_s),
                with_lat(top)
            ),
        )];
    }
    let mut out = vec![(
        "Highest throughput".into(),
        format!(
            "{} ops/s{} ({})",
            format_rate(top.summary.ops_per_s),
            with_lat(top),
            name(top)
        ),
    )];
    if let Some(low) = ok
        .iter()
        .filter(|r| r.summary.latency.count > 0 && r.summary.has_latency("p99"))
        .min_by_key(|r| r.summary.latency.p99_ns)
    {
        out.push((
            "Lowest p99".into(),
            format!(
                "{} at {} ops/s ({})",
                format_ns(low.summary.latency.p99_ns as f64),
                format_rate(low.summary.ops_per_s),
                name(low)
            ),
        ));
    }
    if let Some(bottom) = ok
        .iter()
        .min_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s))
        .filter(|b| b.run_id != top.run_id)
    {
        out.push((
            "Lowest throughput".into(),
            format!(
                "{} ops/s{} ({})",
                format_rate(bottom.summary.ops_per_s),
                with_lat(bottom),
                name(bottom)
            ),
        ));
    }
    out
}

/// A section added after the figures: a timeline of a traced run, say.
pub struct Section {
    pub title: String,
    /// Preformatted text (a table in fixed-width columns).
    pub text: String,
    pub figures: Vec<Figure>,
}

/// The report: the summary, the size x connections table, the hints, the
/// figures, the sections, the environment.
pub fn document(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> Document {
    // What it found first: what varied, the best figures, the headline
    // plot, the hints; the details after.
    // The throughput plot, or its panels.
    let headline: Vec<usize> = figures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.title.starts_with("Throughput vs"))
        .map(|(i, _)| i)
        .collect();
    let mut d = Document::new(format!("wirebench report: {} run(s)", runs.len()))
        .heading("What it found")
        .text(what_varied(runs))
        .push(Block::List(best_of(runs)));
    if !headline.is_empty() {
        d = d.push(Block::Figures(
            headline.iter().map(|&i| figures[i].clone()).collect(),
        ));
    }
    let rest: Vec<Figure> = figures
        .iter()
        .enumerate()
        .filter(|(i, _)| !headline.contains(i))
        .map(|(_, f)| f.clone())
        .collect();
    let mut summary = summary_table(runs);
    // What every run shares is said once, not in a column each.
    let shared = if runs.len() > 1 {
        summary.drop_constant(
            &[
                "transport",
                "mode",
                "size",
                "clients",
                "conns/client",
                "placement",
            ],
            |row| !row.first().is_some_and(|c| c.starts_with('↳')),
        )
    } else {
        Vec::new()
    };
    let mut d = d
        .heading("Hints")
        .push(hints_block(runs))
        .heading("Summary");
    if shared.iter().any(|(_, v)| v != "-") {
        let parts: Vec<String> = shared
            .iter()
            .filter(|(_, v)| v != "-")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        d = d.text(format!(
            "Every run has {}: not repeated in the table.",
            parts.join(", ")
        ));
    }
    let mut d = d.table(summary);
    for (title, t) in size_by_clients(runs) {
        d = d.heading(title).table(t);
    }
    if let Some(t) = read_write_table(runs) {
        d = d
            .heading("Read and write")
            .text(
                "Reads (GET) and writes (PUT) by size and connections, each the best run's; R/W ratio: read MiB/s over write MiB/s, how much faster reads are (the S3 report's).",
            )
            .table(t);
    }
    if let Some(t) = server_table(runs) {
        d = d.heading("Server").table(t);
    }
    if let Some(t) = endpoints_table(runs) {
        d = d.heading("Endpoints").table(t);
    }
    if let Some(t) = stages_table(runs) {
        d = d
            .heading("Stages")
            .text("Each stage of an open loop in stages: the rate it asked, the rates sent and completed, its latency, and the requests still due at its end (behind: sent more than 2% below the rate asked); a ramp's seconds in bands under it.")
            .table(t);
        for r in runs {
            if let Some(v) = &r.ramp {
                let lines: Vec<(String, String)> = crate::summary::ramp_lines(v)
                    .into_iter()
                    .map(|l| {
                        let (k, rest) = l.split_once(':').unwrap_or(("", &l));
                        (k.trim().to_string(), rest.trim().to_string())
                    })
                    .collect();
                d = d
                    .push(Block::List(lines))
                    .push(Block::Figures(vec![ramp_figure(r, v)]));
            }
        }
    }
    if let Some(t) = instances_table(runs) {
        d = d
            .heading("Instances")
            .text(
                "Each instance of a point that ran several side by side; kept: its ops/s side by side over its ops/s alone (the same cpusets and clients, the others idle), where the sweep ran each alone (alone = true): within 5% no contention, below 85% contention.",
            )
            .table(t);
    }
    if let Some(t) = agents_table(runs) {
        d = d.heading("Load agents").table(t);
    }
    if let Some(t) = program_table(runs) {
        d = d.heading("Programs (exec): their own figures").table(t);
    }
    if !rest.is_empty() {
        d = d.heading("Figures").push(Block::Figures(rest));
    }
    for sec in sections {
        d = d
            .heading(sec.title.clone())
            .push(Block::Pre(sec.text.clone()))
            .push(Block::Figures(sec.figures.clone()));
    }
    d.heading("Environment").table(env_table(runs))
}

/// The report in Markdown (its figures listed by title).
pub fn markdown(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> String {
    MarkdownExporter.export(&document(runs, figures, sections))
}

/// The report in Markdown with its figures as SVG files in `dir` (as the
/// page links it): the page, and each figure's (file name, SVG).
pub fn markdown_with_figures(
    runs: &[RunResult],
    figures: &[Figure],
    sections: &[Section],
    dir: &str,
) -> (String, Vec<(String, String)>) {
    let doc = document(runs, figures, sections);
    (
        crate::export::MarkdownFiguresExporter {
            dir: dir.to_string(),
        }
        .export(&doc),
        crate::export::figure_files(&doc),
    )
}

/// The report as one self-contained HTML page.
pub fn html(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> String {
    HtmlExporter.export(&document(runs, figures, sections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture::{interval, sample};

    fn run(id: &str, clients: usize, policy: &str, ops: f64) -> RunResult {
        let mut r = sample();
        r.run_id = id.into();
        r.spec.clients = clients;
        r.placement.policy = Some(policy.into());
        r.summary.ops = 10;
        r.summary.ops_per_s = ops;
        r.intervals = (0..3).map(|k| interval(k, ops, 50_000)).collect();
        r
    }

    /// A run in stages gets a row per stage, a stage behind said so.
    #[test]
    fn a_staged_run_has_its_stages_table() {
        let mut r = run("staged", 1, "balanced", 1000.0);
        let stages = wirebench_core::stages::parse("1s:100, 2s:100->1k").unwrap();
        r.stages = wirebench_core::ramp::judge::results(&stages, 0, &r.intervals);
        r.stages[1].kept_up = false;
        let md = markdown(&[r], &[], &[]);
        assert!(md.contains("## Stages"), "{md}");
        assert!(md.contains("| staged | 1s:100/s |"), "{md}");
        assert!(md.contains("| behind |"), "{md}");
    }

    /// The messenger report's study: two servers (by command), clients,
    /// two placements; named in the spec or not.
    fn crimson_vs_async(named: bool) -> Vec<RunResult> {
        let servers = [
            (
                "crimson",
                "perf-crimson-msgr --poll-mode --mode=2 --server-addr=v2:127.0.0.1:{port} --cpuset={server_cpus}",
            ),
            (
                "async",
                "taskset -ac {server_cpus} perf-async-msgr --addr=v2:127.0.0.1:{port} --threads={clients}",
            ),
        ];
        let mut out = Vec::new();
        for (k, (name, cmd)) in servers.iter().enumerate() {
            for placement in ["balanced", "separated"] {
                for clients in [1usize, 2] {
                    let spec = serde_json::json!({
                        "transport": "exec",
                        "parser": "crimson-msgr",
                        "client_cmd": "perf-crimson-msgr --mode=1 --server-addr=v2:127.0.0.1:{port}",
                        "server_cmd": cmd,
                        "clients": clients,
                    });
                    let scale = if placement == "separated" { 2.0 } else { 1.0 };
                    let ops = 1000.0 * scale * clients as f64 * (k + 1) as f64;
                    let mut r = measured(
                        &format!("r-{name}-{placement}-{clients}"),
                        &spec.to_string(),
                        ops,
                        50_000,
                    );
                    r.placement.policy = Some(placement.into());
                    if named {
                        r.point = vec![
                            ("server_cmd".into(), name.to_string()),
                            ("clients".into(), clients.to_string()),
                            ("placement".into(), placement.into()),
                        ];
                    }
                    out.push(r);
                }
            }
        }
        out
    }

    #[test]
    fn issue_36_a_sweep_over_server_commands_gives_a_line_per_server_and_a_panel_per_placement() {
        for named in [true, false] {
            let runs = crimson_vs_async(named);
            let figs = figures(&runs, &Layout::default());
            let panels: Vec<&Figure> = figs
                .iter()
                .filter(|f| f.title.starts_with("Throughput vs"))
                .collect();
            let titles: Vec<&str> = panels.iter().map(|f| f.title.as_str()).collect();
            assert_eq!(
                titles,
                [
                    "Throughput vs clients: placement=balanced",
                    "Throughput vs clients: placement=separated"
                ]
            );
            let (crimson, asynch) = if named {
                ("server=crimson", "server=async")
            } else {
                ("server=perf-crimson-msgr", "server=perf-async-msgr")
            };
            for f in &panels {
                let t = texts(&f.svg);
                assert!(t.iter().any(|x| x == crimson), "{named}: {t:?}");
                assert!(t.iter().any(|x| x == asynch), "{named}: {t:?}");
                // Shared axes: the separated panel's top (8k) on both.
                assert!(t.iter().any(|x| x == "8.0k"), "{t:?}");
            }
            let md = markdown(&runs, &figs, &[]);
            assert!(
                md.contains(if named {
                    "Varied: clients (1, 2); placement (balanced, separated); server (async, crimson)."
                } else {
                    "Varied: clients (1, 2); placement (balanced, separated); server (perf-crimson-msgr, perf-async-msgr)."
                }),
                "{md}"
            );
            assert!(md.contains("| server |"), "{md}");
            // One panel per value of any variable, asked for.
            let by_server = figures(
                &runs,
                &Layout {
                    panel: Some("server_cmd".into()),
                    series: Some(vec!["placement".into()]),
                    ..Layout::default()
                },
            );
            assert_eq!(
                by_server
                    .iter()
                    .filter(|f| f.title.starts_with("Throughput vs"))
                    .count(),
                2
            );
        }
        let runs = crimson_vs_async(true);
        let bad = |l: Layout| check_layout(&runs, &l).unwrap_err();
        let e = bad(Layout {
            series: Some(vec!["sever_cmd".into()]),
            ..Layout::default()
        });
        assert!(e.starts_with("--series sever_cmd: not a variable of these runs; they vary in clients, placement, server_cmd"), "{e}");
        let e = bad(Layout {
            x: Some("server_cmd".into()),
            ..Layout::default()
        });
        assert!(
            e.contains("--x server_cmd: its values are not numbers"),
            "{e}"
        );
        check_layout(
            &runs,
            &Layout {
                series: Some(vec!["server_cmd".into(), "client_cmd".into()]),
                panel: Some("placement".into()),
                ..Layout::default()
            },
        )
        .unwrap();
    }

    #[test]
    fn a_sweep_gives_every_figure_and_the_tables() {
        let runs = vec![
            run("r1", 1, "balanced", 1000.0),
            run("r2", 2, "balanced", 1800.0),
            run("r3", 1, "separated", 1200.0),
            run("r4", 2, "separated", 2100.0),
        ];
        let figs = figures(
            &runs,
            &Layout {
                x: Some("clients".into()),
                series: Some(vec!["placement".into()]),
                labels: BTreeMap::new(),
                panel: None,
            },
        );
        let titles: Vec<&str> = figs.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(titles[0], "Throughput vs clients");
        assert!(titles.contains(&"Latency-response: latency vs throughput achieved"));
        assert!(titles.contains(&"Latency by percentile"));
        assert!(titles.contains(&"Throughput per second"));
        assert!(
            figs[0].svg.contains("placement=balanced")
                && figs[0].svg.contains("placement=separated")
        );
        let md = markdown(&runs, &figs, &[]);
        assert!(
            md.contains("| r4 | 2 | separated | 2100 |")
                && md.contains(
                    "Every run has transport msgr, mode echo, size 64B, conns/client 1: not repeated in the table."
                ),
            "{md}"
        );
        assert!(
            md.contains("## Throughput and p99 by size and connections"),
            "{md}"
        );
        // The summary and hints as they read (the environment is this machine's).
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
        let page = html(&runs, &figs, &[]);
        assert_eq!(page.matches("<svg").count(), figs.len());
        assert!(!page.contains("<script"), "the page needs no script");
        assert!(
            !page.contains("http://")
                || page.matches("http://").count()
                    == page.matches("http://www.w3.org/2000/svg").count()
        );
    }

    #[test]
    fn s3_runs_show_the_time_to_first_byte_by_size_and_connections() {
        let s3 = |id: &str, size: u64, ttfb_ms: u64| {
            let mut r = run(id, 4, "balanced", 500.0);
            if let wirebench_core::spec::TransportSpec::Msgr(m) = &mut r.spec.transport {
                m.size_bytes = size;
            }
            let mut h = wirebench_core::hist::new_hist();
            wirebench_core::hist::record(&mut h, ttfb_ms * 1_000_000);
            r.summary.by_op.insert(
                "get".into(),
                wirebench_core::result::OpSummary {
                    ops: 10,
                    ttfb: Some(wirebench_core::hist::LatencySummary::of(&h)),
                    ..Default::default()
                },
            );
            r
        };
        let runs = vec![
            s3("a", 4096, 3),
            s3("b", 1 << 20, 40),
            run("c", 4, "balanced", 1.0),
        ];
        let rows = size_by_clients(&runs).remove(0).1.rows;
        let text = format!("{rows:?}");
        assert!(text.contains("TTFB mean 3.00ms p99 3.00ms"), "{text}");
        assert!(text.contains("TTFB mean 39.99ms p99 40.01ms"), "{text}");
        assert_eq!(
            text.matches("TTFB").count(),
            2,
            "only S3 runs have a TTFB: {text}"
        );
    }

    /// Issue 20's tables: clients and connections apart, MiB/s both ways,
    /// S3 size lists and ranges as given.
    #[test]
    fn the_summary_keeps_clients_and_connections_apart_and_s3_sizes_as_given() {
        let topo = wirebench_core::topo::Topology::with_cpus(
            wirebench_core::topo::CpuList::parse("0-1").unwrap(),
        );
        let spec = |json: &str| {
            serde_json::from_str::<wirebench_core::request::RunRequest>(json)
                .unwrap()
                .check(&topo)
                .unwrap()
                .0
        };
        let mut a = run("list", 1, "balanced", 10.0);
        a.spec = spec(r#"{"transport": "s3", "size": "4KiB,1MiB", "conns_per_client": 4}"#);
        a.summary.mib_per_s_out = 12.5;
        let mut b = run("range", 1, "balanced", 10.0);
        b.spec = spec(r#"{"transport": "s3", "size": "4KiB..1MiB"}"#);
        let md = MarkdownExporter.export(&Document::new("t").table(summary_table(&[a, b])));
        assert!(
            md.contains("| list | s3 | get | 4KiB,1MiB | 1 | 4 | balanced | 10 | 0.000 | 12.500 |"),
            "{md}"
        );
        assert!(
            md.contains("| range | s3 | get | 4KiB..1MiB | 1 | 1 |"),
            "{md}"
        );
    }

    fn spec_of(json: &str) -> wirebench_core::spec::RunSpec {
        let topo = wirebench_core::topo::Topology::with_cpus(
            wirebench_core::topo::CpuList::parse("0-1").unwrap(),
        );
        serde_json::from_str::<wirebench_core::request::RunRequest>(json)
            .unwrap()
            .check(&topo)
            .unwrap()
            .0
    }

    /// Each `<text>` of an SVG.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (_, rest) = t.split_once('>')?;
                Some(rest.split_once("</text>")?.0.trim().to_string())
            })
            .collect()
    }

    /// A run with latencies spread from `lat_ns` up, `ops` of them a second.
    fn measured(id: &str, spec: &str, ops: f64, lat_ns: u64) -> RunResult {
        let mut r = run(id, 1, "balanced", ops);
        r.spec = spec_of(spec);
        r.placement.policy = None;
        let mut h = wirebench_core::hist::new_hist();
        for k in 1..=100 {
            h.saturating_record_n(lat_ns * k / 10, 10);
        }
        r.latency_hist = wirebench_core::hist::encode(&h);
        r.summary.latency = wirebench_core::hist::LatencySummary::of(&h);
        r.summary.ops = 1000;
        r.intervals = (0..3)
            .map(|k| {
                let mut i = interval(k, ops, lat_ns);
                i.start_ns = k * 1_000_000_000;
                i.end_ns = (k + 1) * 1_000_000_000;
                if k == 0 {
                    i.phase = wirebench_core::result::Phase::Warmup;
                }
                i
            })
            .collect();
        r
    }

    /// Issue 20: a sweep over arch x depth x instances. Instances come as
    /// one run each point; the main plot is throughput vs the first numeric
    /// variable that varies, its lines named by the others; no plot repeats
    /// a tick label; the tables read as they did.
    #[test]
    fn a_sweep_over_arch_depth_and_instances_reads_as_it_did() {
        let mut runs = Vec::new();
        let mut n = 0;
        for arch in ["reactor", "pool"] {
            for depth in [1, 16] {
                for instances in [1usize, 2] {
                    let clients = 2 / instances;
                    let parts: Vec<RunResult> = (0..instances)
                        .map(|i| {
                            n += 1;
                            let ops = 1000.0 * depth as f64 / instances as f64
                                * if arch == "pool" { 1.2 } else { 1.0 };
                            let spec = format!(
                                r#"{{"arch": "{arch}", "depth": {depth}, "clients": {clients}, "size": "4KiB"}}"#
                            );
                            measured(&format!("r{n:02}-{i}"), &spec, ops, 10_000 * depth)
                        })
                        .collect();
                    runs.push(wirebench_core::merge::instances(&parts).unwrap());
                }
            }
        }
        let figs = figures(&runs, &Layout::default());
        assert_eq!(figs[0].title, "Throughput vs instances");
        let legend: Vec<String> = texts(&figs[0].svg)
            .into_iter()
            .filter(|t| t.contains('='))
            .collect();
        assert_eq!(
            legend,
            [
                "depth=1 arch=pool",
                "depth=1 arch=reactor",
                "depth=16 arch=pool",
                "depth=16 arch=reactor"
            ]
        );
        for f in &figs {
            let mut t = texts(&f.svg);
            let n = t.len();
            t.sort();
            t.dedup();
            assert_eq!(t.len(), n, "{}: a text repeats: {t:?}", f.title);
        }
        let spectrum = figs
            .iter()
            .find(|f| f.title == "Latency by percentile")
            .unwrap();
        let ticks = texts(&spectrum.svg);
        assert!(ticks.iter().any(|t| t.ends_with("us")) && ticks.iter().any(|t| t.ends_with('%')));
        // The warm-up shaded where time runs.
        let per_second = figs
            .iter()
            .find(|f| f.title == "Throughput per second")
            .unwrap();
        assert!(texts(&per_second.svg).contains(&"warm-up (not measured)".to_string()));
        let md = markdown(&runs, &figs, &[]);
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
    }

    /// Issue 20: S3 runs of size lists and mixed operations: sizes as
    /// given, a row per operation type under each mixed run, and the size x
    /// connections tables apart per operation type.
    #[test]
    fn s3_sizes_and_mixed_operations_read_as_they_did() {
        let op = |ops: u64, mb: f64, lat_ns: u64, inbound: bool| {
            let mut h = wirebench_core::hist::new_hist();
            h.saturating_record_n(lat_ns, ops);
            wirebench_core::result::OpSummary {
                ops,
                ops_per_s: ops as f64 / 2.0,
                mib_per_s: mb,
                bytes_per_s: mb * 1_048_576.0,
                bytes_in: if inbound { ops * 4096 } else { 0 },
                bytes_out: if inbound { 0 } else { ops * 4096 },
                latency: wirebench_core::hist::LatencySummary::of(&h),
                latency_hist: wirebench_core::hist::encode(&h),
                ..Default::default()
            }
        };
        let mut runs = Vec::new();
        for (k, (size, conns)) in [("4KiB,1MiB", 1), ("4KiB,1MiB", 4), ("4KiB..1MiB", 4)]
            .into_iter()
            .enumerate()
        {
            let spec = format!(
                r#"{{"transport": "s3", "workload": "mixed", "mix": "get=70,put=30", "size": "{size}", "conns_per_client": {conns}}}"#
            );
            let mut r = measured(&format!("s3-{k}"), &spec, 100.0 * conns as f64, 2_000_000);
            r.summary.mib_per_s_in = 7.0 * conns as f64;
            r.summary.mib_per_s_out = 3.0 * conns as f64;
            r.summary.by_op.insert(
                "get".into(),
                op(70 * conns, 7.0 * conns as f64, 2_000_000, true),
            );
            r.summary.by_op.insert(
                "put".into(),
                op(30 * conns, 3.0 * conns as f64, 9_000_000, false),
            );
            runs.push(r);
        }
        let md = MarkdownExporter.export(&document(&runs, &[], &[]));
        // The operation under its run, in the mode column (kept for it).
        assert!(md.contains("| ↳ put | put |  |  | 15 |"), "{md}");
        assert!(
            md.contains("## Throughput and p99 by size and connections: get"),
            "{md}"
        );
        assert!(
            md.contains("## Throughput and p99 by size and connections: put"),
            "{md}"
        );
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
    }
}
