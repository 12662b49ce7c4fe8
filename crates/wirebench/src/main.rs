//! wirebench: measure and diagnose messaging, RPC, shared-memory IPC and S3
//! servers. This binary is glue: it parses the command line into a request,
//! hands it to the runner (or the report crate), and prints what they say.

mod cli;
mod ui;

use std::process::ExitCode;

/// A bad flag or value: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl From<wirebench_runner::SpecError> for UsageError {
    fn from(e: wirebench_runner::SpecError) -> UsageError {
        UsageError(e.to_string())
    }
}

/// Returns a [`UsageError`] from the enclosing function.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { return Err($crate::UsageError(format!($($arg)*)).into()) };
}

/// A runner's error as this binary reports it: a bad request is a usage
/// error (exit status 2), anything else a failure (1).
pub fn runner_error(e: wirebench_runner::RunError) -> anyhow::Error {
    match e {
        wirebench_runner::RunError::Spec(s) => UsageError::from(s).into(),
        other => anyhow::Error::new(other),
    }
}

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(e) => {
            let broken_pipe = e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
