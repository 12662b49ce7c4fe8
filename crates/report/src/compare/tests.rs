use super::*;
use wirebench_core::result::fixture::{interval, sample};

/// A run whose ops/s and p99 are given (summary and every second).
fn run(ops: &[f64], p99: u64) -> RunResult {
    let mut r = sample();
    r.intervals = ops
        .iter()
        .enumerate()
        .map(|(k, &o)| {
            let mut i = interval(k as u64, o, 500);
            i.latency.p99_ns = p99;
            i
        })
        .collect();
    r.summary.ops_per_s = ops.iter().sum::<f64>() / ops.len() as f64;
    r.summary.latency.p99_ns = p99;
    r
}

fn variant(label: &str, runs: Vec<RunResult>) -> Variant {
    Variant {
        label: label.into(),
        runs,
    }
}

#[test]
fn stalls_seen_by_probes_of_different_periods_are_not_compared() {
    let watched = |period_ns: u64, lost_s: f64| {
        let mut r = run(&[100e3, 100e3, 100e3], 1000);
        r.summary.measured_ns = 3_000_000_000;
        r.summary.hiccup = Some(wirebench_core::result::HiccupSummary {
            p99_ns: 50_000,
            max_ns: 90_000,
            lost_s,
            stalled_seconds: 0,
            threshold_ns: 10_000_000,
            period_ns,
        });
        r
    };
    // A result from before the period was recorded (a 1 ms probe),
    // against one of a 10 ms probe: ten times the wake-ups, ten times
    // the normal time lost, and no platform to blame for it.
    let old = variant("old", vec![watched(0, 0.040)]);
    let new = variant("new", vec![watched(10_000_000, 0.004)]);
    let text = markdown(
        &[old, new.clone()],
        &compare(&[variant("old", vec![watched(0, 0.040)]), new.clone()]),
    );
    assert!(text.contains("(every 1.00ms and every 10.00ms)"), "{text}");
    assert!(!text.contains("Platform noise"), "{text}");
    let same = variant("same", vec![watched(10_000_000, 0.004)]);
    let text = markdown(&[new.clone(), same.clone()], &compare(&[new, same]));
    assert!(!text.contains("different periods"), "{text}");
}

#[test]
fn ratios_and_verdicts_follow_the_noise() {
    // Repetitions: A around 100k, B around 120k (clearly faster), C
    // around 101k with the same spread (same within noise).
    let reps = |vals: &[f64]| vals.iter().map(|&v| run(&[v, v], 1000)).collect::<Vec<_>>();
    let a = variant("a", reps(&[99e3, 100e3, 101e3, 100e3]));
    let b = variant("b", reps(&[119e3, 120e3, 121e3, 120e3]));
    let c = variant("c", reps(&[98e3, 102e3, 100e3, 104e3]));
    let rows = compare(&[a.clone(), b, c]);
    let ops = &rows[0];
    assert_eq!(ops.metric.name, "ops/s");
    let (ratio_b, v_b) = ops.against_first[0];
    assert!((ratio_b.unwrap() - 1.2).abs() < 1e-9);
    assert_eq!(v_b, Verdict::Better);
    assert_eq!(ops.against_first[1].1, Verdict::Same);
    assert_eq!(ops.cells[0].as_ref().unwrap().noise, Noise::Repetitions);
    // p99 identical everywhere: the same.
    let p99 = rows
        .iter()
        .find(|r| r.metric.name == "latency p99")
        .unwrap();
    assert_eq!(p99.against_first[0], (Some(1.0), Verdict::Same));
}

#[test]
fn a_single_run_uses_its_seconds_and_lower_latency_is_faster() {
    let a = variant("a", vec![run(&[100e3, 102e3, 98e3, 101e3, 99e3], 2000)]);
    let mut b_run = run(&[100e3, 103e3, 97e3, 101e3, 99e3], 1000);
    for i in &mut b_run.intervals {
        i.latency.p99_ns = 1000 + (i.start_ns / 1_000_000_000) * 10;
    }
    let b = variant("b", vec![b_run]);
    let rows = compare(&[a, b]);
    assert_eq!(rows[0].against_first[0].1, Verdict::Same, "ops/s");
    assert_eq!(rows[0].cells[0].as_ref().unwrap().noise, Noise::Seconds);
    let p99 = rows
        .iter()
        .find(|r| r.metric.name == "latency p99")
        .unwrap();
    // A's p99 is 2000 every second, B's about 1020: B is faster.
    assert_eq!(p99.against_first[0].1, Verdict::Better);
    let cpu = rows
        .iter()
        .find(|r| r.metric.name == "client CPU per op")
        .unwrap();
    assert_eq!(cpu.against_first[0].1, Verdict::Unknown);
    let md = markdown(&[variant("a", vec![]), variant("b", vec![])], &rows);
    assert!(md.contains("| latency p99 |"), "{md}");
    assert!(md.contains("| faster |"), "{md}");
    assert!(md.contains("same within noise"), "{md}");
}

#[test]
fn the_comparison_table_reads_as_it_did() {
    let reps = |vals: &[f64], p99: u64| vals.iter().map(|&v| run(&[v, v], p99)).collect::<Vec<_>>();
    let vs = [
        variant("base", reps(&[99e3, 100e3, 101e3], 1000)),
        variant("patched", reps(&[119e3, 120e3, 121e3], 800)),
    ];
    insta::assert_snapshot!(markdown(&vs, &compare(&vs)));
}

#[test]
fn s3_runs_compare_their_time_to_first_byte_and_others_do_not_show_it() {
    let with_ttfb = |ms: u64| {
        let mut r = run(&[100e3, 100e3], 1000);
        let mut h = wirebench_core::hist::new_hist();
        wirebench_core::hist::record(&mut h, ms * 1_000_000);
        r.summary.by_op.insert(
            "get".into(),
            wirebench_core::result::OpSummary {
                ttfb: Some(wirebench_core::hist::LatencySummary::of(&h)),
                ..Default::default()
            },
        );
        r
    };
    let a = variant("a", (0..3).map(|_| with_ttfb(10)).collect());
    let b = variant("b", vec![with_ttfb(5), with_ttfb(6), with_ttfb(5)]);
    let rows = compare(&[a, b]);
    let p99 = rows
        .iter()
        .find(|r| r.metric.name == "GET TTFB p99")
        .unwrap();
    assert_eq!(p99.against_first[0].1, Verdict::Better);
    assert!(p99.against_first[0].0.unwrap() < 0.6);
    let plain = [
        variant("x", vec![run(&[1.0, 1.0], 1)]),
        variant("y", vec![run(&[1.0, 1.0], 1)]),
    ];
    assert!(
        compare(&plain)
            .iter()
            .all(|r| !r.metric.name.contains("TTFB"))
    );
}

/// Twins three runs each, 486 and 484 ops/s, each within 1: the
/// t-test finds them apart, but 0.4% is the machine's drift between
/// runs: "same within noise". 5% apart with the same spread: slower.
#[test]
fn a_difference_under_one_percent_is_the_same_within_noise() {
    let of = |ops: &[f64]| {
        variant(
            "v",
            ops.iter()
                .map(|&o| run(&[o, o + 0.5, o - 0.5], 1000))
                .collect(),
        )
    };
    let a = of(&[486.0, 486.5, 485.5]);
    let twin = of(&[484.0, 484.5, 483.5]);
    let rows = compare(&[a.clone(), twin]);
    let ops = rows.iter().find(|r| r.metric.name == "ops/s").unwrap();
    assert_eq!(ops.against_first[0].1, Verdict::Same);
    let slower = of(&[462.0, 462.5, 461.5]);
    let rows = compare(&[a, slower]);
    let ops = rows.iter().find(|r| r.metric.name == "ops/s").unwrap();
    assert_eq!(ops.against_first[0].1, Verdict::Worse);
}

#[test]
fn welch_needs_two_samples_each() {
    assert_eq!(differ(&[1.0], &[2.0, 3.0]), None);
    assert_eq!(differ(&[1.0, 1.0], &[1.0, 1.0]), Some(false));
    assert_eq!(differ(&[1.0, 1.0], &[2.0, 2.0]), Some(true));
    assert_eq!(differ(&[1.0, 3.0], &[2.0, 4.0]), Some(false));
}

#[test]
fn issue_15_gates_trip_only_beyond_the_noise() {
    let gates = Gate::parse_list("ops_per_s<-5%, p99>+10%").unwrap();
    assert_eq!(gates.len(), 2);
    assert!(gates[0].below && gates[0].pct == -5.0);
    assert!(!gates[1].below && gates[1].pct == 10.0);
    for bad in ["ops<-5%", "ops_per_s<5", "p99=10%", "p99>x%"] {
        let e = Gate::parse_list(bad).unwrap_err();
        assert!(e.contains("ops_per_s, mib_per_s"), "{bad}: {e}");
    }
    let reps = |vals: &[f64], p99: u64| vals.iter().map(|&v| run(&[v, v], p99)).collect::<Vec<_>>();
    let a = variant("a", reps(&[99e3, 100e3, 101e3, 100e3], 1000));
    // 1.3x slower, clearly beyond the noise; p99 30% higher.
    let slow = variant("slow", reps(&[76e3, 77e3, 78e3, 77e3], 1300));
    let twin = variant("twin", reps(&[98e3, 102e3, 100e3, 101e3], 1000));
    let rows = compare(&[a.clone(), slow, twin]);
    let t = tripped(&gates, &rows);
    // B trips both; C, a twin of A, trips none.
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!((t[0].gate.as_str(), t[0].variant), ("ops_per_s<-5%", 'B'));
    assert!((t[0].change_pct + 23.0).abs() < 1.0, "{t:?}");
    assert_eq!((t[1].gate.as_str(), t[1].variant), ("p99>+10%", 'B'));
    let j = json(
        &[a.clone(), a],
        &compare(&[
            variant("a", reps(&[1.0, 2.0], 1)),
            variant("b", reps(&[1.0, 2.0], 1)),
        ]),
    );
    assert_eq!(j["metrics"][0]["metric"], "ops_per_s");
    assert_eq!(
        j["metrics"][0]["against_first"][0]["verdict"],
        "same within noise"
    );
}

/// Issue 48: single runs whose verdicts go both ways (ops/s faster, p99
/// slower) come with the advice to measure again, interleaved; runs of
/// repetitions do not.
#[test]
fn issue_48_mixed_verdicts_of_single_runs_advise_repeating() {
    let a = variant("a", vec![run(&[100e3, 102e3, 98e3, 101e3, 99e3], 2000)]);
    let b = variant("b", vec![run(&[120e3, 122e3, 118e3, 121e3, 119e3], 3000)]);
    let vs = [a, b];
    let rows = compare(&vs);
    let md = markdown(&vs, &rows);
    assert!(
        md.contains("Mixed verdicts for B against A (ops/s faster, latency p99 slower")
            && md.contains("run --repeat 5"),
        "{md}"
    );
    // Repetitions: their spread is the run-to-run noise; no advice.
    let reps = |v: f64, p99: u64| (0..3).map(|k| run(&[v + k as f64, v], p99)).collect();
    let vs = [
        variant("a", reps(100e3, 2000)),
        variant("b", reps(120e3, 3000)),
    ];
    let md = markdown(&vs, &compare(&vs));
    assert!(
        md.contains("| slower |") && !md.contains("Mixed verdicts"),
        "{md}"
    );
}
