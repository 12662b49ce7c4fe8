//! The variables of a set of runs: which vary, how each value reads
//! (`server=crimson`), what makes the lines and the panels of a plot.

use super::*;

/// The variables a report can plot against or split by.
pub const VARIABLES: [&str; 11] = [
    "clients",
    "connections",
    "instances",
    "depth",
    "size",
    "rate",
    "placement",
    "arch",
    "mode",
    "transport",
    "wait",
];

/// The variables throughput can be plotted against, in the order the
/// main one is chosen.
pub const NUMERIC: [&str; 6] = [
    "clients",
    "connections",
    "instances",
    "depth",
    "size",
    "rate",
];

/// Every variable the runs have: the report's own ([`VARIABLES`]), the
/// matrix keys of their sweeps, and any setting of a run's spec
/// ([`vars::SPEC_KEYS`]).
pub fn variables(runs: &[RunResult]) -> Vec<String> {
    names_of(&runs.iter().collect::<Vec<_>>())
}

pub(super) fn names_of(runs: &[&RunResult]) -> Vec<String> {
    let mut out: Vec<String> = VARIABLES.iter().map(|v| v.to_string()).collect();
    let more = runs
        .iter()
        .flat_map(|r| r.point.iter().map(|(k, _)| k.as_str()))
        .chain(vars::SPEC_KEYS);
    for k in more {
        if !out.iter().any(|v| v == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// Checks a layout against the runs: `--x`, `--series` and `--panel` name
/// variables the runs have (the x one with numbers); the message names the
/// flag and the variables there are.
pub fn check_layout(runs: &[RunResult], l: &Layout) -> Result<(), String> {
    let known = variables(runs);
    let have = |flag: &str, v: &str| -> Result<(), String> {
        // By the name the legends show, too (`server` for server_cmd).
        if known.iter().any(|k| k == v || k == vars::key_of(v)) {
            return Ok(());
        }
        let all: Vec<&RunResult> = runs.iter().collect();
        let vary = varying(&all);
        Err(format!(
            "{flag} {v}: not a variable of these runs; they vary in {}; any of {} may be named",
            if vary.is_empty() {
                "nothing".to_string()
            } else {
                vary.join(", ")
            },
            known.join(", ")
        ))
    };
    if let Some(x) = &l.x {
        have("--x", x)?;
        let values: Vec<String> = runs.iter().filter_map(|r| variable(r, x)).collect();
        if !NUMERIC.contains(&x.as_str()) && values.iter().any(|v| v.parse::<f64>().is_err()) {
            return Err(format!(
                "--x {x}: its values are not numbers (throughput is plotted against a number): one of {}, or --series {x}",
                NUMERIC.join(", ")
            ));
        }
    }
    for s in l.series.iter().flatten() {
        have("--series", s)?;
    }
    if let Some(p) = &l.panel {
        have("--panel", p)?;
        if l.x.as_deref() == Some(p.as_str()) {
            return Err(format!(
                "--panel {p}: it is the x axis too: take another variable"
            ));
        }
    }
    Ok(())
}

/// A run's value of a variable (None: it has none): one of [`VARIABLES`],
/// a matrix key of its sweep (as the spec named its value), or a setting
/// of its spec.
pub fn variable(r: &RunResult, name: &str) -> Option<String> {
    let name = vars::key_of(name);
    if !VARIABLES.contains(&name) {
        // The report's words for the shm clients (mt, mp), whatever the
        // spec wrote.
        if name == "clients_as"
            && let Some(v) = vars::spec_value(&r.spec, name)
        {
            return Some(v);
        }
        if let Some((_, v)) = r.point.iter().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        // An exec run's program may say it (reqres_loop's mt|mp).
        let told = |word: &str| r.summary.tool.as_ref()?.words.get(word).cloned();
        return vars::spec_value(&r.spec, name).or_else(|| match name {
            "clients_as" => told("clients"),
            _ => None,
        });
    }
    let s = &r.spec;
    Some(match name {
        "clients" => s.clients.to_string(),
        "connections" => (s.clients * s.conns_per_client).to_string(),
        "instances" => r.merged_from.len().max(1).to_string(),
        // A program given no --size has none.
        "size" if !s.transport.describe().has_size() => return None,
        "size" => size_label(r).unwrap_or_else(|| s.transport.size_bytes().to_string()),
        "depth" => s.depth.to_string(),
        "rate" => s.rate_per_s?.to_string(),
        "placement" => r.placement.policy.clone()?,
        "arch" => match &s.target {
            wirebench_core::spec::TargetSpec::Embedded { arch, .. } => arch.as_ref()?.to_string(),
            wirebench_core::spec::TargetSpec::External { .. } => "external".into(),
            wirebench_core::spec::TargetSpec::None => return None,
        },
        // The program's own mode (reqres_loop's sync|async|nores), else
        // the transport's.
        "mode" => r
            .summary
            .tool
            .as_ref()
            .and_then(|t| t.words.get("mode").cloned())
            .unwrap_or_else(|| s.transport.mode_name()),
        "transport" => s.kind().to_string(),
        "wait" => s.transport.describe().variable("wait")?,
        _ => return None,
    })
}

/// An S3 run's sizes when they are a list or a range (`4KiB,1MiB`,
/// `4KiB..1MiB`), as given; None for one size.
pub(super) fn size_label(r: &RunResult) -> Option<String> {
    r.spec
        .transport
        .describe()
        .sizes_as_given()
        .filter(|t| t.contains(',') || t.contains(".."))
}

/// A size as people read it: bytes in binary units, lists and ranges as given.
pub(super) fn size_text(v: &str) -> String {
    v.parse::<u64>()
        .map_or_else(|_| v.to_string(), wirebench_core::units::format_size)
}

/// How each variable's values read among a set of runs: long ones (two
/// server commands) by short names (`server=perf-crimson-msgr`).
pub(super) struct Shown {
    pub(super) short: BTreeMap<(String, String), String>,
}

impl Shown {
    pub(super) fn of(runs: &[&RunResult]) -> Shown {
        let mut short = BTreeMap::new();
        for v in names_of(runs) {
            let values = values_of(runs, &v);
            for (raw, name) in values.iter().zip(vars::short_values(&values)) {
                if *raw != name {
                    short.insert((v.clone(), raw.clone()), name);
                }
            }
        }
        Shown { short }
    }

    /// A run's value of `v` as shown (sizes with their unit).
    pub(super) fn value(&self, r: &RunResult, v: &str) -> Option<String> {
        let raw = variable(r, v)?;
        if v == "size" {
            return Some(size_text(&raw));
        }
        Some(self.name(v, raw))
    }

    /// A value of `v` as shown.
    pub(super) fn name(&self, v: &str, raw: String) -> String {
        self.short
            .get(&(v.to_string(), raw.clone()))
            .cloned()
            .unwrap_or(raw)
    }

    /// `server=crimson`: a variable and a run's value of it.
    pub(super) fn pair(&self, r: &RunResult, v: &str) -> Option<String> {
        Some(format!("{}={}", vars::label(v), self.value(r, v)?))
    }
}

pub(super) fn series_key(r: &RunResult, l: &Layout, series: &[String], shown: &Shown) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = series.iter().filter_map(|v| shown.pair(r, v)).collect();
    if parts.is_empty() {
        "all runs".into()
    } else {
        parts.join(" ")
    }
}

/// The axis of a variable: sizes on powers of two (KiB, MiB); counts on
/// powers of two where they are powers of two over 8x or more; else
/// linear.
pub(super) fn x_axis<'a>(x: &'a str, values: &[f64]) -> Axis<'a> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let pow2 = values.iter().all(|v| {
        *v >= 1.0 && v.fract() == 0.0 && wirebench_core::units::whole(*v).is_power_of_two()
    });
    match x {
        "size" if lo > 0.0 => Axis::pow2("size", |v| {
            wirebench_core::units::format_size(wirebench_core::units::whole(v))
        }),
        "rate" => Axis::linear("rate (ops/s)", format_rate),
        _ if pow2 && hi / lo >= 8.0 => Axis::pow2(x, |v| format!("{v:.0}")),
        _ => Axis::linear(x, |v| format!("{v:.0}")),
    }
}

pub(super) fn num(s: &str) -> f64 {
    s.parse().unwrap_or(0.0)
}

/// The variables whose values differ between `runs`; the connections not
/// when the clients decide them (one count of connections per client).
pub(super) fn varying(runs: &[&RunResult]) -> Vec<String> {
    let differ = |v: &str| {
        let mut seen: Vec<Option<String>> = runs.iter().map(|r| variable(r, v)).collect();
        seen.sort();
        seen.dedup();
        seen.len() > 1
    };
    let mut per_client: Vec<usize> = runs.iter().map(|r| r.spec.conns_per_client).collect();
    per_client.sort_unstable();
    per_client.dedup();
    let vary: Vec<String> = names_of(runs)
        .into_iter()
        .filter(|v| differ(v))
        .filter(|v| !(v == "connections" && per_client.len() == 1 && differ("clients")))
        // The connections per client say nothing the connections do not.
        .filter(|v| !(v == "conns_per_client" && differ("connections")))
        .collect();
    // A spec key that is one of the report's own variables by another
    // name (an S3 run's workload is its mode) is said once.
    let twin = |k: &str| {
        vary.iter()
            .filter(|v| VARIABLES.contains(&v.as_str()))
            .any(|v| decided_by(runs, v, k) && decided_by(runs, k, v))
    };
    vary.iter()
        .filter(|k| VARIABLES.contains(&k.as_str()) || !twin(k))
        .cloned()
        .collect()
}

/// What throughput is plotted against, what makes its lines and what
/// its panels: the layout's, or chosen from what varies.
pub(super) struct Resolved {
    pub(super) x: Option<String>,
    pub(super) series: Vec<String>,
    pub(super) panel: Option<String>,
}

pub(super) fn resolve(l: &Layout, runs: &[&RunResult], vary: &[String]) -> Resolved {
    // Variables asked for by the names the legends show (`server`).
    let key = |v: &String| vars::key_of(v).to_string();
    let l = &Layout {
        x: l.x.as_ref().map(key),
        series: l.series.as_ref().map(|s| s.iter().map(key).collect()),
        labels: l.labels.clone(),
        panel: l.panel.as_ref().map(key),
        heatmaps: l.heatmaps.clone(),
    };
    let x = l.x.clone().or_else(|| {
        NUMERIC
            .iter()
            .find(|v| vary.iter().any(|x| x == *v))
            .map(|v| v.to_string())
    });
    let mut series: Vec<String> = match &l.series {
        Some(s) => s.clone(),
        None => vary
            .iter()
            .filter(|v| Some(*v) != x.as_ref())
            .filter(|v| x.as_ref().is_none_or(|x| !decided_by(runs, x, v)))
            .cloned()
            .collect(),
    };
    // A key of the spec whose values the report's own variables decide
    // (the client command of a sweep over reqres_loop's modes) adds
    // nothing to a line's name.
    if l.series.is_none() {
        let own: Vec<&String> = vary
            .iter()
            .filter(|v| VARIABLES.contains(&v.as_str()) || *v == "clients_as")
            .collect();
        series.retain(|v| {
            VARIABLES.contains(&v.as_str()) || v == "clients_as" || !decided_by_all(runs, &own, v)
        });
        // Nor does the depth when another line's variable decides it: a
        // mode's default (shm's async runs 64 deep, sync 1).
        let all = series.clone();
        series.retain(|v| {
            v != "depth" || !all.iter().any(|w| w != v && decided_by_all(runs, &[w], v))
        });
    }
    // Lines split by placement and something else read better as a panel
    // per placement (the messenger report's Figure 1.1).
    // So do lines split by three variables or more: a panel per value of
    // the one with the fewest values.
    let panel = l.panel.clone().or_else(|| {
        if l.series.is_some() || series.len() < 2 {
            return None;
        }
        if series.iter().any(|s| s == "placement") {
            return Some("placement".to_string());
        }
        (series.len() >= 3).then(|| {
            series
                .iter()
                .min_by_key(|v| values_of(runs, v).len())
                .cloned()
                .unwrap_or_default()
        })
    });
    if let Some(p) = &panel {
        series.retain(|s| s != p);
    }
    Resolved { x, series, panel }
}

/// Whether each combination of the values of `by` comes with one value of
/// `v` among the runs (and `by` is not empty).
pub(super) fn decided_by_all(runs: &[&RunResult], by: &[&String], v: &str) -> bool {
    if by.is_empty() {
        return false;
    }
    let mut pairs: Vec<(Vec<Option<String>>, Option<String>)> = runs
        .iter()
        .map(|r| (by.iter().map(|b| variable(r, b)).collect(), variable(r, v)))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs.windows(2).all(|w| w[0].0 != w[1].0)
}

/// Whether each value of `x` comes with one value of `v` among the runs
/// (v is a function of x: connections of clients when each client has
/// one connection).
pub(super) fn decided_by(runs: &[&RunResult], x: &str, v: &str) -> bool {
    let mut pairs: Vec<(Option<String>, Option<String>)> = runs
        .iter()
        .map(|r| (variable(r, x), variable(r, v)))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs.windows(2).all(|w| w[0].0 != w[1].0)
}

/// A run's name in a legend: its label, or what varies between the runs
/// (`arch=pool depth=16`), or its id when nothing does.
pub(super) fn run_name(r: &RunResult, l: &Layout, varying: &[String], shown: &Shown) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = varying.iter().filter_map(|v| shown.pair(r, v)).collect();
    if parts.is_empty() {
        r.run_id.clone()
    } else {
        parts.join(" ")
    }
}

/// A variable's values among the runs, in order (numbers by value).
pub(super) fn values_of(runs: &[&RunResult], v: &str) -> Vec<String> {
    let mut vals: Vec<String> = runs.iter().filter_map(|r| variable(r, v)).collect();
    vals.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    vals.dedup();
    vals
}
