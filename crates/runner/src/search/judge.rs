//! How a search judges a rate: its tries' seconds pooled (stalled ones
//! left out), each objective's interval, and what the steps say of
//! latency (flat, not sharp).

use super::*;

pub(super) fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

pub(super) fn mean_opt(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let all: Vec<f64> = v.collect::<Option<Vec<f64>>>()?;
    (!all.is_empty()).then(|| mean(all.into_iter()))
}

/// What the tries of one rate say, pooled.
pub(super) struct Judged {
    /// Every objective met with the headroom over its whole interval, and
    /// the server kept up.
    pub(super) pass: bool,
    /// Some objective's interval straddles it (and none fails outright).
    pub(super) undecided: bool,
    pub(super) kept_up: bool,
    pub(super) completed_per_s: f64,
    pub(super) seconds: f64,
    /// Stalled seconds the figures used (every second stalled), and those
    /// left out.
    pub(super) stalled_used: usize,
    pub(super) stalled_left_out: usize,
    /// Each objective's figure (`estimate`; NaN where none) and interval.
    pub(super) intervals: Vec<FigureInterval>,
}

/// The measured seconds of every try, pooled, less those the hiccup meter
/// saw the platform stall in (the client's machine, not the server: a VM
/// the host throttles for up to ~300 ms), while two or more are left.
/// Also: how many stalled seconds are in what it returns, and how many
/// were left out.
pub(super) fn pooled_seconds(
    tries: &[RunResult],
) -> (Vec<&wirebench_core::result::Interval>, usize, usize) {
    let all: Vec<&wirebench_core::result::Interval> = tries
        .iter()
        .flat_map(|r| {
            r.intervals
                .iter()
                .filter(|iv| iv.phase == wirebench_core::result::Phase::Measure)
        })
        .collect();
    let quiet: Vec<&wirebench_core::result::Interval> =
        all.iter().copied().filter(|iv| !iv.stalled).collect();
    let stalled = all.len() - quiet.len();
    // A warm-up that stalled leaves its backlog in the measured seconds:
    // it cannot be left out.
    let warmup: usize = tries
        .iter()
        .flat_map(|r| {
            r.intervals
                .iter()
                .filter(|iv| iv.phase != wirebench_core::result::Phase::Measure && iv.stalled)
        })
        .count();
    if quiet.len() >= 2 {
        (quiet, warmup, stalled)
    } else {
        (all, stalled + warmup, 0)
    }
}

/// The verdict of the tries of one rate: each objective over their pooled
/// seconds, with its interval; the server kept up when they completed 95%
/// of the rate over their seconds.
pub(super) fn judge(slos: &[Slo], tries: &[RunResult], rate: f64, headroom: f64) -> Judged {
    let (seconds, stalled_used, stalled_left_out) = pooled_seconds(tries);
    let secs: f64 = tries
        .iter()
        .map(|r| r.summary.measured_ns as f64 / 1e9)
        .sum();
    let ops: u64 = tries.iter().map(|r| r.summary.ops).sum();
    let completed_per_s = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
    let kept_up = completed_per_s >= 0.95 * rate;
    let mut intervals = Vec::new();
    let mut decided = Vec::new();
    for (i, slo) in slos.iter().enumerate() {
        match slo.interval(&seconds) {
            Some(ci) => {
                decided.push(slo.decide(&ci, headroom));
                intervals.push(ci);
            }
            None => {
                // No seconds to pool (an exec run's own figures): the
                // run's figure, as it was judged.
                let v = tries
                    .last()
                    .and_then(|r| r.slos.get(i))
                    .map_or(f64::NAN, |o| o.actual);
                decided.push(Some(slo.holds(v, headroom)));
                intervals.push(FigureInterval {
                    estimate: v,
                    low: v,
                    high: v,
                });
            }
        }
    }
    let fails = decided.contains(&Some(false));
    let undecided = !fails && decided.contains(&None);
    Judged {
        pass: kept_up && !fails && !undecided,
        undecided,
        kept_up,
        completed_per_s,
        seconds: secs,
        stalled_used,
        stalled_left_out,
        intervals,
    }
}

/// Which side `need` of the verdicts agree on (true: held), None while
/// neither has that many. A verdict is None where the try alone was
/// undecided.
pub(super) fn agree(verdicts: &[Option<bool>], need: usize) -> Option<bool> {
    let count = |side: bool| verdicts.iter().filter(|v| **v == Some(side)).count();
    if count(true) >= need {
        Some(true)
    } else if count(false) >= need {
        Some(false)
    } else {
        None
    }
}

/// The verdict of a decided miss measured again: each try judged alone
/// (the miss one of them), and two that agree decide ([`agree`]); the
/// figures are those of the side that won, pooled. None while neither
/// side has two and tries are left ([`AGREEMENT_TRIES`] in all);
/// undecided after them.
///
/// Pooling the new try's seconds with the miss's kept the miss's bad
/// moment in the figures: redis at depth 1 missed 16,000/s at p99 214 ms,
/// held it at 2.7 ms measured again, and the pooled step still missed, so
/// the search answered 15,250/s where the searches before and after it
/// answered 16,000-17,500/s.
///
/// `need` is 2 ([`AGREEMENT_TRIES`] at most), or [`EXTENDED_AGREE`] for a
/// voted step measured again: a majority of five.
pub(super) fn vote(
    slos: &[Slo],
    tries: &[RunResult],
    rate: f64,
    headroom: f64,
    need: usize,
) -> Option<Judged> {
    let verdicts: Vec<Option<bool>> = tries
        .iter()
        .map(|t| alone(slos, t, rate, headroom))
        .collect();
    match agree(&verdicts, need) {
        Some(won) => {
            let side: Vec<RunResult> = tries
                .iter()
                .zip(&verdicts)
                .filter(|(_, v)| **v == Some(won))
                .map(|(t, _)| t.clone())
                .collect();
            let mut j = judge(slos, &side, rate, headroom);
            j.pass = won;
            j.undecided = false;
            Some(j)
        }
        None if tries.len() >= AGREEMENT_TRIES.max(2 * need - 1) => {
            let mut j = judge(slos, tries, rate, headroom);
            j.pass = false;
            j.undecided = true;
            Some(j)
        }
        None => None,
    }
}

/// One try's vote: it held (true), missed or fell behind (false), or
/// its interval straddled an objective while it kept up (None).
pub(super) fn alone(slos: &[Slo], t: &RunResult, rate: f64, headroom: f64) -> Option<bool> {
    let j = judge(slos, std::slice::from_ref(t), rate, headroom);
    match (j.kept_up, j.pass, j.undecided) {
        (false, _, _) => Some(false),
        (true, true, _) => Some(true),
        (true, false, true) => None,
        (true, false, false) => Some(false),
    }
}

/// Whether one try alone met every objective (its own figures) and kept up.
pub(super) fn holds_alone(slos: &[Slo], r: &RunResult, rate: f64, headroom: f64) -> bool {
    r.summary.ops_per_s >= 0.95 * rate
        && slos
            .iter()
            .zip(&r.slos)
            .all(|(slo, o)| slo.holds(o.actual, headroom))
}

/// The objectives' outcomes over the pooled tries.
pub(super) fn pooled_outcomes(
    slos: &[Slo],
    tries: &[RunResult],
    intervals: &[FigureInterval],
) -> Vec<wirebench_core::result::SloOutcome> {
    slos.iter()
        .zip(intervals.iter().map(|ci| ci.estimate))
        .enumerate()
        .map(|(i, (slo, v))| wirebench_core::result::SloOutcome {
            slo: slo.text.clone(),
            actual: v,
            pass: slo.holds(v, 0.0),
            windows: tries
                .last()
                .and_then(|r| r.slos.get(i))
                .and_then(|o| o.windows.clone()),
        })
        .collect()
}

/// One step's run at `rate`: on the session here, or coordinated over the
/// agents; kept under the search's directory.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    steps_by: &mut Stepper,
    spec: &wirebench_core::spec::RunSpec,
    placement: &wirebench_core::result::Placement,
    recorder: &Recorder,
    events: &mut dyn SearchEvents,
    rate: f64,
    label: &str,
) -> Result<RunResult, RunError> {
    match steps_by {
        Stepper::Here(session) => {
            let mut r = session.measure(spec, placement, events);
            recorder.save(&mut r, label, store::now_rfc3339(), events)?;
            Ok(r)
        }
        Stepper::Agents(a) => {
            a.req.rate = Some(wirebench_core::units::Rate(rate));
            let report = crate::agent::coordinator::run(
                &a.req,
                &a.opts,
                &a.topo,
                a.command_line.clone(),
                a.cancel.clone(),
                &mut StepEvents(events),
            )?;
            match report.runs.into_iter().last() {
                Some((r, _)) => Ok(r),
                None => Err(RunError::Failed(format!("step at {rate:.0}/s: no run"))),
            }
        }
    }
}

/// Spearman's rank correlation of two series (no ties expected; ties
/// take the mean rank).
pub(super) fn rank_correlation(x: &[f64], y: &[f64]) -> f64 {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            for k in i..=j {
                r[idx[k]] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        r
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let cov: f64 = rx
        .iter()
        .zip(&ry)
        .map(|(a, b)| (a - mean) * (b - mean))
        .sum();
    let var = |r: &[f64]| r.iter().map(|a| (a - mean).powi(2)).sum::<f64>();
    let d = (var(&rx) * var(&ry)).sqrt();
    if d == 0.0 { 0.0 } else { cov / d }
}

/// The first latency objective whose figure, over the steps the server
/// kept up with (at least 4, over at least 8x in rate), does not rise
/// with the rate: a rank correlation under 0.5 and its highest value
/// within 1.5x of its lowest.
pub(super) fn flat_latency(slos: &[Slo], steps: &[Step]) -> Option<FlatLatency> {
    let kept: Vec<&Step> = counted(steps).filter(|s| s.kept_up).collect();
    let (lo, hi) = kept.iter().fold((f64::MAX, 0.0f64), |(a, b), s| {
        (a.min(s.rate_per_s), b.max(s.rate_per_s))
    });
    if kept.len() < 4 || hi < 8.0 * lo {
        return None;
    }
    slos.iter().enumerate().find_map(|(i, slo)| {
        if !matches!(slo.metric, Metric::Percentile(_) | Metric::MeanLatency) {
            return None;
        }
        let (rates, values): (Vec<f64>, Vec<f64>) = kept
            .iter()
            .filter_map(|s| Some((s.rate_per_s, s.slos.get(i)?.actual)))
            .filter(|(_, v)| v.is_finite())
            .unzip();
        if rates.len() < 4 {
            return None;
        }
        let rho = rank_correlation(&rates, &values);
        let (min, max) = values
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        (rho < 0.5 && max <= 1.5 * min).then(|| FlatLatency {
            slo: slo.text.clone(),
            from_rate_per_s: lo,
            to_rate_per_s: hi,
            min,
            max,
            rank_correlation: rho,
        })
    })
}

/// Whether every objective a figure must stay under (a latency) read at
/// least [`NEAR_LIMIT`] of its pass line (false when there is none).
pub(super) fn near_pass_line(slos: &[Slo], intervals: &[FigureInterval], headroom: f64) -> bool {
    let mut under = slos
        .iter()
        .zip(intervals)
        .filter(|(slo, _)| is_ceiling(slo))
        .peekable();
    under.peek().is_some()
        && under.all(|(slo, ci)| ci.estimate >= NEAR_LIMIT * slo.threshold * (1.0 - headroom))
}

/// The steps the server kept up with from half `best` up to it, two or
/// more, all near the pass line: the objective barely tells them apart,
/// so closing in on `best` more finely measures the machine's noise.
pub(super) fn blurred(steps: &[Step], best: f64) -> bool {
    let near: Vec<&Step> = top_octave(steps, best).collect();
    near.len() >= 2 && near.iter().all(|s| s.near_pass_line)
}

/// An objective a figure must stay under (a latency), not over.
pub(super) fn is_ceiling(slo: &Slo) -> bool {
    matches!(
        slo.cmp,
        wirebench_core::slo::Cmp::Lt | wirebench_core::slo::Cmp::Le
    )
}

/// The steps that count and kept up, from half `best` up to it: where
/// the answer's sharpness is judged.
pub(super) fn top_octave(steps: &[Step], best: f64) -> impl Iterator<Item = &Step> {
    counted(steps).filter(move |s| s.kept_up && s.rate_per_s >= best / 2.0 && s.rate_per_s <= best)
}

/// Whether the answer `best` is sharp: for each objective a figure must
/// stay under (a latency), the steps the server kept up with from half the
/// answer up to it (two or more); when every one's figure is at least
/// [`NEAR_LIMIT`] of the pass line, the objective barely tells the rates
/// apart there, and the answer moves with the machine's noise.
pub(super) fn not_sharp(
    slos: &[Slo],
    steps: &[Step],
    best: f64,
    headroom: f64,
) -> Option<NotSharp> {
    slos.iter().enumerate().find_map(|(i, slo)| {
        if !is_ceiling(slo) {
            return None;
        }
        let pass_line = slo.threshold * (1.0 - headroom);
        let near: Vec<(f64, f64)> = top_octave(steps, best)
            .filter_map(|s| Some((s.rate_per_s, s.intervals.get(i)?.estimate)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        if near.len() < 2 || near.iter().any(|&(_, v)| v < NEAR_LIMIT * pass_line) {
            return None;
        }
        let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn(&(f64, f64)) -> f64| {
            near.iter().map(pick).fold(init, f)
        };
        Some(NotSharp {
            slo: slo.text.clone(),
            from_rate_per_s: fold(f64::min, f64::MAX, |x| x.0),
            to_rate_per_s: fold(f64::max, 0.0, |x| x.0),
            min: fold(f64::min, f64::MAX, |x| x.1),
            max: fold(f64::max, 0.0, |x| x.1),
            pass_line,
        })
    })
}
