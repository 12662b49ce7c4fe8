//! Property tests of what reads input (issue 16's fuzz targets on the stable
//! toolchain): units, run requests from JSON and from a spec's TOML,
//! histograms, and stored results. Arbitrary input never panics; what is
//! accepted holds the limits. Cases are few enough for CI (seconds).

use proptest::prelude::*;
use std::path::Path;
use wirebench_core::limits::{MAX_CONNECTIONS, MAX_PHASE};
use wirebench_core::plan::{self, Experiment};
use wirebench_core::request::RunRequest;
use wirebench_core::spec::StopSpec;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::units::{Bytes, Dur, parse_duration, parse_rate, parse_size};
use wirebench_core::{hist, store};

/// The cases of each property: `n`, or `PROPTEST_CASES` for a longer hunt.
fn cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}

/// Text that looks like what flags and spec keys take, or nothing like it.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9]{1,22}(\\.[0-9]{1,3})?(ns|us|ms|s|m|h|d|B|KiB|MiB|GiB|KB|k|M|/s|k/s)?",
        "-?[0-9]{1,3}(-[0-9]{1,3})?(,[0-9]{1,3})*",
        "(p50|p99|p999|max|ops|errors|ttfb-p99)(<|>|<=|>=)[0-9]{1,6}(ms|us|s|%|k/s)?",
        "(tcp|unix|s3|s3s|http)://[a-z0-9.:/\\[\\]]{0,30}",
        prop::sample::select(vec![
            "echo",
            "oneway",
            "stream",
            "rr",
            "reactor",
            "pool",
            "msgr",
            "shm",
            "s3",
            "spin",
            "futex",
            "mixed",
            "get",
            "put",
            "poisson",
            "uniform",
            "18446744074s",
            "0s",
            "0",
            "4GiB",
            "1h",
            "31d",
            "",
        ])
        .prop_map(String::from),
    ]
}

/// A JSON value of any type a key might (wrongly) be given.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as V;
    let leaf = prop_oneof![
        5 => token().prop_map(V::String),
        3 => (0u64..70_000).prop_map(V::from),
        1 => any::<i64>().prop_map(V::from),
        1 => any::<u64>().prop_map(V::from),
        1 => any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(V::Null, V::Number)),
        2 => any::<bool>().prop_map(V::Bool),
        1 => Just(V::Null),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(V::Array)
    })
}

/// A TOML value of any type a key might be given.
fn toml_value() -> impl Strategy<Value = toml::Value> {
    use toml::Value as V;
    let leaf = prop_oneof![
        5 => token().prop_map(V::String),
        3 => (-5i64..70_000).prop_map(V::Integer),
        1 => any::<i64>().prop_map(V::Integer),
        1 => any::<f64>().prop_map(V::Float),
        2 => any::<bool>().prop_map(V::Boolean),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(V::Array)
    })
}

fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(RunRequest::keys().to_vec())
}

/// A key and a value of the type it takes (mostly), so that requests get
/// past their types to their checks.
fn field() -> impl Strategy<Value = (&'static str, serde_json::Value)> {
    use serde_json::Value as V;
    key().prop_flat_map(|k| {
        let typed: BoxedStrategy<V> = match k {
            "clients" | "sessions" | "conns_per_client" | "depth" | "count" | "repeat"
            | "trace_sample" | "objects" | "put_parts" | "get_parts" => prop_oneof![
                4 => (0u64..100).prop_map(V::from),
                1 => any::<u64>().prop_map(V::from),
            ]
            .boxed(),
            "no_hiccup" | "poll" | "verify" | "force" | "keep" | "create_bucket" | "trace" => {
                any::<bool>().prop_map(V::Bool).boxed()
            }
            "slo" | "placement_note" => prop::collection::vec(token().prop_map(V::String), 0..3)
                .prop_map(V::Array)
                .boxed(),
            _ => token().prop_map(V::String).boxed(),
        };
        let v = prop_oneof![5 => typed, 1 => json_value()];
        (Just(k), v)
    })
}

fn topo() -> Topology {
    Topology::with_cpus(CpuList::parse("0-3").unwrap())
}

/// What an accepted request must hold.
fn holds_the_limits(req: &RunRequest) -> Result<(), TestCaseError> {
    if let Ok((spec, _)) = req.check(&topo()) {
        prop_assert!(spec.clients >= 1 && spec.conns_per_client >= 1 && spec.depth >= 1);
        prop_assert!(spec.connections() <= MAX_CONNECTIONS);
        if let StopSpec::DurationNs(ns) = spec.stop {
            prop_assert!(ns > 0 && u128::from(ns) <= MAX_PHASE.as_nanos(), "{ns}");
        }
        prop_assert!(u128::from(spec.warmup_ns) <= MAX_PHASE.as_nanos());
        if let Some(r) = spec.rate_per_s {
            prop_assert!(r.is_finite() && r > 0.0);
        }
        // What was accepted can be said again as flags (a sweep's plan).
        let _ = req.to_args();
        prop_assert!(req.slos().is_ok());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    #[test]
    fn units_read_or_refuse_and_print_back(s in token()) {
        let _ = parse_rate(&s);
        if let Ok(n) = parse_size(&s) {
            prop_assert_eq!(Bytes(n).to_string().parse::<Bytes>(), Ok(Bytes(n)));
        }
        if let Ok(d) = parse_duration(&s) {
            prop_assert_eq!(Dur(d).to_string().parse::<Dur>(), Ok(Dur(d)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1500)))]

    #[test]
    fn requests_from_json_are_checked_or_refused_with_a_flag(
        fields in prop::collection::vec(field(), 1..5)
    ) {
        let obj: serde_json::Map<String, serde_json::Value> =
            fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        if let Ok(req) = serde_json::from_value::<RunRequest>(serde_json::Value::Object(obj)) {
            if let Err(e) = req.check(&topo()) {
                prop_assert!(e.flag().starts_with("--"), "{e}");
            }
            holds_the_limits(&req)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    #[test]
    fn spec_files_are_planned_or_refused(
        base in prop::collection::btree_map(key(), toml_value(), 0..6),
        axis in key(),
        values in prop::collection::vec(toml_value(), 1..4),
    ) {
        let mut doc = toml::Table::new();
        doc.insert("name".into(), toml::Value::String("p".into()));
        doc.insert("base".into(), toml::Value::Table(
            base.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        ));
        let mut matrix = toml::Table::new();
        matrix.insert(axis.to_string(), toml::Value::Array(values));
        doc.insert("matrix".into(), toml::Value::Table(matrix));
        if let Ok(exp) = Experiment::from_table("p.toml", &doc, Path::new("."))
            && let Ok(runs) = plan::plan(&exp, &topo(), true)
        {
            for req in runs.iter().flat_map(|r| &r.requests) {
                holds_the_limits(req)?;
            }
        }
    }

    #[test]
    fn histograms_decode_or_refuse(bytes in prop::collection::vec(any::<u8>(), 0..300), text in any::<String>()) {
        use base64::Engine;
        let _ = hist::decode(&base64::engine::general_purpose::STANDARD.encode(&bytes));
        let _ = hist::decode(&text);
        // A real histogram with bytes changed.
        let mut h = hist::new_hist();
        for v in [1_000u64, 50_000, 7_000_000] {
            hist::record(&mut h, v);
        }
        let mut real = base64::engine::general_purpose::STANDARD
            .decode(hist::encode(&h))
            .unwrap();
        for (i, b) in bytes.iter().enumerate().take(8) {
            let at = (usize::from(*b) * 31 + i) % real.len();
            real[at] ^= b | 1;
        }
        let _ = hist::decode(&base64::engine::general_purpose::STANDARD.encode(&real));
    }

    #[test]
    fn stored_results_load_or_refuse(edits in prop::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..6)) {
        let json = serde_json::to_string_pretty(&wirebench_core::result::fixture::sample()).unwrap();
        let mut bytes = json.into_bytes();
        for (at, b, how) in edits {
            let at = usize::from(at) % bytes.len().max(1);
            match how {
                0 => bytes[at] = b,
                1 => bytes.truncate(at),
                _ => bytes.insert(at, b),
            }
            if bytes.is_empty() {
                break;
            }
        }
        let dir = std::env::temp_dir().join(format!("wb-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), &bytes).unwrap();
        let _ = store::load(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(200)))]

    /// What load agents' parts measured, merged, is what one host recording
    /// every sample would have: `merge(split(samples)) == hist(samples)`,
    /// for the run's histogram and for a second's.
    #[test]
    fn merging_the_parts_of_a_split_gives_the_histogram_of_all_samples(
        samples in prop::collection::vec((1u64..3_600_000_000_000, 0usize..4), 1..600),
        parts in 1usize..5,
    ) {
        use wirebench_core::merge;
        use wirebench_core::result::fixture;
        let mut all = hist::new_hist();
        let mut each = vec![hist::new_hist(); parts];
        for (ns, who) in &samples {
            hist::record(&mut all, *ns);
            hist::record(&mut each[who % parts], *ns);
        }
        let results: Vec<_> = each
            .iter()
            .enumerate()
            .map(|(k, h)| {
                let mut r = fixture::sample();
                r.run_id = format!("part-{k}");
                r.latency_hist = hist::encode(h);
                r.service_hist = r.latency_hist.clone();
                r.summary.ops = h.len();
                let mut iv = fixture::interval(0, 0.0, 1);
                iv.ops = h.len();
                iv.latency_hist = r.latency_hist.clone();
                r.intervals = vec![iv];
                r
            })
            .collect();
        let m = merge::instances(&results).unwrap();
        prop_assert_eq!(m.summary.ops, samples.len() as u64);
        prop_assert_eq!(hist::decode(&m.latency_hist).unwrap(), all.clone());
        let seconds: Vec<_> = results.iter().map(|r| r.intervals[0].clone()).collect();
        let second = merge::intervals_of(&seconds).unwrap();
        prop_assert_eq!(second.ops, samples.len() as u64);
        prop_assert_eq!(hist::decode(&second.latency_hist).unwrap(), all);
    }
}
