//! The shm server, as `wirebench serve` and a run start it: its flags
//! checked and the server started (a session states its mode and sizes
//! when it opens, so a run asks nothing more of it).

use crate::server::{Checked, Server, Started, value};
use wirebench_core::error::SpecError;
use wirebench_core::serve::ServeRequest;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_core::topo::CpuList;
use wirebench_load::driver::Credentials;

/// The shm server.
pub static SERVER: Option<Server> = Some(Server {
    own_flag_set: |_| None,
    check,
    order: |_: &RunSpec, _: &mut ServeRequest| {},
});

fn check(
    req: &ServeRequest,
    cpus: &CpuList,
    _: Option<Credentials>,
) -> Result<Box<dyn Checked>, SpecError> {
    for (f, set) in [
        ("--max-conns", req.max_conns.is_some()),
        ("--idle-timeout", req.idle_timeout.is_some()),
    ] {
        if set {
            return Err(SpecError::Invalid {
                flag: f,
                why:
                    "applies to the msgr and s3 servers: a shm session lives as long as its client"
                        .into(),
            });
        }
    }
    let socket = match &req.listen {
        None => super::proto::default_socket_path(std::process::id()),
        Some(Endpoint::Unix(p)) => p.clone(),
        Some(l) => {
            return Err(value(
                "--listen",
                l,
                "a shm server listens on a Unix socket: --listen unix:PATH",
            ));
        }
    };
    Ok(Box::new(super::server::ShmServerConfig {
        socket,
        cpus: cpus.cpus().to_vec(),
    }))
}

impl Checked for super::server::ShmServerConfig {
    fn start(self: Box<Self>, cpus: &CpuList) -> std::io::Result<Started> {
        let srv = super::server::start(&self)?;
        let endpoint = Endpoint::Unix(self.socket.clone());
        let note = format!("shm sessions on {endpoint}, CPUs {cpus} (a pinned thread per session)");
        Ok(Started {
            endpoint,
            note,
            shutdown: Box::new(move || srv.shutdown()),
        })
    }
}
