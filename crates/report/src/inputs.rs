//! Finding runs: a `run.json`, a run directory, a directory of run
//! directories (an experiment, a group: the repetitions of one variant), or
//! a directory of groups (an ipc-compare's variants, repetitions under a
//! results root).

use std::path::{Path, PathBuf};
use wirebench_core::result::RunResult;
use wirebench_core::store;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}: no run.json there, and no run directories in it")]
    NoRuns(PathBuf),
    #[error("{path}: {why}")]
    Bad { path: PathBuf, why: String },
}

/// The runs at `path`, in the order of their directories' names (run ids
/// start with their start time); an experiment's in its sweep's order (its
/// points as planned, each point's repetitions together). An experiment's
/// instances, which ran side by side as one point, come as one run (see
/// `merge::instances`).
pub fn runs_at(path: &Path) -> Result<Vec<RunResult>, InputError> {
    let runs = runs_in(path)?;
    let index = wirebench_core::index::load(path).map_err(|e| InputError::Bad {
        path: e.path.clone(),
        why: e.why,
    })?;
    let Some(index) = index else {
        return Ok(runs);
    };
    let mut runs: Vec<Option<RunResult>> = runs
        .into_iter()
        .map(|mut r| {
            // Each run knows the point it measured: any matrix key is a
            // variable of the report.
            if let Some(e) = index.runs.iter().find(|e| e.run_ids.contains(&r.run_id)) {
                r.point = e.point.clone();
            }
            Some(r)
        })
        .collect();
    let mut out = Vec::new();
    for e in index.runs.iter().filter(|e| e.run_ids.len() > 1) {
        let parts: Vec<RunResult> = e
            .run_ids
            .iter()
            .filter_map(|id| {
                let slot = runs
                    .iter_mut()
                    .find(|r| r.as_ref().is_some_and(|r| &r.run_id == id))?;
                slot.take()
            })
            .collect();
        if parts.is_empty() {
            continue;
        }
        let mut merged =
            wirebench_core::merge::instances(&parts).map_err(|err| InputError::Bad {
                path: path.to_path_buf(),
                why: format!("{}: {err}", e.key),
            })?;
        // Each instance alone (`alone = true`): its throughput beside the
        // others', and its run no separate point of the report.
        for (k, part) in merged.instances.iter_mut().enumerate() {
            let Some(alone) = index.runs.iter().find(|a| {
                a.rep == e.rep
                    && a.point.len() == e.point.len() + 1
                    && a.point.starts_with(&e.point)
                    && a.point.last() == Some(&("alone".to_string(), (k + 1).to_string()))
            }) else {
                continue;
            };
            for id in &alone.run_ids {
                if let Some(slot) = runs
                    .iter_mut()
                    .find(|r| r.as_ref().is_some_and(|r| &r.run_id == id))
                    && let Some(r) = slot.take()
                {
                    part.alone_ops_per_s = Some(r.summary.ops_per_s);
                }
            }
        }
        out.push(merged);
    }
    out.extend(runs.into_iter().flatten());
    out.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    // The sweep's order: its points as planned (the order each first ran
    // in), each point's repetitions together (they ran interleaved).
    let place = |r: &RunResult| {
        let entry = index.runs.iter().find(|e| e.run_ids.contains(&r.run_id));
        entry.map_or((usize::MAX, 0), |e| {
            let first = index
                .runs
                .iter()
                .position(|x| x.key == e.key)
                .unwrap_or(usize::MAX);
            (first, e.rep)
        })
    };
    out.sort_by_cached_key(place);
    Ok(out)
}

/// The `[report]` section of the experiments at `paths` (the first that
/// has one): what their spec asks of their report.
pub fn report_plan(paths: &[std::path::PathBuf]) -> Option<wirebench_core::index::ReportPlan> {
    paths
        .iter()
        .find_map(|p| wirebench_core::index::load(p).ok().flatten()?.report)
}

fn runs_in(path: &Path) -> Result<Vec<RunResult>, InputError> {
    let bad = |why: String| InputError::Bad {
        path: path.to_path_buf(),
        why,
    };
    if path.is_file() || path.join("run.json").is_file() {
        return Ok(vec![store::load(path).map_err(|e| bad(e.to_string()))?]);
    }
    let subdirs = |p: &Path| -> Result<Vec<PathBuf>, InputError> {
        let entries = std::fs::read_dir(p).map_err(|e| bad(e.to_string()))?;
        let mut v: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        Ok(v)
    };
    let is_run = |p: &PathBuf| p.join("run.json").is_file();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for d in subdirs(path)? {
        if is_run(&d) {
            dirs.push(d);
        } else {
            // A group: its runs count too.
            dirs.extend(subdirs(&d)?.into_iter().filter(is_run));
        }
    }
    if dirs.is_empty() {
        return Err(InputError::NoRuns(path.to_path_buf()));
    }
    dirs.iter()
        .map(|d| store::load(d).map_err(|e| bad(e.to_string())))
        .collect()
}
