//! The value types of settings that the request, the transports and the
//! checked spec share: endpoints, targets, sizes, key distributions, the
//! observed server. (`spec` re-exports them with the run's spec.)

use crate::topo::CpuList;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The design of a reference messenger server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// Shared-nothing: one event loop pinned per core, each accepting and
    /// serving its own connections.
    Reactor,
    /// One shared work-stealing pool of threads serving all connections.
    Pool,
}

text_enum!(Arch, "reactor" => Arch::Reactor, "pool" => Arch::Pool);

text_enum!(Arrival, "uniform" => Arrival::Uniform, "poisson" => Arrival::Poisson);

/// How open-loop requests are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    Uniform,
    Poisson,
}

/// A messenger endpoint: `tcp://HOST:PORT` or `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Endpoint {
    /// `host:port`, as written (resolved when connecting).
    Tcp(String),
    Unix(std::path::PathBuf),
    /// `s3://HOST:PORT/BUCKET` (`s3s://` with TLS).
    S3 {
        tls: bool,
        /// `host:port`, as written.
        addr: String,
        bucket: String,
    },
    /// `redis://[USER@]HOST[:PORT][/DB]` (the password, if any, comes from
    /// $REDISCLI_AUTH, never from the URL).
    Redis {
        /// `host:port`, as written (port 6379 when none is).
        addr: String,
        db: u32,
        user: Option<String>,
    },
    /// `http://HOST[:PORT][/PATH]`, or `https://` for TLS (ports 80 and 443
    /// when none is).
    Http {
        tls: bool,
        /// `host:port`, as written (with the default port when none is).
        addr: String,
        /// The request target: a path starting with `/`, with its query.
        path: String,
    },
    /// `grpc://HOST:PORT`, or `grpcs://` for TLS.
    Grpc {
        tls: bool,
        /// `host:port`, as written.
        addr: String,
    },
    /// `SCHEME://HOST:PORT` of a transport whose scheme is its own
    /// (`udp://`): the transport that lists the scheme in its `About`
    /// reads it; a scheme no transport lists is refused by the check.
    Addr {
        scheme: String,
        /// `host:port`, as written.
        addr: String,
    },
}

impl Endpoint {
    /// The endpoint's scheme as written: `tcp`, `unix`, `s3s`, `https`...
    pub fn scheme(&self) -> &str {
        match self {
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Unix(_) => "unix",
            Endpoint::S3 { tls, .. } => {
                if *tls {
                    "s3s"
                } else {
                    "s3"
                }
            }
            Endpoint::Redis { .. } => "redis",
            Endpoint::Http { tls, .. } => {
                if *tls {
                    "https"
                } else {
                    "http"
                }
            }
            Endpoint::Grpc { tls, .. } => {
                if *tls {
                    "grpcs"
                } else {
                    "grpc"
                }
            }
            Endpoint::Addr { scheme, .. } => scheme,
        }
    }

    /// `host:port` of an endpoint reached over IP: TCP, or a transport's
    /// own (`udp://`) (None: a Unix socket).
    pub fn tcp_addr(&self) -> Option<&str> {
        match self {
            Endpoint::Tcp(a)
            | Endpoint::S3 { addr: a, .. }
            | Endpoint::Redis { addr: a, .. }
            | Endpoint::Http { addr: a, .. }
            | Endpoint::Grpc { addr: a, .. }
            | Endpoint::Addr { addr: a, .. } => Some(a),
            Endpoint::Unix(_) => None,
        }
    }

    /// Whether `host[:port]` gives the port (`[::1]` and `h` do not).
    pub fn port_given(addr: &str) -> bool {
        match addr.rsplit_once(':') {
            Some((h, p)) => !p.is_empty() && (!h.starts_with('[') || h.ends_with(']')),
            None => false,
        }
    }

    /// The endpoint with `port` where its own scheme's address leaves the
    /// port out (None: it gives one, or is not of a transport's own scheme).
    pub fn with_default_port(&self, port: u16) -> Option<Endpoint> {
        match self {
            Endpoint::Addr { scheme, addr } if !Endpoint::port_given(addr) => {
                Some(Endpoint::Addr {
                    scheme: scheme.clone(),
                    addr: format!("{addr}:{port}"),
                })
            }
            _ => None,
        }
    }

    /// Whether the endpoint is on this host: a Unix socket, or a loopback
    /// address (`127.0.0.0/8`, `::1`, `localhost`).
    pub fn on_this_host(&self) -> bool {
        let Some(addr) = self.tcp_addr() else {
            return true;
        };
        let host = match addr.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
            _ => addr,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// `HOST[:PORT]` with the default port added when none is given; None when
/// the host is empty or the port is not a number.
fn host_port(text: &str, default_port: u16) -> Option<String> {
    if text.is_empty() || text.contains('/') || text.contains('@') {
        return None;
    }
    // An IPv6 address is bracketed: [::1]:6379 or [::1].
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (h, after) = rest.split_once(']')?;
            (format!("[{h}]"), after.strip_prefix(':'))
        }
        None => match text.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (text.to_string(), None),
        },
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok()?,
        None => default_port,
    };
    // Port 0 is refused by the request's check unless a --server-cmd gets
    // a free port for it.
    (!host.is_empty() && host != "[]").then(|| format!("{host}:{port}"))
}

impl FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("tcp://") {
            let ok = rest
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !ok {
                return Err(format!(
                    "'{s}': a TCP endpoint is tcp://HOST:PORT, e.g. tcp://127.0.0.1:9000"
                ));
            }
            Ok(Endpoint::Tcp(rest.to_string()))
        } else if let Some(rest) = s.strip_prefix("unix:") {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest.is_empty() {
                return Err(format!(
                    "'{s}': a Unix endpoint is unix:PATH, e.g. unix:/tmp/wb.sock"
                ));
            }
            Ok(Endpoint::Unix(rest.into()))
        } else if let Some((tls, rest)) = s
            .strip_prefix("s3://")
            .map(|r| (false, r))
            .or_else(|| s.strip_prefix("s3s://").map(|r| (true, r)))
        {
            let bad = || {
                format!(
                    "'{s}': an S3 endpoint is s3://HOST:PORT/BUCKET (s3s:// for TLS), e.g. s3://127.0.0.1:9000/bench"
                )
            };
            let (addr, bucket) = rest.split_once('/').ok_or_else(bad)?;
            let bucket = bucket.trim_end_matches('/');
            let addr_ok = addr
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !addr_ok || !valid_bucket(bucket) {
                return Err(bad());
            }
            Ok(Endpoint::S3 {
                tls,
                addr: addr.to_string(),
                bucket: bucket.to_string(),
            })
        } else if let Some(rest) = s.strip_prefix("redis://") {
            let bad = |why: &str| {
                format!(
                    "'{s}': {why}; a Redis endpoint is redis://[USER@]HOST[:PORT][/DB], e.g. redis://127.0.0.1:6379/0"
                )
            };
            let (user, rest) = match rest.split_once('@') {
                Some((u, _)) if u.contains(':') => {
                    return Err(bad(
                        "a password is never written in the URL (it would be stored with the results): set $REDISCLI_AUTH",
                    ));
                }
                Some((u, r)) if !u.is_empty() => (Some(u.to_string()), r),
                Some(_) => return Err(bad("an empty user name")),
                None => (None, rest),
            };
            let (addr, db) = match rest.split_once('/') {
                Some((a, "")) => (a, 0),
                Some((a, d)) => (
                    a,
                    d.parse::<u32>()
                        .map_err(|_| bad("the database is a number"))?,
                ),
                None => (rest, 0),
            };
            let addr = host_port(addr, 6379).ok_or_else(|| bad("no valid HOST[:PORT]"))?;
            Ok(Endpoint::Redis { addr, db, user })
        } else if let Some((tls, rest)) = s
            .strip_prefix("http://")
            .map(|r| (false, r))
            .or_else(|| s.strip_prefix("https://").map(|r| (true, r)))
        {
            let bad = |why: &str| {
                format!(
                    "'{s}': {why}; an HTTP endpoint is http://HOST[:PORT][/PATH] (https:// for TLS), e.g. http://127.0.0.1:8080/index.html"
                )
            };
            let (authority, path) = match rest.find(['/', '?']) {
                Some(i) => (&rest[..i], rest[i..].to_string()),
                None => (rest, "/".to_string()),
            };
            let path = if path.starts_with('?') {
                format!("/{path}")
            } else {
                path
            };
            if authority.contains('@') {
                return Err(bad(
                    "credentials are never written in the URL (they would be stored with the results): use --header",
                ));
            }
            if path.contains('#') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
                return Err(bad(
                    "the path has a fragment, a space or a control character",
                ));
            }
            let addr = host_port(authority, if tls { 443 } else { 80 })
                .ok_or_else(|| bad("no valid HOST[:PORT]"))?;
            Ok(Endpoint::Http { tls, addr, path })
        } else if let Some((tls, rest)) = s
            .strip_prefix("grpc://")
            .map(|r| (false, r))
            .or_else(|| s.strip_prefix("grpcs://").map(|r| (true, r)))
        {
            let rest = rest.strip_suffix('/').unwrap_or(rest);
            let addr = rest
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok_and(|p| p != 0))
                .then(|| host_port(rest, 0))
                .flatten()
                .ok_or_else(|| {
                    format!("'{s}': a gRPC endpoint is grpc://HOST:PORT (grpcs:// for TLS), e.g. grpc://127.0.0.1:50051; the method is --call")
                })?;
            Ok(Endpoint::Grpc { tls, addr })
        } else if let Some((scheme, rest)) = s.split_once("://")
            && !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_lowercase())
            && scheme
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            // A transport's own scheme: HOST[:PORT] (a port left out is
            // the transport's default, filled in by the check).
            let rest = rest.strip_suffix('/').unwrap_or(rest);
            let addr = match Endpoint::port_given(rest) {
                true => host_port(rest, 0),
                // A valid HOST, kept without a port.
                false => host_port(rest, 1).map(|_| rest.to_string()),
            }
            .ok_or_else(|| format!("'{s}': a {scheme} endpoint is {scheme}://HOST[:PORT]"))?;
            Ok(Endpoint::Addr {
                scheme: scheme.to_string(),
                addr,
            })
        } else {
            Err(format!(
                "'{s}' is not an endpoint: write tcp://HOST:PORT, unix:PATH, s3://HOST:PORT/BUCKET, http://HOST:PORT/PATH, grpc://HOST:PORT, redis://HOST:PORT, memcached://HOST:PORT or a transport's SCHEME://HOST:PORT"
            ))
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "tcp://{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::S3 { tls, addr, bucket } => {
                write!(f, "{}://{addr}/{bucket}", if *tls { "s3s" } else { "s3" })
            }
            Endpoint::Redis { addr, db, user } => {
                let user = user.as_ref().map_or(String::new(), |u| format!("{u}@"));
                write!(f, "redis://{user}{addr}/{db}")
            }
            Endpoint::Http { tls, addr, path } => {
                write!(f, "{}://{addr}{path}", if *tls { "https" } else { "http" })
            }
            Endpoint::Grpc { tls, addr } => {
                write!(f, "{}://{addr}", if *tls { "grpcs" } else { "grpc" })
            }
            Endpoint::Addr { scheme, addr } => write!(f, "{scheme}://{addr}"),
        }
    }
}

impl From<Endpoint> for String {
    fn from(e: Endpoint) -> String {
        e.to_string()
    }
}

impl TryFrom<String> for Endpoint {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// Whether `b` is a valid S3 bucket name (3-63 of a-z, 0-9, '.', '-';
/// starting and ending with a letter or digit).
pub fn valid_bucket(b: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&b.len())
        && b.chars().all(ok_char)
        && edge(b.chars().next())
        && edge(b.chars().last())
}

/// Object sizes: one, a list (objects take them in turn), or a range
/// (log-uniform, so small and large sizes are equally represented by
/// order of magnitude). An object's size follows from its number alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeSpec {
    Fixed(u64),
    List(Vec<u64>),
    Range { min: u64, max: u64 },
}

impl SizeSpec {
    /// Parses `4KiB`, `4KiB,1MiB`, or `1KiB..1MiB`.
    pub fn parse(text: &str) -> Result<SizeSpec, String> {
        let one = |t: &str| crate::units::parse_size(t.trim()).map_err(|e| e.to_string());
        if let Some((a, b)) = text.split_once("..") {
            let (min, max) = (one(a)?, one(b)?);
            if min == 0 || min >= max {
                return Err(format!(
                    "'{text}': a size range is MIN..MAX with 0 < MIN < MAX"
                ));
            }
            Ok(SizeSpec::Range { min, max })
        } else if text.contains(',') {
            let v = text.split(',').map(one).collect::<Result<Vec<_>, _>>()?;
            Ok(SizeSpec::List(v))
        } else {
            Ok(SizeSpec::Fixed(one(text)?))
        }
    }

    /// The size of object number `i`.
    pub fn size_of(&self, i: u64) -> u64 {
        match self {
            SizeSpec::Fixed(n) => *n,
            SizeSpec::List(v) => {
                v[usize::try_from(i % v.len() as u64).expect("less than the length")]
            }
            SizeSpec::Range { min, max } => {
                let u = (mix64(i) >> 11) as f64 / (1u64 << 53) as f64;
                let (lo, hi) = ((*min as f64).ln(), (*max as f64).ln());
                crate::units::whole((lo + u * (hi - lo)).exp().round()).clamp(*min, *max)
            }
        }
    }

    /// The largest size.
    pub fn max(&self) -> u64 {
        match self {
            SizeSpec::Fixed(n) => *n,
            SizeSpec::List(v) => v.iter().copied().max().unwrap_or(0),
            SizeSpec::Range { max, .. } => *max,
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::units::format_size as fs;
        match self {
            SizeSpec::Fixed(n) => write!(f, "{}", fs(*n)),
            SizeSpec::List(v) => {
                let v: Vec<String> = v.iter().map(|n| fs(*n)).collect();
                write!(f, "{}", v.join(","))
            }
            SizeSpec::Range { min, max } => write!(f, "{}..{}", fs(*min), fs(*max)),
        }
    }
}

impl FromStr for SizeSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<SizeSpec, String> {
        SizeSpec::parse(s)
    }
}

/// splitmix64's finalizer: a well-mixed 64-bit hash of `x`.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The server a run measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum TargetSpec {
    /// A reference server that `run` starts itself, as a separate pinned process.
    Embedded {
        /// The msgr server's design (None for shm, which has one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arch: Option<Arch>,
        cpus: CpuList,
        poll: bool,
        listen: Endpoint,
    },
    /// Something already listening.
    External { endpoint: Endpoint },
    /// No server: the user's program (exec) runs alone, or against
    /// whatever it reaches itself.
    None,
}

/// A server the run observes without embedding it: found by its PIDs or
/// its cgroup, or started by the run from a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedSpec {
    pub source: ServerSource,
    /// The cpuset it was given: a command is pinned to it; a server found
    /// by PID or cgroup is judged against it (None: its affinity when the
    /// run begins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuList>,
}

/// Where an observed server's processes come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerSource {
    /// `--server-pid` (repeatable).
    Pids(Vec<u32>),
    /// `--server-cgroup`: every process of a cgroup v2 directory.
    Cgroup(std::path::PathBuf),
    /// `--server-cmd`, run by `sh -c` in a process group of its own, with
    /// its placeholders as given (filled in when it starts).
    Command {
        cmd: String,
        /// When it is ready (None: when the target accepts a connection).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ready: Option<Ready>,
    },
}

/// `--server-ready`: when a started server is ready for the load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ready {
    /// `tcp:PORT`: 127.0.0.1:PORT accepts a connection (PORT may be `{port}`).
    Tcp(String),
    /// `line:REGEX`: a line of its stdout or stderr matches.
    Line(String),
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ready::Tcp(p) => write!(f, "tcp:{p}"),
            Ready::Line(r) => write!(f, "line:{r}"),
        }
    }
}

impl std::str::FromStr for Ready {
    type Err = String;
    fn from_str(s: &str) -> Result<Ready, String> {
        match s.split_once(':') {
            Some(("tcp", p)) if p == "{port}" || p.parse::<u16>().is_ok_and(|p| p > 0) => {
                Ok(Ready::Tcp(p.into()))
            }
            Some(("tcp", p)) => Err(format!("'{p}' is not a port (1-65535, or {{port}})")),
            Some(("line", r)) => regex_lite::Regex::new(r)
                .map(|_| Ready::Line(r.into()))
                .map_err(|e| format!("'{r}' is not a regular expression: {e}")),
            _ => Err("give tcp:PORT or line:REGEX".into()),
        }
    }
}

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopSpec {
    DurationNs(u64),
    /// Total operations completed in the measured phase, over all connections.
    Count(u64),
}

pub(crate) fn uniform() -> KeyDist {
    KeyDist::Uniform
}

/// How a run picks the key of each operation (`--key-dist`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyDist {
    /// Every key as likely.
    Uniform,
    /// Zipf with this exponent (0.99 is YCSB's): key 0 the most popular.
    Zipf(f64),
    /// Each connection walks the keys in order from its own start.
    Sequential,
}

impl FromStr for KeyDist {
    type Err = String;
    /// `uniform`, `sequential`, `zipf` (exponent 0.99) or `zipf:S`.
    fn from_str(s: &str) -> Result<KeyDist, String> {
        match s {
            "uniform" => Ok(KeyDist::Uniform),
            "sequential" => Ok(KeyDist::Sequential),
            "zipf" => Ok(KeyDist::Zipf(0.99)),
            _ => {
                let exp = s.strip_prefix("zipf:").and_then(|e| e.parse::<f64>().ok());
                match exp {
                    Some(e) if e > 0.0 && e <= 10.0 => Ok(KeyDist::Zipf(e)),
                    _ => Err(format!(
                        "'{s}': a key distribution is uniform, sequential, zipf or zipf:S with 0 < S <= 10"
                    )),
                }
            }
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Sequential => f.write_str("sequential"),
            KeyDist::Zipf(e) => write!(f, "zipf:{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::*;

    #[test]
    fn http_endpoints() {
        let r = |s: &str| s.parse::<Endpoint>();
        let http = |tls, addr: &str, path: &str| {
            Ok(Endpoint::Http {
                tls,
                addr: addr.into(),
                path: path.into(),
            })
        };
        assert_eq!(r("http://127.0.0.1"), http(false, "127.0.0.1:80", "/"));
        assert_eq!(
            r("http://h:8080/a/b?c=1&d"),
            http(false, "h:8080", "/a/b?c=1&d")
        );
        assert_eq!(r("https://[::1]/x"), http(true, "[::1]:443", "/x"));
        assert_eq!(r("http://h:1?q"), http(false, "h:1", "/?q"));
        for bad in [
            "http://",
            "http:///path",
            "http://h:99999/",
            "http://u:p@h/",
            "http://h/a b",
            "http://h/a#frag",
        ] {
            assert!(r(bad).is_err(), "{bad}");
        }
        for e in ["http://h:80/", "https://h:8443/a?b=c"] {
            assert_eq!(r(e).unwrap().to_string(), e);
        }
        assert_eq!(
            r("https://h/")
                .unwrap()
                .scheme_transport()
                .map(|k| k.name()),
            Some("http")
        );
    }

    #[test]
    fn key_value_endpoints_and_settings() {
        let r = |s: &str| s.parse::<Endpoint>();
        assert_eq!(
            r("redis://127.0.0.1"),
            Ok(Endpoint::Redis {
                addr: "127.0.0.1:6379".into(),
                db: 0,
                user: None
            })
        );
        assert_eq!(
            r("redis://bench@[::1]:7000/3"),
            Ok(Endpoint::Redis {
                addr: "[::1]:7000".into(),
                db: 3,
                user: Some("bench".into())
            })
        );
        // A transport's own scheme, its port left out: the check gives
        // it the transport's default.
        let m = r("memcached://localhost").unwrap();
        assert_eq!(
            m,
            Endpoint::Addr {
                scheme: "memcached".into(),
                addr: "localhost".into()
            }
        );
        assert_eq!(
            m.with_default_port(11211).unwrap().to_string(),
            "memcached://localhost:11211"
        );
        assert_eq!(
            r("memcached://[::1]").unwrap().to_string(),
            "memcached://[::1]"
        );
        assert_eq!(r("memcached://h:5").unwrap().with_default_port(11211), None);
        for bad in [
            "redis://",
            "redis://h:notaport",
            "redis://h:1/x",
            "redis://u:pw@h:1",
            "memcached://",
            "memcached://h:65536",
        ] {
            assert!(r(bad).is_err(), "{bad}");
        }
        assert!(r("redis://u:pw@h:1").unwrap_err().contains("REDISCLI_AUTH"));
        for e in ["redis://u@h:1/2", "memcached://h:5"] {
            assert_eq!(r(e).unwrap().to_string(), e);
        }
        assert_eq!(
            r("redis://h:1")
                .unwrap()
                .scheme_transport()
                .map(|k| k.name()),
            Some("redis")
        );
        assert_eq!("zipf".parse(), Ok(KeyDist::Zipf(0.99)));
        assert_eq!("zipf:1.2".parse(), Ok(KeyDist::Zipf(1.2)));
        assert!("zipf:0".parse::<KeyDist>().is_err());
        assert!("zipf:x".parse::<KeyDist>().is_err());
        assert_eq!("1:10".parse(), Ok(Ratio(1, 10)));
        assert_eq!("0:1".parse(), Ok(Ratio(0, 1)));
        for bad in ["0:0", "1", "a:b", "4294967295:1"] {
            assert!(bad.parse::<Ratio>().is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoints() {
        assert_eq!(
            "tcp://127.0.0.1:9000".parse(),
            Ok(Endpoint::Tcp("127.0.0.1:9000".into()))
        );
        assert_eq!(
            "tcp://[::1]:9000".parse(),
            Ok(Endpoint::Tcp("[::1]:9000".into()))
        );
        assert_eq!("unix:/tmp/x".parse(), Ok(Endpoint::Unix("/tmp/x".into())));
        for bad in [
            "127.0.0.1:9000",
            "tcp://127.0.0.1",
            "tcp://:80",
            "unix:",
            "ftp://x:",
            "ftp://x:99999",
            "ftp://:1",
            "FTP://x:1",
            "f_p://x:1",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad}");
        }
        // A transport's own scheme: read as HOST:PORT, refused by the
        // check when no transport lists it.
        let e: Endpoint = "ftp://x:1".parse().unwrap();
        assert_eq!(
            e,
            Endpoint::Addr {
                scheme: "ftp".into(),
                addr: "x:1".into()
            }
        );
        assert_eq!(e.to_string(), "ftp://x:1");
        assert_eq!(e.scheme(), "ftp");
        assert_eq!(Endpoint::Unix("/a".into()).to_string(), "unix:/a");
    }

    #[test]
    fn enums_round_trip_as_text() {
        for m in MsgrMode::ALL {
            assert_eq!(m.to_string().parse::<MsgrMode>(), Ok(m));
        }
        for m in ShmMode::ALL {
            assert_eq!(m.to_string().parse::<ShmMode>(), Ok(m));
        }
        for m in S3Workload::ALL {
            assert_eq!(m.to_string().parse::<S3Workload>(), Ok(m));
        }
        for w in [Wait::Spin, Wait::Futex, Wait::Adaptive] {
            assert_eq!(w.to_string().parse::<Wait>(), Ok(w));
        }
        for c in [Channel::Shm, Channel::Unix, Channel::Tcp, Channel::Pipe] {
            assert_eq!(c.to_string().parse::<Channel>(), Ok(c));
        }
        assert!(
            "mt".parse::<ClientsAs>()
                .unwrap_err()
                .contains("threads, processes")
        );
        assert!(
            "sink"
                .parse::<ShmMode>()
                .unwrap_err()
                .contains("sync, async, nores, stream")
        );
    }
}
