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
    if a.dry_run {
        let found = cleanup::scan(&places);
        for (p, pid) in &found.kept {
            writeln!(
                std::io::stdout(),
                "in use by running pid {pid}: {}",
                p.display()
            )?;
        }
        for p in &found.removed {
            writeln!(std::io::stdout(), "would remove: {}", p.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let done = cleanup::clean(&places);
    for p in &done.removed {
        writeln!(std::io::stdout(), "removed: {}", p.display())?;
    }
    for (p, pid) in &done.kept {
        writeln!(
            std::io::stdout(),
            "left (pid {pid} is running): {}",
            p.display()
        )?;
    }
    for (p, e) in &done.failed {
        eprintln!("cannot remove {}: {e}", p.display());
    }
    if done.removed.is_empty() && done.failed.is_empty() {
        writeln!(
            std::io::stdout(),
            "nothing to clean in {}",
            places
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    Ok(if done.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
