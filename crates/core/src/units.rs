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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn formatting() {
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(65), "65B");
        assert_eq!(format_ns(74_600.0), "74.6us");
        assert_eq!(format_rate(1_210_000.0), "1.21M");
    }
}
