//! The reference servers fed arbitrary bytes over a socket (issue 16's fuzz
//! targets, as property tests on the stable toolchain): the msgr server a
//! handshake and frames of any shape, the fake S3 server requests with
//! random methods, paths, queries, headers and bodies. Neither panics,
//! every answer is of its protocol, and each still serves a good request
//! afterwards.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wirebench_core::spec::Arch;
use wirebench_transports::msgr::server::{self, ConnConfig, ServerConfig};
use wirebench_transports::s3::fake::{self, FakeConfig};

/// The cases of each property: `n`, or `PROPTEST_CASES` for a longer hunt.
fn cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}

/// Panics anywhere in this process, server tasks included (tokio keeps a
/// panicking task's server running, so it would go unseen).
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            before(info);
        }));
    });
}

/// Sends `bytes` in `pieces`, closes the sending side, and returns what
/// came back before the server closed (or 5 s passed).
fn exchange(addr: &str, bytes: &[u8], pieces: &[usize]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut at = 0;
    for &n in pieces.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + n).min(bytes.len());
        if s.write_all(&bytes[at..end]).is_err() {
            break;
        }
        at = end;
    }
    let _ = s.shutdown(Shutdown::Write);
    let mut back = Vec::new();
    let _ = (&mut s).take(1 << 20).read_to_end(&mut back);
    back
}

/// Sends a whole request that says `Connection: close` and reads the answer
/// to the server's close, keeping its own side open (a server may drop a
/// half-closed connection before it answers).
fn ask(addr: &str, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).unwrap();
    let mut back = Vec::new();
    let _ = (&mut s).take(1 << 20).read_to_end(&mut back);
    String::from_utf8_lossy(&back).to_string()
}

fn hello(version: u16, mode: u8, flags: u8, size: u32, response: u32) -> Vec<u8> {
    let mut b = b"WBMSGR\r\n".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&[mode, flags]);
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&response.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b
}

fn frame(kind: u8, len: u32, seq: u64, payload: usize) -> Vec<u8> {
    let mut b = 0xB7E5u16.to_le_bytes().to_vec();
    b.extend_from_slice(&[kind, 0]);
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&seq.to_le_bytes());
    b.extend((0..payload).map(|i| i as u8));
    b
}

/// A handshake, good or not, then frames of any shape, then garbage.
fn msgr_bytes() -> impl Strategy<Value = Vec<u8>> {
    let good_hello = (0u8..5, 0u8..3, 0u32..3000, 0u32..3000)
        .prop_map(|(mode, flags, size, resp)| hello(1, mode, flags, size, resp));
    let any_hello = prop::collection::vec(any::<u8>(), 24);
    let frames = prop::collection::vec(
        (
            0u8..6,
            prop_oneof![0u32..3000, any::<u32>()],
            any::<u64>(),
            0usize..3000,
        ),
        0..6,
    );
    (
        prop_oneof![4 => good_hello, 1 => any_hello, 1 => Just(hello(9, 1, 0, 8, 8))],
        frames,
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(mut b, frames, garbage)| {
            for (kind, len, seq, payload) in frames {
                let payload = payload.min(len as usize);
                b.extend(frame(kind, len, seq, payload));
            }
            b.extend(garbage);
            b
        })
}

#[test]
fn the_msgr_server_takes_any_bytes() {
    count_panics();
    let mut conn = ConnConfig::new(64 << 10);
    conn.idle_timeout = Some(Duration::from_secs(3));
    let srv = server::start(&ServerConfig {
        arch: Arch::Reactor,
        listen: "tcp://127.0.0.1:0".parse().unwrap(),
        cpus: vec![],
        poll: false,
        conn,
    })
    .unwrap();
    let addr = srv
        .endpoint
        .to_string()
        .trim_start_matches("tcp://")
        .to_string();
    let pieces = prop::collection::vec(1usize..4000, 1..6);
    TestRunner::new(Config::with_cases(cases(300)))
        .run(&(msgr_bytes(), pieces), |(bytes, pieces)| {
            let back = exchange(&addr, &bytes, &pieces);
            if !back.is_empty() {
                prop_assert_eq!(&back[..8], b"WBMSGR\r\n", "an answer that is not msgr");
            }
            Ok(())
        })
        .unwrap();
    // A good echo still works.
    let mut good = hello(1, 1, 0, 5, 5);
    good.extend(frame(1, 5, 0, 5));
    let back = exchange(&addr, &good, &[4096]);
    assert_eq!(back.len(), 16 + 16 + 5, "{back:?}");
    assert_eq!(back[16 + 2], 2, "a response frame");
    let stats = srv.shutdown();
    assert!(stats.conns_accepted > 300);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a panic while serving");
}

/// An HTTP request with random parts: mostly well formed (so that it
/// reaches the S3 handlers), some parts wrong.
fn s3_request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop_oneof![
        8 => prop::sample::select(vec!["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS"])
            .prop_map(String::from),
        1 => "[A-Za-z]{0,8}",
    ];
    let path = prop_oneof![
        6 => prop::sample::select(vec![
            "/", "/wirebench", "/wirebench/", "/wirebench/k1", "/wirebench/a/b/c", "/other/k",
            "/%2e%2e/x", "/wirebench/%ZZ", "//", "*", "/wirebench/k%20x",
        ])
        .prop_map(String::from),
        1 => "/[a-zA-Z0-9%/._~-]{0,40}",
    ];
    let query = prop_oneof![
        6 => prop::sample::select(vec![
            "", "", "", "?uploads", "?uploadId=abc&partNumber=1", "?partNumber=0&uploadId=",
            "?list-type=2&max-keys=5", "?list-type=2&max-keys=-1", "?delete", "?acl",
            "?uploadId=zzz", "?continuation-token=%%", "?list-type=2&prefix=k&delimiter=/",
        ])
        .prop_map(String::from),
        1 => "\\?[a-z=&%0-9-]{0,30}",
    ];
    let header = prop_oneof![
        3 => (any::<u32>(), any::<u32>()).prop_map(|(a, b)| format!("Range: bytes={}-{}", a % 5000, b % 9000)),
        1 => Just("Range: bytes=-5".to_string()),
        1 => Just("Range: bytes=9-2".to_string()),
        2 => Just("x-amz-content-sha256: UNSIGNED-PAYLOAD".to_string()),
        1 => Just("Expect: 100-continue".to_string()),
        1 => Just("Authorization: AWS4-HMAC-SHA256 Credential=x/y, Signature=z".to_string()),
        1 => Just("Content-Type: application/xml".to_string()),
        2 => "[A-Za-z-]{1,20}: [ -~]{0,40}",
        1 => "[ -~]{0,40}",
    ];
    // How the body is framed: 0 exact length, 1 none, 2 a wrong length, 3 chunked.
    let framing = prop_oneof![6 => Just(0u8), 2 => Just(1), 1 => Just(2), 1 => Just(3)];
    let body = prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..2000),
        1 => "<Delete><Object><Key>k1</Key></Object></Delete>".prop_map(String::into_bytes),
        1 => "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"x\"</ETag></Part></CompleteMultipartUpload>"
            .prop_map(String::into_bytes),
    ];
    (
        method,
        path,
        query,
        prop::collection::vec(header, 0..4),
        body,
        framing,
        any::<u64>(),
        prop_oneof![9 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(m, p, q, headers, body, framing, wrong, crlf)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut head = format!("{m} {p}{q} HTTP/1.1{eol}Host: 127.0.0.1{eol}");
            for h in headers {
                head.push_str(&h);
                head.push_str(eol);
            }
            match framing {
                0 => head.push_str(&format!("Content-Length: {}{eol}", body.len())),
                1 => {}
                2 => head.push_str(&format!("Content-Length: {wrong}{eol}")),
                _ => head.push_str(&format!("Transfer-Encoding: chunked{eol}")),
            }
            head.push_str(eol);
            let mut b = head.into_bytes();
            if framing == 3 {
                b.extend(format!("{:x}\r\n", body.len()).into_bytes());
                b.extend(&body);
                b.extend(b"\r\n0\r\n\r\n");
            } else {
                b.extend(body);
            }
            b
        })
}

#[test]
fn the_fake_s3_server_takes_any_request() {
    count_panics();
    let mut cfg = FakeConfig::new("127.0.0.1:0", "wirebench");
    cfg.header_timeout = Duration::from_secs(3);
    let srv = fake::start(&cfg).unwrap();
    let addr = srv.addr.to_string();
    let pieces = prop::collection::vec(1usize..3000, 1..4);
    TestRunner::new(Config::with_cases(cases(250)))
        .run(&(s3_request(), pieces), |(bytes, pieces)| {
            let back = exchange(&addr, &bytes, &pieces);
            if !back.is_empty() {
                prop_assert!(
                    back.starts_with(b"HTTP/1.1 "),
                    "not an HTTP answer: {:?}",
                    String::from_utf8_lossy(&back[..back.len().min(80)])
                );
            }
            Ok(())
        })
        .unwrap();
    // A good PUT then GET still work (in the bucket made again: a random
    // DELETE may have removed it).
    let mk = b"PUT /wirebench HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let back = ask(&addr, mk);
    assert!(
        back.starts_with("HTTP/1.1 200") || back.starts_with("HTTP/1.1 409"),
        "{back}"
    );
    let put = b"PUT /wirebench/after HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    let back = ask(&addr, put);
    assert!(back.starts_with("HTTP/1.1 200"), "{back}");
    let get = b"GET /wirebench/after HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let back = ask(&addr, get);
    assert!(
        back.starts_with("HTTP/1.1 200") && back.ends_with("\0\0\0\0\0"),
        "{back}"
    );
    srv.shutdown();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a panic while serving");
}

/// Found by the fuzz target: a range of an empty object made the fake
/// server subtract past zero (a panic in a debug build). S3 answers it 416.
#[test]
fn a_range_of_an_empty_object_is_unsatisfiable() {
    count_panics();
    let cfg = FakeConfig::new("127.0.0.1:0", "wirebench");
    let srv = fake::start(&cfg).unwrap();
    let addr = srv.addr.to_string();
    let put = b"PUT /wirebench/empty HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert!(ask(&addr, put).starts_with("HTTP/1.1 200"));
    for range in ["bytes=0-", "bytes=-0", "bytes=0-0", "bytes=-5"] {
        let get = format!(
            "GET /wirebench/empty HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: {range}\r\nConnection: close\r\n\r\n"
        );
        let back = ask(&addr, get.as_bytes());
        assert!(back.starts_with("HTTP/1.1 416"), "{range}: {back}");
    }
    let get = b"GET /wirebench/empty HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert!(ask(&addr, get).starts_with("HTTP/1.1 200"));
    srv.shutdown();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "the server panicked");
}
