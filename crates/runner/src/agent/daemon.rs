//! `wirebench agent`: a daemon that makes its part of a coordinator's runs.
//!
//! Anyone who can reach the port can connect, so nothing a peer does before
//! it proves the token costs the agent more than a few KiB and a few
//! seconds: the handshakes are tasks of one thread (no thread per
//! connection), each over in [`HANDSHAKE_DEADLINE`] whatever the peer
//! drips, its line at most [`AUTH_LINE_MAX`]; at most [`MAX_HANDSHAKES`]
//! at once, a new connection closing the oldest handshake beyond them (so
//! a flood of idle peers cannot keep a coordinator out: its handshake
//! takes a round trip). An accept that fails (out of descriptors) waits
//! instead of spinning, and its log line comes once a second.
//!
//! A coordinator that proves the token gets the agent to itself (one at a
//! time: another waits [`SLOT_WAIT`] for it to go, then is refused) and a
//! thread for its session: clock probes answered, the parts it sends
//! checked by the agent's [`Policy`] and run through [`crate::run::run`],
//! each result kept in the agent's results directory too. A reader thread
//! hears the coordinator: a `stop`, or its silence for [`SILENCE`], stops
//! *its* part at once; nothing another connection does touches it.

use super::policy::Policy;
use super::wire::{self, FromAgent, FromCoordinator};
use crate::auth::{self, BuildId, Token};
use crate::process::Cancel;
use crate::run::{self, RunEvents};
use crate::session::{Events, SessionOptions};
use crate::{Credentials, RunError};
use std::io::{BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wirebench_core::request::SpecError;
use wirebench_core::result::RunResult;
use wirebench_core::topo::Topology;
use wirebench_load::engine::{Abort, IntervalReport, Start};
use wirebench_load::os;
use wirebench_transports::accept::{AcceptErrors, LogSink, RateLimitedLog};

/// The longest a coordinator waits for each of the agent's handshake
/// messages.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a whole handshake may take on the agent's side, from the
/// accept to the welcome.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// Connections in their handshake at once; beyond them, the oldest is
/// closed. Each holds at most a few KiB here.
pub const MAX_HANDSHAKES: usize = 1024;
/// The longest handshake message a coordinator sends (its `auth` is a few
/// hundred bytes).
pub const AUTH_LINE_MAX: usize = 4 << 10;
/// How long a second coordinator waits for the first to go.
pub const SLOT_WAIT: Duration = Duration::from_secs(2);
/// The longest either side stays silent before the other gives up on it
/// (each says something every second).
pub const SILENCE: Duration = Duration::from_secs(5);
/// The longest an agent waits, connected, for the start.
const START_WAIT: Duration = Duration::from_secs(300);
/// Messages of the coordinator waiting for the session's thread; more are
/// dropped (a coordinator sends a few per second).
const HEARD_QUEUE: usize = 64;

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub listen: SocketAddr,
    /// Required, unless `insecure_no_token` on loopback.
    pub token: Option<Token>,
    /// `--insecure-no-token`: any local process may drive the agent.
    pub insecure_no_token: bool,
    /// What a part may do, and where results go.
    pub policy: Policy,
    /// S3 credentials of this host (never sent by a coordinator).
    pub credentials: Option<Credentials>,
    pub build: BuildId,
    /// Test only: added to every clock reading this agent reports.
    pub clock_skew_ns: i64,
    /// Its index in a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`).
    pub index: Option<u32>,
    /// Stop after this many parts (a Job's agent: the Job then completes).
    pub runs: Option<usize>,
}

impl AgentOptions {
    /// Refuses to serve without a token, and without one beyond loopback.
    pub fn check(&self) -> Result<(), SpecError> {
        let beyond = !self.listen.ip().is_loopback();
        match (&self.token, self.insecure_no_token) {
            (Some(_), true) => Err(SpecError::Flag {
                flag: "--insecure-no-token",
                why: "the agent was given a token too: drop one of them".into(),
            }),
            (None, _) if beyond => Err(SpecError::Flag {
                flag: "--listen",
                why: format!(
                    "{} is reachable beyond this host: give the agent a token with --token-file or WIREBENCH_TOKEN",
                    self.listen
                ),
            }),
            (None, false) => Err(SpecError::Flag {
                flag: "--token-file",
                why: "is required: an agent runs the load any coordinator with its token sends; give it one with --token-file FILE or WIREBENCH_TOKEN (e.g. `openssl rand -hex 32`), the same to the coordinator; on loopback only, --insecure-no-token lets any local process drive it".into(),
            }),
            _ => Ok(()),
        }
    }
}

/// `--listen tcp://HOST:PORT` (or HOST:PORT) as an address.
pub fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let hostport = s.strip_prefix("tcp://").unwrap_or(s);
    match hostport.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(format!("--listen {s}: no address")),
        Err(e) => Err(format!("--listen {s}: not tcp://HOST:PORT ({e})")),
    }
}

/// The agent's index in a Kubernetes Indexed Job, which its pod knows
/// (`JOB_COMPLETION_INDEX`): the coordinator checks it against the name it
/// reached.
pub fn job_index() -> Result<Option<u32>, String> {
    match std::env::var("JOB_COMPLETION_INDEX") {
        Ok(i) => i
            .parse()
            .map(Some)
            .map_err(|_| format!("JOB_COMPLETION_INDEX={i}: not an index")),
        Err(_) => Ok(None),
    }
}

/// The agent's log on stderr, each line prefixed `agent: `; a closed
/// stderr does not stop the agent.
pub fn stderr_log() -> Log {
    Arc::new(|line: &str| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "agent: {line}");
    })
}

/// Writes the address the agent listens on as the first line of stdout
/// (what `--launch` and scripts read).
pub fn print_bound(addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on tcp://{addr}");
    let _ = out.flush();
}

struct Ctx {
    opts: AgentOptions,
    /// Whether a part is running (one at a time).
    busy: AtomicBool,
    /// The running part's cancel flag, which SIGTERM also sets.
    current: Mutex<Option<Cancel>>,
    /// The coordinator that has the agent, if one has.
    coordinator: Mutex<Option<SocketAddr>>,
    /// Parts made so far.
    done: AtomicUsize,
    /// The daemon's: set when `runs` parts are made.
    stop: Cancel,
}

impl Ctx {
    fn clock(&self) -> u64 {
        os::monotonic_ns().saturating_add_signed(self.opts.clock_skew_ns)
    }
}

/// The agent held by one coordinator; let go when dropped.
struct Slot(Arc<Ctx>);

impl Slot {
    fn take(ctx: &Arc<Ctx>, peer: SocketAddr) -> Result<Slot, SocketAddr> {
        let mut held = ctx.coordinator.lock().expect("not poisoned");
        match *held {
            Some(other) => Err(other),
            None => {
                *held = Some(peer);
                Ok(Slot(ctx.clone()))
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.coordinator.lock().expect("not poisoned") = None;
    }
}

type Log = LogSink;

/// How often a kind of log line may come (a flood of hostile peers would
/// otherwise fill the log).
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Serves until `cancel` (SIGTERM, Ctrl-C); `bound` hears the address it
/// listens on, `log` each connection's fate.
pub fn serve(
    opts: AgentOptions,
    cancel: Cancel,
    bound: &mut dyn FnMut(SocketAddr),
    log: Log,
) -> Result<(), RunError> {
    opts.check()?;
    // An agent anyone here may drive says so in every line it logs.
    let log: Log = match opts.insecure_no_token {
        true => Arc::new(move |line: &str| log(&format!("(insecure: no token) {line}"))),
        false => log,
    };
    let listener = TcpListener::bind(opts.listen)
        .map_err(|e| RunError::Failed(format!("--listen {}: {e}", opts.listen)))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    bound(addr);
    log(&format!("{}, listening on tcp://{addr}", opts.build));
    let ctx = Arc::new(Ctx {
        opts,
        busy: AtomicBool::new(false),
        current: Mutex::new(None),
        coordinator: Mutex::new(None),
        done: AtomicUsize::new(0),
        stop: cancel.clone(),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(accept(listener, ctx.clone(), cancel.clone(), log))?;
    drop(rt);
    let why = cancel.reason().unwrap_or("stopped").to_string();
    if let Some(c) = ctx.current.lock().expect("not poisoned").as_ref() {
        c.cancel(format!("the agent was stopped ({why})"));
    }
    // The running part, if any, ends and reports; wait a little for it.
    for _ in 0..100 {
        if !ctx.busy.load(Ordering::Acquire) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Accepts until cancelled; each connection's handshake is a task.
async fn accept(
    listener: TcpListener,
    ctx: Arc<Ctx>,
    cancel: Cancel,
    log: Log,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    // The handshakes under way, oldest first, each removed by its task.
    let pending: Arc<Mutex<std::collections::BTreeMap<u64, tokio::task::AbortHandle>>> =
        Arc::default();
    let mut next_id = 0u64;
    let failed = Arc::new(Mutex::new(RateLimitedLog::to(log.clone(), LOG_EVERY)));
    let mut accept_errors = AcceptErrors::logging_to(log.clone(), LOG_EVERY);
    let mut evicted = RateLimitedLog::to(log.clone(), LOG_EVERY);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while !cancel.is_cancelled() {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    accept_errors.succeeded();
                    let oldest = {
                        let mut p = pending.lock().expect("not poisoned");
                        (p.len() >= MAX_HANDSHAKES).then(|| p.pop_first()).flatten()
                    };
                    if let Some((_, h)) = oldest {
                        h.abort();
                        evicted.log(&peer.to_string(), || format!(
                            "{MAX_HANDSHAKES} connections in their handshake: the oldest closed for this one"
                        ));
                    }
                    let id = next_id;
                    next_id += 1;
                    let (ctx, log, failed) = (ctx.clone(), log.clone(), failed.clone());
                    let done = pending.clone();
                    // Held while the task is made, so that it cannot
                    // remove its entry before it is there.
                    let mut p = pending.lock().expect("not poisoned");
                    let task = tokio::spawn(async move {
                        let shaken = tokio::time::timeout(
                            HANDSHAKE_DEADLINE,
                            handshake(stream, peer, &ctx),
                        )
                        .await;
                        done.lock().expect("not poisoned").remove(&id);
                        let why = match shaken {
                            Ok(Ok(Some(session))) => {
                                log(&format!("{peer}: coordinator accepted"));
                                let session_log = log.clone();
                                let spawned = std::thread::Builder::new()
                                    .name("agent-session".into())
                                    .spawn(move || {
                                        if let Err(e) = session.serve(&ctx, &*session_log) {
                                            session_log(&format!("{peer}: {e}"));
                                        }
                                    });
                                match spawned {
                                    Ok(_) => return,
                                    Err(e) => format!("no thread for its session: {e}"),
                                }
                            }
                            Ok(Ok(None)) => return,
                            Ok(Err(e)) => e.to_string(),
                            Err(_) => format!("no handshake within {HANDSHAKE_DEADLINE:?}: closed"),
                        };
                        failed
                            .lock()
                            .expect("not poisoned")
                            .log(&peer.to_string(), || why);
                    });
                    p.insert(id, task.abort_handle());
                }
                // Out of descriptors, the connection stays in the backlog and
                // accept fails again at once: wait, rather than spin and log
                // without end.
                Err(e) => accept_errors.failed(&e).await,
            },
            _ = tick.tick() => {}
        }
    }
    Ok(())
}

/// Reads one line of at most `max` bytes from `s`, `buf` holding what was
/// read past the last line; `None` at the end of the stream.
async fn read_line(
    s: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let rest = buf.split_off(i + 1);
            return Ok(Some(std::mem::replace(buf, rest)));
        }
        if buf.len() > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a handshake message longer than {max} bytes"),
            ));
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A coordinator that passed the handshake.
struct Session {
    stream: TcpStream,
    /// What it sent after its handshake, already read.
    early: Vec<u8>,
    peer: SocketAddr,
    _slot: Slot,
}

/// The handshake: the token proven both ways, the same protocol and build,
/// the agent free. `None`: the peer left.
async fn handshake(
    mut s: tokio::net::TcpStream,
    peer: SocketAddr,
    ctx: &Arc<Ctx>,
) -> std::io::Result<Option<Session>> {
    s.set_nodelay(true)?;
    let opts = &ctx.opts;
    let nonce = auth::nonce();
    let hello = FromAgent::Hello {
        protocol: wire::PROTOCOL,
        nonce: nonce.clone(),
        token: opts.token.is_some(),
    };
    s.write_all(&wire::line(&hello)?).await?;
    let mut buf = Vec::new();
    let Some(first) = read_line(&mut s, &mut buf, AUTH_LINE_MAX).await? else {
        return Ok(None);
    };
    let first = wire::parse::<FromCoordinator>(&first)?;
    let refuse = async |s: &mut tokio::net::TcpStream, why: String| {
        s.write_all(&wire::line(&FromAgent::Refused { why: why.clone() })?)
            .await?;
        Err(std::io::Error::other(format!("refused: {why}")))
    };
    let FromCoordinator::Auth {
        protocol,
        proof,
        nonce: theirs,
        build,
    } = first
    else {
        return refuse(&mut s, "the first message must be the handshake's".into()).await;
    };
    if protocol != wire::PROTOCOL {
        return refuse(
            &mut s,
            format!(
                "protocol mismatch: the coordinator speaks agent protocol {protocol}, this agent {}",
                wire::PROTOCOL
            ),
        )
        .await;
    }
    if let Some(t) = &opts.token
        && !proof.is_some_and(|p| t.verify("coordinator", &nonce, &p))
    {
        return refuse(
            &mut s,
            format!(
                "the coordinator's token does not match this agent's ({peer}): give both the same --token-file or WIREBENCH_TOKEN"
            ),
        )
        .await;
    }
    if build != opts.build {
        return refuse(
            &mut s,
            format!(
                "build mismatch: the coordinator runs {build}, this agent {}; run the same binary on both",
                opts.build
            ),
        )
        .await;
    }
    // One coordinator at a time; the last one may be a moment from gone
    // (a sweep's next point connects as the last one's closes).
    let wait_until = Instant::now() + SLOT_WAIT;
    let slot = loop {
        match Slot::take(ctx, peer) {
            Ok(slot) => break slot,
            Err(other) if Instant::now() >= wait_until => {
                return refuse(
                    &mut s,
                    format!(
                        "another coordinator ({other}) is using this agent (one at a time): try again when its run is over"
                    ),
                )
                .await;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let welcome = FromAgent::Welcome {
        proof: opts.token.as_ref().map(|t| t.prove("agent", &theirs)),
        build: opts.build.clone(),
        index: opts.index,
    };
    s.write_all(&wire::line(&welcome)?).await?;
    let stream = s.into_std()?;
    stream.set_nonblocking(false)?;
    Ok(Some(Session {
        stream,
        early: buf,
        peer,
        _slot: slot,
    }))
}

type Writer = Arc<Mutex<TcpStream>>;

fn say(w: &Writer, msg: &FromAgent) -> std::io::Result<()> {
    wire::send(&mut *w.lock().expect("not poisoned"), msg)
}

/// A message heard, and when (on the agent's clock).
enum Heard {
    Msg(FromCoordinator, u64),
    Gone(String),
}

impl Session {
    /// Serves the coordinator until it goes.
    fn serve(self, ctx: &Arc<Ctx>, log: &dyn Fn(&str)) -> std::io::Result<()> {
        let Session {
            stream,
            early,
            peer,
            _slot,
        } = self;
        stream.set_read_timeout(Some(SILENCE))?;
        stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let mut rd = BufReader::new(Read::chain(
            std::io::Cursor::new(early),
            stream.try_clone()?,
        ));
        let w: Writer = Arc::new(Mutex::new(stream));
        // This connection's part: only this connection's stop or silence
        // stops it.
        let mine: Arc<Mutex<Option<Cancel>>> = Arc::default();
        // The reader: every message, stamped; a stop or the coordinator's
        // silence stops the running part at once. Beats only say it is
        // alive; what the session's thread is too busy to take is dropped.
        let (tx, rx) = mpsc::sync_channel::<Heard>(HEARD_QUEUE);
        let reader = {
            let (ctx, mine) = (ctx.clone(), mine.clone());
            move || {
                loop {
                    let heard =
                        match wire::recv::<FromCoordinator>(&mut rd, wire::COORDINATOR_LINE_MAX) {
                            Ok(Some(FromCoordinator::Beat)) => continue,
                            Ok(Some(m)) => Heard::Msg(m, ctx.clock()),
                            Ok(None) => Heard::Gone("the coordinator closed the connection".into()),
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut =>
                            {
                                Heard::Gone(format!("the coordinator was silent for {SILENCE:?}"))
                            }
                            Err(e) => Heard::Gone(format!("the coordinator's connection: {e}")),
                        };
                    let current = mine.lock().expect("not poisoned").clone();
                    match (&heard, current) {
                        (Heard::Msg(FromCoordinator::Stop { why }, _), Some(c)) => {
                            c.cancel(format!("the coordinator stopped the run: {why}"))
                        }
                        (Heard::Gone(why), Some(c)) => c.cancel(why.clone()),
                        _ => {}
                    }
                    match heard {
                        Heard::Gone(_) => {
                            let _ = tx.send(heard);
                            return;
                        }
                        Heard::Msg(..) => match tx.try_send(heard) {
                            Ok(()) | Err(mpsc::TrySendError::Full(_)) => {}
                            Err(mpsc::TrySendError::Disconnected(_)) => return,
                        },
                    }
                }
            }
        };
        std::thread::Builder::new()
            .name("agent-reader".into())
            .spawn(reader)?;
        loop {
            match rx.recv() {
                Ok(Heard::Msg(FromCoordinator::Probe { t1 }, t2)) => {
                    say(
                        &w,
                        &FromAgent::Probe {
                            t1,
                            t2,
                            t3: ctx.clock(),
                        },
                    )?;
                }
                Ok(Heard::Msg(FromCoordinator::Prepare { request, hash }, _)) => {
                    if ctx.busy.swap(true, Ordering::AcqRel) {
                        say(
                            &w,
                            &FromAgent::Failed {
                                why: "this agent is making another coordinator's load (one run at a time)"
                                    .into(),
                            },
                        )?;
                        continue;
                    }
                    let r = part(ctx, &w, &rx, &mine, *request, &hash, log);
                    *mine.lock().expect("not poisoned") = None;
                    *ctx.current.lock().expect("not poisoned") = None;
                    ctx.busy.store(false, Ordering::Release);
                    let done = ctx.done.fetch_add(1, Ordering::AcqRel) + 1;
                    if ctx.opts.runs.is_some_and(|n| done >= n) {
                        ctx.stop.cancel(format!("{done} run(s) made (--runs)"));
                    }
                    r?;
                }
                Ok(Heard::Msg(_, _)) => {}
                Ok(Heard::Gone(why)) => {
                    log(&format!("{peer}: {why}"));
                    return Ok(());
                }
                Err(_) => return Ok(()),
            }
        }
    }
}

/// Runs one part and reports it.
fn part(
    ctx: &Arc<Ctx>,
    w: &Writer,
    rx: &mpsc::Receiver<Heard>,
    mine: &Mutex<Option<Cancel>>,
    req: wirebench_core::request::RunRequest,
    hash: &str,
    log: &dyn Fn(&str),
) -> std::io::Result<()> {
    let ours = auth::sha256(&serde_json::to_vec(&req).map_err(std::io::Error::other)?);
    if ours != hash {
        return say(
            w,
            &FromAgent::Failed {
                why: format!(
                    "request hash mismatch: the coordinator sent {hash}, and this agent reads its request otherwise (another build? a field one side does not know?)"
                ),
            },
        );
    }
    let req = match ctx.opts.policy.admit(req) {
        Ok(req) => req,
        Err(why) => {
            log(&why);
            return say(w, &FromAgent::Failed { why });
        }
    };
    // The agent's own credentials go only where its operator said.
    let own = ctx.opts.policy.credentials_for(&req);
    let is_s3 = matches!(
        req.target,
        Some(wirebench_core::values::Endpoint::S3 { .. })
    );
    if !own && is_s3 && ctx.opts.credentials.is_some() {
        let why = format!(
            "refused: this agent's S3 credentials go only to the targets its operator listed (--allow-target HOST:PORT), and {} is not one: its requests would go unsigned",
            req.target
                .as_ref()
                .and_then(|t| t.tcp_addr())
                .unwrap_or("the target")
        );
        log(&why);
        return say(w, &FromAgent::Failed { why });
    }
    let cancel = Cancel::new();
    *mine.lock().expect("not poisoned") = Some(cancel.clone());
    *ctx.current.lock().expect("not poisoned") = Some(cancel.clone());
    // Beats while the part prepares and runs.
    let beating = Arc::new(AtomicBool::new(true));
    let beat = {
        let (w, beating) = (w.clone(), beating.clone());
        std::thread::spawn(move || {
            while beating.load(Ordering::Acquire) {
                if say(&w, &FromAgent::Beat).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };
    let mut events = AgentEvents {
        ctx,
        w,
        rx,
        cancel: cancel.clone(),
    };
    let mut opts = SessionOptions::of(&req, ctx.opts.credentials.clone().filter(|_| own));
    opts.env_secrets = own;
    // A part is not a run of its own: the coordinator indexes the merged run.
    opts.history = None;
    let out = run::run(
        &req,
        &opts,
        &Topology::read(),
        vec!["wirebench".into(), "agent".into()],
        cancel,
        &mut events,
    );
    beating.store(false, Ordering::Release);
    let _ = beat.join();
    match out {
        Ok(report) => match report.runs.into_iter().last() {
            Some((result, dir)) => {
                let dir = dir.canonicalize().unwrap_or(dir);
                log(&format!(
                    "part {} done: {} ops, saved in {}",
                    result.run_id,
                    result.summary.ops,
                    dir.display()
                ));
                say(
                    w,
                    &FromAgent::Done {
                        result: Box::new(result),
                        dir: dir.display().to_string(),
                    },
                )
            }
            None => say(
                w,
                &FromAgent::Failed {
                    why: "no run".into(),
                },
            ),
        },
        // Measured, but its results directory did not take it: the
        // coordinator still gets it.
        Err(RunError::Unsaved(u)) if serde_json::from_str::<RunResult>(&u.json).is_ok() => {
            log(&u.to_string());
            say(
                w,
                &FromAgent::Done {
                    result: Box::new(serde_json::from_str(&u.json).expect("checked")),
                    dir: u.kept.map_or("(not saved on the agent)".into(), |p| {
                        p.display().to_string()
                    }),
                },
            )
        }
        Err(e) => say(w, &FromAgent::Failed { why: e.to_string() }),
    }
}

/// A part's events: sent to the coordinator; the start waits for its word.
struct AgentEvents<'a> {
    ctx: &'a Arc<Ctx>,
    w: &'a Writer,
    rx: &'a mpsc::Receiver<Heard>,
    cancel: Cancel,
}

impl Events for AgentEvents<'_> {
    fn note(&mut self, text: &str) {
        let _ = say(self.w, &FromAgent::Note { text: text.into() });
    }
    fn connected(&mut self, connect_ns: u64) {
        let _ = say(self.w, &FromAgent::Ready { connect_ns });
    }
    fn interval(&mut self, iv: &IntervalReport) {
        let _ = say(
            self.w,
            &FromAgent::Interval {
                index: iv.index,
                interval: Box::new(iv.point()),
                live: crate::events::LiveSecond::of(iv),
            },
        );
    }
    fn agreed_start(&mut self) -> Start {
        let deadline = std::time::Instant::now() + START_WAIT;
        loop {
            if let Some(why) = self.cancel.reason() {
                return Start::Abort(Abort::Interrupted(why.to_string()));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Start::Abort(Abort::Failed(format!(
                    "no start from the coordinator within {START_WAIT:?}"
                )));
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(Heard::Msg(FromCoordinator::Start { at_ns }, _)) => {
                    let ours = at_ns.saturating_add_signed(-self.ctx.opts.clock_skew_ns);
                    return Start::At(os::instant_from_monotonic(ours));
                }
                Ok(Heard::Msg(FromCoordinator::Probe { t1 }, t2)) => {
                    let t3 = self.ctx.clock();
                    let _ = say(self.w, &FromAgent::Probe { t1, t2, t3 });
                }
                Ok(Heard::Msg(FromCoordinator::Stop { why }, _)) => {
                    return Start::Abort(Abort::Interrupted(format!(
                        "the coordinator stopped the run: {why}"
                    )));
                }
                Ok(Heard::Gone(why)) => return Start::Abort(Abort::Failed(why)),
                Ok(Heard::Msg(_, _)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Start::Abort(Abort::Failed("the coordinator is gone".into()));
                }
            }
        }
    }
}

impl RunEvents for AgentEvents<'_> {}
