//! shm's driver: sessions with the server at its Unix socket, clients as
//! threads or processes.

use crate::shm::client::ShmClient;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use wirebench_core::spec::{ClientsAs, Endpoint, RunSpec, ShmSpec};
use wirebench_load::driver::{Driver, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};
use wirebench_load::{blocking, remote};

/// The shm client of the server at the endpoint's socket.
pub(crate) fn open(at: &mut Opening<'_>, _: &ShmSpec) -> Result<Box<dyn Driver>, OpenError> {
    match at.endpoints[0] {
        Endpoint::Unix(path) => Ok(Box::new(ShmDriver(path.clone()))),
        other => Err(OpenError::Failed(format!(
            "{other}: a shm server listens on a Unix socket"
        ))),
    }
}

struct ShmDriver(std::path::PathBuf);

impl Driver for ShmDriver {
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let shm = spec.shm().expect("a shm spec");
        let client = ShmClient::new(
            self.0.clone(),
            shm.channel,
            shm.mode,
            shm.size_bytes,
            shm.ring_bytes,
            shm.wait,
            spec.verify,
        );
        match shm.clients_as {
            ClientsAs::Threads => blocking::run_load(Arc::new(client), cfg, obs),
            ClientsAs::Processes => remote::run_load_processes(cfg, obs, &mut |worker| {
                start_client_process(worker, cfg, &client)
            }),
        }
    }
}

/// Starts the process of client `worker` (`wirebench shm-worker`) and
/// gives it its order.
fn start_client_process(
    worker: usize,
    cfg: &LoadConfig,
    client: &ShmClient,
) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args([
            "shm-worker",
            "--exit-with-parent",
            &std::process::id().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: Ctrl-C reaches this process only, which
        // then ends the clients after saving what they measured.
        .process_group(0)
        .spawn()?;
    let order = remote::WorkerOrder {
        worker,
        cfg: cfg.clone(),
        transport: client.clone(),
    };
    let mut line = serde_json::to_vec(&order).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let stdin = child.stdin.as_mut().expect("piped");
    if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}
