//! The tests of `hardening` that need the machine to themselves (see `whole_machine`).

use crate::hardening::*;
use crate::helpers::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn slowloris_connections_to_the_fake_s3_server_are_closed_within_the_header_timeout() {
    // Alone: the bound is on time.
    let _g = exclusive();
    let srv = Server::start(&["--transport", "s3"]);
    let addr = srv
        .endpoint
        .trim_start_matches("s3://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let pid = srv.proc.pid;
    let before = status_kib(pid, "VmRSS:");
    let mut conns: Vec<Option<(TcpStream, Instant)>> = (0..500)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /wirebench/k HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s.set_nonblocking(true).unwrap();
            Some((s, Instant::now()))
        })
        .collect();
    // A header line every second on each, as slowloris does, until the
    // server closes them all; the header timeout is 10 s.
    let limit = Duration::from_secs(10 + 2);
    let (mut line, mut last_line) = (0, Instant::now());
    let mut longest = Duration::ZERO;
    while conns.iter().any(Option::is_some) {
        let send = last_line.elapsed() >= Duration::from_secs(1);
        if send {
            (line, last_line) = (line + 1, Instant::now());
        }
        for c in conns.iter_mut() {
            let Some((s, opened)) = c else { continue };
            let mut buf = [0u8; 1024];
            let gone = match s.read(&mut buf) {
                Ok(_) => true, // end of stream, or the 408 before it
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    send && s.write_all(format!("X-{line}: a\r\n").as_bytes()).is_err()
                }
                Err(_) => true,
            };
            let open_for = opened.elapsed();
            assert!(
                open_for < limit,
                "a slowloris connection still open after {open_for:?}"
            );
            if gone {
                longest = longest.max(open_for);
                *c = None;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        longest >= Duration::from_secs(9),
        "closed before the header timeout: {longest:?}"
    );
    let grew = status_kib(pid, "VmHWM:").saturating_sub(before);
    assert!(
        grew < 64 << 10,
        "500 slowloris connections grew the peak RSS by {} MiB",
        grew >> 10
    );
    srv.stop();
}
