//! Agents reached as users deploy them: over ssh, as a Kubernetes Indexed
//! Job's pods by name, under a sweep.

use super::*;

#[test]
fn an_agent_launched_over_ssh_makes_its_part_and_goes_with_the_run() {
    let _g = shared();
    let Some(net) = Net::new(2) else { return };
    let sshd = "/usr/sbin/sshd";
    if !std::path::Path::new(sshd).exists() {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_NETNS").is_none(),
            "{sshd} is required (openssh-server)"
        );
        crate::helpers::skip(format!("no {sshd}"));
        return;
    }
    let dir = TempDir::new("agents-ssh");
    // What the launched agent leaves in root's home (a cache of the binary,
    // its parts' results) is removed at the end unless it was there before.
    let cache = std::path::Path::new("/root/.cache/wirebench");
    let cache_results = cache.join("results");
    let had_results = cache_results.exists();
    let had_copies: Vec<_> = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    let key = |name: &str| {
        let f = dir.path().join(name);
        let st = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&f)
            .status()
            .unwrap();
        assert!(st.success());
        f
    };
    let host_key = key("host_key");
    let id = key("id");
    let authorized = dir.path().join("authorized_keys");
    std::fs::copy(id.with_extension("pub"), &authorized).unwrap();
    let sshd_config = dir.path().join("sshd_config");
    std::fs::write(
        &sshd_config,
        format!(
            "Port 22\nListenAddress {}\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n",
            net.addr(1),
            host_key.display(),
            authorized.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let mut sshd_proc =
        net.spawn_program(1, sshd, &["-D", "-e", "-f", sshd_config.to_str().unwrap()]);
    sshd_proc.stderr_until(Duration::from_secs(20), |l| {
        l.contains("Server listening on")
    });
    let ssh_config = dir.path().join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            id.display()
        ),
    )
    .unwrap();
    let (_srv, endpoint) = server(&net, &[]);
    let launch = format!("ssh:root@{}", net.addr(1));
    let mut all = vec!["run", "--results", dir.str(), "--format", "json"];
    let more = [
        "--target",
        &endpoint,
        "--launch",
        &launch,
        "--ssh-config",
        ssh_config.to_str().unwrap(),
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "1s",
    ];
    all.extend_from_slice(&more);
    let mut coord = net.spawn(0, &all);
    let st = coord.wait(Duration::from_secs(120));
    let out = coord.stdout_all();
    let err = coord.stderr_all();
    assert_eq!(st.code(), Some(0), "{err}");
    let r: RunResult = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(r.status.state, RunState::Complete);
    assert_eq!(r.agents.len(), 1);
    let a = &r.agents[0];
    assert_eq!(a.agent, launch);
    assert_eq!(a.clients, 2);
    assert!(a.ops > 0 && a.ops == r.summary.ops, "{a:?}");
    assert!(err.contains(&format!("{launch}: agent started")), "{err}");
    // The part is kept there (here: the same file system).
    let part = std::path::Path::new(&a.dir);
    assert!(part.join("run.json").exists(), "{}", a.dir);
    // Nothing stays: no agent, no control socket.
    let mut left = running_with("--token-stdin");
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = running_with("--token-stdin");
    }
    assert!(left.is_empty(), "agents left running: {left:?}");
    let control = std::env::temp_dir().join(format!("wirebench-ssh-{}", coord.pid));
    assert!(!control.exists(), "{}", control.display());
    let _ = std::fs::remove_dir_all(part);
    if !had_results {
        let _ = std::fs::remove_dir_all(&cache_results);
    }
    for e in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        let p = e.path();
        if !had_copies.contains(&p) && e.file_name().to_string_lossy().starts_with("wirebench-") {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[test]
fn an_indexed_jobs_agents_are_reached_by_their_names_and_complete() {
    let _g = shared();
    let dir = TempDir::new("agents-k8s");
    let token = token_file(&dir, TOKEN);
    let srv = crate::helpers::Server::start(&[]);
    // The manifests, as a user renders them.
    let out = dir.path().join("manifests");
    let mut p = Proc::spawn(&[
        "k8s",
        "render",
        "--replicas",
        "2",
        "--image",
        "wb:test",
        "--name",
        "wb",
        "--target",
        &srv.endpoint,
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "1s",
        "-o",
        out.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(30));
    assert!(st.success(), "{}", p.stderr_all());
    let job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("coordinator-job.json")).unwrap())
            .unwrap();
    let mut args: Vec<String> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let names: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--agents")
        .map(|w| w[1].clone())
        .collect();
    assert_eq!(
        names,
        ["wb-agents-0.wb-agents:7460", "wb-agents-1.wb-agents:7460"]
    );
    // Here: the pods' results directory is ours, the token a file.
    let at = args.iter().position(|a| a == "--results").unwrap();
    args[at + 1] = dir.str().to_string();
    args.extend([
        "--format".into(),
        "json".into(),
        "--token-file".into(),
        token.clone(),
    ]);
    // Two agents as the Job starts them, each with its index.
    let start = |index: usize| {
        let env = format!("JOB_COMPLETION_INDEX={index}");
        let p = Proc::spawn_program(
            "env",
            &[
                &env,
                crate::helpers::BIN,
                "agent",
                "--listen",
                "tcp://127.0.0.1:0",
                "--runs",
                "1",
                "--token-file",
                &token,
                // Its parts in the test's directory, not the crate's.
                "--results",
                dir.str(),
            ],
        );
        bound(p)
    };
    let coordinate = |map: String| {
        let resolve = format!("WIREBENCH_TEST_RESOLVE={map}");
        let mut all = vec![resolve.as_str(), crate::helpers::BIN];
        all.extend(args.iter().map(String::as_str));
        let mut p = Proc::spawn_program("env", &all);
        let st = p.wait(Duration::from_secs(60));
        (st.code(), p.stdout_all(), p.stderr_all())
    };
    let (mut a0, addr0) = start(0);
    let (mut a1, addr1) = start(1);
    let (code, out, err) = coordinate(format!("{}={addr0},{}={addr1}", names[0], names[1]));
    assert_eq!(code, Some(0), "{err}");
    let r: RunResult = serde_json::from_str(&out).unwrap();
    let parts: Vec<&str> = r.agents.iter().map(|a| a.agent.as_str()).collect();
    assert_eq!(parts, names);
    assert!(r.agents.iter().all(|a| a.ops > 0));
    // Each agent made its one run and exited: the Job completes.
    for a in [&mut a0, &mut a1] {
        let st = a.wait(Duration::from_secs(30));
        assert!(st.success(), "{st}");
    }
    // A name that reaches the wrong pod is refused.
    let (_b0, addr0) = start(0);
    let (_b1, addr1) = start(1);
    let (code, _, err) = coordinate(format!("{}={addr1},{}={addr0}", names[0], names[1]));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("it is agent 1 of its Job (JOB_COMPLETION_INDEX), not 0"),
        "{err}"
    );
    srv.stop();
}

#[test]
fn a_sweep_runs_each_point_on_the_agents() {
    let _g = shared();
    let dir = TempDir::new("agents-sweep");
    let srv = crate::helpers::Server::start(&[]);
    let start = || loopback_agent(&dir, &[]);
    let (_a1, addr1) = start();
    let (_a2, addr2) = start();
    let spec = dir.path().join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"agents\"\n[base]\ntarget = \"{}\"\nagents = [\"{addr1}\", \"{addr2}\"]\nclients = 2\nduration = \"1s\"\nwarmup = \"0s\"\n[matrix]\ndepth = [1, 4]\n",
            srv.endpoint
        ),
    )
    .unwrap();
    let results = dir.path().join("results");
    let mut p = Proc::spawn(&[
        "sweep",
        spec.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let st = p.wait(Duration::from_secs(120));
    assert!(st.success(), "{}", p.stderr_all());
    let mut depths = Vec::new();
    for e in std::fs::read_dir(results.join("agents")).unwrap().flatten() {
        let f = e.path().join("run.json");
        if !f.exists() {
            continue;
        }
        let r: RunResult = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r.agents.len(), 2, "{:?}", r.agents);
        assert_eq!(r.summary.ops, r.agents.iter().map(|a| a.ops).sum::<u64>());
        depths.push(r.spec.depth);
    }
    depths.sort_unstable();
    assert_eq!(depths, [1, 4]);
    srv.stop();
}
