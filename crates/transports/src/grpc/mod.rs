//! gRPC: unary and server-streaming calls of one method over the HTTP
//! transport's HTTP/2 connections (`--depth` streams per connection). The
//! request is given in protobuf's JSON mapping and encoded once with the
//! method's message types (prost-reflect), which come from a descriptor set
//! (`--proto-set`) or from the server's reflection service (v1, else
//! v1alpha). A call's outcome is its `grpc-status`: anything but 0 is a
//! failure counted by its code ("grpc-status 3 INVALID_ARGUMENT"); answers
//! are counted, not decoded.

use crate::http::{HttpClient, grpc_code_name};
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
pub(crate) mod driver;

/// No embedded server: a run measures the real one (`--target`).
pub static SERVER: Option<crate::server::Server> = None;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use wirebench_core::spec::{Endpoint, GrpcSpec};

/// The most bytes a reflection answer may take.
const MAX_REFLECTION_BYTES: usize = 16 << 20;
/// The most files reflection may fetch for one service.
const MAX_REFLECTION_FILES: usize = 256;

/// A gRPC message in its length-prefixed frame (uncompressed).
pub fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + message.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(message.len()).expect("checked: at most 4MiB"));
    b.put_slice(message);
    b.freeze()
}

/// The messages of a gRPC body; an error names what is wrong.
fn unframe(mut body: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 5 {
            return Err("a message frame cut short".into());
        }
        if body[0] != 0 {
            return Err("a compressed message (none was asked for)".into());
        }
        let n = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        let rest = &body[5..];
        if rest.len() < n {
            return Err("a message cut short".into());
        }
        out.push(&rest[..n]);
        body = &rest[n..];
    }
    Ok(out)
}

/// The reflection service's request (only the fields used).
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// The reflection services tried, newest first.
const REFLECTION: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// One reflection request and its answer's files (none when the server
/// does not know what was asked); Ok(None) when the server has no such
/// reflection service.
async fn reflect(
    client: &HttpClient,
    service: &str,
    req: &ReflectionRequest,
) -> Result<Option<Vec<FileDescriptorProto>>, String> {
    let (status, headers, body, trailers) = client
        .fetch(service, frame(&req.encode_to_vec()), MAX_REFLECTION_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let code = [&trailers, &headers]
        .iter()
        .find_map(|h| h.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok());
    match (status.as_u16(), code) {
        (200, Some(0)) => {}
        (200, Some(12)) | (404, _) => return Ok(None),
        (200, Some(c)) => {
            return Err(format!(
                "reflection answered grpc-status {c} {}",
                grpc_code_name(c)
            ));
        }
        (s, _) => return Err(format!("reflection answered HTTP {s}")),
    }
    let mut files = Vec::new();
    for m in unframe(&body).map_err(|e| format!("reflection's answer: {e}"))? {
        let r = ReflectionResponse::decode(m).map_err(|e| format!("reflection's answer: {e}"))?;
        if let Some(e) = r.error_response {
            // 5: NOT_FOUND, the symbol or file is unknown.
            if e.error_code == 5 {
                return Ok(Some(Vec::new()));
            }
            return Err(format!(
                "reflection: {} (code {})",
                e.error_message, e.error_code
            ));
        }
        for f in r
            .file_descriptor_response
            .map(|f| f.file_descriptor_proto)
            .unwrap_or_default()
        {
            files.push(
                FileDescriptorProto::decode(f.as_slice())
                    .map_err(|e| format!("reflection sent a bad file descriptor: {e}"))?,
            );
        }
    }
    Ok(Some(files))
}

/// The descriptors of `symbol` (a service's full name) and of every file it
/// depends on, asked of the server's reflection service.
async fn by_reflection(client: &HttpClient, symbol: &str) -> Result<DescriptorPool, String> {
    let mut service = None;
    let mut files: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    for s in REFLECTION {
        let req = ReflectionRequest {
            file_containing_symbol: Some(symbol.to_string()),
            ..Default::default()
        };
        if let Some(got) = reflect(client, s, &req).await? {
            if got.is_empty() {
                return Err(format!(
                    "no service {symbol} on the server (its reflection service does not know it)"
                ));
            }
            service = Some(s);
            files.extend(got.into_iter().map(|f| (f.name().to_string(), f)));
            break;
        }
    }
    let Some(service) = service else {
        return Err(
            "the server has no reflection service (grpc.reflection.v1 or v1alpha): give --proto-set FILE (protoc --descriptor_set_out=FILE --include_imports)"
                .into(),
        );
    };
    // Fetch the dependencies the answers did not include.
    loop {
        let missing: BTreeSet<String> = files
            .values()
            .flat_map(|f| f.dependency.iter())
            .filter(|d| !files.contains_key(*d))
            .cloned()
            .collect();
        let Some(name) = missing.into_iter().next() else {
            break;
        };
        if files.len() >= MAX_REFLECTION_FILES {
            return Err(format!(
                "reflection: more than {MAX_REFLECTION_FILES} files for {symbol}"
            ));
        }
        let req = ReflectionRequest {
            file_by_filename: Some(name.clone()),
            ..Default::default()
        };
        let got = reflect(client, service, &req).await?.unwrap_or_default();
        if !got.iter().any(|f| f.name() == name) {
            return Err(format!("reflection did not send {name}"));
        }
        files.extend(got.into_iter().map(|f| (f.name().to_string(), f)));
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files.into_values())
        .map_err(|e| format!("the descriptors reflection sent: {e}"))?;
    Ok(pool)
}

/// The method `call` (`package.Service/Method`) in `pool`.
fn method(pool: &DescriptorPool, call: &str, source: &str) -> Result<MethodDescriptor, String> {
    let (svc, name) = call
        .split_once('/')
        .expect("checked: package.Service/Method");
    let Some(service) = pool.get_service_by_name(svc) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(format!(
            "--call {call}: no service {svc} in {source} (it has: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    let Some(m) = service.methods().find(|m| m.name() == name) else {
        let known: Vec<String> = service.methods().map(|m| m.name().to_string()).collect();
        return Err(format!(
            "--call {call}: {svc} has no method {name} (it has: {})",
            known.join(", ")
        ));
    };
    if m.is_client_streaming() {
        return Err(format!(
            "--call {call}: a client-streaming method; wirebench calls unary and server-streaming methods"
        ));
    }
    Ok(m)
}

/// A method ready to be called: its client (the framed request made once).
pub struct Prepared {
    pub client: HttpClient,
    pub server_streaming: bool,
    /// Where the message types came from ("the descriptor set x.pb", "the
    /// server's reflection service").
    pub source: String,
}

/// Finds the method's types, encodes `--data` with them, and makes the
/// client of its calls.
pub async fn prepare(
    endpoint: &Endpoint,
    spec: &GrpcSpec,
    op_timeout: Duration,
) -> Result<Prepared, String> {
    let path = format!("/{}", spec.call);
    // A client for reflection first: the same connection settings.
    let bare = HttpClient::grpc(
        endpoint,
        &path,
        Bytes::new(),
        &spec.headers,
        spec.ca_file.as_deref(),
        op_timeout,
    )?;
    let (pool, source) = match &spec.proto_set {
        Some(f) => {
            let bytes = wirebench_core::files::read_regular(f, wirebench_core::files::INPUT_MAX)
                .map_err(|e| format!("--proto-set {}: {e}", f.display()))?;
            let pool = DescriptorPool::decode(bytes.as_slice()).map_err(|e| {
                format!(
                    "--proto-set {}: not a descriptor set (protoc --descriptor_set_out=FILE --include_imports): {e}",
                    f.display()
                )
            })?;
            (pool, format!("the descriptor set {}", f.display()))
        }
        None => {
            let svc = spec.call.split_once('/').map_or("", |(s, _)| s);
            (
                by_reflection(&bare, svc).await?,
                "the server's reflection service".to_string(),
            )
        }
    };
    let m = method(&pool, &spec.call, &source)?;
    let mut de = serde_json::Deserializer::from_str(&spec.data);
    let msg = DynamicMessage::deserialize(m.input(), &mut de)
        .map_err(|e| format!("--data: not a {} message: {e}", m.input().full_name()))?;
    let body = frame(&msg.encode_to_vec());
    let client = HttpClient::grpc(
        endpoint,
        &path,
        body,
        &spec.headers,
        spec.ca_file.as_deref(),
        op_timeout,
    )?;
    Ok(Prepared {
        client,
        server_streaming: m.is_server_streaming(),
        source,
    })
}

/// One call before any load: Ok(None) when it succeeded, Ok(Some(cause))
/// for an error status the run would count, Err when the run cannot go
/// on (no connection, the method not implemented, no gRPC answer).
pub async fn preflight(p: &Prepared) -> Result<Option<String>, String> {
    let c = &p.client;
    let (status, headers, body, trailers) = c
        .fetch(c.path(), c.body(), MAX_REFLECTION_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    if status.as_u16() != 200 {
        return Err(format!(
            "{} answered HTTP {status}: not a gRPC server?",
            c.target()
        ));
    }
    let code = [&trailers, &headers]
        .iter()
        .find_map(|h| h.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .ok_or_else(|| format!("{}: an answer without grpc-status", c.target()))?;
    let message = [&trailers, &headers]
        .iter()
        .find_map(|h| h.get("grpc-message"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    match code {
        0 => {
            unframe(&body).map_err(|e| format!("{}: {e}", c.target()))?;
            Ok(None)
        }
        12 => Err(format!(
            "{}: the server does not implement it (grpc-status 12 UNIMPLEMENTED{})",
            c.target(),
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        )),
        c => Ok(Some(format!(
            "grpc-status {c} {}{}",
            grpc_code_name(c),
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_and_bad_ones_are_named() {
        let mut two = frame(b"abc").to_vec();
        two.extend_from_slice(&frame(b""));
        assert_eq!(unframe(&two).unwrap(), vec![&b"abc"[..], &b""[..]]);
        assert!(unframe(&two[..6]).unwrap_err().contains("cut short"));
        assert!(
            unframe(&[1, 0, 0, 0, 0])
                .unwrap_err()
                .contains("compressed")
        );
        assert!(unframe(&[0, 0, 0]).unwrap_err().contains("cut short"));
    }
}
