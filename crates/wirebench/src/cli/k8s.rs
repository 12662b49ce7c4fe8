//! `wirebench k8s render`: the Kubernetes manifests of a run made by
//! agents (a headless Service, an Indexed Job of agents, a coordinator Job).

use super::error::runner_error;
use super::flags::RunFlags;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_runner::agent::k8s::{self, Render};

#[derive(Args, Debug)]
pub struct K8sArgs {
    #[command(subcommand)]
    command: K8sCommand,
}

#[derive(Subcommand, Debug)]
enum K8sCommand {
    /// Write the manifests of a run whose load is made by N agent pods: a headless Service, an
    /// Indexed Job of agents, and a Job running the coordinator with the run flags given.
    Render(Box<RenderArgs>),
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The run the coordinator makes (--target and the load; --agents is rendered).
    #[command(flatten)]
    flags: RunFlags,
    /// Agent pods (the Indexed Job's completions).
    #[arg(long)]
    replicas: usize,
    /// The wirebench image, pinned by a tag (REPO:0.1.0) or a digest (REPO@sha256:...).
    #[arg(long)]
    image: String,
    /// Names the objects: NAME-agents (Service and Job), NAME-coordinator.
    #[arg(long, default_value = "wirebench")]
    name: String,
    /// The namespace of the objects (default: kubectl's).
    #[arg(long)]
    namespace: Option<String>,
    /// The Secret holding the agents' token under the key `token`. Default: NAME-token.
    #[arg(long)]
    token_secret: Option<String>,
    /// A PersistentVolumeClaim every pod keeps its results in (ReadWriteMany where pods may
    /// run on several nodes), so that they outlive the pods. Default: each pod's emptyDir.
    #[arg(long)]
    results_pvc: Option<String>,
    /// The directory the manifests are written to (created; existing files replaced only with
    /// --force).
    #[arg(short = 'o', long)]
    output: PathBuf,
}

pub fn k8s(a: K8sArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        K8sCommand::Render(r) => render(*r),
    }
}

fn render(a: RenderArgs) -> anyhow::Result<ExitCode> {
    let token_secret = a.token_secret.unwrap_or(format!("{}-token", a.name));
    let wait = &a.flags.agents.agents_wait;
    let r = Render {
        token_secret,
        name: a.name,
        namespace: a.namespace,
        image: a.image,
        agents: a.replicas,
        request: a.flags.request(),
        // How long the coordinator waits for the pods (--agents-wait).
        agents_wait: wait.map_or("2m".to_string(), |d| d.to_string()),
        results_pvc: a.results_pvc,
    };
    let m = k8s::render(&r).map_err(super::error::UsageError::from)?;
    let force = a.flags.req.output.force == Some(true);
    for path in m.write(&a.output, force).map_err(runner_error)? {
        println!("wrote {}", path.display());
    }
    println!("{}", r.next_steps(&a.output));
    Ok(ExitCode::SUCCESS)
}
