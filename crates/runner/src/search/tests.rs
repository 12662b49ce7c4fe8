use super::*;

fn step(rate: f64, pass: bool, completed: f64) -> Step {
    Step {
        rate_per_s: rate,
        sent_per_s: rate,
        completed_per_s: completed,
        pass,
        kept_up: completed >= 0.95 * rate,
        tries: 1,
        tries_passed: usize::from(pass),
        ..Step::default()
    }
}

/// The steps measured again under the miss that ends the band (that
/// miss, the edge phase's rates and the saturation are measured again
/// before they decide the answer).
fn remeasured_inside(steps: &[Step]) -> Vec<&Step> {
    let bound = answer(steps).0.and_then(|b| bound_above(steps, b));
    steps
        .iter()
        .filter(|s| s.remeasured && bound.is_some_and(|b| s.rate_per_s < b))
        .collect()
}

/// Runs the search's rule from 1000/s with `measure(n, rate)` as one try
/// (`n`: the steps so far). A step measured again, or an edge rate, takes
/// tries until two agree, as `judge::vote` does (a try that fell behind
/// is a miss, one undecided alone no vote; undecided after
/// [`AGREEMENT_TRIES`]); `again` sees each step before it is measured again.
fn run_rule(
    max_steps: usize,
    mut measure: impl FnMut(usize, f64) -> Step,
    again: impl Fn(&[Step], usize),
) -> (Vec<Step>, bool) {
    let mut steps: Vec<Step> = Vec::new();
    let mut next = Next::Try(1000.0);
    while steps.len() < max_steps {
        let n = steps.len();
        let s = match next {
            Next::Try(r) => measure(n, r),
            Next::Vote(r) => voted(vec![], 2, |_| measure(n, r)),
            Next::Again(i) => {
                again(&steps, i);
                let first = steps[i].clone();
                steps[i].remeasured = true;
                let r = first.rate_per_s;
                // A voted step's tries are its first ones: a majority of
                // five (as `EXTENDED_AGREE`).
                match first.voted {
                    true => {
                        let seed = (0..first.tries)
                            .map(|k| {
                                let mut t = first.clone();
                                t.pass = k < first.tries_passed;
                                t.undecided = false;
                                t
                            })
                            .collect();
                        voted(seed, EXTENDED_AGREE, |_| measure(n, r))
                    }
                    false => voted(vec![first], 2, |_| measure(n, r)),
                }
            }
            Next::Done => return (steps, true),
        };
        next = take(&mut steps, s, 0.05);
    }
    (steps, false)
}

/// The tries of one rate, more taken until two agree: the step of the
/// side that won (its last try), with the count of tries.
fn voted(mut tries: Vec<Step>, need: usize, mut one: impl FnMut(usize) -> Step) -> Step {
    let verdict = |s: &Step| (!s.kept_up || !s.undecided).then_some(s.pass && s.kept_up);
    loop {
        let v: Vec<Option<bool>> = tries.iter().map(verdict).collect();
        let won = judge::agree(&v, need);
        if won.is_some() || tries.len() >= AGREEMENT_TRIES.max(2 * need - 1) {
            let mut s = match won {
                Some(w) => tries
                    .iter()
                    .rev()
                    .find(|s| verdict(s) == Some(w))
                    .unwrap()
                    .clone(),
                None => tries.last().unwrap().clone(),
            };
            s.pass = won == Some(true);
            s.undecided = won.is_none();
            s.tries = tries.len();
            s.tries_passed = v.iter().filter(|x| **x == Some(true)).count();
            s.remeasured = false;
            s.voted = true;
            return s;
        }
        let t = one(tries.len());
        tries.push(t);
    }
}

/// Runs the search's rule against a server that keeps up to `capacity`
/// and meets the objectives at the rates `good` says; `stalls(n, rate)`
/// says which tries the platform stalled in (the server completes 80%).
fn simulate_with(
    capacity: f64,
    good: impl Fn(f64) -> bool,
    max_steps: usize,
    mut stalls: impl FnMut(usize, f64) -> bool,
) -> (Vec<Step>, bool) {
    run_rule(
        max_steps,
        |n, rate| {
            let stalled = stalls(n, rate);
            let done = rate.min(capacity) * if stalled { 0.8 } else { 1.0 };
            let mut s = step(rate, good(rate) && done >= 0.95 * rate, done);
            s.stalled_seconds = usize::from(stalled);
            s
        },
        |_, _| {},
    )
}

/// A server that keeps up to `capacity` and meets the objectives up to
/// `good`.
fn simulate(capacity: f64, good: f64, max_steps: usize) -> (Vec<Step>, bool) {
    simulate_with(capacity, |r| r <= good, max_steps, |_, _| false)
}

#[test]
fn a_step_missed_in_a_stall_is_measured_again_and_does_not_count() {
    let (quiet, _) = simulate(2000.0, 1900.0, 40);
    let quiet = answer(&quiet);
    // The very first step stalls, and the first two at 1500/s.
    let (steps, done) = simulate_with(
        2000.0,
        |r| r <= 1900.0,
        40,
        |n, rate| n == 0 || (rate == 1500.0 && n < 6),
    );
    assert!(done, "{steps:#?}");
    assert_eq!(answer(&steps), quiet);
    assert!(steps.iter().filter(|s| s.measured_again).count() >= 1);
    assert!(
        steps
            .iter()
            .all(|s| !s.measured_again || s.missed_in_stall())
    );
    assert_eq!(saturation(&steps), Some(2000.0));
    // A miss with no stall counts at once.
    let (steps, _) = simulate(2000.0, 500.0, 40);
    assert!(steps.iter().all(|s| !s.measured_again));
}

#[test]
fn the_search_climbs_to_the_saturation_then_bisects_the_top_of_the_band() {
    let (steps, done) = simulate(2000.0, 1900.0, 24);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    let best = best.unwrap();
    assert!(confirmed);
    assert!((1800.0..=1900.0).contains(&best), "{best}");
    assert_eq!(saturation(&steps), Some(2000.0));
    // The answer is the highest step that passed.
    let highest = steps
        .iter()
        .filter(|s| s.pass)
        .map(|s| s.rate_per_s)
        .fold(0.0, f64::max);
    assert_eq!(best, highest);
}

#[test]
fn a_rate_at_the_saturation_is_never_the_answer() {
    // Objectives met right up to the capacity: 2000/s passes, but the
    // server has nothing to spare there.
    let (steps, done) = simulate(2000.0, 2000.0, 24);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    let best = best.unwrap();
    assert!(confirmed);
    assert!((1800.0..1900.0).contains(&best), "{best}");
}

/// Issue 45: latency worse at low rates (the server sleeps between
/// requests): the objective misses at 1k and 2k/s and holds from 4k to
/// 60k/s, capacity 100k/s. Halving after a miss walked down to nearly
/// nothing; the climb measures the range and answers the high band.
#[test]
fn issue_45_misses_at_low_rates_do_not_drive_the_answer_down() {
    let good = |r: f64| (4000.0..=60000.0).contains(&r);
    let (steps, done) = simulate_with(100_000.0, good, 24, |_, _| false);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    let best = best.unwrap();
    assert!(
        confirmed && (57_000.0..=60_000.0).contains(&best),
        "{best} {steps:#?}"
    );
    let (lo, hi) = band_of(&steps, best).unwrap();
    assert_eq!((lo, hi), (4000.0, best));
    // The edge phase's four rates under the saturation, and the
    // saturation measured again, cost five steps.
    assert!(
        steps.len() <= 18,
        "{} steps: {}",
        steps.len(),
        trace(&steps)
    );
}

/// One lucky pass above a failing band does not count: it is probed
/// just below, found alone, and the answer is the band under it.
#[test]
fn issue_45_one_lucky_pass_above_a_failing_band_does_not_count() {
    let good = |r: f64| r <= 8000.0 || r == 32_000.0;
    let (steps, done) = simulate_with(100_000.0, good, 30, |_, _| false);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    assert!(confirmed, "{steps:#?}");
    assert!((7600.0..=8000.0).contains(&best.unwrap()), "{best:?}");
    // The miss between the band and the lone pass was measured again
    // once (it alone kept them apart), and stood.
    let at_16k: Vec<&Step> = steps.iter().filter(|s| s.rate_per_s == 16_000.0).collect();
    assert_eq!(at_16k.len(), 2, "{steps:#?}");
    assert!(at_16k[0].remeasured && !at_16k[0].counts(), "{steps:#?}");
    assert!(at_16k[1].counts() && at_16k[1].tries == 2 && !at_16k[1].pass);
    // Nothing else under the band's bound was measured again.
    assert_eq!(remeasured_inside(&steps).len(), 0, "{}", trace(&steps));
}

/// A redis-server searched on this VM (depth 1024): p99 holds up to
/// about 1M/s, where the client runs out; 256k/s missed once in a noisy
/// moment, and 512k/s above it held alone. Without measuring that miss
/// again the answer was 130k/s (bisected below it) one time and 1M/s
/// the next. The edge phase now measures the rates under the saturation,
/// voted: 512k/s and the highest edge rate that holds make the band, and
/// the miss under it decides nothing (it is not measured again).
#[test]
fn issue_45_a_miss_below_rates_that_held_does_not_end_the_band() {
    let misses = std::cell::Cell::new(0);
    let good = |r: f64| {
        if r == 256_000.0 && misses.get() == 0 {
            misses.set(1);
            return false;
        }
        r <= 1_000_000.0
    };
    let (steps, done) = simulate_with(1_100_000.0, good, 30, |_, _| false);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    assert!(confirmed, "{steps:#?}");
    assert!(
        (950_000.0..=1_000_000.0).contains(&best.unwrap()),
        "{best:?} {steps:#?}"
    );
    assert_eq!(band_of(&steps, best.unwrap()).unwrap().0, 512_000.0);
    assert!(remeasured_inside(&steps).is_empty(), "{}", trace(&steps));
    assert!(steps.len() <= 16, "{} steps", steps.len());
}

/// Rates whose objective stays undecided (50k-70k/s here) bound the
/// bisection from above without ending the band: no rate the server kept
/// up with is measured twice, and the answer is the top of what held below them; one held
/// above an undecided rate extends the band through it.
#[test]
fn issue_45_an_undecided_rate_is_never_measured_again() {
    let run = |undecided: &dyn Fn(f64) -> bool, good: &dyn Fn(f64) -> bool| {
        let (steps, done) = run_rule(
            30,
            |_, rate| {
                let mut s = step(rate, good(rate), rate.min(200_000.0));
                s.undecided = s.kept_up && undecided(rate);
                s.pass = s.pass && !s.undecided && s.kept_up;
                s
            },
            // Only a decided step.
            |steps, i| assert!(!steps[i].undecided, "step {i} measured again: {steps:#?}"),
        );
        assert!(done, "no end: {steps:#?}");
        steps
    };
    let steps = run(&|r| (50_000.0..70_000.0).contains(&r), &|r| r < 50_000.0);
    let kept: Vec<&Step> = steps.iter().filter(|s| s.kept_up).collect();
    let mut rates: Vec<f64> = kept.iter().map(|s| s.rate_per_s).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    assert_eq!(rates.len(), kept.len(), "{}", trace(&steps));
    let (best, confirmed) = answer(&steps);
    assert!(
        confirmed && (46_000.0..50_000.0).contains(&best.unwrap()),
        "{best:?}"
    );
    // Undecided at 62k-66k/s only, held to 128k/s: the band runs through.
    let steps = run(&|r| (62_000.0..66_000.0).contains(&r), &|r| r <= 150_000.0);
    let (best, _) = answer(&steps);
    assert!(best.unwrap() > 128_000.0, "{best:?} {steps:#?}");
}

/// A lone pass with nothing held below is the answer, unconfirmed.
#[test]
fn a_lone_pass_is_unconfirmed() {
    let good = |r: f64| (15_000.0..=16_000.0).contains(&r);
    let (steps, done) = simulate_with(100_000.0, good, 30, |_, _| false);
    assert!(done, "{steps:#?}");
    let (best, confirmed) = answer(&steps);
    assert_eq!(best, Some(16_000.0), "{steps:#?}");
    assert!(!confirmed || band_of(&steps, 16_000.0).unwrap().0 >= 15_000.0);
}

#[test]
fn a_budget_too_small_is_said() {
    // A fast server (1M/s) from 1000/s: 24 steps are enough.
    assert!(simulate(1e6, 1e6, 24).1);
    // 6 steps do not: the search reports it unfinished.
    let (steps, done) = simulate(1e6, 1e6, 6);
    assert!(!done);
    assert!(steps.iter().all(|s| s.kept_up), "never saturated");
}

/// Which side ran out at the saturation, by the CPU of each.
#[test]
fn issue_45_the_answer_says_which_side_ran_out() {
    let at = |client: f64, server: Option<f64>| {
        let mut s = vec![step(1000.0, true, 1000.0), step(2000.0, false, 1500.0)];
        s[1].client_cpu_pct = Some(client);
        s[1].server_cpu_pct = server;
        limit(&s, None).unwrap()
    };
    assert!(at(40.0, Some(97.0)).starts_with("the server:"));
    assert!(at(95.0, Some(30.0)).starts_with("the client:"));
    assert!(at(95.0, Some(95.0)).starts_with("either side:"));
    assert!(at(40.0, Some(30.0)).starts_with("neither side"));
    assert!(at(80.0, Some(30.0)).starts_with("undecided:"));
    assert!(at(40.0, None).starts_with("not known:"));
    // Before the saturation, nothing is said.
    assert_eq!(limit(&[step(1000.0, true, 1000.0)], None), None);
    // Where the answer ends: the first rate above it that failed.
    let mut s = vec![
        step(1000.0, true, 1000.0),
        step(2000.0, false, 2000.0),
        step(4000.0, false, 3000.0),
    ];
    s[1].client_cpu_pct = Some(97.0);
    s[1].server_cpu_pct = Some(20.0);
    s[2].client_cpu_pct = Some(30.0);
    s[2].server_cpu_pct = Some(99.0);
    assert!(limit(&s, Some(1000.0)).unwrap().starts_with("the client:"));
    assert!(limit(&s, None).unwrap().starts_with("the server:"));
}

/// Steps at `rates` whose p99 (the one objective, `p99<1ms`) reads
/// `p99s`, all kept up with.
fn with_p99(rates: &[f64], p99s: &[f64]) -> Vec<Step> {
    rates
        .iter()
        .zip(p99s)
        .map(|(&r, &p)| {
            let mut s = step(r, p < 1e6, r);
            s.slos = vec![wirebench_core::result::SloOutcome {
                slo: "p99<1ms".into(),
                actual: p,
                pass: p < 1e6,
                windows: None,
            }];
            s
        })
        .collect()
}

#[test]
fn issue_35_latency_flat_with_the_rate_is_said() {
    let slos = vec![Slo::parse("p99<1ms").unwrap()];
    // Redis: p99 around 0.95 ms at every rate, passing or not by luck.
    let rates = [
        1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0, 1500.0,
    ];
    let p99s = [
        0.97e6, 0.93e6, 1.02e6, 0.95e6, 0.91e6, 0.96e6, 0.94e6, 1.01e6,
    ];
    let steps = with_p99(&rates, &p99s);
    let f = flat_latency(&slos, &steps).expect("flat");
    assert_eq!((f.from_rate_per_s, f.to_rate_per_s), (1000.0, 64000.0));
    assert!(f.rank_correlation < 0.5, "{f:?}");
    // Latency that climbs with the load is not flat.
    let climbing = [0.1e6, 0.12e6, 0.2e6, 0.3e6, 0.5e6, 0.8e6, 1.5e6, 0.11e6];
    assert!(flat_latency(&slos, &with_p99(&rates, &climbing)).is_none());
    // Too few steps, or too narrow a span of rates: not judged.
    assert!(flat_latency(&slos, &with_p99(&rates[..3], &p99s[..3])).is_none());
    let narrow = [1000.0, 1200.0, 1400.0, 1600.0, 1800.0];
    assert!(flat_latency(&slos, &with_p99(&narrow, &p99s[..5])).is_none());
    assert!((rank_correlation(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-9);
    assert!((rank_correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-9);
}

/// The two searches of a redis-server (depth 1024, the client near its
/// CPU's end) that answered 1,136,000/s and 1,648,000/s: p99 sat at
/// 0.65-0.72 ms, near the 0.8 ms pass line, over the top octave; the
/// answer says it is not sharp. A knee (p99 low at half the answer) is
/// sharp, and so is an objective that the steps clear by far.
#[test]
fn issue_45_an_answer_near_the_pass_line_over_its_top_octave_is_not_sharp() {
    let slos = vec![Slo::parse("p99<1ms").unwrap()];
    let with_ci = |rates: &[f64], p99s: &[f64]| -> Vec<Step> {
        let mut steps = with_p99(rates, p99s);
        for s in &mut steps {
            let v = s.slos[0].actual;
            s.intervals = vec![FigureInterval {
                estimate: v,
                low: v * 0.95,
                high: v * 1.05,
            }];
        }
        steps
    };
    let rates = [
        256_000.0,
        1_024_000.0,
        1_408_000.0,
        1_600_000.0,
        1_648_000.0,
    ];
    let flat = [0.599e6, 0.723e6, 0.721e6, 0.679e6, 0.655e6];
    let n = not_sharp(&slos, &with_ci(&rates, &flat), 1_648_000.0, 0.2).expect("not sharp");
    assert_eq!(
        (n.from_rate_per_s, n.to_rate_per_s),
        (1_024_000.0, 1_648_000.0)
    );
    assert_eq!((n.min, n.max), (0.655e6, 0.723e6));
    assert!((n.pass_line - 0.8e6).abs() < 1.0);
    // A knee: low at half the answer.
    let knee = [0.2e6, 0.3e6, 0.5e6, 0.65e6, 0.7e6];
    assert!(not_sharp(&slos, &with_ci(&rates, &knee), 1_648_000.0, 0.2).is_none());
    // Far below the line.
    let low = [0.1e6, 0.2e6, 0.2e6, 0.25e6, 0.3e6];
    assert!(not_sharp(&slos, &with_ci(&rates, &low), 1_648_000.0, 0.2).is_none());
    // One step in the top octave: not judged.
    assert!(not_sharp(&slos, &with_ci(&rates[..2], &flat[..2]), 1_024_000.0, 0.2).is_none());
    // A throughput objective is not judged.
    let tput = vec![Slo::parse("ops>=1000/s").unwrap()];
    assert!(not_sharp(&tput, &with_ci(&rates, &flat), 1_648_000.0, 0.2).is_none());
}

/// A step the server fell behind in, once, below rates that held, is
/// measured again like any miss before it may end the band.
#[test]
fn issue_45_falling_behind_once_below_rates_that_held_is_measured_again() {
    let dips = std::cell::Cell::new(0);
    let (done, ended) = run_rule(
        30,
        |_, rate| {
            // Capacity 1M/s, but 256k/s dips to 200k/s the first time.
            let mut completed = rate.min(1_000_000.0);
            if rate == 256_000.0 && dips.get() == 0 {
                dips.set(1);
                completed = 200_000.0;
            }
            step(
                rate,
                completed >= 0.95 * rate && rate <= 900_000.0,
                completed,
            )
        },
        |_, _| {},
    );
    assert!(ended, "no end: {done:#?}");
    let (best, confirmed) = answer(&done);
    // 256k/s measured again (the climb had stopped at its dip), and
    // the climb went on to the real capacity.
    assert!(done.iter().any(|s| s.rate_per_s > 256_000.0 && s.pass));
    assert!(
        confirmed && best.unwrap() >= 850_000.0,
        "{best:?} {done:#?}"
    );
    assert_eq!(remeasured_inside(&done).len(), 1, "{done:#?}");
}

/// Search 5 of the redis benchmark (2026-11-29): p99 near the pass line
/// from 256k/s up, 448k/s undecided above the band's top at 352k/s.
/// Bisecting on (400k, 424k, 412k/s, three tries each) measured noise
/// for 40 s; the search stops there instead. A sharp band, or a decided
/// miss above, is bisected as before.
#[test]
fn issue_45_a_blurred_answer_below_an_undecided_rate_is_not_bisected_further() {
    let forged = |near: bool, undecided: bool| {
        let mut steps: Vec<Step> = [1000.0, 4000.0, 64_000.0, 256_000.0, 352_000.0]
            .iter()
            .map(|&r| {
                let mut s = step(r, true, r);
                s.near_pass_line = near && r >= 256_000.0;
                s
            })
            .collect();
        let mut u = step(448_000.0, false, 448_000.0);
        u.undecided = undecided;
        steps.push(u);
        steps.push(step(1_024_000.0, false, 1_024_000.0));
        let mut sat = step(8_192_000.0, false, 4_000_000.0);
        sat.tries = 2;
        sat.voted = true;
        steps.push(sat);
        // The edge phase: every rate under the saturation missed, voted.
        for r in edge_rates(4_000_000.0, EDGE_STEP) {
            let mut e = step(r, false, r);
            e.tries = 2;
            e.voted = true;
            steps.push(e);
        }
        steps
    };
    assert!(matches!(next_rate(&forged(true, true), 0.05), Next::Done));
    assert!(matches!(next_rate(&forged(false, true), 0.05), Next::Try(r) if r == 400_000.0));
    assert!(matches!(next_rate(&forged(true, false), 0.05), Next::Try(r) if r == 400_000.0));
}

/// Redis at depth 1 (2026-11-29): the server completed 19,000/s in one
/// step, then fell behind at 17,500/s in a moment the VM slowed. A
/// step that fell behind at a rate the server has completed more than
/// is voted (it holds twice after) before it decides the answer.
#[test]
fn issue_45_falling_behind_below_what_the_server_completed_is_measured_again() {
    let dips = std::cell::Cell::new(0);
    let (done, ended) = run_rule(
        30,
        |_, rate| {
            let mut completed = rate.min(19_000.0);
            if (17_000.0..18_000.0).contains(&rate) && dips.get() == 0 {
                dips.set(1);
                completed = 0.9 * rate;
            }
            step(rate, completed >= 0.95 * rate, completed)
        },
        |_, _| {},
    );
    assert!(ended, "no end: {done:#?}");
    assert_eq!(
        dips.get(),
        1,
        "no rate in the dip's range was tried: {done:#?}"
    );
    let (best, confirmed) = answer(&done);
    assert!(confirmed && best.unwrap() >= 17_000.0, "{best:?} {done:#?}");
    // The step that fell behind was voted: it held twice after.
    let dipped = done
        .iter()
        .find(|s| (17_000.0..18_000.0).contains(&s.rate_per_s) && s.counts())
        .unwrap();
    assert!(dipped.pass && dipped.tries == 3, "{}", trace(&done));
}

/// A CI run here: redis at depth 1, `p99<50ms`: a rate missed once in a
/// moment of the VM, nothing above it held, and the search answered
/// 10.75k/s where a grid of `run --rate` held 15.2k/s twice. Under the
/// saturation, the edge phase's rates are voted: one that missed once and
/// then held twice holds. Below the edge, the miss that ends the band is
/// measured again once before it decides the answer.
#[test]
fn issue_45_the_miss_that_ends_the_band_is_measured_again_before_it_decides() {
    let missed = std::cell::Cell::new(false);
    let good = |r: f64| {
        if (14_400.0..14_600.0).contains(&r) && !missed.get() {
            missed.set(true);
            return false;
        }
        r <= 15_000.0
    };
    let (steps, done) = simulate_with(18_000.0, good, 40, |_, _| false);
    assert!(done, "{steps:#?}");
    assert!(
        missed.get(),
        "no rate in the miss's range was tried: {steps:#?}"
    );
    let (best, confirmed) = answer(&steps);
    assert!(
        confirmed && (14_000.0..=15_000.0).contains(&best.unwrap()),
        "{best:?} {steps:#?}"
    );
    // The rate that missed once was voted and held; the edge rate above
    // it that ends the band (above 15k/s) missed its vote, was measured
    // again (a majority of five) and stood.
    let bound = bound_above(&steps, best.unwrap()).unwrap();
    let at_bound: Vec<&Step> = steps.iter().filter(|s| s.rate_per_s == bound).collect();
    assert!(
        at_bound.iter().any(|s| s.counts() && s.voted && !s.pass)
            && at_bound.iter().any(|s| s.remeasured && s.voted),
        "{}",
        trace(&steps)
    );
    // A server whose objective truly ends at 12k/s: measured twice, the
    // miss stands and the answer is below it.
    let (steps, _) = simulate_with(18_000.0, |r| r <= 12_000.0, 40, |_, _| false);
    let best = answer(&steps).0.unwrap();
    assert!((11_400.0..=12_000.0).contains(&best), "{best} {steps:#?}");
}

/// A miss measured again is decided by two of its tries, each judged
/// alone: a try that held after the miss ties, a third decides, and a
/// try left undecided alone is no vote.
#[test]
fn issue_45_a_miss_measured_again_is_decided_by_two_tries_that_agree() {
    let (held, missed, unsure) = (Some(true), Some(false), None);
    assert_eq!(judge::agree(&[missed], 2), None);
    assert_eq!(judge::agree(&[missed, held], 2), None);
    assert_eq!(judge::agree(&[missed, held, held], 2), Some(true));
    assert_eq!(judge::agree(&[missed, held, missed], 2), Some(false));
    assert_eq!(judge::agree(&[missed, missed], 2), Some(false));
    assert_eq!(judge::agree(&[missed, unsure, held], 2), None);
}

/// Steps as one line, for a failed assertion: rate, + held or - not,
/// B behind, ? undecided, (r) measured again, x tries.
fn trace(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| {
            format!(
                "{:.0}{}{}{}{}x{}",
                s.rate_per_s,
                if s.pass { "+" } else { "-" },
                if s.kept_up { "" } else { "B" },
                if s.undecided { "?" } else { "" },
                if s.counts() { "" } else { "(r)" },
                s.tries
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Redis at depth 1, `p99<50ms` (2026-11-29): the climb's one try at
/// 16,000/s, about 90% of the capacity, held in some searches and missed
/// in others, and the bisection then explored only the side it landed
/// on: 15,250 against 17,500/s, with saturations 5% apart. The edge
/// phase measures that rate again, voted, so either first try gives the
/// same answer.
#[test]
fn issue_45_the_climbs_one_try_near_the_capacity_does_not_decide_the_answer() {
    let answer_when = |first_holds: bool| {
        let first = std::cell::Cell::new(true);
        let (steps, done) = simulate_with(
            18_000.0,
            |r| {
                if r == 16_000.0 && first.replace(false) {
                    return first_holds;
                }
                r <= 16_500.0
            },
            30,
            |_, _| false,
        );
        assert!(done, "{}", trace(&steps));
        let (best, confirmed) = answer(&steps);
        assert!(confirmed, "{}", trace(&steps));
        (best.unwrap(), trace(&steps))
    };
    let (held, missed) = (answer_when(true), answer_when(false));
    assert_eq!(held.0, missed.0, "{}\n{}", held.1, missed.1);
    assert!((15_500.0..=16_500.0).contains(&held.0), "{}", held.1);
}

/// Ground truth: a server of capacity 18,000/s whose objective truly
/// holds up to 16,200/s (90%), on a machine where a try misses by a
/// moment's stall 30% of the time under that and holds by luck 30% of
/// the time above it, up to the spare capacity. Over 40 searches (a
/// fixed pseudo-random sequence), the answers lie on at most three edge
/// rates, nine in ten within one spacing of the truth, and none above
/// what the spare capacity allows.
#[test]
fn issue_45_answers_over_a_noisy_edge_stay_within_one_spacing() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut coin = move |p: f64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 10_000) as f64 / 10_000.0 < p
    };
    let mut answers = Vec::new();
    for _ in 0..40 {
        let (steps, done) = run_rule(
            30,
            |_, rate| {
                let held = if rate <= 16_200.0 {
                    rate < 0.75 * 18_000.0 || !coin(0.3)
                } else {
                    rate <= 0.95 * 18_000.0 && coin(0.3)
                };
                let done = rate.min(18_000.0);
                step(rate, held && done >= 0.95 * rate, done)
            },
            |_, _| {},
        );
        assert!(done, "{}", trace(&steps));
        answers.push((answer(&steps).0.unwrap(), trace(&steps)));
    }
    let mut rates: Vec<f64> = answers.iter().map(|a| a.0).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let all: Vec<&String> = answers.iter().map(|a| &a.1).collect();
    assert!(rates.len() <= 3, "{rates:?} {all:#?}");
    assert!(rates.iter().all(|r| *r < 0.95 * 18_000.0), "{rates:?}");
    let near = answers
        .iter()
        .filter(|a| (a.0 / 16_200.0 - 1.0).abs() <= EDGE_STEP + 0.01)
        .count();
    assert!(near >= 36, "{near} of 40 near 16,200/s: {rates:?} {all:#?}");
}

/// A tight objective that the climb missed (or left undecided) at its two
/// highest rates under the saturation: the answer lies lower, so the edge under the
/// saturation is not measured (four voted rates that would all miss).
#[test]
fn issue_45_the_edge_is_skipped_where_the_climb_missed_twice_under_it() {
    let (steps, done) = simulate(100_000.0, 5000.0, 24);
    assert!(done, "{}", trace(&steps));
    let best = answer(&steps).0.unwrap();
    assert!((4750.0..=5000.0).contains(&best), "{}", trace(&steps));
    let edge = |steps: &[Step]| {
        steps
            .iter()
            .any(|s| s.kept_up && s.rate_per_s > 0.8 * 100_000.0)
    };
    assert!(
        !edge(&steps),
        "an edge rate was measured: {}",
        trace(&steps)
    );
    // The same where the climb's top rates stayed undecided, not missed.
    let (steps, done) = run_rule(
        24,
        |_, rate| {
            let mut s = step(rate, rate <= 5000.0, rate.min(100_000.0));
            s.undecided = s.kept_up && (30_000.0..70_000.0).contains(&rate);
            s
        },
        |_, _| {},
    );
    assert!(done && !edge(&steps), "{}", trace(&steps));
    // Missed once at the top, held below it: the edge is measured.
    let (steps, _) = simulate(100_000.0, 90_000.0, 24);
    assert!(edge(&steps), "{}", trace(&steps));
}

/// The edge rate that missed just above the answer is measured again once,
/// its vote extended to a majority of five: a spell of the VM that failed
/// two tries there (and would set the answer a spacing lower) is outvoted
/// by three that hold after it; a rate that truly misses stands.
#[test]
fn issue_45_the_edge_miss_above_the_answer_is_outvoted_by_three_of_five() {
    // Capacity 18,000/s, the objective holds to 16,500/s; the edge's top
    // (16,920/s) misses, and the first two tries at 16,074/s fall in a
    // spell that fails them.
    let spell = std::cell::Cell::new(0);
    let (steps, done) = run_rule(
        30,
        |_, rate| {
            let in_spell = (16_000.0..16_100.0).contains(&rate) && spell.get() < 2;
            if (16_000.0..16_100.0).contains(&rate) {
                spell.set(spell.get() + 1);
            }
            step(rate, rate <= 16_500.0 && !in_spell, rate.min(18_000.0))
        },
        |_, _| {},
    );
    assert!(done, "{}", trace(&steps));
    let best = answer(&steps).0.unwrap();
    assert!((16_000.0..16_100.0).contains(&best), "{}", trace(&steps));
    let there: Vec<&Step> = steps.iter().filter(|s| s.rate_per_s == best).collect();
    assert!(
        there.iter().any(|s| s.counts() && s.tries == 5),
        "{}",
        trace(&steps)
    );
    // The top's miss, measured again, stood: at most one extension each.
    let top = steps
        .iter()
        .filter(|s| s.rate_per_s > 16_500.0 && s.kept_up);
    assert!(top.clone().all(|s| !s.pass), "{}", trace(&steps));
    assert!(
        top.filter(|s| s.remeasured).count() <= 1,
        "{}",
        trace(&steps)
    );
}
