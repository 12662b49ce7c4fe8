//! The shm transport's helper commands: `clean` (leftovers of dead
//! processes) and the hidden `shm-worker` (one client process of a run with
//! `--clients-as processes`).

use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use wirebench_runner::worker::{self, self as cleanup};

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Only list what would be removed.
    #[arg(long)]
    dry_run: bool,
}

/// Removes `wirebench-shm-<pid>*` files of processes that no longer run, in
/// the temporary directory and /dev/shm; lists what it removed and what it
/// left to running processes.
pub fn clean(a: CleanArgs) -> anyhow::Result<ExitCode> {
    let places = cleanup::places();
    let done = match a.dry_run {
        true => cleanup::scan(&places),
        false => cleanup::clean(&places),
    };
    let mut out = crate::ui::stdout();
    for line in done.lines(a.dry_run, &places) {
        writeln!(out, "{line}")?;
    }
    for (p, e) in &done.failed {
        eprintln!("cannot remove {}: {e}", p.display());
    }
    Ok(ExitCode::from(u8::from(!done.failed.is_empty())))
}

#[derive(Args, Debug)]
pub struct ShmWorkerArgs {
    /// Exit when this process (the run) dies.
    #[arg(long)]
    exit_with_parent: Option<u32>,
}

/// One client process of a run with `--clients-as processes`.
pub fn shm_worker(a: ShmWorkerArgs) -> anyhow::Result<ExitCode> {
    worker::shm_worker(a.exit_with_parent)?;
    Ok(ExitCode::SUCCESS)
}
