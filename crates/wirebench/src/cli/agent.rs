//! `wirebench agent`: a load agent, making its part of the runs that a
//! coordinator (`run --agents`) sends it.

use super::error::{UsageError, runner_error, usage};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_runner::agent::daemon::{self, AgentOptions};
use wirebench_runner::agent::policy::Policy;
use wirebench_runner::auth::{BuildId, Token};
use wirebench_runner::{Credentials, process};

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Where coordinators reach this agent: tcp://HOST:PORT.
    #[arg(long, default_value = "tcp://127.0.0.1:7460")]
    listen: String,
    /// The shared token, in this file (default: $WIREBENCH_TOKEN): coordinators must prove it.
    /// Required (docs/security.md).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Run without a token, on loopback only: any process of this host may then drive the agent.
    /// Every log line says so.
    #[arg(long, conflicts_with_all = ["token_file", "token_stdin"])]
    insecure_no_token: bool,
    /// Let coordinators have this agent run commands (--client-cmd, --server-cmd, exec runs,
    /// their environments) and write files (--hlog, --trace FILE) under --results. Off by
    /// default: a part is then load and a result, nothing else.
    #[arg(long)]
    allow_exec: bool,
    /// Let coordinators name files (--ca-file, --proto-set) in this directory (repeatable),
    /// by absolute paths that cross no link. Default: none; no file a part names is read.
    #[arg(long, value_name = "DIR")]
    allow_files: Vec<PathBuf>,
    /// Use this agent's own credentials (AWS_* for S3, $REDISCLI_AUTH for Redis) for this
    /// target, HOST:PORT as the run writes it (repeatable). Default: none; a part against any
    /// other target goes without them.
    #[arg(long, value_name = "HOST:PORT")]
    allow_target: Vec<String>,
    /// Where this agent keeps the results of its parts (and any file a part writes).
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Read the token from stdin's first line, and stop when stdin ends (how `--launch ssh:`
    /// starts an agent: the token on no command line, the agent gone with its coordinator).
    #[arg(long, hide = true, conflicts_with = "token_file")]
    token_stdin: bool,
    /// Stop after making this many runs' parts (an agent of a Kubernetes Job, which then
    /// completes). Default: serve until stopped.
    #[arg(long)]
    runs: Option<usize>,
    /// Test only: report clock readings this many nanoseconds off.
    #[arg(long, hide = true, allow_hyphen_values = true)]
    clock_skew_ns: Option<i64>,
    /// Test only: claim this sha256 for the binary (another build).
    #[arg(long, hide = true)]
    pretend_sha256: Option<String>,
}

pub fn agent(a: AgentArgs) -> anyhow::Result<ExitCode> {
    let listen = daemon::listen_addr(&a.listen).map_err(UsageError)?;
    let cancel = process::watch_signals()?;
    let token = if a.token_stdin {
        Some(Token::from_stdin(&cancel).map_err(UsageError)?)
    } else if a.insecure_no_token {
        // Said outright: a token in the environment is not used.
        None
    } else {
        Token::given_or_env(a.token_file.as_deref()).map_err(UsageError)?
    };
    let mut build = BuildId::current()?;
    if let Some(s) = a.pretend_sha256 {
        build.sha256 = s;
    }
    super::flags::warn_if_debug();
    // Its parts' connections each take a descriptor.
    let _ = wirebench_runner::process::raise_open_files_limit();
    let opts = AgentOptions {
        listen,
        token,
        insecure_no_token: a.insecure_no_token,
        policy: Policy {
            results: a.results,
            allow_exec: a.allow_exec,
            allow_files: Policy::allowed_dirs(&a.allow_files).map_err(UsageError)?,
            allow_targets: Policy::allowed_targets(&a.allow_target).map_err(UsageError)?,
        },
        credentials: Credentials::given_or_env(None, None)?,
        build,
        clock_skew_ns: a.clock_skew_ns.unwrap_or(0),
        index: daemon::job_index().map_err(UsageError)?,
        runs: match a.runs {
            Some(0) => usage!("--runs 0: at least 1 (or leave it out: serve until stopped)"),
            n => n,
        },
    };
    daemon::serve(opts, cancel, &mut daemon::print_bound, daemon::stderr_log())
        .map_err(runner_error)?;
    Ok(ExitCode::SUCCESS)
}
