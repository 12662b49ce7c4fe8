//! Latency histograms: HDR histograms with 3 significant digits from 1 ns to
//! one hour, their percentile summary, and a text encoding (base64 of the
//! compressed V2 format used by the HdrHistogram tools) that merges exactly.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

/// The highest latency a histogram tracks; longer values are clamped to it.
pub const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds.
pub type LatencyHist = Histogram<u64>;

/// A new, empty latency histogram.
pub fn new_hist() -> LatencyHist {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds")
}

/// Records one latency, clamped to [1 ns, MAX_TRACKED_NS].
#[inline]
pub fn record(h: &mut LatencyHist, ns: u64) {
    h.saturating_record(ns.clamp(1, MAX_TRACKED_NS));
}

/// Records `count` values spread evenly over `[lo, hi]`, as the
/// correction of coordinated omission does for the requests a stalled
/// sender held back: walked bucket by bucket, so it costs the buckets of
/// the range (a few thousand per decade), not `count`.
pub fn record_spread(h: &mut LatencyHist, lo: u64, hi: u64, count: u64) {
    let (lo, hi) = (lo.clamp(1, MAX_TRACKED_NS), hi.clamp(1, MAX_TRACKED_NS));
    if count == 0 || hi < lo {
        return;
    }
    let range = u128::from(hi - lo) + 1;
    let mut carry = 0u128;
    let mut v = lo;
    while v <= hi {
        let next = h.next_non_equivalent(v).clamp(v + 1, hi + 1);
        carry += u128::from(count) * u128::from(next - v);
        let n = u64::try_from(carry / range).unwrap_or(u64::MAX);
        carry %= range;
        if n > 0 {
            h.saturating_record_n(v, n);
        }
        v = next;
    }
}

/// Encodes a histogram as base64 of the compressed V2 format.
pub fn encode(h: &LatencyHist) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Why an encoded histogram could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram is not a valid HdrHistogram V2 blob: {0:?}")]
    Hdr(hdrhistogram::serialization::DeserializeError),
}

/// Decodes what [`encode`] wrote.
pub fn decode(text: &str) -> Result<LatencyHist, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    let h: LatencyHist = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Hdr)?;
    // Re-home into our bounds so that merges with fresh histograms never fail.
    let mut out = new_hist();
    out.add(&h).map_err(|_| {
        DecodeError::Hdr(hdrhistogram::serialization::DeserializeError::UsizeTypeTooSmall)
    })?;
    Ok(out)
}

/// The percentile summary every report shows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    pub fn of(h: &LatencyHist) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_ns: h.mean(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_spread_over_a_range_keep_their_count_and_spread() {
        let mut h = new_hist();
        record_spread(&mut h, 100_000, 3_000_000_000, 30_000);
        assert_eq!(h.len(), 30_000);
        let p50 = h.value_at_quantile(0.5) as f64;
        assert!((p50 / 1.5e9 - 1.0).abs() < 0.01, "{p50}");
        assert!(
            h.max() >= 2_990_000_000 && h.min() <= 300_000,
            "{} {}",
            h.min(),
            h.max()
        );
        let mut one = new_hist();
        record_spread(&mut one, 5, 5, 3);
        assert_eq!((one.len(), one.max()), (3, 5));
    }

    #[test]
    fn merge_of_decoded_parts_equals_the_whole() {
        let mut whole = new_hist();
        let mut a = new_hist();
        let mut b = new_hist();
        let mut x: u64 = 12345;
        for i in 0..50_000u64 {
            // xorshift: a spread of values over many magnitudes
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = 1 + x % (1 + (1u64 << (i % 40)));
            record(&mut whole, v);
            record(if i % 3 == 0 { &mut a } else { &mut b }, v);
        }
        let mut merged = decode(&encode(&a)).unwrap();
        merged.add(decode(&encode(&b)).unwrap()).unwrap();
        assert_eq!(merged, whole);
        assert_eq!(LatencySummary::of(&merged), LatencySummary::of(&whole));
    }

    #[test]
    fn summary_of_known_values() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            record(&mut h, v * 1000);
        }
        let s = LatencySummary::of(&h);
        assert_eq!(s.count, 1000);
        assert!((s.p50_ns as f64 - 500_000.0).abs() <= 500.0, "{s:?}");
        assert!((s.p99_ns as f64 - 990_000.0).abs() <= 1000.0, "{s:?}");
        assert_eq!(s.min_ns, 1000);
        assert!(s.max_ns >= 1_000_000 && s.max_ns <= 1_001_000);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(decode("not base64 !").is_err());
        assert!(decode("AAAA").is_err());
    }
}
