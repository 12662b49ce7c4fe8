//! A run's settings as the variables of an experiment: any key of a spec
//! (`server_cmd`, `clients_as`, `parser`...) read back from a run's
//! [`RunSpec`], the names people read them by (`server=crimson`), and short
//! names for long values (two commands told apart by their program).
//!
//! ```
//! use wirebench_core::vars::short_values;
//! let cmds = [
//!     "perf-crimson-msgr --mode=2 --cpuset=0-3".to_string(),
//!     "taskset -ac 0-3 perf-async-msgr --threads=4".to_string(),
//! ];
//! assert_eq!(short_values(&cmds), ["perf-crimson-msgr", "perf-async-msgr"]);
//! ```

use crate::spec::{RunSpec, ServerSource};

/// Keys of a run's request that a report may split runs by, besides the
/// report's own variables (clients, size, placement...): every setting of
/// the load and the server, none of the outputs or the cpusets (the
/// placement decides those).
pub const SPEC_KEYS: [&str; 30] = [
    "server_cmd",
    "client_cmd",
    "parser",
    "clients_as",
    "channel",
    "ring_size",
    "server_env",
    "client_env",
    "conns_per_client",
    "response_size",
    "arrival",
    "poll",
    "verify",
    "max_frame",
    "workload",
    "mix",
    "objects",
    "url_style",
    "sign",
    "multipart_threshold",
    "part_size",
    "put_parts",
    "get_parts",
    "protocol",
    "keys",
    "key_dist",
    "ratio",
    "http",
    "churn",
    "call",
];

/// The name a key reads as in legends, columns and headlines: commands by
/// whose they are (`server`, `client`), the rest as given.
pub fn label(key: &str) -> &str {
    match key {
        "server_cmd" => "server",
        "client_cmd" => "client",
        other => other,
    }
}

/// The key a name of [`label`] reads for (`server` is `server_cmd`): a
/// report may be asked for a variable by the name its legends show.
pub fn key_of(name: &str) -> &str {
    match name {
        "server" => "server_cmd",
        "client" => "client_cmd",
        other => other,
    }
}

/// The spec's field for a request key, where its name differs.
fn field(key: &str) -> &str {
    match key {
        "ring_size" => "ring_bytes",
        "url_style" => "style",
        "response_size" => "response_bytes",
        other => other,
    }
}

/// A JSON value as a setting reads: strings as they are, maps as
/// `K=V K=V`, lists joined by commas.
fn text(v: &serde_json::Value) -> Option<String> {
    Some(match v {
        serde_json::Value::Null => return None,
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(m) if m.is_empty() => return None,
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", text(v).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(" "),
        serde_json::Value::Array(a) => a.iter().filter_map(text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    })
}

/// A run's value of a request key among [`SPEC_KEYS`], read from its spec
/// (None: the run has no such setting, e.g. `parser` of a msgr run).
pub fn spec_value(spec: &RunSpec, key: &str) -> Option<String> {
    if !SPEC_KEYS.contains(&key) {
        return None;
    }
    if key == "server_cmd" {
        return match &spec.observe.as_ref()?.source {
            ServerSource::Command { cmd, .. } => Some(cmd.clone()),
            _ => None,
        };
    }
    // The transport's own words (shm's clients: mt, mp), else the spec's.
    if let Some(v) = spec.transport.describe().variable(key) {
        return Some(v);
    }
    let json = serde_json::to_value(spec).ok()?;
    let f = field(key);
    // A top-level setting, or one of the transport's or the target's.
    [
        json.get(f),
        json.get("transport").and_then(|t| t.get(f)),
        json.get("target").and_then(|t| t.get(f)),
    ]
    .into_iter()
    .flatten()
    .next()
    .and_then(text)
}

/// Values as a legend can show them: as they are when short; otherwise the
/// programs they run when those tell them apart (two commands), else the
/// words that differ between them. `values` are distinct; so are the names.
pub fn short_values(values: &[String]) -> Vec<String> {
    const SHORT: usize = 24;
    const LONGEST: usize = 40;
    if values.iter().all(|v| v.chars().count() <= SHORT) {
        return values.to_vec();
    }
    let distinct = |names: &[String]| {
        let mut n: Vec<&String> = names.iter().collect();
        n.sort();
        n.dedup();
        n.len() == names.len() && names.iter().all(|x| !x.is_empty())
    };
    let programs: Vec<String> = values
        .iter()
        .map(|v| crate::spec::program_of(v).unwrap_or_default())
        .collect();
    if values.len() > 1 && distinct(&programs) {
        return programs;
    }
    let words: Vec<Vec<&str>> = values
        .iter()
        .map(|v| v.split_whitespace().collect())
        .collect();
    let in_all = |w: &str| words.iter().all(|ws| ws.contains(&w));
    let differing: Vec<String> = words
        .iter()
        .map(|ws| {
            let d: Vec<&str> = ws.iter().copied().filter(|w| !in_all(w)).collect();
            let t = d.join(" ");
            if t.chars().count() > LONGEST {
                let cut: String = t.chars().take(LONGEST - 1).collect();
                format!("{cut}…")
            } else {
                t
            }
        })
        .collect();
    if values.len() > 1 && distinct(&differing) {
        differing
    } else {
        values.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_told_apart_by_their_program_or_by_what_differs() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // The messenger report's two servers, placeholders and all.
        assert_eq!(
            short_values(&v(&[
                "perf-crimson-msgr --poll-mode --mode=2 --server-addr=v2:127.0.0.1:{port} --cpuset={server_cpus}",
                "taskset -ac {server_cpus} perf-async-msgr --addr=v2:127.0.0.1:{port} --threads={clients}",
            ])),
            ["perf-crimson-msgr", "perf-async-msgr"]
        );
        // One program, two settings: the words that differ.
        assert_eq!(
            short_values(&v(&[
                "/usr/bin/redis-server --port {port} --io-threads 1 --save ''",
                "/usr/bin/redis-server --port {port} --io-threads 4 --save ''",
            ])),
            ["1", "4"]
        );
        // Short values are kept as they are.
        assert_eq!(short_values(&v(&["mt", "mp"])), ["mt", "mp"]);
        // Values nothing tells apart in short are kept whole.
        let same = v(&[
            "a-very-long-program-name --flag one two",
            "a-very-long-program-name --flag two one",
        ]);
        assert_eq!(short_values(&same), same);
    }

    #[test]
    fn keys_are_read_back_from_a_spec() {
        let spec: RunSpec = serde_json::from_str(include_str!("../tests/data/exec-spec.json"))
            .expect("a run's spec");
        assert_eq!(
            spec_value(&spec, "client_cmd").as_deref(),
            Some("reqres_loop --sessions 1")
        );
        assert_eq!(
            spec_value(&spec, "parser").as_deref(),
            Some("tateyama-reqres")
        );
        assert_eq!(spec_value(&spec, "client_env").as_deref(), Some("A=1 B=2"));
        assert_eq!(spec_value(&spec, "server_cmd"), None);
        assert_eq!(spec_value(&spec, "clients_as"), None);
        assert_eq!(spec_value(&spec, "results"), None);
        assert_eq!(label("server_cmd"), "server");
    }
}
