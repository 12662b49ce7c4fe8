//! Serving one connection: the handshake, then echo, one-way, stream, or
//! raw request/response. Garbage or an oversize frame closes this
//! connection only, with a log line; the server goes on.
//!
//! What a peer can make a connection hold is bounded whatever it sends:
//! the receive buffer grows only as bytes arrive (one frame, at most
//! `--max-frame`), large responses are written in pieces, and responses
//! held back by injected faults are queued by their bytes
//! ([`QUEUE_BYTES`]). A connection that makes no progress for the idle
//! timeout, or leaves a frame unfinished that long, is closed.

use super::faults::Faults;
use super::shared::{ConnConfig, ConnStats, StatsRegistry, bump, log};
use crate::msgr::frame::{
    self, FLAG_VERIFY, HEADER_LEN, HELLO_LEN, Header, Hello, Kind, Pattern, Status, VERSION,
    WRITE_CHUNK, Welcome,
};
use crate::msgr::stream::{FrameBuf, ReadHalf, Stream, WriteHalf};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wirebench_core::spec::MsgrMode as Mode;
use wirebench_core::units::Dur;
use wirebench_load::os::PreciseTimer;
use wirebench_trace as trace;

enum End {
    /// The peer broke the protocol: logged and counted as refused.
    Refused(String),
    Io(io::Error),
}

impl From<io::Error> for End {
    fn from(e: io::Error) -> End {
        End::Io(e)
    }
}

/// Serves one connection until the peer closes it or breaks the protocol.
pub async fn serve_conn(
    stream: Stream,
    peer: String,
    cfg: Arc<ConnConfig>,
    registry: Arc<StatsRegistry>,
) {
    let (mut r, mut w) = stream.into_split();
    let stats = registry.register();
    let res = match cfg.raw {
        Some((req, resp)) => serve_raw(&mut r, &mut w, req, resp, cfg.idle_timeout, &stats).await,
        None => serve_msgr(&mut r, &mut w, &cfg, &stats).await,
    };
    registry.retire(&stats);
    match res {
        Ok(()) => {}
        Err(End::Refused(why)) => {
            registry.refused.fetch_add(1, Ordering::Relaxed);
            log(&peer, &format!("closing the connection: {why}"));
        }
        Err(End::Io(e)) => match e.kind() {
            io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::UnexpectedEof => {}
            _ => log(&peer, &format!("connection error: {e}")),
        },
    }
}

async fn serve_msgr(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    cfg: &ConnConfig,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut hb = [0u8; HELLO_LEN];
    match tokio::time::timeout(cfg.handshake_timeout, r.read_exact(&mut hb)).await {
        Err(_) => {
            return Err(End::Refused(format!(
                "no msgr handshake within {:?}",
                cfg.handshake_timeout
            )));
        }
        Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
            return Err(End::Refused(
                "closed before completing the msgr handshake".into(),
            ));
        }
        Ok(r) => r?,
    };
    let Some(hello) = Hello::decode(&hb) else {
        return Err(End::Refused(format!(
            "not a msgr peer: it opened with {:02x?}",
            &hb[..8]
        )));
    };
    let welcome = |status: Status| {
        Welcome {
            version: VERSION,
            status: status as u8,
            max_frame: cfg.max_frame.min(u32::MAX as u64) as u32,
        }
        .encode()
    };
    if hello.version != VERSION {
        w.write_all(&welcome(Status::UnsupportedVersion)).await?;
        return Err(End::Refused(format!(
            "speaks msgr version {}, this server version {VERSION}",
            hello.version
        )));
    }
    let Some(mode) = frame::mode_from_code(hello.mode) else {
        w.write_all(&welcome(Status::BadMode)).await?;
        return Err(End::Refused(format!(
            "asked for unknown mode {}",
            hello.mode
        )));
    };
    if u64::from(hello.size) > cfg.max_frame || u64::from(hello.response_size) > cfg.max_frame {
        w.write_all(&welcome(Status::FrameTooLarge)).await?;
        return Err(End::Refused(format!(
            "asked for frames of {} / {} bytes, above --max-frame {}",
            hello.size, hello.response_size, cfg.max_frame
        )));
    }
    w.write_all(&welcome(Status::Ok)).await?;
    let verify = hello.flags & FLAG_VERIFY != 0;
    let (size, resp, idle) = (
        hello.size as usize,
        hello.response_size as usize,
        cfg.idle_timeout,
    );
    match mode {
        Mode::Echo if cfg.faults.is_some() => {
            let faults = cfg.faults.as_deref().expect("checked");
            echo_with_faults(r, w, cfg.max_frame, size, resp, verify, idle, faults, stats).await
        }
        Mode::Echo => echo(r, w, cfg.max_frame, size, resp, verify, idle, stats).await,
        Mode::Oneway => drain(r, cfg.max_frame, size, verify, idle, stats).await,
        Mode::Stream => stream(w, size, verify, idle, stats).await,
        Mode::Rr => unreachable!("mode_from_code gives modes with a handshake only"),
    }
}

/// Checks that a frame is of the kind this mode expects and, when
/// verifying, that its payload holds its sequence number's pattern.
fn check_frame(h: &Header, body: &[u8], expected: Kind, verify: bool) -> Result<(), End> {
    if h.kind != expected {
        return Err(End::Refused(format!(
            "expected a {expected:?} frame, got {:?}",
            h.kind
        )));
    }
    if verify && !frame::check_pattern(h.seq, body) {
        return Err(End::Refused(format!(
            "payload of {expected:?} frame #{} is corrupt",
            h.seq
        )));
    }
    Ok(())
}

fn refused(e: frame::FrameError) -> End {
    End::Refused(e.to_string())
}

/// Responses held back by injected faults may hold at most this many bytes
/// per connection (or one response, if larger); each counts at least
/// 64 bytes.
pub const QUEUE_BYTES: usize = 1 << 20;
const ENTRY_COST: usize = 64;

/// Closes a connection that makes no progress: nothing received or sent
/// for the idle timeout while the server owes nothing, or a frame started
/// and not finished within it. It looks every quarter of the timeout, so a
/// connection closes between 1 and 1.25 timeouts after its last progress.
struct Watchdog {
    idle: Duration,
    tick: Pin<Box<tokio::time::Sleep>>,
    bytes: u64,
    frames: u64,
    bytes_at: Instant,
    frame_at: Instant,
}

impl Watchdog {
    fn new(idle: Option<Duration>) -> Option<Watchdog> {
        let idle = idle?;
        let now = Instant::now();
        Some(Watchdog {
            idle,
            tick: Box::pin(tokio::time::sleep(idle / 4)),
            bytes: 0,
            frames: 0,
            bytes_at: now,
            frame_at: now,
        })
    }

    /// Waits until the connection is to be closed, and says why.
    /// `partial`: a frame has started; `owed`: responses are held back.
    async fn expired(
        this: &mut Option<Watchdog>,
        stats: &ConnStats,
        partial: bool,
        owed: &(dyn Fn() -> bool + Sync),
    ) -> End {
        let Some(wd) = this else {
            return std::future::pending().await;
        };
        loop {
            wd.tick.as_mut().await;
            let now = Instant::now();
            let bytes =
                stats.bytes_in.load(Ordering::Relaxed) + stats.bytes_out.load(Ordering::Relaxed);
            let frames = stats.frames_in.load(Ordering::Relaxed);
            if bytes != wd.bytes || owed() {
                wd.bytes = bytes;
                wd.bytes_at = now;
            }
            if frames != wd.frames || !partial {
                wd.frames = frames;
                wd.frame_at = now;
            }
            let t = Dur(wd.idle);
            if now - wd.bytes_at >= wd.idle {
                return End::Refused(format!(
                    "idle: nothing sent or received for {t} (--idle-timeout)"
                ));
            }
            if now - wd.frame_at >= wd.idle {
                return End::Refused(format!(
                    "a frame started and is not finished after {t} (--idle-timeout)"
                ));
            }
            wd.tick.as_mut().reset((now + wd.idle / 4).into());
        }
    }
}

/// Reads once into `fb`, unless the watchdog closes the connection first.
async fn fill(
    fb: &mut FrameBuf,
    r: &mut ReadHalf,
    wd: &mut Option<Watchdog>,
    stats: &ConnStats,
    owed: &(dyn Fn() -> bool + Sync),
) -> Result<usize, End> {
    let partial = fb.pending() > 0;
    tokio::select! {
        n = fb.fill(r) => Ok(n?),
        why = Watchdog::expired(wd, stats, partial, owed) => Err(why),
    }
}

/// Writes all of `buf`; a peer that takes none of it for `idle` is closed.
async fn send(w: &mut WriteHalf, mut buf: &[u8], idle: Option<Duration>) -> Result<(), End> {
    while !buf.is_empty() {
        let n = match idle {
            Some(t) => tokio::time::timeout(t, w.write(buf)).await.map_err(|_| {
                End::Refused(format!(
                    "the peer read nothing for {} (--idle-timeout)",
                    Dur(t)
                ))
            })??,
            None => w.write(buf).await?,
        };
        if n == 0 {
            return Err(End::Io(io::ErrorKind::WriteZero.into()));
        }
        buf = &buf[n..];
    }
    Ok(())
}

/// Writes one frame of `len` bytes in pieces of at most [`WRITE_CHUNK`]:
/// `body` when given (an echo), else zeros or the pattern of `seq`.
/// `scratch` is the piece buffer, kept between calls.
#[allow(clippy::too_many_arguments)]
async fn send_large(
    w: &mut WriteHalf,
    kind: Kind,
    seq: u64,
    len: usize,
    body: Option<&[u8]>,
    verify: bool,
    scratch: &mut Vec<u8>,
    idle: Option<Duration>,
) -> Result<(), End> {
    let mut head = [0u8; HEADER_LEN];
    Header {
        kind,
        flags: 0,
        len: len as u32,
        seq,
    }
    .encode_into(&mut head);
    send(w, &head, idle).await?;
    if let Some(body) = body {
        return send(w, body, idle).await;
    }
    scratch.resize(WRITE_CHUNK.min(len), 0);
    let mut pattern = Pattern::new(seq);
    let mut left = len;
    while left > 0 {
        let n = left.min(scratch.len());
        if verify {
            pattern.fill(&mut scratch[..n]);
        }
        send(w, &scratch[..n], idle).await?;
        left -= n;
    }
    Ok(())
}

/// Whether a response is written in pieces rather than built whole.
fn is_large(len: usize) -> bool {
    HEADER_LEN + len > WRITE_CHUNK
}

#[allow(clippy::too_many_arguments)]
async fn echo(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    max_frame: u64,
    size: usize,
    resp: usize,
    verify: bool,
    idle: Option<Duration>,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut fb = FrameBuf::with_capacity((64 << 10).max(HEADER_LEN + size.min(64 << 10)));
    let mut out: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut scratch = Vec::new();
    let mut wd = Watchdog::new(idle);
    let trace_base = next_trace_base();
    let mut traced: Vec<u64> = Vec::new();
    loop {
        let n = fill(&mut fb, r, &mut wd, stats, &|| false).await?;
        if n == 0 {
            return Ok(());
        }
        bump(&stats.bytes_in, n as u64);
        let mut k = 0u64;
        while let Some((h, payload)) = fb.next_frame(max_frame).map_err(refused)? {
            let id = trace::sampled(h.seq).then_some(trace_base | h.seq);
            if let Some(id) = id {
                trace::record(trace::BEGIN, id);
            }
            let body = &fb.bytes()[payload];
            check_frame(&h, body, Kind::Request, verify)?;
            if let Some(id) = id {
                trace::record("request parsed", id);
            }
            k += 1;
            if is_large(resp) {
                // Whatever was built before goes first, then this response
                // in pieces: never a whole large response in memory.
                send(w, &out, idle).await?;
                bump(&stats.bytes_out, out.len() as u64);
                out.clear();
                let echoed = (body.len() == resp).then_some(body);
                send_large(
                    w,
                    Kind::Response,
                    h.seq,
                    resp,
                    echoed,
                    verify,
                    &mut scratch,
                    idle,
                )
                .await?;
                bump(&stats.bytes_out, (HEADER_LEN + resp) as u64);
                if let Some(id) = id {
                    traced.push(id);
                }
                end_traced(&mut traced);
                continue;
            }
            respond(&mut out, h.seq, body, resp, verify);
            if let Some(id) = id {
                trace::record("reply queued", id);
                traced.push(id);
            }
            if out.len() >= WRITE_CHUNK {
                send(w, &out, idle).await?;
                bump(&stats.bytes_out, out.len() as u64);
                out.clear();
                end_traced(&mut traced);
            }
        }
        if k > 0 {
            // Everything parsed from one read is answered before the next
            // read: these are the requests outstanding at the server.
            if k > stats.max_outstanding.load(Ordering::Relaxed) {
                stats.max_outstanding.store(k, Ordering::Relaxed);
            }
            bump(&stats.frames_in, k);
            send(w, &out, idle).await?;
            bump(&stats.frames_out, k);
            bump(&stats.bytes_out, out.len() as u64);
            out.clear();
            end_traced(&mut traced);
        }
    }
}

/// Trace ids: connections in the order this server accepted them, in the
/// high bits; the sequence number below.
fn next_trace_base() -> u64 {
    static CONNS: trace::Connections = trace::Connections::new();
    CONNS.next_base()
}

/// The traced replies just written: their last events.
fn end_traced(traced: &mut Vec<u64>) {
    for &id in traced.iter() {
        trace::record("reply sent", id);
        trace::record(trace::END, id);
    }
    traced.clear();
}

/// Builds the response to one request into `out` (appended).
fn respond(out: &mut Vec<u8>, seq: u64, body: &[u8], resp: usize, verify: bool) {
    let base = out.len();
    out.resize(base + HEADER_LEN, 0);
    Header {
        kind: Kind::Response,
        flags: 0,
        len: resp as u32,
        seq,
    }
    .encode_into(&mut out[base..]);
    if body.len() == resp {
        // Echo: the payload is copied once, not zeroed first.
        out.extend_from_slice(body);
    } else {
        out.resize(base + HEADER_LEN + resp, 0);
        if verify {
            frame::fill_pattern(seq, &mut out[base + HEADER_LEN..]);
        }
    }
}

/// A response held back by injected faults until `due`. Only an echoed
/// payload is kept; any other response is made when it is written.
struct Held {
    due: Instant,
    seq: u64,
    echoed: Option<Vec<u8>>,
    /// What it counts against [`QUEUE_BYTES`].
    cost: u32,
}

/// Echo with injected faults: a reader computes each response's departure
/// time, a writer holds it until then. Both run in this connection's task.
#[allow(clippy::too_many_arguments)]
async fn echo_with_faults(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    max_frame: u64,
    size: usize,
    resp: usize,
    verify: bool,
    idle: Option<Duration>,
    faults: &Faults,
    stats: &ConnStats,
) -> Result<(), End> {
    let _serving = faults.serving();
    // Bounded in entries and in bytes: a reader far ahead of the
    // departures waits (backpressure).
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Held>(1024);
    let budget = tokio::sync::Semaphore::new(QUEUE_BYTES);
    let outstanding = AtomicU64::new(0);
    let reader = async {
        let tx = tx;
        let mut fb = FrameBuf::with_capacity((64 << 10).max(HEADER_LEN + size.min(64 << 10)));
        let mut wd = Watchdog::new(idle);
        let owed = || outstanding.load(Ordering::Relaxed) > 0;
        loop {
            let n = fill(&mut fb, r, &mut wd, stats, &owed).await?;
            if n == 0 {
                return Ok(());
            }
            let now = Instant::now();
            bump(&stats.bytes_in, n as u64);
            while let Some((h, payload)) = fb.next_frame(max_frame).map_err(refused)? {
                let body = &fb.bytes()[payload];
                check_frame(&h, body, Kind::Request, verify)?;
                let echoed = (body.len() == resp && resp > 0).then(|| body.to_vec());
                let cost =
                    (ENTRY_COST + echoed.as_ref().map_or(0, Vec::len)).min(QUEUE_BYTES) as u32;
                bump(&stats.frames_in, 1);
                let o = outstanding.fetch_add(1, Ordering::Relaxed) + 1;
                if o > stats.max_outstanding.load(Ordering::Relaxed) {
                    stats.max_outstanding.store(o, Ordering::Relaxed);
                }
                let due = faults.departure(now);
                budget
                    .acquire_many(cost)
                    .await
                    .expect("never closed")
                    .forget();
                let held = Held {
                    due,
                    seq: h.seq,
                    echoed,
                    cost,
                };
                if tx.send(held).await.is_err() {
                    return Ok(()); // the writer is gone: the connection is
                }
            }
        }
    };
    let writer = async {
        let mut timer = PreciseTimer::new()?;
        let mut last = Instant::now();
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        while let Some(held) = rx.recv().await {
            // Responses leave in order.
            last = last.max(held.due);
            timer.sleep_until(last).await?;
            if is_large(resp) {
                let (seq, echoed) = (held.seq, held.echoed.as_deref());
                send_large(
                    w,
                    Kind::Response,
                    seq,
                    resp,
                    echoed,
                    verify,
                    &mut scratch,
                    idle,
                )
                .await?;
            } else {
                out.clear();
                let body = held.echoed.as_deref().unwrap_or(&[]);
                respond(&mut out, held.seq, body, resp, verify);
                send(w, &out, idle).await?;
            }
            budget.add_permits(held.cost as usize);
            outstanding.fetch_sub(1, Ordering::Relaxed);
            bump(&stats.frames_out, 1);
            bump(&stats.bytes_out, (HEADER_LEN + resp) as u64);
        }
        Ok::<(), End>(())
    };
    // The first to fail ends the connection.
    tokio::try_join!(reader, writer).map(|_| ())
}

async fn drain(
    r: &mut ReadHalf,
    max_frame: u64,
    size: usize,
    verify: bool,
    idle: Option<Duration>,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut fb = FrameBuf::with_capacity((256 << 10).max(HEADER_LEN + size.min(256 << 10)));
    let mut wd = Watchdog::new(idle);
    let trace_base = next_trace_base();
    loop {
        let n = fill(&mut fb, r, &mut wd, stats, &|| false).await?;
        if n == 0 {
            return Ok(());
        }
        bump(&stats.bytes_in, n as u64);
        let mut k = 0;
        while let Some((h, payload)) = fb.next_frame(max_frame).map_err(refused)? {
            let id = trace::sampled(h.seq).then_some(trace_base | h.seq);
            if let Some(id) = id {
                trace::record(trace::BEGIN, id);
            }
            check_frame(&h, &fb.bytes()[payload], Kind::OneWay, verify)?;
            if let Some(id) = id {
                trace::record("request received", id);
                trace::record(trace::END, id);
            }
            k += 1;
        }
        bump(&stats.frames_in, k);
    }
}

async fn stream(
    w: &mut WriteHalf,
    size: usize,
    verify: bool,
    idle: Option<Duration>,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut seq = 0u64;
    let trace_base = next_trace_base();
    if is_large(size) {
        let mut scratch = Vec::new();
        loop {
            let id = trace::sampled(seq).then_some(trace_base | seq);
            if let Some(id) = id {
                trace::record(trace::BEGIN, id);
            }
            send_large(w, Kind::Stream, seq, size, None, verify, &mut scratch, idle).await?;
            if let Some(id) = id {
                trace::record("data sent", id);
                trace::record(trace::END, id);
            }
            seq += 1;
            bump(&stats.frames_out, 1);
            bump(&stats.bytes_out, (HEADER_LEN + size) as u64);
        }
    }
    let frame_len = HEADER_LEN + size;
    // Several frames per write, about 256 KiB, as a streaming sender would.
    let per_write = (WRITE_CHUNK / frame_len).max(1);
    let mut buf = vec![0u8; per_write * frame_len];
    loop {
        let first = seq;
        for f in buf.chunks_mut(frame_len) {
            Header {
                kind: Kind::Stream,
                flags: 0,
                len: size as u32,
                seq,
            }
            .encode_into(f);
            if verify {
                frame::fill_pattern(seq, &mut f[HEADER_LEN..]);
            }
            if trace::sampled(seq) {
                trace::record(trace::BEGIN, trace_base | seq);
            }
            seq += 1;
        }
        send(w, &buf, idle).await?;
        if trace::enabled() {
            for s in first..seq {
                if trace::sampled(s) {
                    trace::record("data sent", trace_base | s);
                    trace::record(trace::END, trace_base | s);
                }
            }
        }
        bump(&stats.frames_out, per_write as u64);
        bump(&stats.bytes_out, buf.len() as u64);
    }
}

async fn serve_raw(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    req: usize,
    resp: usize,
    idle: Option<Duration>,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut fb = FrameBuf::with_capacity(64 << 10);
    let mut wd = Watchdog::new(idle);
    let mut out: Vec<u8> = Vec::new();
    let mut partial = 0usize;
    loop {
        // Raw requests have no frames: the buffer is emptied after each read.
        let n = fill(&mut fb, r, &mut wd, stats, &|| false).await?;
        fb.consume_all();
        if n == 0 {
            return Ok(());
        }
        bump(&stats.bytes_in, n as u64);
        partial += n;
        let k = partial / req;
        partial %= req;
        if k > 0 {
            if k as u64 > stats.max_outstanding.load(Ordering::Relaxed) {
                stats.max_outstanding.store(k as u64, Ordering::Relaxed);
            }
            bump(&stats.frames_in, k as u64);
            let mut left = k * resp;
            out.resize(left.min(WRITE_CHUNK), 0);
            while left > 0 {
                let n = left.min(out.len());
                send(w, &out[..n], idle).await?;
                left -= n;
            }
            bump(&stats.frames_out, k as u64);
            bump(&stats.bytes_out, (k * resp) as u64);
        }
    }
}
