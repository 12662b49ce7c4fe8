//! TLS for `s3s://` and `https://` targets and the fake server (rustls with the ring
//! provider): the client trusts the Mozilla roots (webpki-roots) plus, with
//! `--ca-file`, the certificates of a PEM file (a private CA, a self-signed
//! test endpoint).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::Path;
use std::sync::Arc;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = wirebench_core::files::read_regular(path, wirebench_core::files::INPUT_MAX)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// What a client needs to open TLS connections to one endpoint.
#[derive(Clone)]
pub struct ClientTls {
    pub connector: tokio_rustls::TlsConnector,
    /// The name the server's certificate must carry (SNI).
    pub name: ServerName<'static>,
}

impl ClientTls {
    /// TLS offering HTTP/1.1 (ALPN).
    pub fn new(host: &str, ca_file: Option<&Path>) -> Result<ClientTls, String> {
        Self::with_alpn(host, ca_file, vec![b"http/1.1".to_vec()])
    }

    /// TLS offering the protocols `alpn`, in order of preference.
    pub fn with_alpn(
        host: &str,
        ca_file: Option<&Path>,
        alpn: Vec<Vec<u8>>,
    ) -> Result<ClientTls, String> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(f) = ca_file {
            for c in certs(f)? {
                roots.add(c).map_err(|e| format!("{}: {e}", f.display()))?;
            }
        }
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.alpn_protocols = alpn;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("'{host}' is not a TLS server name: {e}"))?;
        Ok(ClientTls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(cfg)),
            name,
        })
    }
}

/// The fake server's TLS: a certificate chain and its key, PEM files.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain = certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
