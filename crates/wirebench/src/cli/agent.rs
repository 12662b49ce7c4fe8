//! `wirebench agent`: a load agent, making its part of the runs that a
//! coordinator (`run --agents`) sends it.

use super::error::{runner_error, usage};
use clap::Args;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use wirebench_runner::agent::auth::{BuildId, Token};
use wirebench_runner::agent::daemon::{self, AgentOptions};
use wirebench_runner::agent::policy::Policy;
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

fn listen_addr(s: &str) -> anyhow::Result<SocketAddr> {
    let hostport = s.strip_prefix("tcp://").unwrap_or(s);
    match hostport.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => usage!("--listen {s}: no address"),
        Err(e) => usage!("--listen {s}: not tcp://HOST:PORT ({e})"),
    }
}

pub fn agent(a: AgentArgs) -> anyhow::Result<ExitCode> {
    let listen = listen_addr(&a.listen)?;
    let cancel = process::watch_signals()?;
    let token = if a.token_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let t = match Token::new(&line) {
            Ok(t) => t,
            Err(why) => usage!("--token-stdin: {why}"),
        };
        // The rest of stdin is the launcher's lifeline.
        let c = cancel.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            c.cancel("stdin closed (the launcher is gone)");
        });
        Some(t)
    } else if a.insecure_no_token {
        // Said outright: a token in the environment is not used.
        None
    } else {
        match Token::given_or_env(a.token_file.as_deref()) {
            Ok(t) => t,
            Err(why) => usage!("{why}"),
        }
    };
    let mut build = BuildId::current()?;
    if let Some(s) = a.pretend_sha256 {
        build.sha256 = s;
    }
    super::run::warn_if_debug();
    // Its parts' connections each take a descriptor.
    let _ = wirebench_runner::process::raise_open_files_limit();
    let opts = AgentOptions {
        listen,
        token,
        insecure_no_token: a.insecure_no_token,
        policy: Policy {
            results: a.results,
            allow_exec: a.allow_exec,
        },
        credentials: Credentials::given_or_env(None, None)?,
        build,
        clock_skew_ns: a.clock_skew_ns.unwrap_or(0),
        // An Indexed Job's pod knows its index: the coordinator checks it
        // against the name it reached.
        index: match std::env::var("JOB_COMPLETION_INDEX") {
            Ok(i) => match i.parse() {
                Ok(i) => Some(i),
                Err(_) => usage!("JOB_COMPLETION_INDEX={i}: not an index"),
            },
            Err(_) => None,
        },
        runs: match a.runs {
            Some(0) => usage!("--runs 0: at least 1 (or leave it out: serve until stopped)"),
            n => n,
        },
    };
    // A closed stderr does not stop the agent.
    let log: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(|line: &str| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "agent: {line}");
    });
    daemon::serve(opts, cancel, &mut print_bound, log).map_err(runner_error)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the address the agent listens on, as the first line of stdout
/// (what `--launch` and scripts read).
fn print_bound(addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on tcp://{addr}");
    let _ = out.flush();
}
