//! Workers in other processes (shm clients as processes, the IPC report's
//! `mp`). The coordinator starts one child process per worker; a proxy
//! thread speaks to it over its stdin and stdout in JSON lines, and
//! forwards what it reports as if it were a local worker:
//!
//! - child to parent: `{"ready":{"connect_ns":N}}`, then
//!   `{"interval":{"index":I,"end_mono_ns":T,"data":{...}}}` per interval,
//!   then `{"done":{"error":null}}`;
//! - parent to child: `{"start_mono_ns":T}` (the shared CLOCK_MONOTONIC
//!   instant the load starts), then `stop` when the run ends early. The end
//!   of the child's stdin means stop too.
//!
//! A child that dies without reporting `done` fails the run with its exit
//! status; whatever it reported before is kept.

use crate::engine::{self, LoadConfig, LoadOutcome, Msg, Observer, Schedule, WorkerLink};
use crate::os;
use crate::recorder::IntervalData;
use crate::transport::BlockingTransport;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use wirebench_core::hist;

#[derive(Debug, Serialize, Deserialize)]
struct WireData {
    ops: u64,
    sent: u64,
    received: u64,
    bytes_out: u64,
    bytes_in: u64,
    errors: u64,
    hist: String,
    service: String,
    #[serde(default)]
    timer_spin_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Report {
    Ready {
        connect_ns: u64,
    },
    Interval {
        index: usize,
        end_mono_ns: u64,
        data: WireData,
    },
    Done {
        error: Option<String>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct Start {
    start_mono_ns: u64,
}

/// What the parent sends a child first: which worker it is, and the load.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerOrder<T> {
    pub worker: usize,
    pub cfg: LoadConfig,
    pub transport: T,
}

fn to_wire(d: &IntervalData) -> WireData {
    WireData {
        ops: d.ops,
        sent: d.sent,
        received: d.received,
        bytes_out: d.bytes_out,
        bytes_in: d.bytes_in,
        errors: d.errors,
        hist: hist::encode(&d.hist),
        service: hist::encode(&d.service),
        timer_spin_ns: d.timer_spin_ns,
    }
}

fn from_wire(w: WireData) -> Result<IntervalData, String> {
    let dec =
        |s: &str| hist::decode(s).map_err(|e| format!("bad histogram from a client process: {e}"));
    Ok(IntervalData {
        ops: w.ops,
        sent: w.sent,
        received: w.received,
        bytes_out: w.bytes_out,
        bytes_in: w.bytes_in,
        errors: w.errors,
        hist: dec(&w.hist)?,
        service: dec(&w.service)?,
        // Typed operations (S3) and several endpoints run in threads only.
        by_op: Default::default(),
        failures: Default::default(),
        lanes: Default::default(),
        lag: None,
        timer_spin_ns: w.timer_spin_ns,
    })
}

/// The child's side: runs worker `worker` of `cfg` over `transport`,
/// taking orders on `input` and reporting on `output`, until it is done.
pub fn serve_worker<T: BlockingTransport>(
    transport: Arc<T>,
    cfg: LoadConfig,
    worker: usize,
    input: impl BufRead + Send + 'static,
    mut output: impl Write,
) -> io::Result<()> {
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>();
    let (start_tx, start_rx) = oneshot::channel::<Schedule>();
    let (stop_tx, stop_rx) = watch::channel(false);
    {
        let cfg = cfg.clone();
        std::thread::Builder::new()
            .name("wb-orders".into())
            .spawn(move || {
                let mut lines = input.lines();
                let mut start_tx = Some(start_tx);
                for line in lines.by_ref().map_while(Result::ok) {
                    match serde_json::from_str::<Start>(&line) {
                        Ok(s) if start_tx.is_some() => {
                            let at = os::instant_from_monotonic(s.start_mono_ns);
                            let tx = start_tx.take().expect("checked");
                            let _ = tx.send(Schedule::new(at, &cfg));
                        }
                        _ => break,
                    }
                }
                drop(start_tx);
                let _ = stop_tx.send(true);
            })?;
    }
    let link = WorkerLink {
        id: worker,
        cfg,
        msgs: msg_tx,
        start: start_rx,
        stop: stop_rx,
        // A child process is sampled as a whole by the parent.
        gate: engine::Gate::opened(),
    };
    let h = std::thread::Builder::new()
        .name(format!("wb-client-{worker}"))
        .spawn(move || crate::blocking::worker_main(transport, link))?;
    for m in msg_rx {
        let (report, last) = match m {
            Msg::Ready { connect_ns } => (Report::Ready { connect_ns }, false),
            Msg::Interval {
                index, end, data, ..
            } => (
                Report::Interval {
                    index,
                    end_mono_ns: os::instant_to_monotonic(end),
                    data: to_wire(&data),
                },
                false,
            ),
            Msg::Done { error, .. } => (Report::Done { error }, true),
        };
        serde_json::to_writer(&mut output, &report)?;
        output.write_all(b"\n")?;
        output.flush()?;
        if last {
            break;
        }
    }
    let _ = h.join();
    Ok(())
}

/// The parent's side: runs the load with each worker in a child process
/// that `start_child(worker)` starts (stdin and stdout piped, running
/// [`serve_worker`], given its [`WorkerOrder`] as the first stdin line by
/// `start_child`). Each child's PID joins the sampler's client processes.
pub fn run_load_processes(
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
    start_child: &mut dyn FnMut(usize) -> io::Result<Child>,
) -> LoadOutcome {
    let children = cfg.sampler.client_children.clone();
    engine::coordinate(cfg, observer, &mut |l: WorkerLink| {
        let child = start_child(l.id);
        let children = children.clone();
        std::thread::Builder::new()
            .name(format!("wb-proxy-{}", l.id))
            .spawn(move || proxy(l, child, children))
            .expect("spawning a proxy thread")
    })
}

fn proxy(l: WorkerLink, child: io::Result<Child>, children: Arc<Mutex<Vec<u32>>>) {
    let WorkerLink {
        id,
        msgs,
        start,
        stop,
        ..
    } = l;
    let fail = |e: String| {
        let _ = msgs.send(Msg::Done {
            worker: id,
            error: Some(e),
        });
    };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return fail(format!("client {id}: cannot start its process: {e}")),
    };
    let pid = child.id();
    children.lock().expect("not poisoned").push(pid);
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return fail(format!("client {id}: its process has no pipes"));
    };
    let reader = {
        let msgs = msgs.clone();
        std::thread::Builder::new()
            .name(format!("wb-proxy-out-{id}"))
            .spawn(move || read_reports(id, BufReader::new(stdout), msgs))
    };
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return fail(format!("client {id}: {e}"));
        }
    };
    let send = |stdin: &mut ChildStdin, line: String| {
        let _ = stdin.write_all(line.as_bytes());
        let _ = stdin.write_all(b"\n");
        let _ = stdin.flush();
    };
    match start.blocking_recv() {
        Ok(s) => {
            let start_mono_ns = os::instant_to_monotonic(s.load_start);
            let line = serde_json::to_string(&Start { start_mono_ns }).expect("serializable");
            send(&mut stdin, line);
            while !reader.is_finished() {
                if stop.has_changed().unwrap_or(true) {
                    send(&mut stdin, "stop".into());
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Err(_) => send(&mut stdin, "stop".into()),
    }
    // The child ends once it has reported `done`; give it a while.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !reader.is_finished() {
        let _ = child.kill();
    }
    drop(stdin);
    let status = child.wait();
    children.lock().expect("not poisoned").retain(|&p| p != pid);
    let reported_done = reader.join().unwrap_or(false);
    if !reported_done {
        let why = match status {
            Ok(s) => describe_exit(s),
            Err(e) => e.to_string(),
        };
        fail(format!(
            "client process {id} (pid {pid}) ended without its report: {why}"
        ));
    }
}

fn describe_exit(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended".into(),
    }
}

/// Forwards a child's reports; returns whether it reported `done`.
fn read_reports(id: usize, out: impl BufRead, msgs: mpsc::Sender<Msg>) -> bool {
    for line in out.lines().map_while(Result::ok) {
        let m = match serde_json::from_str::<Report>(&line) {
            Ok(Report::Ready { connect_ns }) => Msg::Ready { connect_ns },
            Ok(Report::Interval {
                index,
                end_mono_ns,
                data,
            }) => match from_wire(data) {
                Ok(data) => Msg::Interval {
                    worker: id,
                    index,
                    end: os::instant_from_monotonic(end_mono_ns),
                    data: Box::new(data),
                },
                Err(e) => Msg::Done {
                    worker: id,
                    error: Some(e),
                },
            },
            Ok(Report::Done { error }) => {
                let _ = msgs.send(Msg::Done { worker: id, error });
                return true;
            }
            Err(_) => continue, // not a report: ignore
        };
        if msgs.send(m).is_err() {
            break;
        }
    }
    false
}
