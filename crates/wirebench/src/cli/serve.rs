//! `wirebench serve`: a reference server on its own (msgr reactor or pool,
//! shm sessions, or the fake S3 server). It prints one JSON event per line
//! on stdout (`listening`, then `stopped` with its counters) and a note for
//! people on stderr; SIGINT or SIGTERM stop it cleanly. A run that embeds a
//! server starts it with `--order-stdin` and its order on stdin.

use super::error::{UsageError, usage};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_core::spec::{Arch, Endpoint, TransportKind};
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::units::{Bytes, Dur};
use wirebench_runner::Credentials;
use wirebench_runner::serve::{self, ServeError, ServeOrder, ServeRequest, Stall};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// msgr (framed messenger over TCP or a Unix socket), shm (shared-memory sessions, opened
    /// over a Unix socket; each client states its mode, size and wait strategy) or s3 (a fake
    /// S3 server: metadata in memory, data counted and dropped, reads return zeroes). Default: msgr.
    #[arg(long)]
    transport: Option<TransportKind>,
    /// Server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared
    /// work-stealing thread pool). Default: reactor.
    #[arg(long)]
    arch: Option<Arch>,
    /// Where to listen: tcp://HOST:PORT or unix:PATH. Loopback unless told otherwise. Default:
    /// tcp://127.0.0.1:7470 (msgr), unix:$TMPDIR/wirebench-shm-PID.sock (shm), tcp://127.0.0.1:9000 (s3).
    #[arg(long)]
    listen: Option<Endpoint>,
    /// CPUs to run on (e.g. 0-3,8): one reactor per CPU, or that many pool threads. Default: every usable CPU.
    #[arg(long)]
    cpus: Option<CpuList>,
    /// Reactor only: busy-poll instead of sleeping in the kernel (Seastar's poll mode).
    #[arg(long)]
    poll: bool,
    /// Largest frame payload accepted; a larger one closes that connection. Default: 16MiB.
    #[arg(long)]
    max_frame: Option<Bytes>,
    /// Protocol: msgr (framed, the client's handshake picks echo/oneway/stream) or rr (raw
    /// fixed-size request/response, no framing). Default: msgr.
    #[arg(long)]
    mode: Option<String>,
    /// rr only: request size.
    #[arg(long)]
    size: Option<Bytes>,
    /// rr only: response size (default: the request size).
    #[arg(long)]
    response_size: Option<Bytes>,
    /// Fault injection (echo): hold every response this long (e.g. 1ms).
    #[arg(long)]
    delay: Option<Dur>,
    /// Fault injection (echo): stop answering for STALL at the start of every PERIOD, e.g. 100ms/1s.
    #[arg(long)]
    stall: Option<Stall>,
    /// Fault injection (echo): each request holds one of --workers workers this long (a queueing
    /// server with a capacity of workers / service requests per second).
    #[arg(long)]
    service: Option<Dur>,
    /// With --service: how many requests are served at once. Default: 1.
    #[arg(long, requires = "service")]
    workers: Option<usize>,
    /// Record an event timeline of the requests (begin, request parsed, reply queued, reply
    /// sent) and stream it to FILE while the server runs; read it with `wirebench timeline`.
    /// msgr, shm and s3; docs/measurement.md lists each one's events.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// With --trace: trace one request in N (by sequence number). Default: 1.
    #[arg(long, requires = "trace")]
    trace_sample: Option<u64>,
    /// s3: buckets that exist from the start (repeatable). Default: wirebench.
    #[arg(long)]
    bucket: Vec<String>,
    /// s3: requests must be signed (SigV4) with this access key and the secret key in
    /// $AWS_SECRET_ACCESS_KEY. Without them, anonymous requests are served.
    #[arg(long)]
    access_key: Option<String>,
    /// Refused: a secret on the command line is seen by every user of the host (`ps`); set
    /// AWS_SECRET_ACCESS_KEY instead.
    #[arg(long, hide = true)]
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
    /// s3: the most objects held (metadata only), which bounds the server's memory. Default: 10000000.
    #[arg(long)]
    max_objects: Option<usize>,
    /// msgr and s3: connections served at once; more are closed as they come (counted). Default: 10000.
    #[arg(long)]
    max_conns: Option<usize>,
    /// msgr and s3: close a connection when nothing moves for this long, or a frame (s3: request
    /// headers, within 10s) is left unfinished. 0s: never. Default: 60s.
    #[arg(long)]
    idle_timeout: Option<Dur>,
    /// Read the server's order (request and credentials) as one JSON line on stdin (set by `run`).
    #[arg(long, hide = true)]
    order_stdin: bool,
    /// Exit when this process (the parent benchmark) dies.
    #[arg(long, hide = true)]
    exit_with_parent: Option<u32>,
}

impl ServeArgs {
    fn order(self, secret_key: Option<String>) -> ServeOrder {
        let credentials = self
            .access_key
            .zip(secret_key)
            .map(|(access_key, secret_key)| Credentials {
                access_key,
                secret_key,
            });
        ServeOrder {
            request: ServeRequest {
                transport: self.transport,
                arch: self.arch,
                listen: self.listen,
                cpus: self.cpus,
                poll: self.poll,
                max_frame: self.max_frame,
                mode: self.mode,
                size: self.size,
                response_size: self.response_size,
                delay: self.delay,
                stall: self.stall,
                service: self.service,
                workers: self.workers,
                trace: self.trace,
                trace_sample: self.trace_sample,
                bucket: self.bucket,
                domain: self.domain,
                tls_cert: self.tls_cert,
                tls_key: self.tls_key,
                max_objects: self.max_objects,
                max_conns: self.max_conns,
                idle_timeout: self.idle_timeout,
            },
            credentials,
        }
    }
}

pub fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let parent = a.exit_with_parent;
    // Every connection takes a descriptor (`--max-conns` caps them).
    let _ = wirebench_runner::process::raise_open_files_limit();
    let order = if a.order_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        serde_json::from_str(&line)
            .map_err(|e| UsageError(format!("--order-stdin: not a server order: {e}")))?
    } else {
        if a.secret_key.is_some() {
            usage!(
                "--secret-key on the command line is seen by every user of this host (ps, /proc): set AWS_SECRET_ACCESS_KEY instead, with --access-key"
            );
        }
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY")
            .ok()
            .filter(|s| !s.is_empty());
        match (&a.access_key, &secret) {
            (Some(_), None) => usage!(
                "--access-key: its secret key comes from AWS_SECRET_ACCESS_KEY, which is not set"
            ),
            // A secret in the environment alone does not turn on signing:
            // the access key says that it is wanted.
            (None, _) => a.order(None),
            (Some(_), Some(_)) => a.order(secret),
        }
    };
    let mut out = std::io::stdout().lock();
    serve::serve(
        &order.request,
        order.credentials,
        &Topology::read(),
        parent,
        &mut out,
        // A run that embeds the server has said where it runs already.
        &mut |line| {
            if parent.is_none() || line.starts_with("warning:") {
                eprintln!("{line}");
            }
        },
    )
    .map_err(|e| match e {
        ServeError::Spec(s) => UsageError::from(s).into(),
        other => anyhow::Error::new(other),
    })?;
    Ok(ExitCode::SUCCESS)
}
