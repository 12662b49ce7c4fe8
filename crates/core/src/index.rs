//! An experiment's index, `<results>/<name>/sweep.json`: each planned run's
//! point, status and run ids, the aggregate of its instances (histograms
//! merged exactly), and the scaling efficiency of K instances against one.
//! Rewritten after every run, so `--resume` knows what is complete.

use crate::hist::{self, LatencySummary};
use crate::placement::Planned;
use crate::request::RunRequest;
use crate::result::RunResult;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a spec's `[report]` section asks of its report: what throughput
/// is plotted against, what makes a line and a panel (the names the
/// legends show, `server`, or keys), and the runs whose CPU heatmaps are
/// drawn, each named by its point (`server=crimson clients=2
/// placement=balanced`). The flags of `report` take precedence.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportPlan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heatmaps: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Index {
    pub name: String,
    pub spec_file: String,
    pub planned: usize,
    /// A hash of the normalised spec: every planned run's requests.
    #[serde(default)]
    pub spec_hash: Option<String>,
    pub runs: Vec<Entry>,
    /// The spec's `[report]` section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportPlan>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub point: Vec<(String, String)>,
    pub rep: usize,
    pub instances: usize,
    pub placement: Option<Planned>,
    /// complete, failed or interrupted (the worst of the instances).
    pub status: String,
    pub reason: Option<String>,
    pub run_ids: Vec<String>,
    pub aggregate: Option<Aggregate>,
    /// Aggregate ops/s over the same point with one instance (K > 1 only).
    pub scaling_vs_one_instance: Option<f64>,
    /// The requests the run was made with (its instances'), as planned:
    /// what `--resume` checks the spec against.
    #[serde(default)]
    pub requests: Option<Vec<RunRequest>>,
}

/// A hash of requests in their normal form (every key, as JSON): equal
/// specs, whatever their layout in the file, hash the same.
pub fn spec_hash<'a>(requests: impl IntoIterator<Item = &'a RunRequest>) -> String {
    // FNV-1a over the canonical JSON (keys in field order, units as text).
    let h = crate::hash::fnv1a(requests.into_iter().flat_map(|r| {
        let json = serde_json::to_string(r).expect("a request serializes");
        json.into_bytes().into_iter().chain([b'\n'])
    }));
    format!("{h:016x}")
}

/// What differs between the requests a run was made with and the ones
/// planned now, a line each: `size: 4KiB -> 8KiB`.
pub fn changes(old: &[RunRequest], new: &[RunRequest]) -> Vec<String> {
    if old.len() != new.len() {
        return vec![format!("instances: {} -> {}", old.len(), new.len())];
    }
    let show = |v: Option<&serde_json::Value>| match v {
        None => "(unset)".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let mut out = Vec::new();
    for (a, b) in old.iter().zip(new) {
        let (a, b) = (
            serde_json::to_value(a).expect("a request serializes"),
            serde_json::to_value(b).expect("a request serializes"),
        );
        for &key in RunRequest::keys() {
            let (x, y) = (a.get(key), b.get(key));
            if x != y {
                let line = format!("{key}: {} -> {}", show(x), show(y));
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    out
}

/// The instances of a run taken together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Aggregate {
    pub ops_per_s: f64,
    /// Payload MiB/s out, over the instances (0 in an index written
    /// before it: see `mb_per_s_out`).
    #[serde(default)]
    pub mib_per_s_out: f64,
    /// What indexes before schema 4 kept: 10^6 bytes/s, frame headers
    /// included for msgr. Read, never written.
    #[serde(default, skip_serializing)]
    pub mb_per_s_out: Option<f64>,
    /// Payload MiB/s in, over the instances (None in an index written
    /// before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib_per_s_in: Option<f64>,
    pub messages_received: u64,
    /// S3: the reads' time to first byte (or the one operation type's),
    /// from the instances' merged histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<LatencySummary>,
    pub connect_time_s: f64,
    pub messaging_time_s: f64,
    pub latency: LatencySummary,
    pub client_cpu_us_per_op: f64,
    pub clients: usize,
    /// Server CPUs over all instances.
    pub smp: usize,
    /// exec: the latency statistics the programs gave (None: all, from
    /// histograms). Several instances' means combine, weighted by their
    /// operations; their percentiles do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_stats: Option<Vec<String>>,
}

impl Aggregate {
    /// Whether the latency statistic `stat` was measured.
    pub fn has_latency(&self, stat: &str) -> bool {
        match &self.latency_stats {
            None => self.latency.count > 0,
            Some(s) => s.iter().any(|x| x == stat),
        }
    }
}

/// Where an experiment's index is.
pub fn path(dir: &Path) -> PathBuf {
    dir.join("sweep.json")
}

/// Why an index could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct IndexError {
    pub path: PathBuf,
    pub why: String,
}

/// The index of the experiment in `dir`, if it has one.
pub fn load(dir: &Path) -> Result<Option<Index>, IndexError> {
    let p = path(dir);
    if !p.exists() {
        return Ok(None);
    }
    let err = |why: String| IndexError {
        path: p.clone(),
        why,
    };
    let text = std::fs::read_to_string(&p).map_err(|e| err(e.to_string()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| err(e.to_string()))
}

/// The instances' results as one: rates added, latency histograms merged.
pub fn aggregate(results: &[RunResult]) -> Option<Aggregate> {
    let mut h = hist::new_hist();
    for r in results {
        h.add(&hist::decode(&r.latency_hist).ok()?).ok()?;
    }
    let ops: u64 = results.iter().map(|r| r.summary.ops).sum();
    let cpu: f64 = results.iter().map(|r| r.summary.client_cpu_s).sum();
    // Programs' statistics without a distribution (exec).
    let stats_only = results
        .iter()
        .any(|r| r.summary.tool.as_ref().is_some_and(|t| !t.histogram));
    let (latency, latency_stats) = match results {
        _ if !stats_only => (LatencySummary::of(&h), None),
        [one] => (
            one.summary.latency,
            Some(
                crate::spec::LATENCY_STATS
                    .iter()
                    .filter(|s| one.summary.has_latency(s))
                    .map(|s| s.to_string())
                    .collect(),
            ),
        ),
        many if ops > 0 && many.iter().all(|r| r.summary.has_latency("mean")) => (
            LatencySummary {
                count: ops,
                mean_ns: many
                    .iter()
                    .map(|r| r.summary.latency.mean_ns * r.summary.ops as f64)
                    .sum::<f64>()
                    / ops as f64,
                ..LatencySummary::default()
            },
            Some(vec!["mean".to_string()]),
        ),
        _ => (LatencySummary::default(), Some(vec![])),
    };
    Some(Aggregate {
        ops_per_s: results.iter().map(|r| r.summary.ops_per_s).sum(),
        mib_per_s_out: results.iter().map(|r| r.summary.mib_per_s_out).sum(),
        mb_per_s_out: None,
        mib_per_s_in: Some(results.iter().map(|r| r.summary.mib_per_s_in).sum()),
        messages_received: results.iter().map(|r| r.summary.messages_received).sum(),
        ttfb: ttfb(results),
        connect_time_s: results
            .iter()
            .map(|r| r.summary.connect_time_ns as f64 / 1e9)
            .fold(0.0, f64::max),
        messaging_time_s: results
            .iter()
            .map(|r| r.summary.measured_ns as f64 / 1e9)
            .fold(0.0, f64::max),
        latency,
        latency_stats,
        client_cpu_us_per_op: if ops > 0 { cpu * 1e6 / ops as f64 } else { 0.0 },
        clients: results.iter().map(|r| r.spec.clients).sum(),
        smp: results
            .iter()
            .map(|r| r.placement.server_cpus.as_ref().map_or(0, |c| c.len()))
            .sum(),
    })
}

/// The reads' time to first byte over the results (the one operation
/// type's where there is one), None where none has one.
fn ttfb(results: &[RunResult]) -> Option<LatencySummary> {
    let mut h = hist::new_hist();
    for r in results {
        let Some(op) = r.summary.ttfb_op().filter(|o| o.ttfb.is_some()) else {
            continue;
        };
        h.add(&hist::decode(&op.ttfb_hist).ok()?).ok()?;
    }
    (!h.is_empty()).then(|| LatencySummary::of(&h))
}

fn without_instances(e: &Entry) -> Vec<(String, String)> {
    e.point
        .iter()
        .filter(|(k, _)| k != "instances")
        .cloned()
        .collect()
}

/// Scaling efficiency: each K-instance entry against the one-instance
/// entry of the same point and repetition.
pub fn scaling(index: &mut Index) {
    /// A point without its `instances`, a repetition, and its ops/s.
    type One = (Vec<(String, String)>, usize, f64);
    let base: Vec<One> = index
        .runs
        .iter()
        .filter(|e| e.instances == 1 && e.status == "complete")
        .filter_map(|e| Some((without_instances(e), e.rep, e.aggregate.as_ref()?.ops_per_s)))
        .collect();
    for e in index.runs.iter_mut().filter(|e| e.instances > 1) {
        let p = without_instances(e);
        e.scaling_vs_one_instance = base
            .iter()
            .find(|(bp, rep, _)| *bp == p && *rep == e.rep)
            .and_then(|(_, _, one)| Some(e.aggregate.as_ref()?.ops_per_s / one))
            .filter(|_| e.status == "complete");
    }
}
