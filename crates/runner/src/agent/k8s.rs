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

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, PodSpec, PodTemplateSpec,
    SecretKeySelector, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
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
                    volumes: Some(vec![Volume {
                        name: "results".into(),
                        empty_dir: Some(EmptyDirVolumeSource::default()),
                        ..Volume::default()
                    }]),
                    ..pod
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// The manifests of `r`, checked.
pub fn render(r: &Render) -> Result<Manifests, SpecError> {
    check_name("--name", &r.name)?;
    if let Some(ns) = &r.namespace {
        check_name("--namespace", ns)?;
    }
    check_name("--token-secret", &r.token_secret)?;
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
    let coordinator = job(
        r,
        format!("{}-coordinator", r.name),
        "coordinator",
        1,
        PodSpec {
            containers: vec![container(r, "coordinator", run_args, None)],
            ..PodSpec::default()
        },
    );
    Ok(Manifests {
        service,
        agents,
        coordinator,
    })
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
        format!(
            "then: kubectl{ns} create secret generic {} --from-literal=token=\"$(openssl rand -hex 32)\"\n      kubectl{ns} apply -f {}\n      kubectl{ns} logs -f job/{}-coordinator",
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
    }
}
