//! `wirebench agent`: a daemon that makes its part of a coordinator's runs.
//!
//! One thread accepts; each coordinator's connection gets a thread that
//! does the handshake (token, protocol, build), answers clock probes, and
//! runs the parts it is sent through [`crate::run::run`], one at a time
//! for the whole agent, keeping each result in its own results directory
//! too. A reader thread per connection hears the coordinator: a `stop`, or
//! its silence for [`SILENCE`], stops the part at once.

use super::auth::{self, BuildId, Token};
use super::wire::{self, FromAgent, FromCoordinator};
use crate::process::Cancel;
use crate::run::{self, RunEvents};
use crate::session::{Events, SessionOptions};
use crate::{Credentials, RunError};
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirebench_core::request::SpecError;
use wirebench_core::topo::Topology;
use wirebench_load::engine::{Abort, IntervalReport, Start};
use wirebench_load::os;

/// The longest a handshake's message may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest either side stays silent before the other gives up on it
/// (each says something every second).
pub const SILENCE: Duration = Duration::from_secs(5);
/// The longest an agent waits, connected, for the start.
const START_WAIT: Duration = Duration::from_secs(300);

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub listen: SocketAddr,
    /// Required whenever `listen` is beyond loopback.
    pub token: Option<Token>,
    /// Where the parts' results are kept (None: each request's own).
    pub results: Option<PathBuf>,
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

struct Ctx {
    opts: AgentOptions,
    /// Whether a part is running (one at a time).
    busy: AtomicBool,
    /// The running part's cancel flag, which SIGTERM also sets.
    current: Mutex<Option<Cancel>>,
    /// Parts made so far.
    done: std::sync::atomic::AtomicUsize,
    /// The daemon's: set when `runs` parts are made.
    stop: Cancel,
}

impl Ctx {
    fn clock(&self) -> u64 {
        os::monotonic_ns().saturating_add_signed(self.opts.clock_skew_ns)
    }
}

/// Serves until `cancel` (SIGTERM, Ctrl-C); `bound` hears the address it
/// listens on, `log` each connection's fate.
pub fn serve(
    opts: AgentOptions,
    cancel: Cancel,
    bound: &mut dyn FnMut(SocketAddr),
    log: Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<(), RunError> {
    if !opts.listen.ip().is_loopback() && opts.token.is_none() {
        return Err(SpecError::Flag {
            flag: "--listen",
            why: format!(
                "{} is reachable beyond this host: give the agent a token with --token-file or WIREBENCH_TOKEN",
                opts.listen
            ),
        }
        .into());
    }
    let listener = TcpListener::bind(opts.listen)
        .map_err(|e| RunError::Failed(format!("--listen {}: {e}", opts.listen)))?;
    listener.set_nonblocking(true)?;
    bound(listener.local_addr()?);
    let ctx = Arc::new(Ctx {
        opts,
        busy: AtomicBool::new(false),
        current: Mutex::new(None),
        done: std::sync::atomic::AtomicUsize::new(0),
        stop: cancel.clone(),
    });
    while !cancel.is_cancelled() {
        match listener.accept() {
            Ok((stream, peer)) => {
                let (ctx, log) = (ctx.clone(), log.clone());
                std::thread::spawn(move || {
                    if let Err(e) = connection(stream, &ctx, &*log) {
                        log(&format!("{peer}: {e}"));
                    }
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => log(&format!("accept: {e}")),
        }
    }
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

type Writer = Arc<Mutex<TcpStream>>;

fn say(w: &Writer, msg: &FromAgent) -> std::io::Result<()> {
    wire::send(&mut *w.lock().expect("not poisoned"), msg)
}

/// A message heard, and when (on the agent's clock).
enum Heard {
    Msg(FromCoordinator, u64),
    Gone(String),
}

fn connection(stream: TcpStream, ctx: &Arc<Ctx>, log: &dyn Fn(&str)) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    let peer = stream.peer_addr()?;
    let mut rd = BufReader::new(stream.try_clone()?);
    let w: Writer = Arc::new(Mutex::new(stream));
    let nonce = auth::nonce();
    let opts = &ctx.opts;
    say(
        &w,
        &FromAgent::Hello {
            protocol: wire::PROTOCOL,
            nonce: nonce.clone(),
            token: opts.token.is_some(),
        },
    )?;
    let Some(first) = wire::recv::<FromCoordinator>(&mut rd, wire::HANDSHAKE_LINE_MAX)? else {
        return Ok(());
    };
    let FromCoordinator::Auth {
        protocol,
        proof,
        nonce: theirs,
        build,
    } = first
    else {
        let why = "the first message must be the handshake's".to_string();
        say(&w, &FromAgent::Refused { why: why.clone() })?;
        return Err(std::io::Error::other(why));
    };
    let refuse = |why: String| -> std::io::Result<()> {
        say(&w, &FromAgent::Refused { why: why.clone() })?;
        Err(std::io::Error::other(format!("refused: {why}")))
    };
    if protocol != wire::PROTOCOL {
        return refuse(format!(
            "protocol mismatch: the coordinator speaks agent protocol {protocol}, this agent {}",
            wire::PROTOCOL
        ));
    }
    if let Some(t) = &opts.token
        && !proof.is_some_and(|p| t.verify("coordinator", &nonce, &p))
    {
        return refuse(format!(
            "the coordinator's token does not match this agent's ({peer}): give both the same --token-file or WIREBENCH_TOKEN"
        ));
    }
    if build != opts.build {
        return refuse(format!(
            "build mismatch: the coordinator runs {build}, this agent {}; run the same binary on both",
            opts.build
        ));
    }
    say(
        &w,
        &FromAgent::Welcome {
            proof: opts.token.as_ref().map(|t| t.prove("agent", &theirs)),
            build: opts.build.clone(),
            index: opts.index,
        },
    )?;
    log(&format!("{peer}: coordinator accepted"));
    {
        let s = w.lock().expect("not poisoned");
        s.set_read_timeout(Some(SILENCE))?;
    }
    // The reader: every message, stamped; a stop or the coordinator's
    // silence stops the running part at once.
    let (tx, rx) = mpsc::channel::<Heard>();
    let reader_ctx = ctx.clone();
    std::thread::spawn(move || {
        loop {
            let heard = match wire::recv::<FromCoordinator>(&mut rd, wire::LINE_MAX) {
                Ok(Some(m)) => Heard::Msg(m, reader_ctx.clock()),
                Ok(None) => Heard::Gone("the coordinator closed the connection".into()),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    Heard::Gone(format!("the coordinator was silent for {SILENCE:?}"))
                }
                Err(e) => Heard::Gone(format!("the coordinator's connection: {e}")),
            };
            let current = reader_ctx.current.lock().expect("not poisoned").clone();
            match (&heard, current) {
                (Heard::Msg(FromCoordinator::Stop { why }, _), Some(c)) => {
                    c.cancel(format!("the coordinator stopped the run: {why}"))
                }
                (Heard::Gone(why), Some(c)) => c.cancel(why.clone()),
                _ => {}
            }
            let gone = matches!(heard, Heard::Gone(_));
            if tx.send(heard).is_err() || gone {
                return;
            }
        }
    });
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
                let r = part(ctx, &w, &rx, *request, &hash, log);
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

/// Runs one part and reports it.
fn part(
    ctx: &Arc<Ctx>,
    w: &Writer,
    rx: &mpsc::Receiver<Heard>,
    mut req: wirebench_core::request::RunRequest,
    hash: &str,
    log: &dyn Fn(&str),
) -> std::io::Result<()> {
    let ours = auth::sha256(&serde_json::to_vec(&req).map_err(std::io::Error::other)?);
    if ours != hash {
        return say(
            w,
            &FromAgent::Failed {
                why: format!(
                    "request hash mismatch: the coordinator sent {hash}, this agent read {ours}"
                ),
            },
        );
    }
    if let Some(dir) = &ctx.opts.results {
        req.results = Some(dir.clone());
    }
    let cancel = Cancel::new();
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
    let opts = SessionOptions::of(&req, ctx.opts.credentials.clone());
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
