//! Load stages of an open loop (`--stages '10s:1k/s, 30s:1k->20k/s,
//! 10s:20k/s'`): the arrival rate over the measured phase, constant or a
//! linear ramp in each stage. A [`Profile`] gives how many requests are due
//! by a time and, inverted, when the n-th is due, so that each connection's
//! timetable follows the rate exactly (the warm-up runs at the first
//! stage's opening rate).

use crate::units::{Dur, parse_duration, parse_rate};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One stage: `duration` at a rate going from `from_per_s` to `to_per_s`
/// (equal: constant).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub duration_ns: u64,
    pub from_per_s: f64,
    pub to_per_s: f64,
    /// A closed loop's stage (`10s:conns=64`): the connections that send in
    /// it (the rates are then 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u64>,
}

impl Stage {
    pub fn seconds(&self) -> f64 {
        self.duration_ns as f64 / 1e9
    }

    /// The mean rate asked over the stage.
    pub fn asked_per_s(&self) -> f64 {
        (self.from_per_s + self.to_per_s) / 2.0
    }

    /// `30s:1k->20k/s`
    pub fn text(&self) -> String {
        let r = |v: f64| {
            if v >= 1e3 && (v / 1e3).fract() == 0.0 {
                format!("{}k", v / 1e3)
            } else {
                format!("{v}")
            }
        };
        let d = Dur(Duration::from_nanos(self.duration_ns));
        if let Some(n) = self.conns {
            return format!("{d}:conns={n}");
        }
        if self.from_per_s == self.to_per_s {
            format!("{d}:{}/s", r(self.from_per_s))
        } else {
            format!("{d}:{}->{}/s", r(self.from_per_s), r(self.to_per_s))
        }
    }
}

/// Parses `DURATION:RATE` or `DURATION:RATE->RATE`, comma-separated. Each
/// stage lasts whole seconds (its figures are the per-second points it
/// holds); a rate may be 0 at one end of a ramp, never over a whole stage.
pub fn parse(text: &str) -> Result<Vec<Stage>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |why: &str| {
            format!(
                "'{part}': {why}; write DURATION:RATE or DURATION:RATE->RATE, e.g. 30s:1k->20k/s"
            )
        };
        let (d, rates) = part.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let d = parse_duration(d.trim()).map_err(|_| bad("not a duration"))?;
        if d.is_zero() || d.subsec_nanos() != 0 {
            return Err(bad("a stage lasts a whole number of seconds, 1s or more"));
        }
        let rate = |r: &str| -> Result<f64, String> {
            let r = r.trim();
            // 0 is a ramp's end, not a stage.
            if r.trim_end_matches("/s") == "0" {
                return Ok(0.0);
            }
            parse_rate(r).map_err(|_| bad(&format!("'{r}' is not a rate")))
        };
        if let Some(n) = rates.trim().strip_prefix("conns=") {
            let n: u64 = n
                .trim()
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("conns= takes a number of connections, 1 or more"))?;
            out.push(Stage {
                duration_ns: u64::try_from(d.as_nanos()).map_err(|_| bad("too long"))?,
                from_per_s: 0.0,
                to_per_s: 0.0,
                conns: Some(n),
            });
            continue;
        }
        let (from, to) = match rates.split_once("->") {
            Some((a, b)) => (rate(a)?, rate(b)?),
            None => {
                let r = rate(rates)?;
                (r, r)
            }
        };
        if from == 0.0 && to == 0.0 {
            return Err(bad("a stage at 0/s sends nothing"));
        }
        out.push(Stage {
            duration_ns: u64::try_from(d.as_nanos()).map_err(|_| bad("too long"))?,
            from_per_s: from,
            to_per_s: to,
            conns: None,
        });
    }
    if out.is_empty() {
        return Err("no stage: write DURATION:RATE or DURATION:RATE->RATE, comma-separated".into());
    }
    if out.iter().any(|s| s.conns.is_some()) && out.iter().any(|s| s.conns.is_none()) {
        return Err(
            "stages are all rates (an open loop) or all conns= (a closed loop), not both".into(),
        );
    }
    Ok(out)
}

/// A spec's stages, as text (`stages = "10s:1k/s, 30s:1k->20k/s"`) or as
/// tables, one per stage (`[[base.stages]]` with `duration` and `rate`, or
/// `from` and `to` for a ramp): the text either way, which [`parse`]
/// checks. (`RunRequest::stages`'s reader; its wire form stays the text.)
pub fn text_or_tables<'de, D>(d: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(
                "stages as text ('10s:1k/s, 30s:1k->20k/s') or as tables of duration and rate (or from and to)",
            )
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(V)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut parts = Vec::new();
            while let Some(t) = seq.next_element::<StageTable>()? {
                parts.push(t.text().map_err(serde::de::Error::custom)?);
            }
            Ok(Some(parts.join(", ")))
        }
    }
    d.deserialize_option(V)
}

/// A number or its text (`rate = 1000` or `rate = "1k/s"`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Figure {
    Text(String),
    Int(i64),
    Float(f64),
}

impl Figure {
    fn text(&self) -> String {
        match self {
            Figure::Text(t) => t.clone(),
            Figure::Int(n) => n.to_string(),
            Figure::Float(x) => x.to_string(),
        }
    }
}

/// One `[[stages]]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StageTable {
    duration: String,
    #[serde(default)]
    rate: Option<Figure>,
    #[serde(default)]
    from: Option<Figure>,
    #[serde(default)]
    to: Option<Figure>,
}

impl StageTable {
    fn text(&self) -> Result<String, String> {
        let d = &self.duration;
        match (&self.rate, &self.from, &self.to) {
            (Some(r), None, None) => Ok(format!("{d}:{}", r.text())),
            (None, Some(a), Some(b)) => Ok(format!("{d}:{}->{}", a.text(), b.text())),
            _ => Err(format!(
                "the stage of {d}: give rate (constant), or from and to (a ramp)"
            )),
        }
    }
}

/// A closed loop's stages (`10s:conns=8, 10s:conns=64`).
pub fn closed(stages: &[Stage]) -> bool {
    stages.first().is_some_and(|s| s.conns.is_some())
}

/// A closed loop's most connections in a stage.
pub fn peak_conns(stages: &[Stage]) -> u64 {
    stages.iter().filter_map(|s| s.conns).max().unwrap_or(0)
}

/// A closed loop's stages: when each change of the connections sending
/// happens (ns from the measured phase's start, the first at 0 for the
/// warm-up too) and how many send from then on.
pub fn conn_steps(stages: &[Stage]) -> Vec<(u64, u64)> {
    let mut at = 0;
    let mut out = Vec::new();
    for s in stages {
        if let Some(n) = s.conns {
            out.push((at, n));
        }
        at += s.duration_ns;
    }
    out
}

/// The stages' total length.
pub fn total(stages: &[Stage]) -> Duration {
    Duration::from_nanos(stages.iter().map(|s| s.duration_ns).sum())
}

/// The mean rate over the stages (what the summary's "asked" is).
pub fn mean_rate(stages: &[Stage]) -> f64 {
    let secs: f64 = stages.iter().map(Stage::seconds).sum();
    stages
        .iter()
        .map(|s| s.asked_per_s() * s.seconds())
        .sum::<f64>()
        / secs
}

/// The highest rate asked at any time.
pub fn peak_rate(stages: &[Stage]) -> f64 {
    stages
        .iter()
        .map(|s| s.from_per_s.max(s.to_per_s))
        .fold(0.0, f64::max)
}

/// The rate over time from the load's start: a lead (the warm-up) at the
/// first stage's opening rate, then the stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// (start s, length s, rate at start, rate at end, requests due before)
    segments: Vec<(f64, f64, f64, f64, f64)>,
}

impl Profile {
    pub fn new(lead: Duration, stages: &[Stage]) -> Profile {
        let mut segments = Vec::new();
        let (mut t, mut n) = (0.0, 0.0);
        let first = stages.first().map_or(0.0, |s| s.from_per_s);
        let lead = lead.as_secs_f64();
        let all = std::iter::once((lead, first, first)).chain(
            stages
                .iter()
                .map(|s| (s.seconds(), s.from_per_s, s.to_per_s)),
        );
        for (len, r0, r1) in all.filter(|(len, ..)| *len > 0.0) {
            segments.push((t, len, r0, r1, n));
            t += len;
            n += (r0 + r1) / 2.0 * len;
        }
        Profile { segments }
    }

    /// Requests due by `t` seconds from the start.
    pub fn count_at(&self, t: f64) -> f64 {
        let mut due = 0.0;
        for &(start, len, r0, r1, before) in &self.segments {
            if t < start {
                break;
            }
            let tau = (t - start).min(len);
            due = before + r0 * tau + (r1 - r0) * tau * tau / (2.0 * len);
        }
        due
    }

    /// When the `n`-th request (counted from 0, fractions allowed) is due,
    /// in seconds from the start; None after the last stage.
    pub fn time_at(&self, n: f64) -> Option<f64> {
        for &(start, len, r0, r1, before) in &self.segments {
            let within = (r0 + r1) / 2.0 * len;
            if n < before || n >= before + within {
                continue;
            }
            let m = n - before;
            // r0 tau + a tau^2 = m, a = (r1 - r0) / 2len; the root in the
            // form that stays exact when a is near 0 (or below it).
            let a = (r1 - r0) / (2.0 * len);
            let tau = 2.0 * m / (r0 + (r0 * r0 + 4.0 * a * m).max(0.0).sqrt());
            return Some(start + tau.clamp(0.0, len));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loops_stages_step_its_connections() {
        let s = parse("10s:conns=8, 5s:conns=64, 5s:conns=2").unwrap();
        assert!(closed(&s));
        assert_eq!(peak_conns(&s), 64);
        assert_eq!(s[1].text(), "5s:conns=64");
        assert_eq!((s[1].from_per_s, s[1].to_per_s), (0.0, 0.0));
        assert_eq!(
            conn_steps(&s),
            [(0, 8), (10_000_000_000, 64), (15_000_000_000, 2)]
        );
        assert!(!closed(&parse("10s:1k").unwrap()));
        for (bad, says) in [
            (
                "10s:conns=8, 10s:1k/s",
                "all rates (an open loop) or all conns=",
            ),
            ("10s:conns=0", "1 or more"),
            ("10s:conns=lots", "1 or more"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn stages_parse_and_say_what_was_wrong() {
        let s = parse("10s:1k/s, 30s:1k->20k/s,10s:20k").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].from_per_s, 1000.0);
        assert_eq!(s[1].to_per_s, 20000.0);
        assert_eq!(s[1].text(), "30s:1k->20k/s");
        assert_eq!(total(&s), Duration::from_secs(50));
        assert_eq!(peak_rate(&s), 20000.0);
        assert!((mean_rate(&s) - (10e3 + 30.0 * 10.5e3 + 10.0 * 20e3) / 50.0).abs() < 1e-9);
        assert!(parse("10s:0->1k").is_ok());
        for (bad, says) in [
            ("10s", "no ':'"),
            ("1500ms:1k", "whole number of seconds"),
            ("10s:fast", "not a rate"),
            ("10s:0", "sends nothing"),
            ("", "no stage"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_timetable_follows_the_ramp() {
        // 1 s of lead at 1k/s, then 10 s from 1k/s to 21k/s.
        let stages = parse("10s:1k->21k").unwrap();
        let p = Profile::new(Duration::from_secs(1), &stages);
        assert_eq!(p.count_at(1.0), 1000.0);
        // A ramp's count is the area under it: 1k + (1k + 11k) / 2 x 5 s.
        assert!((p.count_at(6.0) - 31_000.0).abs() < 1e-6);
        assert!((p.count_at(11.0) - 111_000.0).abs() < 1e-6);
        for n in [0.0, 0.5, 999.0, 1000.0, 31_000.0, 110_999.0] {
            let t = p.time_at(n).unwrap();
            assert!((p.count_at(t) - n).abs() < 1e-6, "{n}: {t}");
        }
        assert_eq!(p.time_at(111_000.0), None);
        // A ramp down to 0.
        let p = Profile::new(Duration::ZERO, &parse("4s:1k->0").unwrap());
        let t = p.time_at(1999.0).unwrap();
        assert!((p.count_at(t) - 1999.0).abs() < 1e-6 && t < 4.0, "{t}");
    }
}

/// A stage of a staged run, as measured: what was asked, sent and
/// completed in the seconds it holds, and its latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageResult {
    /// 1 for the first.
    pub stage: usize,
    /// `30s:1k->20k/s`
    pub text: String,
    /// From the measured phase's start.
    pub start_s: f64,
    /// The seconds measured in it (its length, unless the run ended early).
    pub measured_s: f64,
    pub asked_per_s: f64,
    pub sent_per_s: f64,
    pub completed_per_s: f64,
    pub errors: u64,
    pub latency: crate::hist::LatencySummary,
    /// Requests due in the stage that had not left by its end: the
    /// generator (or the depth limit) fell behind by that many.
    pub late_sends: u64,
    /// Sent within 2% of what was asked.
    pub kept_up: bool,
    /// A closed loop's stage: the connections that sent in it (nothing was
    /// asked of a rate then: `asked_per_s` is 0, and it kept up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u64>,
    /// Requests due in earlier stages and not sent by this one's start:
    /// the backlog it inherited. They are not its rate (`sent_per_s`
    /// counts its own requests only), but its latency counts those sent in
    /// it (`backlog_sent`), each late since its own stage.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backlog_in: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backlog_sent: u64,
    /// A ramp's seconds in bands (at most [`MAX_BANDS`]), lowest time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<Band>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A ramp's rows, at most: its seconds are grouped into this many bands.
pub const MAX_BANDS: usize = 20;

/// Consecutive seconds of a ramp: what was asked, sent and completed in
/// them, and their latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// From the measured phase's start.
    pub start_s: f64,
    pub measured_s: f64,
    pub asked_per_s: f64,
    pub sent_per_s: f64,
    pub completed_per_s: f64,
    pub latency: crate::hist::LatencySummary,
}

/// Sent within this share of the asked rate: the stage kept up.
pub const KEPT_UP: f64 = 0.98;

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

/// Latency this many times its low-load level has left it.
pub const KNEE_FACTOR: f64 = 2.0;

/// Where a run's ramps broke: the knee of its latency, and each objective's
/// rate of failing for good. Judged over its points (each band of a ramp,
/// each constant stage), ordered by the rate asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampVerdict {
    /// None: the latency never left its level, or the knee is undecided
    /// (`knee_undecided` says why).
    pub knee: Option<Knee>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_undecided: Option<String>,
    /// The highest rate asked of any point.
    pub max_asked_per_s: f64,
    /// The points' number.
    pub points: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<SloBreak>,
}

/// The rate at which the median latency left its low-load level for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The low-load level of p50: its median over the lowest quarter of
    /// the rates asked (two points at least).
    pub low_p50_ns: u64,
    /// The highest rate asked still under KNEE_FACTOR times that level...
    pub last_low_per_s: f64,
    /// ...and the lowest from which every higher rate stayed over it: the
    /// knee lies between the two (its uncertainty).
    pub first_high_per_s: f64,
    /// Their midpoint: the answer.
    pub rate_per_s: f64,
    /// The p50 at `first_high_per_s`.
    pub high_p50_ns: u64,
    /// The most completed per second at any point from the knee on: what
    /// the server did at most once overloaded.
    pub max_completed_per_s: f64,
}

/// An objective over a ramp's points: from which rate it failed for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloBreak {
    pub slo: String,
    /// The lowest rate asked from which every point failed (None: the last
    /// point held).
    pub failed_from_per_s: Option<f64>,
    /// The highest rate below it that held (None: none did).
    pub held_to_per_s: Option<f64>,
    /// Points that failed below `failed_from_per_s` (a miss that did not
    /// last: a wake-up at a low rate, a stall).
    pub failed_below: usize,
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
