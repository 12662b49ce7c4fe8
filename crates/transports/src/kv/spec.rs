//! redis and memcached: key-value operations (get, set, incr, mixed) on
//! keys picked by a distribution, with value sizes of one, a list or a range.

use crate::error::*;
use crate::limits::*;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::transport::{Asked, heading};
use crate::values::*;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The wire protocol of a key-value run (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvProtocol {
    /// Redis's RESP2, the default of every Redis server.
    Resp2,
    /// RESP3, asked with `HELLO 3` (Redis 6 and later).
    Resp3,
    /// memcached's text protocol (get, set, incr).
    Text,
    /// memcached's meta protocol (mg, ms, ma).
    Meta,
}

text_enum!(KvProtocol, "resp2" => KvProtocol::Resp2, "resp3" => KvProtocol::Resp3, "text" => KvProtocol::Text, "meta" => KvProtocol::Meta);

/// SETs to GETs of a mixed key-value run (`--ratio SET:GET`, as memtier
/// writes it): `1:10` is one SET for every ten GETs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio(pub u32, pub u32);

impl FromStr for Ratio {
    type Err = String;
    fn from_str(s: &str) -> Result<Ratio, String> {
        let bad = || format!("'{s}': a ratio is SET:GET, two whole numbers not both 0, e.g. 1:10");
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let (a, b) = (
            a.trim().parse::<u32>().map_err(|_| bad())?,
            b.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if a == 0 && b == 0 || a.checked_add(b).is_none() {
            return Err(bad());
        }
        Ok(Ratio(a, b))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0, self.1)
    }
}

/// The own flags of redis and memcached: the protocol, the SET:GET ratio. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct KvFlags {
    /// resp2 or resp3 (redis; default resp2), text or meta (memcached; default text).
    #[arg(
        long,
        help_heading = heading::KV
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<KvProtocol>,
    /// --mode mixed: SETs to GETs, SET:GET. Default: 1:10.
    #[arg(
        long,
        help_heading = heading::KV
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub ratio: Option<Ratio>,
}

/// What one operation of a key-value run is (`--mode` of redis and
/// memcached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvMode {
    Get,
    Set,
    /// Increments a counter (a key of its own per key number).
    Incr,
    /// SETs and GETs in the `--ratio` SET:GET.
    Mixed,
}

impl KvMode {
    pub const ALL: [KvMode; 4] = [KvMode::Get, KvMode::Set, KvMode::Incr, KvMode::Mixed];

    /// Whether the mode reads keys (which a prepare phase then writes first).
    pub fn reads(self) -> bool {
        matches!(self, KvMode::Get | KvMode::Mixed)
    }
}

text_enum!(KvMode, "get" => KvMode::Get, "set" => KvMode::Set, "incr" => KvMode::Incr, "mixed" => KvMode::Mixed);

/// A key-value run (redis, memcached): which operations, on which keys,
/// with which values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KvSpec {
    pub mode: KvMode,
    pub protocol: KvProtocol,
    /// mixed: SETs and GETs in this proportion (memtier's `--ratio`).
    pub ratio: Ratio,
    /// Keys are `<prefix><number>`, numbers below `keys`.
    pub keys: u64,
    pub key_dist: KeyDist,
    /// Value sizes: one, a list or a range; a key's size follows from its number.
    pub sizes: SizeSpec,
    pub prefix: String,
}

impl Asked {
    /// The settings of a key-value transport (redis, memcached).
    pub(crate) fn kv(&self, kind: TransportKind) -> Result<TransportSpec, SpecError> {
        let redis = kind == TransportKind::Redis;
        let example = if redis {
            "redis://127.0.0.1:6379"
        } else {
            "memcached://127.0.0.1:11211"
        };
        match &self.target {
            Some(Endpoint::Redis { .. }) if redis => {}
            Some(Endpoint::Addr { scheme, .. }) if !redis && scheme == "memcached" => {}
            None => {
                return Err(flag(
                    "--target",
                    format!(
                        "--transport {kind} has no embedded server: give the server's address, e.g. --target {example}"
                    ),
                ));
            }
            Some(t) => {
                return Err(value(
                    "--target",
                    t,
                    format!("a {kind} target is written {example}"),
                ));
            }
        }
        let mode = self.mode_of(&KvMode::ALL, kind)?;
        let protocol = match (redis, self.flags.kv.protocol) {
            (true, None) => KvProtocol::Resp2,
            (false, None) => KvProtocol::Text,
            (true, Some(p @ (KvProtocol::Resp2 | KvProtocol::Resp3)))
            | (false, Some(p @ (KvProtocol::Text | KvProtocol::Meta))) => p,
            (_, Some(p)) => {
                return Err(value(
                    "--protocol",
                    p,
                    if redis {
                        "redis speaks resp2 or resp3"
                    } else {
                        "memcached speaks text or meta"
                    },
                ));
            }
        };
        if self.flags.kv.ratio.is_some() && mode != KvMode::Mixed {
            return Err(flag("--ratio", "applies to --mode mixed"));
        }
        let keys = self.keys.unwrap_or(10_000);
        if !(1..=MAX_KV_KEYS).contains(&keys) {
            return Err(range("--keys", keys, 1, MAX_KV_KEYS));
        }
        let sizes = self.size.clone().unwrap_or(SizeSpec::Fixed(64));
        let max = if redis { 512 << 20 } else { 1 << 20 };
        let smallest = match &sizes {
            SizeSpec::Fixed(n) => *n,
            SizeSpec::List(v) => v.iter().copied().min().unwrap_or(0),
            SizeSpec::Range { min, .. } => *min,
        };
        if smallest == 0 || sizes.max() > max {
            return Err(value(
                "--size",
                &sizes,
                if redis {
                    "values of 1 byte to 512MiB (Redis's limit)"
                } else {
                    "values of 1 byte to 1MiB (memcached's default item size)"
                },
            ));
        }
        let spec = KvSpec {
            mode,
            protocol,
            ratio: self.flags.kv.ratio.unwrap_or(Ratio(1, 10)),
            keys,
            key_dist: self.key_dist.unwrap_or(KeyDist::Uniform),
            sizes,
            prefix: "wirebench:".into(),
        };
        Ok(if redis {
            TransportSpec::Redis(spec)
        } else {
            TransportSpec::Memcached(spec)
        })
    }
}

/// redis's.
pub const REDIS: About = About {
    shared: &[
        Shared::Mode,
        Shared::Size,
        Shared::Poll,
        Shared::Verify,
        Shared::Keys,
        Shared::KeyDist,
    ],
    schemes: &["redis"],
    ..About::EXTERNAL
};

/// memcached's.
pub const MEMCACHED: About = About {
    shared: &[
        Shared::Mode,
        Shared::Size,
        Shared::Poll,
        Shared::Verify,
        Shared::Keys,
        Shared::KeyDist,
    ],
    schemes: &["memcached"],
    default_port: Some(11211),
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, kind: TransportKind) -> Result<TransportSpec, SpecError> {
    req.kv(kind)
}

impl Describe for KvSpec {
    fn prepares_bytes(&self) -> u64 {
        match self.mode.reads() {
            true => (0..self.keys).map(|i| self.sizes.size_of(i)).sum(),
            false => 0,
        }
    }

    fn workload(&self, _depth: usize) -> String {
        format!(
            "{} keys ({}) of {}, {}{}",
            self.keys,
            self.key_dist,
            self.sizes,
            self.protocol,
            if self.mode == KvMode::Mixed {
                format!(", SET:GET {}", self.ratio)
            } else {
                String::new()
            }
        )
    }

    fn mode_name(&self) -> String {
        self.mode.to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.sizes.max()
    }
    fn has_response(&self) -> bool {
        true
    }
    fn label(&self, _: &TargetSpec) -> String {
        let kind = match self.protocol {
            KvProtocol::Resp2 | KvProtocol::Resp3 => "redis",
            KvProtocol::Text | KvProtocol::Meta => "memcached",
        };
        format!("{kind}-{}", self.mode)
    }
}

impl TransportSpec {
    /// The key-value settings (redis, memcached).
    pub fn kv(&self) -> Option<&KvSpec> {
        match self {
            TransportSpec::Redis(k) | TransportSpec::Memcached(k) => Some(k),
            _ => None,
        }
    }
}
