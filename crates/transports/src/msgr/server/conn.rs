//! Serving one connection: the handshake, then echo, one-way, stream, or
//! raw request/response. Garbage or an oversize frame closes this
//! connection only, with a log line; the server goes on.

use super::faults::Faults;
use super::shared::{ConnConfig, ConnStats, StatsRegistry, bump, log};
use crate::msgr::frame::{
    self, FLAG_VERIFY, HEADER_LEN, HELLO_LEN, Header, Hello, Kind, Status, VERSION, WRITE_CHUNK,
    Welcome,
};
use crate::msgr::stream::{FrameBuf, ReadHalf, Stream, WriteHalf};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wirebench_core::spec::MsgrMode as Mode;
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
        Some((req, resp)) => serve_raw(&mut r, &mut w, req, resp, &stats).await,
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
    match mode {
        Mode::Echo if cfg.faults.is_some() => {
            let faults = cfg.faults.as_deref().expect("checked");
            let (size, resp) = (hello.size as usize, hello.response_size as usize);
            echo_with_faults(r, w, cfg.max_frame, size, resp, verify, faults, stats).await
        }
        Mode::Echo => {
            echo(
                r,
                w,
                cfg.max_frame,
                hello.size as usize,
                hello.response_size as usize,
                verify,
                stats,
            )
            .await
        }
        Mode::Oneway => drain(r, cfg.max_frame, hello.size as usize, verify, stats).await,
        Mode::Stream => stream(w, hello.size as usize, verify, stats).await,
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

async fn echo(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    max_frame: u64,
    size: usize,
    resp: usize,
    verify: bool,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut fb = FrameBuf::with_capacity((64 << 10).max(2 * (HEADER_LEN + size)));
    let mut out: Vec<u8> = Vec::with_capacity((64 << 10).max(2 * (HEADER_LEN + resp)));
    // Trace ids: connections in the order this server accepted them.
    static NEXT_CONN: AtomicU64 = AtomicU64::new(0);
    let trace_base = NEXT_CONN.fetch_add(1, Ordering::Relaxed) << 40;
    let mut traced: Vec<u64> = Vec::new();
    loop {
        let n = fb.fill(r).await?;
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
            respond(&mut out, h.seq, body, resp, verify);
            if let Some(id) = id {
                trace::record("reply queued", id);
                traced.push(id);
            }
            k += 1;
            if out.len() >= WRITE_CHUNK {
                w.write_all(&out).await?;
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
            w.write_all(&out).await?;
            bump(&stats.frames_out, k);
            bump(&stats.bytes_out, out.len() as u64);
            out.clear();
            end_traced(&mut traced);
        }
    }
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
    faults: &Faults,
    stats: &ConnStats,
) -> Result<(), End> {
    let _serving = faults.serving();
    // Bounded: a reader far ahead of the departures waits (backpressure).
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(Instant, Vec<u8>)>(1024);
    let outstanding = AtomicU64::new(0);
    let reader = async {
        let tx = tx;
        let mut fb = FrameBuf::with_capacity((64 << 10).max(2 * (HEADER_LEN + size)));
        loop {
            let n = fb.fill(r).await?;
            if n == 0 {
                return Ok(());
            }
            let now = Instant::now();
            bump(&stats.bytes_in, n as u64);
            while let Some((h, payload)) = fb.next_frame(max_frame).map_err(refused)? {
                let body = &fb.bytes()[payload];
                check_frame(&h, body, Kind::Request, verify)?;
                let mut out = Vec::with_capacity(HEADER_LEN + resp);
                respond(&mut out, h.seq, body, resp, verify);
                bump(&stats.frames_in, 1);
                let o = outstanding.fetch_add(1, Ordering::Relaxed) + 1;
                if o > stats.max_outstanding.load(Ordering::Relaxed) {
                    stats.max_outstanding.store(o, Ordering::Relaxed);
                }
                if tx.send((faults.departure(now), out)).await.is_err() {
                    return Ok(()); // the writer is gone: the connection is
                }
            }
        }
    };
    let writer = async {
        let mut timer = PreciseTimer::new()?;
        let mut last = Instant::now();
        while let Some((due, out)) = rx.recv().await {
            // Responses leave in order.
            last = last.max(due);
            timer.sleep_until(last).await?;
            w.write_all(&out).await?;
            outstanding.fetch_sub(1, Ordering::Relaxed);
            bump(&stats.frames_out, 1);
            bump(&stats.bytes_out, out.len() as u64);
        }
        Ok::<(), End>(())
    };
    let (a, b) = tokio::join!(reader, writer);
    a.and(b)
}

async fn drain(
    r: &mut ReadHalf,
    max_frame: u64,
    size: usize,
    verify: bool,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut fb = FrameBuf::with_capacity((256 << 10).max(2 * (HEADER_LEN + size)));
    loop {
        let n = fb.fill(r).await?;
        if n == 0 {
            return Ok(());
        }
        bump(&stats.bytes_in, n as u64);
        let mut k = 0;
        while let Some((h, payload)) = fb.next_frame(max_frame).map_err(refused)? {
            check_frame(&h, &fb.bytes()[payload], Kind::OneWay, verify)?;
            k += 1;
        }
        bump(&stats.frames_in, k);
    }
}

async fn stream(
    w: &mut WriteHalf,
    size: usize,
    verify: bool,
    stats: &ConnStats,
) -> Result<(), End> {
    let frame_len = HEADER_LEN + size;
    // Several frames per write, about 256 KiB, as a streaming sender would.
    let per_write = ((256 << 10) / frame_len).max(1);
    let mut buf = vec![0u8; per_write * frame_len];
    let mut seq = 0u64;
    loop {
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
            seq += 1;
        }
        w.write_all(&buf).await?;
        bump(&stats.frames_out, per_write as u64);
        bump(&stats.bytes_out, buf.len() as u64);
    }
}

async fn serve_raw(
    r: &mut ReadHalf,
    w: &mut WriteHalf,
    req: usize,
    resp: usize,
    stats: &ConnStats,
) -> Result<(), End> {
    let mut buf = vec![0u8; 64 << 10];
    let mut out: Vec<u8> = Vec::new();
    let mut partial = 0usize;
    loop {
        let n = r.read(&mut buf).await?;
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
            out.resize(left.min(WRITE_CHUNK.max(resp)), 0);
            while left > 0 {
                let n = left.min(out.len());
                w.write_all(&out[..n]).await?;
                left -= n;
            }
            bump(&stats.frames_out, k as u64);
            bump(&stats.bytes_out, (k * resp) as u64);
        }
    }
}
