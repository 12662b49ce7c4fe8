//! `wirebench sweep FILE`: an experiment from one TOML spec. The matrix is
//! expanded into runs (every combination, repeated, repetitions
//! interleaved); each run is a `wirebench run` child process (K of them at
//! once with `instances = K`, on disjoint cpusets) writing its own result
//! under `<results>/<name>/`; `sweep.json` indexes them and is rewritten
//! after every run, so `--resume` skips what is complete. Every key is
//! checked before anything runs. See `specs/example.toml`.

use super::run::{self, RunArgs};
use super::topo as topo_cmd;
use crate::usage;
use anyhow::Context;
use clap::{Args, CommandFactory, Parser};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wirebench_core::hist::{self, LatencySummary};
use wirebench_core::placement::{self, ExplicitTable, Planned, Policy};
use wirebench_core::result::{RunResult, RunState};
use wirebench_core::store;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_transports::sys;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The experiment spec (TOML); every key is documented in specs/example.toml.
    file: PathBuf,
    /// Print the plan (every run, its flags and cpusets) without running anything.
    #[arg(long)]
    dry_run: bool,
    /// Continue an interrupted sweep: runs already complete are skipped.
    #[arg(long)]
    resume: bool,
    /// Root of the results: the experiment goes to DIR/NAME/.
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// With --dry-run: plan for the topology of this /sys tree instead of this machine's.
    #[arg(long, requires = "dry_run")]
    sys: Option<PathBuf>,
}

/// `run`'s flags, parsed the way the command line parses them.
#[derive(Parser, Debug)]
#[command(name = "run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: RunArgs,
}

const TOP_KEYS: [&str; 6] = [
    "name",
    "repetitions",
    "cpusets",
    "cpusets_entry",
    "base",
    "matrix",
];
/// Keys of the sweep itself (not flags of `run`).
const SWEEP_KEYS: [&str; 2] = ["placement", "instances"];
/// Flags of `run` a sweep sets itself.
const RESERVED: [&str; 7] = [
    "results",
    "format",
    "repeat",
    "hlog",
    "placement_policy",
    "placement_note",
    "exit_with_parent",
];

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

fn closest<'a>(key: &str, valid: impl IntoIterator<Item = &'a str>) -> String {
    valid
        .into_iter()
        .min_by_key(|v| distance(key, v))
        .unwrap_or("")
        .to_string()
}

/// The keys a run may take: `run`'s flags (with underscores) and the sweep's own.
fn run_keys() -> Vec<String> {
    let cmd = RunFlags::command();
    let mut keys: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .map(|l| l.replace('-', "_"))
        .filter(|k| !RESERVED.contains(&k.as_str()))
        .collect();
    keys.extend(SWEEP_KEYS.iter().map(|k| k.to_string()));
    keys
}

/// One planned run: the values of the matrix variables, and what to start.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PlannedRun {
    key: String,
    point: Vec<(String, String)>,
    rep: usize,
    instances: usize,
    placement: Option<Planned>,
    /// Per instance: the flags of `run`.
    args: Vec<Vec<String>>,
}

/// The index of an experiment: `<results>/<name>/sweep.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Index {
    pub name: String,
    pub spec_file: String,
    pub planned: usize,
    pub runs: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Entry {
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
}

/// The instances of a run taken together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Aggregate {
    pub ops_per_s: f64,
    pub mb_per_s_out: f64,
    pub messages_received: u64,
    pub connect_time_s: f64,
    pub messaging_time_s: f64,
    pub latency: LatencySummary,
    pub client_cpu_us_per_op: f64,
    pub clients: usize,
    /// Server CPUs over all instances.
    pub smp: usize,
}

fn scalar(key: &str, v: &toml::Value) -> anyhow::Result<Vec<String>> {
    Ok(match v {
        toml::Value::String(s) => vec![s.clone()],
        toml::Value::Integer(i) => vec![i.to_string()],
        toml::Value::Float(f) => vec![f.to_string()],
        toml::Value::Boolean(b) => vec![b.to_string()],
        toml::Value::Array(a) => {
            let mut out = Vec::new();
            for x in a {
                out.extend(scalar(key, x)?);
            }
            out
        }
        _ => usage!("{key}: a value must be a string, a number, a boolean or a list of them"),
    })
}

/// `key = value` as flags of `run`.
fn to_flags(key: &str, values: &[String], bool_flags: &[String]) -> Vec<String> {
    let flag = format!("--{}", key.replace('_', "-"));
    let boolean = values.iter().all(|v| v == "true" || v == "false");
    if bool_flags.iter().any(|b| b == key) && boolean {
        return if values.iter().any(|v| v == "true") {
            vec![flag]
        } else {
            vec![]
        };
    }
    values
        .iter()
        .flat_map(|v| [flag.clone(), v.clone()])
        .collect()
}

struct Spec {
    name: String,
    repetitions: usize,
    table: Option<ExplicitTable>,
    base: Vec<(String, Vec<String>)>,
    matrix: Vec<(String, Vec<String>)>,
}

fn read_spec(file: &Path) -> anyhow::Result<Spec> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => usage!("{}: {e}", file.display()),
    };
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(e) => usage!("{}: not TOML: {e}", file.display()),
    };
    let f = file.display();
    for k in doc.keys() {
        if !TOP_KEYS.contains(&k.as_str()) {
            usage!(
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
        Some(_) => usage!(
            "{f}: name: letters, digits, '-', '_' and '.' only (it names the results directory)"
        ),
        None => usage!("{f}: the experiment needs a name = \"...\""),
    };
    let repetitions = match doc.get("repetitions") {
        None => 1,
        Some(toml::Value::Integer(n)) if (1..=1000).contains(n) => *n as usize,
        Some(_) => usage!("{f}: repetitions: a number between 1 and 1000"),
    };
    let table = match doc.get("cpusets") {
        None => None,
        Some(toml::Value::String(p)) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(p);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{f}: cpusets: reading {}", path.display()))?;
            let entry = doc.get("cpusets_entry").and_then(|v| v.as_str());
            match ExplicitTable::parse(&text, entry) {
                Ok(t) => Some(t),
                Err(e) => usage!("{f}: cpusets {}: {e}", path.display()),
            }
        }
        Some(_) => usage!("{f}: cpusets: the path of a JSON cpuset table"),
    };
    let valid = run_keys();
    let section = |name: &str, list: bool| -> anyhow::Result<Vec<(String, Vec<String>)>> {
        let Some(v) = doc.get(name) else {
            return Ok(vec![]);
        };
        let Some(t) = v.as_table() else {
            usage!("{f}: [{name}] must be a table of keys");
        };
        let mut out = Vec::new();
        for (k, v) in t {
            // `run --sessions` is `--clients` by another name (shm's word).
            let k = &if k == "sessions" {
                "clients".to_string()
            } else {
                k.clone()
            };
            if k == "access_key" || k == "secret_key" {
                usage!(
                    "{f}: [{name}] {k}: credentials never go in a spec file (it is stored with the results); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                );
            }
            if !valid.iter().any(|x| x == k) {
                let hint = if RESERVED.contains(&k.as_str()) {
                    "the sweep sets it itself".to_string()
                } else {
                    format!(
                        "did you mean '{}'?",
                        closest(k, valid.iter().map(|s| s.as_str()))
                    )
                };
                usage!("{f}: [{name}] unknown key '{k}' ({hint})");
            }
            if list && !v.is_array() {
                usage!("{f}: [matrix] {k}: a list of values, e.g. {k} = [1, 2]");
            }
            let vals = scalar(k, v)?;
            if list && vals.is_empty() {
                usage!("{f}: [matrix] {k}: an empty list");
            }
            out.push((k.clone(), vals));
        }
        Ok(out)
    };
    let base = section("base", false)?;
    let matrix = section("matrix", true)?;
    for (k, _) in &matrix {
        if base.iter().any(|(b, _)| b == k) {
            usage!("{f}: '{k}' is in both [base] and [matrix]: keep one");
        }
    }
    Ok(Spec {
        name,
        repetitions,
        table,
        base,
        matrix,
    })
}

/// Every combination of the matrix, in order.
fn expand(matrix: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut points: Vec<Vec<(String, String)>> = vec![vec![]];
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

fn split(list: &CpuList, k: usize, i: usize) -> CpuList {
    let cpus = list.cpus();
    let per = (cpus.len() / k).max(1);
    let part: Vec<usize> = cpus
        .iter()
        .copied()
        .skip((i * per).min(cpus.len() - 1))
        .take(per)
        .collect();
    CpuList::from_cpus(part).expect("a share of a non-empty cpuset")
}

fn plan(spec: &Spec, topo: &Topology, check: bool) -> anyhow::Result<Vec<PlannedRun>> {
    // Flags without a value, and flags whose value is optional (`--trace
    // [FILE]`): `key = true` gives the bare flag, `key = false` nothing.
    let bool_flags: Vec<String> = RunFlags::command()
        .get_arguments()
        .filter(|a| {
            !a.get_action().takes_values() || a.get_num_args().is_some_and(|n| n.min_values() == 0)
        })
        .filter_map(|a| a.get_long())
        .map(|l| l.replace('-', "_"))
        .collect();
    let mut runs = Vec::new();
    for rep in 1..=spec.repetitions {
        for point in expand(&spec.matrix) {
            let all: Vec<(String, Vec<String>)> = spec
                .base
                .iter()
                .cloned()
                .chain(point.iter().map(|(k, v)| (k.clone(), vec![v.clone()])))
                .collect();
            let get = |k: &str| all.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
            let num = |k: &str, d: usize| -> anyhow::Result<usize> {
                match get(k) {
                    None => Ok(d),
                    Some(v) => match v[0].parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => usage!("{k} = {}: a whole number, at least 1", v[0]),
                    },
                }
            };
            let clients = num("clients", 1)?;
            let instances = num("instances", 1)?;
            if clients % instances != 0 {
                usage!(
                    "instances = {instances} with clients = {clients}: the clients must divide evenly among the instances"
                );
            }
            let policy = match get("placement").map(|v| v[0].clone()).as_deref() {
                None => None,
                Some("balanced") => Some(Policy::Balanced),
                Some("separated") => Some(Policy::Separated),
                Some("explicit") => match &spec.table {
                    Some(t) => Some(Policy::Explicit(t.clone())),
                    None => usage!("placement = \"explicit\" needs cpusets = \"TABLE.json\""),
                },
                Some(other) => usage!(
                    "placement = \"{other}\": one of balanced, separated, explicit (did you mean '{}'?)",
                    closest(other, ["balanced", "separated", "explicit"])
                ),
            };
            if policy.is_some() && (get("server_cpus").is_some() || get("client_cpus").is_some()) {
                usage!("placement chooses the cpusets: drop server_cpus and client_cpus");
            }
            let placed = match &policy {
                Some(p) => Some(match placement::place(p, clients, topo) {
                    Ok(pl) => pl,
                    Err(e) => usage!("placement {}: {e}", p.name()),
                }),
                None => None,
            };
            let mut args_per = Vec::new();
            let too_few = |l: &CpuList| l.len() < instances;
            let shared_note = placed
                .as_ref()
                .is_some_and(|p| too_few(&p.server) || too_few(&p.client))
                || (placed.is_none() && instances > 1 && topo.usable().len() < 2 * instances);
            for i in 0..instances {
                let mut args = Vec::new();
                for (k, v) in &all {
                    if SWEEP_KEYS.contains(&k.as_str()) || k == "clients" {
                        continue;
                    }
                    args.extend(to_flags(k, v, &bool_flags));
                }
                args.extend(["--clients".into(), (clients / instances).to_string()]);
                if let Some(pl) = &placed {
                    args.extend([
                        "--server-cpus".into(),
                        split(&pl.server, instances, i).to_string(),
                    ]);
                    args.extend([
                        "--client-cpus".into(),
                        split(&pl.client, instances, i).to_string(),
                    ]);
                    args.extend(["--placement-policy".into(), pl.policy.clone()]);
                    for n in &pl.notes {
                        args.extend(["--placement-note".into(), n.clone()]);
                    }
                } else if instances > 1 {
                    let usable = topo.usable();
                    let mid = usable.len() / 2;
                    let c = CpuList::from_cpus(usable.cpus()[..mid.max(1)].to_vec())?;
                    let s =
                        CpuList::from_cpus(usable.cpus()[mid.min(usable.len() - 1)..].to_vec())?;
                    args.extend(["--server-cpus".into(), split(&s, instances, i).to_string()]);
                    args.extend(["--client-cpus".into(), split(&c, instances, i).to_string()]);
                }
                if shared_note {
                    args.extend([
                        "--placement-note".into(),
                        format!("{instances} instances on too few CPUs: their cpusets overlap"),
                    ]);
                }
                if check {
                    let flags = match RunFlags::try_parse_from(&args) {
                        Ok(f) => f,
                        Err(e) => usage!(
                            "run {}: {}",
                            point_text(&point),
                            e.to_string().lines().next().unwrap_or_default()
                        ),
                    };
                    if let Err(e) = run::validate(&flags.run, topo) {
                        usage!("run {}: {e}", point_text(&point));
                    }
                }
                args_per.push(args);
            }
            let mut key = point_text(&point);
            if spec.repetitions > 1 {
                key = format!("{key} rep={rep}").trim().to_string();
            }
            runs.push(PlannedRun {
                key,
                point,
                rep,
                instances,
                placement: placed,
                args: args_per,
            });
        }
    }
    Ok(runs)
}

fn point_text(point: &[(String, String)]) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn index_path(dir: &Path) -> PathBuf {
    dir.join("sweep.json")
}

pub(super) fn load_index(dir: &Path) -> anyhow::Result<Option<Index>> {
    let p = index_path(dir);
    if !p.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&p)?;
    Ok(Some(
        serde_json::from_str(&text).with_context(|| format!("reading {}", p.display()))?,
    ))
}

fn aggregate(results: &[RunResult]) -> Option<Aggregate> {
    let mut h = hist::new_hist();
    for r in results {
        h.add(&hist::decode(&r.latency_hist).ok()?).ok()?;
    }
    let ops: u64 = results.iter().map(|r| r.summary.ops).sum();
    let cpu: f64 = results.iter().map(|r| r.summary.client_cpu_s).sum();
    Some(Aggregate {
        ops_per_s: results.iter().map(|r| r.summary.ops_per_s).sum(),
        mb_per_s_out: results.iter().map(|r| r.summary.mb_per_s_out).sum(),
        messages_received: results.iter().map(|r| r.summary.messages_received).sum(),
        connect_time_s: results
            .iter()
            .map(|r| r.summary.connect_time_ns as f64 / 1e9)
            .fold(0.0, f64::max),
        messaging_time_s: results
            .iter()
            .map(|r| r.summary.measured_ns as f64 / 1e9)
            .fold(0.0, f64::max),
        latency: LatencySummary::of(&h),
        client_cpu_us_per_op: if ops > 0 { cpu * 1e6 / ops as f64 } else { 0.0 },
        clients: results.iter().map(|r| r.spec.clients).sum(),
        smp: results
            .iter()
            .map(|r| r.placement.server_cpus.as_ref().map_or(0, |c| c.len()))
            .sum(),
    })
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
fn scaling(index: &mut Index) {
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

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

pub fn sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let spec = read_spec(&a.file)?;
    let topo = topo_cmd::read(a.sys.as_ref())?;
    let runs = plan(&spec, &topo, a.sys.is_none())?;
    let dir = a.results.join(&spec.name);
    if a.dry_run {
        println!(
            "sweep {}: {} run(s) ({} point(s) x {} repetition(s)), results in {}",
            spec.name,
            runs.len(),
            runs.len() / spec.repetitions,
            spec.repetitions,
            dir.display()
        );
        for (i, r) in runs.iter().enumerate() {
            println!(
                "[{}/{}] {}",
                i + 1,
                runs.len(),
                if r.key.is_empty() { "(base)" } else { &r.key }
            );
            if let Some(p) = &r.placement {
                println!(
                    "    placement {}: server {}, client {}",
                    p.policy, p.server, p.client
                );
                for n in &p.notes {
                    println!("    note: {n}");
                }
            }
            for (i, args) in r.args.iter().enumerate() {
                let who = if r.instances > 1 {
                    format!("instance {}: ", i + 1)
                } else {
                    String::new()
                };
                let shown: Vec<String> = args
                    .iter()
                    .map(|a| {
                        if a.contains(' ') {
                            format!("'{a}'")
                        } else {
                            a.clone()
                        }
                    })
                    .collect();
                println!("    {who}wirebench run {}", shown.join(" "));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut index = match load_index(&dir)? {
        Some(_) if !a.resume => usage!(
            "{} holds an experiment already: add --resume to continue it, or change its name",
            dir.display()
        ),
        Some(ix) => ix,
        None => Index {
            name: spec.name.clone(),
            spec_file: a.file.display().to_string(),
            planned: runs.len(),
            runs: vec![],
        },
    };
    index.planned = runs.len();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Ctrl-C and SIGTERM: the run under way is stopped (its partial result
    // saved), the index written, and the sweep ends; --resume continues it.
    let signal = run::watch_signals()?;
    let done_keys: Vec<String> = index
        .runs
        .iter()
        .filter(|e| e.status == "complete")
        .map(|e| e.key.clone())
        .collect();
    let todo: Vec<&PlannedRun> = runs
        .iter()
        .filter(|r| !done_keys.contains(&r.key))
        .collect();
    if todo.len() < runs.len() {
        eprintln!(
            "sweep {}: resuming: {} of {} run(s) complete already",
            spec.name,
            runs.len() - todo.len(),
            runs.len()
        );
    }
    let began = Instant::now();
    let exe = std::env::current_exe()?;
    let mut failed = 0;
    for (i, r) in todo.iter().enumerate() {
        if signal.get().is_some() {
            break;
        }
        let eta = if i == 0 {
            "?".to_string()
        } else {
            fmt_secs(began.elapsed() / i as u32 * (todo.len() - i) as u32)
        };
        let width = 20;
        let filled = width * (runs.len() - todo.len() + i) / runs.len().max(1);
        eprintln!(
            "sweep [{}{}] {}/{}  {}  elapsed {}  ETA {eta}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            runs.len() - todo.len() + i + 1,
            runs.len(),
            if r.key.is_empty() { "(base)" } else { &r.key },
            fmt_secs(began.elapsed()),
        );
        let entry = run_one(&exe, &dir, r, &signal)?;
        if entry.status != "complete" {
            failed += 1;
            eprintln!(
                "  {}: {}",
                entry.status,
                entry.reason.as_deref().unwrap_or("no reason given")
            );
        }
        index.runs.retain(|e| e.key != entry.key);
        index.runs.push(entry);
        scaling(&mut index);
        store::write_atomic(&index_path(&dir), &serde_json::to_vec_pretty(&index)?)?;
    }
    let complete = index.runs.iter().filter(|e| e.status == "complete").count();
    eprintln!(
        "sweep {}: {complete} of {} run(s) complete in {}; index: {}",
        spec.name,
        runs.len(),
        fmt_secs(began.elapsed()),
        index_path(&dir).display()
    );
    for e in index
        .runs
        .iter()
        .filter(|e| e.scaling_vs_one_instance.is_some())
    {
        eprintln!(
            "  scaling efficiency {}: {:.2} (ops/s of {} instances / one instance on all the cores)",
            e.key,
            e.scaling_vs_one_instance.unwrap_or(0.0),
            e.instances
        );
    }
    if signal.get().is_some() {
        eprintln!("interrupted: continue with --resume");
        return Ok(ExitCode::from(130));
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs one planned run (its instances at once) and reads their results.
fn run_one(
    exe: &Path,
    dir: &Path,
    r: &PlannedRun,
    signal: &OnceLock<&'static str>,
) -> anyhow::Result<Entry> {
    let mut children: Vec<Child> = Vec::new();
    for args in &r.args {
        let child = Command::new(exe)
            .arg("run")
            .args(args)
            .args(["--results", &dir.display().to_string(), "--format", "json"])
            .args(["--exit-with-parent", &std::process::id().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .context("starting a run")?;
        children.push(child);
    }
    // Drain the pipes while they run (a full pipe would block a child).
    let readers: Vec<_> = children
        .iter_mut()
        .map(|c| {
            let mut out = c.stdout.take().expect("piped");
            let mut err = c.stderr.take().expect("piped");
            let o = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = out.read_to_string(&mut s);
                s
            });
            let e = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                s
            });
            (o, e)
        })
        .collect();
    let mut forwarded = false;
    loop {
        let running = children
            .iter_mut()
            .filter_map(|c| c.try_wait().ok())
            .filter(|s| s.is_none())
            .count();
        if running == 0 {
            break;
        }
        if signal.get().is_some() && !forwarded {
            for c in &children {
                let _ = sys::signal_process(c.id(), false);
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
                    "run exited with {status}: {}",
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
        aggregate: aggregate(&results),
        run_ids: results.iter().map(|x| x.run_id.clone()).collect(),
        status,
        reason,
        scaling_vs_one_instance: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_expands_into_every_combination() {
        let m = vec![
            (
                "clients".to_string(),
                vec!["1".to_string(), "2".to_string()],
            ),
            ("arch".to_string(), vec!["reactor".into(), "pool".into()]),
            (
                "placement".to_string(),
                vec!["balanced".into(), "separated".into()],
            ),
        ];
        let pts = expand(&m);
        assert_eq!(pts.len(), 8);
        assert_eq!(
            point_text(&pts[0]),
            "clients=1 arch=reactor placement=balanced"
        );
        assert_eq!(
            point_text(&pts[7]),
            "clients=2 arch=pool placement=separated"
        );
        assert_eq!(expand(&[]).len(), 1);
    }

    #[test]
    fn unknown_keys_get_the_closest_valid_one() {
        assert_eq!(
            closest("clinets", run_keys().iter().map(|s| s.as_str())),
            "clients"
        );
        assert_eq!(
            closest("conns_per_clent", run_keys().iter().map(|s| s.as_str())),
            "conns_per_client"
        );
        assert_eq!(closest("repetitons", TOP_KEYS), "repetitions");
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_example_spec_documents_every_key() {
        let text = include_str!("../../../../specs/example.toml");
        for k in run_keys().iter().map(String::as_str).chain(TOP_KEYS) {
            assert!(
                text.contains(&format!("{k} =")) || text.contains(&format!("[{k}]")),
                "specs/example.toml does not document '{k}'"
            );
        }
    }

    #[test]
    fn cpusets_split_among_instances() {
        let l = CpuList::parse("0-7").unwrap();
        assert_eq!(split(&l, 2, 0).to_string(), "0-3");
        assert_eq!(split(&l, 2, 1).to_string(), "4-7");
        assert_eq!(split(&CpuList::parse("3").unwrap(), 2, 1).to_string(), "3");
    }
}
