//! The transports' registry, and what every transport's module shares.
//!
//! A transport is one folder, `transports/src/<t>/`. Its `spec.rs` is its
//! module here (`transport::<t>`, loaded by path: every stage reads a spec,
//! so specs compile into this lowest crate): its flags (a group, flattened
//! into the request; any other transport's flag is refused, the message
//! naming the transport when only one takes it) and the shared ones it
//! takes ([`About::shared`]), its spec (the checked settings every later
//! stage reads), its modes and their names, the check that turns a
//! request's flags into that spec, what it says about itself ([`About`]:
//! an embedded server, agents, several endpoints) and how it describes a
//! run ([`Describe`]: mode name, sizes, label). The rest of the folder
//! (its client, driver and server) is `wirebench_transports::<t>`.
//!
//! [`for_each_transport!`](crate::for_each_transport) is the registry: one line per folder, read by
//! this module (the modules, the [`TransportKind`] and [`TransportSpec`]
//! enums, the check's dispatch) and by the transports crate (its modules,
//! the drivers' and the servers' dispatch). Adding a transport is its
//! folder and one line in it.
//!
//! ```
//! use wirebench_core::transport::TransportKind;
//! assert_eq!("redis".parse::<TransportKind>().unwrap(), TransportKind::Redis);
//! assert!(TransportKind::ALL.iter().all(|k| k.to_string().parse() == Ok(*k)));
//! ```

use crate::error::{SpecError, range, value};
pub use crate::kind::TransportKind;
use crate::units::Rate;
use crate::values::{Endpoint, TargetSpec};
use crate::values::{KeyDist, SizeSpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The registry of transports: `module Flags: Kind "name" Spec About`
/// (`Flags`: the module's group of its own flags; several kinds may share a
/// module; `About` is the module's const that describes
/// the kind). Calls `$m!` with the list, so that each crate
/// generates what it needs from one list.
#[macro_export]
macro_rules! for_each_transport {
    ($($m:ident)::+) => {
        $($m)::+! {
            msgr MsgrFlags: Msgr "msgr" MsgrSpec ABOUT;
            shm ShmFlags: Shm "shm" ShmSpec ABOUT;
            s3 S3Flags: S3 "s3" S3Spec ABOUT;
            kv KvFlags: Redis "redis" KvSpec REDIS, Memcached "memcached" KvSpec MEMCACHED;
            http HttpFlags: Http "http" HttpSpec ABOUT;
            grpc GrpcFlags: Grpc "grpc" GrpcSpec ABOUT;
            exec ExecFlags: Exec "exec" ExecSpec ABOUT;
            tcp_echo TcpEchoFlags: TcpEcho "tcp-echo" TcpEchoSpec ABOUT;
            udp_echo UdpEchoFlags: UdpEcho "udp-echo" UdpEchoSpec ABOUT;
        }
    };
}

/// The headings of `run --help`: the flags of a transport, of the server
/// under test, of the load agents.
pub mod heading {
    pub const S3: &str = "S3 (--transport s3)";
    pub const KV: &str = "Redis and memcached (--target redis://HOST:PORT, memcached://HOST:PORT)";
    pub const HTTP: &str = "HTTP (--target http://HOST:PORT/PATH, https://...)";
    pub const GRPC: &str = "gRPC (--target grpc://HOST:PORT, grpcs://...)";
    pub const SERVER: &str = "The server under test (observed)";
    pub const EXEC: &str = "exec (--transport exec: your own benchmark program)";
    pub const AGENTS: &str = "Load agents (run on other hosts: `wirebench agent`)";
    pub const LIVE: &str = "Live metrics";
}

/// What a transport says about itself, besides its spec.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The schemes of `--target` that name it (`s3://`, `s3s://`).
    pub schemes: &'static [&'static str],
    /// Its embedded server's default listening place (None: no embedded
    /// server; `--target` is needed).
    pub embedded: Option<fn() -> Endpoint>,
    /// Whether `--arch` picks its embedded server's design.
    pub arch: bool,
    /// Why its load cannot be made by agents on other hosts (None: it can).
    pub no_agents: Option<&'static str>,
    /// Why it reaches one endpoint only (None: `--target A,B` deals the
    /// connections to several).
    pub one_endpoint: Option<&'static str>,
    /// Whether its requests are signed with `--access-key`/`--secret-key`
    /// (or `AWS_*`) in `--region`.
    pub signs: bool,
    /// The user's program makes the load (exec): no warm-up of wirebench's,
    /// and a server, if any, is the user's.
    pub own_program: bool,
    /// Why a closed loop in stages (`--stages '10s:conns=8, ...'`) cannot
    /// drive it (None: it can).
    pub no_conn_stages: Option<&'static str>,
    /// The flags several transports take that it takes too (its own group's
    /// it takes anyway; any other transport's are refused).
    pub shared: &'static [Shared],
    /// The port of an endpoint of its own scheme that leaves it out (None:
    /// the port must be given).
    pub default_port: Option<u16>,
}

impl About {
    /// A transport of a server given by `--target`, with no embedded
    /// server, that agents can drive and that takes several endpoints.
    pub const EXTERNAL: About = About {
        schemes: &[],
        embedded: None,
        arch: false,
        no_agents: None,
        one_endpoint: None,
        signs: false,
        own_program: false,
        no_conn_stages: None,
        shared: &[],
        default_port: None,
    };
}

/// The flags of the request that several transports take, each taking
/// those its [`About::shared`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    Listen,
    Mode,
    Size,
    Poll,
    Verify,
    Keys,
    KeyDist,
    CaFile,
    Header,
}

impl Shared {
    pub const ALL: [Shared; 9] = [
        Shared::Listen,
        Shared::Mode,
        Shared::Size,
        Shared::Poll,
        Shared::Verify,
        Shared::Keys,
        Shared::KeyDist,
        Shared::CaFile,
        Shared::Header,
    ];

    /// Its key in a request (its field of
    /// [`RunRequest`](crate::request::RunRequest)).
    pub fn key(self) -> &'static str {
        match self {
            Shared::Listen => "listen",
            Shared::Mode => "mode",
            Shared::Size => "size",
            Shared::Poll => "poll",
            Shared::Verify => "verify",
            Shared::Keys => "keys",
            Shared::KeyDist => "key_dist",
            Shared::CaFile => "ca_file",
            Shared::Header => "header",
        }
    }
}

/// What a transport's check reads of a run's request: every group of
/// transport flags (a transport refuses the others' by name), the shared
/// flags, and the run's settings that bound a transport's (the target, the
/// connections, the depth). The request's check makes it, so that this
/// module needs nothing of the request's.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    pub flags: TransportFlags,
    pub listen: Option<Endpoint>,
    pub mode: Option<String>,
    pub size: Option<SizeSpec>,
    pub poll: Option<bool>,
    pub verify: Option<bool>,
    pub keys: Option<u64>,
    pub key_dist: Option<KeyDist>,
    pub ca_file: Option<PathBuf>,
    pub header: Vec<String>,
    pub target: Option<Endpoint>,
    pub depth: Option<usize>,
    pub clients: Option<usize>,
    pub conns_per_client: Option<usize>,
    pub rate: Option<Rate>,
    pub count: Option<u64>,
    pub server_cmd: Option<String>,
}

impl Asked {
    /// The mode a transport reads from `--mode`, or its first mode.
    pub(crate) fn mode_of<M: std::str::FromStr + Copy + std::fmt::Display>(
        &self,
        all: &[M],
        kind: TransportKind,
    ) -> Result<M, SpecError> {
        let Some(text) = &self.mode else {
            return Ok(all[0]);
        };
        text.parse().map_err(|_| {
            let names: Vec<String> = all.iter().map(|m| m.to_string()).collect();
            value(
                "--mode",
                text,
                format!(
                    "not a mode of --transport {kind}; use one of {}",
                    names.join(", ")
                ),
            )
        })
    }

    /// `--size` as one size (msgr, shm), between 1 byte and 4GiB-1.
    pub(crate) fn fixed_size(&self, default: u64) -> Result<u64, SpecError> {
        let size = match &self.size {
            None => default,
            Some(SizeSpec::Fixed(n)) => *n,
            Some(s) => {
                return Err(value(
                    "--size",
                    s,
                    "a list or a range of sizes applies to --transport s3 only",
                ));
            }
        };
        if size == 0 || size > u64::from(u32::MAX) {
            return Err(range("--size", size, "1 byte", "4GiB-1"));
        }
        Ok(size)
    }
}

/// The entries of a map, kept as JSON values (a group of flags then reads
/// its own from them).
struct Entries;

impl<'de> serde::de::Visitor<'de> for Entries {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a table of flags")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
            out.insert(k, v);
        }
        Ok(out)
    }
}

/// The keys of a group of flags (or of the whole request), from its clap
/// definition: a flag is declared once, as its field.
pub(crate) fn flag_keys<F: clap::Args>() -> Vec<&'static str> {
    F::augment_args(clap::Command::new("group"))
        .get_arguments()
        .map(|a| &*Box::leak(a.get_id().to_string().into_boxed_str()))
        .collect()
}

impl TransportKind {
    /// Whether it takes the request's flag `key`: one of its own group, or
    /// a shared one it lists. A key no transport takes as its own or as a
    /// shared one (`depth`) is every transport's.
    pub fn takes(self, key: &str) -> bool {
        self.own_flags().contains(&key) || self.about().shared.iter().any(|s| s.key() == key)
    }
}

/// The default listening place of an embedded TCP server: a free loopback
/// port.
pub fn loopback() -> Endpoint {
    Endpoint::Tcp("127.0.0.1:0".into())
}

/// How a transport's spec describes a run (the results, the report and
/// the engine read these, never the transport's own fields).
pub trait Describe {
    /// The mode (msgr, shm), workload (s3), method (http), call (grpc) or
    /// parser (exec), as written on the command line.
    fn mode_name(&self) -> String;
    /// Request (or stream frame) payload; for several sizes the largest.
    fn size_bytes(&self) -> u64;
    /// Response payload: 0 where an operation has none (or no fixed one).
    fn response_size_bytes(&self) -> u64 {
        0
    }
    /// Whether each operation has a response whose latency is measured
    /// (typed calls carry their own per-type figures instead).
    fn has_response(&self) -> bool {
        false
    }
    /// Whether operations are typed calls timed to their answers (S3, HTTP,
    /// gRPC), whose connections keep one call outstanding.
    fn is_calls(&self) -> bool {
        false
    }
    /// The bytes of framing each message carries besides its payload.
    fn frame_header_bytes(&self) -> u64 {
        0
    }
    /// Whether the server sends without waiting for requests (a stream).
    fn is_stream(&self) -> bool {
        false
    }
    /// Whether the run has a request size (a program given no `--size` has
    /// none).
    fn has_size(&self) -> bool {
        true
    }
    /// The sizes as the user wrote them, where that is more than one number
    /// can say (S3's list or range of object sizes).
    fn sizes_as_given(&self) -> Option<String> {
        None
    }
    /// Whether the client's and the server's CPU time say anything about
    /// saturation (shm's spinning and adaptive waits use their CPUs
    /// whatever the load).
    fn cpu_tells_load(&self) -> bool {
        true
    }
    /// The client's threads that carry the load: a worker per client by
    /// default (`open`: an open loop).
    fn client_threads(&self, clients: usize, _connections: usize, _open: bool) -> usize {
        clients
    }
    /// Whether its own command names `{port}` (exec's program: the run
    /// then picks a free port for it).
    fn uses_port(&self) -> bool {
        false
    }
    /// Whether requests go one way, unanswered (latency is the send call's).
    fn one_way(&self) -> bool {
        false
    }
    /// `--depth` when not given (`open`: an open loop).
    fn default_depth(&self, open: bool) -> usize {
        if open { 1024 } else { 1 }
    }
    /// Why `--trace` cannot record this run (None: it can).
    fn untraceable(&self) -> Option<&'static str> {
        None
    }
    /// How a run's headline names the transport, when more than its name
    /// (shm: its channel, wait, clients and rings).
    fn headline(&self) -> Option<String> {
        None
    }
    /// Its own words for a variable of its spec, where a report has them
    /// (None: the spec's value as written).
    fn variable(&self, _key: &str) -> Option<String> {
        None
    }
    /// Why `--repeat` cannot run it again on the same server (None: it can).
    fn unrepeatable(&self) -> Option<&'static str> {
        None
    }
    /// Whether the client spins instead of sleeping (shm's spin wait).
    fn spins(&self) -> bool {
        false
    }
    /// The bytes a run writes before it measures, per endpoint: a read
    /// workload's objects or keys, made by its prepare phase (0: none).
    /// A dry run states them.
    fn prepares_bytes(&self) -> u64 {
        0
    }
    /// What the operations carry, for a run's headline: `4KiB -> 4KiB`,
    /// `1000 objects of 4KiB`, the program and its parser. `depth`: the
    /// run's (HTTP/2's and gRPC's streams per connection).
    fn workload(&self, _depth: usize) -> String {
        let size = crate::units::format_size;
        match self.has_response() {
            true => format!(
                "{} -> {}",
                size(self.size_bytes()),
                size(self.response_size_bytes())
            ),
            false => size(self.size_bytes()),
        }
    }
    /// What names a run's results: `echo-reactor`, `shm-sync-adaptive`,
    /// `s3-get-external`. By default the mode, then the embedded server's
    /// design or `external`.
    fn label(&self, target: &TargetSpec) -> String {
        match target {
            TargetSpec::Embedded { arch, .. } => format!(
                "{}-{}",
                self.mode_name(),
                arch.map_or(String::new(), |a| a.to_string())
            ),
            TargetSpec::External { .. } | TargetSpec::None => {
                format!("{}-external", self.mode_name())
            }
        }
    }
}

macro_rules! registry {
    ($($module:ident $flags:ident : $($kind:ident $name:literal $spec:ident $about:ident),+ ;)*) => {
        impl TransportKind {
            /// What the transport says about itself.
            pub fn about(self) -> &'static About {
                match self {
                    $($(TransportKind::$kind => &$module::$about,)+)*
                }
            }

            /// The keys of its module's own flags (its group's, read from
            /// the group's clap definition).
            pub fn own_flags(self) -> &'static [&'static str] {
                static ALL: std::sync::OnceLock<Vec<(TransportKind, Vec<&'static str>)>> =
                    std::sync::OnceLock::new();
                let all = ALL.get_or_init(|| {
                    vec![$($((TransportKind::$kind, flag_keys::<$module::$flags>()),)+)*]
                });
                all.iter().find(|(k, _)| *k == self).map_or(&[], |(_, v)| v)
            }
        }

        /// The transports' own flags, a group each, as the run's request
        /// holds them (flattened: `--workload` is `workload` in a spec).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, clap::Args)]
        pub struct TransportFlags {
            $(
                #[command(flatten)]
                #[serde(flatten)]
                pub $module: $module::$flags,
            )*
        }

        impl TransportFlags {
            /// Every key of every group, in the registry's order.
            pub fn keys() -> &'static [&'static str] {
                static ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
                ALL.get_or_init(|| {
                    let mut all = Vec::new();
                    $(all.extend(flag_keys::<$module::$flags>());)*
                    all
                })
            }
        }

        /// Read as a struct of every group's keys, so that a request that
        /// flattens it takes exactly those keys (and can refuse the rest);
        /// each group then reads its own.
        impl<'de> Deserialize<'de> for TransportFlags {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TransportFlags, D::Error> {
                use serde::de::Error;
                let all = d.deserialize_struct("TransportFlags", TransportFlags::keys(), Entries)?;
                let all = serde_json::Value::Object(all);
                Ok(TransportFlags {
                    $($module: <$module::$flags>::deserialize(&all).map_err(D::Error::custom)?,)*
                })
            }
        }

        /// What drives the load: one variant per transport, each with its
        /// own modes and settings.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum TransportSpec {
            $($(#[serde(rename = $name)] $kind($module::$spec),)+)*
        }

        impl TransportSpec {
            pub fn kind(&self) -> TransportKind {
                match self {
                    $($(TransportSpec::$kind(_) => TransportKind::$kind,)+)*
                }
            }

            /// Its settings, as they describe a run.
            pub fn describe(&self) -> &dyn Describe {
                match self {
                    $($(TransportSpec::$kind(s) => s,)+)*
                }
            }
        }

        /// The transport's settings of a request, checked by its module.
        pub(crate) fn check(req: &Asked, kind: TransportKind) -> Result<TransportSpec, SpecError> {
            match kind {
                $($(TransportKind::$kind => $module::check(req, kind),)+)*
            }
        }
    };
}

for_each_transport!(registry);

// Each transport's module (`msgr`, `s3`...): its folder's `spec.rs`, by the
// registry's line (a transport is one folder: `transports/src/<t>/`).
#[path = "../../../transports/src/specs.rs"]
mod specs;
pub use specs::*;

impl Endpoint {
    /// The transport this endpoint's scheme names (None: tcp:// and unix:
    /// carry msgr or shm).
    pub fn scheme_transport(&self) -> Option<TransportKind> {
        let scheme = self.scheme();
        TransportKind::ALL
            .iter()
            .copied()
            .find(|k| k.about().schemes.contains(&scheme))
    }
}

impl TransportKind {
    /// Whether the transport has an embedded server (else `--target` is needed).
    pub fn has_embedded_server(self) -> bool {
        self.about().embedded.is_some()
    }
}

impl TransportSpec {
    /// Whether requests are signed, once the credentials are known (only a
    /// transport that signs has the setting).
    pub fn set_signed(&mut self, signed: bool) {
        if let TransportSpec::S3(s) = self {
            s.signed = signed;
        }
    }

    /// See [`Describe::frame_header_bytes`].
    pub fn frame_header_bytes(&self) -> u64 {
        self.describe().frame_header_bytes()
    }

    /// See [`Describe::mode_name`].
    pub fn mode_name(&self) -> String {
        self.describe().mode_name()
    }

    /// See [`Describe::has_response`].
    pub fn has_response(&self) -> bool {
        self.describe().has_response()
    }

    /// See [`Describe::is_calls`].
    pub fn is_calls(&self) -> bool {
        self.describe().is_calls()
    }

    /// See [`Describe::size_bytes`].
    pub fn size_bytes(&self) -> u64 {
        self.describe().size_bytes()
    }

    /// See [`Describe::response_size_bytes`].
    pub fn response_size_bytes(&self) -> u64 {
        self.describe().response_size_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_serde_agrees() {
        for k in TransportKind::ALL {
            assert_eq!(k.name().parse::<TransportKind>(), Ok(*k));
            assert_eq!(
                serde_json::to_string(k).unwrap(),
                format!("\"{}\"", k.name())
            );
        }
        assert!(
            "nope"
                .parse::<TransportKind>()
                .unwrap_err()
                .contains("msgr, shm")
        );
    }
}
