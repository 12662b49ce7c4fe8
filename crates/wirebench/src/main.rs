//! wirebench: measure and diagnose messaging, RPC, shared-memory IPC and S3
//! servers. This binary is glue: it parses the command line, checks it into
//! a spec, and hands it to the engine, the transports and the store.

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

/// Returns a [`UsageError`] from the enclosing function.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { return Err($crate::UsageError(format!($($arg)*)).into()) };
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
