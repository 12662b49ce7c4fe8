//! wirebench: measure and diagnose messaging, RPC, shared-memory IPC and S3
//! servers. This binary is glue: it parses the command line into a request,
//! hands it to the runner (or the report crate), and prints what they say.
// Input is parsed here: no silent narrowing casts (checked conversions, or
// units::whole for figures).
#![deny(clippy::cast_possible_truncation)]

/// `eprintln!` that never panics: a closed stderr (`wirebench run 2>&1 |
/// head -1`) loses the line, never the run. It stands in for std's in this
/// whole crate (declared before the modules that use it). What it prints
/// may hold a peer's text (a server's error, an agent's note, a label):
/// control characters are shown escaped, never obeyed
/// (`wirebench_core::text::visible`).
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", wirebench_core::text::visible(&line));
    }};
}

/// `println!` that never panics: a closed stdout ends nothing half-way
/// (the command's own writes to stdout report a broken pipe, exit 0).
/// Escaped as `eprintln!` is.
macro_rules! println {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stdout(), "{}", wirebench_core::text::visible(&line));
    }};
}

mod cli;
mod ui;

use std::process::ExitCode;

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
            if e.downcast_ref::<cli::error::Interrupted>().is_some() {
                eprintln!("{e:#}");
                return ExitCode::from(wirebench_runner::process::interrupted_exit_code());
            }
            eprintln!("error: {e:#}");
            if e.downcast_ref::<cli::error::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
