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

pub use crate::error::SpecError;
use crate::kind::TransportKind;
use crate::topo::CpuList;
pub use crate::transport::heading;
use crate::units::{Dur, Rate};
use crate::values::{Arrival, Endpoint, KeyDist, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use crate::output::{Format, Trace};

/// One run, as asked: each field is a flag of `wirebench run` (None: its
/// default). Credentials are never part of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct RunRequest {
    /// Transport: msgr (framed messenger over TCP or Unix sockets), shm (shared-memory rings;
    /// see --wait, --clients-as, --channel), s3 (S3 over HTTP/1.1; see --workload; the
    /// embedded fake S3 server unless --target s3://HOST:PORT/BUCKET), redis, memcached,
    /// http, grpc, exec (your own program: see --client-cmd) or tcp-echo (any TCP echo server,
    /// raw bytes). Default: the --target's scheme (s3://, redis://, memcached://, http(s)://,
    /// grpc(s)://), else msgr.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportKind>,
    /// Measure a server already listening at tcp://HOST:PORT, unix:PATH, s3://HOST:PORT/BUCKET,
    /// redis://HOST:PORT (USER@HOST and /DB optional; password: $REDISCLI_AUTH),
    /// memcached://HOST:PORT, http(s)://HOST:PORT/PATH or grpc(s)://HOST:PORT. Several of one
    /// kind, comma-separated: the connections are dealt to them in turn (with load agents, each
    /// agent's part goes to one of them in turn), and the result has each one's part.
    #[arg(long = "target", value_name = "URL", value_delimiter = ',', conflicts_with_all = ["arch", "listen", "max_frame"])]
    #[serde(skip)]
    pub targets: Vec<Endpoint>,
    /// The first of `--target`'s endpoints (see `also_target`).
    #[arg(skip)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub target: Option<Endpoint>,
    /// Where the embedded server listens: tcp://127.0.0.1:0 (a free port) unless told otherwise, or unix:PATH.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub listen: Option<Endpoint>,
    /// The transports' own flags, a group each (see [`crate::transport`]).
    #[command(flatten)]
    #[serde(flatten)]
    pub flags: crate::transport::TransportFlags,
    /// msgr: echo (request/response), oneway (requests only), stream (server sends, client
    /// drops), rr (raw fixed-size request/response, no framing); default echo. shm: sync (one
    /// request outstanding), async (a sender and a receiver thread, --depth outstanding,
    /// default 64), nores (requests only), stream (the data channel: the server writes, the
    /// client reads every byte); default sync. redis, memcached: get, set, incr, mixed (see
    /// --ratio); default get. http: get, post, put (a body of --size); default get.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Request payload (echo, oneway, rr) or stream frame payload: 64, 4KiB, 1MiB... Default 64.
    /// s3: object size, fixed (4KiB), a list objects take in turn (4KiB,1MiB) or a log-uniform
    /// range (1KiB..1MiB); default 4KiB.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub size: Option<SizeSpec>,
    /// Client workers: one thread each, pinned round-robin to the client CPUs (shm: sessions,
    /// each with its own rings and server thread). Default: 1.
    #[arg(long, visible_alias = "sessions")]
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "sessions")]
    pub clients: Option<usize>,
    /// Connections per client. Default: 1.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns_per_client: Option<usize>,
    /// Requests outstanding per connection (echo, rr); frames per send call (oneway). Default: 1.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Open loop: total requests per second (500, 50k/s), sent on a fixed timetable whatever the
    /// server does; latency then runs from each request's intended send time (no coordinated
    /// omission). Default: closed loop. --depth becomes the most requests outstanding per
    /// connection (default 1024).
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub rate: Option<Rate>,
    /// Open loop in stages, instead of --rate and --duration: DURATION:RATE, or
    /// DURATION:RATE->RATE for a linear ramp, comma-separated: '10s:1k/s, 30s:1k->20k/s,
    /// 10s:20k/s'. Each stage lasts whole seconds; the run reports each one's asked and achieved
    /// rates, its latency, and the sends the generator was late with. A closed loop in stages of
    /// connections: '10s:conns=8, 10s:conns=64' (the run opens the most a stage needs).
    #[arg(long, conflicts_with_all = ["rate", "duration", "count"])]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::stages::text_or_tables"
    )]
    pub stages: Option<String>,
    /// Open loop: uniform (evenly spaced) or poisson (exponential gaps) arrivals.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<Arrival>,
    /// Length of the measured phase (after the warm-up): 500ms, 10s, 1m. Default: 5s.
    #[arg(long, conflicts_with = "count")]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub duration: Option<Dur>,
    /// Stop after this many operations in the measured phase, over all connections.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Warm-up: measured and shown, excluded from the summary. Default: 1s.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub warmup: Option<Dur>,
    /// A connection that waits this long for an operation (a response, a send the server does
    /// not take, a stream's next message; S3: any byte of a request) fails the run, which then
    /// says so. 0s: no limit. Default: 10s.
    #[arg(long)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub op_timeout: Option<Dur>,
    /// Turn the hiccup meter off: a probe thread on a client CPU sleeps 10 ms in a loop and
    /// records how late it wakes, so that platform stalls (a throttled VM, a stopped process)
    /// are measured and flagged, never blamed on the server. It costs under 1% of a CPU.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_hiccup: Option<bool>,
    /// A measured second in which the hiccup meter woke later than this is flagged. Default: 10ms.
    #[arg(long, conflicts_with = "no_hiccup")]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub hiccup_threshold: Option<Dur>,
    /// Busy-poll on the client and on the embedded (reactor) server instead of sleeping in the kernel.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<bool>,
    /// Fill payloads with a per-message pattern and check every payload on both sides.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// CPUs of the embedded server (e.g. 1 or 2-3), or of the --server-cmd it starts (pinned),
    /// or the cpuset an observed --server-pid/--server-cgroup was given. Default: the upper
    /// half of the usable CPUs (an observed server: its own affinity).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<CpuList>,
    /// CPUs of the client workers. Default: the lower half of the usable CPUs (all of them with --target).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<CpuList>,
    /// Run the same spec N times (against one server); each metric is then reported as mean with
    /// a 95% confidence interval, min and max.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
    #[command(flatten)]
    #[serde(flatten)]
    pub objectives: crate::slo::SloFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: crate::output::OutputFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub watch: crate::live::LiveFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub sweep: crate::placement::SetBySweep,
    /// s3s://, https:// and grpcs:// targets: also trust the certificates of this PEM file (a private CA, a
    /// self-signed endpoint); the Mozilla roots are always trusted.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// Keys the run works on, written by a prepare phase for reads. Default: 10000.
    #[arg(
        long,
        help_heading = heading::KV
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u64>,
    /// uniform, sequential, zipf (exponent 0.99) or zipf:S. Default: uniform.
    #[arg(
        long,
        help_heading = heading::KV
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub key_dist: Option<KeyDist>,
    /// An extra request header (HTTP) or metadata entry (gRPC), 'Name: value' (repeatable).
    #[arg(
        long,
        help_heading = heading::HTTP
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub server: crate::observe::ServerFlags,
    /// More servers of the same kind as `target` (`--target A,B`). The
    /// run's connections are dealt to all of them in turn; with load
    /// agents, agent `i`'s part goes to endpoint `i` mod their number; in a
    /// sweep, instance `i` of `k` takes endpoints `i`, `i + k`... (or
    /// endpoint `i` mod their number, when there are fewer).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_target: Vec<Endpoint>,
    #[command(flatten)]
    #[serde(flatten)]
    pub fleet: crate::share::FleetFlags,
    /// The connections this run makes among a run's (set by a coordinator
    /// for its agents: never a flag).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::share::ConnShare>,
    /// Any other key: refused by name (a struct that flattens groups cannot
    /// say `deny_unknown_fields`; this is last, and sees what no field took).
    #[arg(skip)]
    #[serde(flatten, skip_serializing)]
    pub unknown: NoOtherKeys,
}

/// The keys of a request no field took: none, or reading fails naming the
/// first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoOtherKeys;

impl<'de> Deserialize<'de> for NoOtherKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NoOtherKeys, D::Error> {
        let rest = BTreeMap::<String, serde::de::IgnoredAny>::deserialize(d)?;
        match rest.keys().next() {
            Some(k) => Err(serde::de::Error::unknown_field(k, RunRequest::keys())),
            None => Ok(NoOtherKeys),
        }
    }
}

/// The keys of a request that are not flags: a sweep sets them (the other
/// targets, the placement, the instance) or a coordinator (an agent's share).
const SET_KEYS: [&str; 6] = [
    "also_target",
    "metrics_point",
    "placement_policy",
    "placement_note",
    "instance",
    "share",
];

impl RunRequest {
    /// The request as parsed from the command line, made whole: `--target
    /// A,B` becomes the target and the others of its kind.
    pub fn from_flags(mut self) -> RunRequest {
        let mut all = std::mem::take(&mut self.targets).into_iter();
        if let Some(first) = all.next() {
            self.target = Some(first);
            self.also_target = all.collect();
        }
        self
    }

    /// The flag of a spec key: `--conns-per-client` for `conns_per_client`.
    pub fn flag_of(key: &str) -> &'static str {
        static FLAGS: std::sync::OnceLock<BTreeMap<&'static str, &'static str>> =
            std::sync::OnceLock::new();
        let all = FLAGS.get_or_init(|| {
            RunRequest::keys()
                .iter()
                .map(|k| {
                    let f = format!("--{}", k.replace('_', "-"));
                    (*k, &*Box::leak(f.into_boxed_str()))
                })
                .collect()
        });
        all.get(key).copied().unwrap_or("--?")
    }

    /// The keys a request takes, as a spec file writes them: its flags
    /// (read from the clap definition, so that a flag is declared once:
    /// its field), then the keys a sweep or a coordinator sets, and the
    /// alias `sessions`.
    pub fn keys() -> &'static [&'static str] {
        static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
        KEYS.get_or_init(|| {
            // `--target A,B` is the spec's `target` and `also_target`.
            let flags = crate::transport::flag_keys::<RunRequest>()
                .into_iter()
                .map(|k| if k == "targets" { "target" } else { k });
            flags.chain(SET_KEYS).chain(["sessions"]).collect()
        })
    }

    /// How many times the run is repeated (checked by [`RunRequest::check`]).
    pub fn repeat(&self) -> usize {
        self.repeat.unwrap_or(1)
    }

    /// The command line of `wirebench run` that makes this request (a
    /// dry run shows it): `--key value`, bare flags for booleans. The
    /// keys a sweep or a coordinator sets are left out.
    pub fn to_args(&self) -> Vec<String> {
        let v = serde_json::to_value(self).expect("a request serializes");
        let mut out = Vec::new();
        for &key in RunRequest::keys() {
            // What a sweep or a coordinator sets is no flag (the other
            // targets are `--target`'s).
            if SET_KEYS.contains(&key) {
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

#[cfg(test)]
mod tests;
