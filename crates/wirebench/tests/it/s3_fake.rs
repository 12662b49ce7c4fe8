//! Issue 35: the fake S3 server answers as S3 does where a peer is wrong:
//! a multipart completion with a wrong part ETag, an XML body too long or
//! of no length, and its secret never on its command line.

use crate::helpers::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP/1.1 request on a new connection: status, headers, body.
fn http(addr: &str, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let code = status.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = String::new();
    let mut len = 0;
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        if l == "\r\n" || l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
        headers.push_str(&l);
    }
    // A HEAD's answer tells a length and has no body.
    let mut b = vec![0u8; if head.starts_with("HEAD") { 0 } else { len }];
    r.read_exact(&mut b).unwrap();
    (code, headers, String::from_utf8_lossy(&b).into_owned())
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let a = text
        .find(open)
        .unwrap_or_else(|| panic!("{open} in {text}"))
        + open.len();
    let b = text[a..].find(close).unwrap() + a;
    &text[a..b]
}

#[test]
fn issue_35_a_completion_with_a_wrong_part_etag_is_refused_and_the_upload_kept() {
    let _g = shared();
    let srv = Server::start(&["--transport", "s3"]);
    let addr = srv
        .endpoint
        .strip_prefix("s3://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let (code, _, body) = http(
        &addr,
        "POST /wirebench/big?uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let id = between(&body, "<UploadId>", "</UploadId>").to_string();
    let part = vec![b'p'; 1000];
    let (code, headers, _) = http(
        &addr,
        &format!(
            "PUT /wirebench/big?partNumber=1&uploadId={id} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
        ),
        &part,
    );
    assert_eq!(code, 200);
    let etag = headers
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("etag:")
                .then(|| l[5..].trim().to_string())
        })
        .unwrap();
    let complete = |etag: &str| {
        let xml = format!(
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part></CompleteMultipartUpload>"
        );
        http(
            &addr,
            &format!(
                "POST /wirebench/big?uploadId={id} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                xml.len()
            ),
            xml.as_bytes(),
        )
    };
    let (code, _, body) = complete("\"0123456789abcdef0123456789abcdef\"");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("<Code>InvalidPart</Code>"), "{body}");
    // Refused, the upload is still there to be completed right.
    let (code, _, body) = complete(&etag);
    assert_eq!(code, 200, "{body}");
    let (code, _, _) = http(
        &addr,
        "HEAD /wirebench/big HTTP/1.1\r\nHost: x\r\n\r\n",
        b"",
    );
    assert_eq!(code, 200);
    // An XML body announced at 30 MB: refused before it is read, with 400.
    let (code, _, body) = http(
        &addr,
        &format!(
            "POST /wirebench/big?uploadId={id} HTTP/1.1\r\nHost: x\r\nContent-Length: 30000000\r\n\r\n"
        ),
        &vec![b'<'; 1 << 20],
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("MaxMessageLengthExceeded"), "{body}");
    let (code, _, body) = http(
        &addr,
        "POST /wirebench/?delete HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5\r\n<Dele\r\n",
    );
    assert_eq!(code, 411, "{body}");
    srv.stop();
}

#[test]
fn issue_35_the_fake_servers_secret_is_never_on_its_command_line() {
    let _g = shared();
    let mut p = Proc::spawn(&[
        "serve",
        "--transport",
        "s3",
        "--listen",
        "tcp://127.0.0.1:0",
        "--access-key",
        "AK",
        "--secret-key",
        "visible-to-ps",
    ]);
    let st = p.wait(Duration::from_secs(20));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("set AWS_SECRET_ACCESS_KEY instead"), "{err}");
    let mut p = Proc::spawn(&[
        "serve",
        "--transport",
        "s3",
        "--listen",
        "tcp://127.0.0.1:0",
        "--access-key",
        "AK",
    ]);
    let st = p.wait(Duration::from_secs(20));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("AWS_SECRET_ACCESS_KEY, which is not set"),
        "{err}"
    );
}

/// Issue 46: `run --secret-key SECRET` is refused by name like `serve`'s
/// (it would sit in ps and /proc/PID/cmdline for the whole run), and the
/// secret is not echoed; `--secret-key-file` signs with the file's key
/// (a wrong one is refused by the server).
#[test]
fn issue_46_a_runs_secret_is_never_on_its_command_line() {
    let _g = shared();
    let srv = Server::start_env(
        &["AWS_SECRET_ACCESS_KEY=right-secret"],
        &["--transport", "s3", "--access-key", "AK"],
    );
    // s3://HOST:PORT/BUCKET
    let target = srv.endpoint.clone();
    let dir = TempDir::new("secretfile");
    let run = |secret: &[&str]| {
        let mut args = vec![
            "run",
            "--transport",
            "s3",
            "--target",
            &target,
            "--access-key",
            "AK",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--results",
            dir.str(),
            "--create-bucket",
        ];
        args.extend_from_slice(secret);
        let mut p = Proc::spawn(&args);
        let st = p.wait(Duration::from_secs(60));
        (st, p.stderr_all())
    };
    let (st, err) = run(&["--secret-key", "visible-to-ps"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("--secret-key") && err.contains("--secret-key-file"),
        "{err}"
    );
    assert!(
        !err.contains("visible-to-ps"),
        "the secret is echoed: {err}"
    );
    let file = dir.path().join("key");
    write_secret(&file, "right-secret\n");
    let (st, err) = run(&["--secret-key-file", file.to_str().unwrap()]);
    assert!(st.success(), "{err}");
    write_secret(&file, "wrong-secret\n");
    let (st, err) = run(&["--secret-key-file", file.to_str().unwrap()]);
    assert!(
        !st.success() && err.contains("SignatureDoesNotMatch"),
        "{err}"
    );
    srv.stop();
}

/// An S3 "server" that answers every request 200 with an empty body, and
/// a listing with `listing`.
fn lying_s3(listing: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let stopping = stopping.clone();
            std::thread::spawn(move || {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                while !stopping.load(Ordering::Relaxed) {
                    let mut line = String::new();
                    match r.read_line(&mut line) {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(_) => continue,
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; len];
                    let _ = r.read_exact(&mut body);
                    let answer = if line.starts_with("GET") && line.contains("list-type=2") {
                        listing
                    } else {
                        ""
                    };
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nETag: \"e\"\r\n\r\n{answer}",
                        answer.len()
                    );
                    if w.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, stop)
}

#[test]
fn issue_35_a_listing_that_is_not_xml_is_a_failure_not_a_success() {
    let _g = shared();
    let dir = TempDir::new("s3-lying");
    let (addr, stop) = lying_s3("<<<not xml");
    let target = format!("s3://{addr}/bkt");
    let (_, r, err) = run_json_or_error(
        &dir,
        &[
            "--transport",
            "s3",
            "--target",
            &target,
            "--workload",
            "list",
            "--objects",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = r.unwrap_or_else(|| panic!("a result: {err}"));
    assert_eq!(r.summary.ops, 0, "{err}");
    assert!(r.summary.errors > 0, "{err}");
    assert!(
        r.summary.failures.contains_key("list answer not XML"),
        "{:?}",
        r.summary.failures
    );
}
