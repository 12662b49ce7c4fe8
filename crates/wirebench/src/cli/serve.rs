//! `wirebench serve`: a reference msgr server on its own. It prints one JSON
//! event per line on stdout (`listening`, then `stopped` with its counters)
//! and human notes on stderr; SIGINT or SIGTERM stop it cleanly.

use super::args;
use crate::usage;
use anyhow::Context;
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use wirebench_core::spec::{Arch, Endpoint, TransportKind};
use wirebench_core::topo::{CpuList, Topology};
use wirebench_transports::msgr::server::faults::Faults;
use wirebench_transports::msgr::server::{self, ConnConfig, ServerConfig};
use wirebench_transports::sys;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// msgr (framed messenger over TCP or a Unix socket), shm (shared-memory sessions, opened
    /// over a Unix socket; each client states its mode, size and wait strategy) or s3 (a fake
    /// S3 server: metadata in memory, data counted and dropped, reads return zeroes).
    #[arg(long, default_value = "msgr")]
    transport: TransportKind,
    /// Server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared work-stealing thread pool).
    #[arg(long, default_value = "reactor")]
    arch: Arch,
    /// Where to listen: tcp://HOST:PORT or unix:PATH. Loopback unless told otherwise. Default:
    /// tcp://127.0.0.1:7470 (msgr), unix:$TMPDIR/wirebench-shm-PID.sock (shm).
    #[arg(long, value_parser = args::endpoint)]
    listen: Option<Endpoint>,
    /// CPUs to run on (e.g. 0-3,8): one reactor per CPU, or that many pool threads. Default: every usable CPU.
    #[arg(long, value_parser = args::cpu_list)]
    cpus: Option<CpuList>,
    /// Reactor only: busy-poll instead of sleeping in the kernel (Seastar's poll mode).
    #[arg(long)]
    poll: bool,
    /// Largest frame payload accepted; a larger one closes that connection.
    #[arg(long, default_value = "16MiB", value_parser = args::size)]
    max_frame: u64,
    /// Protocol: msgr (framed, the client's handshake picks echo/oneway/stream) or rr (raw fixed-size request/response, no framing).
    #[arg(long, default_value = "msgr", value_parser = ["msgr", "rr"])]
    mode: String,
    /// rr only: request size.
    #[arg(long, value_parser = args::size)]
    size: Option<u64>,
    /// rr only: response size (default: the request size).
    #[arg(long, value_parser = args::size)]
    response_size: Option<u64>,
    /// Fault injection (echo): hold every response this long (e.g. 1ms).
    #[arg(long, value_parser = args::duration)]
    delay: Option<Duration>,
    /// Fault injection (echo): stop answering for STALL at the start of every PERIOD, e.g. 100ms/1s.
    #[arg(long, value_parser = stall)]
    stall: Option<(Duration, Duration)>,
    /// Fault injection (echo): each request holds one of --workers workers this long (a queueing
    /// server with a capacity of workers / service requests per second).
    #[arg(long, value_parser = args::duration)]
    service: Option<Duration>,
    /// With --service: how many requests are served at once. Default: 1.
    #[arg(long, requires = "service")]
    workers: Option<usize>,
    /// Record an event timeline of the requests (received, parsed, reply queued, reply sent)
    /// and write it to FILE when the server stops; read it with `wirebench timeline`. msgr only.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// With --trace: trace one request in N (by sequence number).
    #[arg(long, requires = "trace", default_value_t = 1)]
    trace_sample: u64,
    /// s3: buckets that exist from the start (repeatable). Default: wirebench.
    #[arg(long)]
    bucket: Vec<String>,
    /// s3: requests must be signed (SigV4) with this access key and --secret-key (default:
    /// $WIREBENCH_FAKE_ACCESS_KEY). Without credentials, anonymous requests are served.
    #[arg(long)]
    access_key: Option<String>,
    /// s3: the secret key (default: $WIREBENCH_FAKE_SECRET_KEY).
    #[arg(long)]
    secret_key: Option<String>,
    /// s3: answer virtual-host-style requests to BUCKET.DOMAIN (path style always works).
    #[arg(long)]
    domain: Option<String>,
    /// s3: serve HTTPS (s3s://) with this certificate chain (PEM), and --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// s3: the private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// s3: the most objects held (metadata only), which bounds the server's memory.
    #[arg(long, default_value_t = 10_000_000)]
    max_objects: usize,
    /// Exit when this process (the parent benchmark) dies.
    #[arg(long, hide = true)]
    exit_with_parent: Option<u32>,
}

/// Parses `STALL/PERIOD`, e.g. `100ms/1s`.
fn stall(s: &str) -> Result<(Duration, Duration), String> {
    let form =
        || format!("'{s}' is not STALL/PERIOD: write e.g. 100ms/1s (stop for 100 ms every second)");
    let (a, b) = s.split_once('/').ok_or_else(form)?;
    let (stall, period) = (
        args::duration(a).map_err(|_| form())?,
        args::duration(b).map_err(|_| form())?,
    );
    if stall.is_zero() || stall >= period {
        return Err(format!(
            "'{s}': the stall must be longer than 0 and shorter than the period"
        ));
    }
    Ok((stall, period))
}

pub fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let topo = Topology::read();
    let cpus = a.cpus.clone().unwrap_or_else(|| topo.usable());
    args::check_cpus("--cpus", &cpus, &topo)?;
    if a.transport == TransportKind::S3 {
        return serve_s3(a, cpus);
    }
    let s3_only = [
        ("--bucket", !a.bucket.is_empty()),
        ("--access-key", a.access_key.is_some()),
        ("--secret-key", a.secret_key.is_some()),
        ("--domain", a.domain.is_some()),
        ("--tls-cert", a.tls_cert.is_some()),
    ];
    if let Some((flag, _)) = s3_only.iter().find(|(_, set)| *set) {
        usage!("{flag} applies to --transport s3 only");
    }
    if a.transport == TransportKind::Shm {
        if a.trace.is_some() {
            usage!("--trace: the msgr servers are instrumented, not shm");
        }
        return serve_shm(a, cpus);
    }
    if a.trace_sample == 0 {
        usage!("--trace-sample 0: trace one request in N, N at least 1");
    }
    if a.trace.is_some() {
        wirebench_trace::set_sample(a.trace_sample);
        wirebench_trace::enable();
    }
    let listen = a
        .listen
        .clone()
        .unwrap_or_else(|| Endpoint::Tcp("127.0.0.1:7470".into()));
    if a.poll && a.arch == Arch::Pool {
        usage!("--poll: the pool server has no poll mode; use --arch reactor, or drop --poll");
    }
    if a.max_frame == 0 || a.max_frame > u32::MAX as u64 {
        usage!(
            "--max-frame {}: must be between 1 byte and 4GiB-1",
            a.max_frame
        );
    }
    let raw = if a.mode == "rr" {
        let Some(req) = a.size else {
            usage!(
                "--mode rr needs --size (and optionally --response-size): the raw protocol has fixed sizes"
            )
        };
        let resp = a.response_size.unwrap_or(req);
        if req == 0 || resp == 0 {
            usage!("--size and --response-size must be at least 1 byte in rr mode");
        }
        Some((req as usize, resp as usize))
    } else {
        if a.size.is_some() || a.response_size.is_some() {
            usage!(
                "--size and --response-size apply to --mode rr only: msgr clients state sizes in their handshake"
            );
        }
        None
    };
    if a.workers == Some(0) {
        usage!("--workers 0: must be at least 1");
    }
    if a.delay.is_some_and(|d| d.is_zero()) || a.service.is_some_and(|d| d.is_zero()) {
        usage!("--delay and --service must be longer than 0s");
    }
    let faults = (a.delay.is_some() || a.stall.is_some() || a.service.is_some()).then(|| {
        Arc::new(Faults::new(
            a.delay.unwrap_or_default(),
            a.stall,
            a.service.map(|s| (s, a.workers.unwrap_or(1))),
        ))
    });
    if faults.is_some() && raw.is_some() {
        usage!("--delay, --stall and --service apply to msgr echo, not to --mode rr");
    }
    // Block SIGINT/SIGTERM before any thread starts, so all threads inherit
    // the mask and this thread alone receives them, with sigwait.
    sys::block_termination_signals()?;
    if let Some(parent) = a.exit_with_parent {
        sys::terminate_with_parent(parent)?;
    }
    sys::pin_process_threads(cpus.cpus())?;
    let cfg = ServerConfig {
        arch: a.arch,
        listen,
        cpus: cpus.cpus().to_vec(),
        poll: a.poll,
        conn: ConnConfig {
            max_frame: a.max_frame,
            raw,
            handshake_timeout: Duration::from_secs(10),
            faults,
        },
    };
    let srv = server::start(&cfg)?;
    let mut out = std::io::stdout().lock();
    let event = json!({
        "event": "listening",
        "endpoint": srv.endpoint.to_string(),
        "arch": a.arch.to_string(),
        "cpus": cpus.to_string(),
        "poll": a.poll,
        "pid": std::process::id(),
    });
    writeln!(out, "{event}")?;
    out.flush()?;
    if a.exit_with_parent.is_none() {
        eprintln!(
            "wirebench serve: {} {} on {}, CPUs {}{}; Ctrl-C to stop",
            a.arch,
            if raw.is_some() { "rr" } else { "msgr" },
            srv.endpoint,
            cpus,
            if a.poll { ", busy-polling" } else { "" }
        );
    }
    let code = wait_and_stop(&mut out, || srv.shutdown())?;
    if let Some(f) = &a.trace {
        wirebench_trace::dump(f).with_context(|| format!("writing --trace {}", f.display()))?;
    }
    Ok(code)
}

/// Refuses the flags of the msgr servers (for shm and s3).
fn refuse_msgr_flags(a: &ServeArgs) -> anyhow::Result<()> {
    let msgr_only = [
        ("--arch", a.arch != Arch::Reactor),
        ("--poll", a.poll),
        ("--mode", a.mode != "msgr"),
        ("--size", a.size.is_some()),
        ("--response-size", a.response_size.is_some()),
        ("--delay", a.delay.is_some()),
        ("--stall", a.stall.is_some()),
        ("--service", a.service.is_some()),
        ("--trace", a.trace.is_some()),
    ];
    if let Some((flag, _)) = msgr_only.iter().find(|(_, set)| *set) {
        usage!("{flag} applies to --transport msgr only");
    }
    Ok(())
}

/// `serve --transport shm`: sessions over shared memory (or the descriptor
/// channels of `--channel`), one pinned thread each.
fn serve_shm(a: ServeArgs, cpus: CpuList) -> anyhow::Result<ExitCode> {
    use wirebench_transports::shm::server::{self as shm_server, ShmServerConfig};
    refuse_msgr_flags(&a)?;
    let socket = match &a.listen {
        None => wirebench_transports::shm::default_socket_path(std::process::id()),
        Some(Endpoint::Unix(p)) => p.clone(),
        Some(Endpoint::Tcp(_) | Endpoint::S3 { .. }) => {
            usage!("--listen: a shm server listens on a Unix socket: --listen unix:PATH")
        }
    };
    sys::block_termination_signals()?;
    if let Some(parent) = a.exit_with_parent {
        sys::terminate_with_parent(parent)?;
    }
    sys::pin_process_threads(cpus.cpus())?;
    let srv = shm_server::start(&ShmServerConfig {
        socket: socket.clone(),
        cpus: cpus.cpus().to_vec(),
    })?;
    let endpoint = Endpoint::Unix(socket);
    let mut out = std::io::stdout().lock();
    let event = json!({
        "event": "listening",
        "endpoint": endpoint.to_string(),
        "transport": "shm",
        "cpus": cpus.to_string(),
        "pid": std::process::id(),
    });
    writeln!(out, "{event}")?;
    out.flush()?;
    if a.exit_with_parent.is_none() {
        eprintln!(
            "wirebench serve: shm sessions on {endpoint}, CPUs {cpus} (a pinned thread per session); Ctrl-C to stop"
        );
    }
    wait_and_stop(&mut out, || srv.shutdown())
}

/// `serve --transport s3`: the fake S3 server.
fn serve_s3(a: ServeArgs, cpus: CpuList) -> anyhow::Result<ExitCode> {
    use wirebench_transports::s3::fake;
    refuse_msgr_flags(&a)?;
    let listen = match &a.listen {
        None => "127.0.0.1:9000".to_string(),
        Some(Endpoint::Tcp(addr)) => addr.clone(),
        Some(_) => usage!("--listen: the fake S3 server listens on tcp://HOST:PORT"),
    };
    let buckets = if a.bucket.is_empty() {
        vec!["wirebench".to_string()]
    } else {
        a.bucket.clone()
    };
    if let Some(b) = buckets
        .iter()
        .find(|b| !wirebench_core::spec::valid_bucket(b))
    {
        usage!("--bucket {b}: a bucket name is 3-63 of a-z, 0-9, '.' and '-'");
    }
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    let key = a
        .access_key
        .clone()
        .or_else(|| var("WIREBENCH_FAKE_ACCESS_KEY"));
    let secret = a
        .secret_key
        .clone()
        .or_else(|| var("WIREBENCH_FAKE_SECRET_KEY"));
    let creds = match (key, secret) {
        (Some(k), Some(s)) => Some((k, s)),
        (None, None) => None,
        _ => usage!("--access-key and --secret-key go together"),
    };
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => match wirebench_transports::s3::tls::server_config(c, k) {
            Ok(t) => Some(t),
            Err(e) => usage!("--tls-cert / --tls-key: {e}"),
        },
        _ => None,
    };
    if a.max_objects == 0 {
        usage!("--max-objects 0: must be at least 1");
    }
    sys::block_termination_signals()?;
    if let Some(parent) = a.exit_with_parent {
        sys::terminate_with_parent(parent)?;
    }
    sys::pin_process_threads(cpus.cpus())?;
    let signed = creds.is_some();
    let srv = fake::start(&fake::FakeConfig {
        listen,
        buckets: buckets.clone(),
        creds,
        domain: a.domain.clone(),
        threads: cpus.len(),
        max_objects: a.max_objects,
        max_uploads: 10_000,
        tls: tls.clone(),
    })?;
    let endpoint = Endpoint::S3 {
        tls: tls.is_some(),
        addr: srv.addr.to_string(),
        bucket: buckets[0].clone(),
    };
    let mut out = std::io::stdout().lock();
    let event = json!({
        "event": "listening",
        "endpoint": endpoint.to_string(),
        "transport": "s3",
        "cpus": cpus.to_string(),
        "signed": signed,
        "pid": std::process::id(),
    });
    writeln!(out, "{event}")?;
    out.flush()?;
    if a.exit_with_parent.is_none() {
        eprintln!(
            "wirebench serve: fake S3 on {endpoint} (buckets {}), CPUs {cpus}, {}; Ctrl-C to stop",
            buckets.join(", "),
            if signed {
                "SigV4 signatures checked"
            } else {
                "anonymous requests served"
            }
        );
    }
    wait_and_stop(&mut out, || srv.shutdown())
}

/// Waits for SIGINT or SIGTERM, stops the server, and prints its `stopped`
/// event with its counters.
fn wait_and_stop(
    out: &mut impl Write,
    shutdown: impl FnOnce() -> wirebench_core::result::ServerStats,
) -> anyhow::Result<ExitCode> {
    let signal = sys::wait_for_termination()?;
    let stats = shutdown();
    let _ = writeln!(
        out,
        "{}",
        json!({ "event": "stopped", "signal": signal, "stats": stats })
    );
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}
