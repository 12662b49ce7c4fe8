//! A report of runs: the summary and environment tables, the hints, and the
//! plots of the reports wirebench grew from, as a self-contained HTML page
//! (inline SVG, no script, nothing fetched) and as Markdown (the tables).

use crate::export::{Block, Document, Exporter, HtmlExporter, MarkdownExporter, Table};
use crate::hints;
use crate::plot::{self, Axis, Series};
use std::collections::BTreeMap;
use wirebench_core::hist;
use wirebench_core::result::RunResult;
use wirebench_core::units::{format_ns, format_rate};

/// What to plot throughput against, and what makes a line.
#[derive(Debug, Clone)]
pub struct Layout {
    pub x: String,
    pub series: Vec<String>,
    /// Run id to a label that names its line instead (compare's variants).
    pub labels: BTreeMap<String, String>,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            x: "clients".into(),
            series: vec!["placement".into(), "arch".into()],
            labels: BTreeMap::new(),
        }
    }
}

/// The variables a report can plot against or split by.
pub const VARIABLES: [&str; 10] = [
    "clients",
    "connections",
    "size",
    "depth",
    "rate",
    "placement",
    "arch",
    "mode",
    "transport",
    "wait",
];

/// A run's value of a variable (None: it has none).
pub fn variable(r: &RunResult, name: &str) -> Option<String> {
    let s = &r.spec;
    Some(match name {
        "clients" => s.clients.to_string(),
        "connections" => (s.clients * s.conns_per_client).to_string(),
        "size" => s.transport.size_bytes().to_string(),
        "depth" => s.depth.to_string(),
        "rate" => s.rate_per_s?.to_string(),
        "placement" => r.placement.policy.clone()?,
        "arch" => match &s.target {
            wirebench_core::spec::TargetSpec::Embedded { arch, .. } => arch.as_ref()?.to_string(),
            wirebench_core::spec::TargetSpec::External { .. } => "external".into(),
            wirebench_core::spec::TargetSpec::None => return None,
        },
        "mode" => s.transport.mode_name(),
        "transport" => s.kind().to_string(),
        "wait" => s.shm()?.wait.to_string(),
        _ => return None,
    })
}

fn series_key(r: &RunResult, l: &Layout) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = l
        .series
        .iter()
        .filter_map(|v| variable(r, v).map(|x| format!("{v}={x}")))
        .collect();
    if parts.is_empty() {
        "all runs".into()
    } else {
        parts.join(" ")
    }
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or(0.0)
}

/// The variables whose values differ between `runs`.
fn varying(runs: &[&RunResult]) -> Vec<&'static str> {
    VARIABLES
        .iter()
        .copied()
        .filter(|v| {
            let mut seen: Vec<Option<String>> = runs.iter().map(|r| variable(r, v)).collect();
            seen.sort();
            seen.dedup();
            seen.len() > 1
        })
        .collect()
}

/// A run's name in a legend: its label, or what varies between the runs
/// (`arch=pool depth=16`), or its id when nothing does.
fn run_name(r: &RunResult, l: &Layout, varying: &[&str]) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = varying
        .iter()
        .filter_map(|v| variable(r, v).map(|x| format!("{v}={x}")))
        .collect();
    if parts.is_empty() {
        r.run_id.clone()
    } else {
        parts.join(" ")
    }
}

pub use crate::export::Figure;

const MAX_PER_RUN: usize = 8;

/// Every figure the runs allow.
pub fn figures(runs: &[RunResult], l: &Layout) -> Vec<Figure> {
    let mut out = Vec::new();
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    // Throughput vs the x variable, one line per series.
    let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &ok {
        if let Some(x) = variable(r, &l.x) {
            groups
                .entry(series_key(r, l))
                .or_default()
                .push((num(&x), r.summary.ops_per_s));
        }
    }
    let distinct_x = {
        let mut xs: Vec<u64> = groups.values().flatten().map(|p| p.0.to_bits()).collect();
        xs.sort_unstable();
        xs.dedup();
        xs.len()
    };
    if distinct_x >= 2 {
        let series: Vec<Series> = groups
            .iter()
            .map(|(k, pts)| {
                let mut pts = pts.clone();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: k.clone(),
                    points: pts,
                }
            })
            .collect();
        let title = format!("Throughput vs {}", l.x);
        out.push(Figure {
            svg: plot::lines(
                &title,
                Axis {
                    label: &l.x,
                    log: false,
                    fmt: |v| format!("{v:.0}"),
                },
                Axis {
                    label: "ops/s",
                    log: false,
                    fmt: format_rate,
                },
                &series,
            ),
            title,
        });
    }
    // Latency-response: mean and p99 against the throughput achieved.
    if ok.len() >= 2 && ok.iter().any(|r| r.summary.latency.count > 0) {
        let mut by: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        for r in ok.iter().filter(|r| r.summary.latency.count > 0) {
            by.entry(series_key(r, l)).or_default().push(r);
        }
        let mut series = Vec::new();
        for (k, rs) in by {
            let mut rs = rs;
            rs.sort_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s));
            // Only the statistics each run has (an exec program may give
            // a mean and no percentile).
            series.push(Series {
                name: format!("{k} mean"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("mean"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.mean_ns))
                    .collect(),
            });
            series.push(Series {
                name: format!("{k} p99"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("p99"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.p99_ns as f64))
                    .collect(),
            });
            series.retain(|s| !s.points.is_empty());
        }
        let title = "Latency-response: latency vs throughput achieved".to_string();
        out.push(Figure {
            svg: plot::lines(
                &title,
                Axis {
                    label: "throughput achieved (ops/s)",
                    log: false,
                    fmt: format_rate,
                },
                Axis {
                    label: "latency",
                    log: true,
                    fmt: format_ns,
                },
                &series,
            ),
            title,
        });
    }
    // Percentile spectrum per run.
    let quantiles = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999];
    let spectrum: Vec<Series> = ok
        .iter()
        .filter(|r| r.summary.latency.count > 0)
        .take(MAX_PER_RUN)
        .filter_map(|r| {
            // An exec program's statistics without a distribution: no spectrum.
            let h = hist::decode(&r.latency_hist)
                .ok()
                .filter(|h| !h.is_empty())?;
            Some(Series {
                name: run_name(r, l, &vary),
                points: quantiles
                    .iter()
                    .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                    .collect(),
            })
        })
        .collect();
    if !spectrum.is_empty() {
        let title = "Latency by percentile".to_string();
        out.push(Figure {
            svg: plot::lines(
                &title,
                Axis {
                    label: "percentile",
                    log: true,
                    fmt: |v| {
                        let p = 100.0 * (1.0 - 1.0 / v);
                        let digits = format!("{p:.4}");
                        format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
                    },
                },
                Axis {
                    label: "latency",
                    log: true,
                    fmt: format_ns,
                },
                &spectrum,
            ),
            title,
        });
    }
    // Per-second throughput and p99.
    let per_second = |f: fn(&wirebench_core::result::Interval) -> f64| -> Vec<Series> {
        ok.iter()
            .take(MAX_PER_RUN)
            .map(|r| Series {
                name: run_name(r, l, &vary),
                points: r
                    .intervals
                    .iter()
                    .filter(|i| i.ops > 0)
                    .map(|i| (i.end_ns as f64 / 1e9, f(i)))
                    .collect(),
            })
            .filter(|s| s.points.len() >= 2)
            .collect()
    };
    let tput = per_second(|i| i.ops_per_s);
    if !tput.is_empty() {
        let title = "Throughput per second".to_string();
        out.push(Figure {
            svg: plot::lines(
                &title,
                Axis {
                    label: "time since the load started (s)",
                    log: false,
                    fmt: |v| format!("{v:.1}"),
                },
                Axis {
                    label: "ops/s",
                    log: false,
                    fmt: format_rate,
                },
                &tput,
            ),
            title,
        });
        let p99 = per_second(|i| i.latency.p99_ns as f64);
        if p99.iter().any(|s| s.points.iter().any(|p| p.1 > 0.0)) {
            let title = "p99 latency per second".to_string();
            out.push(Figure {
                svg: plot::lines(
                    &title,
                    Axis {
                        label: "time since the load started (s)",
                        log: false,
                        fmt: |v| format!("{v:.1}"),
                    },
                    Axis {
                        label: "p99 latency",
                        log: true,
                        fmt: format_ns,
                    },
                    &p99,
                ),
                title,
            });
        }
    }
    // Per-core CPU over time, client and server cores apart.
    for r in ok.iter().take(4) {
        let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
        let mut add = |who: &str,
                       pick: fn(
            &wirebench_core::result::Interval,
        ) -> &Vec<wirebench_core::result::CoreBusy>| {
            let mut cores: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
            for iv in &r.intervals {
                for c in pick(iv) {
                    cores.entry(c.cpu).or_default().push(c.busy_pct);
                }
            }
            for (cpu, v) in cores {
                rows.push((format!("{who} {cpu}"), v));
            }
        };
        add("client", |i| &i.client_cores);
        add("server", |i| &i.server_cores);
        if !rows.is_empty() {
            let title = format!("CPU busy % per core over time: {}", r.run_id);
            out.push(Figure {
                svg: plot::heatmap(
                    &title,
                    "second of the run (white idle, red saturated)",
                    &rows,
                ),
                title,
            });
        }
    }
    out
}

fn summary_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "transport",
        "mode",
        "size",
        "clients",
        "conns/client",
        "placement",
        "ops/s",
        "MB/s in",
        "MB/s out",
        "latency p50",
        "latency p99",
        "latency p99.9",
        "client CPU us/op",
        "stalls",
        "status",
    ]);
    t.left = vec![1, 2, 6, 15];
    t.rows = runs
        .iter()
        .map(|r| {
            let s = &r.summary;
            let lat = |stat: &str, v: u64| {
                if s.latency.count > 0 && s.has_latency(stat) {
                    format_ns(v as f64)
                } else {
                    "-".into()
                }
            };
            vec![
                r.run_id.clone(),
                r.spec.kind().to_string(),
                r.spec.transport.mode_name(),
                match &r.spec.transport {
                    wirebench_core::spec::TransportSpec::Exec(e) if e.size_bytes.is_none() => {
                        "-".into()
                    }
                    // A list or a range of sizes, as given.
                    wirebench_core::spec::TransportSpec::S3(s3) => s3.sizes.to_string(),
                    t => wirebench_core::units::format_size(t.size_bytes()),
                },
                r.spec.clients.to_string(),
                r.spec.conns_per_client.to_string(),
                r.placement.policy.clone().unwrap_or_else(|| "-".into()),
                format!("{:.0}", s.ops_per_s),
                format!("{:.3}", s.mb_per_s_in),
                format!("{:.3}", s.mb_per_s_out),
                lat("p50", s.latency.p50_ns),
                lat("p99", s.latency.p99_ns),
                lat("p999", s.latency.p999_ns),
                format!("{:.3}", s.client_cpu_us_per_op),
                s.hiccup.map_or("-".into(), |h| {
                    format!(
                        "max {} ({} s)",
                        format_ns(h.max_ns as f64),
                        h.stalled_seconds
                    )
                }),
                format!("{:?}", r.status.state).to_lowercase(),
            ]
        })
        .collect();
    // A column for each parameter that varies and has none yet (a sweep
    // over arch or depth), after the placement.
    let all: Vec<&RunResult> = runs.iter().collect();
    let extra: Vec<&str> = varying(&all)
        .into_iter()
        .filter(|v| ["arch", "depth", "rate", "wait"].contains(v))
        .collect();
    for (k, v) in extra.iter().enumerate() {
        let at = 7 + k;
        t.head.insert(at, (*v).to_string());
        for (row, r) in t.rows.iter_mut().zip(runs) {
            row.insert(at, variable(r, v).unwrap_or_else(|| "-".into()));
        }
    }
    t.left = [1, 2, 6]
        .into_iter()
        .chain(
            (0..extra.len())
                .filter(|k| ["arch", "wait"].contains(&extra[*k]))
                .map(|k| 7 + k),
        )
        .chain([15 + extra.len()])
        .collect();
    t
}

/// The server side of each run that measured it (embedded or observed):
/// CPU per op, cores actually used, CPU by thread group, threads outside
/// its cpuset, the allocator's share (`flame`), memory and context
/// switches. None when no run measured a server.
fn server_table(runs: &[RunResult]) -> Option<Table> {
    let measured: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.summary.server_cpu_s.is_some())
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "server CPU us/op",
        "cores used (cpuset)",
        "ops/s per core used",
        "CPU by thread group (% of a core)",
        "threads outside the cpuset",
        "allocator share of samples",
        "peak RSS",
        "context switches (vol/invol)",
    ]);
    t.left = vec![4, 5, 6];
    t.rows = measured
        .iter()
        .map(|r| {
            let s = &r.summary;
            let th = s.server_threads.as_ref();
            let dash = || "-".to_string();
            vec![
                r.run_id.clone(),
                s.server_cpu_us_per_op
                    .map_or_else(dash, |v| format!("{v:.2}")),
                s.server_cores_used.map_or_else(dash, |u| {
                    let set = r
                        .placement
                        .server_cpus
                        .as_ref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default();
                    format!("{u:.2}{set}")
                }),
                s.ops_per_core_used.map_or_else(dash, |v| format!("{v:.0}")),
                th.map_or_else(dash, |t| {
                    t.groups
                        .iter()
                        .filter(|g| g.cpu_pct >= 0.5)
                        .take(5)
                        .map(|g| format!("{} {:.0}", g.group, g.cpu_pct))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                th.map_or_else(dash, |t| {
                    if t.outside_cpuset.is_empty() {
                        return "none".into();
                    }
                    t.outside_cpuset
                        .iter()
                        .take(4)
                        .map(|o| format!("{} ({:.2} s)", o.name, o.cpu_s))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                s.server_allocator.as_ref().map_or_else(dash, |a| {
                    let lib = a
                        .top
                        .first()
                        .map(|e| format!(" ({})", e.library))
                        .unwrap_or_default();
                    format!("{:.1}%{lib}", a.share_pct)
                }),
                s.server_peak_rss_bytes
                    .map_or_else(dash, |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64)),
                th.map_or_else(dash, |t| {
                    format!("{} / {}", t.voluntary_switches, t.involuntary_switches)
                }),
            ]
        })
        .collect();
    Some(t)
}

/// exec runs: the program, the latency statistics it gave, and how it
/// measured. None without an exec run.
fn program_table(runs: &[RunResult]) -> Option<Table> {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| {
            let t = r.summary.tool.as_ref()?;
            Some(vec![
                r.run_id.clone(),
                t.program.clone(),
                t.parser.clone(),
                if t.histogram {
                    "a histogram (every percentile)".into()
                } else if t.latency_stats.is_empty() {
                    "none".into()
                } else {
                    t.latency_stats.join(", ")
                },
                t.method.join("; "),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "program",
        "parser",
        "latency it gave",
        "how it measured",
    ]);
    t.left = vec![1, 2, 3, 4];
    t.rows = rows;
    Some(t)
}

fn env_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "host",
        "kernel",
        "CPU",
        "build",
        "wirebench",
        "started",
    ]);
    t.left = (1..7).collect();
    t.rows = runs
        .iter()
        .map(|r| {
            let e = &r.env;
            vec![
                r.run_id.clone(),
                e.hostname.clone(),
                e.kernel.clone(),
                e.cpu_model.clone(),
                e.build_profile.clone(),
                format!("{} ({})", e.wirebench_version, e.git_revision),
                r.started_at.clone(),
            ]
        })
        .collect();
    t
}

/// Throughput and p99 by message (object) size x clients, with the
/// objectives' pass/fail marks: the S3 report's tables, for any transport.
/// None unless the runs span two sizes or two client counts.
fn size_by_clients(runs: &[RunResult]) -> Option<Table> {
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let mut sizes: Vec<u64> = ok.iter().map(|r| r.spec.transport.size_bytes()).collect();
    let mut clients: Vec<usize> = ok.iter().map(|r| r.spec.connections()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    clients.sort_unstable();
    clients.dedup();
    if sizes.len() < 2 && clients.len() < 2 {
        return None;
    }
    let mut head = vec!["size".to_string()];
    head.extend(clients.iter().map(|c| format!("{c} conn(s)")));
    let rows = sizes
        .iter()
        .map(|&size| {
            let mut row = vec![wirebench_core::units::format_size(size)];
            for &c in &clients {
                let here: Vec<&&RunResult> = ok
                    .iter()
                    .filter(|r| r.spec.transport.size_bytes() == size && r.spec.connections() == c)
                    .collect();
                let Some(best) = here
                    .iter()
                    .max_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s))
                else {
                    row.push("-".into());
                    continue;
                };
                let s = &best.summary;
                let mb = s.mb_per_s_in.max(s.mb_per_s_out);
                let mut cell = format!("{mb:.1} MB/s");
                if s.latency.count > 0 && s.has_latency("p99") {
                    cell.push_str(&format!(", p99 {}", format_ns(s.latency.p99_ns as f64)));
                }
                // S3: the reads' time to first byte (the S3 report's TTFB columns).
                if let Some(t) = s.by_op.get("get").and_then(|o| o.ttfb.as_ref()) {
                    cell.push_str(&format!(
                        ", TTFB mean {} p99 {}",
                        format_ns(t.mean_ns),
                        format_ns(t.p99_ns as f64)
                    ));
                }
                let slos = &best.slos;
                if !slos.is_empty() {
                    let missed: Vec<&str> = slos
                        .iter()
                        .filter(|o| !o.pass)
                        .map(|o| o.slo.as_str())
                        .collect();
                    if missed.is_empty() {
                        cell.push_str(", SLO met");
                    } else {
                        cell.push_str(&format!(", SLO missed: {}", missed.join(" ")));
                    }
                }
                if here.len() > 1 {
                    cell.push_str(&format!(" (best of {})", here.len()));
                }
                row.push(cell);
            }
            row
        })
        .collect();
    Some(Table {
        head,
        rows,
        left: Vec::new(),
    })
}

/// The hints as (what, evidence) items, or a line saying there are none.
fn hints_block(runs: &[RunResult]) -> Block {
    let mut h: Vec<hints::Hint> = runs.iter().flat_map(hints::of_run).collect();
    h.extend(hints::of_set(runs));
    if h.is_empty() {
        return Block::Text(
            "None: no client- or server-bound run, no busy machine, no server imbalance, no contention, no p99 far above p50."
                .into(),
        );
    }
    Block::List(
        h.into_iter()
            .map(|x| {
                let about = x.run_id.map(|r| format!(" ({r})")).unwrap_or_default();
                (format!("{}{about}", x.text), x.evidence)
            })
            .collect(),
    )
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
    let mut d = Document::new(format!("wirebench report: {} run(s)", runs.len()))
        .heading("Summary")
        .table(summary_table(runs));
    if let Some(t) = size_by_clients(runs) {
        d = d
            .heading("Throughput and p99 by size and connections")
            .table(t);
    }
    if let Some(t) = server_table(runs) {
        d = d.heading("Server").table(t);
    }
    if let Some(t) = program_table(runs) {
        d = d.heading("Programs (exec): their own figures").table(t);
    }
    d = d
        .heading("Hints")
        .push(hints_block(runs))
        .heading("Figures")
        .push(Block::Figures(figures.to_vec()));
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
                x: "clients".into(),
                series: vec!["placement".into()],
                labels: BTreeMap::new(),
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
            md.contains("| r4 | msgr | echo | 64B | 2 | 1 | separated | 2100 |"),
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
        let rows = size_by_clients(&runs).unwrap().rows;
        let text = format!("{rows:?}");
        assert!(text.contains("TTFB mean 3.00ms p99 3.00ms"), "{text}");
        assert!(text.contains("TTFB mean 39.99ms p99 40.01ms"), "{text}");
        assert_eq!(
            text.matches("TTFB").count(),
            2,
            "only S3 runs have a TTFB: {text}"
        );
    }

    /// Issue 20's tables: clients and connections apart, MB/s both ways,
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
        a.summary.mb_per_s_out = 12.5;
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
}
