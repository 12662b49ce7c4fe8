//! The user's commands (`--server-cmd`, `--client-cmd`): the placeholders
//! they may hold, and the environment variables given to them
//! (`--server-env`, `--client-env`, `--label`).

use crate::error::{SpecError, value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Environment variables, `KEY=VALUE` each: written as a list (as the
/// repeated flag gives them), read from a list or a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvVars(pub BTreeMap<String, String>);

impl EnvVars {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks each name: not empty, no `=` and no NUL.
    pub fn check(&self, flag: &'static str) -> Result<(), SpecError> {
        for (k, v) in &self.0 {
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(value(flag, format!("{k}={v}"), "give NAME=VALUE"));
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for EnvVars {
    type Err = String;
    /// One `KEY=VALUE`.
    fn from_str(s: &str) -> Result<EnvVars, String> {
        match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok(EnvVars(BTreeMap::from([(k.into(), v.into())]))),
            _ => Err(format!("'{s}' is not NAME=VALUE")),
        }
    }
}

impl Serialize for EnvVars {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(k, v)| format!("{k}={v}")))
    }
}

impl<'de> Deserialize<'de> for EnvVars {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EnvVars, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<String>),
            Table(BTreeMap<String, String>),
        }
        match Form::deserialize(d)? {
            Form::Table(t) => Ok(EnvVars(t)),
            Form::List(l) => {
                let mut out = BTreeMap::new();
                for item in l {
                    let one: EnvVars = item.parse().map_err(serde::de::Error::custom)?;
                    out.extend(one.0);
                }
                Ok(EnvVars(out))
            }
        }
    }
}

/// All of a repeated `--server-env`/`--client-env`, as one map (a later
/// value of a name wins).
pub fn env_map(all: &[EnvVars]) -> BTreeMap<String, String> {
    all.iter().flat_map(|e| e.0.clone()).collect()
}

/// The serde of a repeated environment flag: one list of `NAME=VALUE`
/// (or a table in a spec file), as one [`EnvVars`] was written.
pub(crate) mod env_list {
    use super::EnvVars;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(all: &[EnvVars], s: S) -> Result<S::Ok, S::Error> {
        EnvVars(super::env_map(all)).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EnvVars>, D::Error> {
        let one = EnvVars::deserialize(d)?;
        Ok(if one.is_empty() { vec![] } else { vec![one] })
    }
}

/// The placeholders a server command may hold.
pub const PLACEHOLDERS: [&str; 12] = [
    "clients",
    "conns",
    "depth",
    "size",
    "duration_s",
    "rate",
    "client_cpus",
    "server_cpus",
    "port",
    "instance",
    "run_dir",
    // This wirebench's own binary (a spec starting wirebench's servers).
    "wirebench",
];

/// Checks that every `{name}` in `text` is a placeholder.
pub(crate) fn check_placeholders(flag: &'static str, text: &str) -> Result<(), SpecError> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        let word = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if word && !PLACEHOLDERS.contains(&name) {
            return Err(value(
                flag,
                format!("{{{name}}}"),
                format!(
                    "not a placeholder; use {}",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                ),
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}
