//! A comparison rendered: JSON (with gates), the document and page (with
//! its figures and findings), Markdown.

use super::*;

/// The comparison as JSON: the variants, then per metric each variant's
/// mean, 95% CI and noise, and its ratio and verdict against the first.
pub fn json(variants: &[Variant], rows: &[Row]) -> serde_json::Value {
    let verdict = |v: Verdict, m: &Metric| match v {
        Verdict::Better => m.words.0,
        Verdict::Worse => m.words.1,
        Verdict::Same => "same within noise",
        Verdict::Unknown => "no noise estimate",
        Verdict::Absent => "absent",
    };
    let cell = |c: &Option<Cell>| match c {
        None => serde_json::Value::Null,
        Some(c) => serde_json::json!({
            "mean": c.spread.mean,
            "ci95": c.spread.ci95,
            "n": c.spread.n,
            "noise": match c.noise {
                Noise::Repetitions => "repetitions",
                Noise::Seconds => "seconds",
                Noise::None => "none",
            },
        }),
    };
    serde_json::json!({
        "variants": variants.iter().enumerate().map(|(i, v)| serde_json::json!({
            "letter": letter(i).to_string(),
            "label": v.label,
            "runs": v.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "metrics": rows.iter().map(|r| serde_json::json!({
            "metric": r.metric.key,
            "name": r.metric.name,
            "unit": r.metric.unit,
            "better": match r.metric.better { Better::Higher => "higher", Better::Lower => "lower" },
            "values": r.cells.iter().map(cell).collect::<Vec<_>>(),
            "against_first": r.against_first.iter().map(|(ratio, v)| serde_json::json!({
                "ratio": ratio,
                "verdict": verdict(*v, r.metric),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "note": NOTE,
    })
}

pub(super) fn value(x: f64, unit: &str) -> String {
    match unit {
        "ns" => wirebench_core::units::format_ns(x),
        "/s" => wirebench_core::units::format_rate(x),
        _ => format!("{x:.3}"),
    }
}

pub(super) fn cell_text(c: &Option<Cell>, unit: &str) -> String {
    match c {
        None => "-".into(),
        Some(c) => {
            let s = &c.spread;
            let unit_s = if unit == "MiB/s" || unit == "us" || unit == "ms/s" {
                format!(" {unit}")
            } else {
                String::new()
            };
            match c.noise {
                Noise::None => format!("{}{unit_s}", value(s.mean, unit)),
                Noise::Repetitions => format!(
                    "{} ± {}{unit_s} (n={})",
                    value(s.mean, unit),
                    value(s.ci95, unit),
                    s.n
                ),
                Noise::Seconds => format!(
                    "{} ± {}{unit_s} ({} s)",
                    value(s.mean, unit),
                    value(s.ci95, unit),
                    s.n
                ),
            }
        }
    }
}

/// What ± and the verdicts mean, under every comparison.
pub const NOTE: &str = "± is the 95% confidence interval of the mean: over repetitions (n=), or over the measured seconds of a single run (s). A verdict other than \"same within noise\" means Welch's t-test found the difference larger than that noise, and it is 1% or more.";

/// The comparison: the variants (A is the reference), the table of
/// metrics with each variant's ratio to A and verdict, and the note.
pub fn document(variants: &[Variant], rows: &[Row]) -> Document {
    let legend = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let what = if i == 0 { " (the reference)" } else { "" };
            (
                letter(i).to_string(),
                format!("{}{what}, {} run(s)", v.label, v.runs.len()),
            )
        })
        .collect();
    let mut head = vec!["metric".to_string(), "A".to_string()];
    for i in 1..variants.len() {
        let l = letter(i);
        head.extend([l.to_string(), format!("{l}/A"), format!("{l} vs A")]);
    }
    let mut t = Table::new(head);
    t.left = (1..variants.len()).map(|i| 1 + 3 * i).collect();
    for r in rows {
        let m = r.metric;
        let mut cells = vec![m.name.to_string(), cell_text(&r.cells[0], m.unit)];
        for (i, (ratio, verdict)) in r.against_first.iter().enumerate() {
            cells.push(cell_text(&r.cells[i + 1], m.unit));
            cells.push(ratio.map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(
                match verdict {
                    Verdict::Better => m.words.0,
                    Verdict::Worse => m.words.1,
                    Verdict::Same => "same within noise",
                    Verdict::Unknown => "no noise estimate",
                    Verdict::Absent => "-",
                }
                .to_string(),
            );
        }
        t.row(cells);
    }
    let differs: Vec<(String, String)> = differences(variants)
        .into_iter()
        .map(|(k, values)| {
            let each: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{} {}", letter(i), wirebench_core::units::excerpt(v, 60)))
                .collect();
            (k, each.join(", "))
        })
        .collect();
    let mut d = Document::new("").push(Block::List(legend));
    d = if differs.is_empty() {
        d.text("The variants' settings are the same: they differ in what the runs do not record (build, server, machine).")
    } else {
        d.text("What differs between the variants (the verdicts below are about it):")
            .push(Block::List(differs))
    };
    let mut d = d.table(t).text(NOTE);
    for (i, words) in mixed_verdicts(variants, rows) {
        d = d.text(format!(
            "Mixed verdicts for {} against A ({}) from single runs: a run's seconds do not show how much the next run would differ. Measure each variant again (run --repeat 5, or better a sweep with repetitions, which interleaves them) before deciding.",
            letter(i),
            words.join(", ")
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.metric.key == "stall_ms_per_s") {
        for (i, (_, v)) in r.against_first.iter().enumerate() {
            let periods = (probe_period(&variants[0]), probe_period(&variants[i + 1]));
            if let (Some(a), Some(b)) = periods
                && a != b
            {
                d = d.text(format!(
                    "Platform stalls: A and {} were watched by hiccup probes of different periods (every {} and every {}), whose normal wake-ups add up to different times lost: their stalls do not compare.",
                    letter(i + 1),
                    wirebench_core::units::format_ns(a as f64),
                    wirebench_core::units::format_ns(b as f64)
                ));
            } else if matches!(v, Verdict::Better | Verdict::Worse) {
                d = d.text(format!(
                    "Platform noise: A and {} did not see the same platform (the hiccup meter's stalls differ beyond the noise): part of their difference may be the machine's, not the server's; run them again, interleaved.",
                    letter(i + 1)
                ));
            }
        }
    }
    d
}

/// The variants (by index) whose verdicts against A go both ways, where A
/// or they are a single run: each with its verdicts ("p50 faster").
pub(super) fn mixed_verdicts(variants: &[Variant], rows: &[Row]) -> Vec<(usize, Vec<String>)> {
    (1..variants.len())
        .filter(|&i| variants[0].runs.len() < 2 || variants[i].runs.len() < 2)
        .filter_map(|i| {
            let told = |want: Verdict| -> Vec<String> {
                rows.iter()
                    .filter(|r| r.against_first.get(i - 1).is_some_and(|(_, v)| *v == want))
                    .map(|r| {
                        let word = match want {
                            Verdict::Better => r.metric.words.0,
                            _ => r.metric.words.1,
                        };
                        format!("{} {word}", r.metric.name)
                    })
                    .collect()
            };
            let (better, worse) = (told(Verdict::Better), told(Verdict::Worse));
            (!better.is_empty() && !worse.is_empty())
                .then(|| (i, better.into_iter().chain(worse).collect()))
        })
        .collect()
}

/// How often the hiccup probe of a variant's runs woke, in ns (results
/// that do not record it had a 1 ms probe); None without the meter or when
/// its runs differ.
pub(super) fn probe_period(v: &Variant) -> Option<u64> {
    let mut periods = v
        .runs
        .iter()
        .filter_map(|r| r.summary.hiccup)
        .map(|h| match h.period_ns {
            0 => 1_000_000,
            p => p,
        });
    let first = periods.next()?;
    periods.all(|p| p == first).then_some(first)
}

/// What a comparison found, a line per variant after A: the metrics that
/// changed beyond the noise, with their ratio to A, or that none did.
pub fn findings(variants: &[Variant], rows: &[Row]) -> Vec<(String, String)> {
    (1..variants.len())
        .map(|i| {
            let changed: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    let (ratio, v) = r.against_first.get(i - 1)?;
                    let word = match v {
                        Verdict::Better => r.metric.words.0,
                        Verdict::Worse => r.metric.words.1,
                        _ => return None,
                    };
                    Some(match ratio {
                        Some(x) => format!("{} {x:.2}x A ({word})", r.metric.name),
                        None => format!("{} {word}", r.metric.name),
                    })
                })
                .collect();
            let unknown = rows
                .iter()
                .any(|r| matches!(r.against_first.get(i - 1), Some((_, Verdict::Unknown))));
            let what = format!("{} ({}) against A", letter(i), variants[i].label);
            let detail = if !changed.is_empty() {
                changed.join("; ")
            } else if unknown {
                "no change beyond the noise where it is known; some metrics have no noise estimate (run each variant 3 times or more)".into()
            } else {
                "the same within the noise on every metric".into()
            };
            (what, detail)
        })
        .collect()
}

/// The comparison as a page: what it found (the changes beyond the noise,
/// the headline figure, the hints), then the table and the other figures.
pub fn page(
    variants: &[Variant],
    rows: &[Row],
    figures: &[crate::export::Figure],
    hints: Vec<(String, String)>,
) -> Document {
    let mut d = Document::new("wirebench compare")
        .heading("What it found")
        .push(Block::List(findings(variants, rows)));
    // The headline: throughput against what varies, else the percentiles.
    let headline = figures
        .iter()
        .position(|f| f.title.starts_with("Throughput vs"))
        .or_else(|| {
            figures
                .iter()
                .position(|f| f.title == "Latency by percentile")
        })
        .or((!figures.is_empty()).then_some(0));
    if let Some(i) = headline {
        d = d.push(Block::Figures(vec![figures[i].clone()]));
    }
    d = d.heading("Hints");
    d = if hints.is_empty() {
        d.text("None.")
    } else {
        d.push(Block::List(hints))
    };
    d = d.heading("The comparison");
    d.blocks.extend(document(variants, rows).blocks);
    let rest: Vec<crate::export::Figure> = figures
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != headline)
        .map(|(_, f)| f.clone())
        .collect();
    if !rest.is_empty() {
        d = d.heading("Figures").push(Block::Figures(rest));
    }
    d
}

/// The comparison as Markdown (also what the terminal shows).
pub fn markdown(variants: &[Variant], rows: &[Row]) -> String {
    MarkdownExporter.export(&document(variants, rows))
}

/// `compare --format json`: the rows, what differs between the variants,
/// and the `--fail-if` gates tripped.
pub fn json_with_gates(
    variants: &[Variant],
    rows: &[Row],
    tripped: &[Tripped],
) -> serde_json::Value {
    let mut j = json(variants, rows);
    j["differs"] = differences(variants)
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    j["fail_if"] = serde_json::json!(tripped
        .iter()
        .map(|t| serde_json::json!({"condition": t.gate, "variant": t.variant.to_string(), "change_pct": t.change_pct}))
        .collect::<Vec<_>>());
    j
}

/// `compare -o`: the page of the comparison with the variants' figures
/// (each run named by its variant's letter) and their hints.
pub fn page_with_figures(variants: &[Variant], rows: &[Row]) -> crate::export::Document {
    let mut layout = crate::report::Layout::default();
    let mut all = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let letter = letter(i);
        for r in &v.runs {
            // The letter, and the variant's label when it is short (the
            // page lists each letter's label).
            let name = if v.label.chars().count() <= 24 {
                format!("{letter}: {}", v.label)
            } else {
                letter.to_string()
            };
            layout.labels.insert(r.run_id.clone(), name);
            all.push(r.clone());
        }
    }
    let figures = crate::report::figures(&all, &layout);
    let hints = variants
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            v.runs.iter().flat_map(move |r| {
                crate::hints::of_run(r).into_iter().map(move |h| {
                    (
                        format!("{} ({}, {})", h.text, letter(i), r.run_id),
                        h.evidence,
                    )
                })
            })
        })
        .collect();
    page(variants, rows, &figures, hints)
}
