//! Helpers of the shm transport that run as commands of their own: a client
//! process of a run with `--clients-as processes` (its order on the first
//! stdin line, then the protocol of `wirebench_load::remote`), and the
//! cleaning of what dead processes left.

use crate::process;
use std::io::BufRead;
use std::sync::Arc;
use wirebench_load::remote::{self, WorkerOrder};
use wirebench_transports::shm::client::ShmClient;

pub use wirebench_transports::shm::cleanup::{Cleaned, clean, places, scan};

/// One client process: its order on the first stdin line, then serving the
/// run over stdin and stdout. `exit_with_parent`: stop when the run dies.
pub fn shm_worker(exit_with_parent: Option<u32>) -> std::io::Result<()> {
    if let Some(parent) = exit_with_parent {
        process::terminate_with_parent(parent)?;
    }
    let mut input = std::io::BufReader::new(std::io::stdin());
    let mut first = String::new();
    input.read_line(&mut first)?;
    let order: WorkerOrder<ShmClient> = serde_json::from_str(&first).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("shm-worker: bad order on stdin: {e}"),
        )
    })?;
    remote::serve_worker(
        Arc::new(order.transport),
        order.cfg,
        order.worker,
        input,
        std::io::stdout().lock(),
    )
}
