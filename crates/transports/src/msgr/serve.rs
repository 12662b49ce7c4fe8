//! msgr's embedded servers (reactor or pool), as `wirebench serve` and a
//! run start them: their flags checked, the server started, and what a
//! run's spec asks of it.

use super::server::faults::Faults;
use super::server::{self, ConnConfig, ServerConfig};
use crate::server::{Checked, Server, Started, connection_limits, flag, value};
use std::sync::Arc;
use std::time::Duration;
use wirebench_core::error::SpecError;
use wirebench_core::serve::ServeRequest;
use wirebench_core::spec::{Arch, Endpoint, MsgrMode, RunSpec, TargetSpec};
use wirebench_core::topo::CpuList;
use wirebench_core::units::{Bytes, Dur};
use wirebench_load::driver::Credentials;

/// msgr's server.
pub static SERVER: Option<Server> = Some(Server {
    own_flag_set,
    check,
    order,
});

/// The flags only the msgr servers take.
fn own_flag_set(req: &ServeRequest) -> Option<&'static str> {
    let msgr_only = [
        ("--arch", req.arch.is_some()),
        ("--poll", req.poll),
        ("--mode", req.mode.is_some()),
        ("--size", req.size.is_some()),
        ("--response-size", req.response_size.is_some()),
        ("--delay", req.delay.is_some()),
        ("--stall", req.stall.is_some()),
        ("--wake", req.wake.is_some()),
        ("--service", req.service.is_some()),
        ("--max-frame", req.max_frame.is_some()),
    ];
    msgr_only.iter().find(|(_, set)| *set).map(|(f, _)| *f)
}

fn check(
    req: &ServeRequest,
    cpus: &CpuList,
    _: Option<Credentials>,
) -> Result<Box<dyn Checked>, SpecError> {
    let arch = req.arch.unwrap_or(Arch::Reactor);
    let listen = match &req.listen {
        None => Endpoint::Tcp("127.0.0.1:7470".into()),
        Some(l @ (Endpoint::Tcp(_) | Endpoint::Unix(_))) => l.clone(),
        Some(l) => {
            return Err(value(
                "--listen",
                l,
                "a msgr server listens on tcp://HOST:PORT or unix:PATH",
            ));
        }
    };
    if req.poll && arch == Arch::Pool {
        return Err(SpecError::Invalid {
            flag: "--poll",
            why: "the pool server has no poll mode; use --arch reactor, or drop --poll".into(),
        });
    }
    let max_frame = req
        .max_frame
        .map_or(wirebench_core::limits::MSGR_DEFAULT_MAX_FRAME, |b| b.0);
    if max_frame == 0 || max_frame > u64::from(u32::MAX) {
        return Err(SpecError::Range {
            flag: "--max-frame",
            value: max_frame.to_string(),
            min: "1 byte".into(),
            max: "4GiB-1".into(),
        });
    }
    let raw = match req.mode.as_deref() {
        Some("rr") => {
            let Some(size) = req.size else {
                return Err(flag(
                    "--size",
                    "is needed by --mode rr (and optionally --response-size): the raw protocol has fixed sizes",
                ));
            };
            let resp = req.response_size.unwrap_or(size);
            if size.0 == 0
                || resp.0 == 0
                || size.0 > u64::from(u32::MAX)
                || resp.0 > u64::from(u32::MAX)
            {
                return Err(flag(
                    "--size",
                    "and --response-size must be between 1 byte and 4GiB-1 in rr mode",
                ));
            }
            let bytes = |b: Bytes| usize::try_from(b.0).expect("checked: below 4GiB");
            Some((bytes(size), bytes(resp)))
        }
        None | Some("msgr") => {
            if req.size.is_some() || req.response_size.is_some() {
                return Err(flag(
                    "--size",
                    "and --response-size apply to --mode rr only: msgr clients state sizes in their handshake",
                ));
            }
            None
        }
        Some(m) => return Err(value("--mode", m, "one of msgr, rr")),
    };
    if req.workers.is_some() && req.service.is_none() {
        return Err(flag("--workers", "goes with --service"));
    }
    if req.workers == Some(0) {
        return Err(value("--workers", 0, "must be at least 1"));
    }
    if req.service.is_some_and(|d| d.0.is_zero()) {
        return Err(flag("--service", "must be longer than 0s"));
    }
    // `--delay 0` is no delay: a nightly loop that steps the delay
    // (0, 0, 50us...) starts from the server as it is.
    let delay = req.delay.filter(|d| !d.0.is_zero());
    let longest = wirebench_core::limits::MAX_PHASE;
    for (f, d) in [
        ("--delay", req.delay.map(|d| d.0)),
        ("--service", req.service.map(|d| d.0)),
        ("--stall", req.stall.map(|s| s.period)),
        ("--wake", req.wake.map(|w| w.cost.max(w.idle))),
    ] {
        if let Some(d) = d.filter(|d| *d > longest) {
            return Err(SpecError::Range {
                flag: f,
                value: Dur(d).to_string(),
                min: "1ns".into(),
                max: Dur(longest).to_string(),
            });
        }
    }
    let faulty =
        delay.is_some() || req.stall.is_some() || req.service.is_some() || req.wake.is_some();
    if faulty && raw.is_some() {
        return Err(flag(
            "--delay",
            "--delay, --stall, --wake and --service apply to msgr echo, not to --mode rr",
        ));
    }
    let faults = faulty.then(|| {
        Arc::new(
            Faults::new(
                delay.map_or(Duration::ZERO, |d| d.0),
                req.stall.map(|s| (s.stall, s.period)),
                req.service.map(|s| (s.0, req.workers.unwrap_or(1))),
            )
            .with_wake(req.wake.map(|w| (w.cost, w.idle))),
        )
    });
    let (max_conns, idle_timeout) = connection_limits(req)?;
    Ok(Box::new(ServerConfig {
        arch,
        listen,
        cpus: cpus.cpus().to_vec(),
        poll: req.poll,
        conn: ConnConfig {
            raw,
            faults,
            max_conns,
            idle_timeout,
            ..ConnConfig::new(max_frame)
        },
    }))
}

impl Checked for ServerConfig {
    fn start(self: Box<Self>, cpus: &CpuList) -> std::io::Result<Started> {
        let srv = server::start(&self)?;
        let note = format!(
            "{} {} on {}, CPUs {cpus}{}",
            self.arch,
            if self.conn.raw.is_some() {
                "rr"
            } else {
                "msgr"
            },
            srv.endpoint,
            if self.poll { ", busy-polling" } else { "" }
        );
        Ok(Started {
            endpoint: srv.endpoint.clone(),
            note,
            shutdown: Box::new(move || srv.shutdown()),
        })
    }
}

/// The design, and a raw server's sizes (or the frame limit).
fn order(spec: &RunSpec, req: &mut ServeRequest) {
    if let TargetSpec::Embedded { arch, .. } = &spec.target {
        req.arch = *arch;
    }
    let Some(m) = spec.msgr() else { return };
    if m.mode == MsgrMode::Rr {
        req.mode = Some("rr".into());
        req.size = Some(Bytes(m.size_bytes));
        req.response_size = Some(Bytes(m.response_size_bytes));
    } else {
        req.max_frame = Some(Bytes(m.max_frame_bytes));
    }
}
