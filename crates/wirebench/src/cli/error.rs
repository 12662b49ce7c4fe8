//! How a command fails: a bad flag or value is a [`UsageError`] (exit status
//! 2, the message names the flag); anything else fails the command (1).

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
macro_rules! usage {
    ($($arg:tt)*) => { return Err($crate::cli::error::UsageError(format!($($arg)*)).into()) };
}
pub(crate) use usage;

/// `-o PAGE` checked before any work: an .html name, and a new file (or `--force`).
pub fn check_page(page: &std::path::Path, force: bool) -> anyhow::Result<()> {
    if page.extension().is_none_or(|e| e != "html") {
        usage!("-o {}: the page's name must end in .html", page.display());
    }
    check_output(page, force)
}

/// `-o FILE` checked before any work: a new file (or `--force`), where files can be written.
pub fn check_output(file: &std::path::Path, force: bool) -> anyhow::Result<()> {
    match wirebench_core::store::check_new_file(file, force) {
        Ok(()) => Ok(()),
        Err(why) => usage!("-o {}: {why}", file.display()),
    }
}

/// A runner's error as this binary reports it: a bad request is a usage
/// error (exit status 2), anything else a failure (1).
pub fn runner_error(e: wirebench_runner::RunError) -> anyhow::Error {
    match e {
        wirebench_runner::RunError::Spec(s) => UsageError::from(s).into(),
        wirebench_runner::RunError::Interrupted(why) => Interrupted(why).into(),
        other => anyhow::Error::new(other),
    }
}

/// Stopped by Ctrl-C or SIGTERM before any result: exit status 130.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted: {}", self.0)
    }
}

impl std::error::Error for Interrupted {}
