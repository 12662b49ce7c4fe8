//! Making a staged run's [`StageResult`]s from its seconds, and judging
//! where its ramps broke ([`RampVerdict`]).

use super::{Band, KEPT_UP, KNEE_FACTOR, Knee, MAX_BANDS, RampVerdict, SloBreak, StageResult};
use crate::stages::{Profile, Stage};
use std::time::Duration;

/// Each stage's figures from the run's per-second points: the measured
/// seconds whose middle falls in it.
pub fn results(
    stages: &[Stage],
    warmup_ns: u64,
    intervals: &[crate::result::Interval],
) -> Vec<StageResult> {
    let profile = Profile::new(Duration::from_nanos(warmup_ns), stages);
    let mut out = Vec::new();
    let mut from_ns = warmup_ns;
    // Requests due before `t` that had not left by `t` (the seconds up to
    // it, warm-up included).
    let backlog_at = |t_ns: u64| -> u64 {
        let sent: u64 = intervals
            .iter()
            .filter(|iv| iv.end_ns <= t_ns)
            .map(|iv| iv.sent)
            .sum();
        crate::units::whole(
            (profile.count_at(t_ns as f64 / 1e9) - sent as f64)
                .round()
                .max(0.0),
        )
    };
    for (i, s) in stages.iter().enumerate() {
        let to_ns = from_ns + s.duration_ns;
        let held: Vec<&crate::result::Interval> = intervals
            .iter()
            .filter(|iv| iv.phase == crate::result::Phase::Measure)
            .filter(|iv| (from_ns..to_ns).contains(&(iv.start_ns / 2 + iv.end_ns / 2)))
            .collect();
        let (Some(first), Some(last)) = (held.first(), held.last()) else {
            from_ns = to_ns;
            continue;
        };
        let secs = (last.end_ns - first.start_ns) as f64 / 1e9;
        let asked = profile.count_at(last.end_ns as f64 / 1e9)
            - profile.count_at(first.start_ns as f64 / 1e9);
        // The first sends of the stage are the backlog's (the timetable is
        // kept in order): only the rest are its own.
        let backlog_in = if s.conns.is_some() {
            0
        } else {
            backlog_at(first.start_ns)
        };
        let sent_all: u64 = held.iter().map(|iv| iv.sent).sum();
        let backlog_sent = backlog_in.min(sent_all);
        let sent = sent_all - backlog_sent;
        let ops: u64 = held.iter().map(|iv| iv.ops).sum();
        let h = merged(&held);
        let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
        let bands = if s.from_per_s != s.to_per_s && s.conns.is_none() && held.len() >= 2 {
            let width = held.len().div_ceil(MAX_BANDS);
            held.chunks(width)
                .map(|seconds| band(&profile, warmup_ns, seconds))
                .collect()
        } else {
            Vec::new()
        };
        out.push(StageResult {
            stage: i + 1,
            text: s.text(),
            start_s: (from_ns - warmup_ns) as f64 / 1e9,
            measured_s: secs,
            asked_per_s: per_s(asked),
            sent_per_s: per_s(sent as f64),
            completed_per_s: per_s(ops as f64),
            errors: held.iter().map(|iv| iv.errors).sum(),
            latency: crate::hist::LatencySummary::of(&h),
            late_sends: crate::units::whole((asked - sent as f64).max(0.0).round()),
            kept_up: sent as f64 >= KEPT_UP * asked,
            conns: s.conns,
            backlog_in,
            backlog_sent,
            bands,
        });
        from_ns = to_ns;
    }
    out
}
/// A point of a ramp: asked rate, completed rate, p50, and its seconds
/// (from, to the measured phase's start, in s).
struct Point {
    asked: f64,
    completed: f64,
    p50_ns: u64,
    from_s: f64,
    to_s: f64,
}

/// Where the ramps of `r` broke (None: no stage of it is a ramp with
/// bands), with `slos` judged at each point.
pub fn verdict(r: &crate::result::RunResult, slos: &[crate::slo::Slo]) -> Option<RampVerdict> {
    if r.stages.iter().all(|s| s.bands.is_empty()) {
        return None;
    }
    let mut points: Vec<Point> = Vec::new();
    for st in r.stages.iter().filter(|s| s.conns.is_none()) {
        if st.bands.is_empty() {
            points.push(Point {
                asked: st.asked_per_s,
                completed: st.completed_per_s,
                p50_ns: st.latency.p50_ns,
                from_s: st.start_s,
                to_s: st.start_s + st.measured_s,
            });
        }
        for b in &st.bands {
            points.push(Point {
                asked: b.asked_per_s,
                completed: b.completed_per_s,
                p50_ns: b.latency.p50_ns,
                from_s: b.start_s,
                to_s: b.start_s + b.measured_s,
            });
        }
    }
    points.retain(|p| p.to_s > p.from_s);
    points.sort_by(|a, b| a.asked.total_cmp(&b.asked));
    let max_asked_per_s = points.last().map_or(0.0, |p| p.asked);
    let (knee, knee_undecided) = knee(&points);
    let warmup_ns = r.spec.warmup_ns;
    let seconds_of = |p: &Point| -> Vec<&crate::result::Interval> {
        r.intervals
            .iter()
            .filter(|iv| iv.phase == crate::result::Phase::Measure)
            .filter(|iv| {
                let mid = (iv.start_ns / 2 + iv.end_ns / 2).saturating_sub(warmup_ns) as f64 / 1e9;
                (p.from_s..p.to_s).contains(&mid)
            })
            .collect()
    };
    let breaks = slos
        .iter()
        .filter(|slo| slo.window_s.is_none())
        .map(|slo| {
            let held: Vec<bool> = points
                .iter()
                .map(|p| {
                    let secs = seconds_of(p);
                    !secs.is_empty() && slo.window(p.from_s, &secs).is_ok_and(|w| w.pass)
                })
                .collect();
            let failed: Vec<bool> = held.iter().map(|h| !h).collect();
            let from = for_good(&failed);
            SloBreak {
                slo: slo.text.clone(),
                failed_from_per_s: from.map(|i| points[i].asked),
                held_to_per_s: (0..from.unwrap_or(held.len()))
                    .rev()
                    .find(|&i| held[i])
                    .map(|i| points[i].asked),
                failed_below: held[..from.unwrap_or(held.len())]
                    .iter()
                    .filter(|h| !**h)
                    .count(),
            }
        })
        .collect();
    Some(RampVerdict {
        knee,
        knee_undecided,
        max_asked_per_s,
        points: points.len(),
        breaks,
    })
}

/// The knee of `points` (sorted by the rate asked), or why it is
/// undecided; (None, None): the latency never left its level.
fn knee(points: &[Point]) -> (Option<Knee>, Option<String>) {
    if points.len() < 4 {
        return (
            None,
            Some(format!(
                "{} point(s): a knee needs 4 or more (a longer ramp)",
                points.len()
            )),
        );
    }
    let low_n = (points.len() / 4).max(2);
    let mut low: Vec<u64> = points[..low_n].iter().map(|p| p.p50_ns).collect();
    low.sort_unstable();
    let level = low[low.len() / 2];
    if level == 0 {
        return (None, Some("no latency measured at the lowest rates".into()));
    }
    let high: Vec<bool> = points
        .iter()
        .map(|p| p.p50_ns as f64 > KNEE_FACTOR * level as f64)
        .collect();
    let Some(first) = for_good(&high) else {
        return (None, None);
    };
    if first < low_n {
        return (
            None,
            Some("the latency was high from the lowest rates on: start the ramp lower".into()),
        );
    }
    let (lo, hi) = (&points[first - 1], &points[first]);
    (
        Some(Knee {
            low_p50_ns: level,
            last_low_per_s: lo.asked,
            first_high_per_s: hi.asked,
            rate_per_s: (lo.asked + hi.asked) / 2.0,
            high_p50_ns: hi.p50_ns,
            max_completed_per_s: points[first..]
                .iter()
                .map(|p| p.completed)
                .fold(0.0, f64::max),
        }),
        None,
    )
}

/// The lowest index from which every flag is set (None: the last is not).
fn for_good(flags: &[bool]) -> Option<usize> {
    let unset_after = flags.iter().rposition(|f| !f);
    match unset_after {
        None if flags.is_empty() => None,
        None => Some(0),
        Some(i) if i + 1 < flags.len() => Some(i + 1),
        Some(_) => None,
    }
}

/// The latency histograms of `seconds`, merged.
fn merged(seconds: &[&crate::result::Interval]) -> crate::hist::LatencyHist {
    let mut h = crate::hist::new_hist();
    for iv in seconds {
        if let Ok(x) = crate::hist::decode(&iv.latency_hist) {
            let _ = h.add(&x);
        }
    }
    h
}

/// One band of a ramp: `seconds`, consecutive.
fn band(profile: &Profile, warmup_ns: u64, seconds: &[&crate::result::Interval]) -> Band {
    let (first, last) = (seconds[0], seconds[seconds.len() - 1]);
    let secs = (last.end_ns - first.start_ns) as f64 / 1e9;
    let asked =
        profile.count_at(last.end_ns as f64 / 1e9) - profile.count_at(first.start_ns as f64 / 1e9);
    let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    Band {
        start_s: first.start_ns.saturating_sub(warmup_ns) as f64 / 1e9,
        measured_s: secs,
        asked_per_s: per_s(asked),
        sent_per_s: per_s(seconds.iter().map(|iv| iv.sent).sum::<u64>() as f64),
        completed_per_s: per_s(seconds.iter().map(|iv| iv.ops).sum::<u64>() as f64),
        latency: crate::hist::LatencySummary::of(&merged(seconds)),
    }
}

#[cfg(test)]
mod result_tests {
    use super::*;
    use crate::result::{Interval, Phase};
    use crate::stages::parse;

    fn second(k: u64, sent: u64, ops: u64) -> Interval {
        let mut h = crate::hist::new_hist();
        crate::hist::record(&mut h, 1000 * (k + 1));
        Interval {
            start_ns: k * 1_000_000_000,
            end_ns: (k + 1) * 1_000_000_000,
            phase: if k == 0 {
                Phase::Warmup
            } else {
                Phase::Measure
            },
            sent,
            ops,
            latency_hist: crate::hist::encode(&h),
            ..crate::result::fixture::interval(k, ops as f64, 1)
        }
    }

    #[test]
    fn each_stage_gets_its_seconds_and_says_where_it_fell_behind() {
        // 1 s of warm-up, 2 s at 100/s, then 2 s from 100/s to 300/s
        // (asked: 150/s, then 250/s), whose last second sent only 200.
        let stages = parse("2s:100, 2s:100->300").unwrap();
        let ivs = [
            second(0, 100, 100),
            second(1, 100, 100),
            second(2, 100, 99),
            second(3, 150, 150),
            second(4, 200, 200),
        ];
        let r = results(&stages, 1_000_000_000, &ivs);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].stage, r[0].start_s, r[0].measured_s), (1, 0.0, 2.0));
        assert_eq!((r[0].asked_per_s, r[0].sent_per_s), (100.0, 100.0));
        assert_eq!(r[0].completed_per_s, 99.5);
        assert!(r[0].kept_up && r[0].late_sends == 0);
        // The slowest of its two seconds (2 and 3 us), as HDR keeps it.
        assert!((3000..=3003).contains(&r[0].latency.max_ns), "{:?}", r[0]);
        assert_eq!((r[1].asked_per_s, r[1].sent_per_s), (200.0, 175.0));
        assert_eq!(r[1].late_sends, 50);
        assert!(!r[1].kept_up);
        assert_eq!(r[1].text, "2s:100->300/s");
    }

    #[test]
    fn for_good_is_the_lowest_index_from_which_every_flag_is_set() {
        assert_eq!(for_good(&[]), None);
        assert_eq!(for_good(&[true, true]), Some(0));
        assert_eq!(for_good(&[false, true, false, true, true]), Some(3));
        assert_eq!(for_good(&[true, false]), None);
    }

    /// Forged points, p50 flat at 100 us to 18k/s, then 10x from 20k/s
    /// on (with one high point at 6k/s that does not last): the knee lies
    /// between 18k and 20k/s; a ramp whose latency never leaves its level
    /// has none; too few points are undecided.
    #[test]
    fn the_knee_is_where_p50_left_its_level_for_good() {
        let point = |asked: f64, p50_ns: u64| Point {
            asked,
            completed: asked.min(20_000.0),
            p50_ns,
            from_s: 0.0,
            to_s: 1.0,
        };
        let pts: Vec<Point> = (1..=15)
            .map(|k| {
                let asked = 2000.0 * f64::from(k);
                let p50 = if asked >= 20_000.0 || asked == 6000.0 {
                    1_000_000
                } else {
                    100_000
                };
                point(asked, p50)
            })
            .collect();
        let (k, why) = knee(&pts);
        let k = k.expect("a knee");
        assert_eq!(why, None);
        assert_eq!((k.last_low_per_s, k.first_high_per_s), (18_000.0, 20_000.0));
        assert_eq!(k.rate_per_s, 19_000.0);
        assert_eq!(k.low_p50_ns, 100_000);
        assert_eq!(k.max_completed_per_s, 20_000.0);
        let flat: Vec<Point> = (1..=8)
            .map(|k| point(1000.0 * f64::from(k), 100_000))
            .collect();
        assert_eq!(knee(&flat), (None, None));
        assert!(knee(&flat[..3]).1.is_some());
    }
}
