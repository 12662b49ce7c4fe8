//! The flags of live metrics and of the live view (`run`, `search`,
//! `sweep`), and what each command makes of them.

use super::listen::MetricsOptions;
use clap::Args;
use std::path::PathBuf;
use wirebench_core::units::Dur;

/// Live metrics for Prometheus while the command works (`run`, `search`,
/// `sweep`; a coordinator serves its agents' seconds), and the live view.
#[derive(Args, Debug, Default)]
pub struct MetricsFlags {
    /// Serve live metrics (OpenMetrics, Prometheus text or protobuf with native histograms) at
    /// http://ADDR/metrics while the command works, e.g. 127.0.0.1:9464 (port 0: any). An
    /// address that is not loopback needs --metrics-token-file.
    #[arg(long, value_name = "ADDR", help_heading = "Live metrics")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// The bearer token every scrape must send (Prometheus: `authorization: {credentials_file:
    /// FILE}`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "metrics_listen",
        help_heading = "Live metrics"
    )]
    pub metrics_token_file: Option<PathBuf>,
    /// How long the final figures stay served after the work ends, for a scraper's last look
    /// (default 0s; a scrape interval or two, e.g. 5s, when Prometheus must see the end).
    #[arg(
        long,
        value_name = "DURATION",
        requires = "metrics_listen",
        help_heading = "Live metrics"
    )]
    pub metrics_hold: Option<Dur>,
    /// The sweep's point this run is: its metrics' `point` label (set by `sweep`).
    #[arg(long, hide = true, requires = "metrics_listen")]
    pub metrics_point: Option<String>,
    /// Draw a terminal dashboard of the run (rate, latency percentiles, errors, the stage, CPU
    /// per core), redrawn each second; a line per second when stderr is not a terminal.
    #[arg(long, help_heading = "Live metrics")]
    pub live: bool,
}

impl MetricsFlags {
    /// What the flags ask for (None: no `--metrics-listen`).
    pub fn options(&self) -> Option<MetricsOptions> {
        Some(MetricsOptions {
            listen: self.metrics_listen?,
            token_file: self.metrics_token_file.clone(),
            hold: self.metrics_hold.map(|Dur(d)| d).unwrap_or_default(),
            point: self.metrics_point.clone(),
        })
    }

    /// Refused by a command that serves none.
    pub fn refuse(&self, command: &str) -> Result<(), String> {
        if self.metrics_listen.is_some() {
            return Err(format!(
                "--metrics-listen: `{command}` serves no live metrics (run and search do)"
            ));
        }
        if self.live {
            return Err(format!(
                "--live: `{command}` has no live view (run and search do)"
            ));
        }
        Ok(())
    }

    /// The flags a sweep gives its runs' first instances (one run at a
    /// time serves, on the sweep's address); `--live` is refused (a sweep
    /// prints its own progress).
    pub fn for_sweep(&self) -> Result<Vec<String>, String> {
        if self.live {
            return Err(
                "--live: `sweep` has no live view (run and search do); its runs' metrics are served with --metrics-listen".into(),
            );
        }
        let Some(opts) = self.options() else {
            return Ok(Vec::new());
        };
        opts.check()?;
        let mut args = vec!["--metrics-listen".to_string(), opts.listen.to_string()];
        if let Some(f) = &self.metrics_token_file {
            // The child runs from the same directory: the path as given.
            args.extend(["--metrics-token-file".to_string(), f.display().to_string()]);
        }
        if let Some(d) = self.metrics_hold {
            args.extend(["--metrics-hold".to_string(), d.to_string()]);
        }
        Ok(args)
    }
}
