//! `wirebench run`: one measured run. Flags are checked into a `RunSpec`;
//! the embedded server (unless `--target`) runs as a separate pinned
//! process so its CPU time and memory are measured apart; the engine drives
//! the load; the result is written to `<results>/<run-id>/run.json` and one
//! line to `<results>/summary.csv`, whatever the outcome.

use super::args;
use crate::ui;
use crate::usage;
use anyhow::Context;
use clap::Args;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wirebench_core::hist::{self, LatencySummary};
use wirebench_core::result::{
    self, Interval, Phase, Placement, RunResult, RunState, RunStatus, ServerReport, ServerStats,
    Summary,
};
use wirebench_core::slo::Slo;
use wirebench_core::spec::{
    Arch, Arrival, Channel, ClientsAs, Endpoint, Mode, RunSpec, S3Spec, ShmSpec, SizeSpec,
    StopSpec, TargetSpec, TransportKind, UrlStyle, Wait,
};
use wirebench_core::stats::{Spread, Trend};
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::{env::Environment, store};
use wirebench_load::engine::{self, Abort, EndState, IntervalReport, LoadConfig, Observer};
use wirebench_load::remote;
use wirebench_load::{os, sampler::Sampler};
use wirebench_transports::msgr::client::MsgrClient;
use wirebench_transports::shm::client::ShmClient;
use wirebench_transports::sys;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Transport: msgr (framed messenger over TCP or Unix sockets), shm (shared-memory rings;
    /// see --wait, --clients-as, --channel) or s3 (S3 over HTTP/1.1; see --workload; the
    /// embedded fake S3 server unless --target s3://HOST:PORT/BUCKET).
    #[arg(long)]
    pub(super) transport: Option<TransportKind>,
    /// Embedded server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared work-stealing pool). Default: reactor.
    #[arg(long)]
    arch: Option<Arch>,
    /// Measure a server already listening at tcp://HOST:PORT, unix:PATH or (s3)
    /// s3://HOST:PORT/BUCKET instead of the embedded one.
    #[arg(long, value_parser = args::endpoint, conflicts_with_all = ["arch", "server_cpus", "listen", "max_frame"])]
    target: Option<Endpoint>,
    /// Where the embedded server listens: tcp://127.0.0.1:0 (a free port) unless told otherwise, or unix:PATH.
    #[arg(long, value_parser = args::endpoint)]
    listen: Option<Endpoint>,
    /// msgr: echo (request/response), oneway (requests only), stream (server sends, client
    /// drops), rr (raw fixed-size request/response, no framing); default echo. shm: sync (one
    /// request outstanding), async (a sender and a receiver thread, --depth outstanding,
    /// default 64), nores (requests only), stream (the data channel: the server writes, the
    /// client reads every byte); default sync.
    #[arg(long)]
    mode: Option<Mode>,
    /// shm: how a side waits for its peer: spin (fastest, a core busy), futex (sleep in the
    /// kernel), adaptive (spin ~50 us, then sleep). Default: adaptive.
    #[arg(long)]
    pub(super) wait: Option<Wait>,
    /// shm: clients as threads of this process (the IPC report's mt) or one process per
    /// session (mp). Default: threads.
    #[arg(long)]
    pub(super) clients_as: Option<ClientsAs>,
    /// shm: what carries the sessions: shm (shared memory), or for comparison pipe, unix
    /// (socket pair) or tcp (loopback), with the same records and server. Default: shm.
    #[arg(long)]
    pub(super) channel: Option<Channel>,
    /// shm: bytes of each ring (requests, responses), a power of two. Default: 1MiB, or room
    /// for four messages.
    #[arg(long, value_parser = args::size)]
    ring_size: Option<u64>,
    /// Request payload (echo, oneway, rr) or stream frame payload: 64, 4KiB, 1MiB... Default 64.
    /// s3: object size, fixed (4KiB), a list objects take in turn (4KiB,1MiB) or a log-uniform
    /// range (1KiB..1MiB); default 4KiB.
    #[arg(long, value_parser = args::size_spec)]
    size: Option<SizeSpec>,
    /// Response payload (echo, rr). Default: --size.
    #[arg(long, value_parser = args::size)]
    response_size: Option<u64>,
    /// Client workers: one thread each, pinned round-robin to the client CPUs (shm: sessions,
    /// each with its own rings and server thread).
    #[arg(long, visible_alias = "sessions", default_value_t = 1)]
    clients: usize,
    /// Connections per client.
    #[arg(long, default_value_t = 1)]
    conns_per_client: usize,
    /// Requests outstanding per connection (echo, rr); frames per send call (oneway). Default: 1.
    #[arg(long)]
    pub(super) depth: Option<usize>,
    /// Open loop: total requests per second (500, 50k/s), sent on a fixed timetable whatever the
    /// server does; latency then runs from each request's intended send time (no coordinated
    /// omission). Default: closed loop. --depth becomes the most requests outstanding per
    /// connection (default 1024).
    #[arg(long, value_parser = args::rate)]
    pub(super) rate: Option<f64>,
    /// Open loop: uniform (evenly spaced) or poisson (exponential gaps) arrivals.
    #[arg(long, requires = "rate")]
    arrival: Option<Arrival>,
    /// Length of the measured phase (after the warm-up): 500ms, 10s, 1m. Default: 5s.
    #[arg(long, value_parser = args::duration, conflicts_with = "count")]
    duration: Option<Duration>,
    /// Stop after this many operations in the measured phase, over all connections.
    #[arg(long)]
    count: Option<u64>,
    /// Warm-up: measured and shown, excluded from the summary.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    warmup: Duration,
    /// Busy-poll on the client and on the embedded (reactor) server instead of sleeping in the kernel.
    #[arg(long)]
    poll: bool,
    /// Fill payloads with a per-message pattern and check every payload on both sides.
    #[arg(long)]
    verify: bool,
    /// CPUs of the embedded server (e.g. 1 or 2-3). Default: the upper half of the usable CPUs.
    #[arg(long, value_parser = args::cpu_list)]
    server_cpus: Option<CpuList>,
    /// CPUs of the client workers. Default: the lower half of the usable CPUs (all of them with --target).
    #[arg(long, value_parser = args::cpu_list)]
    client_cpus: Option<CpuList>,
    /// Largest frame payload the embedded server accepts.
    #[arg(long, value_parser = args::size)]
    max_frame: Option<u64>,
    /// Run the same spec N times (against one server); each metric is then reported as mean with
    /// a 95% confidence interval, min and max.
    #[arg(long, default_value_t = 1)]
    pub(super) repeat: usize,
    /// Service-level objectives to check (repeatable, or comma-separated): p99<1ms, mean<200us,
    /// max<50ms, ops>=10k/s, errors<1%. A complete run that misses one exits with status 3.
    #[arg(long)]
    pub(super) slo: Vec<String>,
    /// Also write the per-second latency histograms to FILE, in the HdrHistogram interval-log
    /// format (warm-up intervals tagged 'warmup').
    #[arg(long)]
    pub(super) hlog: Option<PathBuf>,
    /// Directory of results: DIR/RUN-ID/run.json and DIR/summary.csv.
    #[arg(long, default_value = "results")]
    pub(super) results: PathBuf,
    /// text: progress lines on stderr and a summary on stdout; json: the whole result on
    /// stdout; csv: one line per run, the IPC report's columns then latency: sessions, mt|mp,
    /// mode, size, operations, elapsed s, messages/s, GB/s (GiB, of messages/s x size),
    /// p50 us, p99 us. A round trip counts as two messages, as in the report.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "csv"])]
    pub(super) format: String,
    /// Record an event timeline of the requests (client: scheduled, sent, response received;
    /// embedded server: received, parsed, reply queued, reply sent) into trace-client.txt and
    /// trace-server.txt in the run's directory, and the client's also into FILE if given; read
    /// them with `wirebench timeline`. msgr only.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    trace: Option<Option<PathBuf>>,
    /// With --trace: trace one request in N (by sequence number).
    #[arg(long, requires = "trace")]
    trace_sample: Option<u64>,
    /// The placement policy that chose --server-cpus and --client-cpus (set by `sweep`).
    #[arg(long, hide = true)]
    placement_policy: Option<String>,
    /// A note on the placement (set by `sweep`, repeatable).
    #[arg(long, hide = true)]
    placement_note: Vec<String>,
    /// Stop (as on SIGTERM, saving the partial result) when this process dies (set by `sweep`).
    #[arg(long, hide = true)]
    exit_with_parent: Option<u32>,
    #[command(flatten)]
    pub(super) s3: S3Args,
}

/// The S3 transport's flags.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "S3 (--transport s3)")]
pub struct S3Args {
    /// get, put, head, delete (each object once; the run ends when all are deleted), list (a
    /// page of up to 1000 keys) or mixed (see --mix). Default: get. Time to first byte (TTFB):
    /// GET, from the request's start to the first byte of the body; PUT (and HEAD, DELETE),
    /// to the response headers, which come after the whole body was sent; LIST, to the first
    /// byte of the body. Open loop (--rate): from the intended start.
    #[arg(long)]
    pub(super) workload: Option<Mode>,
    /// Weights of the operations of --workload mixed: get=70,put=20,delete=10 (of get, put,
    /// head, delete, list).
    #[arg(long, value_parser = args::mix)]
    pub(super) mix: Option<args::Mix>,
    /// Objects the workload works on: created by a prepare phase for reads (timed and
    /// reported apart), overwritten by puts. Default: 100.
    #[arg(long)]
    pub(super) objects: Option<u64>,
    /// path (`http://host/bucket/key`) or virtual (`http://bucket.host/key`; the connection still
    /// goes to the target's HOST:PORT). Default: path.
    #[arg(long)]
    pub(super) url_style: Option<UrlStyle>,
    /// SigV4 region. Default: $AWS_REGION, else us-east-1.
    #[arg(long)]
    pub(super) region: Option<String>,
    /// Access key (default: $AWS_ACCESS_KEY_ID). Never printed nor stored.
    #[arg(long)]
    pub(super) access_key: Option<String>,
    /// Secret key (default: $AWS_SECRET_ACCESS_KEY). Never printed nor stored.
    #[arg(long)]
    pub(super) secret_key: Option<String>,
    /// Objects larger than this are uploaded in parts. Default: 64MiB.
    #[arg(long, value_parser = args::size)]
    pub(super) multipart_threshold: Option<u64>,
    /// Part size of multipart uploads and of --get-parts ranged reads. Default: 16MiB.
    #[arg(long, value_parser = args::size)]
    pub(super) part_size: Option<u64>,
    /// Parts of one multipart upload sent at once (each on a connection of its own). Default: 1.
    #[arg(long)]
    pub(super) put_parts: Option<usize>,
    /// Read objects larger than --part-size as ranged GETs of a part, this many at once (each
    /// on a connection of its own). Default: 1 (one streamed GET).
    #[arg(long)]
    pub(super) get_parts: Option<usize>,
    /// Keep the objects the run created (default: deleted at the end).
    #[arg(long)]
    pub(super) keep: bool,
    /// Create the target bucket if it does not exist.
    #[arg(long)]
    pub(super) create_bucket: bool,
    /// s3s:// targets: also trust the certificates of this PEM file (a private CA, a
    /// self-signed endpoint); the Mozilla roots are always trusted.
    #[arg(long)]
    pub(super) ca_file: Option<PathBuf>,
}

impl RunArgs {
    /// The --slo objectives, checked.
    pub(super) fn slos(&self) -> anyhow::Result<Vec<Slo>> {
        let mut all = Vec::new();
        for s in &self.slo {
            match Slo::parse_list(s) {
                Ok(v) => all.extend(v),
                Err(e) => usage!("--slo: {e}"),
            }
        }
        Ok(all)
    }
}

const MAX_CLIENTS: usize = 4096;
const MAX_CONNECTIONS: usize = 65_536;
const MAX_DEPTH: usize = 1 << 20;
/// Far above what one connection does on loopback (~100k/s): a typo, not a plan.
const MAX_RATE_PER_CONN: f64 = 10e6;

/// Checks the flags against each other and the machine; returns the spec and
/// how the placement was chosen.
pub(super) fn validate(a: &RunArgs, topo: &Topology) -> anyhow::Result<(RunSpec, Placement)> {
    let transport = a.transport.unwrap_or(TransportKind::Msgr);
    let modes = Mode::of(transport);
    if transport == TransportKind::S3 && a.mode.is_some() {
        usage!("--mode: an S3 run takes --workload get|put|head|delete|list|mixed");
    }
    let mode = a.mode.or(a.s3.workload).unwrap_or(modes[0]);
    if !modes.contains(&mode) {
        let names: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
        usage!(
            "--mode {mode}: not a mode of --transport {}; use one of {}",
            transport,
            names.join(", ")
        );
    }
    let shm = validate_shm(a, mode)?;
    let s3 = validate_s3(a, mode)?;
    let size = match &a.size {
        None if transport == TransportKind::S3 => 4096,
        None => 64,
        Some(SizeSpec::Fixed(n)) => *n,
        Some(_) if transport == TransportKind::S3 => a.size.as_ref().map_or(0, SizeSpec::max),
        Some(s) => usage!("--size {s}: a list or a range of sizes applies to --transport s3 only"),
    };
    if a.trace.is_some() && transport != TransportKind::Msgr {
        usage!("--trace: the msgr client and servers are instrumented, not {transport}");
    }
    if a.trace_sample == Some(0) {
        usage!("--trace-sample 0: trace one request in N, N at least 1");
    }
    if !(1..=MAX_CLIENTS).contains(&a.clients) {
        usage!(
            "--clients {}: must be between 1 and {MAX_CLIENTS}",
            a.clients
        );
    }
    if a.conns_per_client == 0 || a.clients * a.conns_per_client > MAX_CONNECTIONS {
        usage!(
            "--conns-per-client {}: must be at least 1, and --clients x --conns-per-client at most {MAX_CONNECTIONS}",
            a.conns_per_client
        );
    }
    if mode == Mode::Stream && a.depth.is_some() {
        usage!(
            "--depth does not apply to --mode stream: the server sends without waiting for requests"
        );
    }
    if mode == Mode::Stream && a.rate.is_some() {
        usage!("--rate does not apply to --mode stream: the server sends as fast as it can");
    }
    if let Some(rate) = a.rate {
        let per_conn = rate / (a.clients * a.conns_per_client) as f64;
        if per_conn > MAX_RATE_PER_CONN {
            usage!(
                "--rate {rate}: {per_conn:.0}/s per connection is more than one connection can send ({MAX_RATE_PER_CONN:.0}/s); add connections (--clients, --conns-per-client) or lower the rate"
            );
        }
        if per_conn < 0.1 {
            usage!(
                "--rate {rate}: below 0.1/s per connection the run would send nothing; raise the rate or use fewer connections"
            );
        }
    }
    // Open loop: depth caps the requests outstanding, which keeps memory
    // bounded when the server falls behind the timetable.
    let depth = a.depth.unwrap_or(match mode {
        Mode::Async => 64,
        _ if a.rate.is_some() => 1024,
        _ => 1,
    });
    if !(1..=MAX_DEPTH).contains(&depth) {
        usage!("--depth {depth}: must be between 1 and {MAX_DEPTH}");
    }
    if transport != TransportKind::S3 && (size == 0 || size > u32::MAX as u64) {
        usage!("--size {size}: must be between 1 byte and 4GiB-1");
    }
    if a.response_size.is_some() && !mode.has_response() {
        usage!(
            "--response-size applies to --mode echo and rr only, not {}",
            mode
        );
    }
    let response_size = a.response_size.unwrap_or(size);
    if transport != TransportKind::S3 && (response_size == 0 || response_size > u32::MAX as u64) {
        usage!("--response-size {response_size}: must be between 1 byte and 4GiB-1");
    }
    let max_frame = a
        .max_frame
        .unwrap_or(wirebench_transports::msgr::frame::DEFAULT_MAX_FRAME);
    if max_frame == 0 || max_frame > u32::MAX as u64 {
        usage!("--max-frame {max_frame}: must be between 1 byte and 4GiB-1");
    }
    if transport == TransportKind::Msgr
        && a.target.is_none()
        && mode != Mode::Rr
        && (size > max_frame || response_size > max_frame)
    {
        usage!(
            "--size {size} / --response-size {response_size}: above --max-frame {max_frame}; raise --max-frame or lower the size"
        );
    }
    let stop = match (a.count, a.duration) {
        (Some(0), _) => usage!("--count 0: must be at least 1"),
        (Some(c), _) => StopSpec::Count(c),
        (None, Some(d)) if d.is_zero() => usage!("--duration must be longer than 0s"),
        (None, d) => StopSpec::DurationNs(d.unwrap_or(Duration::from_secs(5)).as_nanos() as u64),
    };
    let arch = a.arch.unwrap_or(Arch::Reactor);
    if a.poll && a.target.is_none() && arch == Arch::Pool {
        usage!(
            "--poll: the pool server has no poll mode; use --arch reactor, or drop --poll (with --target, --poll applies to the client only)"
        );
    }
    if let Some(h) = &a.hlog {
        let parent = h
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            usage!(
                "--hlog {}: the directory {} does not exist",
                h.display(),
                parent.display()
            );
        }
    }
    // Placement.
    let usable = topo.usable();
    let mut notes = Vec::new();
    if let Some(c) = &a.client_cpus {
        args::check_cpus("--client-cpus", c, topo)?;
    }
    if let Some(c) = &a.server_cpus {
        args::check_cpus("--server-cpus", c, topo)?;
    }
    let half = |upper: bool| -> CpuList {
        let cpus = usable.cpus();
        let mid = cpus.len() / 2;
        let part = if upper { &cpus[mid..] } else { &cpus[..mid] };
        CpuList::from_cpus(part.to_vec()).unwrap_or_else(|_| usable.clone())
    };
    let others = |taken: &CpuList| -> Option<CpuList> {
        CpuList::from_cpus(
            usable
                .cpus()
                .iter()
                .copied()
                .filter(|c| !taken.contains(*c))
                .collect(),
        )
        .ok()
    };
    let (client_cpus, server_cpus) = match &a.target {
        Some(_) => {
            let c = a.client_cpus.clone().unwrap_or_else(|| usable.clone());
            (c, None)
        }
        None => {
            let (c, s) = match (&a.client_cpus, &a.server_cpus) {
                (Some(c), Some(s)) => (c.clone(), s.clone()),
                (Some(c), None) => (c.clone(), others(c).unwrap_or_else(|| c.clone())),
                (None, Some(s)) => (others(s).unwrap_or_else(|| s.clone()), s.clone()),
                (None, None) if usable.len() >= 2 => {
                    notes.push(format!(
                        "default placement: the usable CPUs ({usable}) split in two halves"
                    ));
                    (half(false), half(true))
                }
                (None, None) => (usable.clone(), usable.clone()),
            };
            if c.overlaps(&s) {
                notes.push(format!(
                    "client CPUs {c} and server CPUs {s} overlap: they compete for the same cores"
                ));
            }
            (c, Some(s))
        }
    };
    if a.clients > client_cpus.len() {
        notes.push(format!(
            "{} clients share {} client CPU(s) ({client_cpus})",
            a.clients,
            client_cpus.len()
        ));
    }
    let target = match &a.target {
        Some(endpoint) => TargetSpec::External {
            endpoint: endpoint.clone(),
        },
        None => TargetSpec::Embedded {
            arch: (transport == TransportKind::Msgr).then_some(arch),
            cpus: server_cpus.clone().expect("embedded server has CPUs"),
            poll: a.poll,
            listen: a.listen.clone().unwrap_or_else(|| match transport {
                TransportKind::Msgr => Endpoint::Tcp("127.0.0.1:0".into()),
                TransportKind::Shm => Endpoint::Unix(
                    wirebench_transports::shm::default_socket_path(0)
                        .with_file_name("wirebench-shm-<server-pid>.sock"),
                ),
                TransportKind::S3 => Endpoint::Tcp("127.0.0.1:0".into()),
            }),
        },
    };
    let spec = RunSpec {
        transport,
        target,
        mode,
        size_bytes: size,
        response_size_bytes: if mode.has_response() && s3.is_none() {
            response_size
        } else {
            0
        },
        clients: a.clients,
        conns_per_client: a.conns_per_client,
        depth: if mode == Mode::Stream { 1 } else { depth },
        rate_per_s: a.rate,
        arrival: a.arrival.unwrap_or(Arrival::Uniform),
        stop,
        warmup_ns: a.warmup.as_nanos() as u64,
        poll: a.poll
            || shm
                .as_ref()
                .is_some_and(|s| s.wait == Wait::Spin && s.channel == Channel::Shm),
        verify: a.verify,
        client_cpus: client_cpus.clone(),
        max_frame_bytes: max_frame,
        shm,
        s3,
        trace_sample: a.trace.is_some().then(|| a.trace_sample.unwrap_or(1)),
    };
    Ok((
        spec,
        Placement {
            client_cpus,
            server_cpus,
            notes: a.placement_note.iter().cloned().chain(notes).collect(),
            policy: a.placement_policy.clone(),
        },
    ))
}

/// The S3 transport's checks; its settings (None for other transports,
/// which must not get S3 flags).
fn validate_s3(a: &RunArgs, mode: Mode) -> anyhow::Result<Option<S3Spec>> {
    let f = &a.s3;
    let s3_flags = [
        ("--workload", f.workload.is_some()),
        ("--mix", f.mix.is_some()),
        ("--objects", f.objects.is_some()),
        ("--url-style", f.url_style.is_some()),
        ("--region", f.region.is_some()),
        ("--access-key", f.access_key.is_some()),
        ("--secret-key", f.secret_key.is_some()),
        ("--multipart-threshold", f.multipart_threshold.is_some()),
        ("--part-size", f.part_size.is_some()),
        ("--put-parts", f.put_parts.is_some()),
        ("--get-parts", f.get_parts.is_some()),
        ("--keep", f.keep),
        ("--create-bucket", f.create_bucket),
        ("--ca-file", f.ca_file.is_some()),
    ];
    if a.transport != Some(TransportKind::S3) {
        if let Some((flag, _)) = s3_flags.iter().find(|(_, set)| *set) {
            usage!("{flag} applies to --transport s3 only");
        }
        if let Some(t @ Endpoint::S3 { .. }) = &a.target {
            usage!("--target {t}: an S3 endpoint; add --transport s3");
        }
        return Ok(None);
    }
    let not_s3 = [
        ("--arch", a.arch.is_some()),
        ("--poll", a.poll),
        ("--max-frame", a.max_frame.is_some()),
        ("--response-size", a.response_size.is_some()),
        ("--wait", a.wait.is_some()),
        ("--clients-as", a.clients_as.is_some()),
        ("--channel", a.channel.is_some()),
        ("--ring-size", a.ring_size.is_some()),
        ("--trace", a.trace.is_some()),
    ];
    if let Some((flag, _)) = not_s3.iter().find(|(_, set)| *set) {
        usage!("{flag} does not apply to --transport s3");
    }
    if a.depth.is_some_and(|d| d != 1) {
        usage!(
            "--depth: an S3 connection has one request outstanding (HTTP/1.1); add connections with --clients or --conns-per-client"
        );
    }
    match &a.target {
        None | Some(Endpoint::S3 { .. }) => {}
        Some(t) => usage!("--target {t}: an S3 target is s3://HOST:PORT/BUCKET"),
    }
    if f.url_style == Some(UrlStyle::Virtual) && a.target.is_none() {
        usage!(
            "--url-style virtual needs a host name: the embedded server listens on an IP address; use --target s3://localhost:PORT/BUCKET with `serve --transport s3 --domain localhost`"
        );
    }
    if matches!(&a.listen, Some(Endpoint::Unix(_) | Endpoint::S3 { .. })) {
        usage!("--listen: the fake S3 server listens on tcp://HOST:PORT");
    }
    let mix = match (mode, &f.mix) {
        (Mode::Mixed, None) => vec![(Mode::Get, 70), (Mode::Put, 20), (Mode::Delete, 10)],
        (Mode::Mixed, Some(m)) => m.0.clone(),
        (_, Some(_)) => usage!("--mix applies to --workload mixed only"),
        (_, None) => Vec::new(),
    };
    let objects = f.objects.unwrap_or(100);
    if !(1..=wirebench_transports::s3::MAX_OBJECTS).contains(&objects) {
        usage!(
            "--objects {objects}: must be between 1 and {}",
            wirebench_transports::s3::MAX_OBJECTS
        );
    }
    let sizes = a.size.clone().unwrap_or(SizeSpec::Fixed(4096));
    let threshold = f.multipart_threshold.unwrap_or(64 << 20);
    let part = f.part_size.unwrap_or(16 << 20);
    use wirebench_transports::s3::{MAX_PARTS, MIN_PART};
    if part < MIN_PART {
        usage!("--part-size {part}: S3 parts are at least 5MiB (all but the last)");
    }
    if sizes.max() > threshold && sizes.max().div_ceil(part) > MAX_PARTS {
        usage!(
            "--size {sizes}: {} parts of --part-size {part}, above S3's limit of {MAX_PARTS}; raise --part-size",
            sizes.max().div_ceil(part)
        );
    }
    if threshold > 5 << 30 {
        usage!("--multipart-threshold {threshold}: S3 takes single PUTs of at most 5GiB");
    }
    let parts_ok = |n: Option<usize>| n.is_none_or(|n| (1..=64).contains(&n));
    if !parts_ok(f.put_parts) || !parts_ok(f.get_parts) {
        usage!("--put-parts / --get-parts: between 1 and 64");
    }
    if a.repeat > 1 && mode == Mode::Delete {
        usage!(
            "--repeat: --workload delete deletes each object once; repeat the whole run instead"
        );
    }
    if let Some(ca) = &f.ca_file {
        if !matches!(a.target, Some(Endpoint::S3 { tls: true, .. })) {
            usage!("--ca-file applies to s3s:// (TLS) targets");
        }
        if !ca.is_file() {
            usage!("--ca-file {}: no such file", ca.display());
        }
    }
    if f.access_key.is_some() != f.secret_key.is_some() {
        usage!("--access-key and --secret-key go together");
    }
    Ok(Some(S3Spec {
        mix,
        objects,
        sizes,
        style: f.url_style.unwrap_or(UrlStyle::Path),
        region: f
            .region
            .clone()
            .or_else(|| std::env::var("AWS_REGION").ok().filter(|r| !r.is_empty()))
            .unwrap_or_else(|| "us-east-1".into()),
        multipart_threshold: threshold,
        part_size: part,
        put_parts: f.put_parts.unwrap_or(1),
        get_parts: f.get_parts.unwrap_or(1),
        keep: f.keep,
        signed: a.target.is_none() || s3_credentials(f).is_some(),
        prefix: format!(
            "wirebench/{:x}-{}/",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
            std::process::id()
        ),
    }))
}

/// The shm transport's checks; its settings (None for msgr, which must not
/// get shm flags).
fn validate_shm(a: &RunArgs, mode: Mode) -> anyhow::Result<Option<ShmSpec>> {
    let shm_flags = [
        ("--wait", a.wait.is_some()),
        ("--clients-as", a.clients_as.is_some()),
        ("--channel", a.channel.is_some()),
        ("--ring-size", a.ring_size.is_some()),
    ];
    if a.transport != Some(TransportKind::Shm) {
        if let Some((flag, _)) = shm_flags.iter().find(|(_, set)| *set) {
            usage!("{flag} applies to --transport shm only");
        }
        return Ok(None);
    }
    let msgr_flags = [
        ("--arch", a.arch.is_some()),
        ("--poll", a.poll),
        ("--max-frame", a.max_frame.is_some()),
        ("--response-size", a.response_size.is_some()),
    ];
    if let Some((flag, _)) = msgr_flags.iter().find(|(_, set)| *set) {
        usage!(
            "{flag} applies to --transport msgr only (shm echoes the request's size; --wait spin is its poll mode)"
        );
    }
    let size = match &a.size {
        None => 64,
        Some(SizeSpec::Fixed(n)) => *n,
        Some(s) => usage!("--size {s}: a list or a range of sizes applies to --transport s3 only"),
    };
    if let Some(Endpoint::Tcp(_) | Endpoint::S3 { .. }) = &a.target {
        usage!("--target: a shm server listens on a Unix socket: --target unix:PATH");
    }
    if let Some(Endpoint::Tcp(_)) = &a.listen {
        usage!("--listen: a shm server listens on a Unix socket: --listen unix:PATH");
    }
    if mode == Mode::Sync && a.depth.is_some_and(|d| d != 1) {
        usage!("--mode sync has one request outstanding: use --mode async for --depth above 1");
    }
    if mode == Mode::Sync && a.rate.is_some() {
        usage!(
            "--rate: --mode sync sends when the response is back; use --mode async (or nores) for an open loop"
        );
    }
    let channel = a.channel.unwrap_or(Channel::Shm);
    let ring = match a.ring_size {
        Some(r) => r,
        None => match wirebench_transports::shm::default_ring(size) {
            Ok(r) => r,
            Err(e) => usage!("--size {size}: {e}"),
        },
    };
    if channel == Channel::Shm {
        if let Err(e) = wirebench_transports::shm::check_ring(ring, size) {
            usage!("--ring-size / --size: {e}");
        }
    } else if a.ring_size.is_some() {
        usage!("--ring-size applies to --channel shm only");
    } else if size > wirebench_transports::shm::server::MAX_FD_MESSAGE {
        usage!(
            "--size {size}: above {} bytes, the largest message over --channel {channel}",
            wirebench_transports::shm::server::MAX_FD_MESSAGE
        );
    }
    let wait = a.wait.unwrap_or(Wait::Adaptive);
    if channel != Channel::Shm && a.wait.is_some() {
        usage!("--wait applies to --channel shm only: the kernel does the waiting on {channel}");
    }
    Ok(Some(ShmSpec {
        wait,
        channel,
        clients_as: a.clients_as.unwrap_or(ClientsAs::Threads),
        ring_bytes: ring,
    }))
}

/// The reference server as a child process of this run.
struct EmbeddedServer {
    child: Child,
    pid: u32,
    endpoint: Endpoint,
    lines: mpsc::Receiver<String>,
    /// Where it writes its trace when it stops (--trace).
    trace_file: Option<PathBuf>,
}

impl EmbeddedServer {
    fn start(spec: &RunSpec, env: &[(&str, String)]) -> anyhow::Result<EmbeddedServer> {
        let TargetSpec::Embedded {
            arch,
            cpus,
            poll,
            listen,
        } = &spec.target
        else {
            unreachable!("embedded only")
        };
        let exe = std::env::current_exe()
            .context("cannot find the wirebench executable to start the embedded server")?;
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .args(["--cpus", &cpus.to_string()])
            .args(["--exit-with-parent", &std::process::id().to_string()]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        match arch {
            Some(arch) => {
                cmd.args(["--arch", &arch.to_string(), "--listen", &listen.to_string()]);
            }
            None if spec.transport == TransportKind::S3 => {
                cmd.args(["--transport", "s3", "--listen", &listen.to_string()]);
                cmd.args(["--bucket", DEFAULT_BUCKET]);
            }
            None => {
                cmd.args(["--transport", "shm"]);
                // The default socket carries the server's PID.
                if !listen.to_string().contains("<server-pid>") {
                    cmd.args(["--listen", &listen.to_string()]);
                }
            }
        }
        let trace_file = spec.trace_sample.map(|n| {
            let f = std::env::temp_dir()
                .join(format!("wirebench-trace-server-{}.txt", std::process::id()));
            cmd.args(["--trace", &f.display().to_string()])
                .args(["--trace-sample", &n.to_string()]);
            f
        });
        if matches!(spec.transport, TransportKind::Shm | TransportKind::S3) {
            // Sessions state their mode and sizes when they open; S3 has no sizes.
        } else if spec.mode == Mode::Rr {
            cmd.args(["--mode", "rr", "--size", &spec.size_bytes.to_string()]);
            cmd.args(["--response-size", &spec.response_size_bytes.to_string()]);
        } else {
            cmd.args(["--max-frame", &spec.max_frame_bytes.to_string()]);
        }
        if *poll {
            cmd.arg("--poll");
        }
        // Its own process group: a Ctrl-C in the terminal reaches only this
        // process, which then stops the server itself, after the load.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        let mut child = cmd.spawn().context("cannot start the embedded server")?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("wb-server-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })?;
        let mut srv = EmbeddedServer {
            child,
            pid,
            endpoint: listen.clone(),
            lines,
            trace_file,
        };
        let first = srv.lines.recv_timeout(Duration::from_secs(15));
        let endpoint = first.ok().and_then(|l| {
            let v: serde_json::Value = serde_json::from_str(&l).ok()?;
            (v["event"] == "listening").then(|| v["endpoint"].as_str()?.parse::<Endpoint>().ok())?
        });
        match endpoint {
            Some(ep) => {
                srv.endpoint = ep;
                Ok(srv)
            }
            None => {
                let why = srv.stop_now();
                anyhow::bail!("the embedded server did not start ({why}); its messages are above")
            }
        }
    }

    /// Why the server is gone, if it is.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(describe(status)),
            _ => None,
        }
    }

    /// Why the server is gone, waiting up to `limit` for it to finish
    /// exiting (a killed server resets its connections before it is reaped).
    fn exited_within(&mut self, limit: Duration) -> Option<String> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(why) = self.exited() {
                return Some(why);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop_now(&mut self) -> String {
        let _ = sys::signal_process(self.pid, true);
        self.child
            .wait()
            .map(describe)
            .unwrap_or_else(|e| e.to_string())
    }

    /// Stops the server (SIGTERM, then SIGKILL if it does not stop within
    /// 5 s) and returns its report and peak RSS.
    fn stop(mut self) -> (ServerReport, Option<u64>) {
        let rss = os::process_peak_rss_bytes(self.pid);
        let mut stats: Option<ServerStats> = None;
        let exit = match self.exited() {
            Some(why) => Some(format!("exited during the run: {why}")),
            None => {
                let _ = sys::signal_process(self.pid, false);
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    match self.lines.recv_timeout(left) {
                        Ok(l) => {
                            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&l)
                                && v["event"] == "stopped"
                            {
                                stats = serde_json::from_value(v["stats"].clone()).ok();
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                }
                if stats.is_none() {
                    Some(format!("did not stop on SIGTERM: {}", self.stop_now()))
                } else {
                    self.child
                        .wait()
                        .ok()
                        .map(describe)
                        .filter(|d| d != "exit status 0")
                }
            }
        };
        (
            ServerReport {
                pid: self.pid,
                endpoint: self.endpoint.to_string(),
                stats,
                exit,
            },
            rss,
        )
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(9)) => "killed by signal 9 (SIGKILL)".into(),
        (None, Some(15)) => "killed by signal 15 (SIGTERM)".into(),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// Prints progress and tells the engine when to stop.
struct RunObserver<'a> {
    progress: ui::progress::Progress,
    signal: Arc<OnceLock<&'static str>>,
    server: Option<&'a mut EmbeddedServer>,
}

impl Observer for RunObserver<'_> {
    fn connected(&mut self, connect_time_ns: u64) {
        self.progress.connected(connect_time_ns);
    }
    fn interval(&mut self, iv: &IntervalReport) {
        self.progress.interval(iv);
    }
    fn poll_abort(&mut self) -> Option<Abort> {
        if let Some(sig) = self.signal.get() {
            return Some(Abort::Interrupted(format!("{sig} received")));
        }
        let srv = self.server.as_mut()?;
        let why = srv.exited()?;
        Some(Abort::Failed(format!(
            "the embedded server (pid {}) {why}",
            srv.pid
        )))
    }
}

/// Takes over SIGINT and SIGTERM: they are blocked in every thread and
/// taken by one waiting thread, which records the first one's name.
pub(super) fn watch_signals() -> anyhow::Result<Arc<OnceLock<&'static str>>> {
    sys::block_termination_signals()?;
    let signal: Arc<OnceLock<&'static str>> = Arc::new(OnceLock::new());
    let s2 = signal.clone();
    std::thread::Builder::new()
        .name("wb-signals".into())
        .spawn(move || {
            if let Ok(s) = sys::wait_for_termination() {
                let _ = s2.set(s);
            }
        })?;
    Ok(signal)
}

/// The bucket of the embedded fake S3 server.
const DEFAULT_BUCKET: &str = "wirebench";
/// Concurrent requests of the S3 prepare and cleanup phases (at most).
const S3_PHASE_CONCURRENCY: usize = 32;

/// An S3 run's workload, and what its prepare phase did.
struct S3Session {
    workload: Arc<wirebench_transports::s3::Workload>,
    prepare: Option<result::PhaseReport>,
    concurrency: usize,
}

/// The S3 credentials of the flags, else of the AWS_* variables.
fn s3_credentials(f: &S3Args) -> Option<(String, String)> {
    match (&f.access_key, &f.secret_key) {
        (Some(k), Some(s)) => Some((k.clone(), s.clone())),
        _ => {
            let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
            Some((var("AWS_ACCESS_KEY_ID")?, var("AWS_SECRET_ACCESS_KEY")?))
        }
    }
}

/// A random credential pair for the embedded fake server.
fn random_credentials() -> (String, String) {
    let mut b = [0u8; 24];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_ok();
    if !ok {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        for (i, x) in b.iter_mut().enumerate() {
            *x = wirebench_core::spec::mix64(t ^ i as u64) as u8;
        }
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    (
        format!("WB{}", &hex[..16].to_uppercase()),
        hex[16..].to_string(),
    )
}

/// What runs share once started: the signal watcher and the embedded server.
pub(super) struct Session {
    signal: Arc<OnceLock<&'static str>>,
    s3: Option<S3Session>,
    server: Option<EmbeddedServer>,
    pub endpoint: Endpoint,
    /// The stopped server's trace file (--trace).
    pub server_trace: Option<PathBuf>,
}

impl Session {
    /// Warns about a debug build, takes over SIGINT/SIGTERM, and starts the
    /// embedded server if the spec wants one.
    pub(super) fn open(spec: &RunSpec) -> anyhow::Result<Session> {
        Self::open_with(spec, &S3Args::default())
    }

    /// As `open`, with the S3 flags (credentials, --create-bucket): an S3
    /// session also checks the endpoint and prepares the objects.
    pub(super) fn open_with(spec: &RunSpec, s3: &S3Args) -> anyhow::Result<Session> {
        if cfg!(debug_assertions) {
            eprintln!(
                "warning: this is a debug build: its figures are not representative; build with `cargo build --release`"
            );
        }
        // The engine is asked to stop on a signal; the partial result is then saved.
        let signal = watch_signals()?;
        let creds = match (&spec.target, spec.transport) {
            (_, t) if t != TransportKind::S3 => None,
            (TargetSpec::Embedded { .. }, _) => {
                s3_credentials(s3).or_else(|| Some(random_credentials()))
            }
            (TargetSpec::External { .. }, _) => s3_credentials(s3),
        };
        let env: Vec<(&str, String)> = match (&spec.target, &creds) {
            (TargetSpec::Embedded { .. }, Some((k, sk))) => vec![
                ("WIREBENCH_FAKE_ACCESS_KEY", k.clone()),
                ("WIREBENCH_FAKE_SECRET_KEY", sk.clone()),
            ],
            _ => Vec::new(),
        };
        let server = match &spec.target {
            TargetSpec::Embedded { .. } => Some(EmbeddedServer::start(spec, &env)?),
            TargetSpec::External { .. } => None,
        };
        let endpoint = match (&server, &spec.target) {
            (Some(s), _) => s.endpoint.clone(),
            (None, TargetSpec::External { endpoint }) => endpoint.clone(),
            (None, TargetSpec::Embedded { .. }) => unreachable!("embedded targets have a server"),
        };
        let mut session = Session {
            signal,
            s3: None,
            server,
            endpoint,
            server_trace: None,
        };
        if let Some(s3spec) = &spec.s3 {
            // On an error, the embedded server is stopped and any objects
            // created are deleted before the error is reported.
            match session.prepare_s3(spec, s3spec, creds, s3.create_bucket, s3.ca_file.as_deref()) {
                Ok(s) => session.s3 = Some(s),
                Err(e) => {
                    session.close(None);
                    return Err(e);
                }
            }
        }
        Ok(session)
    }

    /// Checks the S3 endpoint, credentials and bucket, then creates the
    /// objects the workload reads.
    fn prepare_s3(
        &mut self,
        spec: &RunSpec,
        s3spec: &S3Spec,
        creds: Option<(String, String)>,
        create_bucket: bool,
        ca_file: Option<&std::path::Path>,
    ) -> anyhow::Result<S3Session> {
        use wirebench_transports::s3;
        let Endpoint::S3 { addr, bucket, tls } = &self.endpoint else {
            anyhow::bail!("{}: not an S3 endpoint", self.endpoint);
        };
        let creds = creds.map(|(k, s)| rusty_s3::Credentials::new(k, s));
        let tls = tls.then_some(ca_file);
        let client =
            s3::client::S3Client::new(addr, bucket, s3spec.style, &s3spec.region, creds, tls)
                .map_err(|e| anyhow::anyhow!(e))?;
        let workload = Arc::new(s3::Workload::new(
            client,
            s3spec.clone(),
            spec.mode,
            spec.verify,
        ));
        let concurrency = spec.connections().clamp(1, S3_PHASE_CONCURRENCY);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let target = self.endpoint.clone();
        rt.block_on(s3::preflight(&workload.client, create_bucket))
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("checking {target}"))?;
        let mut prepare = None;
        if workload.needs_prepare() {
            eprintln!(
                "prepare: creating {} objects of {} in {target}, keys {}* ...",
                s3spec.objects, s3spec.sizes, s3spec.prefix
            );
            match rt.block_on(s3::prepare(&workload, concurrency)) {
                Ok(p) => {
                    eprintln!(
                        "prepare: {} objects, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    );
                    prepare = Some(p);
                }
                Err(e) => {
                    // The caller's close deletes what was created.
                    self.s3 = Some(S3Session {
                        workload,
                        prepare: None,
                        concurrency,
                    });
                    anyhow::bail!("{e}");
                }
            }
        }
        Ok(S3Session {
            workload,
            prepare,
            concurrency,
        })
    }

    pub(super) fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.pid)
    }

    /// Whether Ctrl-C or SIGTERM arrived.
    pub(super) fn interrupted(&self) -> bool {
        self.signal.get().is_some()
    }

    /// One measured load against the session's target. The result has no
    /// identity (run id, command line, start time) and no server report yet.
    pub(super) fn measure(
        &mut self,
        spec: &RunSpec,
        placement: &Placement,
        text: bool,
    ) -> RunResult {
        let client = MsgrClient::new(
            self.endpoint.clone(),
            spec.mode,
            spec.size_bytes as usize,
            spec.response_size_bytes as usize,
        )
        .verify(spec.verify);
        let cfg = LoadConfig {
            clients: spec.clients,
            conns_per_client: spec.conns_per_client,
            depth: spec.depth,
            warmup: Duration::from_nanos(spec.warmup_ns),
            duration: match spec.stop {
                StopSpec::DurationNs(ns) => Duration::from_nanos(ns),
                StopSpec::Count(_) => Duration::ZERO,
            },
            count: match spec.stop {
                StopSpec::Count(c) => Some(c),
                StopSpec::DurationNs(_) => None,
            },
            rate: spec.rate_per_s,
            arrival: spec.arrival,
            seed: 1,
            finite_work: spec.s3.is_some() && spec.mode == Mode::Delete,
            poll: spec.poll,
            client_cpus: placement.client_cpus.cpus().to_vec(),
            sampler: Sampler {
                client_cpus: placement.client_cpus.cpus().to_vec(),
                server_cpus: placement
                    .server_cpus
                    .as_ref()
                    .map(|c| c.cpus().to_vec())
                    .unwrap_or_default(),
                server_pid: self.server_pid(),
                client_children: Default::default(),
            },
            interval: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(10),
        };
        let outcome = {
            let mut obs = RunObserver {
                progress: ui::progress::Progress::new(text),
                signal: self.signal.clone(),
                server: self.server.as_mut(),
            };
            match (&spec.shm, &self.endpoint) {
                (None, Endpoint::S3 { .. }) => {
                    let w = self
                        .s3
                        .as_ref()
                        .expect("an S3 session has a workload")
                        .workload
                        .clone();
                    wirebench_load::calls::run_load_calls(
                        Arc::new(wirebench_transports::s3::S3Transport(w)),
                        &cfg,
                        &mut obs,
                    )
                }
                (None, _) => engine::run_load(Arc::new(client), &cfg, &mut obs),
                (Some(shm), Endpoint::Unix(path)) => {
                    let client = ShmClient::new(
                        path.clone(),
                        shm.channel,
                        spec.mode,
                        spec.size_bytes,
                        shm.ring_bytes,
                        shm.wait,
                        spec.verify,
                    );
                    match shm.clients_as {
                        ClientsAs::Threads => {
                            engine::run_load_blocking(Arc::new(client), &cfg, &mut obs)
                        }
                        ClientsAs::Processes => {
                            remote::run_load_processes(&cfg, &mut obs, &mut |worker| {
                                start_client_process(worker, &cfg, &client)
                            })
                        }
                    }
                }
                (Some(_), _) => unreachable!("validated: shm endpoints are Unix"),
            }
        };
        let mut end = outcome.end.clone();
        if let (EndState::Failed(r), Some(s)) = (&end, self.server.as_mut())
            && !r.contains("embedded server")
            && let Some(why) = s.exited_within(Duration::from_secs(1))
        {
            end = EndState::Failed(format!("{r}; the embedded server (pid {}) {why}", s.pid));
        }
        let mut r = build_result(spec, placement.clone(), &outcome, end);
        if let Some(s3) = self.s3.as_mut() {
            r.prepare = s3.prepare.take();
        }
        r
    }

    /// Stops the embedded server (if not yet stopped); its report and peak
    /// RSS go into `result`.
    pub(super) fn close(&mut self, mut result: Option<&mut RunResult>) {
        if let Some(s3) = self.s3.take()
            && !s3.workload.spec.keep
        {
            let n = s3.workload.existing();
            if n > 0 {
                eprintln!("cleanup: deleting the {n} objects this run created ...");
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                let c = rt.block_on(wirebench_transports::s3::cleanup(
                    &s3.workload,
                    s3.concurrency,
                ));
                if c.errors > 0 {
                    eprintln!(
                        "cleanup: {} objects could not be deleted (prefix {})",
                        c.errors, s3.workload.spec.prefix
                    );
                }
                if let Some(r) = result.as_deref_mut() {
                    r.cleanup = Some(c);
                }
            }
        }
        if let Some(s) = self.server.take() {
            self.server_trace = s.trace_file.clone();
            let (report, rss) = s.stop();
            if let Some(r) = result {
                r.summary.server_peak_rss_bytes = rss;
                r.server = Some(report);
            }
        }
        // A shm server that died without removing its control socket (SIGKILL):
        // the survivor removes it.
        if let Endpoint::Unix(path) = &self.endpoint
            && let Some(pid) = wirebench_transports::shm::cleanup::remove_if_owner_gone(path)
        {
            eprintln!(
                "removed {}, left by the server (pid {pid}) that died",
                path.display()
            );
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

/// Writes the client's trace into the run's directory, and moves the
/// server's there.
fn save_traces(dir: &std::path::Path, server: Option<PathBuf>) -> anyhow::Result<()> {
    let client = dir.join("trace-client.txt");
    let n =
        wirebench_trace::dump(&client).with_context(|| format!("writing {}", client.display()))?;
    eprintln!("trace: {n} client events in {}", client.display());
    if let Some(f) = server {
        if f.exists() {
            let to = dir.join("trace-server.txt");
            std::fs::copy(&f, &to).with_context(|| format!("writing {}", to.display()))?;
            let _ = std::fs::remove_file(&f);
            eprintln!("trace: server events in {}", to.display());
        } else {
            eprintln!("trace: the server wrote no trace (it did not stop cleanly)");
        }
    }
    Ok(())
}

/// Exit status of a complete run whose objectives were not all met.
pub(super) const EXIT_SLO_MISSED: u8 = 3;

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let topo = Topology::read();
    let (spec, placement) = validate(&a, &topo)?;
    let slos = a.slos()?;
    if !(1..=1000).contains(&a.repeat) {
        usage!("--repeat {}: must be between 1 and 1000", a.repeat);
    }
    if let Some(Some(f)) = &a.trace {
        let parent = f
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            usage!(
                "--trace {}: the directory {} does not exist",
                f.display(),
                parent.display()
            );
        }
    }
    if a.repeat > 1 && a.trace.is_some() {
        usage!("--trace records one run's timeline: drop it, or --repeat");
    }
    if let Some(n) = spec.trace_sample {
        wirebench_trace::set_sample(n);
        wirebench_trace::enable();
    }
    if a.repeat > 1 && a.hlog.is_some() {
        usage!("--hlog writes one run's log: drop it, or --repeat");
    }
    let command_line: Vec<String> = super::args::command_line();
    let label = match &spec.target {
        _ if spec.s3.is_some() => format!(
            "s3-{}{}",
            spec.mode,
            if matches!(spec.target, TargetSpec::External { .. }) {
                "-external"
            } else {
                ""
            }
        ),
        TargetSpec::Embedded { .. } if spec.shm.is_some() => {
            let shm = spec.shm.as_ref().expect("checked");
            match shm.channel {
                Channel::Shm => format!("shm-{}-{}", spec.mode, shm.wait),
                c => format!("shm-{}-{c}", spec.mode),
            }
        }
        TargetSpec::Embedded { arch, .. } => format!(
            "{}-{}",
            spec.mode,
            arch.map_or(String::new(), |a| a.to_string())
        ),
        TargetSpec::External { .. } => format!("{}-external", spec.mode),
    };
    if let Some(parent) = a.exit_with_parent {
        // SIGTERM when the parent dies: taken like a Ctrl-C, the partial
        // result saved (the signal thread is set up by Session::open).
        sys::terminate_with_parent(parent)?;
    }
    let mut session = Session::open_with(&spec, &a.s3)?;
    let text = a.format == "text";
    if text {
        eprintln!(
            "{}",
            ui::summary::headline(&spec, &placement, &session.endpoint, session.server_pid())
        );
    }
    let mut out = std::io::stdout().lock();
    let mut results: Vec<RunResult> = Vec::new();
    let mut last_dir = a.results.clone();
    for k in 0..a.repeat {
        if a.repeat > 1 && text {
            eprintln!("repetition {} of {}", k + 1, a.repeat);
        }
        let started_at = store::now_rfc3339();
        let mut result = session.measure(&spec, &placement, text);
        let last = k + 1 == a.repeat || result.status.state != RunState::Complete;
        if last {
            // The server's counters and peak RSS go into the last run.
            session.close(Some(&mut result));
        }
        result.run_id = store::new_run_id(&if a.repeat > 1 {
            format!("{label}-r{}", k + 1)
        } else {
            label.clone()
        });
        result.command_line = command_line.clone();
        result.started_at = started_at;
        let hist = hist::decode(&result.latency_hist)?;
        result.slos = slos
            .iter()
            .map(|s| s.check(&result.summary, &hist))
            .collect();
        let dir = store::save(&a.results, &result)
            .with_context(|| format!("saving the result under {}", a.results.display()))?;
        store::append_summary_csv(&a.results, &result)?;
        if spec.trace_sample.is_some() {
            save_traces(&dir, session.server_trace.take())?;
            if let Some(Some(f)) = &a.trace {
                std::fs::copy(dir.join("trace-client.txt"), f)
                    .with_context(|| format!("writing --trace {}", f.display()))?;
            }
        }
        if let Some(path) = &a.hlog {
            let mut buf = Vec::new();
            wirebench_core::hlog::write(&mut buf, &result)?;
            store::write_atomic(path, &buf)
                .with_context(|| format!("writing --hlog {}", path.display()))?;
        }
        if text {
            ui::summary::print(&mut out, &result, &dir.join("run.json"))?;
            ui::summary::print_slos(&mut out, &slos, &result.slos)?;
        } else if a.format == "csv" {
            writeln!(out, "{}", csv_line(&result))?;
        } else if a.repeat == 1 {
            serde_json::to_writer_pretty(&mut out, &result)?;
            writeln!(out)?;
        }
        out.flush()?;
        last_dir = dir;
        results.push(result);
        if last {
            break;
        }
    }
    if a.repeat > 1 && a.format != "csv" {
        let agg = Repetitions::of(&results);
        if text {
            ui::summary::print_repetitions(&mut out, &agg)?;
        } else {
            serde_json::to_writer_pretty(&mut out, &agg)?;
            writeln!(out)?;
        }
        out.flush()?;
    }
    let worst = results.last().expect("at least one run");
    Ok(match worst.status.state {
        RunState::Complete if results.iter().any(|r| r.slos.iter().any(|s| !s.pass)) => {
            ExitCode::from(EXIT_SLO_MISSED)
        }
        RunState::Complete => ExitCode::SUCCESS,
        RunState::Interrupted => {
            eprintln!(
                "interrupted: the partial result is saved in {}",
                last_dir.display()
            );
            ExitCode::from(130)
        }
        RunState::Failed => {
            eprintln!(
                "error: the run failed: {}",
                worst.status.reason.as_deref().unwrap_or("unknown")
            );
            eprintln!("the partial result is saved in {}", last_dir.display());
            ExitCode::from(1)
        }
    })
}

/// One line in the IPC report's CSV shape: sessions, mt|mp, mode, size,
/// operations, elapsed s, messages/s (a round trip is two), GB/s (GiB of
/// messages/s x size, as the report computes it), then p50 and p99 in us
/// (empty when the mode has no latency).
pub(super) fn csv_line(r: &RunResult) -> String {
    let s = &r.summary;
    let spec = &r.spec;
    let clients = match spec.shm.as_ref().map(|x| x.clients_as) {
        Some(ClientsAs::Processes) => "mp",
        _ => "mt",
    };
    let per_op = if spec.mode.has_response() { 2.0 } else { 1.0 };
    let msgs_per_s = s.ops_per_s * per_op;
    let gib_per_s = msgs_per_s * spec.size_bytes as f64 / (1u64 << 30) as f64;
    let (p50, p99) = if s.latency.count > 0 {
        (
            format!("{:.3}", s.latency.p50_ns as f64 / 1e3),
            format!("{:.3}", s.latency.p99_ns as f64 / 1e3),
        )
    } else {
        (String::new(), String::new())
    };
    format!(
        "{},{clients},{},{},{},{:.6},{:.1},{:.3},{p50},{p99}",
        spec.connections(),
        spec.mode,
        spec.size_bytes,
        s.ops,
        s.measured_ns as f64 / 1e9,
        msgs_per_s,
        gib_per_s,
    )
}

/// The spread of each headline metric over repeated runs.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Repetitions {
    pub runs: Vec<String>,
    /// (metric name with unit, spread over the runs).
    pub metrics: Vec<(String, Spread)>,
    /// Runs whose per-second throughput drifts.
    pub drifting: Vec<String>,
}

impl Repetitions {
    fn of(results: &[RunResult]) -> Repetitions {
        let metric = |name: &str, f: &dyn Fn(&Summary) -> f64| {
            let xs: Vec<f64> = results.iter().map(|r| f(&r.summary)).collect();
            Spread::of(&xs).map(|s| (name.to_string(), s))
        };
        let metrics = [
            metric("ops_per_s", &|s| s.ops_per_s),
            metric("mb_per_s_in", &|s| s.mb_per_s_in),
            metric("latency_mean_ns", &|s| s.latency.mean_ns),
            metric("latency_p50_ns", &|s| s.latency.p50_ns as f64),
            metric("latency_p99_ns", &|s| s.latency.p99_ns as f64),
            metric("latency_p999_ns", &|s| s.latency.p999_ns as f64),
            metric("latency_max_ns", &|s| s.latency.max_ns as f64),
            metric("client_cpu_us_per_op", &|s| s.client_cpu_us_per_op),
        ]
        .into_iter()
        .flatten()
        .collect();
        Repetitions {
            runs: results.iter().map(|r| r.run_id.clone()).collect(),
            metrics,
            drifting: results
                .iter()
                .filter(|r| r.summary.throughput_trend.is_some_and(|t| t.drifting))
                .map(|r| r.run_id.clone())
                .collect(),
        }
    }
}

fn build_result(
    spec: &RunSpec,
    placement: Placement,
    out: &engine::LoadOutcome,
    end: EndState,
) -> RunResult {
    let m = &out.measured;
    let secs = out.measured_ns as f64 / 1e9;
    let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
    let per_op = |cpu: f64| {
        if m.ops > 0 {
            cpu * 1e6 / m.ops as f64
        } else {
            0.0
        }
    };
    let max_busy = out
        .client_cores
        .iter()
        .map(|c| c.busy_pct)
        .fold(0.0, f64::max);
    let summary = Summary {
        connect_time_ns: out.connect_time_ns,
        messages_sent: m.sent,
        messages_received: m.received,
        ops: m.ops,
        errors: m.errors,
        measured_ns: out.measured_ns,
        ops_per_s: per_s(m.ops),
        bytes_out: m.bytes_out,
        bytes_in: m.bytes_in,
        mb_per_s_out: per_s(m.bytes_out) / 1e6,
        mb_per_s_in: per_s(m.bytes_in) / 1e6,
        requested_rate_per_s: spec.rate_per_s,
        sent_per_s: per_s(m.sent),
        latency: LatencySummary::of(&m.hist),
        service_latency: LatencySummary::of(&m.service),
        client_cpu_s: out.client_cpu_s,
        server_cpu_s: out.server_cpu_s,
        client_cpu_us_per_op: per_op(out.client_cpu_s),
        server_cpu_us_per_op: out.server_cpu_s.map(per_op),
        client_runq_wait_s: out.client_runq_wait_s,
        server_runq_wait_s: out.server_runq_wait_s,
        client_peak_rss_bytes: os::process_peak_rss_bytes(std::process::id()).unwrap_or(0),
        server_peak_rss_bytes: None,
        client_core_max_busy_pct: max_busy,
        // Polling cores are always 100% busy: that says nothing of saturation.
        client_bound: max_busy > 90.0
            && !spec.poll
            && spec
                .shm
                .as_ref()
                .is_none_or(|x| x.wait == Wait::Futex || x.channel != Channel::Shm),
        max_steal_pct: out
            .intervals
            .iter()
            .filter(|iv| iv.phase == Phase::Measure)
            .flat_map(|iv| iv.client_cores.iter().chain(&iv.server_cores))
            .map(|c| c.steal_pct)
            .fold(0.0, f64::max),
        by_op: m
            .by_op
            .iter()
            .map(|(k, d)| {
                let bytes = d.bytes_in + d.bytes_out;
                let op = result::OpSummary {
                    ops: d.ops,
                    errors: d.errors,
                    ops_per_s: per_s(d.ops),
                    bytes_out: d.bytes_out,
                    bytes_in: d.bytes_in,
                    mb_per_s: per_s(bytes) / 1e6,
                    latency: LatencySummary::of(&d.hist),
                    ttfb: (d.ttfb_count > 0).then(|| LatencySummary::of(&d.ttfb)),
                    latency_hist: hist::encode(&d.hist),
                    ttfb_hist: hist::encode(&d.ttfb),
                };
                (k.to_string(), op)
            })
            .collect(),
        failures: m.failures.clone(),
        throughput_trend: Trend::of(
            &out.intervals
                .iter()
                .filter(|iv| iv.phase == Phase::Measure && iv.seconds() >= 0.9)
                .map(|iv| iv.data.ops as f64 / iv.seconds())
                .collect::<Vec<_>>(),
        ),
    };
    let mut warnings = Vec::new();
    if let Some(t) = summary.throughput_trend
        && t.drifting
    {
        warnings.push(format!(
            "throughput drifts by {:+.0}% over the measured phase: the run is not stationary (warm-up too short, or the server's state changed)",
            t.drift_pct
        ));
    }
    if summary.max_steal_pct > 5.0 {
        warnings.push(format!(
            "the hypervisor took up to {:.0}% of a CPU (steal) in a measured second: this run is noisy; repeat it",
            summary.max_steal_pct
        ));
    }
    if cfg!(debug_assertions) {
        warnings.push("debug build: figures are not representative".to_string());
    }
    if summary.client_bound {
        let hot: Vec<String> = out
            .client_cores
            .iter()
            .filter(|c| c.busy_pct > 90.0)
            .map(|c| format!("CPU {} {:.1}%", c.cpu, c.busy_pct))
            .collect();
        warnings.push(format!(
            "client cores over 90% busy ({}): the result may be client-bound",
            hot.join(", ")
        ));
    }
    if spec.poll {
        warnings.push("busy-polling: polling cores show 100% busy whatever the load".into());
    }
    if let Some(rate) = spec.rate_per_s
        && summary.measured_ns > 0
    {
        if summary.sent_per_s < 0.95 * rate {
            warnings.push(format!(
                "target rate not reached: requests were sent at {:.0}/s of the {rate:.0}/s asked ({:.0}%): the client could not keep up, or --depth {} capped the requests outstanding",
                summary.sent_per_s,
                100.0 * summary.sent_per_s / rate,
                spec.depth
            ));
        }
        if summary.ops_per_s < 0.95 * rate && spec.mode.has_response() {
            warnings.push(format!(
                "target rate not reached: the server answered {:.0}/s of the {rate:.0}/s asked ({:.0}%)",
                summary.ops_per_s,
                100.0 * summary.ops_per_s / rate
            ));
        }
    }
    let intervals = out
        .intervals
        .iter()
        .map(|iv| Interval {
            start_ns: iv.start_ns,
            end_ns: iv.end_ns,
            phase: iv.phase,
            ops: iv.data.ops,
            bytes_out: iv.data.bytes_out,
            bytes_in: iv.data.bytes_in,
            errors: iv.data.errors,
            ops_per_s: if iv.seconds() > 0.0 {
                iv.data.ops as f64 / iv.seconds()
            } else {
                0.0
            },
            sent: iv.data.sent,
            latency: LatencySummary::of(&iv.data.hist),
            service_latency: LatencySummary::of(&iv.data.service),
            latency_hist: hist::encode(&iv.data.hist),
            client_cores: iv.client_cores.clone(),
            server_cores: iv.server_cores.clone(),
        })
        .collect();
    let (state, reason) = match end {
        EndState::Complete => (RunState::Complete, None),
        EndState::Interrupted(r) => (RunState::Interrupted, Some(r)),
        EndState::Failed(r) => (RunState::Failed, Some(r)),
    };
    RunResult {
        schema_version: result::SCHEMA_VERSION,
        run_id: String::new(),
        command_line: Vec::new(),
        started_at: String::new(),
        spec: spec.clone(),
        env: Environment::capture(env!("CARGO_PKG_VERSION"), env!("WIREBENCH_GIT_REVISION")),
        placement,
        status: RunStatus { state, reason },
        summary,
        intervals,
        latency_hist: hist::encode(&m.hist),
        service_hist: hist::encode(&m.service),
        server: None,
        prepare: None,
        cleanup: None,
        slos: Vec::new(),
        warnings,
    }
}
