//! The checked run spec: what the CLI flags (or a spec file, or an
//! agent's JSON) become after validation. Everything downstream takes
//! this, never raw flags.

use crate::topo::CpuList;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::parsers::{EXEC_METRICS, LATENCY_STATS, LATENCY_UNITS, is_exec_metric};
pub use crate::transport::exec::{ExecSpec, Parser, program_of};
pub use crate::transport::grpc::GrpcSpec;
pub use crate::transport::http::{HttpMethod, HttpSpec, HttpVersion};
pub use crate::transport::kv::{KvMode, KvProtocol, KvSpec, Ratio};
pub use crate::transport::msgr::{MSGR_HEADER_BYTES, MsgrMode, MsgrSpec};
pub use crate::transport::s3::{Mix, S3Op, S3Sign, S3Spec, S3Workload, UrlStyle};
pub use crate::transport::shm::{Channel, ClientsAs, ShmMode, ShmSpec, Wait};
pub use crate::transport::{TransportKind, TransportSpec};
pub use crate::values::*;

/// A checked spec of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub transport: TransportSpec,
    pub target: TargetSpec,
    pub clients: usize,
    pub conns_per_client: usize,
    /// Requests outstanding per connection (closed loop); the most
    /// outstanding per connection (open loop).
    pub depth: usize,
    /// Open loop: total requests per second on a fixed timetable. None: closed loop.
    pub rate_per_s: Option<f64>,
    pub arrival: Arrival,
    pub stop: StopSpec,
    pub warmup_ns: u64,
    /// A connection waiting this long for an operation fails the run (0: no limit).
    #[serde(default = "default_op_timeout_ns")]
    pub op_timeout_ns: u64,
    /// The hiccup meter's threshold: a measured second with a stall longer
    /// than this is flagged. None: the meter is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup_threshold_ns: Option<u64>,
    /// Client busy-polls instead of sleeping in the kernel.
    pub poll: bool,
    /// Fill and check payloads.
    pub verify: bool,
    pub client_cpus: CpuList,
    /// Event tracing: one operation in this many traced (None: no trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sample: Option<u64>,
    /// A server observed by PID, cgroup or command (with an external target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<ObservedSpec>,
    /// Environment of the server the run starts (embedded or
    /// `--server-cmd`), e.g. `LD_PRELOAD` of another allocator.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_env: BTreeMap<String, String>,
    /// More endpoints of the same kind as the target's (`--target A,B`):
    /// the connections are dealt to all of them in turn (or the agents'
    /// parts, with agents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_target: Vec<Endpoint>,
    /// The load agents that made the load (none: this process made it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::share::AgentSpec>,
    /// An agent's part of a run: its connections among the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::share::ConnShare>,
    /// An open loop in stages: the rate over the measured phase
    /// (`rate_per_s` is their mean). Empty: one rate, or a closed loop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::stages::Stage>,
    /// The run's labels (`--label commit=abc123`): who made it, not how.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn default_op_timeout_ns() -> u64 {
    10_000_000_000
}

impl RunSpec {
    pub fn connections(&self) -> usize {
        self.clients * self.conns_per_client
    }

    pub fn kind(&self) -> TransportKind {
        self.transport.kind()
    }

    /// The transport's spec, where it is msgr's (see `TransportSpec`'s
    /// accessor in its module); likewise `shm`, `s3`, `exec`.
    pub fn msgr(&self) -> Option<&MsgrSpec> {
        self.transport.msgr()
    }

    pub fn shm(&self) -> Option<&ShmSpec> {
        self.transport.shm()
    }

    pub fn s3(&self) -> Option<&S3Spec> {
        self.transport.s3()
    }

    pub fn exec(&self) -> Option<&ExecSpec> {
        self.transport.exec()
    }

    pub fn endpoint_label(&self) -> String {
        match &self.target {
            TargetSpec::Embedded {
                arch: Some(arch), ..
            } => format!("embedded {arch}"),
            TargetSpec::Embedded { arch: None, .. } => format!("embedded {}", self.kind()),
            TargetSpec::External { endpoint } => endpoint.to_string(),
            TargetSpec::None if self.observe.is_some() => {
                "no target (the program's server observed)".to_string()
            }
            TargetSpec::None => "no server (the program runs alone)".to_string(),
        }
    }

    /// What names a run's results: `echo-reactor`, `shm-sync-adaptive`,
    /// `s3-get-external` (see [`crate::transport::Describe::label`]).
    pub fn label(&self) -> String {
        self.transport.describe().label(&self.target)
    }
}
