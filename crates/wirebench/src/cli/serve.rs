//! `wirebench serve`: a reference server on its own (msgr reactor or pool,
//! shm sessions, or the fake S3 server). It prints one JSON event per line
//! on stdout (`listening`, then `stopped` with its counters) and a note for
//! people on stderr; SIGINT or SIGTERM stop it cleanly. A run that embeds a
//! server starts it with `--order-stdin` and its order on stdin.

use super::error::{UsageError, usage};
use clap::Args;
use std::process::ExitCode;
use wirebench_core::topo::Topology;
use wirebench_runner::Credentials;
use wirebench_runner::serve::{self, ServeError, ServeOrder, ServeRequest};

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    request: ServeRequest,
    /// s3: requests must be signed (SigV4) with this access key and the secret key in
    /// $AWS_SECRET_ACCESS_KEY. Without them, anonymous requests are served.
    #[arg(long)]
    access_key: Option<String>,
    /// Refused: a secret on the command line is seen by every user of the host (`ps`); set
    /// AWS_SECRET_ACCESS_KEY instead.
    #[arg(long, hide = true)]
    secret_key: Option<String>,
    /// Read the server's order (request and credentials) as one JSON line on stdin (set by `run`).
    #[arg(long, hide = true)]
    order_stdin: bool,
    /// Exit when this process (the parent benchmark) dies.
    #[arg(long, hide = true)]
    exit_with_parent: Option<u32>,
}

impl ServeArgs {
    fn order(self, secret_key: Option<String>) -> ServeOrder {
        let credentials = self
            .access_key
            .zip(secret_key)
            .map(|(access_key, secret_key)| Credentials {
                access_key,
                secret_key,
            });
        ServeOrder {
            request: self.request,
            credentials,
        }
    }
}

pub fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let parent = a.exit_with_parent;
    // Every connection takes a descriptor (`--max-conns` caps them).
    let _ = wirebench_runner::process::raise_open_files_limit();
    let order = if a.order_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        serde_json::from_str(&line)
            .map_err(|e| UsageError(format!("--order-stdin: not a server order: {e}")))?
    } else {
        if a.secret_key.is_some() {
            usage!(
                "--secret-key on the command line is seen by every user of this host (ps, /proc): set AWS_SECRET_ACCESS_KEY instead, with --access-key"
            );
        }
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY")
            .ok()
            .filter(|s| !s.is_empty());
        match (&a.access_key, &secret) {
            (Some(_), None) => usage!(
                "--access-key: its secret key comes from AWS_SECRET_ACCESS_KEY, which is not set"
            ),
            // A secret in the environment alone does not turn on signing:
            // the access key says that it is wanted.
            (None, _) => a.order(None),
            (Some(_), Some(_)) => a.order(secret),
        }
    };
    let mut out = crate::ui::stdout();
    serve::serve(
        &order.request,
        order.credentials,
        &Topology::read(),
        parent,
        &mut out,
        // A run that embeds the server has said where it runs already.
        &mut |line| {
            if parent.is_none() || line.starts_with("warning:") {
                eprintln!("{line}");
            }
        },
    )
    .map_err(|e| match e {
        ServeError::Spec(s) => UsageError::from(s).into(),
        other => anyhow::Error::new(other),
    })?;
    Ok(ExitCode::SUCCESS)
}
