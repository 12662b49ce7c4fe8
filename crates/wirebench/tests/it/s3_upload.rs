//! Issue 49: results that outlive their machine. `run --upload` copies the
//! run's directory to S3 once saved; `s3 upload`, cut off (its process
//! killed mid-copy), run again sends only what is missing; `s3 download`
//! brings the runs back byte for byte, and their report is the one made
//! here. Against MinIO (the files kept and read back) and the embedded
//! fake S3 server (which keeps no data: uploads and their resumption only).

use crate::fixtures::minio::{MINIO_PASSWORD, MINIO_USER, Minio};
use crate::helpers::*;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The bulk of a results directory that takes a while to send: `n` files
/// of 256 KiB, each of its own bytes.
fn bulk(dir: &Path, n: usize) -> PathBuf {
    let d = dir.join("bulk");
    std::fs::create_dir_all(d.join("deep")).unwrap();
    for k in 0..n {
        let data: Vec<u8> = (0..256 * 1024).map(|i| (i * 7 + k * 13) as u8).collect();
        let at = if k % 2 == 0 {
            d.clone()
        } else {
            d.join("deep")
        };
        std::fs::write(at.join(format!("f{k:03}")), data).unwrap();
    }
    d
}

/// wirebench with MinIO's credentials in its environment (`signed`), or
/// none (the fake server here is anonymous, and refuses signed requests).
fn wb(signed: bool, args: &[&str]) -> Proc {
    let mut all = vec!["-u".into(), "AWS_ACCESS_KEY_ID".into()];
    if signed {
        all = vec![
            format!("AWS_ACCESS_KEY_ID={MINIO_USER}"),
            format!("AWS_SECRET_ACCESS_KEY={MINIO_PASSWORD}"),
        ];
    }
    all.push(BIN.to_string());
    all.extend(args.iter().map(|s| s.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    Proc::spawn_program("env", &all)
}

/// `s3 upload DIR URL` killed once `copied()` says at least 10 objects are
/// there: whether it was cut before its end (else it finished first).
fn cut_off(signed: bool, dir: &Path, url: &str, copied: &dyn Fn() -> usize) -> bool {
    let mut p = wb(signed, &["s3", "upload", dir.to_str().unwrap(), url]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while copied() < 10 && !p.exited() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    if p.exited() {
        return false;
    }
    p.signal(Signal::SIGKILL);
    let st = p.wait(Duration::from_secs(10));
    st.code().is_none()
}

/// The last line of `s3 upload`: "DIR -> URL: SENT of FILES file(s)
/// copied (...), THERE there already", as (sent, files, there).
fn counts(out: &str) -> (usize, usize, usize) {
    let line = out.lines().last().unwrap_or_default();
    let n = |after: &str| -> usize {
        line.split(after)
            .next()
            .and_then(|s| s.split_whitespace().last())
            .and_then(|s| s.trim_start_matches('(').parse().ok())
            .unwrap_or_else(|| panic!("no count before '{after}' in: {line}"))
    };
    (n(" of "), n(" file(s)"), n(" there already"))
}

fn upload(signed: bool, dir: &Path, url: &str) -> (usize, usize, usize) {
    let mut p = wb(signed, &["s3", "upload", dir.to_str().unwrap(), url]);
    let st = p.wait(Duration::from_secs(120));
    assert!(st.success(), "{}", p.stderr_all());
    counts(&p.stdout_all())
}

/// The objects of a MinIO bucket under `prefix`, as its data directory
/// holds them (a directory per object, its xl.meta inside).
fn minio_objects(data: &Path, bucket: &str, prefix: &str) -> usize {
    let mut n = 0;
    let mut todo = vec![data.join(bucket).join(prefix)];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.join("xl.meta").exists() {
                n += 1;
            } else if p.is_dir() {
                todo.push(p);
            }
        }
    }
    n
}

/// Every file under `a` is under `b` with the same bytes.
fn same_files(a: &Path, b: &Path) {
    let mut todo = vec![a.to_path_buf()];
    let mut n = 0;
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(a).unwrap();
                let there = std::fs::read(b.join(rel))
                    .unwrap_or_else(|e| panic!("{}: {e}", b.join(rel).display()));
                assert!(std::fs::read(&p).unwrap() == there, "{}", rel.display());
                n += 1;
            }
        }
    }
    assert!(n > 0, "{} holds no file", a.display());
}

#[test]
fn issue_49_runs_uploaded_to_minio_resume_after_a_cut_and_come_back_the_same() {
    let _g = shared();
    let Some(minio) = Minio::start() else {
        return;
    };
    let dir = TempDir::new("upload-minio");
    let results = dir.path().join("results");
    let base = format!("s3://{}/results", minio.addr);
    // A run that makes the bucket, measures MinIO and uploads itself.
    let mut p = wb(
        true,
        &[
            "run",
            "--target",
            &base,
            "--create-bucket",
            "--workload",
            "put",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--results",
            results.to_str().unwrap(),
            "--upload",
            &format!("{base}/nightly"),
        ],
    );
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    let run_dir = walk_runs(&results)
        .first()
        .map(|r| results.join(&r.run_id))
        .expect("the run");
    let id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        err.contains(&format!(
            "uploaded to {base}/nightly/{id}: 1 of 1 file(s) copied"
        )),
        "{err}"
    );
    // The rest of the results directory, cut off once, then completed.
    let files = 200;
    let bulk = bulk(&results, files);
    // A file sent in parts (past 32 MiB) and brought back in ranges.
    let large: Vec<u8> = (0..33u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(bulk.join("large.bin"), large).unwrap();
    let data = minio._data.path().to_path_buf();
    let mut cut = false;
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(data.join("results/nightly/bulk"));
        if cut_off(true, &results, &format!("{base}/nightly"), &|| {
            minio_objects(&data, "results", "nightly/bulk")
        }) {
            cut = true;
            break;
        }
    }
    if !cut {
        skip("every upload finished before it could be cut (3 tries)");
        return;
    }
    let there = minio_objects(&data, "results", "nightly");
    assert!(there < files + 3, "cut before the end: {there}");
    let (sent, all, kept) = upload(true, &results, &format!("{base}/nightly"));
    // The run, its summary line, the history and the bulk: what was there
    // is not sent again.
    assert_eq!(all, files + 4, "every file");
    assert_eq!(kept, there, "the objects there before");
    assert_eq!(sent + kept, all);
    assert_eq!(
        upload(true, &results, &format!("{base}/nightly")),
        (0, all, all)
    );
    // Back, byte for byte, and the same report.
    let back = dir.path().join("back");
    let mut p = wb(
        true,
        &[
            "s3",
            "download",
            &format!("{base}/nightly"),
            back.to_str().unwrap(),
        ],
    );
    assert!(
        p.wait(Duration::from_secs(120)).success(),
        "{}",
        p.stderr_all()
    );
    same_files(&results, &back);
    same_files(&bulk, &back.join("bulk"));
    let page = |d: &str| {
        let at = dir.path().join(d);
        std::fs::create_dir_all(&at).unwrap();
        at.join("report.html")
    };
    let here = report_ok(&run_dir, &page("a"), &[]).0;
    let there = report_ok(&back.join(&id), &page("b"), &[]).0;
    let strip = |md: &str, d: &Path| md.replace(d.to_str().unwrap(), "DIR");
    assert_eq!(strip(&here, &results), strip(&there, &back));
}

#[test]
fn issue_49_an_upload_to_the_fake_server_cut_off_completes() {
    let _g = shared();
    let srv = Server::start(&["--transport", "s3"]);
    let dir = TempDir::new("upload-fake");
    let results = dir.path().join("results");
    let addr = srv.endpoint["s3://".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let url = format!("s3://{addr}/wirebench/runs");
    let mut p = wb(
        false,
        &[
            "run",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--results",
            results.to_str().unwrap(),
            "--upload",
            &url,
        ],
    );
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(err.contains(&format!("uploaded to {url}/")), "{err}");
    let files = 200;
    bulk(&results, files);
    // What the fake holds under a prefix, by its listing (anonymous, as it
    // serves).
    let listed = |prefix: &str| -> usize {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(&addr) else {
            return 0;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let req = format!(
            "GET /wirebench?list-type=2&prefix={prefix}/bulk/ HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        );
        let mut out = String::new();
        let _ = s.write_all(req.as_bytes());
        let _ = s.read_to_string(&mut out);
        out.matches("<Key>").count()
    };
    // Cut off, each try to a prefix of its own.
    let Some(k) = (0..3).find(|k| {
        cut_off(false, &results, &format!("{url}-{k}"), &|| {
            listed(&format!("runs-{k}"))
        })
    }) else {
        skip("every upload finished before it could be cut (3 tries)");
        return;
    };
    let (url, prefix) = (format!("{url}-{k}"), format!("runs-{k}"));
    let there = listed(&prefix);
    assert!((10..files).contains(&there), "{there}");
    let (sent, all, kept) = upload(false, &results, &url);
    assert_eq!(all, files + 3);
    assert_eq!((sent + kept, listed(&prefix)), (all, files));
    assert!(kept >= there, "{kept} there, the bulk's {there} among them");
    let _ = srv.stop();
}
