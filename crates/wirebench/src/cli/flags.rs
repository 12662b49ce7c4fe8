//! The flags of a run, shared by `run`, `search`, `flame` and
//! `ipc-compare`: each is a key of `RunRequest` (the spec file writes the
//! same name with underscores), so the conversion is a copy.

use clap::Args;
use std::path::PathBuf;
use wirebench_core::request::{EnvVars, Format, RunRequest, Trace};
use wirebench_core::spec::{
    Arch, Arrival, Channel, ClientsAs, Endpoint, HttpVersion, KeyDist, KvProtocol, Mix, Ratio,
    Ready, S3Sign, S3Workload, SizeSpec, TransportKind, UrlStyle, Wait,
};
use wirebench_core::topo::CpuList;
use wirebench_core::units::{Bytes, Dur, Rate};
use wirebench_runner::agent::auth::Token;
use wirebench_runner::{Credentials, SpecError};

#[derive(Args, Debug, Default)]
pub struct RunFlags {
    /// Transport: msgr (framed messenger over TCP or Unix sockets), shm (shared-memory rings;
    /// see --wait, --clients-as, --channel), s3 (S3 over HTTP/1.1; see --workload; the
    /// embedded fake S3 server unless --target s3://HOST:PORT/BUCKET), redis, memcached,
    /// http, grpc, exec (your own program: see --client-cmd) or tcp-echo (any TCP echo server,
    /// raw bytes). Default: the --target's scheme (s3://, redis://, memcached://, http(s)://,
    /// grpc(s)://), else msgr.
    #[arg(long)]
    pub transport: Option<TransportKind>,
    /// Embedded server design: reactor (shared-nothing, a pinned event loop per CPU) or pool (shared work-stealing pool). Default: reactor.
    #[arg(long)]
    arch: Option<Arch>,
    /// Measure a server already listening at tcp://HOST:PORT, unix:PATH, s3://HOST:PORT/BUCKET,
    /// redis://HOST:PORT (USER@HOST and /DB optional; password: $REDISCLI_AUTH),
    /// memcached://HOST:PORT, http(s)://HOST:PORT/PATH or grpc(s)://HOST:PORT. Several of one
    /// kind, comma-separated: the connections are dealt to them in turn (with load agents, each
    /// agent's part goes to one of them in turn), and the result has each one's part.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["arch", "listen", "max_frame"])]
    target: Vec<Endpoint>,
    /// Where the embedded server listens: tcp://127.0.0.1:0 (a free port) unless told otherwise, or unix:PATH.
    #[arg(long)]
    listen: Option<Endpoint>,
    /// msgr: echo (request/response), oneway (requests only), stream (server sends, client
    /// drops), rr (raw fixed-size request/response, no framing); default echo. shm: sync (one
    /// request outstanding), async (a sender and a receiver thread, --depth outstanding,
    /// default 64), nores (requests only), stream (the data channel: the server writes, the
    /// client reads every byte); default sync. redis, memcached: get, set, incr, mixed (see
    /// --ratio); default get. http: get, post, put (a body of --size); default get.
    #[arg(long)]
    mode: Option<String>,
    /// shm: how a side waits for its peer: spin (fastest, a core busy), futex (sleep in the
    /// kernel), adaptive (spin ~50 us, then sleep). Default: adaptive.
    #[arg(long)]
    pub wait: Option<Wait>,
    /// shm: clients as threads of this process (the IPC report's mt) or one process per
    /// session (mp). Default: threads.
    #[arg(long)]
    clients_as: Option<ClientsAs>,
    /// shm: what carries the sessions: shm (shared memory), or for comparison pipe, unix
    /// (socket pair) or tcp (loopback), with the same records and server. Default: shm.
    #[arg(long)]
    pub channel: Option<Channel>,
    /// shm: bytes of each ring (requests, responses), a power of two. Default: 1MiB, or room
    /// for four messages.
    #[arg(long)]
    ring_size: Option<Bytes>,
    /// Request payload (echo, oneway, rr) or stream frame payload: 64, 4KiB, 1MiB... Default 64.
    /// s3: object size, fixed (4KiB), a list objects take in turn (4KiB,1MiB) or a log-uniform
    /// range (1KiB..1MiB); default 4KiB.
    #[arg(long)]
    size: Option<SizeSpec>,
    /// Response payload (echo, rr). Default: --size.
    #[arg(long)]
    response_size: Option<Bytes>,
    /// Client workers: one thread each, pinned round-robin to the client CPUs (shm: sessions,
    /// each with its own rings and server thread). Default: 1.
    #[arg(long, visible_alias = "sessions")]
    clients: Option<usize>,
    /// Connections per client. Default: 1.
    #[arg(long)]
    conns_per_client: Option<usize>,
    /// Requests outstanding per connection (echo, rr); frames per send call (oneway). Default: 1.
    #[arg(long)]
    pub depth: Option<usize>,
    /// Open loop: total requests per second (500, 50k/s), sent on a fixed timetable whatever the
    /// server does; latency then runs from each request's intended send time (no coordinated
    /// omission). Default: closed loop. --depth becomes the most requests outstanding per
    /// connection (default 1024).
    #[arg(long)]
    pub rate: Option<Rate>,
    /// Open loop: uniform (evenly spaced) or poisson (exponential gaps) arrivals.
    #[arg(long, requires = "rate")]
    arrival: Option<Arrival>,
    /// Length of the measured phase (after the warm-up): 500ms, 10s, 1m. Default: 5s.
    #[arg(long, conflicts_with = "count")]
    duration: Option<Dur>,
    /// Stop after this many operations in the measured phase, over all connections.
    #[arg(long)]
    count: Option<u64>,
    /// Warm-up: measured and shown, excluded from the summary. Default: 1s.
    #[arg(long)]
    warmup: Option<Dur>,
    /// A connection that waits this long for an operation (a response, a send the server does
    /// not take, a stream's next message; S3: any byte of a request) fails the run, which then
    /// says so. 0s: no limit. Default: 10s.
    #[arg(long)]
    op_timeout: Option<Dur>,
    /// Turn the hiccup meter off: a probe thread on a client CPU sleeps 10 ms in a loop and
    /// records how late it wakes, so that platform stalls (a throttled VM, a stopped process)
    /// are measured and flagged, never blamed on the server. It costs under 1% of a CPU.
    #[arg(long)]
    no_hiccup: bool,
    /// A measured second in which the hiccup meter woke later than this is flagged. Default: 10ms.
    #[arg(long, conflicts_with = "no_hiccup")]
    hiccup_threshold: Option<Dur>,
    /// Busy-poll on the client and on the embedded (reactor) server instead of sleeping in the kernel.
    #[arg(long)]
    poll: bool,
    /// Fill payloads with a per-message pattern and check every payload on both sides.
    #[arg(long)]
    verify: bool,
    /// CPUs of the embedded server (e.g. 1 or 2-3), or of the --server-cmd it starts (pinned),
    /// or the cpuset an observed --server-pid/--server-cgroup was given. Default: the upper
    /// half of the usable CPUs (an observed server: its own affinity).
    #[arg(long)]
    server_cpus: Option<CpuList>,
    /// CPUs of the client workers. Default: the lower half of the usable CPUs (all of them with --target).
    #[arg(long)]
    client_cpus: Option<CpuList>,
    /// Largest frame payload the embedded server accepts. Default: 16MiB.
    #[arg(long)]
    max_frame: Option<Bytes>,
    /// Run the same spec N times (against one server); each metric is then reported as mean with
    /// a 95% confidence interval, min and max.
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Service-level objectives to check (repeatable, or comma-separated): p99<1ms, mean<200us,
    /// max<50ms, ops>=10k/s, errors<1%, ttfb-p99<150ms. A complete run that misses one exits
    /// with status 3.
    #[arg(long)]
    pub slo: Vec<String>,
    /// Also write the per-second latency histograms to FILE, in the HdrHistogram interval-log
    /// format (warm-up intervals tagged 'warmup').
    #[arg(long)]
    pub hlog: Option<PathBuf>,
    /// Directory of results: DIR/RUN-ID/run.json and DIR/summary.csv. Default: results.
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Replace the files --hlog and --trace (flame --diff: -o) name if they exist (never done
    /// without it).
    #[arg(long)]
    pub force: bool,
    /// text: progress lines on stderr and a summary on stdout; json: the whole result on
    /// stdout; csv: one line per run, the IPC report's columns then latency: sessions, mt|mp,
    /// mode, size, operations, elapsed s, messages/s, GB/s (GiB, of messages/s x size),
    /// p50 us, p99 us. A round trip counts as two messages, as in the report.
    #[arg(long)]
    pub format: Option<Format>,
    /// Record an event timeline of the requests (client: begin, request sent, response
    /// received; embedded server: begin, request parsed, reply queued, reply sent) into
    /// trace-client.txt and trace-server.txt in the run's directory, and the client's also into
    /// FILE if given; read them with `wirebench timeline`. msgr (not --mode rr), shm (threads)
    /// and s3; docs/measurement.md lists each one's events.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    trace: Option<Option<PathBuf>>,
    /// With --trace: trace one request in N (by sequence number).
    #[arg(long, requires = "trace")]
    trace_sample: Option<u64>,
    #[command(flatten)]
    s3: S3Flags,
    #[command(flatten)]
    kv: KvFlags,
    #[command(flatten)]
    http: HttpFlags,
    #[command(flatten)]
    grpc: GrpcFlags,
    #[command(flatten)]
    pub observe: ObserveFlags,
    #[command(flatten)]
    exec: ExecFlags,
    #[command(flatten)]
    pub agents: AgentFlags,
}

/// Load agents: the load made on other hosts (`wirebench agent` there).
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "Load agents (run on other hosts: `wirebench agent`)")]
pub struct AgentFlags {
    /// Make the load with these agents, HOST:PORT each (comma-separated): the clients are split
    /// among them, they start at one instant, and their results merge exactly, each agent's
    /// part kept beside the merge. Needs --target.
    #[arg(long, value_delimiter = ',')]
    agents: Vec<String>,
    /// Start agents on these hosts, `ssh:[USER@]HOST` each (comma-separated), with the system's
    /// ssh: this binary is copied there (checked by sha256), the agent started on the host's
    /// loopback with a one-run token, reached through an ssh tunnel, stopped at the end.
    #[arg(long, value_delimiter = ',')]
    launch: Vec<String>,
    /// --launch: ssh's configuration file (ssh -F), e.g. for an identity or a jump host.
    #[arg(long, requires = "launch")]
    ssh_config: Option<PathBuf>,
    /// Each agent's share of the clients (and of the rate), in the order of --agents: 2,1,1.
    /// Default: equal.
    #[arg(long, value_delimiter = ',')]
    agent_weights: Vec<u32>,
    /// How long to keep trying to reach an agent that is not up yet (agents started with the
    /// run, as in a Kubernetes Job): 2m. Default: 0s (fail at once).
    #[arg(long)]
    pub agents_wait: Option<Dur>,
    /// The agents' shared token, in this file (default: $WIREBENCH_TOKEN): proven to them,
    /// never sent.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
}

/// The exec transport's flags: your own benchmark program.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "exec (--transport exec: your own benchmark program)")]
struct ExecFlags {
    /// The program to run (sh -c, pinned to --client-cpus), with the placeholders of
    /// --server-cmd, e.g. 'sockperf ping-pong -i 127.0.0.1 -p {port} -t {duration_s}'.
    /// Its output is kept in the run's directory; a non-zero exit fails the run.
    #[arg(long, value_name = "CMD")]
    client_cmd: Option<String>,
    /// What reads its output: crimson-msgr, tateyama-reqres, tateyama-datachannel, fio-json,
    /// sockperf, redis-benchmark, json:NAME=POINTER,... or regex:PATTERN (named groups:
    /// ops, ops_per_s, seconds, errors, bytes_out, bytes_in, connect_s, or a latency statistic
    /// mean|min|p50|p90|p99|p999|p9999|max with a unit _ns|_us|_ms|_s, e.g. p99_us).
    #[arg(long, value_name = "NAME")]
    parser: Option<wirebench_core::spec::Parser>,
    /// An environment variable of the program (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    client_env: Vec<EnvVars>,
}

/// The gRPC transport's flags (--depth: streams per connection; --header: metadata).
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "gRPC (--target grpc://HOST:PORT, grpcs://...)")]
struct GrpcFlags {
    /// The method, package.Service/Method (unary or server-streaming).
    #[arg(long)]
    call: Option<String>,
    /// The request message in protobuf's JSON mapping. Default: {}.
    #[arg(long)]
    data: Option<String>,
    /// The message types: a descriptor set (protoc --descriptor_set_out=FILE --include_imports).
    /// Default: the server's reflection service.
    #[arg(long)]
    proto_set: Option<PathBuf>,
}

/// An external server observed: its CPU, threads and memory measured as
/// the embedded one's are.
#[derive(Args, Debug, Default, Clone)]
pub struct ObserveFlags {
    /// Observe this process of the --target's server (repeatable): CPU per core and per
    /// thread group, CPU per op, cores used, threads outside its cpuset, RSS.
    #[arg(long = "server-pid", value_name = "PID")]
    pub server_pid: Vec<u32>,
    /// Observe every process of this cgroup v2 directory (/sys/fs/cgroup/...).
    #[arg(long, value_name = "PATH")]
    pub server_cgroup: Option<PathBuf>,
    /// Start this server command (sh -c, pinned to --server-cpus), observe it, and stop it at
    /// the end (TERM, then KILL). Placeholders: {port} {server_cpus} {client_cpus} {clients}
    /// {conns} {depth} {size} {duration_s} {rate} {instance} {run_dir}. Its output is kept in
    /// the run's directory.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// When --server-cmd is ready: tcp:PORT (127.0.0.1:PORT accepts) or line:REGEX (a line of
    /// its output matches). Default: when the --target accepts a connection.
    #[arg(long, value_name = "tcp:PORT|line:REGEX")]
    pub server_ready: Option<Ready>,
    /// The port {port} stands for. Default: a free loopback port.
    #[arg(long)]
    pub port: Option<u16>,
    /// An environment variable of the server the run starts (embedded or --server-cmd),
    /// repeatable: e.g. LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2.
    #[arg(long, value_name = "NAME=VALUE")]
    pub server_env: Vec<EnvVars>,
}

/// The HTTP transport's flags (--mode get|post|put; --size is the body).
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "HTTP (--target http://HOST:PORT/PATH, https://...)")]
struct HttpFlags {
    /// 1.1 (one request outstanding per connection) or 2 (--depth streams per connection; h2c
    /// with prior knowledge on http://, ALPN on https://). Default: 1.1.
    #[arg(long)]
    http: Option<HttpVersion>,
    /// An extra request header (HTTP) or metadata entry (gRPC), 'Name: value' (repeatable).
    #[arg(long)]
    header: Vec<String>,
    /// A new connection for each request (Connection: close): its time includes connecting
    /// and the TLS handshake.
    #[arg(long)]
    churn: bool,
}

/// The flags of the key-value transports (--mode get|set|incr|mixed; --depth pipelines).
#[derive(Args, Debug, Default)]
#[command(
    next_help_heading = "Redis and memcached (--target redis://HOST:PORT, memcached://HOST:PORT)"
)]
struct KvFlags {
    /// resp2 or resp3 (redis; default resp2), text or meta (memcached; default text).
    #[arg(long)]
    protocol: Option<KvProtocol>,
    /// Keys the run works on, written by a prepare phase for reads. Default: 10000.
    #[arg(long)]
    keys: Option<u64>,
    /// uniform, sequential, zipf (exponent 0.99) or zipf:S. Default: uniform.
    #[arg(long)]
    key_dist: Option<KeyDist>,
    /// --mode mixed: SETs to GETs, SET:GET. Default: 1:10.
    #[arg(long)]
    ratio: Option<Ratio>,
}

/// The S3 transport's flags.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "S3 (--transport s3)")]
struct S3Flags {
    /// get, put, head, delete (each object once; the run ends when all are deleted), list (a
    /// page of up to 1000 keys) or mixed (see --mix). Default: get. Time to first byte (TTFB):
    /// GET, from the request's start to the first byte of the body; PUT (and HEAD, DELETE),
    /// to the response headers, which come after the whole body was sent; LIST, to the first
    /// byte of the body. Open loop (--rate): from the intended start.
    #[arg(long, value_parser = s3_workload)]
    workload: Option<S3Workload>,
    /// Weights of the operations of --workload mixed: get=70,put=20,delete=10 (of get, put,
    /// head, delete, list).
    #[arg(long)]
    mix: Option<Mix>,
    /// Objects the workload works on: created by a prepare phase for reads (timed and
    /// reported apart), overwritten by puts. Default: 100.
    #[arg(long)]
    objects: Option<u64>,
    /// path (`http://host/bucket/key`) or virtual (`http://bucket.host/key`; the connection still
    /// goes to the target's HOST:PORT). Default: path.
    #[arg(long)]
    url_style: Option<UrlStyle>,
    /// Where the SigV4 signature goes: header (the Authorization header, as the AWS SDKs and
    /// S3 benchmark tools sign) or query (presigned URLs). Default: header.
    #[arg(long)]
    sign: Option<S3Sign>,
    /// SigV4 region. Default: $AWS_REGION, else us-east-1.
    #[arg(long)]
    region: Option<String>,
    /// Access key (default: $AWS_ACCESS_KEY_ID). Never printed nor stored.
    #[arg(long)]
    access_key: Option<String>,
    /// Secret key (default: $AWS_SECRET_ACCESS_KEY). Never printed nor stored.
    #[arg(long)]
    secret_key: Option<String>,
    /// Objects larger than this are uploaded in parts. Default: 64MiB.
    #[arg(long)]
    multipart_threshold: Option<Bytes>,
    /// Part size of multipart uploads and of --get-parts ranged reads. Default: 16MiB.
    #[arg(long)]
    part_size: Option<Bytes>,
    /// Parts of one multipart upload sent at once (each on a connection of its own). Default: 1.
    #[arg(long)]
    put_parts: Option<usize>,
    /// Read objects larger than --part-size as ranged GETs of a part, this many at once (each
    /// on a connection of its own). Default: 1 (one streamed GET).
    #[arg(long)]
    get_parts: Option<usize>,
    /// Keep the objects the run created (default: deleted at the end).
    #[arg(long)]
    keep: bool,
    /// Create the target bucket if it does not exist.
    #[arg(long)]
    create_bucket: bool,
    /// s3s://, https:// and grpcs:// targets: also trust the certificates of this PEM file (a private CA, a
    /// self-signed endpoint); the Mozilla roots are always trusted.
    #[arg(long)]
    ca_file: Option<PathBuf>,
}

impl RunFlags {
    /// The request these flags make (the region from $AWS_REGION when not given).
    pub fn request(&self) -> RunRequest {
        let on = |b: bool| b.then_some(true);
        let s3 = &self.s3;
        wirebench_runner::with_env_region(RunRequest {
            transport: self.transport,
            arch: self.arch,
            target: self.target.first().cloned(),
            also_target: self.target.iter().skip(1).cloned().collect(),
            listen: self.listen.clone(),
            mode: self.mode.clone(),
            wait: self.wait,
            clients_as: self.clients_as,
            channel: self.channel,
            ring_size: self.ring_size,
            size: self.size.clone(),
            response_size: self.response_size,
            clients: self.clients,
            conns_per_client: self.conns_per_client,
            depth: self.depth,
            rate: self.rate,
            arrival: self.arrival,
            duration: self.duration,
            count: self.count,
            warmup: self.warmup,
            op_timeout: self.op_timeout,
            no_hiccup: on(self.no_hiccup),
            hiccup_threshold: self.hiccup_threshold,
            poll: on(self.poll),
            verify: on(self.verify),
            server_cpus: self.server_cpus.clone(),
            client_cpus: self.client_cpus.clone(),
            max_frame: self.max_frame,
            repeat: self.repeat,
            slo: self.slo.clone(),
            hlog: self.hlog.clone(),
            results: self.results.clone(),
            force: on(self.force),
            format: self.format,
            trace: self.trace.clone().map(|f| match f {
                Some(f) => Trace::File(f),
                None => Trace::On(true),
            }),
            trace_sample: self.trace_sample,
            placement_policy: None,
            placement_note: Vec::new(),
            instance: None,
            workload: s3.workload,
            mix: s3.mix.clone(),
            objects: s3.objects,
            url_style: s3.url_style,
            sign: s3.sign,
            region: s3.region.clone(),
            multipart_threshold: s3.multipart_threshold,
            part_size: s3.part_size,
            put_parts: s3.put_parts,
            get_parts: s3.get_parts,
            keep: on(s3.keep),
            create_bucket: on(s3.create_bucket),
            ca_file: s3.ca_file.clone(),
            protocol: self.kv.protocol,
            keys: self.kv.keys,
            key_dist: self.kv.key_dist,
            ratio: self.kv.ratio,
            http: self.http.http,
            header: self.http.header.clone(),
            churn: on(self.http.churn),
            call: self.grpc.call.clone(),
            data: self.grpc.data.clone(),
            proto_set: self.grpc.proto_set.clone(),
            server_pid: self.observe.server_pid.clone(),
            server_cgroup: self.observe.server_cgroup.clone(),
            server_cmd: self.observe.server_cmd.clone(),
            server_ready: self.observe.server_ready.clone(),
            port: self.observe.port,
            server_env: EnvVars(
                self.observe
                    .server_env
                    .iter()
                    .flat_map(|e| e.0.clone())
                    .collect(),
            ),
            client_cmd: self.exec.client_cmd.clone(),
            parser: self.exec.parser.clone(),
            client_env: EnvVars(
                self.exec
                    .client_env
                    .iter()
                    .flat_map(|e| e.0.clone())
                    .collect(),
            ),
            agents: self.agents.agents.clone(),
            launch: self.agents.launch.clone(),
            agent_weights: self.agents.agent_weights.clone(),
            share: None,
        })
    }

    /// The S3 credentials of the flags, else of the AWS_* variables (S3 runs only).
    pub fn credentials(&self) -> Result<Option<Credentials>, SpecError> {
        let (k, s) = (self.s3.access_key.clone(), self.s3.secret_key.clone());
        if self.request().transport_kind() != TransportKind::S3 {
            if k.is_some() || s.is_some() {
                return Err(SpecError::OtherTransport {
                    flag: if k.is_some() {
                        "--access-key"
                    } else {
                        "--secret-key"
                    },
                    transport: TransportKind::S3,
                });
            }
            return Ok(None);
        }
        Credentials::given_or_env(k, s)
    }

    /// The session options of these flags.
    pub fn session(&self) -> Result<wirebench_runner::session::SessionOptions, SpecError> {
        let mut opts =
            wirebench_runner::session::SessionOptions::of(&self.request(), self.credentials()?);
        if !self.agents.agents.is_empty() {
            opts.agent_token =
                Token::given_or_env(self.agents.token_file.as_deref()).map_err(|why| {
                    SpecError::Invalid {
                        flag: "--token-file",
                        why,
                    }
                })?;
        }
        if let Some(f) = &self.agents.ssh_config
            && !f.is_file()
        {
            return Err(SpecError::Invalid {
                flag: "--ssh-config",
                why: format!("{}: no such file", f.display()),
            });
        }
        opts.ssh_config.clone_from(&self.agents.ssh_config);
        if let Some(Dur(d)) = self.agents.agents_wait {
            if self.agents.agents.is_empty() {
                return Err(SpecError::Flag {
                    flag: "--agents-wait",
                    why: "waits for --agents: add them".into(),
                });
            }
            opts.agents_wait = d;
        }
        if self.agents.agents.is_empty() && self.agents.token_file.is_some() {
            return Err(SpecError::Flag {
                flag: "--token-file",
                why: "proves this run to its --agents: add them".into(),
            });
        }
        Ok(opts)
    }
}

/// `--workload`, whose values are S3's operations: the message says so, a
/// user of another transport being after `--mode`.
fn s3_workload(s: &str) -> Result<S3Workload, String> {
    s.parse().map_err(|e| {
        format!("{e}: these are S3's operations (--transport s3); the other transports take --mode")
    })
}
