//! What a person watching a run sees: progress lines, notes and results.

pub mod progress;

/// The command's stdout, locked, with control characters from peers'
/// text (a server's error, a label, a program's output) shown escaped,
/// never obeyed: every report a command prints goes through it.
pub fn stdout() -> wirebench_core::text::Visible<std::io::StdoutLock<'static>> {
    wirebench_core::text::Visible::new(std::io::stdout().lock())
}
