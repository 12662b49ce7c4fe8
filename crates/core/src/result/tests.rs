use super::*;
use crate::hist;
pub use fixture::sample;

#[test]
fn json_round_trip() {
    let r = sample();
    let text = serde_json::to_string_pretty(&r).unwrap();
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    assert!(text.contains("\"schema_version\": 4"));
    assert_eq!(hist::decode(&back.latency_hist).unwrap().len(), 1);
}

#[test]
fn warnings_carry_their_text_and_read_back() {
    let mut r = sample();
    r.warnings = vec![
        Warning::DebugBuild,
        Warning::Drift { drift_pct: -12.0 },
        Warning::ClientBound {
            client_cpu_pct: 97.5,
            cpus: 1,
        },
    ];
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        text.contains(
            r#"{"kind":"debug_build","message":"debug build: figures are not representative"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#""kind":"drift","drift_pct":-12.0,"message":"throughput drifts by -12%"#),
        "{text}"
    );
    assert!(
        text.contains("the client used 98% of the 1 CPU(s) it may use"),
        "{text}"
    );
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back.warnings, r.warnings);
}

/// Issue 45: a server that answered 500/s, 333/s of them errors, is
/// said to have answered 500/s, not 167/s; a result written before the
/// errors were kept reads back with none.
#[test]
fn issue_45_an_answer_that_is_an_error_is_still_an_answer() {
    let w = Warning::RateNotAnswered {
        ops_per_s: 167.0,
        rate_per_s: 500.0,
        errors_per_s: 333.0,
    };
    assert_eq!(
        w.to_string(),
        "the server answered 500/s of the 500/s asked (100%), 333/s of them errors: 167/s succeeded"
    );
    let old: Warning = serde_json::from_str(
        r#"{"kind":"rate_not_answered","ops_per_s":400.0,"rate_per_s":500.0}"#,
    )
    .unwrap();
    assert_eq!(
        old.to_string(),
        "target rate not reached: the server answered 400/s of the 500/s asked (80%)"
    );
}
