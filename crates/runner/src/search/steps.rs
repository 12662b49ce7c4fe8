//! Which rate a search measures next, and what its steps answer: the top
//! of the highest band that holds, a miss to measure again, the limit.

use super::*;

/// What the search does next.
#[derive(Debug, PartialEq)]
pub(super) enum Next {
    Try(f64),
    /// The step of this index again: its try and the new ones vote, each
    /// judged alone (`judge::vote`).
    Again(usize),
    /// A new rate whose tries vote from the first ([`edge`]).
    Vote(f64),
    Done,
}

/// How many rates the edge phase measures under the saturation, and
/// how far each is under the one above (the search's precision where it
/// is coarser): 94% of the saturation down to 81%.
pub(super) const EDGE_RATES: usize = 4;
pub(super) const EDGE_STEP: f64 = 0.05;

/// The highest edge rate, a fraction of the saturation: just under what
/// the spare capacity lets be the answer.
pub(super) const EDGE_TOP: f64 = 1.0 - SPARE_CAPACITY - 0.01;

/// The rates of the edge phase for the saturation `sat`: from
/// [`EDGE_TOP`] of it down, [`EDGE_RATES`] of them, each `step` under the
/// one above (as the bisection's precision is: a fraction of the higher).
pub(super) fn edge_rates(sat: f64, step: f64) -> Vec<f64> {
    std::iter::successors(Some(sat * EDGE_TOP), |r| Some(r * (1.0 - step)))
        .take(EDGE_RATES)
        .filter(|r| *r >= 1.0)
        .collect()
}

/// The edge phase, once the climb found the saturation: what it measures
/// next, None once it is over (or the answer needs a finer bisection than
/// its spacing).
///
/// Where an objective fails as the server fills, the answer lies within
/// 20% under the saturation, and there a 3 s step holds or misses by
/// whether the VM stalled in it. Bisected from whichever side the climb's
/// one try at a rate happened to land on, two searches of one redis
/// answered 15,250 and 17,500/s with saturations 5% apart. So the phase
/// measures fixed fractions of the saturation, from the top down, each
/// decided by two tries that agree ([`judge::vote`]; a step the climb
/// measured within half a spacing of one is measured again, its tries
/// voted), until the highest band that holds has its top at the rate just
/// measured. The edge rate just above that missed is measured again once,
/// its vote extended to three of five (`EXTENDED_AGREE`): with other work
/// on redis's CPU, one search's top two edge rates missed their votes and
/// it answered 9,680/s, where three before it answered 11,376-11,551/s.
///
/// The saturation is first measured again, its tries voted: one dip of
/// the VM in the climb's step would otherwise set every rate low (and a
/// try that keeps up there sends the climb on). Where the climb's two
/// highest rates under it both missed (or stayed undecided), the edge is
/// skipped.
pub(super) fn edge(steps: &[Step], precision: f64) -> Option<Next> {
    let counted: Vec<(usize, &Step)> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.counts())
        .collect();
    let sat = saturation(steps)?;
    let setter = counted
        .iter()
        .filter(|(_, s)| !s.kept_up)
        .max_by(|a, b| a.1.completed_per_s.total_cmp(&b.1.completed_per_s));
    if let Some(&(i, s)) = setter
        && !s.voted
    {
        return Some(Next::Again(i));
    }
    // The climb's two highest rates the server kept up with both missed
    // or stayed undecided: the answer lies lower, and the edge is not
    // measured (a tight objective: `p99<1ms` against `serve --wake` here
    // stayed undecided at 51.2k/s and missed at 102.4k/s, and four voted
    // edge rates from 163k/s down all missed, 30 s).
    let climbed = steps.iter().position(|s| s.counts() && !s.kept_up)?;
    let mut kept: Vec<&Step> = steps[..climbed]
        .iter()
        .filter(|s| s.counts() && s.kept_up)
        .collect();
    kept.sort_by(|a, b| b.rate_per_s.total_cmp(&a.rate_per_s));
    if kept.len() >= 2 && !kept[0].pass && !kept[1].pass {
        return None;
    }
    let step = precision.max(EDGE_STEP);
    let near = step / 2.0 * sat;
    let mut above: Option<usize> = None;
    for rate in edge_rates(sat, step) {
        let at = counted
            .iter()
            .filter(|(_, s)| (s.rate_per_s - rate).abs() <= near)
            .min_by(|a, b| {
                (a.1.rate_per_s - rate)
                    .abs()
                    .total_cmp(&(b.1.rate_per_s - rate).abs())
            });
        match at {
            None => return Some(Next::Vote(rate)),
            Some(&(i, s)) if !s.voted => return Some(Next::Again(i)),
            Some(_) => {}
        }
        let (best, confirmed) = answer(steps);
        if confirmed && best.is_some_and(|b| b >= rate - near) {
            // The edge rate just above that missed: its vote is extended
            // once (a majority of five), so that a spell of the VM that
            // failed it does not set the answer a spacing lower.
            if let Some(i) = above.filter(|&i| !extended(steps, steps[i].rate_per_s)) {
                return Some(Next::Again(i));
            }
            // A finer precision than the spacing is bisected from here.
            return (precision >= EDGE_STEP).then_some(Next::Done);
        }
        above = at.map(|&(i, _)| i).filter(|&i| !steps[i].pass);
    }
    None
}

/// Whether a voted step at `rate` was measured again (its vote extended).
fn extended(steps: &[Step], rate: f64) -> bool {
    steps
        .iter()
        .any(|s| s.remeasured && s.voted && s.rate_per_s == rate)
}

/// Keeps a measured step and says what to measure next: the same rate
/// again if it missed while the platform stalled and its stalled seconds
/// could not be left out (every one of them stalled: at most
/// [`STALL_RETRIES`] times in a row; the step is kept but does not count),
/// else what the steps that count say.
pub(super) fn take(steps: &mut Vec<Step>, mut step: Step, precision: f64) -> Next {
    let tries = steps
        .iter()
        .rev()
        .take_while(|s| s.measured_again && s.rate_per_s == step.rate_per_s)
        .count();
    step.measured_again = step.missed_in_stall() && tries < STALL_RETRIES;
    let again = step.measured_again.then_some(step.rate_per_s);
    steps.push(step);
    match again {
        Some(rate) => Next::Try(rate),
        None => next_rate(steps, precision),
    }
}

/// The steps that count: not those measured again for a stall.
pub(super) fn counted(steps: &[Step]) -> impl Iterator<Item = &Step> {
    steps.iter().filter(|s| s.counts())
}

/// A decided miss measured once, below rates that held, without which the
/// answer would be higher (it splits what would be one band, or leaves a
/// pass above it alone): its index. Measured again before it may end a
/// band: on a noisy machine one moment fails a step now and then, and
/// where latency barely moves with the rate (a client near its CPU's
/// end) that moment decided the whole answer. A step the server fell
/// behind in is one too (a VM's capacity dips for a moment: redis at depth
/// 1 fell behind at 17,500/s and kept up at 19,000/s a minute later).
/// Measured again once: a miss that stays decided stands.
///
/// Also measured again: a step the server fell behind in at a rate it
/// completed more than in another step (under the saturation by the spare
/// capacity): the server can take that rate, so the step saw a dip of the
/// machine, and bisecting below it would answer the dip.
pub(super) fn suspect_miss(steps: &[Step]) -> Option<usize> {
    let (now, confirmed) = answer(steps);
    let raised = |a: Option<f64>, c: bool| c && (!confirmed || a > now);
    let sat = saturation(steps);
    let dipped =
        |s: &Step| !s.kept_up && sat.is_some_and(|sat| s.rate_per_s < (1.0 - SPARE_CAPACITY) * sat);
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.counts() && !s.undecided && !s.pass && s.tries == 1)
        .filter(|&(i, s)| {
            if dipped(s) {
                return true;
            }
            let mut without = steps.to_vec();
            without[i].remeasured = true;
            let (a, c) = answer(&without);
            raised(a, c)
        })
        .max_by(|a, b| a.1.rate_per_s.total_cmp(&b.1.rate_per_s))
        .map(|(i, _)| i)
}

/// The most a step the server fell behind in completed: None until one
/// did.
pub(super) fn saturation(steps: &[Step]) -> Option<f64> {
    counted(steps)
        .filter(|s| !s.kept_up)
        .map(|s| s.completed_per_s)
        .max_by(f64::total_cmp)
}

/// The decided steps that count in order of rate (a rate measured twice:
/// in the order measured), each with whether it held. An undecided step
/// is left out: it says nothing, so it neither ends a band nor joins one.
pub(super) fn by_rate(steps: &[Step]) -> Vec<(f64, bool)> {
    let sat = saturation(steps);
    let mut v: Vec<(f64, bool)> = counted(steps)
        .filter(|s| !s.undecided)
        .map(|s| (s.rate_per_s, s.holds(sat)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The index (in [`by_rate`]) of the top of the highest band of at least
/// two consecutive rates that held, else of the highest rate that held
/// alone (and false).
pub(super) fn top_of_band(v: &[(f64, bool)]) -> Option<(usize, bool)> {
    let band = (1..v.len()).rev().find(|&i| v[i].1 && v[i - 1].1);
    match band {
        Some(i) => Some((i, true)),
        None => v.iter().rposition(|x| x.1).map(|i| (i, false)),
    }
}

/// The answer: the top of the highest band that held, and whether the
/// band has two rates or more (a lone pass is not confirmed).
pub(super) fn answer(steps: &[Step]) -> (Option<f64>, bool) {
    let v = by_rate(steps);
    match top_of_band(&v) {
        Some((i, band)) => (Some(v[i].0), band),
        None => (None, false),
    }
}

/// The band whose top is `best`: its lowest and highest rate.
pub(super) fn band_of(steps: &[Step], best: f64) -> Option<(f64, f64)> {
    let v = by_rate(steps);
    let top = v.iter().rposition(|x| x.0 == best && x.1)?;
    let mut lo = top;
    while lo > 0 && v[lo - 1].1 {
        lo -= 1;
    }
    Some((v[lo].0, v[top].0))
}

/// The lowest rate tried above `rate` that did not hold (failed, or stayed
/// undecided): what bounds the answer from above.
pub(super) fn bound_above(steps: &[Step], rate: f64) -> Option<f64> {
    let sat = saturation(steps);
    counted(steps)
        .filter(|s| s.rate_per_s > rate && (s.undecided || !s.holds(sat)))
        .map(|s| s.rate_per_s)
        .min_by(f64::total_cmp)
}

/// The step that counts at `rate`, when it missed an objective once and
/// for certain while the server kept up (not undecided, not behind, one
/// try): a miss the machine's moment may have made.
pub(super) fn once_missed(steps: &[Step], rate: f64) -> Option<usize> {
    steps.iter().position(|s| {
        s.counts() && s.rate_per_s == rate && !s.pass && !s.undecided && s.kept_up && s.tries == 1
    })
}

/// Whether the step that counts at `rate` stayed undecided.
pub(super) fn undecided_at(steps: &[Step], rate: f64) -> bool {
    counted(steps).any(|s| s.rate_per_s == rate && s.undecided)
}

/// The next rate from the steps so far.
pub(super) fn next_rate(steps: &[Step], precision: f64) -> Next {
    let v = by_rate(steps);
    // The climb: higher until the server falls behind, whatever the
    // objectives said (latency need not rise with the rate).
    if saturation(steps).is_none() {
        let last = counted(steps).last().expect("a step was measured");
        let growth = if last.pass { FAST_GROWTH } else { GROWTH };
        let highest = counted(steps).map(|s| s.rate_per_s).fold(0.0, f64::max);
        return Next::Try(highest * growth);
    }
    if let Some(next) = edge(steps, precision) {
        return next;
    }
    if let Some(i) = suspect_miss(steps) {
        return Next::Again(i);
    }
    let close = |lo: f64, hi: f64| hi / lo - 1.0 <= precision;
    // Noise, not a boundary: a blurred top under a rate only undecided.
    let noise = |top: f64, above: f64| undecided_at(steps, above) && blurred(steps, top);
    match top_of_band(&v) {
        // Between the band's top and what bounds it above (an undecided
        // rate too: bisected below it, never measured again).
        // Not where the band's top is blurred and what bounds it is only
        // undecided: there, a finer answer would be the machine's noise.
        Some((i, true)) => match bound_above(steps, v[i].0) {
            Some(above) if !close(v[i].0, above) && !noise(v[i].0, above) => {
                Next::Try((v[i].0 + above) / 2.0)
            }
            // The miss that ends the band decides the answer: measured
            // again once before it does (a CI run here: 12k/s missed once
            // and the search answered 10.75k/s, where a grid held 15.2k/s
            // twice).
            Some(above) => match once_missed(steps, above) {
                Some(k) => Next::Again(k),
                None => Next::Done,
            },
            None => Next::Done,
        },
        // A lone pass: a rate just below it tells a band from luck (no
        // nearer than the precision to what missed below).
        Some((i, false)) => {
            let r = v[i].0;
            let below = if i > 0 { v[i - 1].0 } else { 0.0 };
            let probe = (r * (1.0 - precision)).max((below + r) / 2.0);
            if below > 0.0 && close(below, r) {
                // What missed below is too close to tell: nothing lower
                // held, so the lone pass is all there is.
                Next::Done
            } else {
                Next::Try(probe)
            }
        }
        // Nothing held: lower, down to 1/s.
        None => {
            let lowest = v.first().map_or(0.0, |x| x.0);
            if lowest / GROWTH >= 1.0 {
                Next::Try(lowest / GROWTH)
            } else {
                Next::Done
            }
        }
    }
}

/// Which side ran out where the answer ends: at the lowest rate above it
/// that failed (else at the saturation, the step the server fell behind
/// in that completed the most): the client or the server (at or over
/// `BOUND_PCT` of their CPUs), either, or neither (both well below: then
/// the limit is elsewhere); None before any such step.
pub(super) fn limit(steps: &[Step], answer: Option<f64>) -> Option<String> {
    let sat = saturation(steps);
    let failed_above = answer.and_then(|a| {
        counted(steps)
            .filter(|s| s.rate_per_s > a && !s.undecided && !s.holds(sat))
            .min_by(|x, y| x.rate_per_s.total_cmp(&y.rate_per_s))
    });
    let s = failed_above.or_else(|| {
        counted(steps)
            .filter(|s| !s.kept_up)
            .max_by(|a, b| a.completed_per_s.total_cmp(&b.completed_per_s))
    })?;
    let bound = crate::outcome::BOUND_PCT;
    let at = format!("at {:.0}/s asked", s.rate_per_s);
    let client = s.client_cpu_pct?;
    Some(match s.server_cpu_pct {
        None if client >= bound => format!(
            "the client: it used {client:.0}% of the CPUs it may use {at} (the server's CPU was not observed)"
        ),
        None => format!(
            "not known: the client used {client:.0}% of the CPUs it may use {at}, and the server's CPU was not observed (--server-pid, --server-cmd or --server-cgroup)"
        ),
        Some(server) if client >= bound && server >= bound => format!(
            "either side: the client used {client:.0}% of its CPUs and the server {server:.0}% of its {at}"
        ),
        Some(server) if server >= bound => format!(
            "the server: it used {server:.0}% of its CPUs {at} (the client {client:.0}% of its)"
        ),
        Some(server) if client >= bound => format!(
            "the client: it used {client:.0}% of its CPUs {at} (the server {server:.0}% of its): a faster client would take the server further"
        ),
        Some(server) if client < WELL_BELOW_PCT && server < WELL_BELOW_PCT => format!(
            "neither side ran out of CPU {at} (the client {client:.0}%, the server {server:.0}% of its CPUs): the limit is elsewhere (latency, the network, locks or the protocol)"
        ),
        Some(server) => format!(
            "undecided: the client used {client:.0}% and the server {server:.0}% of their CPUs {at}, neither near all nor well below"
        ),
    })
}
