//! Where a run's results go and how it prints: `--results`, `--hlog`,
//! `--trace`, `--label`, `--format`, `--force` ([`OutputFlags`], a group of
//! the run's request).

use crate::command::EnvVars;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `--trace [FILE]`: on, or on with a copy of the client's trace in FILE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Trace {
    /// `trace = true` (the bare flag) or `false`.
    On(bool),
    /// `trace = "FILE"`.
    File(PathBuf),
}

impl std::str::FromStr for Trace {
    type Err = String;
    /// The bare flag (clap's value for it: empty) is on; anything else is
    /// the file of the client's copy.
    fn from_str(s: &str) -> Result<Trace, String> {
        Ok(match s {
            "" => Trace::On(true),
            f => Trace::File(f.into()),
        })
    }
}

/// `--upload s3://HOST:PORT/BUCKET[/PREFIX]` (`s3s://` with TLS): where a
/// run's directory is copied at its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct UploadUrl {
    pub tls: bool,
    /// `host:port`, as written.
    pub addr: String,
    pub bucket: String,
    /// The keys' common start, without a trailing '/' (may be empty).
    pub prefix: String,
}

impl UploadUrl {
    /// The key of `rel` (a path under the results directory, '/'-separated).
    pub fn key(&self, rel: &str) -> String {
        match self.prefix.as_str() {
            "" => rel.to_string(),
            p => format!("{p}/{rel}"),
        }
    }
}

impl std::str::FromStr for UploadUrl {
    type Err = String;
    fn from_str(s: &str) -> Result<UploadUrl, String> {
        let bad = |why: &str| {
            format!(
                "'{s}': {why}; an upload goes to s3://HOST:PORT/BUCKET/PREFIX (s3s:// for TLS), e.g. s3://minio.storage:9000/bench/nightly"
            )
        };
        let (tls, rest) = match (s.strip_prefix("s3://"), s.strip_prefix("s3s://")) {
            (Some(r), _) => (false, r),
            (_, Some(r)) => (true, r),
            _ => return Err(bad("not an s3:// or s3s:// URL")),
        };
        let (addr, path) = rest.split_once('/').ok_or_else(|| bad("no bucket"))?;
        let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
        let prefix = prefix.trim_matches('/');
        if !addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        {
            return Err(bad("no HOST:PORT"));
        }
        if !crate::values::valid_bucket(bucket) {
            return Err(bad(&format!("'{bucket}' is not a bucket name")));
        }
        if prefix.split('/').any(|p| p == "." || p == "..")
            || prefix.chars().any(|c| c.is_control() || c == '\\')
            || prefix.contains("//")
        {
            return Err(bad("a prefix of plain '/'-separated names"));
        }
        Ok(UploadUrl {
            tls,
            addr: addr.to_string(),
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

impl std::fmt::Display for UploadUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "s3s" } else { "s3" };
        write!(f, "{scheme}://{}/{}", self.addr, self.bucket)?;
        if !self.prefix.is_empty() {
            write!(f, "/{}", self.prefix)?;
        }
        Ok(())
    }
}

impl From<UploadUrl> for String {
    fn from(u: UploadUrl) -> String {
        u.to_string()
    }
}

impl TryFrom<String> for UploadUrl {
    type Error = String;
    fn try_from(s: String) -> Result<UploadUrl, String> {
        s.parse()
    }
}

/// How `run` prints: progress lines and a summary, the whole result as
/// JSON, or the IPC report's CSV line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Text,
    Json,
    Csv,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
        })
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("'{s}' is not one of: text, json, csv")),
        }
    }
}

/// The flags of a run's outputs. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct OutputFlags {
    /// Also write the per-second latency histograms to FILE, in the HdrHistogram interval-log
    /// format (warm-up intervals tagged 'warmup').
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hlog: Option<PathBuf>,
    /// Directory of results: DIR/RUN-ID/run.json and DIR/summary.csv. Default: results.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
    /// A label kept with the run and in the results' history, repeatable: commit=abc123,
    /// branch=main. `history check` names a change by its run's commit label. Without one,
    /// $GIT_COMMIT or $GITHUB_SHA gives it.
    #[arg(long, value_name = "KEY=VALUE")]
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::command::env_list"
    )]
    pub label: Vec<EnvVars>,
    /// Replace the files --hlog and --trace (flame --diff: -o) name if they exist (never done
    /// without it).
    #[arg(long, num_args = 0, default_missing_value = "true")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// text: progress lines on stderr and a summary on stdout; json: the whole result on
    /// stdout; csv: one line per run, the IPC report's columns then latency: sessions, mt|mp,
    /// mode, size, operations, elapsed s, messages/s, GB/s (GiB, of messages/s x size),
    /// p50 us, p99 us. A round trip counts as two messages, as in the report.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// Record an event timeline of the requests (client: begin, request sent, response
    /// received; embedded server: begin, request parsed, reply queued, reply sent) into
    /// trace-client.txt and trace-server.txt in the run's directory, and the client's also into
    /// FILE if given; read them with `wirebench timeline`. msgr (not --mode rr), shm (threads)
    /// and s3; docs/measurement.md lists each one's events.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// With --trace: trace one request in N (by sequence number).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sample: Option<u64>,
    /// Copy each run's directory, once saved, to s3://HOST:PORT/BUCKET/PREFIX (s3s:// for
    /// TLS; the CAs of --ca-file) with wirebench's own S3 client, under PREFIX/ its path in
    /// the results directory (a sweep's: EXPERIMENT/RUN-ID; a spec sets `upload` in `[base]`).
    /// Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (none: anonymous); region:
    /// AWS_REGION (us-east-1). A file already there with its size is not sent again, so an
    /// interrupted upload, run again (`wirebench upload DIR URL`), completes. A failed upload
    /// fails the command, the run kept here.
    #[arg(long, value_name = "S3-URL")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<UploadUrl>,
}

impl OutputFlags {
    /// How the run prints (text by default).
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }

    /// Where results go (`results` by default).
    pub fn results_dir(&self) -> PathBuf {
        self.results.clone().unwrap_or_else(|| "results".into())
    }

    /// Whether the run records an event timeline.
    pub fn traced(&self) -> bool {
        matches!(self.trace, Some(Trace::On(true) | Trace::File(_)))
    }

    /// The file that gets a copy of the client's trace, if any.
    pub fn trace_file(&self) -> Option<&Path> {
        match &self.trace {
            Some(Trace::File(f)) => Some(f),
            _ => None,
        }
    }
}
