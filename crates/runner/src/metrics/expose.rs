//! The page: the board as metric families, written in Prometheus's text
//! format (0.0.4), OpenMetrics text (1.0.0) or Prometheus's delimited
//! protobuf (where native histograms go).

use super::board::{Board, LastSecond, Totals};
use prost::Message;
use wirebench_core::hist::LatencyHist;
use wirebench_core::result::Phase;

/// Classic buckets: upper bounds 2^(k/4) s for k in this range (0.95 us to
/// 64 s), then +Inf.
pub const CLASSIC_K: std::ops::RangeInclusive<i32> = -80..=24;
/// Buckets per power of two of the classic histogram.
pub const CLASSIC_PER_OCTAVE: f64 = 4.0;
/// The native histograms' schema: 2^3 buckets per power of two.
pub const NATIVE_SCHEMA: i32 = 3;
/// The native zero bucket's width (client_golang's default): nothing a
/// latency in ns can reach, and above 0 so that a scraper knows the form.
pub const NATIVE_ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// A page's format, chosen by the scraper's Accept header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    OpenMetrics,
    Protobuf,
}

impl Format {
    /// The first format that `accept` names, Prometheus's text otherwise.
    pub fn of_accept(accept: &str) -> Format {
        let mut best = Format::Text;
        let mut best_q = 0.0;
        for part in accept.split(',') {
            let mut fields = part.split(';').map(str::trim);
            let mime = fields.next().unwrap_or("");
            let params: Vec<&str> = fields.collect();
            let q = params
                .iter()
                .find_map(|p| p.strip_prefix("q=")?.parse::<f64>().ok())
                .unwrap_or(1.0);
            let f = match mime {
                "application/vnd.google.protobuf"
                    if params.contains(&"proto=io.prometheus.client.MetricFamily")
                        && params.contains(&"encoding=delimited") =>
                {
                    Format::Protobuf
                }
                "application/openmetrics-text" => Format::OpenMetrics,
                "text/plain" => Format::Text,
                _ => continue,
            };
            if q > best_q {
                (best, best_q) = (f, q);
            }
        }
        best
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Protobuf => {
                "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
            }
        }
    }
}

/// A histogram as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub count: u64,
    pub sum_s: f64,
    /// Cumulative counts at each classic upper bound (without +Inf).
    pub classic: Vec<(f64, u64)>,
    /// Native buckets: (index, count), index i holding (2^((i-1)/8), 2^(i/8)] s.
    pub native: Vec<(i32, u64)>,
}

/// The classic upper bound of index `k`.
pub fn classic_bound(k: i32) -> f64 {
    (f64::from(k) / CLASSIC_PER_OCTAVE).exp2()
}

/// Counts `h` (in ns) into both bucket forms. A value is counted at the
/// highest value HDR holds as equal to it, as its percentiles are.
pub fn buckets(h: &LatencyHist) -> Buckets {
    let ks: Vec<i32> = CLASSIC_K.collect();
    let mut classic = vec![0u64; ks.len()];
    let mut native: std::collections::BTreeMap<i32, u64> = Default::default();
    let mut sum_s = 0.0;
    for v in h.iter_recorded() {
        let (ns, n) = (v.value_iterated_to(), v.count_at_value());
        let s = ns as f64 / 1e9;
        sum_s += s * n as f64;
        if s <= 0.0 {
            continue;
        }
        let lg = s.log2();
        // The first bound at or above s.
        let k = (lg * CLASSIC_PER_OCTAVE).ceil();
        let first = f64::from(*CLASSIC_K.start());
        if k <= f64::from(*CLASSIC_K.end()) {
            let at = wirebench_core::units::whole_usize(k.max(first) - first);
            classic[at] += n;
        }
        // |log2| of a value in ns, in s, is under 64: the index fits.
        #[allow(clippy::cast_possible_truncation)]
        let i = (lg * f64::from(1 << NATIVE_SCHEMA)).ceil() as i32;
        *native.entry(i).or_default() += n;
    }
    let mut acc = 0;
    let classic = ks
        .iter()
        .zip(classic)
        .map(|(&k, n)| {
            acc += n;
            (classic_bound(k), acc)
        })
        .collect();
    Buckets {
        count: h.len(),
        sum_s,
        classic,
        native: native.into_iter().collect(),
    }
}

/// One sample's value.
#[derive(Debug, Clone)]
pub enum Value {
    Counter(f64),
    Gauge(f64),
    Histogram(Buckets),
}

#[derive(Debug, Clone)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

#[derive(Debug, Clone)]
pub struct Family {
    /// Without `_total` for a counter.
    pub name: &'static str,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

/// The families made so far; one without samples is left out.
struct Families(Vec<Family>);

impl Families {
    fn add(&mut self, name: &'static str, help: &'static str, samples: Vec<Sample>) {
        if !samples.is_empty() {
            self.0.push(Family {
                name,
                help,
                samples,
            });
        }
    }
}

type Labels = Vec<(&'static str, String)>;

/// The labels of a board's samples.
struct Named<'a>(&'a Board);

impl Named<'_> {
    /// The run's own (run, transport, point), then `extra`.
    fn run(&self, extra: &[(&'static str, String)]) -> Labels {
        let b = self.0;
        let mut l = vec![
            ("run", b.labels.run.to_string()),
            ("transport", b.labels.transport.clone()),
        ];
        if let Some(p) = &b.labels.point {
            l.push(("point", p.clone()));
        }
        l.extend(extra.iter().cloned());
        l
    }

    /// An agent's (none for the run's own load) in a phase.
    fn who(&self, agent: &str, phase: Phase) -> Labels {
        let mut l = Vec::new();
        if !agent.is_empty() {
            l.push(("agent", agent.to_string()));
        }
        l.push(("phase", phase_name(phase).to_string()));
        self.run(&l)
    }

    /// An agent's, whatever the phase.
    fn agent(&self, agent: &str) -> Labels {
        match agent.is_empty() {
            true => self.run(&[]),
            false => self.run(&[("agent", agent.to_string())]),
        }
    }

    /// A sample per agent and phase of what `f` reads of its totals.
    fn per(&self, f: &dyn Fn(&Totals) -> Option<Value>) -> Vec<Sample> {
        self.0
            .totals
            .iter()
            .filter_map(|((agent, phase), t)| {
                Some(Sample {
                    labels: self.who(agent, *phase),
                    value: f(t)?,
                })
            })
            .collect()
    }

    /// A sample per agent and phase and per each of what `split` makes of
    /// its totals (a label's value and a value).
    fn per_split(
        &self,
        label: &'static str,
        split: &dyn Fn(&Totals) -> Vec<(String, Value)>,
    ) -> Vec<Sample> {
        let mut out = Vec::new();
        for ((agent, phase), t) in &self.0.totals {
            for (v, value) in split(t) {
                let mut l = self.who(agent, *phase);
                l.push((label, v));
                out.push(Sample { labels: l, value });
            }
        }
        out
    }

    /// The samples `f` makes of each agent's last second.
    fn last(&self, f: &dyn Fn(&str, &LastSecond) -> Vec<Sample>) -> Vec<Sample> {
        self.0.last.iter().flat_map(|(a, l)| f(a, l)).collect()
    }
}

/// The board as metric families (a family without samples is left out).
pub fn families(b: &Board) -> Vec<Family> {
    let n = Named(b);
    let mut f = Families(Vec::new());
    f.add(
        "wirebench_running",
        "1 while the load runs, 0 before and after.",
        vec![Sample {
            labels: n.run(&[]),
            value: Value::Gauge(if b.running { 1.0 } else { 0.0 }),
        }],
    );
    totals(&n, &mut f);
    last_second(&n, &mut f);
    if let Some((stage, rate)) = b.stage {
        f.add(
            "wirebench_stage",
            "The open loop's stage now (from 1; 0 in the warm-up).",
            vec![Sample {
                labels: n.run(&[]),
                value: Value::Gauge(stage as f64),
            }],
        );
        // A closed loop's stages ask connections, not a rate.
        if !rate.is_nan() {
            f.add(
                "wirebench_asked_rate_per_second",
                "The arrival rate the stages ask now.",
                vec![Sample {
                    labels: n.run(&[]),
                    value: Value::Gauge(rate),
                }],
            );
        }
    }
    f.0
}

/// What the load did so far, per agent and phase.
fn totals(n: &Named, f: &mut Families) {
    f.add(
        "wirebench_operations",
        "Operations that succeeded.",
        n.per(&|t| Some(Value::Counter(t.ops as f64))),
    );
    f.add(
        "wirebench_sent",
        "Requests sent.",
        n.per(&|t| Some(Value::Counter(t.sent as f64))),
    );
    f.add(
        "wirebench_errors",
        "Operations that failed, by cause.",
        n.per_split("cause", &|t| {
            // No error yet: a series at 0, so that rate() has one.
            if t.causes.is_empty() {
                return vec![("other".to_string(), Value::Counter(0.0))];
            }
            t.causes
                .iter()
                .map(|(cause, n)| (cause.clone(), Value::Counter(*n as f64)))
                .collect()
        }),
    );
    f.add(
        "wirebench_bytes",
        "Payload bytes sent (out) and received (in).",
        n.per_split("direction", &|t| {
            vec![
                ("out".to_string(), Value::Counter(t.bytes_out as f64)),
                ("in".to_string(), Value::Counter(t.bytes_in as f64)),
            ]
        }),
    );
    f.add(
        "wirebench_latency_seconds",
        "Latency of the operations that succeeded (from the intended send in an open loop).",
        n.per(&|t| Some(Value::Histogram(buckets(&t.latency)))),
    );
    f.add(
        "wirebench_schedule_lag_seconds",
        "Open loop: how late each request left after its intended send time.",
        n.per(&|t| Some(Value::Histogram(buckets(t.lag.as_ref()?)))),
    );
    f.add(
        "wirebench_operation_latency_seconds",
        "Latency by operation kind (typed transports: S3's get, put...).",
        n.per_split("operation", &|t| {
            t.by_op
                .iter()
                .map(|(op, (_, h))| (op.clone(), Value::Histogram(buckets(h))))
                .collect()
        }),
    );
    f.add(
        "wirebench_hiccup_lost_seconds",
        "Time the hiccup meter's probe lost to stalls of the platform.",
        n.per(&|t| Some(Value::Counter(t.hiccup_lost_ns as f64 / 1e9))),
    );
}

/// What each agent's last second showed.
fn last_second(n: &Named, f: &mut Families) {
    f.add(
        "wirebench_ops_per_second",
        "Operations per second in the last second reported.",
        n.last(&|a, l| {
            vec![Sample {
                labels: n.agent(a),
                value: Value::Gauge(l.ops_per_s),
            }]
        }),
    );
    let cores = |busy: bool| {
        n.last(&|a, l| {
            let mut out = Vec::new();
            for (side, cs) in [("client", &l.client_cores), ("server", &l.server_cores)] {
                for c in cs {
                    let mut labels = n.agent(a);
                    labels.push(("side", side.to_string()));
                    labels.push(("cpu", c.cpu.to_string()));
                    let pct = if busy { c.busy_pct } else { c.steal_pct };
                    out.push(Sample {
                        labels,
                        value: Value::Gauge(pct / 100.0),
                    });
                }
            }
            out
        })
    };
    f.add(
        "wirebench_cpu_busy_ratio",
        "How busy each CPU of the client's and the server's sets was in the last second (0 to 1).",
        cores(true),
    );
    f.add(
        "wirebench_cpu_steal_ratio",
        "The share of the last second the hypervisor ran something else on the CPU.",
        cores(false),
    );
    f.add(
        "wirebench_hiccup_max_seconds",
        "The hiccup meter's latest wake-up in the last second.",
        n.last(&|a, l| {
            l.hiccup_max_s
                .map(|s| Sample {
                    labels: n.agent(a),
                    value: Value::Gauge(s),
                })
                .into_iter()
                .collect()
        }),
    );
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Warmup => "warmup",
        Phase::Measure => "measure",
    }
}

/// The page in `format`.
pub fn page(b: &Board, format: Format) -> Vec<u8> {
    let fams = families(b);
    match format {
        Format::Protobuf => protobuf(&fams),
        Format::Text => text(&fams, false).into_bytes(),
        Format::OpenMetrics => text(&fams, true).into_bytes(),
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels_text(labels: &[(&str, String)], extra: Option<(&str, &str)>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// A number as both text formats read it.
fn num(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.is_nan() {
        "NaN".to_string()
    } else {
        format!("{v:?}")
    }
}

/// Prometheus's text format, or OpenMetrics's.
pub fn text(fams: &[Family], openmetrics: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for f in fams {
        let kind = match f.samples[0].value {
            Value::Counter(_) => "counter",
            Value::Gauge(_) => "gauge",
            Value::Histogram(_) => "histogram",
        };
        // OpenMetrics names a counter's family without its `_total`.
        let family = if kind == "counter" && !openmetrics {
            format!("{}_total", f.name)
        } else {
            f.name.to_string()
        };
        let _ = writeln!(out, "# HELP {family} {}", f.help);
        let _ = writeln!(out, "# TYPE {family} {kind}");
        if openmetrics && f.name.ends_with("_seconds") {
            let _ = writeln!(out, "# UNIT {family} seconds");
        }
        for s in &f.samples {
            match &s.value {
                Value::Counter(v) => {
                    let _ = writeln!(
                        out,
                        "{}_total{} {}",
                        f.name,
                        labels_text(&s.labels, None),
                        num(*v)
                    );
                }
                Value::Gauge(v) => {
                    let _ = writeln!(
                        out,
                        "{}{} {}",
                        f.name,
                        labels_text(&s.labels, None),
                        num(*v)
                    );
                }
                Value::Histogram(h) => {
                    for (le, n) in &h.classic {
                        let _ = writeln!(
                            out,
                            "{}_bucket{} {n}",
                            f.name,
                            labels_text(&s.labels, Some(("le", &num(*le))))
                        );
                    }
                    let _ = writeln!(
                        out,
                        "{}_bucket{} {}",
                        f.name,
                        labels_text(&s.labels, Some(("le", "+Inf"))),
                        h.count
                    );
                    let l = labels_text(&s.labels, None);
                    let _ = writeln!(out, "{}_sum{l} {}", f.name, num(h.sum_s));
                    let _ = writeln!(out, "{}_count{l} {}", f.name, h.count);
                }
            }
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// io.prometheus.client's messages (metrics.proto), the fields used here.
pub mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelPair {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        #[prost(double, tag = "1")]
        pub value: f64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Counter {
        #[prost(double, tag = "1")]
        pub value: f64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Bucket {
        #[prost(uint64, tag = "1")]
        pub cumulative_count: u64,
        #[prost(double, tag = "2")]
        pub upper_bound: f64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BucketSpan {
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        #[prost(uint64, tag = "1")]
        pub sample_count: u64,
        #[prost(double, tag = "2")]
        pub sample_sum: f64,
        #[prost(message, repeated, tag = "3")]
        pub bucket: Vec<Bucket>,
        #[prost(sint32, tag = "5")]
        pub schema: i32,
        #[prost(double, tag = "6")]
        pub zero_threshold: f64,
        #[prost(uint64, tag = "7")]
        pub zero_count: u64,
        #[prost(message, repeated, tag = "12")]
        pub positive_span: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "13")]
        pub positive_delta: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        #[prost(message, repeated, tag = "1")]
        pub label: Vec<LabelPair>,
        #[prost(message, optional, tag = "2")]
        pub gauge: Option<Gauge>,
        #[prost(message, optional, tag = "3")]
        pub counter: Option<Counter>,
        #[prost(message, optional, tag = "7")]
        pub histogram: Option<Histogram>,
    }
    /// COUNTER = 0, GAUGE = 1, HISTOGRAM = 4.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricFamily {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub help: String,
        #[prost(int32, tag = "3")]
        pub r#type: i32,
        #[prost(message, repeated, tag = "4")]
        pub metric: Vec<Metric>,
    }
}

/// The native buckets as spans and deltas. With no buckets, one empty span
/// (a histogram with none would read as a classic one).
pub fn spans(native: &[(i32, u64)]) -> (Vec<pb::BucketSpan>, Vec<i64>) {
    let mut spans: Vec<pb::BucketSpan> = Vec::new();
    let mut deltas = Vec::new();
    let (mut next, mut prev) = (None::<i32>, 0i64);
    for &(i, n) in native {
        match next {
            Some(at) if at == i => spans.last_mut().expect("a span").length += 1,
            Some(at) => spans.push(pb::BucketSpan {
                offset: i - at,
                length: 1,
            }),
            None => spans.push(pb::BucketSpan {
                offset: i,
                length: 1,
            }),
        }
        next = Some(i + 1);
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        deltas.push(n - prev);
        prev = n;
    }
    if spans.is_empty() {
        spans.push(pb::BucketSpan {
            offset: 0,
            length: 0,
        });
    }
    (spans, deltas)
}

/// Delimited MetricFamily messages, counters named with `_total`.
pub fn protobuf(fams: &[Family]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fams {
        let (kind, name) = match f.samples[0].value {
            Value::Counter(_) => (0, format!("{}_total", f.name)),
            Value::Gauge(_) => (1, f.name.to_string()),
            Value::Histogram(_) => (4, f.name.to_string()),
        };
        let metric = f
            .samples
            .iter()
            .map(|s| {
                let label = s
                    .labels
                    .iter()
                    .map(|(k, v)| pb::LabelPair {
                        name: k.to_string(),
                        value: v.clone(),
                    })
                    .collect();
                let mut m = pb::Metric {
                    label,
                    ..Default::default()
                };
                match &s.value {
                    Value::Counter(v) => m.counter = Some(pb::Counter { value: *v }),
                    Value::Gauge(v) => m.gauge = Some(pb::Gauge { value: *v }),
                    Value::Histogram(h) => {
                        let (positive_span, positive_delta) = spans(&h.native);
                        m.histogram = Some(pb::Histogram {
                            sample_count: h.count,
                            sample_sum: h.sum_s,
                            bucket: h
                                .classic
                                .iter()
                                .map(|&(upper_bound, cumulative_count)| pb::Bucket {
                                    cumulative_count,
                                    upper_bound,
                                })
                                .collect(),
                            schema: NATIVE_SCHEMA,
                            zero_threshold: NATIVE_ZERO_THRESHOLD,
                            zero_count: 0,
                            positive_span,
                            positive_delta,
                        });
                    }
                }
                m
            })
            .collect();
        let family = pb::MetricFamily {
            name,
            help: f.help.to_string(),
            r#type: kind,
            metric,
        };
        // Writing to a Vec cannot fail.
        let _ = family.encode_length_delimited(&mut out);
    }
    out
}

#[cfg(test)]
mod tests;
