//! Results that outlive the machine that made them: `--upload` copies each
//! run's directory, once saved, to an S3 endpoint; `wirebench s3 upload`
//! copies any directory (an upload cut off, run again, sends only what is
//! missing) and `wirebench s3 download` brings one back, for `report`,
//! `compare` and `history` (transports' `s3::copy`).

use crate::RunError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wirebench_core::output::UploadUrl;
use wirebench_transports::s3::copy::{self, Copied};

/// `wirebench s3`.
#[derive(clap::Args, Debug)]
pub struct S3Args {
    #[command(subcommand)]
    command: S3Command,
}

#[derive(clap::Subcommand, Debug)]
enum S3Command {
    /// Copy what DIR holds (a run's, an experiment's or a results directory) to
    /// s3://HOST:PORT/BUCKET/PREFIX (s3s:// for TLS), each file under PREFIX/ its path in
    /// DIR. A file already there with its size is not sent again. Credentials:
    /// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (none: anonymous); region: AWS_REGION.
    Upload {
        dir: PathBuf,
        url: UploadUrl,
        /// With s3s://: a PEM file of CAs trusted besides the Mozilla roots.
        #[arg(long)]
        ca_file: Option<PathBuf>,
    },
    /// Bring every object under s3://HOST:PORT/BUCKET/PREFIX into DIR (its path under
    /// PREFIX/); a file already here with the object's size is kept.
    Download {
        url: UploadUrl,
        dir: PathBuf,
        /// With s3s://: a PEM file of CAs trusted besides the Mozilla roots.
        #[arg(long)]
        ca_file: Option<PathBuf>,
    },
}

/// Runs `wirebench s3 upload|download`, saying what it copied.
pub fn command(a: S3Args) -> Result<ExitCode, RunError> {
    let (what, copied) = match &a.command {
        S3Command::Upload { dir, url, ca_file } => {
            if !dir.is_dir() {
                return Err(RunError::Failed(format!(
                    "{}: not a directory",
                    dir.display()
                )));
            }
            let c = upload_dir(url, dir, ca_file.as_deref()).map_err(RunError::Failed)?;
            (format!("{} -> {url}", dir.display()), c)
        }
        S3Command::Download { url, dir, ca_file } => {
            let c = download_dir(url, dir, ca_file.as_deref()).map_err(RunError::Failed)?;
            (format!("{url} -> {}", dir.display()), c)
        }
    };
    println!("{what}: {}", said(&copied));
    Ok(ExitCode::SUCCESS)
}

/// "3 of 7 file(s) copied (1.2 MiB), 4 there already".
pub fn said(c: &Copied) -> String {
    format!(
        "{} of {} file(s) copied ({}), {} there already",
        c.sent,
        c.files,
        wirebench_core::units::format_amount(c.bytes),
        c.files - c.sent
    )
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("an async runtime: {e}"))
}

/// Copies the files under `dir` to `url`, each under its prefix by its path
/// in `dir`.
pub fn upload_dir(url: &UploadUrl, dir: &Path, ca_file: Option<&Path>) -> Result<Copied, String> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", d.display()))?;
            let (path, kind) = (e.path(), e.file_type().map_err(|e| e.to_string())?);
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                files.push((path.clone(), url.key(&rel.join("/"))));
            }
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let c = copy::client(&url.addr, &url.bucket, url.tls, ca_file)?;
    runtime()?.block_on(copy::upload(&c, &files))
}

/// Brings the objects under `url` into `dir`.
pub fn download_dir(url: &UploadUrl, dir: &Path, ca_file: Option<&Path>) -> Result<Copied, String> {
    let c = copy::client(&url.addr, &url.bucket, url.tls, ca_file)?;
    runtime()?.block_on(copy::download(&c, &url.prefix, dir))
}

/// `url` with `rel` (a path under the results directory) added to its
/// prefix.
pub fn under(url: &UploadUrl, rel: &Path) -> UploadUrl {
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    UploadUrl {
        prefix: url.key(&rel.join("/")),
        ..url.clone()
    }
}
