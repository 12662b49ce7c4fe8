//! An experiment's plan: a TOML spec (`name`, `repetitions`, `[base]`,
//! `[matrix]`, explicit `cpusets`) expanded into runs, each a
//! [`RunRequest`] per instance with its cpusets from the placement policy.
//! Every combination of the matrix runs; repetitions are interleaved
//! (every point once, then every point again). See `specs/example.toml`.

use crate::placement::{self, ExplicitTable, Planned, Policy};
use crate::request::RunRequest;
use crate::spec::Endpoint;
use crate::topo::{CpuList, Topology};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Why a spec cannot run; the message names the key (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

macro_rules! refuse {
    ($($arg:tt)*) => { return Err(PlanError(format!($($arg)*))) };
}

/// The most runs an experiment plans (its points times its repetitions).
pub const MAX_RUNS: usize = 100_000;

/// The spec's own keys.
pub const TOP_KEYS: [&str; 8] = [
    "name",
    "repetitions",
    "cpusets",
    "cpusets_entry",
    "base",
    "matrix",
    "scale",
    "report",
];
/// Keys of the sweep itself (not flags of `run`).
pub const SWEEP_KEYS: [&str; 3] = ["placement", "instances", "alone"];
/// Flags of `run` a sweep sets itself.
pub const RESERVED: [&str; 10] = [
    "results",
    "metrics_point",
    "force",
    "format",
    "repeat",
    "hlog",
    "placement_policy",
    "placement_note",
    "instance",
    "share",
];

/// Refuses a key of `[base]` or `[matrix]` that a spec may not set:
/// credentials, the live view, a key the sweep sets, an unknown one.
fn key_allowed(f: &str, name: &str, k: &str, valid: &[&str]) -> Result<(), PlanError> {
    if k == "access_key" || k == "secret_key" {
        refuse!(
            "{f}: [{name}] {k}: credentials never go in a spec file (it is stored with the results); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        );
    }
    if k == "live" {
        refuse!(
            "{f}: [{name}] live: a sweep has no live view (it prints its own progress); serve its runs' metrics with metrics_listen"
        );
    }
    if !valid.contains(&k) {
        let hint = if RESERVED.contains(&k) {
            "the sweep sets it itself".to_string()
        } else {
            format!("did you mean '{}'?", closest(k, valid.iter().copied()))
        };
        refuse!("{f}: [{name}] unknown key '{k}' ({hint})");
    }
    Ok(())
}

/// Levenshtein distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The valid key closest to `key`.
pub fn closest<'a>(key: &str, valid: impl IntoIterator<Item = &'a str>) -> String {
    valid
        .into_iter()
        .min_by_key(|v| distance(key, v))
        .unwrap_or("")
        .to_string()
}

/// The keys a run of a sweep may take: `run`'s (but those the sweep sets)
/// and the sweep's own.
pub fn run_keys() -> Vec<&'static str> {
    RunRequest::keys()
        .iter()
        .copied()
        .filter(|k| !RESERVED.contains(k))
        .chain(SWEEP_KEYS)
        .collect()
}

/// A spec file, read and checked key by key.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub repetitions: usize,
    pub table: Option<ExplicitTable>,
    pub base: Vec<(String, toml::Value)>,
    pub matrix: Vec<(String, Vec<toml::Value>)>,
    /// The names of a matrix key's values, where the spec gave a table of
    /// them (`server_cmd = { crimson = "...", async = "..." }`): in the
    /// order of its values. A point shows a named value by its name.
    pub names: Vec<(String, Vec<String>)>,
    /// Its `[report]` section (None: the report's own choices).
    pub report: Option<crate::index::ReportPlan>,
}

/// A value as people read it in a point (`arch=pool`, `size=4KiB`).
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks that `key = v` is a valid request key and value.
fn check_value(file: &str, section: &str, key: &str, v: &toml::Value) -> Result<(), PlanError> {
    if SWEEP_KEYS.contains(&key) {
        return Ok(());
    }
    let mut t = toml::Table::new();
    t.insert(key.to_string(), v.clone());
    if let Err(e) = RunRequest::deserialize(toml::Value::Table(t)) {
        refuse!("{file}: [{section}] {key} = {v}: {}", e.message());
    }
    Ok(())
}

impl Experiment {
    /// Reads and checks a spec file.
    pub fn read(file: &Path) -> Result<Experiment, PlanError> {
        Experiment::read_scaled(file, None)
    }

    /// Reads and checks a spec file at a scale: `[scale.NAME]`'s
    /// `repetitions`, `[scale.NAME.base]` and `[scale.NAME.matrix]` (each
    /// given) replace the spec's own (`--scale small`: the same study, on
    /// this machine, in minutes). The experiment keeps its name, with the
    /// scale after it (`messenger-small`), so that its results stay apart.
    pub fn read_scaled(file: &Path, scale: Option<&str>) -> Result<Experiment, PlanError> {
        let f = file.display().to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => refuse!("{f}: {e}"),
        };
        let doc: toml::Table = match text.parse() {
            Ok(d) => d,
            Err(e) => refuse!("{f}: not TOML: {e}"),
        };
        let dir = file.parent().unwrap_or(Path::new("."));
        let doc = match scale {
            None => doc,
            Some(s) => scaled(&f, doc, s)?,
        };
        Experiment::from_table(&f, &doc, dir)
    }

    /// Checks a spec's document (`f` names it in messages; `dir` is where
    /// relative paths start).
    pub fn from_table(f: &str, doc: &toml::Table, dir: &Path) -> Result<Experiment, PlanError> {
        for k in doc.keys() {
            if !TOP_KEYS.contains(&k.as_str()) {
                refuse!(
                    "{f}: unknown key '{k}' (did you mean '{}'?)",
                    closest(k, TOP_KEYS)
                );
            }
        }
        let name = match doc.get("name") {
            Some(toml::Value::String(s))
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    && !s.starts_with('.') =>
            {
                s.clone()
            }
            Some(_) => refuse!(
                "{f}: name: letters, digits, '-', '_' and '.' only (it names the results directory)"
            ),
            None => refuse!("{f}: the experiment needs a name = \"...\""),
        };
        let repetitions = match doc.get("repetitions") {
            None => 1,
            Some(toml::Value::Integer(n)) if (1..=1000).contains(n) => {
                usize::try_from(*n).expect("between 1 and 1000")
            }
            Some(_) => refuse!("{f}: repetitions: a number between 1 and 1000"),
        };
        let table = match doc.get("cpusets") {
            None => None,
            Some(toml::Value::String(p)) => {
                let path = dir.join(p);
                let text = match std::fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(e) => refuse!("{f}: cpusets: reading {}: {e}", path.display()),
                };
                let entry = doc.get("cpusets_entry").and_then(|v| v.as_str());
                match ExplicitTable::parse(&text, entry) {
                    Ok(t) => Some(t),
                    Err(e) => refuse!("{f}: cpusets {}: {e}", path.display()),
                }
            }
            Some(_) => refuse!("{f}: cpusets: the path of a JSON cpuset table"),
        };
        let valid = run_keys();
        let section = |name: &str, list: bool| -> Result<Vec<(String, toml::Value)>, PlanError> {
            let Some(v) = doc.get(name) else {
                return Ok(vec![]);
            };
            let Some(t) = v.as_table() else {
                refuse!("{f}: [{name}] must be a table of keys");
            };
            let mut out = Vec::new();
            for (k, v) in t {
                // `run --sessions` is `--clients` by another name (shm's word).
                let k = match k.replace('-', "_") {
                    s if s == "sessions" => "clients".to_string(),
                    s => s,
                };
                key_allowed(f, name, &k, &valid)?;
                if list && !v.is_array() && !v.is_table() {
                    refuse!(
                        "{f}: [matrix] {k}: a list of values, e.g. {k} = [1, 2], or a table of named values, e.g. {k} = {{ a = 1, b = 2 }}"
                    );
                }
                out.push((k, v.clone()));
            }
            Ok(out)
        };
        let base = section("base", false)?;
        for (k, v) in &base {
            check_value(f, "base", k, v)?;
        }
        let mut matrix = Vec::new();
        let mut names = Vec::new();
        for (k, v) in section("matrix", true)? {
            let vals = match &v {
                toml::Value::Table(t) => {
                    for name in t.keys() {
                        let ok = !name.is_empty()
                            && name.len() <= 32
                            && name
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                        if !ok {
                            refuse!(
                                "{f}: [matrix] {k}: the name '{name}': letters, digits, '-', '_' and '.', at most 32"
                            );
                        }
                    }
                    let vals: Vec<toml::Value> = t.values().cloned().collect();
                    if vals.iter().enumerate().any(|(i, x)| vals[..i].contains(x)) {
                        refuse!("{f}: [matrix] {k}: two names for one value: keep one");
                    }
                    names.push((k.clone(), t.keys().cloned().collect()));
                    vals
                }
                _ => v.as_array().cloned().unwrap_or_default(),
            };
            if vals.is_empty() {
                refuse!("{f}: [matrix] {k}: an empty list");
            }
            for x in &vals {
                check_value(f, "matrix", &k, x)?;
            }
            if base.iter().any(|(b, _)| *b == k) {
                refuse!("{f}: '{k}' is in both [base] and [matrix]: keep one");
            }
            matrix.push((k, vals));
        }
        // Counted before anything is expanded: a matrix of 1000 x 1000
        // would take gigabytes to list.
        let runs = matrix
            .iter()
            .fold(repetitions, |n, (_, v)| n.saturating_mul(v.len()));
        if runs > MAX_RUNS {
            let sizes: Vec<String> = matrix
                .iter()
                .map(|(k, v)| format!("{} {k}", v.len()))
                .collect();
            refuse!(
                "{f}: [matrix] {} x {repetitions} repetition(s) = {runs} runs: at most {MAX_RUNS}; split the experiment or take fewer values",
                sizes.join(" x ")
            );
        }
        let report = match doc.get("report") {
            None => None,
            Some(v) => match crate::index::ReportPlan::deserialize(v.clone()) {
                Ok(r) => Some(r),
                Err(e) => refuse!(
                    "{f}: [report]: {} (it takes x, series, panel and heatmaps)",
                    e.message()
                ),
            },
        };
        Ok(Experiment {
            name,
            repetitions,
            table,
            base,
            matrix,
            names,
            report,
        })
    }

    /// A matrix value as a point shows it: its name, if the spec named
    /// it, else the value as people read it.
    pub fn value_name(&self, key: &str, v: &toml::Value) -> String {
        let named = self
            .names
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, n)| {
                let (_, vals) = self.matrix.iter().find(|(k, _)| k == key)?;
                n.get(vals.iter().position(|x| x == v)?)
            });
        named.cloned().unwrap_or_else(|| value_text(v))
    }
}

/// A spec's document at scale `name` (see [`Experiment::read_scaled`]).
fn scaled(f: &str, mut doc: toml::Table, name: &str) -> Result<toml::Table, PlanError> {
    let scales = doc.remove("scale");
    let known: Vec<String> = scales
        .as_ref()
        .and_then(|s| s.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    let Some(toml::Value::Table(at)) = scales
        .as_ref()
        .and_then(|s| s.as_table())
        .and_then(|t| t.get(name))
        .cloned()
    else {
        refuse!(
            "{f}: --scale {name}: the spec has {}",
            if known.is_empty() {
                "no [scale.*] section".to_string()
            } else {
                format!("scales {}", known.join(", "))
            }
        );
    };
    for (k, v) in at {
        match (k.as_str(), v) {
            ("repetitions", v) => {
                doc.insert(k, v);
            }
            ("base" | "matrix" | "report", v @ toml::Value::Table(_)) => {
                doc.insert(k, v);
            }
            (other, _) => refuse!(
                "{f}: [scale.{name}] {other}: only repetitions, [scale.{name}.base], [scale.{name}.matrix] and [scale.{name}.report] (each replaces the spec's own)"
            ),
        }
    }
    if let Some(toml::Value::String(n)) = doc.get("name").cloned() {
        doc.insert("name".into(), toml::Value::String(format!("{n}-{name}")));
    }
    Ok(doc)
}

/// One planned run: the values of the matrix variables, and what each of
/// its instances runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedRun {
    /// The point and repetition, as text: what `--resume` matches.
    pub key: String,
    pub point: Vec<(String, String)>,
    pub rep: usize,
    pub instances: usize,
    pub placement: Option<Planned>,
    /// Per instance: the request of its run.
    pub requests: Vec<RunRequest>,
}

/// Every combination of the matrix, in order.
pub fn expand(matrix: &[(String, Vec<toml::Value>)]) -> Vec<Vec<(String, toml::Value)>> {
    let mut points: Vec<Vec<(String, toml::Value)>> = vec![vec![]];
    for (k, vals) in matrix {
        points = points
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((k.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// `k=v k=v`: a point as people read it.
pub fn point_text(point: &[(String, String)]) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The runs of an experiment on `topo`. With `check`, every request is
/// checked as `run` would (not when planning for another machine's /sys).
pub fn plan(exp: &Experiment, topo: &Topology, check: bool) -> Result<Vec<PlannedRun>, PlanError> {
    let mut runs = Vec::new();
    for rep in 1..=exp.repetitions {
        for point in expand(&exp.matrix) {
            runs.extend(plan_point(exp, topo, check, rep, &point)?);
        }
    }
    Ok(runs)
}

/// A point's settings: the base's, then the point's own.
struct Settings(Vec<(String, toml::Value)>);

impl Settings {
    fn get(&self, k: &str) -> Option<toml::Value> {
        self.0.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone())
    }

    /// A whole number of at least 1 (1 when not given).
    fn count(&self, k: &str) -> Result<usize, PlanError> {
        match self.get(k) {
            None => Ok(1),
            Some(toml::Value::Integer(n)) if n > 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(v) => refuse!("{k} = {v}: a whole number, at least 1"),
        }
    }

    /// `alone = true`: each of K instances also runs alone (the contention
    /// check).
    fn alone(&self) -> Result<bool, PlanError> {
        match self.get("alone") {
            None | Some(toml::Value::Boolean(false)) => Ok(false),
            Some(toml::Value::Boolean(true)) => Ok(true),
            Some(v) => refuse!("alone = {v}: true or false"),
        }
    }

    /// The placement policy the point names, if any.
    fn policy(&self, exp: &Experiment) -> Result<Option<Policy>, PlanError> {
        let policy = match self.get("placement").as_ref().map(value_text).as_deref() {
            None => None,
            Some("balanced") => Some(Policy::Balanced),
            Some("separated") => Some(Policy::Separated),
            Some("explicit") => match &exp.table {
                Some(t) => Some(Policy::Explicit(t.clone())),
                None => refuse!("placement = \"explicit\" needs cpusets = \"TABLE.json\""),
            },
            Some(other) => refuse!(
                "placement = \"{other}\": one of balanced, separated, explicit (did you mean '{}'?)",
                closest(other, ["balanced", "separated", "explicit"])
            ),
        };
        if policy.is_some()
            && (self.get("server_cpus").is_some() || self.get("client_cpus").is_some())
        {
            refuse!("placement chooses the cpusets: drop server_cpus and client_cpus");
        }
        Ok(policy)
    }
}

/// One point of one repetition: its run (a request per instance), and with
/// `alone` each instance's run alone after it.
fn plan_point(
    exp: &Experiment,
    topo: &Topology,
    check: bool,
    rep: usize,
    point: &[(String, toml::Value)],
) -> Result<Vec<PlannedRun>, PlanError> {
    let all = Settings(
        exp.base
            .iter()
            .cloned()
            .chain(point.iter().cloned())
            .collect(),
    );
    let clients = all.count("clients")?;
    let instances = all.count("instances")?;
    let alone = all.alone()?;
    if clients % instances != 0 {
        refuse!(
            "instances = {instances} with clients = {clients}: the clients must divide evenly among the instances"
        );
    }
    let policy = all.policy(exp)?;
    let placed = match &policy {
        Some(p) => Some(match placement::place(p, clients, topo) {
            Ok(pl) => pl,
            Err(e) => refuse!("placement {}: {e}", p.name()),
        }),
        None => None,
    };
    let point_strs: Vec<(String, String)> = point
        .iter()
        .map(|(k, v)| (k.clone(), exp.value_name(k, v)))
        .collect();
    // A server given by its endpoint (not started by the run) has no
    // cpuset here.
    let external = all.get("target").is_some() && all.get("server_cmd").is_none();
    let too_few = |l: &CpuList| l.len() < instances;
    let shared_note = placed
        .as_ref()
        .is_some_and(|p| too_few(&p.server) || too_few(&p.client))
        || (placed.is_none()
            && instances > 1
            && topo.usable().len() < if external { 1 } else { 2 } * instances);
    let mut table = toml::Table::new();
    for (k, v) in &all.0 {
        if !SWEEP_KEYS.contains(&k.as_str()) {
            table.insert(k.clone(), v.clone());
        }
    }
    let base_req = RunRequest::deserialize(toml::Value::Table(table))
        .map_err(|e| PlanError(format!("run {}: {}", point_text(&point_strs), e.message())))?;
    let mut requests = Vec::new();
    for i in 0..instances {
        let mut req = instance_request(
            &base_req,
            topo,
            placed.as_ref(),
            external,
            clients,
            instances,
            i,
        )?;
        if shared_note {
            req.sweep.placement_note.push(format!(
                "{instances} instances on too few CPUs: their cpusets overlap"
            ));
        }
        if check && let Err(e) = req.check(topo) {
            refuse!("run {}: {e}", point_text(&point_strs));
        }
        requests.push(req);
    }
    let mut key = point_text(&point_strs);
    if exp.repetitions > 1 {
        key = format!("{key} rep={rep}").trim().to_string();
    }
    // The contention check: each instance alone, its cpusets and clients,
    // the others idle, right after them.
    let alones: Vec<PlannedRun> = match alone && instances > 1 {
        true => requests
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mut point = point_strs.clone();
                point.push(("alone".into(), (i + 1).to_string()));
                PlannedRun {
                    key: format!("{key} alone={}", i + 1),
                    point,
                    rep,
                    instances: 1,
                    placement: placed.clone(),
                    requests: vec![q.clone()],
                }
            })
            .collect(),
        false => vec![],
    };
    let mut runs = vec![PlannedRun {
        key,
        point: point_strs,
        rep,
        instances,
        placement: placed,
        requests,
    }];
    runs.extend(alones);
    Ok(runs)
}

impl PlannedRun {
    /// The run as people read it: its point, or `(base)`.
    pub fn name(&self) -> &str {
        if self.key.is_empty() {
            "(base)"
        } else {
            &self.key
        }
    }
}

/// What a dry run assumes its prepare phases write per second, to say how
/// long they may take (said with the figure).
pub const PREPARE_GUESS_BYTES_PER_S: u64 = 1 << 30;
/// A run that writes more than this before it measures is warned of.
pub const PREPARE_WARN_BYTES: u64 = 100 << 30;

/// The plan as a dry run prints it: every run, its placement and notes,
/// each instance's command line and what it writes before it measures;
/// then the time and data of the whole, and a warning for each run that
/// writes more than [`PREPARE_WARN_BYTES`] first.
pub fn describe(
    exp: &Experiment,
    runs: &[PlannedRun],
    results: &Path,
    topo: &Topology,
) -> Vec<String> {
    let mut cost = Cost::default();
    let mut out = vec![format!(
        "sweep {}: {} run(s) ({} point(s) x {} repetition(s)), results in {}",
        exp.name,
        runs.len(),
        runs.len() / exp.repetitions,
        exp.repetitions,
        results.join(&exp.name).display()
    )];
    for (i, r) in runs.iter().enumerate() {
        out.push(format!("[{}/{}] {}", i + 1, runs.len(), r.name()));
        let policy_notes = r
            .placement
            .as_ref()
            .map(|p| p.notes.clone())
            .unwrap_or_default();
        if let Some(p) = &r.placement {
            out.push(format!(
                "    placement {}: server {}, client {}",
                p.policy, p.server, p.client
            ));
            out.extend(p.notes.iter().map(|n| format!("    note: {n}")));
        }
        for (k, req) in r.requests.iter().enumerate() {
            let who = if r.instances > 1 {
                format!("instance {}: ", k + 1)
            } else {
                String::new()
            };
            let shown: Vec<String> = req
                .to_args()
                .into_iter()
                .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
                .collect();
            out.push(format!("    {who}wirebench run {}", shown.join(" ")));
            if let Some(line) = cost.add(
                req,
                topo,
                &format!("[{}/{}] {}", i + 1, runs.len(), r.name()),
            ) {
                out.push(format!("    {who}{line}"));
            }
            for n in req
                .sweep
                .placement_note
                .iter()
                .filter(|n| !policy_notes.contains(n))
            {
                out.push(format!("    {who}note: {n}"));
            }
        }
    }
    out.extend(cost.lines());
    out
}

/// The time and the data of a plan's runs, added as a dry run lists them.
#[derive(Default)]
struct Cost {
    /// Warm-ups and durations, summed over runs (instances run together).
    measured: std::collections::BTreeMap<String, std::time::Duration>,
    /// Bytes written by prepare phases.
    prepared: u64,
    /// Runs stopped by a count (no time known).
    counted: usize,
    /// Runs that could not be checked here.
    unchecked: usize,
    /// The runs over the warning threshold: (run, bytes).
    heavy: Vec<(String, u64)>,
}

impl Cost {
    /// Adds one request: the line that says what it writes before it
    /// measures (None: nothing).
    fn add(&mut self, req: &RunRequest, topo: &Topology, run: &str) -> Option<String> {
        use crate::units::{format_amount, format_size};
        let Ok((spec, _)) = req.check(topo) else {
            self.unchecked += 1;
            return None;
        };
        let t = std::time::Duration::from_nanos(spec.warmup_ns);
        match spec.stop {
            crate::values::StopSpec::DurationNs(d) => {
                let d = t + std::time::Duration::from_nanos(d);
                let longest = self.measured.entry(run.to_string()).or_default();
                *longest = (*longest).max(d);
            }
            crate::values::StopSpec::Count(_) => self.counted += 1,
        }
        let endpoints = 1 + spec.also_target.len() as u64;
        let bytes = spec.transport.describe().prepares_bytes() * endpoints;
        if bytes == 0 {
            return None;
        }
        self.prepared += bytes;
        if bytes > PREPARE_WARN_BYTES {
            self.heavy.push((run.to_string(), bytes));
        }
        Some(format!(
            "writes {} before it measures (its prepare phase; at {}/s about {})",
            format_amount(bytes),
            format_size(PREPARE_GUESS_BYTES_PER_S),
            whole_seconds(bytes / PREPARE_GUESS_BYTES_PER_S)
        ))
    }

    /// The whole plan's lines.
    fn lines(&self) -> Vec<String> {
        use crate::units::{format_amount, format_size};
        let measured: std::time::Duration = self.measured.values().sum();
        let counted = format!(
            "{} run(s) stopped by a count (their time unknown)",
            self.counted
        );
        let timed = format!(
            "about {} of warm-ups and measuring",
            whole_seconds(measured.as_secs())
        );
        let mut time = match (measured.is_zero(), self.counted) {
            (true, 1..) => format!("in all: {counted}"),
            (_, 0) => format!("in all: {timed}"),
            _ => format!("in all: {timed}, and {counted}"),
        };
        if self.prepared > 0 {
            time.push_str(&format!(
                "; prepare phases write {} first (at {}/s about {} more)",
                format_amount(self.prepared),
                format_size(PREPARE_GUESS_BYTES_PER_S),
                whole_seconds(self.prepared / PREPARE_GUESS_BYTES_PER_S)
            ));
        }
        let mut out = vec![time];
        if self.unchecked > 0 {
            out.push(format!(
                "note: {} run(s) could not be checked here (their time and data are not counted)",
                self.unchecked
            ));
        }
        if let Some((run, bytes)) = self.heavy.iter().max_by_key(|(_, b)| *b) {
            out.push(format!(
                "warning: {} run(s) each write more than {} before they measure (the most: {run}, {}); fewer --objects or --keys make it shorter",
                self.heavy.len(),
                format_size(PREPARE_WARN_BYTES),
                format_amount(*bytes)
            ));
        }
        out
    }
}

/// `s` seconds as people read a long time (`1h 27m 5s`).
fn whole_seconds(s: u64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(s.max(1))).to_string()
}

mod instances;
use instances::instance_request;
pub use instances::{
    instance_endpoints, instance_note, instance_of, instance_requests, split, split_cores,
};

#[cfg(test)]
mod tests;
