//! `wirebench k8s render`: the manifests of a run whose agents are a
//! Kubernetes Indexed Job, typed (k8s-openapi), written as JSON (which
//! kubectl reads as it reads YAML).
//!
//! - a headless Service `NAME-agents`, so each agent pod has a DNS name,
//!   `NAME-agents-INDEX.NAME-agents`;
//! - an Indexed Job `NAME-agents` of N agents (`completionMode: Indexed`;
//!   each pod's `JOB_COMPLETION_INDEX` is its index, which the agent tells
//!   the coordinator, who checks it against the name it reached); each
//!   agent makes the run's parts (`--runs 1`, or one per `--repeat`) and
//!   exits, so the Job completes;
//! - a Job `NAME-coordinator` running the run with `--agents` naming them,
//!   waiting for them to come up (`--agents-wait`).
//!
//! The token comes from a Secret the user makes (key `token`), in both.
//!
//! With `--metrics-listen` (and its `--metrics-token-file`, the path in
//! the pod), the coordinator serves its live metrics: its pod carries the
//! usual scrape annotations (`prometheus.io/scrape`, `port`, `path`) and a
//! named port, and the scrape token comes from a second Secret,
//! `NAME-metrics-token` (key `token`), mounted where the flag says; a
//! scraper's token is never the agents' one.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, PodTemplateSpec,
    SecretKeySelector, SecretVolumeSource, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use wirebench_core::request::{RunRequest, SpecError};

/// The port agents listen on in their pods.
pub const PORT: u16 = 7460;

/// What to render.
#[derive(Debug, Clone)]
pub struct Render {
    /// Names the objects (`NAME-agents`, `NAME-coordinator`).
    pub name: String,
    pub namespace: Option<String>,
    /// The image, pinned: `REPO@sha256:...` or `REPO:TAG` (not `latest`).
    pub image: String,
    pub agents: usize,
    /// The Secret holding the token (key `token`).
    pub token_secret: String,
    /// The run the coordinator makes (its target and load).
    pub request: RunRequest,
    /// How long the coordinator waits for the agents to come up.
    pub agents_wait: String,
    /// The PersistentVolumeClaim every pod keeps its results in (each run
    /// in a directory named by its id), so that they outlive the pods;
    /// None: an emptyDir, gone with its pod.
    pub results_pvc: Option<String>,
}

/// The three manifests.
#[derive(Debug, Clone)]
pub struct Manifests {
    pub service: Service,
    pub agents: Job,
    pub coordinator: Job,
}

fn bad(flag: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        flag,
        why: why.into(),
    }
}

/// Checks an image reference: pinned by digest or by a tag other than
/// `latest`, so every pod runs the same build.
pub fn check_image(image: &str) -> Result<(), SpecError> {
    if image.is_empty() || image.contains(char::is_whitespace) {
        return Err(bad(
            "--image",
            format!("'{image}' is not an image reference"),
        ));
    }
    if let Some((_, digest)) = image.split_once('@') {
        let hex = digest.strip_prefix("sha256:").unwrap_or("");
        if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(());
        }
        return Err(bad(
            "--image",
            format!("{image}: a digest is @sha256: and 64 hex digits"),
        ));
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) => Err(bad(
            "--image",
            format!("{image}: 'latest' moves; pin a tag of one build, or a digest (@sha256:...)"),
        )),
        Some((_, tag)) if !tag.is_empty() => Ok(()),
        _ => Err(bad(
            "--image",
            format!(
                "{image}: pin it, by a tag (:0.1.0) or a digest (@sha256:...), so every pod runs one build"
            ),
        )),
    }
}

/// Checks a Kubernetes object name (an RFC 1123 label, room left for the
/// suffixes).
fn check_name(flag: &'static str, name: &str) -> Result<(), SpecError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(bad(
            flag,
            format!(
                "'{name}': lowercase letters, digits and '-', at most 40, not starting or ending with '-'"
            ),
        ))
    }
}

/// The agents' names as the coordinator reaches them.
pub fn agent_addresses(name: &str, agents: usize) -> Vec<String> {
    let svc = format!("{name}-agents");
    (0..agents)
        .map(|i| format!("{svc}-{i}.{svc}:{PORT}"))
        .collect()
}

fn labels(name: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "wirebench".to_string(),
        ),
        ("app.kubernetes.io/instance".to_string(), name.to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            component.to_string(),
        ),
    ])
}

fn meta(r: &Render, name: String, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: r.namespace.clone(),
        labels: Some(labels(&r.name, component)),
        ..ObjectMeta::default()
    }
}

fn container(
    r: &Render,
    name: &str,
    args: Vec<String>,
    ports: Option<Vec<ContainerPort>>,
) -> Container {
    Container {
        name: name.to_string(),
        image: Some(r.image.clone()),
        // The image has wirebench on its PATH.
        command: Some(vec!["wirebench".into()]),
        args: Some(args),
        env: Some(vec![EnvVar {
            name: "WIREBENCH_TOKEN".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: r.token_secret.clone(),
                    key: "token".into(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ports,
        volume_mounts: Some(vec![VolumeMount {
            name: "results".into(),
            mount_path: "/results".into(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    }
}

fn job(r: &Render, name: String, component: &str, count: usize, pod: PodSpec) -> Job {
    let count = i32::try_from(count).unwrap_or(i32::MAX);
    Job {
        metadata: meta(r, name, component),
        spec: Some(JobSpec {
            completions: Some(count),
            parallelism: Some(count),
            completion_mode: (component == "agent").then(|| "Indexed".to_string()),
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(&r.name, component)),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    volumes: Some(vec![results_volume(r)]),
                    // The image's user (scripts/image.sh) may write what
                    // is mounted.
                    security_context: Some(PodSecurityContext {
                        fs_group: Some(IMAGE_GID),
                        ..PodSecurityContext::default()
                    }),
                    ..pod
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// The group of the image's user (scripts/image.sh).
pub const IMAGE_GID: i64 = 10001;

/// Where a pod keeps its results: the claim given, or its own emptyDir.
fn results_volume(r: &Render) -> Volume {
    Volume {
        name: "results".into(),
        empty_dir: r.results_pvc.is_none().then(EmptyDirVolumeSource::default),
        persistent_volume_claim: r.results_pvc.as_ref().map(|claim| {
            PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: None,
            }
        }),
        ..Volume::default()
    }
}

/// The manifests of `r`, checked.
pub fn render(r: &Render) -> Result<Manifests, SpecError> {
    check_name("--name", &r.name)?;
    if let Some(ns) = &r.namespace {
        check_name("--namespace", ns)?;
    }
    check_name("--token-secret", &r.token_secret)?;
    if let Some(claim) = &r.results_pvc {
        check_name("--results-pvc", claim)?;
    }
    check_image(&r.image)?;
    if !(1..=1000).contains(&r.agents) {
        return Err(SpecError::Range {
            flag: "--replicas",
            value: r.agents.to_string(),
            min: "1".into(),
            max: "1000".into(),
        });
    }
    if !r.request.fleet.agents.is_empty() || !r.request.fleet.launch.is_empty() {
        return Err(SpecError::Flag {
            flag: "--agents",
            why: "is what render writes (one per --replicas): drop it".into(),
        });
    }
    let svc = format!("{}-agents", r.name);
    let mut req = r.request.clone();
    req.fleet.agents = agent_addresses(&r.name, r.agents);
    req.output.results = Some("/results".into());
    // The coordinator's request is checked as `run` would check it (on a
    // one-CPU topology: its placement is the agents').
    req.check(&wirebench_core::topo::Topology::with_cpus(
        wirebench_core::topo::CpuList::parse("0").expect("a CPU list"),
    ))?;
    let service = Service {
        metadata: meta(r, svc.clone(), "agent"),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(labels(&r.name, "agent")),
            ports: Some(vec![ServicePort {
                name: Some("agent".into()),
                port: i32::from(PORT),
                target_port: Some(IntOrString::Int(i32::from(PORT))),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    // Each agent makes the run's parts (one per repetition), then exits.
    let agent_args = [
        "agent",
        "--listen",
        &format!("tcp://0.0.0.0:{PORT}"),
        "--runs",
        &req.repeat().to_string(),
        "--results",
        "/results",
    ]
    .map(String::from)
    .to_vec();
    let agents = job(
        r,
        svc.clone(),
        "agent",
        r.agents,
        PodSpec {
            subdomain: Some(svc.clone()),
            containers: vec![container(
                r,
                "agent",
                agent_args,
                Some(vec![ContainerPort {
                    name: Some("agent".into()),
                    container_port: i32::from(PORT),
                    ..ContainerPort::default()
                }]),
            )],
            ..PodSpec::default()
        },
    );
    let mut run_args = vec!["run".to_string()];
    run_args.extend(req.to_args());
    run_args.extend(["--agents-wait".to_string(), r.agents_wait.clone()]);
    let mut coordinator = job(
        r,
        format!("{}-coordinator", r.name),
        "coordinator",
        1,
        PodSpec {
            containers: vec![container(r, "coordinator", run_args, None)],
            ..PodSpec::default()
        },
    );
    if let Some(addr) = req.watch.metrics_listen {
        serve_metrics(r, &mut coordinator, addr, &req.watch)?;
    }
    if req.output.upload.is_some() {
        upload_credentials(r, &mut coordinator);
    }
    Ok(Manifests {
        service,
        agents,
        coordinator,
    })
}

/// The Secret holding the S3 credentials of `--upload` (keys
/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`; without it, anonymous).
pub fn upload_secret(name: &str) -> String {
    format!("{name}-upload")
}

/// The coordinator's `--upload` credentials, from their Secret into its
/// environment (never in its args).
fn upload_credentials(r: &Render, job: &mut Job) {
    let pod = job.spec.as_mut().and_then(|s| s.template.spec.as_mut());
    for c in pod.into_iter().flat_map(|p| p.containers.iter_mut()) {
        for key in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: key.into(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: upload_secret(&r.name),
                        key: key.into(),
                        // An endpoint may take anonymous uploads.
                        optional: Some(true),
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            });
        }
    }
}

/// The Secret holding the coordinator's scrape token (key `token`).
pub fn metrics_secret(name: &str) -> String {
    format!("{name}-metrics-token")
}

/// The coordinator's pod, serving its metrics to the cluster's Prometheus:
/// scrape annotations, a named port, and the scrape token's Secret mounted
/// at the path `--metrics-token-file` gives.
fn serve_metrics(
    r: &Render,
    job: &mut Job,
    addr: std::net::SocketAddr,
    watch: &wirebench_core::live::LiveFlags,
) -> Result<(), SpecError> {
    if addr.ip().is_loopback() || addr.port() == 0 {
        return Err(bad(
            "--metrics-listen",
            format!(
                "{addr}: a cluster's Prometheus reaches the pod's own address on a fixed port: 0.0.0.0:9464, say"
            ),
        ));
    }
    let Some(file) = &watch.metrics_token_file else {
        return Err(bad(
            "--metrics-token-file",
            format!(
                "is needed with --metrics-listen {addr}: the path in the pod where the Secret {}'s token is mounted, e.g. /var/run/secrets/wirebench-metrics/token",
                metrics_secret(&r.name)
            ),
        ));
    };
    let (Some(dir), Some(key_file)) = (file.parent(), file.file_name()) else {
        return Err(bad(
            "--metrics-token-file",
            format!("{}: a file's path in the pod", file.display()),
        ));
    };
    if !file.is_absolute() || dir == std::path::Path::new("/results") {
        return Err(bad(
            "--metrics-token-file",
            format!(
                "{}: an absolute path in a directory of its own (the Secret is mounted there), e.g. /var/run/secrets/wirebench-metrics/token",
                file.display()
            ),
        ));
    }
    let port = i32::from(addr.port());
    let Some(spec) = job.spec.as_mut() else {
        return Ok(());
    };
    let template = &mut spec.template;
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .annotations = Some(BTreeMap::from([
        ("prometheus.io/scrape".to_string(), "true".to_string()),
        ("prometheus.io/port".to_string(), port.to_string()),
        ("prometheus.io/path".to_string(), "/metrics".to_string()),
    ]));
    let Some(pod) = template.spec.as_mut() else {
        return Ok(());
    };
    pod.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: "metrics-token".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(metrics_secret(&r.name)),
            items: Some(vec![KeyToPath {
                key: "token".into(),
                path: key_file.to_string_lossy().into_owned(),
                // Root's, read by the pod's group (the image's user).
                mode: Some(0o440),
            }]),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    });
    for c in &mut pod.containers {
        // A Secret's file in a pod is a link into the volume's current
        // copy, readable by the pod's group: the operator's choice here,
        // each said in a warning in the log.
        c.args
            .get_or_insert_with(Vec::new)
            .push("--accept-loose-secret-files".into());
        c.ports = Some(vec![ContainerPort {
            name: Some("metrics".into()),
            container_port: port,
            ..ContainerPort::default()
        }]);
        c.volume_mounts
            .get_or_insert_with(Vec::new)
            .push(VolumeMount {
                name: "metrics-token".into(),
                mount_path: dir.display().to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
    }
    Ok(())
}

impl Manifests {
    /// Each manifest's file name and its JSON.
    pub fn files(&self) -> Vec<(&'static str, String)> {
        vec![
            ("agents-service.json", pretty(&self.service)),
            ("agents-job.json", pretty(&self.agents)),
            ("coordinator-job.json", pretty(&self.coordinator)),
        ]
    }

    /// Writes the manifests into `dir` (created): each a new file unless
    /// `force`, all checked before any is written. Returns their paths.
    pub fn write(
        &self,
        dir: &std::path::Path,
        force: bool,
    ) -> Result<Vec<std::path::PathBuf>, crate::RunError> {
        let files = self.files();
        std::fs::create_dir_all(dir)?;
        for (name, _) in &files {
            let path = dir.join(name);
            wirebench_core::store::check_new_file(&path, force).map_err(|why| {
                SpecError::Value {
                    flag: "-o",
                    value: path.display().to_string(),
                    fix: why,
                }
            })?;
        }
        let mut written = Vec::new();
        for (name, text) in &files {
            let path = dir.join(name);
            wirebench_core::store::write_atomic(&path, text.as_bytes())?;
            written.push(path);
        }
        Ok(written)
    }
}

impl Render {
    /// What to run once the manifests are in `dir`: the token's Secret,
    /// `kubectl apply`, and the coordinator's log.
    pub fn next_steps(&self, dir: &std::path::Path) -> String {
        let ns = self
            .namespace
            .as_ref()
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default();
        let metrics = if self.request.watch.metrics_listen.is_some() {
            format!(
                "      kubectl{ns} create secret generic {} --from-literal=token=\"$(openssl rand -hex 32)\"   # the scrape token (Prometheus sends it)\n",
                metrics_secret(&self.name)
            )
        } else {
            String::new()
        };
        let metrics = match &self.request.output.upload {
            Some(url) => format!(
                "{metrics}      kubectl{ns} create secret generic {} --from-literal=AWS_ACCESS_KEY_ID=... --from-literal=AWS_SECRET_ACCESS_KEY=...   # {url}'s credentials\n",
                upload_secret(&self.name)
            ),
            None => metrics,
        };
        let metrics = match &self.results_pvc {
            Some(claim) => format!(
                "{metrics}      # the PersistentVolumeClaim {claim} must exist (ReadWriteMany across nodes); the runs stay in it\n"
            ),
            None => metrics,
        };
        format!(
            "then: kubectl{ns} create secret generic {} --from-literal=token=\"$(openssl rand -hex 32)\"\n{metrics}      kubectl{ns} apply -f {}\n      kubectl{ns} logs -f job/{}-coordinator",
            self.token_secret,
            dir.display(),
            self.name
        )
    }
}

fn pretty<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a manifest serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Render {
        Render {
            name: "wb".into(),
            namespace: Some("bench".into()),
            image: "registry.example/wirebench:0.1.0".into(),
            agents: 3,
            token_secret: "wb-token".into(),
            request: RunRequest {
                target: Some("tcp://osd-0.storage:7470".parse().unwrap()),
                clients: Some(6),
                depth: Some(8),
                duration: Some("30s".parse().unwrap()),
                ..RunRequest::default()
            },
            agents_wait: "2m".into(),
            results_pvc: None,
        }
    }

    #[test]
    fn the_manifests_are_as_committed() {
        let m = render(&sample()).unwrap();
        for (name, text) in m.files() {
            insta::assert_snapshot!(name, text);
        }
    }

    #[test]
    fn agents_are_named_as_the_headless_service_names_them() {
        assert_eq!(
            agent_addresses("wb", 2),
            ["wb-agents-0.wb-agents:7460", "wb-agents-1.wb-agents:7460"]
        );
    }

    #[test]
    fn bad_input_names_its_flag() {
        for (image, ok) in [
            ("r/wirebench:0.1.0", true),
            (&format!("r/wirebench@sha256:{}", "a".repeat(64)), true),
            ("r/wirebench", false),
            ("r/wirebench:latest", false),
            ("r:5000/wirebench", false),
            ("r/wirebench@sha256:12", false),
        ] {
            assert_eq!(check_image(image).is_ok(), ok, "{image}");
        }
        let mut r = sample();
        r.name = "WB".into();
        assert_eq!(render(&r).unwrap_err().flag(), "--name");
        let mut r = sample();
        r.request.fleet.agents = vec!["a:1".into()];
        assert_eq!(render(&r).unwrap_err().flag(), "--agents");
        let mut r = sample();
        r.request.target = None;
        assert_eq!(render(&r).unwrap_err().flag(), "--agents");
        let mut r = sample();
        r.agents = 7;
        assert_eq!(render(&r).unwrap_err().flag(), "--clients");
        // Metrics a cluster's Prometheus can reach, with their own token.
        for (listen, token, flag) in [
            (
                "127.0.0.1:9464",
                Some("/var/run/secrets/m/token"),
                "--metrics-listen",
            ),
            (
                "0.0.0.0:0",
                Some("/var/run/secrets/m/token"),
                "--metrics-listen",
            ),
            ("0.0.0.0:9464", None, "--metrics-token-file"),
            ("0.0.0.0:9464", Some("token"), "--metrics-token-file"),
            (
                "0.0.0.0:9464",
                Some("/results/token"),
                "--metrics-token-file",
            ),
        ] {
            let mut r = sample();
            r.request.watch.metrics_listen = Some(listen.parse().unwrap());
            r.request.watch.metrics_token_file = token.map(Into::into);
            assert_eq!(render(&r).unwrap_err().flag(), flag, "{listen} {token:?}");
        }
    }

    #[test]
    fn a_coordinator_serving_metrics_is_annotated_and_mounts_its_scrape_token() {
        let mut r = sample();
        r.request.watch.metrics_listen = Some("0.0.0.0:9464".parse().unwrap());
        r.request.watch.metrics_token_file = Some("/var/run/secrets/m/token".into());
        let m = render(&r).unwrap();
        let text = pretty(&m.coordinator);
        for want in [
            "\"prometheus.io/scrape\": \"true\"",
            "\"prometheus.io/port\": \"9464\"",
            "\"secretName\": \"wb-metrics-token\"",
            "\"mountPath\": \"/var/run/secrets/m\"",
            "\"--accept-loose-secret-files\"",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        // The agents' pods are as before: no scrape token, no annotations.
        assert!(!pretty(&m.agents).contains("metrics"));
        assert!(
            r.next_steps(std::path::Path::new("m"))
                .contains("wb-metrics-token")
        );
    }

    #[test]
    fn an_uploading_coordinator_takes_its_credentials_from_a_secret() {
        let mut r = sample();
        r.request.output.upload = Some("s3://minio.storage:9000/bench/nightly".parse().unwrap());
        let m = render(&r).unwrap();
        let text = pretty(&m.coordinator);
        let job: serde_json::Value = serde_json::from_str(&text).unwrap();
        let c = &job["spec"]["template"]["spec"]["containers"][0];
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let at = args
            .iter()
            .position(|a| *a == "--upload")
            .expect("--upload");
        assert_eq!(args[at + 1], "s3://minio.storage:9000/bench/nightly");
        assert!(text.contains("\"name\": \"wb-upload\""), "{text}");
        for key in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            assert!(text.contains(&format!("\"key\": \"{key}\"")), "{text}");
        }
        assert!(!args.iter().any(|a| a.contains("AWS_")));
        assert!(
            r.next_steps(std::path::Path::new("m"))
                .contains("wb-upload")
        );
    }
}
