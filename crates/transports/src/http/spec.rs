//! http: any HTTP/1.1 or HTTP/2 server, by URL, GET or a body of `--size`.

use crate::error::*;
use crate::limits::*;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::transport::{Asked, heading};
use crate::values::*;
use serde::{Deserialize, Serialize};

/// The HTTP version of a run (`--http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1: one request outstanding per connection (no pipelining).
    #[serde(rename = "1.1")]
    H1,
    /// HTTP/2: `--depth` streams per connection; h2c (prior knowledge) on
    /// `http://`, ALPN on `https://`.
    #[serde(rename = "2")]
    H2,
}

text_enum!(HttpVersion, "1.1" => HttpVersion::H1, "2" => HttpVersion::H2);

/// HTTP's own flags: the version, a connection per request. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct HttpFlags {
    /// 1.1 (one request outstanding per connection) or 2 (--depth streams per connection; h2c
    /// with prior knowledge on http://, ALPN on https://). Default: 1.1.
    #[arg(
        long,
        help_heading = heading::HTTP
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpVersion>,
    /// A new connection for each request (Connection: close): its time includes connecting
    /// and the TLS handshake.
    #[arg(
        long,
        num_args = 0,
        default_missing_value = "true",
        help_heading = heading::HTTP
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<bool>,
}

/// The request method of an HTTP run (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HttpMethod {
    Get,
    /// With a body of `--size` bytes.
    Post,
    /// With a body of `--size` bytes.
    Put,
}

impl HttpMethod {
    pub const ALL: [HttpMethod; 3] = [HttpMethod::Get, HttpMethod::Post, HttpMethod::Put];

    /// Whether its requests carry a body.
    pub fn has_body(self) -> bool {
        !matches!(self, HttpMethod::Get)
    }
}

text_enum!(HttpMethod, "get" => HttpMethod::Get, "post" => HttpMethod::Post, "put" => HttpMethod::Put);

/// An HTTP run: which requests, on which connections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpSpec {
    pub method: HttpMethod,
    pub version: HttpVersion,
    /// The body of a POST or PUT (0 for GET).
    pub body_bytes: u64,
    /// Extra request headers, `Name: value` each, sent as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// A new connection for every request (`--churn`): the request's time
    /// includes connecting (and the TLS handshake).
    #[serde(default)]
    pub churn: bool,
    /// Trusted certificates besides the Mozilla roots (`--ca-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<std::path::PathBuf>,
    /// With `{key}` in the target's path: the key numbers put there
    /// (`--keys`), picked `key_dist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u64>,
    #[serde(default = "uniform")]
    pub key_dist: KeyDist,
}

/// Checks an extra HTTP header, `Name: value`: a token for the name, no
/// control character in the value, and none of the headers the transport
/// writes itself.
pub(crate) fn check_header(h: &str) -> Result<(), String> {
    let Some((name, v)) = h.split_once(':') else {
        return Err("a header is 'Name: value'".into());
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("'{name}' is not a header name"));
    }
    if v.chars().any(|c| c.is_control() && c != '\t') {
        return Err("the value has a control character".into());
    }
    let own = ["host", "content-length", "transfer-encoding", "connection"];
    if own.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!("{name} is written by the transport itself"));
    }
    Ok(())
}

/// The most HTTP/2 streams a connection keeps outstanding (`--depth`).
pub const MAX_HTTP2_STREAMS: usize = 1024;

/// What an HTTP target's path says where the key number goes.
pub const KEY_PLACEHOLDER: &str = "{key}";

impl Asked {
    /// `--depth` as HTTP/2 streams per connection: within bounds, and,
    /// with the connections, within the run's connection limit.
    pub(crate) fn check_streams(&self) -> Result<(), SpecError> {
        if let Some(d) = self.depth.filter(|d| *d > MAX_HTTP2_STREAMS) {
            return Err(range("--depth", d, 1, MAX_HTTP2_STREAMS));
        }
        let streams = self.depth.unwrap_or(1);
        let conns = self.clients.unwrap_or(1) * self.conns_per_client.unwrap_or(1);
        if conns.saturating_mul(streams) > MAX_CONNECTIONS {
            return Err(value(
                "--depth",
                streams,
                format!(
                    "--clients x --conns-per-client x --depth (HTTP/2 streams) at most {MAX_CONNECTIONS}"
                ),
            ));
        }
        Ok(())
    }

    /// The settings of the HTTP transport.
    pub(crate) fn http(&self) -> Result<TransportSpec, SpecError> {
        let tls = match &self.target {
            Some(Endpoint::Http { tls, .. }) => *tls,
            None => {
                return Err(flag(
                    "--target",
                    "--transport http has no embedded server: give the server's URL, e.g. --target http://127.0.0.1:8080/index.html",
                ));
            }
            Some(t) => {
                return Err(value(
                    "--target",
                    t,
                    "an HTTP target is written http://HOST[:PORT]/PATH or https://…",
                ));
            }
        };
        if self.ca_file.is_some() && !tls {
            return Err(flag("--ca-file", "applies to an https:// target"));
        }
        let method = self.mode_of(&HttpMethod::ALL, TransportKind::Http)?;
        let body_bytes = match (&self.size, method.has_body()) {
            (None, false) => 0,
            (Some(s), false) => {
                return Err(value(
                    "--size",
                    s,
                    "a GET has no body; --size is the body of --mode post or put",
                ));
            }
            (_, true) => self.fixed_size(1024)?,
        };
        let version = self.flags.http.http.unwrap_or(HttpVersion::H1);
        let churn = self.flags.http.churn == Some(true);
        match self.depth {
            Some(d) if d > 1 && churn => {
                return Err(invalid(
                    "--depth",
                    "--churn opens a connection for each request, one at a time: add connections with --conns-per-client",
                ));
            }
            Some(d) if d > 1 && version == HttpVersion::H1 => {
                return Err(invalid(
                    "--depth",
                    "an HTTP/1.1 connection has one request outstanding (no pipelining): add connections with --conns-per-client, or use --http 2 for streams",
                ));
            }
            _ => {}
        }
        self.check_streams()?;
        for h in &self.header {
            check_header(h).map_err(|why| value("--header", h, why))?;
        }
        let templated = matches!(&self.target, Some(Endpoint::Http { path, .. }) if path.contains(KEY_PLACEHOLDER));
        let keys = match (templated, self.keys) {
            (false, None) if self.key_dist.is_none() => None,
            (false, _) => {
                return Err(flag(
                    if self.keys.is_some() {
                        "--keys"
                    } else {
                        "--key-dist"
                    },
                    "needs {key} in the target's path, e.g. http://HOST:PORT/objects/{key}",
                ));
            }
            (true, k) => {
                let k = k.unwrap_or(10_000);
                if !(1..=MAX_KV_KEYS).contains(&k) {
                    return Err(range("--keys", k, 1, MAX_KV_KEYS));
                }
                Some(k)
            }
        };
        Ok(TransportSpec::Http(HttpSpec {
            keys,
            key_dist: self.key_dist.unwrap_or(KeyDist::Uniform),
            method,
            version,
            body_bytes,
            headers: self.header.clone(),
            churn,
            ca_file: self.ca_file.clone(),
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[
        Shared::Mode,
        Shared::Size,
        Shared::Poll,
        Shared::Keys,
        Shared::KeyDist,
        Shared::CaFile,
        Shared::Header,
    ],
    schemes: &["http", "https"],
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.http()
}

impl Describe for HttpSpec {
    fn workload(&self, depth: usize) -> String {
        let mut d = match self.version {
            HttpVersion::H1 => "HTTP/1.1".to_string(),
            HttpVersion::H2 => format!("HTTP/2, {depth} stream(s) per conn"),
        };
        if self.method.has_body() {
            d = format!(
                "bodies of {}, {d}",
                crate::units::format_size(self.body_bytes)
            );
        }
        if self.churn {
            d.push_str(", a new connection per request");
        }
        if let Some(k) = self.keys {
            d.push_str(&format!(", {k} keys ({}) in the path", self.key_dist));
        }
        d
    }

    fn mode_name(&self) -> String {
        self.method.to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.body_bytes
    }
    fn is_calls(&self) -> bool {
        true
    }
    // HTTP/2 streams are connections of the engine's: one unless asked.
    fn default_depth(&self, _: bool) -> usize {
        1
    }
    fn label(&self, _: &TargetSpec) -> String {
        format!(
            "http{}-{}{}",
            if self.version == HttpVersion::H2 {
                "2"
            } else {
                ""
            },
            self.method,
            if self.churn { "-churn" } else { "" }
        )
    }
}
