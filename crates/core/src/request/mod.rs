//! The one serialisable form of a run: [`RunRequest`]. Its keys are the
//! flags of `wirebench run` (underscores for dashes), every one optional,
//! so that the command line, a sweep's TOML and an agent's JSON all make
//! the same value. [`RunRequest::check`] applies the defaults, checks the
//! values against each other and the machine, and gives the [`RunSpec`](crate::spec::RunSpec)
//! everything downstream takes, or a [`SpecError`] that names the flag,
//! the bad value and the fix.
//!
//! ```
//! use wirebench_core::request::RunRequest;
//! use wirebench_core::topo::{CpuList, Topology};
//! let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
//! let req: RunRequest = serde_json::from_str(r#"{"size": "4KiB", "depth": 8}"#).unwrap();
//! let (spec, placement) = req.check(&topo).unwrap();
//! assert_eq!(spec.transport.size_bytes(), 4096);
//! assert_eq!(placement.server_cpus.unwrap().to_string(), "1");
//! let bad = RunRequest { depth: Some(0), ..RunRequest::default() };
//! assert!(bad.check(&topo).unwrap_err().to_string().starts_with("--depth 0"));
//! ```

use crate::kind::TransportKind;
use crate::topo::{CpuList, Topology};
use crate::units::{Bytes, Dur, Rate};
use crate::values::{
    Arch, Arrival, Channel, ClientsAs, Endpoint, HttpVersion, KeyDist, KvProtocol, Mix, Ratio,
    Ready, S3Sign, S3Workload, SizeSpec, UrlStyle, Wait,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--trace [FILE]`: on, or on with a copy of the client's trace in FILE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Trace {
    /// `trace = true` (the bare flag) or `false`.
    On(bool),
    /// `trace = "FILE"`.
    File(PathBuf),
}

/// How `run` prints: progress lines and a summary, the whole result as
/// JSON, or the IPC report's CSV line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Text,
    Json,
    Csv,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
        })
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("'{s}' is not one of: text, json, csv")),
        }
    }
}

/// One run, as asked: each field is a flag of `wirebench run` (None: its
/// default). Credentials are never part of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub target: Option<Endpoint>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub listen: Option<Endpoint>,
    /// msgr or shm mode, read for the transport (`echo`, `sync`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_as: Option<ClientsAs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub ring_size: Option<Bytes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub size: Option<SizeSpec>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub response_size: Option<Bytes>,
    /// `sessions` is its name for shm.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "sessions")]
    pub clients: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns_per_client: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<Arrival>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub duration: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub warmup: Option<Dur>,
    /// A connection waiting this long for an operation fails the run (0s: no limit).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub op_timeout: Option<Dur>,
    /// Turns the hiccup meter off (`--no-hiccup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_hiccup: Option<bool>,
    /// A measured second with a platform stall longer than this is flagged.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub hiccup_threshold: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<CpuList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<CpuList>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub max_frame: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
    /// Objectives as written (`p99<1ms`, or several comma-separated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hlog: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
    /// Replace the files `hlog` and `trace` name when they exist already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sample: Option<u64>,
    /// The placement policy that chose the cpusets (set by a sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_policy: Option<String>,
    /// Notes on the placement (set by a sweep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_note: Vec<String>,
    /// Which of a sweep point's instances this run is: what `{instance}`
    /// stands for (set by a sweep; 0 otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<usize>,
    // S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<S3Workload>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub mix: Option<Mix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_style: Option<UrlStyle>,
    /// `--sign header|query` (s3): where the SigV4 signature goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<S3Sign>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub multipart_threshold: Option<Bytes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub part_size: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub put_parts: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_parts: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_bucket: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    // Key-value stores (redis, memcached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<KvProtocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub key_dist: Option<KeyDist>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub ratio: Option<Ratio>,
    // HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpVersion>,
    /// Extra request headers, `Name: value` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<bool>,
    // gRPC (also `header` for metadata, `ca_file`, `depth` for streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto_set: Option<PathBuf>,
    /// An external server's processes, observed (repeatable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_pid: Vec<u32>,
    /// An external server as every process of a cgroup v2 directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cgroup: Option<PathBuf>,
    /// A server the run starts (`sh -c`), observes and stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cmd: Option<String>,
    /// When `server_cmd` is ready: `tcp:PORT` or `line:REGEX`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub server_ready: Option<Ready>,
    /// The port `{port}` stands for (default: a free loopback port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Environment of the server the run starts: `KEY=VALUE` (repeatable),
    /// or a table in a spec file.
    #[serde(default, skip_serializing_if = "EnvVars::is_empty")]
    pub server_env: EnvVars,
    /// exec: the user's benchmark program, a command template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cmd: Option<String>,
    /// exec: what reads the program's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parser: Option<crate::values::Parser>,
    /// exec: environment of the program.
    #[serde(default, skip_serializing_if = "EnvVars::is_empty")]
    pub client_env: EnvVars,
    /// More servers of the same kind as `target` (`--target A,B`). The
    /// run's connections are dealt to all of them in turn; with load
    /// agents, agent `i`'s part goes to endpoint `i` mod their number; in a
    /// sweep, instance `i` of `k` takes endpoints `i`, `i + k`... (or
    /// endpoint `i` mod their number, when there are fewer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_target: Vec<Endpoint>,
    /// Load agents that make the load, `HOST:PORT` each; this run
    /// coordinates them and merges what they measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Agents this run starts itself: `ssh:[USER@]HOST` each (after
    /// `agents` in the order of `agent_weights`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<String>,
    /// Each agent's share of the clients, in the order of `agents` then
    /// `launch`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_weights: Vec<u32>,
    /// The connections this run makes among a run's (set by a coordinator
    /// for its agents: never a flag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::share::ConnShare>,
}

/// Environment variables, `KEY=VALUE` each: written as a list (as the
/// repeated flag gives them), read from a list or a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvVars(pub BTreeMap<String, String>);

impl EnvVars {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks each name: not empty, no `=` and no NUL.
    pub(crate) fn check(&self, flag: &'static str) -> Result<(), SpecError> {
        for (k, v) in &self.0 {
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(value(flag, format!("{k}={v}"), "give NAME=VALUE"));
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for EnvVars {
    type Err = String;
    /// One `KEY=VALUE`.
    fn from_str(s: &str) -> Result<EnvVars, String> {
        match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok(EnvVars(BTreeMap::from([(k.into(), v.into())]))),
            _ => Err(format!("'{s}' is not NAME=VALUE")),
        }
    }
}

impl Serialize for EnvVars {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(k, v)| format!("{k}={v}")))
    }
}

impl<'de> Deserialize<'de> for EnvVars {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EnvVars, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<String>),
            Table(BTreeMap<String, String>),
        }
        match Form::deserialize(d)? {
            Form::Table(t) => Ok(EnvVars(t)),
            Form::List(l) => {
                let mut out = BTreeMap::new();
                for item in l {
                    let one: EnvVars = item.parse().map_err(serde::de::Error::custom)?;
                    out.extend(one.0);
                }
                Ok(EnvVars(out))
            }
        }
    }
}

/// The placeholders a server command may hold.
pub const PLACEHOLDERS: [&str; 12] = [
    "clients",
    "conns",
    "depth",
    "size",
    "duration_s",
    "rate",
    "client_cpus",
    "server_cpus",
    "port",
    "instance",
    "run_dir",
    // This wirebench's own binary (a spec starting wirebench's servers).
    "wirebench",
];

/// Checks that every `{name}` in `text` is a placeholder.
pub(crate) fn check_placeholders(flag: &'static str, text: &str) -> Result<(), SpecError> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        let word = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if word && !PLACEHOLDERS.contains(&name) {
            return Err(value(
                flag,
                format!("{{{name}}}"),
                format!(
                    "not a placeholder; use {}",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                ),
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// Why a request cannot run. Each names the flag (or spec key: the same
/// name), the value, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A value outside its range.
    #[error("{flag} {value}: must be between {min} and {max}")]
    Range {
        flag: &'static str,
        value: String,
        min: String,
        max: String,
    },
    /// A flag of another transport.
    #[error("{flag} applies to --transport {transport} only")]
    OtherTransport {
        flag: &'static str,
        transport: TransportKind,
    },
    /// A value that cannot be used, and what to do instead.
    #[error("{flag} {value}: {fix}")]
    Value {
        flag: &'static str,
        value: String,
        fix: String,
    },
    /// A flag that does not go with the others, and why.
    #[error("{flag} {why}")]
    Flag { flag: &'static str, why: String },
    /// A flag whose value is wrong, and why.
    #[error("{flag}: {why}")]
    Invalid { flag: &'static str, why: String },
}

impl SpecError {
    /// The flag (`--depth`) the error is about.
    pub fn flag(&self) -> &'static str {
        match self {
            SpecError::Range { flag, .. }
            | SpecError::OtherTransport { flag, .. }
            | SpecError::Value { flag, .. }
            | SpecError::Flag { flag, .. }
            | SpecError::Invalid { flag, .. } => flag,
        }
    }
}

pub(crate) fn range(
    flag: &'static str,
    value: impl ToString,
    min: impl ToString,
    max: impl ToString,
) -> SpecError {
    SpecError::Range {
        flag,
        value: value.to_string(),
        min: min.to_string(),
        max: max.to_string(),
    }
}

pub(crate) fn value(flag: &'static str, v: impl ToString, fix: impl Into<String>) -> SpecError {
    SpecError::Value {
        flag,
        value: v.to_string(),
        fix: fix.into(),
    }
}

pub(crate) fn flag(flag: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Flag {
        flag,
        why: why.into(),
    }
}

pub(crate) fn invalid(flag: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        flag,
        why: why.into(),
    }
}

/// The most client workers of a run.
pub const MAX_CLIENTS: usize = 4096;
/// The most connections of a run.
pub const MAX_CONNECTIONS: usize = 65_536;
/// The most endpoints of a run without agents (`--target A,B,...`): each
/// worker keeps a histogram per endpoint its connections reach.
pub const MAX_ENDPOINTS: usize = 256;
/// The most requests outstanding on one connection.
pub const MAX_DEPTH: usize = 1 << 20;
/// Far above what one connection does on loopback (~100k/s): a typo, not a plan.
pub const MAX_RATE_PER_CONN: f64 = 10e6;
/// The most repetitions of one run.
pub const MAX_REPEAT: usize = 1000;
/// The longest warm-up or measured phase: a month is a typo, not a plan.
pub const MAX_PHASE: Duration = Duration::from_secs(30 * 24 * 3600);
/// A measured second with a platform stall longer than this is flagged.
pub const DEFAULT_HICCUP_THRESHOLD: Duration = Duration::from_millis(10);
/// How long a connection may wait for an operation before the run fails.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(10);
/// The bucket of the embedded fake S3 server.
pub const DEFAULT_BUCKET: &str = "wirebench";
/// The most keys a key-value run works on (a prepare phase writes them all
/// for reads).
pub const MAX_KV_KEYS: u64 = 100_000_000;

impl RunRequest {
    /// The keys a request takes (its fields), as a spec file writes them.
    pub const KEYS: [&'static str; 76] = [
        "transport",
        "arch",
        "target",
        "listen",
        "mode",
        "wait",
        "clients_as",
        "channel",
        "ring_size",
        "size",
        "response_size",
        "clients",
        "conns_per_client",
        "depth",
        "rate",
        "arrival",
        "duration",
        "count",
        "warmup",
        "op_timeout",
        "no_hiccup",
        "hiccup_threshold",
        "poll",
        "verify",
        "server_cpus",
        "client_cpus",
        "max_frame",
        "repeat",
        "slo",
        "hlog",
        "results",
        "force",
        "format",
        "trace",
        "trace_sample",
        "placement_policy",
        "placement_note",
        "instance",
        "workload",
        "mix",
        "objects",
        "url_style",
        "sign",
        "region",
        "multipart_threshold",
        "part_size",
        "put_parts",
        "get_parts",
        "keep",
        "create_bucket",
        "ca_file",
        "protocol",
        "keys",
        "key_dist",
        "ratio",
        "http",
        "header",
        "churn",
        "call",
        "data",
        "proto_set",
        "server_pid",
        "server_cgroup",
        "server_cmd",
        "server_ready",
        "port",
        "server_env",
        "client_cmd",
        "parser",
        "client_env",
        "also_target",
        "agents",
        "launch",
        "agent_weights",
        "share",
        "sessions",
    ];

    /// How the run prints (text by default).
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }

    /// Where results go (`results` by default).
    pub fn results_dir(&self) -> PathBuf {
        self.results.clone().unwrap_or_else(|| "results".into())
    }

    /// How many times the run is repeated (checked by [`RunRequest::check`]).
    pub fn repeat(&self) -> usize {
        self.repeat.unwrap_or(1)
    }

    /// Whether the run records an event timeline.
    pub fn traced(&self) -> bool {
        matches!(self.trace, Some(Trace::On(true) | Trace::File(_)))
    }

    /// The file that gets a copy of the client's trace, if any.
    pub fn trace_file(&self) -> Option<&Path> {
        match &self.trace {
            Some(Trace::File(f)) => Some(f),
            _ => None,
        }
    }

    /// The command line of `wirebench run` that makes this request (a
    /// dry run shows it): `--key value`, bare flags for booleans. The
    /// placement's policy and notes, which only a sweep sets, are left out.
    pub fn to_args(&self) -> Vec<String> {
        let v = serde_json::to_value(self).expect("a request serializes");
        let mut out = Vec::new();
        for key in RunRequest::KEYS {
            if key.starts_with("placement_")
                || key == "instance"
                || key == "share"
                || key == "also_target"
            {
                continue;
            }
            let Some(x) = v.get(key) else {
                continue;
            };
            let flag = format!("--{}", key.replace('_', "-"));
            if key == "target" {
                // `--target A,B`: the target and the others of its kind.
                let all: Vec<String> = self
                    .target
                    .iter()
                    .chain(&self.also_target)
                    .map(|e| e.to_string())
                    .collect();
                out.extend([flag, all.join(",")]);
                continue;
            }
            let values: Vec<&serde_json::Value> = match x {
                serde_json::Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for x in values {
                match x {
                    serde_json::Value::Bool(true) => out.push(flag.clone()),
                    serde_json::Value::Bool(false) | serde_json::Value::Null => {}
                    serde_json::Value::String(s) => out.extend([flag.clone(), s.clone()]),
                    other => out.extend([flag.clone(), other.to_string()]),
                }
            }
        }
        out
    }

    /// Takes every field `other` sets (a sweep's point over its base).
    pub fn merge(&mut self, other: RunRequest) {
        let mut mine = serde_json::to_value(&*self).expect("a request serializes");
        let theirs = serde_json::to_value(other).expect("a request serializes");
        if let (Some(m), serde_json::Value::Object(t)) = (mine.as_object_mut(), theirs) {
            m.extend(t);
        }
        *self = serde_json::from_value(mine).expect("merged fields keep their types");
    }
}

impl RunRequest {
    /// The mode a transport reads from `--mode`, or its first mode.
    pub(crate) fn mode_of<M: std::str::FromStr + Copy + std::fmt::Display>(
        &self,
        all: &[M],
        kind: TransportKind,
    ) -> Result<M, SpecError> {
        let Some(text) = &self.mode else {
            return Ok(all[0]);
        };
        text.parse().map_err(|_| {
            let names: Vec<String> = all.iter().map(|m| m.to_string()).collect();
            value(
                "--mode",
                text,
                format!(
                    "not a mode of --transport {kind}; use one of {}",
                    names.join(", ")
                ),
            )
        })
    }

    /// `--size` as one size (msgr, shm), between 1 byte and 4GiB-1.
    pub(crate) fn fixed_size(&self, default: u64) -> Result<u64, SpecError> {
        let size = match &self.size {
            None => default,
            Some(SizeSpec::Fixed(n)) => *n,
            Some(s) => {
                return Err(value(
                    "--size",
                    s,
                    "a list or a range of sizes applies to --transport s3 only",
                ));
            }
        };
        if size == 0 || size > u64::from(u32::MAX) {
            return Err(range("--size", size, "1 byte", "4GiB-1"));
        }
        Ok(size)
    }

    /// Whether a server is observed (its cpuset may then be given).
    pub(crate) fn observing(&self) -> bool {
        !self.server_pid.is_empty() || self.server_cgroup.is_some() || self.server_cmd.is_some()
    }
}

/// Checks that every CPU of `list` exists and may be used by this process.
pub fn check_cpus(name: &'static str, list: &CpuList, topo: &Topology) -> Result<(), SpecError> {
    let usable = topo.usable();
    let missing = list.missing_from(&usable);
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
    Err(value(
        name,
        list,
        format!(
            "CPU {} is not usable on this machine (usable CPUs: {usable}); pick CPUs from that list",
            missing.join(",")
        ),
    ))
}

#[cfg(test)]
mod tests;
