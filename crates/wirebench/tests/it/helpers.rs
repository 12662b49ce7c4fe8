//! Helpers: a temporary results directory, child processes that are killed
//! by PID when dropped, and line readers with timeouts.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wirebench_core::result::RunResult;

pub const BIN: &str = env!("CARGO_BIN_EXE_wirebench");

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        Self::new_under(&std::env::temp_dir(), tag)
    }

    /// In /dev/shm where there is one: for a server that refuses writes when
    /// the disk is nearly full (MinIO answers 507 XMinioStorageFull), so that
    /// the test does not depend on how full the CI machine's disk is.
    pub fn in_memory(tag: &str) -> TempDir {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            Self::new_under(shm, tag)
        } else {
            Self::new(tag)
        }
    }

    fn new_under(root: &Path, tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = root.join(format!("wb-it-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn str(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process with its output read by threads; SIGKILLed by PID on drop
/// unless it already exited.
pub struct Proc {
    pub pid: u32,
    exit: mpsc::Receiver<ExitStatus>,
    status: Option<ExitStatus>,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
    pub stderr_seen: Vec<String>,
}

fn lines(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        Proc::spawn_program(BIN, args)
    }

    /// Another program (e.g. `prlimit ... wirebench ...`, which execs it:
    /// the PID is wirebench's).
    pub fn spawn_program(program: &str, args: &[&str]) -> Proc {
        let mut c: Child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wirebench");
        let stdout = lines(c.stdout.take().unwrap());
        let stderr = lines(c.stderr.take().unwrap());
        let pid = c.id();
        let (tx, exit) = mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(s) = c.wait() {
                let _ = tx.send(s);
            }
        });
        Proc {
            pid,
            exit,
            status: None,
            stdout,
            stderr,
            stderr_seen: Vec::new(),
        }
    }

    /// Waits for the exit; panics after `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        if let Some(s) = self.status {
            return s;
        }
        let s = self
            .exit
            .recv_timeout(limit)
            .unwrap_or_else(|_| panic!("pid {} still running after {limit:?}", self.pid));
        self.status = Some(s);
        s
    }

    /// Whether it exited (without waiting).
    pub fn exited(&mut self) -> bool {
        if self.status.is_none()
            && let Ok(s) = self.exit.try_recv()
        {
            self.status = Some(s);
        }
        self.status.is_some()
    }

    /// Reads stderr until a line matches; returns it. Panics after `limit`.
    pub fn stderr_until(&mut self, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(l) => {
                    self.stderr_seen.push(l.clone());
                    if pred(&l) {
                        return l;
                    }
                }
                Err(_) => panic!(
                    "no matching stderr line within {limit:?}; seen: {:#?}",
                    self.stderr_seen
                ),
            }
        }
    }

    /// Everything left on stdout (after the process exited).
    pub fn stdout_all(&self) -> String {
        let mut s = String::new();
        while let Ok(l) = self.stdout.recv_timeout(Duration::from_secs(5)) {
            s.push_str(&l);
            s.push('\n');
        }
        s
    }

    /// Everything left on stderr, plus what was already read.
    pub fn stderr_all(&mut self) -> String {
        while let Ok(l) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.stderr_seen.push(l);
        }
        self.stderr_seen.join("\n")
    }

    /// The stderr lines that come within `d`, plus what was already read.
    pub fn stderr_all_until(&mut self, d: Duration) -> String {
        let until = Instant::now() + d;
        while let Ok(l) = self
            .stderr
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            self.stderr_seen.push(l);
        }
        self.stderr_seen.join("\n")
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), sig).unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() && self.exit.try_recv().is_err() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = self.exit.recv_timeout(Duration::from_secs(5));
        }
    }
}

/// A `wirebench serve` listening on a free loopback port.
pub struct Server {
    pub proc: Proc,
    pub endpoint: String,
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Server::start_env(&[], extra)
    }

    /// As [`Server::start`], with `NAME=VALUE`s in its environment (a fake
    /// S3 server's AWS_SECRET_ACCESS_KEY).
    pub fn start_env(env: &[&str], extra: &[&str]) -> Server {
        let mut args = env.to_vec();
        args.extend([BIN, "serve", "--listen", "tcp://127.0.0.1:0"]);
        if !extra.contains(&"--cpus") {
            args.extend(["--cpus", "0"]);
        }
        args.extend_from_slice(extra);
        let proc = Proc::spawn_program("env", &args);
        let first = proc
            .stdout
            .recv_timeout(Duration::from_secs(20))
            .expect("serve prints its listening event");
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v["event"], "listening", "{first}");
        let endpoint = v["endpoint"].as_str().unwrap().to_string();
        Server { proc, endpoint }
    }

    /// The host:port part of the endpoint.
    pub fn addr(&self) -> &str {
        self.endpoint.strip_prefix("tcp://").unwrap()
    }

    /// Stops with SIGTERM; returns the counters it printed.
    pub fn stop(mut self) -> serde_json::Value {
        self.proc.signal(nix::sys::signal::Signal::SIGTERM);
        let line = self
            .proc
            .stdout
            .recv_timeout(Duration::from_secs(20))
            .expect("serve prints its stopped event");
        let st = self.proc.wait(Duration::from_secs(20));
        assert!(st.success(), "serve exited with {st}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "stopped", "{line}");
        v["stats"].clone()
    }
}

/// Runs `wirebench run` with `--format json` and returns exit status and result.
pub fn run_json(results: &TempDir, args: &[&str]) -> (ExitStatus, RunResult, String) {
    let (st, out, err) = run_json_text(results, args);
    let r: RunResult = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("bad JSON ({e}) from {args:?}: {out}\nstderr: {err}"));
    (st, r, err)
}

/// As `run_json`, but a run that fails before printing a result gives None.
pub fn run_json_or_error(
    results: &TempDir,
    args: &[&str],
) -> (ExitStatus, Option<RunResult>, String) {
    let (st, out, err) = run_json_text(results, args);
    (st, serde_json::from_str(&out).ok(), err)
}

/// `wirebench run --format json`: exit status, stdout, stderr.
fn run_json_text(results: &TempDir, args: &[&str]) -> (ExitStatus, String, String) {
    let mut all = vec!["run", "--results", results.str(), "--format", "json"];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    let st = p.wait(Duration::from_secs(120));
    let out = p.stdout_all();
    let err = p.stderr_all();
    (st, out, err)
}

/// `wirebench sweep SPEC --results RESULTS [extra]`, which must succeed;
/// its stderr (the plan's progress lines).
pub fn sweep_ok(spec: &Path, results: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "sweep",
        spec.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    let st = p.wait(Duration::from_secs(300));
    let err = p.stderr_all();
    assert!(st.success(), "sweep {}: {err}", spec.display());
    err
}

/// `wirebench table DIR [extra]`, which must succeed: its stdout.
pub fn table_ok(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["table", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    p.stdout_all()
}

/// `wirebench report PATH -o HTML [extra]`, which must succeed: the
/// Markdown beside the page, and the texts of each figure's SVG (its
/// title first), in the order of their files.
pub fn report_ok(path: &Path, html: &Path, extra: &[&str]) -> (String, Vec<Vec<String>>) {
    let mut args = vec![
        "report",
        path.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    assert!(
        p.wait(Duration::from_secs(120)).success(),
        "{}",
        p.stderr_all()
    );
    let md = std::fs::read_to_string(html.with_extension("md")).unwrap();
    let stem = html.file_stem().unwrap().to_string_lossy().into_owned();
    let mut files: Vec<PathBuf> = std::fs::read_dir(html.with_file_name(format!("{stem}-figures")))
        .map(|d| d.flatten().map(|f| f.path()).collect())
        .unwrap_or_default();
    files.sort();
    let figures = files
        .iter()
        .map(|f| svg_texts(&std::fs::read_to_string(f).unwrap()))
        .collect();
    (md, figures)
}

/// The texts of an SVG, in order (a plot's title first).
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (_, rest) = t.split_once('>')?;
            Some(rest.split_once("</text>")?.0.trim().to_string())
        })
        .collect()
}

/// The figure (its texts) whose title holds `title`.
pub fn figure<'a>(figures: &'a [Vec<String>], title: &str) -> &'a [String] {
    figures
        .iter()
        .find(|f| f.first().is_some_and(|t| t.contains(title)))
        .unwrap_or_else(|| {
            panic!(
                "no figure '{title}' among {:?}",
                figures.iter().filter_map(|f| f.first()).collect::<Vec<_>>()
            )
        })
}

/// The only run directory under a results root.
pub fn only_run_dir(root: &TempDir) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Tests that assert timings run alone: they take this lock exclusively,
/// every other test takes it shared. (The machine has 2 cores: a busy-polling
/// neighbour would be measured too.) They live in `whole_machine`, which
/// libtest starts last.
static TIMING: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TIMING.read().unwrap_or_else(|e| e.into_inner())
}

pub fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    TIMING.write().unwrap_or_else(|e| e.into_inner())
}

/// A Python that imports `module`: $WIREBENCH_PYTHON, or a virtual
/// environment under target/ (`.ci/run` makes it) where `package` is
/// installed on first use. None when it cannot be made (no network), unless
/// $WIREBENCH_REQUIRE_PYTHON is set (as `.ci/run` does): then it fails.
pub fn python_with(module: &str, package: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WIREBENCH_PYTHON") {
        return Some(p.into());
    }
    // One test at a time makes the environment and installs into it (two
    // pips at once into one environment: one of them fails).
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyvenv");
    let py = venv.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has(&py) {
        let _ = py.exists()
            || Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .is_ok_and(|s| s.success());
        let _ = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", package])
            .status();
    }
    if has(&py) {
        return Some(py);
    }
    assert!(
        std::env::var_os("WIREBENCH_REQUIRE_PYTHON").is_none(),
        "could not make a Python with {package} in {}",
        venv.display()
    );
    skip(format!("no Python with {package} (pip install {package})"));
    None
}

/// Says that the running test cannot check what it is for, and why:
/// "skipped: test: why" in the test output (never captured), and a line "test: why" appended to
/// `target/skipped-tests.txt` (`scripts/skipped.sh` lists it after the tests and empties it
/// before the tests and list it, counted, after: a skipped check never
/// reads as a passed one).
pub fn skip(why: impl std::fmt::Display) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    // Straight to the process's stderr, past the test harness's capture
    // (which takes only print!/eprint!): the line shows among the test
    // lines even when the test then passes.
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/skipped-tests.txt"
    );
    // One line per skipped test (scripts/skipped.sh counts lines): a
    // reason that spans lines (a command's output) is joined.
    let why = why.to_string();
    let line: Vec<&str> = why
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = writeln!(f, "{test}: {}", line.join(" / "));
    }
}

/// What a run measured of the machine that makes a timing bound say
/// nothing of what it tests: its own "the machine was busy" warning (its
/// threads waited for a CPU, or other processes took CPU on its CPUs, past
/// the run's thresholds). None: the run found the machine quiet.
pub fn machine_busy(r: &RunResult) -> Option<String> {
    use wirebench_core::result::Warning;
    r.warnings
        .iter()
        .find(|w| matches!(w, Warning::MachineBusy { .. }))
        .map(|w| w.to_string())
}

/// Every run.json under `dir`, read (a search's steps, a sweep's runs).
pub fn walk_runs(dir: &Path) -> Vec<RunResult> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().is_some_and(|n| n == "run.json")
                && let Ok(text) = std::fs::read_to_string(&p)
                && let Ok(r) = serde_json::from_str(&text)
            {
                out.push(r);
            }
        }
    }
    out
}

/// A timing check judged by what its own runs measured of the machine:
/// `attempt` runs it and gives its runs' busy reason (None: quiet) and
/// whether the check held. A check that fails on a quiet machine fails the
/// test; one that fails while its runs say the machine was busy is tried
/// again, and after three busy tries the test is skipped with the
/// machine's figures (never a pass).
pub fn on_a_quiet_machine(mut attempt: impl FnMut() -> (Option<String>, Result<(), String>)) {
    let mut last = String::new();
    for _ in 0..3 {
        match attempt() {
            (_, Ok(())) => return,
            (None, Err(e)) => panic!("{e}"),
            (Some(busy), Err(e)) => last = format!("{e} ({busy})"),
        }
    }
    skip(format!("3 tries on a busy machine, the last: {last}"));
}

/// The PIDs of processes whose command line has `needle`.
pub fn running_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&c).contains(needle)
        {
            pids.push(pid);
        }
    }
    pids
}

/// Writes a secret's file (a token, a key) as only its owner may read it:
/// wirebench refuses a looser one.
pub fn write_secret(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
