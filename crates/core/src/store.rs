//! Where results live: `<root>/<run-id>/run.json` plus one line per run in
//! `<root>/summary.csv`. Files are written to a temporary name and renamed,
//! so a crash never leaves a half-written result.

use crate::result::RunResult;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a result could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a wirebench result: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("{path}: {why}")]
    Schema { path: PathBuf, why: String },
    #[error("{path}: exists already (a run id collision): refused, nothing overwritten")]
    Exists { path: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens a new file at `path` for writing. Anything already there, a
/// symbolic link included (planted in a shared directory), is refused, not
/// followed: O_CREAT | O_EXCL.
pub fn create_new(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Opens `path` to append to it, made if absent; whether it was empty (a
/// new file). A symbolic link there is refused (O_NOFOLLOW), and so is
/// anything but a regular file.
pub fn open_append(path: &Path) -> std::io::Result<(fs::File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::other(
                "is a symbolic link: refused (wirebench does not follow links where it writes)",
            ),
            _ => e,
        })?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file: refused"));
    }
    Ok((f, meta.len() == 0))
}

/// Writes `bytes` to `path` atomically: a new temporary file beside it
/// (never one that exists, nor a link), fsync, rename. The rename replaces
/// whatever `path` is, a link included, without following it. A failed
/// write leaves nothing behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(
        ".{name}.tmp{}-{:08x}",
        std::process::id(),
        random_u64() & 0xffff_ffff
    ));
    let written = create_new(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(&tmp)(e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io(path)(e)
    })
}

/// Copies `from` to `to` as [`write_atomic`] writes.
pub fn copy_atomic(from: &Path, to: &Path) -> Result<(), StoreError> {
    let bytes = fs::read(from).map_err(io(from))?;
    write_atomic(to, &bytes)
}

/// A run id that sorts by time and carries 48 random bits:
/// `20261122T201100Z-echo-reactor-1a2b3c4d5e6f`. Two runs started in the
/// same second with the same label collide once in 10^14; a collision is
/// refused by [`save_new`], never overwritten.
pub fn new_run_id(label: &str) -> String {
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let salt = random_u64() & 0xffff_ffff_ffff;
    format!("{stamp}-{label}-{salt:012x}")
}

/// 64 bits from the kernel's random source (or, without one, from the
/// clock and the process id).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let read = fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_ok();
    if read {
        return u64::from_le_bytes(b);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    crate::spec::mix64(crate::units::nanos(now) ^ u64::from(std::process::id()) << 32)
}

/// Checks that a file can be written at `path` before any work is done:
/// not a directory, its directory exists and takes files, and it does not
/// exist already unless `force` (nothing wirebench did not write in this
/// invocation is overwritten without it).
pub fn check_new_file(path: &Path, force: bool) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a directory: name a file".into());
    }
    if path.exists() && !force {
        return Err("exists already: wirebench does not overwrite it; name a new file, or add --force to replace it".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!("its directory {} does not exist", parent.display()));
    }
    probe_writable(parent)
}

/// Makes `dir` (a results directory) if need be and checks that it takes
/// files.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err("is a file, not a directory: name a directory for the results".into());
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create it: {e}"))?;
    probe_writable(dir)
}

fn probe_writable(dir: &Path) -> Result<(), String> {
    let probe = dir.join(format!(
        ".wirebench-probe-{}-{:x}",
        std::process::id(),
        random_u64()
    ));
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("cannot write in {}: {e}", dir.display())),
    }
}

/// The current time in RFC 3339 (UTC, seconds).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Saves a new run under `root`; returns its directory. A directory of that
/// run id that exists already is refused.
pub fn save_new(root: &Path, result: &RunResult) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(root).map_err(io(root))?;
    let dir = root.join(&result.run_id);
    match fs::create_dir(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(StoreError::Exists { path: dir });
        }
        r => r.map_err(io(&dir))?,
    }
    save(root, result)
}

/// Saves a result under `root`; returns the run's directory. Safe to call
/// again for the same run (a later, fuller result replaces the earlier one).
pub fn save(root: &Path, result: &RunResult) -> Result<PathBuf, StoreError> {
    let dir = root.join(&result.run_id);
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let json = serde_json::to_vec_pretty(result).expect("a result always serializes");
    write_atomic(&dir.join("run.json"), &json)?;
    Ok(dir)
}

/// Appends the run's line to `<root>/summary.csv`, writing the header first
/// when the file is new. A summary.csv with other columns (one an older
/// wirebench began, in MB/s) is left as it is, and the line goes to
/// `summary-4.csv` instead: never a line under a header it does not match.
pub fn append_summary_csv(root: &Path, r: &RunResult) -> Result<(), StoreError> {
    let mut path = root.join("summary.csv");
    let header = CSV_HEADER.join(",");
    let first_line = |p: &Path| -> Option<String> {
        let f = fs::File::open(p).ok()?;
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(f), &mut line).ok()?;
        Some(line.trim_end().to_string())
    };
    // A link is not read (appending to it is refused below, by name).
    let plain = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
    if plain && first_line(&path).is_some_and(|l| !l.is_empty() && l != header) {
        path = root.join(format!("summary-{}.csv", crate::result::SCHEMA_VERSION));
    }
    let (mut file, _) = open_append(&path).map_err(io(&path))?;
    // One writer at a time (runs of a sweep, or of several shells, end
    // together): under the lock, whether the file is new is known for
    // sure, and the header and the line go out in one write. The lock
    // goes with the file when it is closed.
    file.lock().map_err(io(&path))?;
    let new = file.metadata().map_err(io(&path))?.len() == 0;
    let mut w = csv::Writer::from_writer(Vec::new());
    let csv_err = |source| StoreError::Csv {
        path: path.clone(),
        source,
    };
    if new {
        w.write_record(CSV_HEADER).map_err(csv_err)?;
    }
    let s = &r.summary;
    let target = r.spec.endpoint_label();
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    let row: Vec<String> = vec![
        r.run_id.clone(),
        r.started_at.clone(),
        format!("{:?}", r.status.state).to_lowercase(),
        r.spec.kind().to_string(),
        target,
        r.spec.transport.mode_name(),
        r.spec.transport.size_bytes().to_string(),
        r.spec.transport.response_size_bytes().to_string(),
        r.spec.clients.to_string(),
        r.spec.conns_per_client.to_string(),
        r.spec.depth.to_string(),
        r.spec.poll.to_string(),
        r.placement.client_cpus.to_string(),
        r.placement
            .server_cpus
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        format!("{:.3}", s.measured_ns as f64 / 1e9),
        s.ops.to_string(),
        format!("{:.1}", s.ops_per_s),
        format!("{:.3}", s.mib_per_s_out),
        format!("{:.3}", s.mib_per_s_in),
        format!("{:.0}", s.latency.mean_ns),
        s.latency.p50_ns.to_string(),
        s.latency.p90_ns.to_string(),
        s.latency.p99_ns.to_string(),
        s.latency.p999_ns.to_string(),
        s.latency.max_ns.to_string(),
        s.errors.to_string(),
        format!("{:.3}", s.client_cpu_s),
        opt(s.server_cpu_s),
        r.env.build_profile.clone(),
    ];
    // The target and the build are text from the command line or a peer:
    // shown, never obeyed.
    let row: Vec<String> = row
        .iter()
        .map(|c| crate::text::visible(c).into_owned())
        .collect();
    w.write_record(&row).map_err(csv_err)?;
    let bytes = w.into_inner().map_err(|e| StoreError::Csv {
        path: path.clone(),
        source: e.into_error().into(),
    })?;
    std::io::Write::write_all(&mut file, &bytes).map_err(io(&path))
}

pub const CSV_HEADER: [&str; 29] = [
    "run_id",
    "started_at",
    "status",
    "transport",
    "target",
    "mode",
    "size_bytes",
    "response_size_bytes",
    "clients",
    "conns_per_client",
    "depth",
    "poll",
    "client_cpus",
    "server_cpus",
    "measured_s",
    "ops",
    "ops_per_s",
    "mib_per_s_out",
    "mib_per_s_in",
    "latency_mean_ns",
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "latency_p999_ns",
    "latency_max_ns",
    "errors",
    "client_cpu_s",
    "server_cpu_s",
    "build_profile",
];

/// Reads a `run.json` (or the `run.json` inside a run directory).
pub fn load(path: &Path) -> Result<RunResult, StoreError> {
    let file = if path.is_dir() {
        path.join("run.json")
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file).map_err(io(&file))?;
    let parse = |source| StoreError::Parse {
        path: file.clone(),
        source,
    };
    let mut doc: serde_json::Value = serde_json::from_str(&text).map_err(parse)?;
    match doc["schema_version"].as_u64() {
        Some(v) if v == u64::from(crate::result::SCHEMA_VERSION) => {}
        Some(2) => crate::legacy::upgrade_v2(&mut doc).map_err(|why| StoreError::Schema {
            path: file.clone(),
            why,
        })?,
        Some(3) => crate::legacy::upgrade_v3(&mut doc).map_err(|why| StoreError::Schema {
            path: file.clone(),
            why,
        })?,
        v => {
            return Err(StoreError::Schema {
                path: file.clone(),
                why: format!(
                    "schema_version {}: this wirebench reads schemas 2, 3 and {}; read it with the wirebench that wrote it (its version is in env.wirebench_version)",
                    v.map_or("missing".to_string(), |v| v.to_string()),
                    crate::result::SCHEMA_VERSION
                ),
            });
        }
    }
    serde_json::from_value(doc).map_err(parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: 20 runs appending at once gave summary.csv a second
    /// header (each saw an empty file, then both wrote one). 20 writers of
    /// 10 lines each, started together: one header, 200 whole lines.
    #[test]
    fn issue_46_concurrent_appends_to_summary_csv_write_one_header() {
        let root = std::env::temp_dir().join(format!("wb-store-race-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let r = crate::result::tests::sample();
        let go = std::sync::Arc::new(std::sync::Barrier::new(20));
        let writers: Vec<_> = (0..20)
            .map(|_| {
                let (root, r, go) = (root.clone(), r.clone(), go.clone());
                std::thread::spawn(move || {
                    go.wait();
                    for _ in 0..10 {
                        append_summary_csv(&root, &r).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let csv = fs::read_to_string(root.join("summary.csv")).unwrap();
        let header = CSV_HEADER.join(",");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.iter().filter(|l| **l == header).count(), 1, "{csv}");
        assert_eq!(lines[0], header);
        assert_eq!(lines.len(), 201);
        let fields = CSV_HEADER.len();
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        for rec in rd.records() {
            assert_eq!(rec.unwrap().len(), fields);
        }
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn save_load_and_csv() {
        let root = std::env::temp_dir().join(format!("wb-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let r = crate::result::tests::sample();
        let dir = save_new(&root, &r).unwrap();
        assert_eq!(load(&dir).unwrap(), r);
        // The same run id again: refused, the first kept.
        assert!(matches!(
            save_new(&root, &r),
            Err(StoreError::Exists { .. })
        ));
        assert_eq!(load(&dir).unwrap(), r);
        assert_eq!(save(&root, &r).unwrap(), dir);
        append_summary_csv(&root, &r).unwrap();
        append_summary_csv(&root, &r).unwrap();
        let csv = fs::read_to_string(root.join("summary.csv")).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3, "{csv}");
        assert!(lines[0].starts_with("run_id,started_at,status"));
        assert_eq!(lines[1].split(',').count(), CSV_HEADER.len());
        assert!(
            fs::read_dir(&dir).unwrap().all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("tmp"))
        );
        // A summary.csv an older wirebench began (MB/s columns) is kept
        // as it is; the line goes beside it, under its own header.
        let old = "run_id,started_at,status,transport,target,mode,size_bytes,response_size_bytes,clients,conns_per_client,depth,poll,client_cpus,server_cpus,measured_s,ops,ops_per_s,mb_per_s_out,mb_per_s_in\nx,y\n";
        fs::write(root.join("summary.csv"), old).unwrap();
        append_summary_csv(&root, &r).unwrap();
        assert_eq!(fs::read_to_string(root.join("summary.csv")).unwrap(), old);
        let new = fs::read_to_string(root.join("summary-4.csv")).unwrap();
        assert!(new.starts_with(&CSV_HEADER.join(",")), "{new}");
        assert_eq!(new.lines().count(), 2);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn run_ids_sort_by_time_and_carry_the_label() {
        let id = new_run_id("echo-reactor");
        assert!(id.starts_with("20"), "{id}");
        assert!(id.contains("-echo-reactor-"));
        assert_ne!(new_run_id("x"), new_run_id("x"));
    }

    #[test]
    fn outputs_are_checked_and_nothing_is_overwritten() {
        let root = std::env::temp_dir().join(format!("wb-store-out-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let file = root.join("old.json");
        fs::write(&file, "keep").unwrap();
        assert!(
            check_new_file(&file, false)
                .unwrap_err()
                .contains("--force")
        );
        assert!(check_new_file(&file, true).is_ok());
        assert!(
            check_new_file(&root, true)
                .unwrap_err()
                .contains("directory")
        );
        assert!(
            check_new_file(&root.join("no/such/x"), false)
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(check_new_file(&root.join("new.hlog"), false).is_ok());
        assert!(prepare_dir(&file).unwrap_err().contains("is a file"));
        assert!(prepare_dir(&root.join("a/b")).is_ok());
        assert_eq!(fs::read_to_string(&file).unwrap(), "keep");
        // Nothing left behind by the probes.
        assert_eq!(fs::read_dir(&root).unwrap().count(), 2);
        fs::remove_dir_all(&root).unwrap();
    }
}
