//! What each command makes of the live-metrics flags of its request
//! ([`LiveFlags`], declared with the request in `wirebench_core::live`).

use super::listen::MetricsOptions;
use wirebench_core::live::LiveFlags;
use wirebench_core::units::Dur;

/// What the flags ask for (None: no `--metrics-listen`).
pub fn options(flags: &LiveFlags) -> Option<MetricsOptions> {
    Some(MetricsOptions {
        listen: flags.metrics_listen?,
        token_file: flags.metrics_token_file.clone(),
        hold: flags.metrics_hold.map(|Dur(d)| d).unwrap_or_default(),
        point: flags.metrics_point.clone(),
    })
}

/// Refused by a command that serves none.
pub fn refuse(flags: &LiveFlags, command: &str) -> Result<(), String> {
    if flags.metrics_listen.is_some() {
        return Err(format!(
            "--metrics-listen: `{command}` serves no live metrics (run and search do)"
        ));
    }
    if flags.live_view() {
        return Err(format!(
            "--live: `{command}` has no live view (run and search do)"
        ));
    }
    Ok(())
}

/// The flags a sweep gives its runs' first instances, in their requests
/// (one run at a time serves, on the sweep's address; None: no metrics);
/// `--live` is refused (a sweep prints its own progress).
pub fn for_sweep(flags: &LiveFlags) -> Result<Option<LiveFlags>, String> {
    if flags.live_view() {
        return Err(
            "--live: `sweep` has no live view (run and search do); its runs' metrics are served with --metrics-listen".into(),
        );
    }
    let Some(opts) = options(flags) else {
        return Ok(None);
    };
    opts.check()?;
    // The child runs from the same directory: a token file's path as given.
    Ok(Some(LiveFlags {
        metrics_point: None,
        live: None,
        ..flags.clone()
    }))
}
