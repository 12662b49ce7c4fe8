//! A program's output (a `--server-cmd`'s, an exec run's), kept in a file
//! of the run's directory with bounds whatever the program writes: the
//! first [`KEPT`] bytes on disk, the rest counted and dropped, the last
//! [`TAIL`] bytes in memory (where a parser finds the figures a program
//! prints last), and lines offered to a pattern (a server's "ready" line)
//! cut at [`LINE`] bytes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The most of a stream kept on disk.
pub const KEPT: u64 = 64 << 20;
/// The end of a stream kept in memory.
pub const TAIL: usize = 8 << 20;
/// The longest line offered to a pattern.
pub const LINE: usize = 64 << 10;

/// Hears each line; false: no more lines wanted.
pub type OnLine = Box<dyn FnMut(&str) -> bool + Send>;

/// What a stream gave so far.
#[derive(Debug, Default)]
struct State {
    /// Bytes read in all.
    total: u64,
    /// Its last bytes (at most 2 x TAIL, trimmed to TAIL).
    tail: Vec<u8>,
    /// The stream ended (or its reader gave up).
    done: bool,
    /// Writing the file failed (the rest is then only counted).
    write_error: Option<String>,
}

/// One stream being captured into `path`.
#[derive(Clone)]
pub struct Capture {
    pub path: PathBuf,
    state: Arc<(Mutex<State>, Condvar)>,
}

/// What a captured stream amounts to.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: PathBuf,
    /// Bytes the program wrote.
    pub total: u64,
    /// Whether more than [`KEPT`] bytes came (the file has the first ones).
    pub cut: bool,
    /// The text to read figures from: all of it when it was kept whole,
    /// else its last [`TAIL`] bytes.
    pub text: String,
    /// Whether the stream had ended when this was taken.
    pub ended: bool,
}

impl Capture {
    /// Starts a thread that copies `from` into a new file at `path`; each
    /// line (cut at [`LINE`] bytes) goes to `on_line` until it returns
    /// false.
    pub fn start(
        from: impl Read + Send + 'static,
        path: &Path,
        name: &str,
        mut on_line: Option<OnLine>,
    ) -> Result<Capture, String> {
        let mut file = wirebench_core::store::create_new(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let cap = Capture {
            path: path.to_path_buf(),
            state: Arc::default(),
        };
        let state = cap.state.clone();
        let copy = move || {
            let mut from = from;
            let mut buf = vec![0u8; 64 << 10];
            let mut line: Vec<u8> = Vec::new();
            let mut written = 0u64;
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if written < KEPT {
                    let take = chunk
                        .len()
                        .min(usize::try_from(KEPT - written).unwrap_or(usize::MAX));
                    if let Err(e) = file.write_all(&chunk[..take]) {
                        let mut s = state.0.lock().expect("not poisoned");
                        s.write_error.get_or_insert(e.to_string());
                        written = KEPT;
                    } else {
                        written += take as u64;
                    }
                }
                if let Some(f) = on_line.as_mut() {
                    let mut rest = chunk;
                    let mut wants = true;
                    while let Some(i) = rest.iter().position(|&b| b == b'\n') {
                        if line.len() < LINE {
                            let room = LINE - line.len();
                            line.extend_from_slice(&rest[..i.min(room)]);
                        }
                        wants = f(&String::from_utf8_lossy(&line));
                        line.clear();
                        rest = &rest[i + 1..];
                        if !wants {
                            break;
                        }
                    }
                    if wants {
                        let room = LINE.saturating_sub(line.len());
                        line.extend_from_slice(&rest[..rest.len().min(room)]);
                    } else {
                        on_line = None;
                        line = Vec::new();
                    }
                }
                let mut s = state.0.lock().expect("not poisoned");
                s.total += n as u64;
                s.tail.extend_from_slice(chunk);
                if s.tail.len() > 2 * TAIL {
                    let cut = s.tail.len() - TAIL;
                    s.tail.drain(..cut);
                }
            }
            let _ = file.flush();
            let (m, cv) = &*state;
            m.lock().expect("not poisoned").done = true;
            cv.notify_all();
        };
        std::thread::Builder::new()
            .name(format!("wb-capture-{name}"))
            .spawn(copy)
            .map_err(|e| format!("a thread to copy {}: {e}", path.display()))?;
        Ok(cap)
    }

    /// What came so far, once the stream ended or `wait` passed (what the
    /// program started may hold the pipe).
    pub fn finish(&self, wait: Duration) -> Captured {
        let (m, cv) = &*self.state;
        let deadline = Instant::now() + wait;
        let mut s = m.lock().expect("not poisoned");
        while !s.done {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = cv.wait_timeout(s, left).expect("not poisoned").0;
        }
        let cut = s.total > KEPT;
        let from = if cut {
            s.tail.len().saturating_sub(TAIL)
        } else {
            0
        };
        Captured {
            path: self.path.clone(),
            total: s.total,
            cut,
            text: String::from_utf8_lossy(&s.tail[from..]).into_owned(),
            ended: s.done,
        }
    }
}

impl Captured {
    /// How it was kept, in words, when it was cut.
    pub fn note(&self) -> Option<String> {
        self.cut.then(|| {
            format!(
                "its output was {} MiB: the first {} MiB kept in {}, the rest dropped; figures read from its last {} MiB",
                self.total >> 20,
                KEPT >> 20,
                self.path.display(),
                TAIL >> 20
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_kept_whole_or_cut_with_its_tail_for_the_figures() {
        let dir = std::env::temp_dir().join(format!("wb-capture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Small: kept whole, lines offered until the pattern is done.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let c = Capture::start(
            std::io::Cursor::new(b"a\nready now\nb\n".to_vec()),
            &dir.join("small"),
            "t",
            Some(Box::new(move |l: &str| {
                s2.lock().unwrap().push(l.to_string());
                !l.contains("ready")
            })),
        )
        .unwrap();
        let got = c.finish(Duration::from_secs(5));
        assert!(got.ended && !got.cut);
        assert_eq!(got.text, "a\nready now\nb\n");
        assert_eq!(*seen.lock().unwrap(), ["a", "ready now"]);
        assert!(Capture::start(std::io::empty(), &dir.join("small"), "t", None).is_err());
        // Large: 80 MiB of lines and no newline for long stretches, then
        // the figure; the file holds 64 MiB.
        let mut big = vec![b'y'; 80 << 20];
        big.extend_from_slice(b"\nops=42\n");
        let c = Capture::start(std::io::Cursor::new(big), &dir.join("big"), "t", None).unwrap();
        let got = c.finish(Duration::from_secs(30));
        assert!(got.cut);
        assert_eq!(got.total, (80 << 20) + 8);
        assert!(got.text.ends_with("\nops=42\n") && got.text.len() == TAIL);
        assert_eq!(std::fs::metadata(dir.join("big")).unwrap().len(), KEPT);
        assert!(got.note().unwrap().contains("the first 64 MiB kept"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
