//! Issue 49: the manifests `k8s render` writes run as written. Each
//! container of the rendered Jobs runs in wirebench's image (made by
//! `scripts/image.sh` from this build) with podman: its command, args, env
//! (the token from the Secret) and mounts as the manifest gives them, each
//! pod in a host of its own (network namespaces joined by a bridge), the
//! agents' names resolved as the headless Service resolves them. Two agents
//! and the coordinator run against a server in the test; the merged result
//! is the exact sum of the agents' parts, found in the results' claim and
//! in MinIO (run in the server's host), where the coordinator uploaded it
//! (`--upload`, its credentials from their Secret). The coordinator serves its live
//! metrics as the scrape annotations say, to a scraper with the metrics
//! Secret's token only.
//!
//! Without podman it skips (fails where $WIREBENCH_REQUIRE_PODMAN is set,
//! as `.ci/run` does); where podman cannot run containers it skips, saying
//! why.

use super::{Net, TOKEN, server};
use crate::fixtures::minio::{MINIO_PASSWORD, MINIO_USER};
use crate::helpers::{BIN, Proc, TempDir, shared, skip};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use wirebench_core::result::RunResult;

/// The uid the image runs as (scripts/image.sh).
const UID: u32 = 10001;

/// The scrape token (the Secret NAME-metrics-token), not the agents'.
const METRICS_TOKEN: &str = "the-scrape-token-of-this-test-42";

/// The image, loaded in podman, with the flags that let podman run it
/// here; removed with the containers named when dropped.
struct Image {
    name: String,
    flags: Vec<String>,
    containers: Vec<String>,
}

fn podman(args: &[&str]) -> std::process::Output {
    Command::new("podman")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("podman: {e}"))
}

impl Image {
    /// Builds and loads the image of this build; None (the test skips)
    /// where podman is missing or cannot run it.
    fn new(dir: &TempDir) -> Option<Image> {
        let required = std::env::var_os("WIREBENCH_REQUIRE_PODMAN").is_some();
        if Command::new("podman").arg("--version").output().is_err() {
            assert!(!required, "podman is required ($WIREBENCH_REQUIRE_PODMAN)");
            skip("no podman (apt-get install podman runc mmdebstrap umoci)");
            return None;
        }
        let tag = format!("it-{}", std::process::id());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/image.sh");
        let out = Command::new(script)
            .args(["--binary", BIN, "--tag", &tag, "--load", "--out"])
            .arg(dir.path().join("image"))
            .env("TMPDIR", dir.path())
            .output()
            .expect("scripts/image.sh runs");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            assert!(!required, "scripts/image.sh failed: {err}");
            skip(format!("scripts/image.sh could not build the image: {err}"));
            return None;
        }
        let mut image = Image {
            name: format!("localhost/wirebench:{tag}"),
            flags: vec![],
            containers: vec![],
        };
        // Where podman's default runtime cannot (crun on a hybrid cgroup
        // tree, or raising limits without CAP_SYS_RESOURCE), runc with
        // limits under the host's.
        let tries: [&[&str]; 2] = [
            &[],
            &[
                "--runtime",
                "runc",
                "--ulimit",
                "nofile=1024:1024",
                "--ulimit",
                "nproc=1024:1024",
            ],
        ];
        let mut why = String::new();
        for flags in tries {
            let mut args = vec!["run", "--rm"];
            args.extend_from_slice(flags);
            args.extend([image.name.as_str(), "--version"]);
            let out = podman(&args);
            if out.status.success()
                && String::from_utf8_lossy(&out.stdout).starts_with("wirebench ")
            {
                image.flags = flags.iter().map(|s| s.to_string()).collect();
                return Some(image);
            }
            why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        }
        skip(format!("podman cannot run containers here: {why}"));
        None
    }

    /// `podman run` of one container of a rendered pod: its command, args,
    /// env and mounts as the manifest says; `secrets` holds the Secrets'
    /// values (name, key), `volumes` the host directory of each emptyDir
    /// (by the volume's name) or claim (by the claim's name); a Secret's
    /// volume is made in `dir` from `secrets`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        name: &str,
        net: &Net,
        host: usize,
        hostname: &str,
        hosts: &[(String, String)],
        extra_env: &[(&str, String)],
        pod: &Value,
        secrets: &[((&str, &str), &str)],
        volumes: &[(&str, &Path)],
        dir: &TempDir,
    ) -> Proc {
        let c = &pod["containers"][0];
        let netns = format!("ns:/run/netns/{}", net.hosts[host]);
        let mut args: Vec<String> = vec!["run".into(), "--rm".into(), "--name".into(), name.into()];
        args.extend(self.flags.iter().cloned());
        args.extend([
            "--network".into(),
            netns,
            "--hostname".into(),
            hostname.into(),
        ]);
        for (n, ip) in hosts {
            args.extend(["--add-host".into(), format!("{n}:{ip}")]);
        }
        for e in c["env"].as_array().into_iter().flatten() {
            let n = e["name"].as_str().unwrap();
            let v = if let Some(v) = e["value"].as_str() {
                v.to_string()
            } else {
                let r = &e["valueFrom"]["secretKeyRef"];
                let key = (r["name"].as_str().unwrap(), r["key"].as_str().unwrap());
                secrets
                    .iter()
                    .find(|(k, _)| *k == key)
                    .unwrap_or_else(|| panic!("no Secret {key:?} for {n}"))
                    .1
                    .to_string()
            };
            args.extend(["--env".into(), format!("{n}={v}")]);
        }
        for (n, v) in extra_env {
            args.extend(["--env".into(), format!("{n}={v}")]);
        }
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            let vol = m["name"].as_str().unwrap();
            let spec = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == vol)
                .unwrap_or_else(|| panic!("the pod has no volume {vol}"));
            let host = if let Some(secret) = spec.get("secret") {
                // As the kubelet makes it: each item a file of the key's
                // value, root's, in the mode given, the pod's group.
                let at = dir.path().join(format!("{name}-{vol}"));
                std::fs::create_dir_all(&at).unwrap();
                let sname = secret["secretName"].as_str().unwrap();
                for item in secret["items"].as_array().unwrap() {
                    let key = item["key"].as_str().unwrap();
                    let value = secrets
                        .iter()
                        .find(|(k, _)| *k == (sname, key))
                        .unwrap_or_else(|| panic!("no Secret {sname}/{key}"))
                        .1;
                    let f = at.join(item["path"].as_str().unwrap());
                    std::fs::write(&f, value).unwrap();
                    let mode = item["mode"].as_u64().unwrap_or(0o644) as u32;
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
                    let group = pod["securityContext"]["fsGroup"].as_u64().map(|g| g as u32);
                    std::os::unix::fs::chown(&f, Some(0), group).unwrap();
                }
                format!("{}:{}:ro", at.display(), m["mountPath"].as_str().unwrap())
            } else {
                let by = match spec["persistentVolumeClaim"]["claimName"].as_str() {
                    Some(claim) => claim,
                    None if spec.get("emptyDir").is_some() => vol,
                    None => panic!("a volume kind not run here: {spec}"),
                };
                let d = volumes
                    .iter()
                    .find(|(n, _)| *n == by)
                    .unwrap_or_else(|| panic!("no directory for {by}"))
                    .1;
                format!("{}:{}", d.display(), m["mountPath"].as_str().unwrap())
            };
            args.extend(["--volume".into(), host]);
        }
        let command: Vec<String> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        args.extend([
            "--entrypoint".into(),
            serde_json::to_string(&command).unwrap(),
            self.name.clone(),
        ]);
        args.extend(
            c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string()),
        );
        self.containers.push(name.to_string());
        let all: Vec<&str> = args.iter().map(String::as_str).collect();
        Proc::spawn_program("podman", &all)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = podman(&["rm", "--force", "--time", "0", c]);
        }
        let _ = podman(&["rmi", "--force", &self.name]);
    }
}

/// A pod's emptyDir: a directory the image's user can write.
fn volume(dir: &TempDir, name: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::create_dir_all(&p).unwrap();
    std::os::unix::fs::chown(&p, Some(UID), Some(UID)).unwrap();
    p
}

fn manifest(dir: &Path, file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
}

#[test]
fn issue_49_the_rendered_jobs_run_as_written_in_the_image() {
    let _g = shared();
    let dir = TempDir::new("pods");
    let Some(net) = Net::new(4) else { return };
    let Some(mut image) = Image::new(&dir) else {
        return;
    };
    let (_srv, endpoint) = server(&net, &[]);
    // MinIO in the server's host, its bucket made by a run of its own.
    let minio = crate::fixtures::minio::Minio::start_in(&net.hosts[0], &net.addr(0));
    let creds = [
        format!("AWS_ACCESS_KEY_ID={MINIO_USER}"),
        format!("AWS_SECRET_ACCESS_KEY={MINIO_PASSWORD}"),
    ];
    let in_host0 = |args: &[&str]| {
        let mut all: Vec<&str> = creds.iter().map(String::as_str).collect();
        all.push(BIN);
        all.extend_from_slice(args);
        let mut p = net.spawn_program(0, "env", &all);
        let st = p.wait(Duration::from_secs(60));
        assert!(st.success(), "{args:?}: {}", p.stderr_all());
    };
    let upload = minio.as_ref().map(|m| format!("s3://{}/k8s/runs", m.addr));
    if let Some(m) = &minio {
        let made = dir.path().join("bucket-run");
        in_host0(&[
            "run",
            "--target",
            &format!("s3://{}/k8s", m.addr),
            "--create-bucket",
            "--workload",
            "put",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--results",
            made.to_str().unwrap(),
        ]);
    }
    let manifests = dir.path().join("manifests");
    let mut render = vec![
        "k8s",
        "render",
        "--replicas",
        "2",
        "--image",
        &image.name,
        "--name",
        "wb",
        "--token-secret",
        "wb-token",
        "--target",
        &endpoint,
        "--clients",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "1s",
        "--metrics-listen",
        "0.0.0.0:9464",
        "--metrics-token-file",
        "/var/run/secrets/wirebench-metrics/token",
        "--metrics-hold",
        "5s",
        "--results-pvc",
        "wb-results",
        "-o",
        manifests.to_str().unwrap(),
    ];
    if let Some(u) = &upload {
        render.extend(["--upload", u.as_str()]);
    }
    let mut p = Proc::spawn(&render);
    assert!(
        p.wait(Duration::from_secs(30)).success(),
        "{}",
        p.stderr_all()
    );
    let service = manifest(&manifests, "agents-service.json");
    let agents = manifest(&manifests, "agents-job.json");
    let coordinator = manifest(&manifests, "coordinator-job.json");
    // The headless Service's names: POD-HOSTNAME.SUBDOMAIN, the pods of
    // the Indexed Job being JOB-INDEX.
    let svc = service["metadata"]["name"].as_str().unwrap().to_string();
    let job = agents["metadata"]["name"].as_str().unwrap().to_string();
    let agent_pod = &agents["spec"]["template"]["spec"];
    assert_eq!(agent_pod["subdomain"], svc.as_str());
    let hosts: Vec<(String, String)> = (0..2)
        .map(|i| (format!("{job}-{i}.{svc}"), net.addr(1 + i)))
        .collect();
    let secrets = [
        (("wb-token", "token"), TOKEN),
        (("wb-metrics-token", "token"), METRICS_TOKEN),
        (("wb-upload", "AWS_ACCESS_KEY_ID"), MINIO_USER),
        (("wb-upload", "AWS_SECRET_ACCESS_KEY"), MINIO_PASSWORD),
    ];
    let tag = std::process::id();
    // The claim every pod keeps its results in.
    let results = volume(&dir, "claim");
    let mut pods = Vec::new();
    for i in 0..2 {
        let p = image.run(
            &format!("wbit-{tag}-agent-{i}"),
            &net,
            1 + i,
            &format!("{job}-{i}"),
            &hosts,
            // What the Indexed Job gives each pod.
            &[("JOB_COMPLETION_INDEX", i.to_string())],
            agent_pod,
            &secrets,
            &[("wb-results", &results)],
            &dir,
        );
        pods.push(p);
    }
    let mut c = image.run(
        &format!("wbit-{tag}-coordinator"),
        &net,
        3,
        "wb-coordinator",
        &hosts,
        &[],
        &coordinator["spec"]["template"]["spec"],
        &secrets,
        &[("wb-results", &results)],
        &dir,
    );
    // Scraped as the pod's annotations say, from another host, while the
    // coordinator works (and holds its last figures).
    let annotations = &coordinator["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    let url = format!(
        "http://{}:{}{}",
        net.addr(3),
        annotations["prometheus.io/port"].as_str().unwrap(),
        annotations["prometheus.io/path"].as_str().unwrap()
    );
    let scrape = |token: &str| -> (String, String) {
        let code = "import sys,urllib.request as u\nr=u.Request(sys.argv[1],headers={'Authorization':'Bearer '+sys.argv[2]})\ntry:\n print(u.urlopen(r,timeout=5).read().decode())\nexcept Exception as e:\n print('error',e)";
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &net.hosts[0],
                "python3",
                "-c",
                code,
                &url,
                token,
            ])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let mut seen = String::new();
    while std::time::Instant::now() < deadline && !seen.contains("wirebench_operations") {
        seen = scrape(METRICS_TOKEN).0;
        if !seen.contains("wirebench_operations") {
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    assert!(
        seen.contains("wirebench_operations"),
        "no metrics scraped at {url}: {seen}"
    );
    let (refused, _) = scrape(TOKEN);
    assert!(
        refused.contains("error") && refused.contains("401"),
        "{refused}"
    );
    let st = c.wait(Duration::from_secs(180));
    let err = c.stderr_all();
    assert!(
        st.success(),
        "the coordinator: {st}: {err}\n{}",
        c.stdout_all()
    );
    // Each agent made its part and exited: the Job completes.
    for (i, a) in pods.iter_mut().enumerate() {
        let st = a.wait(Duration::from_secs(60));
        assert!(st.success(), "agent {i}: {st}: {}", a.stderr_all());
    }
    // The pods are gone; their results are in the claim: the merged run
    // and each agent's part.
    let runs = crate::helpers::walk_runs(&results);
    assert_eq!(runs.len(), 3, "{}", results.display());
    let (merged, parts): (Vec<RunResult>, Vec<RunResult>) =
        runs.into_iter().partition(|r| !r.agents.is_empty());
    let merged = &merged[0];
    let names: Vec<&str> = merged.agents.iter().map(|a| a.agent.as_str()).collect();
    let want: Vec<String> = hosts.iter().map(|(n, _)| format!("{n}:7460")).collect();
    assert_eq!(names, want);
    let sum: u64 = parts.iter().map(|r| r.summary.ops).sum();
    assert!(
        parts.iter().all(|r| r.summary.ops > 0),
        "every agent made load"
    );
    assert_eq!(merged.summary.ops, sum, "the merge is the sum of the parts");
    // A report of them, made here from the claim's files.
    let (md, _) = crate::helpers::report_ok(
        &results.join(&merged.run_id),
        &dir.path().join("report.html"),
        &[],
    );
    assert!(md.contains(&merged.run_id), "{md}");
    // The coordinator's upload, brought back from MinIO: the same merge.
    let Some(url) = upload else {
        return;
    };
    assert!(
        err.contains(&format!("uploaded to {url}/{}", merged.run_id)),
        "{err}"
    );
    let back = dir.path().join("back");
    in_host0(&["s3", "download", &url, back.to_str().unwrap()]);
    let fetched = crate::helpers::walk_runs(&back);
    assert_eq!(fetched.len(), 1, "{}", back.display());
    assert_eq!(fetched[0].run_id, merged.run_id);
    assert_eq!(
        fetched[0].summary.ops, sum,
        "the uploaded merge is the sum too"
    );
    drop(minio);
}
