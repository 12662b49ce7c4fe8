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
