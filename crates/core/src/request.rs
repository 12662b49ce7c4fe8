//! The one serialisable form of a run: [`RunRequest`]. Its keys are the
//! flags of `wirebench run` (underscores for dashes), every one optional,
//! so that the command line, a sweep's TOML and an agent's JSON all make
//! the same value. [`RunRequest::check`] applies the defaults, checks the
//! values against each other and the machine, and gives the [`RunSpec`]
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

use crate::result::Placement;
use crate::slo::Slo;
use crate::spec::{
    Arch, Arrival, Channel, ClientsAs, Endpoint, HttpVersion, KeyDist, KvProtocol, Mix,
    ObservedSpec, Ratio, Ready, RunSpec, S3Sign, S3Workload, ServerSource, SizeSpec, StopSpec,
    TargetSpec, TransportKind, UrlStyle, Wait,
};
use crate::topo::{CpuList, Topology};
use crate::units::{Bytes, Dur, Rate};
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
    pub parser: Option<crate::spec::Parser>,
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

    /// The transport asked for (msgr by default).
    pub fn transport_kind(&self) -> TransportKind {
        self.transport
            .or_else(|| self.target.as_ref().and_then(Endpoint::scheme_transport))
            .unwrap_or(TransportKind::DEFAULT)
    }

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

    /// Checks where the run writes, before anything runs: the results
    /// directory is made (or refused), and the files of `hlog` and `trace`
    /// can be written and do not exist already (unless `force`).
    pub fn prepare_outputs(&self) -> Result<(), SpecError> {
        let dir = self.results_dir();
        crate::store::prepare_dir(&dir)
            .map_err(|why| invalid("--results", format!("{}: {why}", dir.display())))?;
        let force = self.force.unwrap_or(false);
        for (flag, file) in [
            ("--hlog", self.hlog.as_deref()),
            ("--trace", self.trace_file()),
        ] {
            if let Some(f) = file {
                crate::store::check_new_file(f, force)
                    .map_err(|why| invalid(flag, format!("{}: {why}", f.display())))?;
            }
        }
        Ok(())
    }

    /// The objectives, parsed.
    pub fn slos(&self) -> Result<Vec<Slo>, SpecError> {
        let mut all = Vec::new();
        for s in &self.slo {
            match Slo::parse_list(s) {
                Ok(v) => all.extend(v),
                Err(e) => return Err(invalid("--slo", e.to_string())),
            }
        }
        Ok(all)
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

    /// Applies the defaults and checks every value against the others and
    /// the machine: the spec of the run and where each side runs.
    pub fn check(&self, topo: &Topology) -> Result<(RunSpec, Placement), SpecError> {
        let kind = self.transport_kind();
        let clients = self.clients.unwrap_or(1);
        let conns = self.conns_per_client.unwrap_or(1);
        if !(1..=MAX_CLIENTS).contains(&clients) {
            return Err(range("--clients", clients, 1, MAX_CLIENTS));
        }
        if conns == 0
            || clients
                .checked_mul(conns)
                .is_none_or(|n| n > MAX_CONNECTIONS)
        {
            return Err(value(
                "--conns-per-client",
                conns,
                format!(
                    "must be at least 1, and --clients x --conns-per-client at most {MAX_CONNECTIONS}"
                ),
            ));
        }
        let transport = crate::transport::check(self, kind)?;
        let about = kind.about();
        if !about.own_program {
            for (f, set) in [
                ("--client-cmd", self.client_cmd.is_some()),
                ("--parser", self.parser.is_some()),
                ("--client-env", !self.client_env.is_empty()),
            ] {
                if set {
                    return Err(SpecError::OtherTransport {
                        flag: f,
                        transport: TransportKind::Exec,
                    });
                }
            }
        }
        let stream = transport.describe().is_stream();
        if self.traced()
            && let Some(why) = transport.describe().untraceable()
        {
            return Err(invalid("--trace", why));
        }
        if self.trace_sample == Some(0) {
            return Err(value(
                "--trace-sample",
                0,
                "trace one request in N, N at least 1",
            ));
        }
        if self.trace_sample.is_some() && !self.traced() {
            return Err(flag("--trace-sample", "needs --trace"));
        }
        if stream && self.depth.is_some() {
            return Err(flag(
                "--depth",
                "does not apply to --mode stream: the server sends without waiting for requests",
            ));
        }
        if stream && self.rate.is_some() {
            return Err(flag(
                "--rate",
                "does not apply to --mode stream: the server sends as fast as it can",
            ));
        }
        if self.arrival.is_some() && self.rate.is_none() {
            return Err(flag("--arrival", "applies to an open loop: add --rate"));
        }
        let agents = self.agents_checked(kind, clients)?;
        let share = self.share_checked(clients * conns)?;
        if let Some(Rate(rate)) = self.rate {
            // An agent's share keeps the run's total rate over all its
            // connections.
            let all_conns = share.map_or((clients * conns) as f64, |s| s.total as f64);
            let per_conn = rate / all_conns;
            if per_conn > MAX_RATE_PER_CONN {
                return Err(value(
                    "--rate",
                    rate,
                    format!(
                        "{per_conn:.0}/s per connection is more than one connection can send ({MAX_RATE_PER_CONN:.0}/s); add connections (--clients, --conns-per-client) or lower the rate"
                    ),
                ));
            }
            if per_conn < 0.1 {
                return Err(value(
                    "--rate",
                    rate,
                    "below 0.1/s per connection the run would send nothing; raise the rate or use fewer connections",
                ));
            }
        }
        // Open loop: depth caps the requests outstanding, which keeps memory
        // bounded when the server falls behind the timetable.
        let depth = self
            .depth
            .unwrap_or(transport.describe().default_depth(self.rate.is_some()));
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(range("--depth", depth, 1, MAX_DEPTH));
        }
        let stop = match (self.count, self.duration) {
            (Some(_), Some(_)) => {
                return Err(flag("--count", "and --duration: give one of them"));
            }
            (Some(0), _) => return Err(value("--count", 0, "must be at least 1")),
            (Some(c), _) => StopSpec::Count(c),
            (None, Some(Dur(d))) if d.is_zero() => {
                return Err(flag("--duration", "must be longer than 0s"));
            }
            (None, d) => StopSpec::DurationNs(phase_ns(
                "--duration",
                d.map_or(Duration::from_secs(5), |d| d.0),
            )?),
        };
        if about.own_program && self.warmup.is_some() {
            return Err(flag(
                "--warmup",
                "does not apply to --transport exec: the program warms up as it is told (in --client-cmd)",
            ));
        }
        let warmup_ns = match about.own_program {
            true => 0,
            false => phase_ns(
                "--warmup",
                self.warmup.map_or(Duration::from_secs(1), |d| d.0),
            )?,
        };
        let op_timeout = self.op_timeout.map_or(DEFAULT_OP_TIMEOUT, |d| d.0);
        let hiccup = match (self.no_hiccup, self.hiccup_threshold) {
            (Some(true), Some(_)) => {
                return Err(flag(
                    "--hiccup-threshold",
                    "and --no-hiccup: give one of them",
                ));
            }
            (Some(true), None) => None,
            (_, Some(Dur(d))) if d < Duration::from_millis(1) || d > Duration::from_secs(60) => {
                return Err(range("--hiccup-threshold", Dur(d), "1ms", "1m"));
            }
            (_, t) => Some(crate::units::nanos(
                t.map_or(DEFAULT_HICCUP_THRESHOLD, |d| d.0),
            )),
        };
        if op_timeout > MAX_PHASE {
            return Err(value(
                "--op-timeout",
                Dur(op_timeout),
                "at most 720h; 0s turns the limit off",
            ));
        }
        let arch = self.arch.unwrap_or(Arch::Reactor);
        let poll = self.poll.unwrap_or(false);
        if poll && self.target.is_none() && about.arch && arch == Arch::Pool {
            return Err(invalid(
                "--poll",
                "the pool server has no poll mode; use --arch reactor, or drop --poll (with --target, --poll applies to the client only)",
            ));
        }
        let observe = self.observed()?;
        if self.target.is_some() {
            for (name, set) in [
                ("--arch", self.arch.is_some()),
                (
                    "--server-cpus",
                    self.server_cpus.is_some() && observe.is_none(),
                ),
                ("--listen", self.listen.is_some()),
                ("--max-frame", self.max_frame.is_some()),
            ] {
                if set {
                    return Err(flag(
                        name,
                        "applies to the embedded server: drop it, or --target",
                    ));
                }
            }
        }
        let repeat = self.repeat();
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(range("--repeat", repeat, 1, MAX_REPEAT));
        }
        if repeat > 1 && self.traced() {
            return Err(flag(
                "--trace",
                "records one run's timeline: drop it, or --repeat",
            ));
        }
        if repeat > 1 && self.hlog.is_some() {
            return Err(flag("--hlog", "writes one run's log: drop it, or --repeat"));
        }
        if repeat > 1
            && let Some(why) = transport.describe().unrepeatable()
        {
            return Err(invalid("--repeat", why));
        }
        self.slos()?;
        if let Some(h) = &self.hlog {
            parent_exists("--hlog", h)?;
        }
        if let Some(f) = self.trace_file() {
            parent_exists("--trace", f)?;
        }
        let placement = self.placement(topo, clients)?;
        let target = match &self.target {
            Some(endpoint) => TargetSpec::External {
                endpoint: endpoint.clone(),
            },
            // A server command without a target: the target is the port
            // `{port}` stands for.
            None if about.own_program && self.server_cmd.is_some() => TargetSpec::External {
                endpoint: Endpoint::Tcp("127.0.0.1:0".into()),
            },
            None if about.own_program => TargetSpec::None,
            None => TargetSpec::Embedded {
                arch: about.arch.then_some(arch),
                cpus: placement
                    .server_cpus
                    .clone()
                    .expect("embedded server has CPUs"),
                poll,
                listen: self
                    .listen
                    .clone()
                    .or_else(|| about.embedded.map(|listen| listen()))
                    .unwrap_or_else(crate::transport::loopback),
            },
        };
        let spin = transport.describe().spins();
        let spec = RunSpec {
            target,
            clients,
            conns_per_client: conns,
            depth: if stream { 1 } else { depth },
            rate_per_s: self.rate.map(|r| r.0),
            arrival: self.arrival.unwrap_or(Arrival::Uniform),
            stop,
            warmup_ns,
            op_timeout_ns: crate::units::nanos(op_timeout),
            hiccup_threshold_ns: hiccup,
            poll: poll || spin,
            verify: self.verify.unwrap_or(false),
            client_cpus: placement.client_cpus.clone(),
            trace_sample: self.traced().then(|| self.trace_sample.unwrap_or(1)),
            transport,
            observe,
            server_env: self.server_env.0.clone(),
            also_target: self.also_target.clone(),
            agents,
            share,
        };
        Ok((spec, placement))
    }

    /// `--agents` and `--agent-weights`, checked: each agent `HOST:PORT`
    /// with a weight, a target they can reach, a client for each.
    fn agents_checked(
        &self,
        kind: TransportKind,
        clients: usize,
    ) -> Result<Vec<crate::share::AgentSpec>, SpecError> {
        if self.agents.is_empty() && self.launch.is_empty() {
            if !self.agent_weights.is_empty() {
                return Err(flag("--agent-weights", "weighs --agents: add them"));
            }
            self.endpoints_checked(kind, clients)?;
            return Ok(vec![]);
        }
        if self.share.is_some() {
            return Err(flag("--agents", "an agent's share of a run has no agents"));
        }
        for a in &self.agents {
            crate::share::check_address(a).map_err(|e| invalid("--agents", e))?;
        }
        for l in &self.launch {
            match l.strip_prefix("ssh:") {
                Some(h)
                    if !h.is_empty() && !h.contains(char::is_whitespace) && !h.starts_with('-') => {
                }
                _ => {
                    return Err(invalid("--launch", format!("'{l}' is not ssh:[USER@]HOST")));
                }
            }
        }
        let all: Vec<&String> = self.agents.iter().chain(&self.launch).collect();
        if let Some(dup) = all.iter().enumerate().find(|(i, a)| all[..*i].contains(a)) {
            return Err(invalid(
                "--agents",
                format!(
                    "{} is named twice: one agent makes one run at a time",
                    dup.1
                ),
            ));
        }
        let weights = match self.agent_weights.len() {
            0 => vec![1; all.len()],
            n if n == all.len() => self.agent_weights.clone(),
            n => {
                return Err(value(
                    "--agent-weights",
                    n,
                    format!("give one weight per agent ({} agents)", all.len()),
                ));
            }
        };
        if weights.contains(&0) {
            return Err(value(
                "--agent-weights",
                0,
                "every agent's weight is at least 1; leave an agent out instead",
            ));
        }
        if let Some(why) = kind.about().no_agents {
            return Err(invalid("--agents", why));
        }
        if self.target.is_none() {
            return Err(flag(
                "--agents",
                "make load on other hosts: give them a server they reach with --target (the embedded server listens on this host's loopback)",
            ));
        }
        for (name, set) in [
            ("--trace", self.traced()),
            ("--server-pid", !self.server_pid.is_empty()),
            ("--server-cgroup", self.server_cgroup.is_some()),
            ("--server-cmd", self.server_cmd.is_some()),
            ("--client-cpus", self.client_cpus.is_some()),
        ] {
            if set {
                return Err(flag(
                    name,
                    "does not go with --agents yet: each agent places and records its own part",
                ));
            }
        }
        let endpoints = 1 + self.also_target.len();
        if endpoints > all.len() {
            return Err(value(
                "--target",
                format!("{endpoints} endpoints"),
                format!(
                    "each endpoint takes the part of at least one agent: give as many agents ({}) or more",
                    all.len()
                ),
            ));
        }
        let kind = |e: &Endpoint| e.scheme_transport().unwrap_or(TransportKind::DEFAULT);
        if let Some(t) = &self.target
            && let Some(other) = self.also_target.iter().find(|e| kind(e) != kind(t))
        {
            return Err(invalid(
                "--target",
                format!("{other} is not a server of the same kind as {t}"),
            ));
        }
        let parts = crate::share::split(clients, &weights);
        if let Some(i) = parts.iter().position(|&n| n == 0) {
            return Err(value(
                "--clients",
                clients,
                format!(
                    "gives agent {} no client: give at least one client per agent ({} agents{})",
                    all[i],
                    all.len(),
                    if self.agent_weights.is_empty() {
                        ""
                    } else {
                        ", by their weights"
                    }
                ),
            ));
        }
        Ok(all
            .into_iter()
            .zip(weights)
            .map(|(a, weight)| crate::share::AgentSpec {
                address: a.clone(),
                weight,
            })
            .collect())
    }

    /// Several endpoints without agents (`--target A,B`): one process
    /// deals its connections to them in turn. Each gets at least one, and
    /// all are servers of one kind.
    fn endpoints_checked(&self, kind: TransportKind, clients: usize) -> Result<(), SpecError> {
        if self.also_target.is_empty() {
            return Ok(());
        }
        let Some(first) = &self.target else {
            return Err(flag(
                "--target",
                "is missing: more endpoints (also_target) go with a first one",
            ));
        };
        let all: Vec<&Endpoint> = std::iter::once(first).chain(&self.also_target).collect();
        if let Some(why) = kind.about().one_endpoint {
            return Err(invalid("--target", why));
        }
        if all.len() > MAX_ENDPOINTS {
            return Err(value(
                "--target",
                format!("{} endpoints", all.len()),
                format!(
                    "at most {MAX_ENDPOINTS} without agents (each client keeps a histogram per endpoint): spread them over load agents"
                ),
            ));
        }
        let same_kind = |e: &Endpoint| e.scheme_transport().unwrap_or(TransportKind::DEFAULT);
        if let Some(other) = all.iter().find(|e| same_kind(e) != same_kind(first)) {
            return Err(invalid(
                "--target",
                format!("{other} is not a server of the same kind as {first}"),
            ));
        }
        if let Some((_, dup)) = all.iter().enumerate().find(|(i, e)| all[..*i].contains(e)) {
            return Err(invalid(
                "--target",
                format!("{dup} is named twice: name each endpoint once"),
            ));
        }
        if self.server_cmd.is_some() {
            return Err(flag(
                "--server-cmd",
                "starts one server at one endpoint: with several endpoints, start them yourself (observe them with --server-pid or --server-cgroup)",
            ));
        }
        let conns = clients * self.conns_per_client.unwrap_or(1);
        if all.len() > conns {
            return Err(value(
                "--target",
                format!("{} endpoints", all.len()),
                format!(
                    "each endpoint takes at least one connection: give as many connections ({conns}, --clients x --conns-per-client) or more"
                ),
            ));
        }
        Ok(())
    }

    /// Refuses `--agents` for a command that makes its load here.
    pub fn no_agents(&self, command: &str) -> Result<(), SpecError> {
        if self.agents.is_empty() && self.launch.is_empty() {
            return Ok(());
        }
        Err(flag(
            "--agents",
            format!("is for `run`, `search` and sweeps: `{command}` makes its load on this host"),
        ))
    }

    /// An agent's share: this run's connections among the whole run's.
    fn share_checked(&self, conns: usize) -> Result<Option<crate::share::ConnShare>, SpecError> {
        let Some(s) = self.share else {
            return Ok(None);
        };
        let end = s.first.checked_add(conns as u64);
        if end.is_none_or(|e| e > s.total) {
            return Err(invalid(
                "share",
                format!(
                    "connections {}+{conns} are not among the run's {}",
                    s.first, s.total
                ),
            ));
        }
        Ok(Some(s))
    }

    /// Whether a server is observed (its cpuset may then be given).
    pub(crate) fn observing(&self) -> bool {
        !self.server_pid.is_empty() || self.server_cgroup.is_some() || self.server_cmd.is_some()
    }

    /// The server to observe (`--server-pid`, `--server-cgroup`,
    /// `--server-cmd`), checked: one of them, with a target.
    fn observed(&self) -> Result<Option<ObservedSpec>, SpecError> {
        let given: Vec<&'static str> = [
            ("--server-pid", !self.server_pid.is_empty()),
            ("--server-cgroup", self.server_cgroup.is_some()),
            ("--server-cmd", self.server_cmd.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, set)| set.then_some(f))
        .collect();
        if given.len() > 1 {
            return Err(flag(
                given[1],
                format!("and {}: give one of them", given[0]),
            ));
        }
        if self.server_ready.is_some() && self.server_cmd.is_none() {
            return Err(flag("--server-ready", "applies to --server-cmd"));
        }
        if self.port.is_some() && self.server_cmd.is_none() {
            return Err(flag("--port", "fills {port} of --server-cmd: add one"));
        }
        self.server_env.check("--server-env")?;
        if !self.server_env.is_empty()
            && (self.target.is_some() || self.transport_kind().about().own_program)
            && self.server_cmd.is_none()
        {
            return Err(flag(
                "--server-env",
                "applies to a server the run starts (embedded, or --server-cmd)",
            ));
        }
        if self.server_cmd.is_none()
            && let Some(t) = &self.target
            && t.tcp_addr().is_some_and(|a| a.ends_with(":0"))
        {
            return Err(value(
                "--target",
                t,
                "port 0 is only for a --server-cmd, whose {port} it becomes; give the server's port",
            ));
        }
        let Some(&first) = given.first() else {
            return Ok(None);
        };
        let exec = self.transport_kind().about().own_program;
        if self.target.is_none() && !exec {
            return Err(flag(
                first,
                "observes an external server: add --target, where the load goes",
            ));
        }
        if exec
            && self.target.is_none()
            && self.server_ready.is_none()
            && self
                .server_cmd
                .as_ref()
                .is_some_and(|c| !c.contains("{port}"))
        {
            return Err(flag(
                "--server-ready",
                "is needed: say when --server-cmd is ready (tcp:PORT or line:REGEX), or let it listen on {port}, or give --target",
            ));
        }
        if self.port == Some(0) {
            return Err(range("--port", 0, 1, 65535));
        }
        let source = if let Some(cmd) = &self.server_cmd {
            if cmd.trim().is_empty() {
                return Err(value(
                    "--server-cmd",
                    "''",
                    "give the command that starts the server",
                ));
            }
            check_placeholders("--server-cmd", cmd)?;
            ServerSource::Command {
                cmd: cmd.clone(),
                ready: self.server_ready.clone(),
            }
        } else if let Some(dir) = &self.server_cgroup {
            let v2 = dir.join("cgroup.procs").is_file() && dir.join("cgroup.controllers").is_file();
            if !v2 {
                return Err(value(
                    "--server-cgroup",
                    dir.display(),
                    "not a cgroup v2 directory (e.g. /sys/fs/cgroup/system.slice/redis.service)",
                ));
            }
            ServerSource::Cgroup(dir.clone())
        } else {
            for pid in &self.server_pid {
                if *pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
                    return Err(value("--server-pid", pid, "no such process"));
                }
            }
            ServerSource::Pids(self.server_pid.clone())
        };
        if matches!(&source, ServerSource::Command { ready: None, .. })
            && self.target.as_ref().is_some_and(|t| t.tcp_addr().is_none())
            && !matches!(&self.target, Some(Endpoint::Unix(_)))
        {
            return Err(flag(
                "--server-ready",
                "is needed: the target is not a socket",
            ));
        }
        Ok(Some(ObservedSpec {
            source,
            cpus: self.server_cpus.clone(),
        }))
    }

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

    /// Where client and server run: the cpusets given, or the usable CPUs
    /// split in two halves.
    fn placement(&self, topo: &Topology, clients: usize) -> Result<Placement, SpecError> {
        let usable = topo.usable();
        let mut notes = Vec::new();
        for (name, list) in [
            ("--client-cpus", &self.client_cpus),
            ("--server-cpus", &self.server_cpus),
        ] {
            if let Some(l) = list {
                check_cpus(name, l, topo)?;
            }
        }
        let half = |upper: bool| -> CpuList {
            let cpus = usable.cpus();
            let mid = cpus.len() / 2;
            let part = if upper { &cpus[mid..] } else { &cpus[..mid] };
            CpuList::from_cpus(part.to_vec()).unwrap_or_else(|_| usable.clone())
        };
        let others = |taken: &CpuList| -> Option<CpuList> {
            CpuList::from_cpus(
                usable
                    .cpus()
                    .iter()
                    .copied()
                    .filter(|c| !taken.contains(*c))
                    .collect(),
            )
            .ok()
        };
        // exec's server, if any, is the user's: placed like an external one.
        let external = self.target.is_some() || self.transport_kind().about().own_program;
        let (client_cpus, server_cpus) = match external {
            // An observed server with the cpuset it was given: the client
            // keeps off it unless told otherwise.
            true if self.server_cpus.is_some() => {
                let s = self.server_cpus.clone().expect("matched");
                let c = self
                    .client_cpus
                    .clone()
                    .unwrap_or_else(|| others(&s).unwrap_or_else(|| usable.clone()));
                (c, Some(s))
            }
            true => {
                // A server on this host that nothing observes may share the
                // client's CPUs: its CPU then reads as other processes'.
                let observed = !self.server_pid.is_empty()
                    || self.server_cgroup.is_some()
                    || self.server_cmd.is_some();
                let here = self.target.as_ref().is_some_and(|t| t.on_this_host());
                if self.client_cpus.is_none() && here && !observed && self.agents.is_empty() {
                    notes.push(format!(
                        "the server runs on this host, unobserved, and may share the client's CPUs ({usable}): its CPU would read as other processes'; keep them apart with --client-cpus, and observe it with --server-pid or --server-cmd"
                    ));
                }
                (
                    self.client_cpus.clone().unwrap_or_else(|| usable.clone()),
                    None,
                )
            }
            false => {
                let (c, s) = match (&self.client_cpus, &self.server_cpus) {
                    (Some(c), Some(s)) => (c.clone(), s.clone()),
                    (Some(c), None) => (c.clone(), others(c).unwrap_or_else(|| c.clone())),
                    (None, Some(s)) => (others(s).unwrap_or_else(|| s.clone()), s.clone()),
                    (None, None) if usable.len() >= 2 => {
                        notes.push(format!(
                            "default placement: the usable CPUs ({usable}) split in two halves"
                        ));
                        (half(false), half(true))
                    }
                    (None, None) => (usable.clone(), usable.clone()),
                };
                if c.overlaps(&s) {
                    notes.push(format!(
                        "client CPUs {c} and server CPUs {s} overlap: they compete for the same cores"
                    ));
                }
                (c, Some(s))
            }
        };
        if clients > client_cpus.len() {
            notes.push(format!(
                "{clients} clients share {} client CPU(s) ({client_cpus})",
                client_cpus.len()
            ));
        }
        Ok(Placement {
            client_cpus,
            server_cpus,
            notes: self.placement_note.iter().cloned().chain(notes).collect(),
            policy: self.placement_policy.clone(),
        })
    }
}

/// The length of a phase in ns, at most [`MAX_PHASE`].
pub(crate) fn phase_ns(name: &'static str, d: Duration) -> Result<u64, SpecError> {
    if d > MAX_PHASE {
        return Err(value(
            name,
            Dur(d),
            "longer than 30 days: a phase is at most 720h; for a longer soak, repeat runs",
        ));
    }
    Ok(crate::units::nanos(d))
}

/// A file's directory must exist (checked before any load).
pub(crate) fn parent_exists(name: &'static str, f: &Path) -> Result<(), SpecError> {
    let parent = f
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if parent.is_dir() {
        Ok(())
    } else {
        Err(value(
            name,
            f.display(),
            format!("the directory {} does not exist", parent.display()),
        ))
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
mod tests {
    use super::*;
    use crate::spec::{MsgrMode, ShmMode};

    fn two_cpus() -> Topology {
        Topology::with_cpus(CpuList::parse("0-1").unwrap())
    }

    fn req(json: &str) -> RunRequest {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
    }

    #[test]
    fn more_endpoints_need_a_first_one() {
        let r = req(r#"{"also_target": ["tcp://127.0.0.1:7001"]}"#);
        let e = r.check(&two_cpus()).unwrap_err();
        assert_eq!(e.flag(), "--target", "{e}");
        let r = req(
            r#"{"target": "tcp://127.0.0.1:7000", "also_target": ["tcp://127.0.0.1:7001"], "clients": 2}"#,
        );
        let (spec, _) = r.check(&two_cpus()).unwrap();
        assert_eq!(spec.also_target.len(), 1);
        // At most MAX_ENDPOINTS.
        let mut r = r;
        r.clients = Some(1000);
        r.also_target = (0..MAX_ENDPOINTS)
            .map(|k| format!("tcp://127.0.0.1:{}", 8000 + k).parse().unwrap())
            .collect();
        let e = r.check(&two_cpus()).unwrap_err();
        assert_eq!(e.flag(), "--target", "{e}");
        assert!(e.to_string().contains("at most 256"), "{e}");
    }

    #[test]
    fn the_defaults_are_the_readmes_run() {
        let (spec, placement) = RunRequest::default().check(&two_cpus()).unwrap();
        let m = spec.msgr().expect("msgr");
        assert_eq!(
            (m.mode, m.size_bytes, m.response_size_bytes),
            (MsgrMode::Echo, 64, 64)
        );
        assert_eq!((spec.clients, spec.conns_per_client, spec.depth), (1, 1, 1));
        assert_eq!(spec.stop, StopSpec::DurationNs(5_000_000_000));
        assert_eq!(spec.warmup_ns, 1_000_000_000);
        assert_eq!(placement.client_cpus.to_string(), "0");
        assert_eq!(placement.server_cpus.unwrap().to_string(), "1");
        assert!(placement.notes[0].contains("split in two halves"));
        assert!(matches!(
            spec.target,
            TargetSpec::Embedded {
                arch: Some(Arch::Reactor),
                ..
            }
        ));
    }

    /// Each bad request: the SpecError's variant, its flag and its message.
    #[test]
    fn bad_requests_name_the_flag_the_value_and_the_fix() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"{"agents": ["10.0.0.2:7460"]}"#,
                "--agents",
                "--agents make load on other hosts: give them a server they reach with --target",
            ),
            (
                r#"{"agents": ["10.0.0.2"], "target": "tcp://10.0.0.1:7470"}"#,
                "--agents",
                "--agents: '10.0.0.2' is not HOST:PORT",
            ),
            (
                r#"{"agents": ["a:1", "b:1"], "clients": 1, "target": "tcp://10.0.0.1:7470"}"#,
                "--clients",
                "--clients 1: gives agent b:1 no client: give at least one client per agent (2 agents)",
            ),
            (
                r#"{"agents": ["a:1", "b:1"], "agent_weights": [1], "target": "tcp://h:1"}"#,
                "--agent-weights",
                "--agent-weights 1: give one weight per agent (2 agents)",
            ),
            (
                r#"{"agents": ["a:1", "a:1"], "clients": 2, "target": "tcp://h:1"}"#,
                "--agents",
                "--agents: a:1 is named twice",
            ),
            (
                r#"{"agents": ["a:1"], "transport": "shm"}"#,
                "--agents",
                "--agents: shared memory is reached from its own host only",
            ),
            (
                r#"{"agents": ["a:1"], "target": "tcp://h:1", "trace": true}"#,
                "--trace",
                "--trace does not go with --agents yet",
            ),
            (
                r#"{"agent_weights": [1]}"#,
                "--agent-weights",
                "--agent-weights weighs --agents: add them",
            ),
            (
                r#"{"size": 0}"#,
                "--size",
                "--size 0: must be between 1 byte and 4GiB-1",
            ),
            (
                r#"{"depth": 0}"#,
                "--depth",
                "--depth 0: must be between 1 and 1048576",
            ),
            (
                r#"{"clients": 0}"#,
                "--clients",
                "--clients 0: must be between 1 and 4096",
            ),
            (
                r#"{"sessions": 5000}"#,
                "--clients",
                "--clients 5000: must be between 1 and 4096",
            ),
            (
                r#"{"count": 0}"#,
                "--count",
                "--count 0: must be at least 1",
            ),
            (
                r#"{"count": 5, "duration": "1s"}"#,
                "--count",
                "--count and --duration: give one of them",
            ),
            (
                r#"{"duration": "0s"}"#,
                "--duration",
                "--duration must be longer than 0s",
            ),
            (
                r#"{"duration": "18446744074s"}"#,
                "--duration",
                "longer than 30 days",
            ),
            // Found by the property tests: the product overflowed (and
            // wrapped to 0 in a release build, passing the check).
            (
                r#"{"clients": 8, "conns_per_client": 2305843009213693952}"#,
                "--conns-per-client",
                "at most 65536",
            ),
            (
                r#"{"server_cpus": "7"}"#,
                "--server-cpus",
                "--server-cpus 7: CPU 7 is not usable on this machine (usable CPUs: 0-1)",
            ),
            (
                r#"{"arch": "pool", "poll": true}"#,
                "--poll",
                "--poll: the pool server has no poll mode",
            ),
            (
                r#"{"mode": "nores"}"#,
                "--mode",
                "--mode nores: not a mode of --transport msgr; use one of echo, oneway, stream, rr",
            ),
            (
                r#"{"mode": "stream", "depth": 4}"#,
                "--depth",
                "--depth does not apply to --mode stream",
            ),
            (
                r#"{"mode": "stream", "rate": 100}"#,
                "--rate",
                "--rate does not apply to --mode stream",
            ),
            (
                r#"{"mode": "oneway", "response_size": 10}"#,
                "--response-size",
                "--response-size applies to --mode echo and rr only, not oneway",
            ),
            (
                r#"{"size": "2MiB", "max_frame": "1MiB"}"#,
                "--size",
                "above --max-frame 1048576",
            ),
            (
                r#"{"target": "tcp://127.0.0.1:1", "arch": "pool"}"#,
                "--arch",
                "--arch applies to the embedded server",
            ),
            (
                r#"{"rate": "50M/s"}"#,
                "--rate",
                "more than one connection can send",
            ),
            (
                r#"{"rate": 0.01, "clients": 2}"#,
                "--rate",
                "below 0.1/s per connection",
            ),
            (r#"{"arrival": "poisson"}"#, "--arrival", "add --rate"),
            (
                r#"{"slo": ["p99"]}"#,
                "--slo",
                "--slo: 'p99' is not an objective",
            ),
            (
                r#"{"hlog": "/nonexistent/dir/x.hlog"}"#,
                "--hlog",
                "the directory /nonexistent/dir does not exist",
            ),
            (
                r#"{"repeat": 0}"#,
                "--repeat",
                "--repeat 0: must be between 1 and 1000",
            ),
            (
                r#"{"repeat": 2, "trace": true}"#,
                "--trace",
                "records one run's timeline",
            ),
            (
                r#"{"trace_sample": 0, "trace": true}"#,
                "--trace-sample",
                "N at least 1",
            ),
            (
                r#"{"wait": "spin"}"#,
                "--wait",
                "--wait applies to --transport shm only",
            ),
            (
                r#"{"keep": true}"#,
                "--keep",
                "--keep applies to --transport s3 only",
            ),
            (
                r#"{"size": "1KiB..4KiB"}"#,
                "--size",
                "applies to --transport s3 only",
            ),
            (
                r#"{"transport": "msgr", "target": "s3://127.0.0.1:9/bucket"}"#,
                "--target",
                "add --transport s3",
            ),
            (
                r#"{"transport": "shm", "mode": "echo"}"#,
                "--mode",
                "use one of sync, async, nores, stream",
            ),
            (
                r#"{"transport": "shm", "mode": "sync", "depth": 4}"#,
                "--depth",
                "use --mode async",
            ),
            (
                r#"{"transport": "shm", "mode": "sync", "rate": 1000}"#,
                "--rate",
                "--mode sync sends when the response is back",
            ),
            (
                r#"{"transport": "shm", "size": "512MiB"}"#,
                "--size",
                "do not fit the largest ring",
            ),
            (
                r#"{"transport": "shm", "ring_size": 1000}"#,
                "--ring-size",
                "must be a power of two",
            ),
            (
                r#"{"transport": "shm", "channel": "pipe", "ring_size": "1MiB"}"#,
                "--ring-size",
                "applies to --channel shm only",
            ),
            (
                r#"{"transport": "shm", "channel": "pipe", "wait": "spin"}"#,
                "--wait",
                "the kernel does the waiting on pipe",
            ),
            (
                r#"{"transport": "shm", "channel": "pipe", "size": "100MiB"}"#,
                "--size",
                "the largest message over --channel pipe",
            ),
            (
                r#"{"transport": "shm", "arch": "pool"}"#,
                "--arch",
                "applies to --transport msgr only",
            ),
            (
                r#"{"transport": "shm", "target": "tcp://127.0.0.1:1"}"#,
                "--target",
                "--target unix:PATH",
            ),
            (
                r#"{"transport": "s3", "mode": "echo"}"#,
                "--mode",
                "an S3 run takes --workload",
            ),
            (
                r#"{"transport": "s3", "depth": 4}"#,
                "--depth",
                "one request outstanding",
            ),
            (
                r#"{"transport": "s3", "part_size": "1MiB"}"#,
                "--part-size",
                "at least 5MiB",
            ),
            (
                r#"{"transport": "s3", "mix": "get=1"}"#,
                "--mix",
                "--mix applies to --workload mixed only",
            ),
            (
                r#"{"transport": "s3", "objects": 0}"#,
                "--objects",
                "--objects 0: must be between 1 and 100000000",
            ),
            (
                r#"{"transport": "s3", "url_style": "virtual"}"#,
                "--url-style",
                "needs a host name",
            ),
            (
                r#"{"transport": "s3", "put_parts": 65}"#,
                "--put-parts",
                "--put-parts 65: must be between 1 and 64",
            ),
            (
                r#"{"mode": "rr", "trace": true}"#,
                "--trace",
                "no sequence number to trace",
            ),
            (
                r#"{"transport": "shm", "clients_as": "processes", "trace": true}"#,
                "--trace",
                "trace with --clients-as threads",
            ),
            (
                r#"{"transport": "exec", "client_cmd": "true", "parser": "fio-json", "trace": true}"#,
                "--trace",
                "measures itself",
            ),
            (
                r#"{"transport": "s3", "workload": "delete", "repeat": 2}"#,
                "--repeat",
                "deletes each object once",
            ),
            (
                r#"{"transport": "s3", "target": "tcp://127.0.0.1:1"}"#,
                "--target",
                "s3://HOST:PORT/BUCKET",
            ),
        ];
        for (json, flag, message) in cases {
            let e = req(json).check(&two_cpus()).expect_err(json);
            assert_eq!(e.flag(), *flag, "{json}: {e}");
            assert!(
                e.to_string().contains(message),
                "{json}: '{e}' does not say '{message}'"
            );
        }
    }

    #[test]
    fn every_key_is_a_field_and_a_request_reads_back() {
        let full = RunRequest {
            transport: Some(TransportKind::S3),
            arch: Some(Arch::Pool),
            target: Some("tcp://127.0.0.1:9".parse().unwrap()),
            listen: Some("unix:/tmp/x".parse().unwrap()),
            mode: Some("echo".into()),
            wait: Some(Wait::Spin),
            clients_as: Some(ClientsAs::Processes),
            channel: Some(Channel::Pipe),
            ring_size: Some(Bytes(1 << 20)),
            size: Some(SizeSpec::Range {
                min: 1024,
                max: 1 << 20,
            }),
            response_size: Some(Bytes(64)),
            clients: Some(2),
            conns_per_client: Some(3),
            depth: Some(4),
            rate: Some(Rate(50_000.0)),
            arrival: Some(Arrival::Poisson),
            duration: Some(Dur(Duration::from_millis(1500))),
            count: Some(7),
            warmup: Some(Dur(Duration::from_secs(2))),
            op_timeout: Some(Dur(Duration::from_secs(3))),
            no_hiccup: Some(true),
            hiccup_threshold: Some(Dur(Duration::from_millis(20))),
            poll: Some(true),
            verify: Some(true),
            server_cpus: Some(CpuList::parse("1").unwrap()),
            client_cpus: Some(CpuList::parse("0").unwrap()),
            max_frame: Some(Bytes(1 << 20)),
            repeat: Some(3),
            slo: vec!["p99<1ms".into()],
            hlog: Some("x.hlog".into()),
            results: Some("r".into()),
            force: Some(true),
            format: Some(Format::Json),
            trace: Some(Trace::File("t.txt".into())),
            trace_sample: Some(10),
            placement_policy: Some("balanced".into()),
            instance: Some(1),
            placement_note: vec!["n".into()],
            workload: Some(S3Workload::Mixed),
            mix: Some(Mix::default_mix()),
            objects: Some(10),
            url_style: Some(UrlStyle::Virtual),
            sign: Some(S3Sign::Query),
            region: Some("eu-west-1".into()),
            multipart_threshold: Some(Bytes(64 << 20)),
            part_size: Some(Bytes(16 << 20)),
            put_parts: Some(2),
            get_parts: Some(2),
            keep: Some(true),
            create_bucket: Some(true),
            ca_file: Some("ca.pem".into()),
            protocol: Some(KvProtocol::Resp3),
            keys: Some(1000),
            key_dist: Some(KeyDist::Zipf(0.9)),
            ratio: Some(Ratio(1, 4)),
            http: Some(HttpVersion::H2),
            header: vec!["X-A: 1".into()],
            churn: Some(true),
            call: Some("p.S/M".into()),
            data: Some("{}".into()),
            proto_set: Some("set.pb".into()),
            server_pid: vec![1, 2],
            server_cgroup: Some("/sys/fs/cgroup/x".into()),
            server_cmd: Some("srv --port {port}".into()),
            server_ready: Some(Ready::Line("listening on \\d+".into())),
            port: Some(7000),
            server_env: "LD_PRELOAD=/x.so".parse().unwrap(),
            client_cmd: Some("sockperf pp -p {port}".into()),
            parser: Some("regex:(?P<ops_per_s>[0-9]+) ops/s".parse().unwrap()),
            client_env: "A=b".parse().unwrap(),
            also_target: vec!["tcp://10.0.0.9:7470".parse().unwrap()],
            agents: vec!["10.0.0.2:7460".into()],
            launch: vec!["ssh:bench@10.0.0.3".into()],
            agent_weights: vec![2, 1],
            share: Some(crate::share::ConnShare { first: 2, total: 5 }),
        };
        let json = serde_json::to_value(&full).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.push("sessions");
        keys.sort_unstable();
        let mut want = RunRequest::KEYS.to_vec();
        want.sort_unstable();
        assert_eq!(keys, want);
        let back: RunRequest = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, full);
        assert_eq!(json["duration"], "1s 500ms");
        assert_eq!(json["size"], "1KiB..1MiB");
        assert_eq!(json["mix"], "get=70,put=20,delete=10");
        assert_eq!(json["key_dist"], "zipf:0.9");
        assert_eq!(json["ratio"], "1:4");
        // TOML writes numbers and booleans bare.
        let t: RunRequest =
            toml::from_str("size = 4096\nrate = 500\npoll = true\ntrace = true\nduration = \"2s\"")
                .unwrap();
        assert_eq!(t.size, Some(SizeSpec::Fixed(4096)));
        assert_eq!(t.rate, Some(Rate(500.0)));
        assert_eq!(t.trace, Some(Trace::On(true)));
        let e = toml::from_str::<RunRequest>("clinets = 2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("clinets"), "{e}");
        let e = toml::from_str::<RunRequest>("size = \"4kb!\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a size"), "{e}");
    }

    #[test]
    fn a_request_shows_as_its_command_line() {
        let r = req(
            r#"{"size": "4KiB", "poll": true, "verify": false, "slo": ["p99<1ms", "ops>1k/s"], "trace": true, "server_cpus": "1"}"#,
        );
        assert_eq!(
            r.to_args().join(" "),
            "--size 4KiB --poll --server-cpus 1 --slo p99<1ms --slo ops>1k/s --trace"
        );
    }

    #[test]
    fn a_merge_takes_what_the_point_sets() {
        let mut base = req(r#"{"size": 64, "clients": 1, "poll": true}"#);
        base.merge(req(r#"{"clients": 4, "arch": "pool"}"#));
        assert_eq!(
            base,
            req(r#"{"size": 64, "clients": 4, "poll": true, "arch": "pool"}"#)
        );
    }

    #[test]
    fn transports_get_their_own_settings() {
        let (s, _) = req(r#"{"transport": "shm", "mode": "async"}"#)
            .check(&two_cpus())
            .unwrap();
        assert_eq!(s.depth, 64);
        let shm = s.shm().unwrap();
        assert_eq!(
            (shm.mode, shm.wait, shm.ring_bytes),
            (ShmMode::Async, Wait::Adaptive, 1 << 20)
        );
        let (s, p) = req(
            r#"{"transport": "s3", "workload": "mixed", "target": "s3://127.0.0.1:9000/bench"}"#,
        )
        .check(&two_cpus())
        .unwrap();
        let s3 = s.s3().unwrap();
        assert_eq!(s3.mix, Mix::default_mix().0);
        assert!(
            !s3.signed,
            "an external target is signed only with credentials"
        );
        assert_eq!(p.server_cpus, None);
        assert_eq!(s.label(), "s3-mixed-external");
        let (s, _) = req(r#"{"rate": 1000}"#).check(&two_cpus()).unwrap();
        assert_eq!((s.depth, s.rate_per_s), (1024, Some(1000.0)));
    }
}
