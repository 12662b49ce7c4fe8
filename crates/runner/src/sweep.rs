//! `sweep`: an experiment's planned runs executed in turn, each instance a
//! `wirebench run --request-stdin` child process that gets its
//! [`RunRequest`](wirebench_core::request::RunRequest) as one JSON line on stdin and writes its own result under
//! `<results>/<name>/`. The index (`sweep.json`) is rewritten after every
//! run, so `--resume` skips what is complete. A child per run keeps a
//! crashed run from taking the sweep with it, and gives each run a fresh
//! process to measure.

use crate::RunError;
use crate::process::{self, Cancel};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirebench_core::index::{self, Entry, Index};
use wirebench_core::plan::{Experiment, PlannedRun};
use wirebench_core::request::{Format, SpecError};
use wirebench_core::result::{RunResult, RunState};
use wirebench_core::store;

/// What a sweep tells the people watching.
pub trait SweepEvents {
    /// Resuming: `done` of `total` runs are complete already.
    fn resuming(&mut self, _done: usize, _total: usize) {}
    /// Run `number` (from 1) of `total` begins.
    fn run_started(
        &mut self,
        _number: usize,
        _total: usize,
        _run: &PlannedRun,
        _eta: Option<Duration>,
    ) {
    }
    /// A run ended (its entry in the index).
    fn run_ended(&mut self, _entry: &Entry) {}
    /// The run under way serves its live metrics at `url` (the port it
    /// bound: with `--metrics-listen HOST:0`, a new one each point).
    fn metrics_at(&mut self, _url: &str) {}
    /// Something to tell the user (the history made again, a run queued).
    fn note(&mut self, _text: &str) {}
}

/// How a sweep ended.
pub struct SweepOutcome {
    pub index: Index,
    pub dir: PathBuf,
    pub elapsed: Duration,
    pub failed: usize,
    pub interrupted: bool,
}

impl SweepOutcome {
    /// Every run of the sweep's index (this time's and a resumed one's)
    /// that reads back.
    pub fn runs(&self) -> Vec<wirebench_core::result::RunResult> {
        self.index
            .runs
            .iter()
            .flat_map(|e| &e.run_ids)
            .filter_map(|id| wirebench_core::store::load(&self.dir.join(id).join("run.json")).ok())
            .collect()
    }
}

/// How a sweep treats an experiment that exists already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refused: an existing experiment is never touched.
    Refuse,
    /// Continued, if the spec did not change for the runs made.
    Resume,
    /// Continued; points whose requests changed are run again.
    ResumeForce,
}

impl Existing {
    /// From `--resume` and `--force`.
    pub fn of(resume: bool, force: bool) -> Existing {
        match (resume, force) {
            (false, _) => Existing::Refuse,
            (true, false) => Existing::Resume,
            (true, true) => Existing::ResumeForce,
        }
    }
}

/// How a sweep goes about its runs.
#[derive(Debug, Clone)]
pub struct How {
    /// What to do with the results already there.
    pub existing: Existing,
    /// The live-metrics flags (`--metrics-listen`...) each run's first
    /// instance gets in its request, with its point (None: those of the
    /// spec's request, if any).
    pub metrics: Option<wirebench_core::live::LiveFlags>,
}

/// Runs the planned runs of `exp` under `results/<name>/`.
pub fn sweep(
    exp: &Experiment,
    spec_file: &Path,
    runs: &[PlannedRun],
    results: &Path,
    how: &How,
    cancel: &Cancel,
    events: &mut dyn SweepEvents,
) -> Result<SweepOutcome, RunError> {
    let (existing, metrics) = (how.existing, how.metrics.as_ref());
    wirebench_core::store::prepare_dir(results).map_err(|why| {
        RunError::Spec(SpecError::Invalid {
            flag: "--results",
            why: format!("{}: {why}", results.display()),
        })
    })?;
    let resume = existing != Existing::Refuse;
    let dir = results.join(&exp.name);
    let load = |dir: &Path| index::load(dir).map_err(|e| RunError::Failed(e.to_string()));
    let mut ix = match load(&dir)? {
        Some(_) if !resume => {
            return Err(RunError::Spec(SpecError::Flag {
                flag: "--resume",
                why: format!(
                    "is needed: {} holds an experiment already; add --resume to continue it, or change its name",
                    dir.display()
                ),
            }));
        }
        Some(ix) => ix,
        None => Index {
            name: exp.name.clone(),
            spec_file: spec_file.display().to_string(),
            planned: runs.len(),
            spec_hash: None,
            runs: vec![],
            report: None,
        },
    };
    let new_hash = index::spec_hash(runs.iter().flat_map(|r| &r.requests));
    let stale = changed_points(&ix, runs);
    // Points made before that this plan no longer has (a value taken out
    // of the matrix), and points it adds.
    let removed: Vec<&str> = ix
        .runs
        .iter()
        .filter(|e| !runs.iter().any(|r| r.key == e.key))
        .map(|e| e.key.as_str())
        .collect();
    let edited = ix.spec_hash.as_ref().is_some_and(|h| *h != new_hash);
    if resume
        && (edited || !stale.is_empty() || !removed.is_empty())
        && existing != Existing::ResumeForce
    {
        let mut what: Vec<String> = Vec::new();
        if ix.planned != runs.len() {
            what.push(format!("{} run(s) planned, {} now", ix.planned, runs.len()));
        }
        if !removed.is_empty() {
            what.push(format!(
                "no longer planned: {}",
                wirebench_core::units::excerpt(&removed.join(", "), 300)
            ));
        }
        let mut changed: Vec<&str> = stale
            .iter()
            .flat_map(|(_, c)| c.iter().map(String::as_str))
            .collect();
        changed.dedup();
        if !changed.is_empty() {
            what.push(format!(
                "{} run(s) made with other settings: {}",
                stale.len(),
                changed.join("; ")
            ));
        }
        if what.is_empty() {
            what.push("its runs' settings changed".into());
        }
        return Err(RunError::Spec(SpecError::Flag {
            flag: "--resume",
            why: format!(
                "refused: the spec changed since the experiment in {} was planned ({}); --resume-changed runs the changed and new points and leaves out those no longer planned, or give the experiment a new name",
                dir.display(),
                what.join("; ")
            ),
        }));
    }
    ix.planned = runs.len();
    (ix.spec_hash, ix.report) = (Some(new_hash), exp.report.clone());
    std::fs::create_dir_all(&dir)?;
    // Only points of this plan count as done.
    let done: Vec<String> = ix
        .runs
        .iter()
        .filter(|e| e.status == "complete" && !stale.iter().any(|(k, _)| *k == e.key))
        .filter(|e| runs.iter().any(|r| r.key == e.key))
        .map(|e| e.key.clone())
        .collect();
    let todo: Vec<&PlannedRun> = runs.iter().filter(|r| !done.contains(&r.key)).collect();
    if todo.len() < runs.len() {
        events.resuming(runs.len() - todo.len(), runs.len());
    }
    let began = Instant::now();
    let exe = std::env::current_exe()?;
    let history = wirebench_history::History::path_in(results);
    let mut failed = 0;
    for (i, r) in todo.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        let eta = (i > 0).then(|| began.elapsed().mul_f64((todo.len() - i) as f64 / i as f64));
        events.run_started(runs.len() - todo.len() + i + 1, runs.len(), r, eta);
        let mut entry = run_one(&exe, &dir, r, cancel, metrics, events)?;
        entry.requests = Some(r.requests.clone());
        // Each instance's run in the results' history (the runs save
        // themselves, and leave the index to the sweep).
        for id in &entry.run_ids {
            let run_dir = dir.join(id);
            if let Ok(run) = store::load(&run_dir.join("run.json")) {
                // Saved whatever the history's state: a point not indexed
                // is said, and the sweep goes on.
                if let Err(e) =
                    crate::record::index(&history, &run_dir, &run, &mut |n| events.note(n))
                {
                    events.note(&e.to_string());
                }
            }
        }
        if entry.status != "complete" {
            failed += 1;
        }
        events.run_ended(&entry);
        ix.runs.retain(|e| e.key != entry.key);
        ix.runs.push(entry);
        index::scaling(&mut ix);
        write_index(&dir, &ix, r, events)?;
    }
    Ok(SweepOutcome {
        index: ix,
        dir,
        elapsed: began.elapsed(),
        failed,
        interrupted: cancel.is_cancelled(),
    })
}

/// Writes the experiment's index after a run; with an upload (the spec's
/// `upload`), copies the experiment's directory beside its runs (what is
/// there already is not sent again): a failure is said, with the command
/// that completes it, and the sweep goes on.
fn write_index(
    dir: &Path,
    ix: &Index,
    r: &PlannedRun,
    events: &mut dyn SweepEvents,
) -> Result<(), RunError> {
    store::write_atomic(
        &index::path(dir),
        &serde_json::to_vec_pretty(ix).map_err(std::io::Error::other)?,
    )?;
    let Some(q) = r.requests.first().filter(|q| q.output.upload.is_some()) else {
        return Ok(());
    };
    let url = q.output.upload.as_ref().expect("filtered");
    let url = crate::upload::under(url, Path::new(dir.file_name().unwrap_or_default()));
    if let Err(e) = crate::upload::upload_dir(&url, dir, q.ca_file.as_deref()) {
        events.note(&format!(
            "the experiment's index was not uploaded to {url}: {e}; `wirebench s3 upload {} {url}` sends what is missing",
            dir.display()
        ));
    }
    Ok(())
}

/// Runs one planned run (its instances at once) and reads their results.
/// `metrics`: the live-metrics flags of the sweep (`--metrics-listen`...;
/// else its spec's), given to each run's first instance with the point it
/// runs, in its request.
fn run_one(
    exe: &Path,
    dir: &Path,
    r: &PlannedRun,
    cancel: &Cancel,
    metrics: Option<&wirebench_core::live::LiveFlags>,
    events: &mut dyn SweepEvents,
) -> Result<Entry, RunError> {
    let mut children: Vec<Child> = Vec::new();
    for (i, req) in r.requests.iter().enumerate() {
        let mut req = req.clone();
        req.output.results = Some(dir.to_path_buf());
        req.output.format = Some(Format::Json);
        // Its directory goes under the experiment's name.
        let name = Path::new(dir.file_name().unwrap_or_default());
        req.output.upload = req.output.upload.map(|u| crate::upload::under(&u, name));
        // One listener at a time: the first instance serves the metrics.
        let watch = metrics.cloned().unwrap_or_else(|| req.watch.clone());
        req.watch = match (i, watch.metrics_listen.is_some()) {
            (0, true) => wirebench_core::live::LiveFlags {
                metrics_point: Some(r.key.clone()),
                // A sweep prints its own progress.
                live: None,
                ..watch
            },
            _ => Default::default(),
        };
        let mut child = Command::new(exe)
            .args(["run", "--request-stdin"])
            .args(["--exit-with-parent", &std::process::id().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| RunError::Failed(format!("starting a run: {e}")))?;
        let mut line = serde_json::to_vec(&req).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // A child that died at once is reported below, from its stderr.
        let _ = child.stdin.take().expect("piped").write_all(&line);
        children.push(child);
    }
    // Drain the pipes while they run (a full pipe would block a child); the
    // address a run's metrics are served at is passed on as it comes.
    let (urls, served_at) = std::sync::mpsc::channel::<String>();
    let readers: Vec<_> = children
        .iter_mut()
        .map(|c| {
            let mut out = c.stdout.take().expect("piped");
            let err = c.stderr.take().expect("piped");
            let urls = urls.clone();
            let o = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = out.read_to_string(&mut s);
                s
            });
            let e = std::thread::spawn(move || stderr_of(err, &urls));
            (o, e)
        })
        .collect();
    drop(urls);
    let mut forwarded = false;
    loop {
        let running = children
            .iter_mut()
            .filter_map(|c| c.try_wait().ok())
            .filter(|s| s.is_none())
            .count();
        while let Ok(url) = served_at.try_recv() {
            events.metrics_at(&url);
        }
        if running == 0 {
            break;
        }
        // Ctrl-C, SIGTERM: the run under way gets the same signal (it
        // records it by its name), its partial result saved.
        if cancel.is_cancelled() && !forwarded {
            let signal = cancel.reason().and_then(|r| r.split_whitespace().next());
            for c in &children {
                let _ = process::forward_signal(c.id(), signal);
            }
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut results = Vec::new();
    let mut worst: Option<(String, Option<String>)> = None;
    for ((o, e), mut c) in readers.into_iter().zip(children) {
        let status = c.wait()?;
        let out = o.join().unwrap_or_default();
        let err = e.join().unwrap_or_default();
        match serde_json::from_str::<RunResult>(&out) {
            Ok(res) => {
                let state = match res.status.state {
                    RunState::Complete => "complete",
                    RunState::Failed => "failed",
                    RunState::Degraded => "degraded",
                    RunState::Interrupted => "interrupted",
                };
                if state != "complete" && worst.is_none() {
                    worst = Some((state.into(), res.status.reason.clone()));
                }
                results.push(res);
            }
            Err(_) => {
                let tail: Vec<&str> = err.lines().rev().take(3).collect();
                let why = format!(
                    "run exited with {}: {}",
                    process::describe(status),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                );
                worst.get_or_insert(("failed".into(), Some(why)));
            }
        }
    }
    let (status, reason) = worst.unwrap_or(("complete".into(), None));
    Ok(Entry {
        key: r.key.clone(),
        point: r.point.clone(),
        rep: r.rep,
        instances: r.instances,
        placement: r.placement.clone(),
        aggregate: index::aggregate(&results),
        run_ids: results.iter().map(|x| x.run_id.clone()).collect(),
        status,
        reason,
        scaling_vs_one_instance: None,
        requests: None,
    })
}

/// The complete runs whose point is still planned but with other requests
/// than those it was made with, and what changed. A run recorded without
/// its requests cannot be checked, and counts as changed.
fn changed_points(ix: &Index, runs: &[PlannedRun]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for e in ix.runs.iter().filter(|e| e.status == "complete") {
        let Some(r) = runs.iter().find(|r| r.key == e.key) else {
            continue;
        };
        let changes = match &e.requests {
            Some(old) => index::changes(old, &r.requests),
            None => vec!["(its requests were not recorded: it cannot be checked)".into()],
        };
        if !changes.is_empty() {
            out.push((e.key.clone(), changes));
        }
    }
    out
}

/// A run's stderr, whole, read line by line: each `metrics: URL` line's
/// URL sent on `urls` as it comes.
fn stderr_of(err: impl std::io::Read, urls: &std::sync::mpsc::Sender<String>) -> String {
    use std::io::BufRead as _;
    let mut s = String::new();
    let mut r = std::io::BufReader::new(err);
    loop {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return s,
            Ok(_) => {}
        }
        if let Some(url) = line.trim_end().strip_prefix("metrics: ") {
            let _ = urls.send(url.to_string());
        }
        s.push_str(&line);
    }
}
