//! HdrHistogram interval logs (`.hlog`): the per-interval latency
//! histograms of a run in the format the HdrHistogram tools read
//! (HistogramLogProcessor, HdrHistogram_py, hdrhistogram-rs). Warm-up
//! intervals carry the tag `warmup`; measured ones are untagged.

use crate::hist::{self, DecodeError};
use crate::result::{Phase, RunResult};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::time::Duration;

/// Why an interval log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    #[error("{0}")]
    Decode(#[from] DecodeError),
    #[error("writing the interval log: {0}")]
    Write(String),
}

/// Writes the run's intervals as an interval log.
pub fn write(out: &mut impl std::io::Write, r: &RunResult) -> Result<(), HlogError> {
    let start =
        humantime::parse_rfc3339(&r.started_at).unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    let mut ser = V2DeflateSerializer::new();
    let w = |e: std::io::Error| HlogError::Write(e.to_string());
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!("wirebench {} run {}", r.env.wirebench_version, r.run_id))
        .add_comment("values in nanoseconds; Interval_Max in milliseconds; warm-up intervals tagged 'warmup'")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1e6)
        .begin_log_with(out, &mut ser)
        .map_err(w)?;
    log.write_comment(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"",
    )
    .map_err(w)?;
    let warmup = Tag::new("warmup");
    for iv in &r.intervals {
        let h = hist::decode(&iv.latency_hist)?;
        let tag = if iv.phase == Phase::Warmup {
            warmup
        } else {
            None
        };
        log.write_histogram(
            &h,
            Duration::from_nanos(iv.start_ns),
            Duration::from_nanos(iv.end_ns.saturating_sub(iv.start_ns)),
            tag,
        )
        .map_err(|e| HlogError::Write(format!("{e:?}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn the_log_reads_back_to_the_same_histograms() {
        let mut r = crate::result::tests::sample();
        let mut h = hist::new_hist();
        for v in [1_000u64, 2_000, 3_000_000] {
            hist::record(&mut h, v);
        }
        let iv = |phase, start_ns| crate::result::Interval {
            start_ns,
            end_ns: start_ns + 1_000_000_000,
            phase,
            ops: 3,
            bytes_out: 0,
            bytes_in: 0,
            errors: 0,
            ops_per_s: 3.0,
            sent: 3,
            latency: hist::LatencySummary::of(&h),
            service_latency: hist::LatencySummary::of(&h),
            latency_hist: hist::encode(&h),
            client_cores: vec![],
            server_cores: vec![],
            hiccup_max_ns: None,
            hiccup_lost_ns: None,
            stalled: false,
            partial: false,
            program_busy_pct: vec![],
            program_in_flight: None,
            server_share: vec![],
            server_groups: vec![],
        };
        r.intervals = vec![iv(Phase::Warmup, 0), iv(Phase::Measure, 1_000_000_000)];
        let mut buf = Vec::new();
        write(&mut buf, &r).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("#[StartTime: "), "{text}");
        let entries: Vec<_> = IntervalLogIterator::new(&buf)
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(i) => Some(i),
                _ => None,
            })
            .collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].tag().map(|t| t.as_str()), Some("warmup"));
        assert!(entries[1].tag().is_none());
        assert_eq!(entries[1].start_timestamp(), Duration::from_secs(1));
        assert!(
            (entries[1].max() - 3.0).abs() < 0.01,
            "max in ms: {}",
            entries[1].max()
        );
        let bytes = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            entries[1].encoded_histogram(),
        )
        .unwrap();
        let back: hist::LatencyHist = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.max(), h.max());
    }
}
