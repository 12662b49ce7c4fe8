//! The command line: one file per subcommand, each a clap struct, its
//! conversion into a request, and one call into the runner or the report
//! crate.

pub mod agent;
mod args;
pub mod compare;
pub mod error;
mod flags;
pub mod flame;
pub mod history;
pub mod ipc_compare;
pub mod k8s;
pub mod report;
pub mod run;
pub mod search;
pub mod serve;
pub mod shm;
pub mod sweep;
pub mod table;
pub mod timeline;
pub mod topo;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "wirebench", version, about = "Measure and diagnose messaging, RPC, IPC and S3 servers", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Accept a token or key file that group or others may read, or that is a link (each
    /// said in a warning); without it such a file is refused, as ssh refuses a loose key.
    #[arg(long, global = true)]
    accept_loose_secret_files: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a benchmark (by default: msgr echo against an embedded reactor server).
    Run(Box<run::RunArgs>),
    /// Find the highest open-loop rate that meets --slo objectives, and the saturation throughput.
    Search(Box<search::SearchArgs>),
    /// Run a reference server on its own.
    Serve(Box<serve::ServeArgs>),
    /// A load agent: makes its part of the runs a coordinator (`run --agents`) sends it.
    Agent(agent::AgentArgs),
    /// Kubernetes: `k8s render` writes the manifests of a run made by agent pods.
    K8s(k8s::K8sArgs),
    /// The same shm workload over shared memory (each wait strategy), a Unix socket, TCP loopback and a pipe, side by side.
    IpcCompare(Box<ipc_compare::IpcCompareArgs>),
    /// Run an experiment from a TOML spec: a matrix of runs, placements, instances, repetitions.
    Sweep(Box<sweep::SweepArgs>),
    /// A sweep's summary (or any directory of runs) as a Markdown or CSV table.
    Table(table::TableArgs),
    /// A report of runs (an experiment, repetitions, any runs): HTML with plots, and Markdown.
    Report(report::ReportArgs),
    /// Where the time goes: a trace's operations by shape, per-event cumulative and delta statistics, CDFs.
    Timeline(timeline::TimelineArgs),
    /// A run with its embedded server sampled by perf: a flamegraph (or --diff A B: a differential one).
    Flame(Box<flame::FlameArgs>),
    /// The history of a results directory: every run indexed; change points over commits.
    History(history::HistoryArgs),
    /// Compare runs (or sets of repetitions) with the first: ratios, and verdicts only beyond the noise.
    Compare(compare::CompareArgs),
    /// The machine's topology and the server/client cpusets of each placement policy per client count.
    Topo(topo::TopoArgs),
    /// Results on S3: `s3 upload DIR URL` (resumable: what is there is not sent again), `s3 download URL DIR`.
    S3(wirebench_runner::upload::S3Args),
    /// Remove wirebench-shm-PID and wirebench-trace-server-PID files of processes that no longer run (temporary directory, /dev/shm).
    Clean(shm::CleanArgs),
    /// One client process of a shm run with --clients-as processes (started by `run`).
    #[command(hide = true)]
    ShmWorker(shm::ShmWorkerArgs),
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    if cli.accept_loose_secret_files {
        wirebench_core::files::accept_loose_secret_files();
    }
    match cli.command {
        Command::Run(a) => run::run(*a),
        Command::Search(a) => search::search(*a),
        Command::Serve(a) => serve::serve(*a),
        Command::Agent(a) => agent::agent(a),
        Command::K8s(a) => k8s::k8s(a),
        Command::Clean(a) => shm::clean(a),
        Command::S3(a) => wirebench_runner::upload::command(a).map_err(error::runner_error),
        Command::Topo(a) => topo::topo(a),
        Command::Compare(a) => compare::compare(a),
        Command::History(a) => history::history(a),
        Command::Flame(a) => flame::flame(*a),
        Command::Timeline(a) => timeline::timeline(a),
        Command::Report(a) => report::report(a),
        Command::Sweep(a) => sweep::sweep(*a),
        Command::Table(a) => table::table(a),
        Command::IpcCompare(a) => ipc_compare::ipc_compare(*a),
        Command::ShmWorker(a) => shm::shm_worker(a),
    }
}

#[cfg(test)]
#[test]
fn every_command_is_well_formed() {
    // Names used twice (a command's flag and a flattened one) and the like.
    <Cli as clap::CommandFactory>::command().debug_assert();
}
