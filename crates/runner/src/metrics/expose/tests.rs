use super::*;
use wirebench_core::hist;

fn hist_of(values_ns: &[(u64, u64)]) -> LatencyHist {
    let mut h = hist::new_hist();
    for &(v, n) in values_ns {
        h.record_n(v, n).unwrap();
    }
    h
}

/// The quantile Prometheus's histogram_quantile gives of classic
/// buckets: linear within the bucket that holds the rank.
fn classic_quantile(b: &Buckets, q: f64) -> f64 {
    let rank = q * b.count as f64;
    let mut lower = (0.0, 0u64);
    for &(le, n) in &b.classic {
        if n as f64 >= rank {
            let (lo, below) = lower;
            let within = (rank - below as f64) / (n - below) as f64;
            return lo + (le - lo) * within;
        }
        lower = (le, n);
    }
    f64::INFINITY
}

#[test]
fn classic_buckets_hold_the_values_and_their_quantile_is_within_a_bucket() {
    // 990 at 100 us, 10 at 5 ms: p99 is 100 us (HDR's equivalent).
    let h = hist_of(&[(100_000, 990), (5_000_000, 10)]);
    let b = buckets(&h);
    assert_eq!(b.count, 1000);
    assert_eq!(b.classic.last().unwrap().1, 1000);
    let p99 = h.value_at_quantile(0.99) as f64 / 1e9;
    let got = classic_quantile(&b, 0.99);
    let width = CLASSIC_PER_OCTAVE.recip().exp2();
    assert!(
        got <= p99 * width && got >= p99 / width,
        "p99 {p99} from buckets {got}"
    );
    // Counts are cumulative and never fall.
    assert!(b.classic.windows(2).all(|w| w[0].1 <= w[1].1));
    // The sum is the values' (within HDR's precision).
    let want = 990.0 * 100e-6 + 10.0 * 5e-3;
    assert!((b.sum_s - want).abs() / want < 0.001, "{}", b.sum_s);
}

#[test]
#[allow(clippy::cast_possible_truncation)]
fn native_buckets_count_each_value_in_its_exponential_bucket() {
    let h = hist_of(&[(1_000_000, 3), (2_000_000, 2)]);
    let b = buckets(&h);
    // 1 ms = 2^-9.97: index ceil(-9.97 * 8) = -79; 2 ms: -71.
    let idx = |s: f64| (s.log2() * 8.0).ceil() as i32;
    let one = idx(h.highest_equivalent(1_000_000) as f64 / 1e9);
    let two = idx(h.highest_equivalent(2_000_000) as f64 / 1e9);
    assert_eq!(b.native, vec![(one, 3), (two, 2)]);
    let (spans, deltas) = spans(&b.native);
    assert_eq!(spans.len(), 2);
    assert_eq!((spans[0].offset, spans[0].length), (one, 1));
    assert_eq!((spans[1].offset, spans[1].length), (two - one - 1, 1));
    assert_eq!(deltas, vec![3, -1]);
    // Nothing recorded: one empty span, so the form is still native.
    let (s, d) = spans_of_empty();
    assert_eq!((s.len(), s[0].length, d.len()), (1, 0, 0));
}

fn spans_of_empty() -> (Vec<pb::BucketSpan>, Vec<i64>) {
    spans(&[])
}

fn board() -> Board {
    let mut b = Board::default();
    b.labels.run = 1;
    b.labels.transport = "msgr".into();
    b.ensure("");
    let t = b.totals.get_mut(&(String::new(), Phase::Measure)).unwrap();
    t.ops = 7;
    t.latency = hist_of(&[(50_000, 7)]);
    t.count_cause("timeout", 2);
    b
}

#[test]
fn the_text_formats_name_counters_and_end_as_each_wants() {
    let b = board();
    let prom = String::from_utf8(page(&b, Format::Text)).unwrap();
    assert!(prom.contains("# TYPE wirebench_operations_total counter"));
    assert!(prom.contains(
        "wirebench_operations_total{run=\"1\",transport=\"msgr\",phase=\"measure\"} 7.0"
    ));
    assert!(prom.contains("wirebench_errors_total{run=\"1\",transport=\"msgr\",phase=\"measure\",cause=\"timeout\"} 2.0"));
    assert!(prom.contains(
        "wirebench_latency_seconds_bucket{run=\"1\",transport=\"msgr\",phase=\"measure\",le=\"+Inf\"} 7"
    ));
    assert!(!prom.contains("# EOF"));
    let om = String::from_utf8(page(&b, Format::OpenMetrics)).unwrap();
    assert!(om.contains("# TYPE wirebench_operations counter"));
    assert!(om.contains("# UNIT wirebench_latency_seconds seconds"));
    assert!(om.ends_with("# EOF\n"));
}

#[test]
fn the_protobuf_page_decodes_with_both_histogram_forms() {
    let b = board();
    let bytes = page(&b, Format::Protobuf);
    let mut buf = bytes.as_slice();
    let mut names = Vec::new();
    let mut latency = None;
    while !buf.is_empty() {
        let f = pb::MetricFamily::decode_length_delimited(&mut buf).unwrap();
        if f.name == "wirebench_latency_seconds" {
            latency = f
                .metric
                .iter()
                .find(|m| m.label.iter().any(|l| l.value == "measure"))
                .and_then(|m| m.histogram.clone());
        }
        names.push(f.name);
    }
    assert!(names.contains(&"wirebench_operations_total".to_string()));
    let h = latency.expect("the measured latency");
    assert_eq!(h.sample_count, 7);
    assert_eq!(h.bucket.last().unwrap().cumulative_count, 7);
    assert_eq!(h.schema, NATIVE_SCHEMA);
    assert!(h.zero_threshold > 0.0);
    assert_eq!(h.positive_delta.iter().sum::<i64>(), 7);
}

#[test]
fn the_scrapers_accept_header_picks_the_format() {
    let prom = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
    assert_eq!(Format::of_accept(prom), Format::Protobuf);
    let om = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::of_accept(om), Format::OpenMetrics);
    assert_eq!(Format::of_accept("*/*"), Format::Text);
    assert_eq!(Format::of_accept(""), Format::Text);
}

#[test]
fn causes_past_the_limit_count_as_other() {
    let mut t = Totals::new();
    for i in 0..super::super::board::MAX_CAUSES + 10 {
        t.count_cause(&format!("cause {i}"), 1);
    }
    assert_eq!(t.causes.len(), super::super::board::MAX_CAUSES + 1);
    assert_eq!(t.causes["other"], 10);
}
