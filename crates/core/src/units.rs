//! Units on the command line and in spec files: sizes (`4KiB`, `16MiB`, `64`),
//! durations (`250us`, `10s`), and their human formatting.

use std::time::Duration;

/// Why a value with a unit could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UnitError {
    #[error(
        "'{0}' is not a size: write a number of bytes with an optional unit (64, 4KiB, 16MiB, 1GiB, 4KB)"
    )]
    Size(String),
    #[error("'{0}' is not a duration: write a number with a unit (250us, 10ms, 5s, 2m)")]
    Duration(String),
    #[error("'{0}' is not a rate: write requests per second, such as 500, 50k/s or 1.5M/s")]
    Rate(String),
}

/// Parses a rate in operations per second: `500`, `500/s`, `50k/s`, `1.5M`.
pub fn parse_rate(text: &str) -> Result<f64, UnitError> {
    let err = || UnitError::Rate(text.to_string());
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(err());
    }
    let v: f64 = num.parse().map_err(|_| err())?;
    let v = v * mult;
    if !v.is_finite() || v <= 0.0 {
        return Err(err());
    }
    Ok(v)
}

/// Parses a byte size: a plain number of bytes or a number followed by
/// `B`, `KiB`, `MiB`, `GiB` (powers of 1024) or `KB`, `MB`, `GB` (powers of
/// 1000). `k`, `m`, `g` alone are read as binary units, as most storage
/// tools do.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Size(text.to_string());
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err());
    }
    let n: u64 = num.parse().map_err(|_| err())?;
    let mult: u64 = match unit.trim() {
        "" | "B" | "b" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "KB" | "kB" => 1000,
        "MiB" | "M" | "m" => 1 << 20,
        "MB" => 1_000_000,
        "GiB" | "G" | "g" => 1 << 30,
        "GB" => 1_000_000_000,
        _ => return Err(err()),
    };
    n.checked_mul(mult).ok_or_else(err)
}

/// Parses a duration such as `250us`, `10ms`, `5s`, `2m`, `1h 30m`.
/// A bare number is refused: the unit is never guessed.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    humantime::parse_duration(text.trim()).map_err(|_| UnitError::Duration(text.to_string()))
}

/// The nanoseconds of `d`, saturating at `u64::MAX` (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A figure (never raw input) as a whole number: rounded toward zero and
/// saturating, NaN giving 0, which is what Rust's `as` does, said here once.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn whole(x: f64) -> u64 {
    x as u64
}

/// [`whole`], as an index or count.
pub fn whole_usize(x: f64) -> usize {
    usize::try_from(whole(x)).unwrap_or(usize::MAX)
}

/// At most `max` bytes of `text` (cut at a character), saying how long it
/// was: input echoed in a message stays readable, whatever its size.
pub fn excerpt(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len()).into()
}

/// Bytes in a MiB: throughput is shown in MiB/s, as the reference reports
/// mean their "MB/s".
pub const MIB: f64 = 1_048_576.0;

/// Bytes per second in MiB/s.
pub fn mib(bytes_per_s: f64) -> f64 {
    bytes_per_s / MIB
}

/// The longest piece of its input a message echoes.
pub const ECHO_MAX: usize = 200;

/// Formats a byte count with a binary unit, exactly when it is a whole
/// number of that unit (`4KiB`, `65B`, `1.5MiB` is printed `1536KiB`).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// Formats an amount of data to three figures, in the largest binary unit
/// it reaches (`2.44 TiB`, `12.5 MiB`, `900 B`): for a total, where
/// [`format_size`]'s exact form would be unreadable.
pub fn format_amount(bytes: u64) -> String {
    let units = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    let Some((shift, unit)) = units.into_iter().find(|(s, _)| bytes >= 1u64 << s) else {
        return format!("{bytes} B");
    };
    let v = bytes as f64 / (1u64 << shift) as f64;
    match v {
        v if v >= 100.0 => format!("{v:.0} {unit}"),
        v if v >= 10.0 => format!("{v:.1} {unit}"),
        v => format!("{v:.2} {unit}"),
    }
}

/// Formats nanoseconds with a unit chosen for readability (`812ns`,
/// `74.6us`, `1.23ms`, `2.50s`).
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Formats a rate with an SI suffix (`950`, `12.3k`, `1.21M`).
pub fn format_rate(per_s: f64) -> String {
    if per_s < 1e3 {
        format!("{per_s:.0}")
    } else if per_s < 1e6 {
        format!("{:.1}k", per_s / 1e3)
    } else {
        format!("{:.2}M", per_s / 1e6)
    }
}

/// A byte count with its unit as people write it (`4KiB`, `64`): the type
/// of size flags and spec keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// A duration with its unit (`250us`, `10s`): the type of duration flags
/// and spec keys. A bare number is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

/// Operations per second (`500`, `50k/s`): the type of rate flags and spec keys.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

impl std::str::FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_size(s).map(Bytes)
    }
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

impl std::str::FromStr for Dur {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_duration(s).map(Dur)
    }
}

impl std::fmt::Display for Dur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_zero() {
            return f.write_str("0s");
        }
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl std::str::FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_rate(s).map(Rate)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/s", self.0)
    }
}

/// Serde for values people write as text (`"4KiB"`, `"10s"`, `"0-3"`):
/// written as their text, read from text or from a bare number or boolean
/// (TOML's `size = 64`), parsed by the type's `FromStr`.
pub mod text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Int(i64),
        Float(f64),
        Bool(bool),
    }

    impl Raw {
        fn text(self) -> String {
            match self {
                Raw::Text(s) => s,
                Raw::Int(i) => i.to_string(),
                Raw::Float(f) => f.to_string(),
                Raw::Bool(b) => b.to_string(),
            }
        }
    }

    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(raw) => raw
                .text()
                .parse()
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_amount_has_three_figures_in_its_largest_unit() {
        assert_eq!(format_amount(900), "900 B");
        assert_eq!(format_amount(1024), "1.00 KiB");
        assert_eq!(format_amount(10_000 << 20), "9.77 GiB");
        assert_eq!(format_amount(10_000 * (256 << 20)), "2.44 TiB");
        assert_eq!(format_amount(27_300 << 10), "26.7 MiB");
        assert_eq!(format_amount(500 << 30), "500 GiB");
    }

    #[test]
    fn an_excerpt_is_cut_at_a_character_and_says_how_long_it_was() {
        assert_eq!(excerpt("short", 200), "short");
        let long = "é".repeat(150);
        let e = excerpt(&long, 201);
        assert!(
            e.starts_with(&"é".repeat(100)) && e.ends_with("... (300 bytes in all)"),
            "{e}"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("64B"), Ok(64));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KB"), Ok(4000));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        for bad in [
            "",
            "KiB",
            "4 X",
            "-1",
            "1.5MiB",
            "4kib",
            "99999999999999999999",
        ] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("500"), Ok(500.0));
        assert_eq!(parse_rate("50k/s"), Ok(50_000.0));
        assert_eq!(parse_rate("1.5M/s"), Ok(1_500_000.0));
        for bad in ["", "/s", "fast", "-5", "0", "1e3", "5 k"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_read_back_from_their_text() {
        for d in ["250us", "10s", "1m 30s", "0s"] {
            let v: Dur = d.parse().unwrap();
            assert_eq!(v.to_string().parse::<Dur>(), Ok(v), "{d}");
        }
        for b in ["64", "4KiB", "1000", "16MiB"] {
            let v: Bytes = b.parse().unwrap();
            assert_eq!(v.to_string().parse::<Bytes>(), Ok(v), "{b}");
        }
        for r in ["500", "50k/s", "0.5"] {
            let v: Rate = r.parse().unwrap();
            assert_eq!(v.to_string().parse::<Rate>(), Ok(v), "{r}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(65), "65B");
        assert_eq!(format_ns(74_600.0), "74.6us");
        assert_eq!(format_rate(1_210_000.0), "1.21M");
    }
}
