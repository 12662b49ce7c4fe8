//! s3: S3 over HTTP/1.1 (SigV4), against any endpoint or the embedded fake
//! server: workloads, object sizes, multipart and ranged parts.

use crate::error::*;
use crate::limits;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec, loopback};
use crate::transport::{Asked, heading};
use crate::units::Bytes;
use crate::values::*;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One S3 operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum S3Op {
    Get,
    Put,
    Head,
    Delete,
    List,
}

text_enum!(S3Op, "get" => S3Op::Get, "put" => S3Op::Put, "head" => S3Op::Head, "delete" => S3Op::Delete, "list" => S3Op::List);

/// An S3 workload (`--workload`): one operation type, or a weighted mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum S3Workload {
    Get,
    Put,
    Head,
    Delete,
    List,
    Mixed,
}

impl S3Workload {
    /// The one operation of the workload (None: mixed).
    pub fn op(self) -> Option<S3Op> {
        match self {
            S3Workload::Get => Some(S3Op::Get),
            S3Workload::Put => Some(S3Op::Put),
            S3Workload::Head => Some(S3Op::Head),
            S3Workload::Delete => Some(S3Op::Delete),
            S3Workload::List => Some(S3Op::List),
            S3Workload::Mixed => None,
        }
    }
}

impl S3Workload {
    pub const ALL: [S3Workload; 6] = [
        S3Workload::Get,
        S3Workload::Put,
        S3Workload::Head,
        S3Workload::Delete,
        S3Workload::List,
        S3Workload::Mixed,
    ];
}

text_enum!(S3Workload, "get" => S3Workload::Get, "put" => S3Workload::Put, "head" => S3Workload::Head,
    "delete" => S3Workload::Delete, "list" => S3Workload::List, "mixed" => S3Workload::Mixed);

/// How S3 requests name the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlStyle {
    /// `http://host/bucket/key`.
    Path,
    /// `http://bucket.host/key` (the connection still goes to the endpoint's address).
    Virtual,
}

/// Where S3 requests carry their SigV4 signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum S3Sign {
    /// The `Authorization` header, as the AWS SDKs and S3 benchmark tools
    /// sign (the default).
    Header,
    /// The query string (presigned URLs).
    Query,
}

text_enum!(UrlStyle, "path" => UrlStyle::Path, "virtual" => UrlStyle::Virtual);

text_enum!(S3Sign, "header" => S3Sign::Header, "query" => S3Sign::Query);

/// The weights of a mixed S3 workload: `get=70,put=20,delete=10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<(S3Op, u32)>);

impl Mix {
    /// 70% GET, 20% PUT, 10% DELETE.
    pub fn default_mix() -> Mix {
        Mix(vec![(S3Op::Get, 70), (S3Op::Put, 20), (S3Op::Delete, 10)])
    }
}

impl FromStr for Mix {
    type Err = String;
    /// Parses `get=70,put=20,delete=10`; zero weights are dropped.
    fn from_str(s: &str) -> Result<Mix, String> {
        let mut v = Vec::new();
        for part in s.split(',') {
            let (op, w) = part.split_once('=').ok_or_else(|| {
                format!("'{part}': write OP=WEIGHT, e.g. get=70,put=20,delete=10")
            })?;
            let op: S3Op = op.trim().parse().map_err(|_| {
                format!(
                    "'{}': the operations are get, put, head, delete, list",
                    op.trim()
                )
            })?;
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| format!("'{w}': a weight is a whole number"))?;
            if v.iter().any(|(o, _)| *o == op) {
                return Err(format!("'{op}' appears twice"));
            }
            if w > 0 {
                v.push((op, w));
            }
        }
        if v.is_empty() {
            return Err(format!("'{s}': every weight is 0"));
        }
        Ok(Mix(v))
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(o, w)| format!("{o}={w}")).collect();
        f.write_str(&parts.join(","))
    }
}

/// S3's own flags: the workload, the objects, signing, multipart. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct S3Flags {
    /// get, put, head, delete (each object once; the run ends when all are deleted), list (a
    /// page of up to 1000 keys) or mixed (see --mix). Default: get. Time to first byte (TTFB):
    /// GET, from the request's start to the first byte of the body; PUT (and HEAD, DELETE),
    /// to the response headers, which come after the whole body was sent; LIST, to the first
    /// byte of the body. Open loop (--rate): from the intended start.
    #[arg(long, value_parser = s3_workload, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<S3Workload>,
    /// Weights of the operations of --workload mixed: get=70,put=20,delete=10 (of get, put,
    /// head, delete, list).
    #[arg(long, help_heading = heading::S3)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub mix: Option<Mix>,
    /// Objects the workload works on: created by a prepare phase for reads (timed and
    /// reported apart), overwritten by puts. Default: 100.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<u64>,
    /// path (`http://host/bucket/key`) or virtual (`http://bucket.host/key`; the connection still
    /// goes to the target's HOST:PORT). Default: path.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_style: Option<UrlStyle>,
    /// Where the SigV4 signature goes: header (the Authorization header, as the AWS SDKs and
    /// S3 benchmark tools sign) or query (presigned URLs). Default: header.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<S3Sign>,
    /// SigV4 region. Default: $AWS_REGION, else us-east-1.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Objects larger than this are uploaded in parts. Default: 64MiB.
    #[arg(long, help_heading = heading::S3)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub multipart_threshold: Option<Bytes>,
    /// Part size of multipart uploads and of --get-parts ranged reads. Default: 16MiB.
    #[arg(long, help_heading = heading::S3)]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::units::text"
    )]
    pub part_size: Option<Bytes>,
    /// Parts of one multipart upload sent at once (each on a connection of its own). Default: 1.
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub put_parts: Option<usize>,
    /// Read objects larger than --part-size as ranged GETs of a part, this many at once (each
    /// on a connection of its own). Default: 1 (one streamed GET).
    #[arg(long, help_heading = heading::S3)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_parts: Option<usize>,
    /// Keep the objects the run created (default: deleted at the end).
    #[arg(
        long,
        num_args = 0,
        default_missing_value = "true",
        help_heading = heading::S3
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<bool>,
    /// Create the target bucket if it does not exist.
    #[arg(
        long,
        num_args = 0,
        default_missing_value = "true",
        help_heading = heading::S3
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_bucket: Option<bool>,
}

/// `--workload`, whose values are S3's operations: the message says so, a
/// user of another transport being after `--mode`.
fn s3_workload(s: &str) -> Result<S3Workload, String> {
    s.parse().map_err(|e| {
        format!("{e}: these are S3's operations (--transport s3); the other transports take --mode")
    })
}

/// The S3 transport's settings. Credentials are never part of a spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct S3Spec {
    pub workload: S3Workload,
    /// Weights of the operations of `--workload mixed` (empty otherwise).
    pub mix: Vec<(S3Op, u32)>,
    /// Objects the workload works on (created by the prepare phase for reads).
    pub objects: u64,
    pub sizes: SizeSpec,
    /// Keys are `<prefix><number>`.
    pub prefix: String,
    pub style: UrlStyle,
    pub region: String,
    /// Objects larger than this are uploaded in parts of `part_size`.
    pub multipart_threshold: u64,
    pub part_size: u64,
    /// Parts uploaded at once (extra connections per connection).
    pub put_parts: usize,
    /// GETs: ranged reads of `part_size` at once (1: one streamed GET).
    pub get_parts: usize,
    /// Keep the objects the run created.
    pub keep: bool,
    /// Requests are signed (credentials were given).
    pub signed: bool,
    /// Where the signature goes (results before it: the query string).
    #[serde(default = "query_signed")]
    pub sign: S3Sign,
    /// Which object a GET, HEAD or PUT works on (`--key-dist`).
    #[serde(default = "uniform")]
    pub key_dist: KeyDist,
}

fn query_signed() -> S3Sign {
    S3Sign::Query
}

impl Asked {
    /// Where an S3 run goes: an s3:// target (virtual-host URLs need its
    /// host name), the fake server on TCP.
    fn s3_places(&self) -> Result<(), SpecError> {
        match &self.target {
            None | Some(Endpoint::S3 { .. }) => {}
            Some(t) => {
                return Err(value(
                    "--target",
                    t,
                    "an S3 target is s3://HOST:PORT/BUCKET",
                ));
            }
        }
        if self.flags.s3.url_style == Some(UrlStyle::Virtual) && self.target.is_none() {
            return Err(flag(
                "--url-style",
                "virtual needs a host name: the embedded server listens on an IP address; use --target s3://localhost:PORT/BUCKET with `serve --transport s3 --domain localhost`",
            ));
        }
        if let Some(l @ (Endpoint::Unix(_) | Endpoint::S3 { .. })) = &self.listen {
            return Err(value(
                "--listen",
                l,
                "the fake S3 server listens on tcp://HOST:PORT",
            ));
        }
        Ok(())
    }

    /// Multipart transfers: the threshold and part size, within S3's
    /// limits for the largest of `sizes`, and the parts in flight.
    fn s3_parts(&self, sizes: &SizeSpec) -> Result<(u64, u64), SpecError> {
        let threshold = self.flags.s3.multipart_threshold.map_or(64 << 20, |b| b.0);
        let part = self.flags.s3.part_size.map_or(16 << 20, |b| b.0);
        if part < limits::S3_MIN_PART {
            return Err(value(
                "--part-size",
                part,
                "S3 parts are at least 5MiB (all but the last)",
            ));
        }
        let parts = sizes.max().div_ceil(part);
        if sizes.max() > threshold && parts > limits::S3_MAX_PARTS {
            return Err(value(
                "--size",
                sizes,
                format!(
                    "{parts} parts of --part-size {part}, above S3's limit of {}; raise --part-size",
                    limits::S3_MAX_PARTS
                ),
            ));
        }
        if threshold > 5 << 30 {
            return Err(value(
                "--multipart-threshold",
                threshold,
                "S3 takes single PUTs of at most 5GiB",
            ));
        }
        for (name, n) in [
            ("--put-parts", self.flags.s3.put_parts),
            ("--get-parts", self.flags.s3.get_parts),
        ] {
            if let Some(n) = n.filter(|n| !(1..=64).contains(n)) {
                return Err(range(name, n, 1, 64));
            }
        }
        Ok((threshold, part))
    }

    /// The S3 transport's settings. `signed` says whether requests will be
    /// signed as far as the request knows (embedded server: always; an
    /// external one: the runner sets it once it has the credentials).
    pub(crate) fn s3(&self) -> Result<TransportSpec, SpecError> {
        if self.keys.is_some() {
            return Err(flag(
                "--keys",
                "for --transport s3, the objects are --objects",
            ));
        }
        let key_dist = self.key_dist.unwrap_or(KeyDist::Uniform);
        if key_dist != KeyDist::Uniform
            && !matches!(
                self.flags.s3.workload,
                None | Some(S3Workload::Get | S3Workload::Head | S3Workload::Put)
            )
        {
            return Err(flag(
                "--key-dist",
                "applies to --workload get, head and put (mixed spreads each connection's own objects; delete takes each once)",
            ));
        }
        if let Some(m) = &self.mode {
            return Err(value(
                "--mode",
                m,
                "an S3 run takes --workload get|put|head|delete|list|mixed",
            ));
        }
        if self.depth.is_some_and(|d| d != 1) {
            return Err(invalid(
                "--depth",
                "an S3 connection has one request outstanding (HTTP/1.1); add connections with --clients or --conns-per-client",
            ));
        }
        self.s3_places()?;
        let workload = self.flags.s3.workload.unwrap_or(S3Workload::Get);
        let mix = match (workload, &self.flags.s3.mix) {
            (S3Workload::Mixed, None) => Mix::default_mix().0,
            (S3Workload::Mixed, Some(m)) => m.0.clone(),
            (_, Some(_)) => return Err(flag("--mix", "applies to --workload mixed only")),
            (_, None) => Vec::new(),
        };
        let objects = self.flags.s3.objects.unwrap_or(100);
        if !(1..=limits::S3_MAX_OBJECTS).contains(&objects) {
            return Err(range("--objects", objects, 1, limits::S3_MAX_OBJECTS));
        }
        let connections = (self.clients.unwrap_or(1) * self.conns_per_client.unwrap_or(1)) as u64;
        if workload == S3Workload::Mixed && objects < connections {
            return Err(value(
                "--objects",
                objects,
                format!(
                    "the mixed workload gives each connection objects of its own (so that no connection reads what another deletes): at least one per connection, {connections}"
                ),
            ));
        }
        let sizes = self.size.clone().unwrap_or(SizeSpec::Fixed(4096));
        let (threshold, part) = self.s3_parts(&sizes)?;
        if let Some(ca) = &self.ca_file {
            if !matches!(self.target, Some(Endpoint::S3 { tls: true, .. })) {
                return Err(flag("--ca-file", "applies to s3s:// (TLS) targets"));
            }
            if !ca.is_file() {
                return Err(value("--ca-file", ca.display(), "no such file"));
            }
        }
        Ok(TransportSpec::S3(S3Spec {
            workload,
            mix,
            objects,
            sizes,
            style: self.flags.s3.url_style.unwrap_or(UrlStyle::Path),
            sign: self.flags.s3.sign.unwrap_or(S3Sign::Header),
            region: self
                .flags
                .s3
                .region
                .clone()
                .unwrap_or_else(|| "us-east-1".into()),
            multipart_threshold: threshold,
            part_size: part,
            put_parts: self.flags.s3.put_parts.unwrap_or(1),
            get_parts: self.flags.s3.get_parts.unwrap_or(1),
            keep: self.flags.s3.keep.unwrap_or(false),
            signed: self.target.is_none(),
            key_dist,
            prefix: format!(
                "wirebench/{:x}-{}/",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis(),
                std::process::id()
            ),
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[
        Shared::Listen,
        Shared::Size,
        Shared::Verify,
        Shared::KeyDist,
        Shared::CaFile,
    ],
    schemes: &["s3", "s3s"],
    embedded: Some(loopback),
    signs: true,
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.s3()
}

impl S3Spec {
    /// Whether the workload reads objects that a prepare phase first
    /// creates (a mix of puts only does not).
    pub fn needs_prepare(&self) -> bool {
        match self.workload {
            S3Workload::Put => false,
            S3Workload::Mixed => self.mix.iter().any(|(m, _)| *m != S3Op::Put),
            _ => true,
        }
    }
}

impl Describe for S3Spec {
    fn prepares_bytes(&self) -> u64 {
        match self.needs_prepare() {
            true => (0..self.objects).map(|i| self.sizes.size_of(i)).sum(),
            false => 0,
        }
    }

    fn sizes_as_given(&self) -> Option<String> {
        Some(self.sizes.to_string())
    }

    fn workload(&self, _depth: usize) -> String {
        if self.workload == S3Workload::Mixed {
            let mix: Vec<String> = self.mix.iter().map(|(m, w)| format!("{m}={w}")).collect();
            return format!(
                "{} objects of {} ({})",
                self.objects,
                self.sizes,
                mix.join(",")
            );
        }
        format!(
            "{} objects of {}{}",
            self.objects,
            self.sizes,
            if self.key_dist == KeyDist::Uniform {
                String::new()
            } else {
                format!(" picked {}", self.key_dist)
            }
        )
    }

    fn mode_name(&self) -> String {
        self.workload.to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.sizes.max()
    }
    fn is_calls(&self) -> bool {
        true
    }
    fn unrepeatable(&self) -> Option<&'static str> {
        (self.workload == S3Workload::Delete)
            .then_some("--workload delete deletes each object once; repeat the whole run instead")
    }
    fn label(&self, target: &TargetSpec) -> String {
        let external = matches!(target, TargetSpec::External { .. });
        format!(
            "s3-{}{}",
            self.workload,
            if external { "-external" } else { "" }
        )
    }
}

impl crate::transport::TransportSpec {
    /// The s3 spec of a s3 run.
    pub fn s3(&self) -> Option<&S3Spec> {
        match self {
            crate::transport::TransportSpec::S3(s) => Some(s),
            _ => None,
        }
    }
}

impl From<S3Spec> for crate::transport::TransportSpec {
    fn from(s: S3Spec) -> Self {
        crate::transport::TransportSpec::S3(s)
    }
}
