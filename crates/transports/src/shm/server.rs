//! The shm reference server: a thread accepts sessions on the control
//! socket; each session gets its channel and one thread pinned to one of
//! the server's CPUs (round-robin), which echoes (sync, async), drains
//! (nores) or writes (stream) until its peer goes or the server stops.

use super::chan::{Peer, Rx, Tx, socket_channel};
use super::proto::{Hello, PREFIX, PROTOCOL_VERSION, Welcome, check_ring};
use super::ring::{self, KIND_DATA, KIND_REQUEST, KIND_RESPONSE, Producer, Rec, Shm};
use super::wake::{Wait, Waiter};
use crate::sys::{self, fdpass};
use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use wirebench_core::result::ServerStats;
use wirebench_core::spec::{Channel, ShmMode as Mode};
use wirebench_trace as trace;

/// Largest message over a descriptor channel (rings have their own bound).
pub use wirebench_core::limits::SHM_MAX_FD_MESSAGE as MAX_FD_MESSAGE;

#[derive(Debug, Clone)]
pub struct ShmServerConfig {
    pub socket: PathBuf,
    /// Session `k` runs on `cpus[k % len]`; empty: not pinned.
    pub cpus: Vec<usize>,
}

#[derive(Default)]
struct Stats {
    sessions: AtomicU64,
    refused: AtomicU64,
    msgs_in: AtomicU64,
    msgs_out: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    max_batch: AtomicU64,
}

pub struct RunningShmServer {
    pub socket: PathBuf,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
}

impl RunningShmServer {
    /// Stops accepting, ends every session, removes the socket file, and
    /// returns the counters.
    pub fn shutdown(mut self) -> ServerStats {
        self.stop_and_join();
        let s = &self.stats;
        ServerStats {
            conns_accepted: s.sessions.load(Ordering::Relaxed),
            conns_refused: s.refused.load(Ordering::Relaxed),
            conns_over_cap: 0,
            frames_in: s.msgs_in.load(Ordering::Relaxed),
            frames_out: s.msgs_out.load(Ordering::Relaxed),
            bytes_in: s.bytes_in.load(Ordering::Relaxed),
            bytes_out: s.bytes_out.load(Ordering::Relaxed),
            max_outstanding_per_conn: s.max_batch.load(Ordering::Relaxed),
        }
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for RunningShmServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds the control socket and starts accepting sessions.
pub fn start(cfg: &ShmServerConfig) -> io::Result<RunningShmServer> {
    // A file of ours named with our own PID can only be a dead namesake's.
    let ours = format!("{PREFIX}{}.sock", std::process::id());
    if cfg.socket.file_name().is_some_and(|n| n == ours.as_str()) {
        let _ = std::fs::remove_file(&cfg.socket);
    }
    let listener = UnixListener::bind(&cfg.socket).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot listen on {}: {e}", cfg.socket.display()),
        )
    })?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Stats::default());
    let accept = {
        let (stop, stats, cpus) = (stop.clone(), stats.clone(), cfg.cpus.clone());
        std::thread::Builder::new()
            .name("wb-shm-accept".into())
            .spawn(move || accept_loop(listener, cpus, stop, stats))?
    };
    Ok(RunningShmServer {
        socket: cfg.socket.clone(),
        stop,
        accept: Some(accept),
        stats,
    })
}

fn accept_loop(listener: UnixListener, cpus: Vec<usize>, stop: Arc<AtomicBool>, stats: Arc<Stats>) {
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    let mut next: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                let k = next;
                next += 1;
                let cpu = (!cpus.is_empty()).then(|| cpus[k as usize % cpus.len()]);
                let (stop, stats) = (stop.clone(), stats.clone());
                let h = std::thread::Builder::new()
                    .name(format!("wb-shm-{k}"))
                    .spawn(move || session(s, k, cpu, &stop, &stats));
                match h {
                    Ok(h) => sessions.push(h),
                    Err(e) => eprintln!("wirebench serve: cannot start session {k}: {e}"),
                }
                sessions.retain(|h| !h.is_finished());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let _ = sys::wait_readable(listener.as_fd(), Duration::from_millis(50));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("wirebench serve: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for h in sessions {
        let _ = h.join();
    }
}

fn refuse(s: &UnixStream, stats: &Stats, why: String) {
    stats.refused.fetch_add(1, Ordering::Relaxed);
    let w = Welcome {
        ok: false,
        error: Some(why),
        session: 0,
        server_pid: std::process::id(),
    };
    let _ = fdpass::send(s, &serde_json::to_vec(&w).expect("serializable"), &[]);
}

fn read_hello(s: &UnixStream) -> io::Result<Hello> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new(s.take(4096)).read_line(&mut line)?;
    serde_json::from_str(&line)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad hello: {e}")))
}

fn check_hello(h: &Hello) -> Result<(), String> {
    if h.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} asked, this server speaks {PROTOCOL_VERSION}",
            h.version
        ));
    }
    if h.size == 0 {
        return Err("messages of 0 bytes".into());
    }
    match h.channel {
        Channel::Shm => check_ring(h.ring, h.size),
        _ if h.size > MAX_FD_MESSAGE => Err(format!(
            "messages of {} bytes: above {MAX_FD_MESSAGE}",
            h.size
        )),
        _ => Ok(()),
    }
}

/// The server's ends of a new session's channel, the client's descriptors
/// to send, and the shared memory (whose descriptor is sent too).
type NewChannel = (Tx, Rx, Vec<OwnedFd>, Option<Arc<Shm>>);

fn make_channel(h: &Hello, k: u64, peer: &Arc<Peer>) -> io::Result<NewChannel> {
    let waiter = Waiter { wait: h.wait };
    let max = h.size as usize;
    Ok(match h.channel {
        Channel::Shm => {
            let notify = h.wait != Wait::Spin;
            let shm = Shm::create(&format!("{PREFIX}{}-{k}", std::process::id()), h.ring)?;
            let tx = Tx::Ring {
                p: Producer::new(shm.clone(), ring::RESPONSES, notify),
                waiter,
                peer: peer.clone(),
            };
            let rx = Rx::Ring {
                c: ring::Consumer::new(shm.clone(), ring::REQUESTS, notify),
                waiter,
                peer: peer.clone(),
                scratch: vec![0; max],
            };
            (tx, rx, vec![], Some(shm))
        }
        Channel::Pipe => {
            let (req_r, req_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let (resp_r, resp_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let tx = Tx::Fd {
                w: resp_w.into(),
                buf: Vec::new(),
            };
            let rx = Rx::fd(req_r.into(), true, max);
            (tx, rx, vec![req_w, resp_r], None)
        }
        Channel::Unix => {
            let (mine, theirs) = UnixStream::pair()?;
            let (tx, rx) = socket_channel(mine.into(), max)?;
            (tx, rx, vec![theirs.into()], None)
        }
        Channel::Tcp => {
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            let theirs = std::net::TcpStream::connect(l.local_addr()?)?;
            let (mine, _) = l.accept()?;
            for s in [&mine, &theirs] {
                s.set_nodelay(true)?;
            }
            let (tx, rx) = socket_channel(mine.into(), max)?;
            (tx, rx, vec![theirs.into()], None)
        }
    })
}

fn session(s: UnixStream, k: u64, cpu: Option<usize>, stop: &AtomicBool, stats: &Stats) {
    let hello = match read_hello(&s) {
        Ok(h) => h,
        Err(e) => return refuse(&s, stats, e.to_string()),
    };
    if let Err(why) = check_hello(&hello) {
        return refuse(&s, stats, why);
    }
    let peer = match s.try_clone() {
        Ok(c) => Arc::new(Peer(c)),
        Err(e) => return refuse(&s, stats, e.to_string()),
    };
    let (mut tx, mut rx, theirs, shm) = match make_channel(&hello, k, &peer) {
        Ok(c) => c,
        Err(e) => return refuse(&s, stats, format!("cannot make the channel: {e}")),
    };
    let w = Welcome {
        ok: true,
        error: None,
        session: k,
        server_pid: std::process::id(),
    };
    let mut fds: Vec<BorrowedFd<'_>> = theirs.iter().map(|f| f.as_fd()).collect();
    if let Some(shm) = &shm {
        fds.push(shm.fd());
    }
    if let Err(e) = fdpass::send(&s, &serde_json::to_vec(&w).expect("serializable"), &fds) {
        eprintln!("wirebench serve: session {k}: cannot answer: {e}");
        return;
    }
    drop(fds);
    drop(theirs);
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    if let Some(cpu) = cpu
        && let Err(e) = sys::pin_current_thread(&[cpu])
    {
        eprintln!("wirebench serve: session {k}: cannot pin to CPU {cpu}: {e}");
    }
    // Trace ids: the session in the high bits (the client's carry it too).
    let trace_base = k << 40;
    let r = match hello.mode {
        Mode::Stream => write_stream(&mut tx, &hello, trace_base, stop, stats),
        Mode::Nores => drain(&mut rx, &hello, trace_base, stop, stats),
        Mode::Sync | Mode::Async => echo(&mut rx, &mut tx, &hello, trace_base, stop, stats),
    };
    if let Err(e) = r
        && e.kind() != io::ErrorKind::BrokenPipe
        && e.kind() != io::ErrorKind::ConnectionReset
    {
        eprintln!("wirebench serve: session {k} ended: {e}");
    }
}

fn check_request(rec: &Rec, payload: &[u8], h: &Hello, expect: &mut u64) -> io::Result<()> {
    let bad = |why: String| Err(io::Error::new(io::ErrorKind::InvalidData, why));
    if rec.kind != KIND_REQUEST || rec.len as u64 != h.size {
        return bad(format!(
            "unexpected record: kind {}, {} bytes (expected a request of {})",
            rec.kind, rec.len, h.size
        ));
    }
    if rec.seq != *expect {
        return bad(format!(
            "request {} out of order (expected {})",
            rec.seq, *expect
        ));
    }
    *expect += 1;
    if h.verify && !super::proto::check_pattern(rec.seq, payload) {
        return bad(format!("request {}: payload corrupt", rec.seq));
    }
    Ok(())
}

/// The most records handled between two publications.
const BATCH: usize = 256;

/// The traced replies just published: their last events.
fn end_traced(traced: &mut Vec<u64>) {
    for &id in traced.iter() {
        trace::record("reply sent", id);
        trace::record(trace::END, id);
    }
    traced.clear();
}

fn echo(
    rx: &mut Rx,
    tx: &mut Tx,
    h: &Hello,
    trace_base: u64,
    stop: &AtomicBool,
    stats: &Stats,
) -> io::Result<()> {
    let mut expect = 0u64;
    let mut traced: Vec<u64> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let mut out_err = Ok(());
        let n = rx.recv(BATCH, |rec, payload| {
            let id = trace::sampled(rec.seq).then_some(trace_base | rec.seq);
            if let Some(id) = id {
                trace::record(trace::BEGIN, id);
            }
            check_request(rec, payload, h, &mut expect)?;
            if let Some(id) = id {
                trace::record("request received", id);
            }
            let resp = Rec {
                kind: KIND_RESPONSE,
                ..*rec
            };
            while !tx.try_write(&resp, payload) {
                tx.flush()?;
                end_traced(&mut traced);
                if stop.load(Ordering::Relaxed) {
                    out_err = Err(io::Error::new(io::ErrorKind::BrokenPipe, "stopping"));
                    return Ok(());
                }
                tx.wait_room(h.size)?;
            }
            if let Some(id) = id {
                trace::record("reply written", id);
                traced.push(id);
            }
            Ok(())
        })?;
        out_err?;
        tx.flush()?;
        end_traced(&mut traced);
        if n > 0 {
            let bytes = n as u64 * h.size;
            stats.msgs_in.fetch_add(n as u64, Ordering::Relaxed);
            stats.msgs_out.fetch_add(n as u64, Ordering::Relaxed);
            stats.bytes_in.fetch_add(bytes, Ordering::Relaxed);
            stats.bytes_out.fetch_add(bytes, Ordering::Relaxed);
            stats.max_batch.fetch_max(n as u64, Ordering::Relaxed);
        }
    }
    Ok(())
}

fn drain(
    rx: &mut Rx,
    h: &Hello,
    trace_base: u64,
    stop: &AtomicBool,
    stats: &Stats,
) -> io::Result<()> {
    let mut expect = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let n = rx.recv(BATCH, |rec, payload| {
            let id = trace::sampled(rec.seq).then_some(trace_base | rec.seq);
            if let Some(id) = id {
                trace::record(trace::BEGIN, id);
            }
            check_request(rec, payload, h, &mut expect)?;
            if let Some(id) = id {
                trace::record("request received", id);
                trace::record(trace::END, id);
            }
            Ok(())
        })?;
        if n > 0 {
            stats.msgs_in.fetch_add(n as u64, Ordering::Relaxed);
            stats
                .bytes_in
                .fetch_add(n as u64 * h.size, Ordering::Relaxed);
        }
    }
    Ok(())
}

fn write_stream(
    tx: &mut Tx,
    h: &Hello,
    trace_base: u64,
    stop: &AtomicBool,
    stats: &Stats,
) -> io::Result<()> {
    let mut payload = vec![0u8; h.size as usize];
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut n = 0u64;
        loop {
            if h.verify {
                super::proto::fill_pattern(seq, &mut payload);
            }
            let rec = Rec {
                len: h.size as u32,
                kind: KIND_DATA,
                seq,
                t0: 0,
                t1: 0,
            };
            if !tx.try_write(&rec, &payload) {
                break;
            }
            if trace::sampled(seq) {
                trace::record(trace::BEGIN, trace_base | seq);
            }
            seq += 1;
            n += 1;
            if n as usize >= BATCH {
                break;
            }
        }
        tx.flush()?;
        if trace::enabled() {
            for seq in seq - n..seq {
                if trace::sampled(seq) {
                    trace::record("data sent", trace_base | seq);
                    trace::record(trace::END, trace_base | seq);
                }
            }
        }
        if n == 0 {
            tx.wait_room(h.size)?;
        } else {
            stats.msgs_out.fetch_add(n, Ordering::Relaxed);
            stats.bytes_out.fetch_add(n * h.size, Ordering::Relaxed);
        }
    }
    Ok(())
}
