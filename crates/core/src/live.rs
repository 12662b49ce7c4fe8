//! Live metrics for Prometheus while a run works, and the live view in the
//! terminal ([`LiveFlags`], a group of the run's request: a spec file sets
//! them as it sets any flag, and a sweep hands them to its runs in their
//! requests).

use crate::transport::heading;
use crate::units::Dur;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The flags of live metrics and the live view (`run`, `search`, `sweep`;
/// a coordinator serves its agents' seconds). Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct LiveFlags {
    /// Serve live metrics (OpenMetrics, Prometheus text or protobuf with native histograms) at
    /// http://ADDR/metrics while the command works, e.g. 127.0.0.1:9464 (port 0: any). An
    /// address that is not loopback needs --metrics-token-file.
    #[arg(long, value_name = "ADDR", help_heading = heading::LIVE)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_listen: Option<SocketAddr>,
    /// The bearer token every scrape must send (Prometheus: `authorization: {credentials_file:
    /// FILE}`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "metrics_listen",
        help_heading = heading::LIVE
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_token_file: Option<PathBuf>,
    /// How long the final figures stay served after the work ends, for a scraper's last look
    /// (default 0s; a scrape interval or two, e.g. 5s, when Prometheus must see the end).
    #[arg(
        long,
        value_name = "DURATION",
        requires = "metrics_listen",
        help_heading = heading::LIVE
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub metrics_hold: Option<Dur>,
    /// The sweep's point this run is: its metrics' `point` label (set by a
    /// sweep: never a flag).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_point: Option<String>,
    /// Draw a terminal dashboard of the run (rate, latency percentiles, errors, the stage, CPU
    /// per core), redrawn each second; a line per second when stderr is not a terminal.
    #[arg(
        long,
        num_args = 0,
        default_missing_value = "true",
        help_heading = heading::LIVE
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<bool>,
}

impl LiveFlags {
    /// Whether the live view is asked for.
    pub fn live_view(&self) -> bool {
        self.live.unwrap_or(false)
    }

    /// Whether any of them is set.
    pub fn is_empty(&self) -> bool {
        *self == LiveFlags::default()
    }
}
