//! The agent protocol's messages: one JSON object per line over TCP, each
//! read with a size bound and a timeout, so that no peer (a port scanner, a
//! stalled or hostile coordinator) holds an agent's memory or thread.

use crate::auth::BuildId;
use crate::events::LiveSecond;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use wirebench_core::request::RunRequest;
use wirebench_core::result::{Interval, RunResult};

/// The protocol's version: both sides must speak the same.
pub const PROTOCOL: u32 = 1;

/// The longest line before the handshake is done.
pub const HANDSHAKE_LINE_MAX: usize = 64 << 10;
/// The longest line an agent sends after it (a whole run's result, its
/// intervals and their histograms included: a few KiB per second of the
/// run).
pub const LINE_MAX: usize = 256 << 20;
/// The longest line a coordinator sends after it: its largest message is a
/// part's request, a few KiB.
pub const COORDINATOR_LINE_MAX: usize = 1 << 20;
/// The longest message of an agent that is not its result (a second with
/// its histograms is a few KiB; a note a line).
pub const AGENT_MESSAGE_MAX: usize = 1 << 20;
/// The most a coordinator keeps and prints of an agent's note or reason.
pub const AGENT_TEXT_MAX: usize = 1 << 10;
/// The most notes a coordinator prints of one agent's part.
pub const AGENT_NOTES_MAX: usize = 100;

/// What an agent says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromAgent {
    /// First, on connect: its protocol, a challenge, and whether it wants
    /// the token proven.
    Hello {
        protocol: u32,
        nonce: String,
        token: bool,
    },
    /// The coordinator is accepted: the agent proves the token in turn.
    Welcome {
        proof: Option<String>,
        build: BuildId,
        /// Its index in a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
    },
    /// Refused (a wrong token, another build, a run already going...).
    Refused { why: String },
    /// A clock probe answered: `t1` echoed, `t2` when it arrived and `t3`
    /// when the answer left, on the agent's clock.
    Probe { t1: u64, t2: u64, t3: u64 },
    /// A line of the run's progress (prepare, cleanup).
    Note { text: String },
    /// Every connection of its part is ready.
    Ready { connect_ns: u64 },
    /// A second of its part is over.
    Interval {
        index: usize,
        interval: Box<Interval>,
        /// What a run does not keep of its seconds but live metrics show.
        #[serde(default)]
        live: LiveSecond,
    },
    /// Alive (every second while it prepares or runs).
    Beat,
    /// Its part is over: the result, also kept in `dir` on the agent.
    Done { result: Box<RunResult>, dir: String },
    /// Its part did not run.
    Failed { why: String },
}

/// What a coordinator says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromCoordinator {
    /// The answer to `Hello`: the token proven over the agent's challenge,
    /// a challenge of its own, and what it runs.
    Auth {
        protocol: u32,
        proof: Option<String>,
        nonce: String,
        build: BuildId,
    },
    /// A clock probe, sent at `t1` on the coordinator's clock.
    Probe { t1: u64 },
    /// Its part of a run; `hash` is the request's (sha256 of its JSON).
    Prepare {
        request: Box<RunRequest>,
        hash: String,
    },
    /// Start the load at this instant of the agent's clock.
    Start { at_ns: u64 },
    /// Alive (every second while a run goes on).
    Beat,
    /// Stop the load now (Ctrl-C, or another agent failed).
    Stop { why: String },
}

/// `msg` as one line.
pub fn line<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes `msg` as one line.
pub fn send<T: Serialize>(w: &mut impl Write, msg: &T) -> io::Result<()> {
    w.write_all(&line(msg)?)?;
    w.flush()
}

/// Parses one line (with or without its newline).
pub fn parse<T: for<'de> Deserialize<'de>>(line: &[u8]) -> io::Result<T> {
    serde_json::from_slice(line).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a message of wirebench's agent protocol {PROTOCOL}: {e}"),
        )
    })
}

/// Reads one line of at most `max` bytes and parses it; `Ok(None)` at the
/// end of the stream. A longer line, or one that does not parse, is an
/// error (the connection is then dropped).
pub fn recv<T: for<'de> Deserialize<'de>>(
    r: &mut impl BufRead,
    max: usize,
) -> io::Result<Option<T>> {
    recv_where(r, max, usize::MAX)
}

/// An agent's message after the handshake: its result may take
/// [`LINE_MAX`], any other message [`AGENT_MESSAGE_MAX`] (a peer's 200 MiB
/// note is dropped with its connection as soon as it passes 1 MiB).
pub fn recv_from_agent(r: &mut impl BufRead) -> io::Result<Option<FromAgent>> {
    recv_where(r, LINE_MAX, AGENT_MESSAGE_MAX)
}

/// Whether a line so far is a `done` message (a result).
fn is_result(line: &[u8]) -> bool {
    let head: Vec<u8> = line
        .iter()
        .take(64)
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    head.starts_with(br#"{"done""#)
}

/// [`recv`], where only a result may be longer than `short_max`.
fn recv_where<T: for<'de> Deserialize<'de>>(
    r: &mut impl BufRead,
    max: usize,
    short_max: usize,
) -> io::Result<Option<T>> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed in the middle of a message",
            ));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > max + 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message longer than {max} bytes"),
            ));
        }
        let was = line.len();
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if was <= short_max && line.len() > short_max.saturating_add(1) && !is_result(&line) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message longer than {short_max} bytes that is not a result"),
            ));
        }
        if done {
            break;
        }
    }
    parse(&line).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_parsed() {
        let mut out = Vec::new();
        send(&mut out, &FromCoordinator::Probe { t1: 7 }).unwrap();
        send(&mut out, &FromCoordinator::Beat).unwrap();
        let mut r = io::Cursor::new(out);
        let a: FromCoordinator = recv(&mut r, 100).unwrap().unwrap();
        assert!(matches!(a, FromCoordinator::Probe { t1: 7 }));
        let b: FromCoordinator = recv(&mut r, 100).unwrap().unwrap();
        assert!(matches!(b, FromCoordinator::Beat));
        assert!(recv::<FromCoordinator>(&mut r, 100).unwrap().is_none());
        // Too long, not ours, cut short.
        let long = format!("{}\n", "x".repeat(200));
        let e = recv::<FromCoordinator>(&mut io::Cursor::new(long), 100).unwrap_err();
        assert!(e.to_string().contains("longer than 100"), "{e}");
        let e = recv::<FromCoordinator>(&mut io::Cursor::new("GET / HTTP/1.1\r\n\r\n"), 100)
            .unwrap_err();
        assert!(e.to_string().contains("agent protocol"), "{e}");
        let e = recv::<FromCoordinator>(&mut io::Cursor::new("{\"beat\""), 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // Only an agent's result may be longer than AGENT_MESSAGE_MAX.
        let note = format!(
            "{{\"note\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(AGENT_MESSAGE_MAX)
        );
        let e = recv_from_agent(&mut io::Cursor::new(note)).unwrap_err();
        assert!(e.to_string().contains("not a result"), "{e}");
        let done = format!(
            "{{\"done\":{{\"dir\":\"{}\"}}}}\n",
            "x".repeat(AGENT_MESSAGE_MAX)
        );
        let e = recv_from_agent(&mut io::Cursor::new(done)).unwrap_err();
        assert!(
            e.to_string().contains("agent protocol"),
            "a long result is read: {e}"
        );
    }
}
