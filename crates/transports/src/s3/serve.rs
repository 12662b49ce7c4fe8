//! The fake S3 server, as `wirebench serve` and a run start it: its flags
//! checked, the server started, and what a run's spec asks of it.

use super::fake;
use crate::server::{Checked, Server, Started, connection_limits, flag, value};
use wirebench_core::error::SpecError;
use wirebench_core::serve::ServeRequest;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_core::topo::CpuList;
use wirebench_load::driver::Credentials;

/// The fake S3 server.
pub static SERVER: Option<Server> = Some(Server {
    own_flag_set,
    check,
    order,
});

/// The flags only the fake S3 server takes.
fn own_flag_set(req: &ServeRequest) -> Option<&'static str> {
    let s3_only = [
        ("--bucket", !req.bucket.is_empty()),
        ("--domain", req.domain.is_some()),
        ("--tls-cert", req.tls_cert.is_some()),
        ("--max-objects", req.max_objects.is_some()),
    ];
    s3_only.iter().find(|(_, set)| *set).map(|(f, _)| *f)
}

fn check(
    req: &ServeRequest,
    cpus: &CpuList,
    creds: Option<Credentials>,
) -> Result<Box<dyn Checked>, SpecError> {
    let listen = match &req.listen {
        None => "127.0.0.1:9000".to_string(),
        Some(Endpoint::Tcp(addr)) => addr.clone(),
        Some(l) => {
            return Err(value(
                "--listen",
                l,
                "the fake S3 server listens on tcp://HOST:PORT",
            ));
        }
    };
    let buckets = if req.bucket.is_empty() {
        vec![wirebench_core::limits::DEFAULT_BUCKET.to_string()]
    } else {
        req.bucket.clone()
    };
    if let Some(b) = buckets
        .iter()
        .find(|b| !wirebench_core::spec::valid_bucket(b))
    {
        return Err(value(
            "--bucket",
            b,
            "a bucket name is 3-63 of a-z, 0-9, '.' and '-'",
        ));
    }
    let tls = match (&req.tls_cert, &req.tls_key) {
        (Some(c), Some(k)) => match crate::tls::server_config(c, k) {
            Ok(t) => Some(t),
            Err(e) => {
                return Err(SpecError::Invalid {
                    flag: "--tls-cert",
                    why: format!("(and --tls-key) {e}"),
                });
            }
        },
        (None, None) => None,
        _ => return Err(flag("--tls-cert", "and --tls-key go together")),
    };
    let max_objects = req.max_objects.unwrap_or(10_000_000);
    if max_objects == 0 {
        return Err(value("--max-objects", 0, "must be at least 1"));
    }
    let (max_conns, idle_timeout) = connection_limits(req)?;
    Ok(Box::new(fake::FakeConfig {
        buckets,
        creds: creds.map(|c| (c.access_key, c.secret_key)),
        domain: req.domain.clone(),
        threads: cpus.len(),
        max_objects,
        tls,
        max_conns,
        idle_timeout,
        ..fake::FakeConfig::new(&listen, "")
    }))
}

impl Checked for fake::FakeConfig {
    fn start(self: Box<Self>, cpus: &CpuList) -> std::io::Result<Started> {
        let signed = self.creds.is_some();
        let tls = self.tls.is_some();
        let buckets = self.buckets.clone();
        let srv = fake::start(&self)?;
        let endpoint = Endpoint::S3 {
            tls,
            addr: srv.addr.to_string(),
            bucket: buckets[0].clone(),
        };
        let note = format!(
            "fake S3 on {endpoint} (buckets {}), CPUs {cpus}, {}",
            buckets.join(", "),
            if signed {
                "SigV4 signatures checked"
            } else {
                "anonymous requests served"
            }
        );
        Ok(Started {
            endpoint,
            note,
            shutdown: Box::new(move || srv.shutdown()),
        })
    }
}

/// The run's bucket exists from the start.
fn order(_: &RunSpec, req: &mut ServeRequest) {
    req.bucket = vec![wirebench_core::limits::DEFAULT_BUCKET.into()];
}
