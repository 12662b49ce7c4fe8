//! Any program: `json` maps JSON pointers to metrics, `regex` names its
//! groups by metric (the last match counts, as programs print their totals
//! last). Metrics: see `crate::spec::EXEC_METRICS` and the
//! latency statistics with a unit (`p99_us`).

use super::parsed::{OutputParser, Parsed, is_exec_metric, metrics_help, number, set_metric};
use serde_json::Value;

/// Any program that prints a JSON document.
pub struct Json;

/// `NAME=POINTER,...`, checked.
fn json_map(arg: &str) -> Result<Vec<(String, String)>, String> {
    if arg.is_empty() {
        return Err("json needs its metrics: json:ops_per_s=/jobs/0/iops,p99_us=/p99 (NAME=JSON pointer, comma-separated)".into());
    }
    let mut map = Vec::new();
    for pair in arg.split(',') {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("'{pair}' is not NAME=POINTER"))?;
        if !is_exec_metric(k) {
            return Err(format!("'{k}' is not a metric; use {}", metrics_help()));
        }
        if !(v.is_empty() || v.starts_with('/')) {
            return Err(format!("'{v}' is not a JSON pointer (they start with /)"));
        }
        map.push((k.to_string(), v.to_string()));
    }
    Ok(map)
}

impl OutputParser for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn reads(&self) -> &'static str {
        "a JSON document: each metric read at its JSON pointer"
    }
    fn arg(&self) -> Option<&'static str> {
        Some("NAME=POINTER,...")
    }
    fn check(&self, arg: &str) -> Result<(), String> {
        json_map(arg).map(|_| ())
    }
    fn parse(&self, arg: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse_json(&json_map(arg)?, stdout)
    }
}

/// Any program whose output a regular expression reads.
pub struct Regex;

impl OutputParser for Regex {
    fn name(&self) -> &'static str {
        "regex"
    }
    fn reads(&self) -> &'static str {
        "any output: the last match of a pattern whose named groups are metrics"
    }
    fn arg(&self) -> Option<&'static str> {
        Some("PATTERN")
    }
    fn check(&self, arg: &str) -> Result<(), String> {
        if arg.is_empty() {
            return Err("regex needs a pattern whose named groups are metrics: regex:(?P<ops_per_s>[0-9.]+) ops/s".into());
        }
        let re = regex_lite::Regex::new(arg).map_err(|e| format!("not a regex: {e}"))?;
        let names: Vec<&str> = re.capture_names().flatten().collect();
        if names.is_empty() {
            return Err(format!(
                "the pattern has no named group; name each by its metric: {}",
                metrics_help()
            ));
        }
        if let Some(bad) = names.iter().find(|n| !is_exec_metric(n)) {
            return Err(format!(
                "group '{bad}' is not a metric; use {}",
                metrics_help()
            ));
        }
        Ok(())
    }
    fn parse(&self, arg: &str, stdout: &str, _: &str) -> Result<Parsed, String> {
        parse_regex(arg, stdout)
    }
}

/// Reads the JSON document the program printed (from its first line that
/// opens one).
pub fn parse_json(map: &[(String, String)], out: &str) -> Result<Parsed, String> {
    let start = out
        .lines()
        .scan(0, |at, l| {
            let here = *at;
            *at += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| l.trim_start().starts_with(['{', '[']))
        .map(|(at, _)| at)
        .ok_or("no JSON document in the output")?;
    let doc: Value = serde_json::Deserializer::from_str(&out[start..])
        .into_iter::<Value>()
        .next()
        .ok_or("an empty JSON document")?
        .map_err(|e| format!("the program's JSON: {e}"))?;
    let mut p = Parsed::default();
    for (metric, pointer) in map {
        let v = doc
            .pointer(pointer)
            .ok_or_else(|| format!("{pointer} ({metric}): not in the program's JSON"))?;
        let x = v
            .as_f64()
            .or_else(|| v.as_str().and_then(number))
            .ok_or_else(|| format!("{pointer} ({metric}) = {v}: not a number"))?;
        set_metric(&mut p, metric, x)?;
    }
    p.method.push(format!(
        "json: {}",
        map.iter()
            .map(|(m, ptr)| format!("{m} from {ptr}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    p.complete("the program's JSON")
}

/// Reads the last match of `pattern` in the output.
pub fn parse_regex(pattern: &str, out: &str) -> Result<Parsed, String> {
    let re = regex_lite::Regex::new(pattern).map_err(|e| e.to_string())?;
    let matches = re.captures_iter(out).count();
    let caps = re
        .captures_iter(out)
        .last()
        .ok_or_else(|| format!("the pattern {pattern} matches nothing in the output"))?;
    let mut p = Parsed::default();
    for name in re.capture_names().flatten() {
        if let Some(m) = caps.name(name) {
            let v = number(m.as_str())
                .ok_or_else(|| format!("{name} = '{}': not a number", m.as_str()))?;
            set_metric(&mut p, name, v)?;
        }
    }
    p.method.push(format!(
        "regex: the last of {matches} match(es) of {pattern}"
    ));
    p.complete("the pattern's match")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_pointers_fill_metrics() {
        let map = vec![
            ("ops_per_s".to_string(), "/jobs/0/read/iops".to_string()),
            (
                "p99_ns".to_string(),
                "/jobs/0/read/clat_ns/percentile/99.000000".to_string(),
            ),
            ("seconds".to_string(), "/x".to_string()),
        ];
        let out = include_str!("fixtures/fio-json-randread-psync.json");
        assert!(parse_json(&map, out).unwrap_err().contains("/x (seconds)"));
        let p = parse_json(&map[..2], out).unwrap();
        assert_eq!(p.ops_per_s, Some(35784.107946));
        assert_eq!(p.latency_ns["p99"], 40704.0);
    }

    #[test]
    fn regex_groups_fill_metrics_from_the_last_match() {
        let out = "1 s: 100 ops/s p99=2.5ms\n2 s: 120 ops/s p99=3.5ms\ntotal: 5.0 s 110 ops/s p99=3.0ms\n";
        let p = parse_regex(
            r"(?P<ops_per_s>[0-9.]+) ops/s p99=(?P<p99_ms>[0-9.]+)ms",
            out,
        )
        .unwrap();
        assert_eq!(p.ops_per_s, Some(110.0));
        assert_eq!(p.latency_ns["p99"], 3.0e6);
        assert!(p.method[0].contains("last of 3"));
        assert!(parse_regex(r"(?P<ops>\d+) done", out).is_err());
    }
}
