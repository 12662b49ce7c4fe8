//! grpc: a gRPC server's unary or server-streaming method, called with
//! one JSON request message.

use crate::error::*;
use crate::transport::http::check_header;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::transport::{Asked, heading};
use crate::values::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// gRPC's own flags: the method, its request, the message types. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct GrpcFlags {
    /// The method, package.Service/Method (unary or server-streaming).
    #[arg(long, help_heading = heading::GRPC)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The request message in protobuf's JSON mapping. Default: {}.
    #[arg(long, help_heading = heading::GRPC)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The message types: a descriptor set (protoc --descriptor_set_out=FILE --include_imports).
    /// Default: the server's reflection service.
    #[arg(long, help_heading = heading::GRPC)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto_set: Option<PathBuf>,
}

/// A gRPC run: one method, called with one request message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrpcSpec {
    /// `package.Service/Method` (`--call`).
    pub call: String,
    /// The request message, in protobuf's JSON mapping (`--data`).
    pub data: String,
    /// The message types: a descriptor set (`--proto-set`, as `protoc
    /// --descriptor_set_out --include_imports` writes it), else the
    /// server's reflection service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto_set: Option<std::path::PathBuf>,
    /// Extra request metadata, `name: value` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// Trusted certificates besides the Mozilla roots (`--ca-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<std::path::PathBuf>,
}

impl Asked {
    /// The settings of the gRPC transport.
    pub(crate) fn grpc(&self) -> Result<TransportSpec, SpecError> {
        let http_only = [
            ("--http", self.flags.http.http.is_some()),
            ("--churn", self.flags.http.churn == Some(true)),
            ("--mode", self.mode.is_some()),
            ("--size", self.size.is_some()),
        ];
        if let Some((f, _)) = http_only.iter().find(|(_, set)| *set) {
            return Err(flag(
                f,
                "does not apply to --transport grpc (the request is --data, the method --call)",
            ));
        }
        let tls = match &self.target {
            Some(Endpoint::Grpc { tls, .. }) => *tls,
            None => {
                return Err(flag(
                    "--target",
                    "--transport grpc has no embedded server: give the server's address, e.g. --target grpc://127.0.0.1:50051",
                ));
            }
            Some(t) => {
                return Err(value(
                    "--target",
                    t,
                    "a gRPC target is written grpc://HOST:PORT or grpcs://HOST:PORT",
                ));
            }
        };
        if self.ca_file.is_some() && !tls {
            return Err(flag("--ca-file", "applies to a grpcs:// target"));
        }
        let Some(call) = &self.flags.grpc.call else {
            return Err(flag(
                "--call",
                "--transport grpc needs the method, e.g. --call helloworld.Greeter/SayHello",
            ));
        };
        let ident =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let ok = call
            .split_once('/')
            .is_some_and(|(svc, m)| svc.split('.').all(ident) && ident(m));
        if !ok {
            return Err(value("--call", call, "a method is package.Service/Method"));
        }
        let data = self.flags.grpc.data.clone().unwrap_or_else(|| "{}".into());
        if data.len() > 4 << 20 {
            return Err(value(
                "--data",
                format!("{} bytes", data.len()),
                "at most 4MiB of JSON",
            ));
        }
        if serde_json::from_str::<serde_json::Value>(&data).map_or(true, |v| !v.is_object()) {
            return Err(value(
                "--data",
                &data,
                "a request message is a JSON object, e.g. '{\"name\": \"x\"}'",
            ));
        }
        self.check_streams()?;
        for h in &self.header {
            check_header(h).map_err(|why| value("--header", h, why))?;
        }
        Ok(TransportSpec::Grpc(GrpcSpec {
            call: call.clone(),
            data,
            proto_set: self.flags.grpc.proto_set.clone(),
            headers: self.header.clone(),
            ca_file: self.ca_file.clone(),
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[Shared::Poll, Shared::Header, Shared::CaFile],
    schemes: &["grpc", "grpcs"],
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.grpc()
}

impl Describe for GrpcSpec {
    fn workload(&self, depth: usize) -> String {
        format!(
            "request {}, {depth} stream(s) per conn{}",
            if self.data.chars().count() <= 60 {
                self.data.clone()
            } else {
                format!(
                    "{}... ({})",
                    self.data.chars().take(57).collect::<String>(),
                    crate::units::format_size(self.data.len() as u64)
                )
            },
            self.proto_set
                .as_ref()
                .map_or(String::new(), |p| format!(", types from {}", p.display()))
        )
    }

    fn mode_name(&self) -> String {
        self.call.clone()
    }
    fn size_bytes(&self) -> u64 {
        self.data.len() as u64
    }
    fn is_calls(&self) -> bool {
        true
    }
    // Streams are connections of the engine's: one unless asked.
    fn default_depth(&self, _: bool) -> usize {
        1
    }
    fn label(&self, _: &TargetSpec) -> String {
        format!(
            "grpc-{}",
            self.call
                .rsplit('/')
                .next()
                .unwrap_or("call")
                .to_ascii_lowercase()
        )
    }
}
