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
use wirebench_runner::{Credentials, process};

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Where coordinators reach this agent: tcp://HOST:PORT. Beyond loopback a token is required
    /// (--token-file or $WIREBENCH_TOKEN).
    #[arg(long, default_value = "tcp://127.0.0.1:7460")]
    listen: String,
    /// The shared token, in this file (default: $WIREBENCH_TOKEN): coordinators must prove it.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Where this agent keeps the results of its parts. Default: each request's (results).
    #[arg(long)]
    results: Option<PathBuf>,
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
        results: a.results,
        credentials: Credentials::given_or_env(None, None)?,
        build: build.clone(),
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
    let log: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(|line: &str| eprintln!("agent: {line}"));
    daemon::serve(
        opts,
        cancel,
        &mut |addr| {
            print_bound(addr);
            eprintln!("agent: {build}, listening on tcp://{addr}");
        },
        log,
    )
    .map_err(runner_error)?;
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
