//! What a run measures: the embedded reference server, which the run
//! starts as a separate pinned process (`wirebench serve`, ordered over its
//! stdin with a [`ServeOrder`]) so that its CPU time and memory are
//! measured apart, or an external server given by its endpoint. Both sit
//! behind the [`Target`] seam, so a session can be tested without sockets.

use crate::Credentials;
use crate::process;
use crate::serve::{ServeOrder, ServeRequest, ServerEvent};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wirebench_core::result::{ServerReport, ServerStats};
use wirebench_core::spec::{Endpoint, RunSpec, TargetSpec};
use wirebench_load::os;
use wirebench_load::procs::{ServerProcs, ThreadSeen};

/// The server side of a run.
pub trait Target {
    /// Where the load goes.
    fn endpoint(&self) -> &Endpoint;
    /// The server's PID, when the run started or observes it.
    fn server_pid(&self) -> Option<u32>;
    /// The server's processes, for the sampler (None: not observed).
    fn procs(&self) -> Option<ServerProcs> {
        self.server_pid().map(|p| ServerProcs::Pids(vec![p]))
    }
    /// The server, in words, for messages ("the embedded server (pid 7)").
    fn describe(&self) -> String {
        match self.server_pid() {
            Some(pid) => format!("the embedded server (pid {pid})"),
            None => "the server".into(),
        }
    }
    /// The cpuset an observed server is judged against (None: as placed).
    fn cpuset(&self) -> Option<Vec<usize>> {
        None
    }
    /// Why the server is gone, if it is, waiting up to `grace` for it to
    /// finish exiting (a killed server resets its connections before it
    /// is reaped).
    fn exited(&mut self, grace: Duration) -> Option<String>;
    /// Stops the server the run started: its report and peak RSS, and the
    /// trace it wrote. None for a server the run did not start.
    fn stop(&mut self) -> Option<Stopped>;
}

/// What a stopped embedded server leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct Stopped {
    pub report: ServerReport,
    pub peak_rss_bytes: Option<u64>,
    /// Its trace file (`--trace`), if it wrote one.
    pub trace_file: Option<PathBuf>,
    /// What was seen of its threads over the run (an observed server).
    pub threads: Vec<ThreadSeen>,
    /// The cpuset `threads` are judged against (empty: not judged).
    pub cpuset: Vec<usize>,
    /// Files of its output the run kept (a started command's).
    pub logs: Vec<PathBuf>,
}

/// A server the run does not own.
pub struct External(pub Endpoint);

impl Target for External {
    fn endpoint(&self) -> &Endpoint {
        &self.0
    }
    fn server_pid(&self) -> Option<u32> {
        None
    }
    fn exited(&mut self, _: Duration) -> Option<String> {
        None
    }
    fn stop(&mut self) -> Option<Stopped> {
        None
    }
}

/// The reference server as a child process of this run.
pub struct Embedded {
    child: Child,
    pid: u32,
    endpoint: Endpoint,
    events: mpsc::Receiver<ServerEvent>,
    /// Where it writes its trace when it stops (--trace).
    trace_file: Option<PathBuf>,
    stopped: bool,
}

/// The order that makes `wirebench serve` the server `spec` embeds.
pub fn serve_request(spec: &RunSpec, trace_file: Option<PathBuf>) -> ServeRequest {
    let TargetSpec::Embedded {
        arch: _,
        cpus,
        poll,
        listen,
    } = &spec.target
    else {
        unreachable!("embedded only")
    };
    let mut req = ServeRequest {
        transport: Some(spec.kind()),
        cpus: Some(cpus.clone()),
        poll: *poll,
        trace: trace_file,
        trace_sample: spec.trace_sample,
        ..ServeRequest::default()
    };
    // The default shm socket carries the server's PID: the server names it.
    if !listen.to_string().contains("<server-pid>") {
        req.listen = Some(listen.clone());
    }
    if let Some(server) = wirebench_transports::server::of(spec.kind()) {
        (server.order)(spec, &mut req);
    }
    req
}

impl Embedded {
    /// Starts `wirebench serve` for `spec` and waits (up to 15 s) until it
    /// listens. Its stderr goes to this process's stderr.
    pub fn start(spec: &RunSpec, credentials: Option<Credentials>) -> Result<Embedded, String> {
        let trace_file = spec.trace_sample.map(|_| {
            // A name no one can guess ahead (the server opens it O_EXCL).
            std::env::temp_dir().join(format!(
                "wirebench-trace-server-{}-{:012x}.txt",
                std::process::id(),
                wirebench_core::store::random_u64() & 0xffff_ffff_ffff
            ))
        });
        let order = ServeOrder {
            request: serve_request(spec, trace_file.clone()),
            credentials,
        };
        let exe = std::env::current_exe().map_err(|e| {
            format!("cannot find the wirebench executable to start the embedded server: {e}")
        })?;
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--order-stdin"])
            .args(["--exit-with-parent", &std::process::id().to_string()])
            // Its own process group: a Ctrl-C in the terminal reaches only
            // this process, which then stops the server itself, after the load.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .envs(&spec.server_env)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the embedded server: {e}"))?;
        let pid = child.id();
        let mut line = serde_json::to_vec(&order).expect("an order serializes");
        line.push(b'\n');
        let sent = child.stdin.take().expect("piped").write_all(&line);
        let stdout = child.stdout.take().expect("piped");
        let (tx, events) = mpsc::channel();
        std::thread::Builder::new()
            .name("wb-server-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let Ok(e) = serde_json::from_str::<ServerEvent>(&line) else {
                        continue;
                    };
                    if tx.send(e).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        let mut srv = Embedded {
            child,
            pid,
            endpoint: Endpoint::Tcp(String::new()),
            events,
            trace_file,
            stopped: false,
        };
        let first = if sent.is_ok() {
            srv.events.recv_timeout(Duration::from_secs(15)).ok()
        } else {
            None
        };
        match first {
            Some(ServerEvent::Listening { endpoint, .. }) => {
                srv.endpoint = endpoint;
                Ok(srv)
            }
            _ => {
                let why = srv.kill();
                Err(format!(
                    "the embedded server did not start ({why}); its messages are above"
                ))
            }
        }
    }

    fn kill(&mut self) -> String {
        self.stopped = true;
        let _ = process::signal_process(self.pid, true);
        self.child
            .wait()
            .map(process::describe)
            .unwrap_or_else(|e| e.to_string())
    }

    fn try_exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(process::describe(status)),
            _ => None,
        }
    }
}

impl Target for Embedded {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn server_pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn exited(&mut self, grace: Duration) -> Option<String> {
        let deadline = Instant::now() + grace;
        loop {
            if let Some(why) = self.try_exited() {
                return Some(why);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then SIGKILL if it does not stop within 5 s.
    fn stop(&mut self) -> Option<Stopped> {
        if self.stopped {
            return None;
        }
        self.stopped = true;
        let rss = os::process_peak_rss_bytes(self.pid);
        let mut stats: Option<ServerStats> = None;
        let exit = match self.try_exited() {
            Some(why) => Some(format!("exited during the run: {why}")),
            None => {
                let _ = process::signal_process(self.pid, false);
                let deadline = Instant::now() + Duration::from_secs(5);
                while let Ok(e) = self
                    .events
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    if let ServerEvent::Stopped { stats: s, .. } = e {
                        stats = Some(s);
                        break;
                    }
                }
                if stats.is_none() {
                    Some(format!("did not stop on SIGTERM: {}", self.kill()))
                } else {
                    self.child
                        .wait()
                        .ok()
                        .map(process::describe)
                        .filter(|d| d != "exit status 0")
                }
            }
        };
        Some(Stopped {
            report: ServerReport {
                pid: self.pid,
                endpoint: self.endpoint.to_string(),
                stats,
                exit,
            },
            peak_rss_bytes: rss,
            trace_file: self.trace_file.clone(),
            threads: vec![],
            cpuset: vec![],
            logs: vec![],
        })
    }
}

impl Drop for Embedded {
    /// A server is never left behind, whatever way the run ends.
    fn drop(&mut self) {
        if !self.stopped {
            self.kill();
        }
    }
}
