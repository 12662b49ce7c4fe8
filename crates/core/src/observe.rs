//! The server under test, observed: a process (`--server-pid`), a cgroup
//! (`--server-cgroup`) or a command the run starts (`--server-cmd`), with
//! its readiness, port and environment ([`ServerFlags`], a group of the
//! run's request).

use crate::command::EnvVars;
use crate::transport::heading;
use crate::values::Ready;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The flags of the server under test. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct ServerFlags {
    /// Observe this process of the --target's server (repeatable): CPU per core and per
    /// thread group, CPU per op, cores used, threads outside its cpuset, RSS.
    #[arg(
        long = "server-pid",
        value_name = "PID",
        help_heading = heading::SERVER
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_pid: Vec<u32>,
    /// Observe every process of this cgroup v2 directory (/sys/fs/cgroup/...).
    #[arg(
        long,
        value_name = "PATH",
        help_heading = heading::SERVER
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cgroup: Option<PathBuf>,
    /// Start this server command (sh -c, pinned to --server-cpus), observe it, and stop it at
    /// the end (TERM, then KILL). Placeholders: {port} {server_cpus} {client_cpus} {clients}
    /// {conns} {depth} {size} {duration_s} {rate} {instance} {run_dir}. Its output is kept in
    /// the run's directory.
    #[arg(
        long,
        value_name = "CMD",
        help_heading = heading::SERVER
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cmd: Option<String>,
    /// When --server-cmd is ready: tcp:PORT (127.0.0.1:PORT accepts) or line:REGEX (a line of
    /// its output matches). Default: when the --target accepts a connection.
    #[arg(
        long,
        value_name = "tcp:PORT|line:REGEX",
        help_heading = heading::SERVER
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub server_ready: Option<Ready>,
    /// The port {port} stands for. Default: a free loopback port.
    #[arg(long, help_heading = heading::SERVER)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// An environment variable of the server the run starts (embedded or --server-cmd),
    /// repeatable: e.g. LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2.
    #[arg(
        long,
        value_name = "NAME=VALUE",
        help_heading = heading::SERVER
    )]
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::command::env_list"
    )]
    pub server_env: Vec<EnvVars>,
}
