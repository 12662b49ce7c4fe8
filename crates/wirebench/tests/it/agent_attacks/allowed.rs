//! Issue 46: what a token holder may make an agent do: files it reads,
//! where its credentials go, its notes to the coordinator, loose token files.

use super::*;

/// An agent on loopback started with `env` set too.
fn agent_env(env: &[&str], args: &[&str]) -> (Proc, String) {
    let mut all: Vec<&str> = env.to_vec();
    all.extend([BIN, "agent", "--listen", "tcp://127.0.0.1:0"]);
    all.extend_from_slice(args);
    let p = Proc::spawn_program("env", &all);
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("the agent prints where it listens");
    let addr = first
        .strip_prefix("listening on tcp://")
        .unwrap_or_else(|| panic!("not an address: {first}"))
        .to_string();
    (p, addr)
}

/// A coordinator holding the token, its part made against `target`: the
/// agent's answer (`done` or `failed`).
fn part_of(addr: &str, req: Value) -> Value {
    let (mut peer, hello) = Peer::connect(addr);
    let answer = peer.auth(proof(&hello)).unwrap();
    assert!(answer.get("welcome").is_some(), "{answer}");
    peer.prepare(req, None).unwrap();
    peer.outcome().expect("the agent answers")
}

/// Issue 46: files a token holder names. Without `--allow-files` none is
/// read, and the answer is the same for /etc/shadow and a file that does
/// not exist; with it, a FIFO, a link to /dev/zero and a directory in the
/// allowed directory are refused, a certificate there is used. After each
/// the agent is under 100 MiB and free for the next coordinator, which
/// makes its part.
#[test]
fn issue_46_files_a_part_names_are_read_only_where_the_operator_allowed() {
    let _g = shared();
    let dir = TempDir::new("agent-attack-files");
    let token = dir.path().join("token");
    write_secret(&token, TOKEN);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let fifo = allowed.join("fifo.pem");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink("/dev/zero", allowed.join("zero.pem")).unwrap();
    std::fs::create_dir_all(allowed.join("sub")).unwrap();
    let srv = Server::start(&[]);
    let echo = json!({"target": srv.endpoint, "duration": "1s", "warmup": "0s"});
    let https = |field: &str, f: &str| json!({"transport": "http", "target": "https://127.0.0.1:9/", field: f, "duration": "1s"});
    let results = dir.path().join("results");
    let small_and_free = |a: &Proc, addr: &str, after: &str| {
        let rss = status_kib(a.pid, "VmHWM:");
        assert!(rss < 100 << 10, "{after}: the agent reached {rss} KiB");
        let m = part_of(addr, echo.clone());
        assert!(
            m.get("done").is_some(),
            "{after}: the next coordinator got {m}"
        );
    };
    let (a, addr) = agent(&[
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let mut answers = Vec::new();
    for (field, f) in [
        ("ca_file", "/dev/zero"),
        ("proto_set", "/dev/zero"),
        ("ca_file", "/etc/shadow"),
        ("ca_file", "/etc/no-such-file"),
    ] {
        let m = part_of(&addr, https(field, f));
        let why = m["failed"]["why"].as_str().unwrap_or_default().to_string();
        assert!(
            why.contains("reads no file a coordinator names"),
            "{f}: {m}"
        );
        answers.push(why.replace(f, "F"));
        small_and_free(&a, &addr, f);
    }
    assert_eq!(
        answers[2], answers[3],
        "the answer tells a file that exists from one that does not"
    );
    drop(a);

    let (a, addr) = agent(&[
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--allow-files",
        allowed.to_str().unwrap(),
    ]);
    let allowed = allowed.canonicalize().unwrap();
    for (f, needle) in [
        (allowed.join("fifo.pem"), "not a regular file"),
        (allowed.join("zero.pem"), "is a link"),
        (allowed.join("sub"), "not a regular file"),
        (
            std::path::PathBuf::from("/etc/shadow"),
            "not under a directory this agent's operator allowed",
        ),
    ] {
        let m = part_of(&addr, https("ca_file", f.to_str().unwrap()));
        let why = m["failed"]["why"].as_str().unwrap_or_default();
        assert!(why.contains(needle), "{}: {m}", f.display());
        small_and_free(&a, &addr, f.to_str().unwrap());
    }
    // A certificate where it may be: read (the connection then fails: port 9).
    let certs = TempDir::new("agent-attack-certs");
    crate::s3::test_certificates(&certs);
    let pem = allowed.join("ca.pem");
    std::fs::copy(certs.path().join("ca.pem"), &pem).unwrap();
    let m = part_of(&addr, https("ca_file", pem.to_str().unwrap()));
    let why = m["failed"]["why"].as_str().unwrap_or_default();
    assert!(!why.contains("--ca-file") && !why.contains("ca.pem"), "{m}");
    drop(a);
    srv.stop();
}

unsafe extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

/// Issue 46: a token holder points the agent at a listener of its own: the
/// agent's $REDISCLI_AUTH and S3 keys are not sent (the listener records
/// every byte), the part fails saying why; with `--allow-target` for that
/// address the password does go (the listener can tell).
#[test]
fn issue_46_an_agents_credentials_go_only_to_targets_its_operator_listed() {
    use std::io::Read;
    let _g = shared();
    let dir = TempDir::new("agent-attack-creds");
    let token = dir.path().join("token");
    write_secret(&token, TOKEN);
    const PASSWORD: &str = "the-agents-own-redis-password";
    const KEY: &str = "AKIAAGENTSOWNKEY0001";
    // A listener that answers every line as a Redis server that wants a
    // password, and keeps what it got.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    {
        let got = got.clone();
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                let got = got.clone();
                std::thread::spawn(move || {
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        got.lock().unwrap().extend_from_slice(&buf[..n]);
                        let _ = s.write_all(b"-NOAUTH Authentication required.\r\n");
                    }
                });
            }
        });
    }
    let env = [
        &*format!("REDISCLI_AUTH={PASSWORD}"),
        &*format!("AWS_ACCESS_KEY_ID={KEY}"),
        "AWS_SECRET_ACCESS_KEY=the-agents-own-s3-secret",
    ];
    let common = [
        "--token-file",
        token.to_str().unwrap(),
        "--results",
        dir.str(),
    ];
    let redis = json!({"target": format!("redis://127.0.0.1:{port}"), "duration": "1s"});
    let s3 = json!({"target": format!("s3://127.0.0.1:{port}/bucket"), "duration": "1s"});
    let (a, addr) = agent_env(&env, &common);
    let m = part_of(&addr, redis.clone());
    let why = m["failed"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("$REDISCLI_AUTH was not sent") && why.contains("--allow-target"),
        "{m}"
    );
    let m = part_of(&addr, s3.clone());
    let why = m["failed"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("S3 credentials go only to the targets its operator listed"),
        "{m}"
    );
    drop(a);
    let seen = String::from_utf8_lossy(&got.lock().unwrap()).to_string();
    assert!(
        !seen.is_empty(),
        "the listener heard nothing: the test proves nothing"
    );
    assert!(!seen.contains(PASSWORD) && !seen.contains(KEY), "{seen}");

    // The operator's choice: that target may have them.
    let allow = format!("127.0.0.1:{port}");
    let mut args = common.to_vec();
    args.extend(["--allow-target", &allow]);
    let (a, addr) = agent_env(&env, &args);
    let _ = part_of(&addr, redis);
    drop(a);
    let seen = String::from_utf8_lossy(&got.lock().unwrap()).to_string();
    assert!(
        seen.contains(PASSWORD),
        "the allowed target did not get the password: {seen}"
    );
}

/// Issue 46: an agent holding the token floods its coordinator: 150 notes
/// with escape sequences, then a 200 MiB note. The coordinator prints 99
/// notes, escaped, and says it shows no more; it drops the agent once the
/// note passes 1 MiB, and stays under 100 MiB.
#[test]
fn issue_46_an_agents_notes_are_bounded_and_escaped_on_the_coordinator() {
    use std::io::{BufRead, BufReader, Write};
    let _g = shared();
    let dir = TempDir::new("agent-attack-notes");
    let srv = Server::start(&[]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut say = |v: Value| writeln!(w, "{v}").is_ok();
        say(json!({"hello": {"protocol": 1, "nonce": "ab", "token": false}}));
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            let m: Value = serde_json::from_str(&line).unwrap();
            line.clear();
            if let Some(a) = m.get("auth") {
                say(json!({"welcome": {"proof": null, "build": a["build"]}}));
            } else if let Some(p) = m.get("probe") {
                let t = p["t1"].as_u64().unwrap();
                say(json!({"probe": {"t1": t, "t2": t, "t3": t}}));
            } else if m.get("prepare").is_some() {
                for i in 0..150 {
                    say(
                        json!({"note": {"text": format!("note {i} \u{1b}]0;pwned\u{7}\u{1b}[2J\nforged line")}}),
                    );
                }
                // One note of 200 MiB, streamed.
                let mut w = r.get_ref().try_clone().unwrap();
                let chunk = vec![b'A'; 1 << 20];
                let mut sent = 0;
                if w.write_all(br#"{"note":{"text":""#).is_ok() {
                    while sent < 200 && w.write_all(&chunk).is_ok() {
                        sent += 1;
                    }
                }
                return sent;
            }
        }
        0
    });
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--target",
        &srv.endpoint,
        "--agents",
        &addr,
        "--duration",
        "2s",
        "--warmup",
        "0s",
    ]);
    let mut peak = 0;
    while !p.exited() {
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{}/status", p.pid))
            && let Some(kib) = s
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    let sent = peer.join().unwrap();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(peak < 100 << 10, "the coordinator reached {peak} KiB");
    assert!(sent < 200, "the coordinator read the whole 200 MiB note");
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "raw escapes: {err}"
    );
    assert_eq!(
        err.matches(&format!("agent {addr}: note ")).count(),
        99,
        "{err}"
    );
    assert!(
        err.contains("more than 99 notes: the rest are not shown"),
        "{err}"
    );
    assert!(!err.lines().any(|l| l.starts_with("forged line")), "{err}");
    assert!(
        err.contains("a message longer than 1048576 bytes that is not a result"),
        "{err}"
    );
    srv.stop();
}

/// Issue 46: a token file others may read, or a link to one, is refused
/// by the agent and by the coordinator, naming the flag and the fix;
/// `--accept-loose-secret-files` takes it with a warning. With
/// `--allow-exec`, a file a part writes through a link inside `--results`
/// is refused, and nothing lands outside.
#[test]
fn issue_46_a_loose_token_file_is_refused_and_no_link_in_results_is_followed() {
    use std::os::unix::fs::PermissionsExt;
    let _g = shared();
    let dir = TempDir::new("agent-attack-loose");
    let loose = dir.path().join("loose-token");
    std::fs::write(&loose, TOKEN).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let tight = dir.path().join("token");
    write_secret(&tight, TOKEN);
    let link = dir.path().join("link-token");
    std::os::unix::fs::symlink(&tight, &link).unwrap();
    for (file, needle) in [
        (
            &loose,
            "group or others may read or write it (mode 644): chmod 600",
        ),
        (&link, "is a symbolic link"),
    ] {
        for args in [
            vec!["agent", "--token-file", file.to_str().unwrap()],
            vec![
                "run",
                "--target",
                "tcp://127.0.0.1:9",
                "--agents",
                "127.0.0.1:9",
                "--token-file",
                file.to_str().unwrap(),
            ],
        ] {
            let mut p = Proc::spawn(&args);
            let st = p.wait(Duration::from_secs(30));
            let err = p.stderr_all();
            assert_eq!(st.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("--token-file") && err.contains(needle),
                "{args:?}: {err}"
            );
        }
    }
    let results = dir.path().join("results");
    let (mut a, addr) = agent(&[
        "--token-file",
        loose.to_str().unwrap(),
        "--accept-loose-secret-files",
        "--allow-exec",
        "--results",
        results.to_str().unwrap(),
    ]);
    let warned = a.stderr_until(Duration::from_secs(10), |l| l.contains("warning"));
    assert!(
        warned.contains("used anyway (--accept-loose-secret-files)"),
        "{warned}"
    );
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&results).unwrap();
    std::os::unix::fs::symlink(&outside, results.join("evil")).unwrap();
    let srv = Server::start(&[]);
    for field in ["hlog", "trace"] {
        let m = part_of(
            &addr,
            json!({"target": srv.endpoint, "duration": "1s", "warmup": "0s", field: "evil/x"}),
        );
        let why = m["failed"]["why"].as_str().unwrap_or_default();
        assert!(
            why.contains("is a link: an agent follows no link"),
            "{field}: {m}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    srv.stop();
}
