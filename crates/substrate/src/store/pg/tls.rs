//! TLS to the server, as libpq's `sslmode` says (the store URL's
//! `sslmode=` and `sslrootcert=`, else `PGSSLMODE` and `PGSSLROOTCERT`):
//!
//! * `disable`: never; `allow`, `prefer` (the default): when the server
//!   offers it, its certificate not checked; `require`: always, the
//!   certificate checked against a root certificate only when there is one
//!   (as libpq: then it is `verify-ca`);
//! * `verify-ca`: always, the certificate signed by the root certificate;
//!   `verify-full`: that, and issued for the host connected to.
//!
//! The root certificate is `sslrootcert` (a PEM file, or `system` for the
//! system's roots), else `~/.postgresql/root.crt` when it exists. TLS is
//! `rustls` (no C library).

use crate::error::{Error, Result};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// libpq's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// What a store's URL and the environment ask of TLS.
#[derive(Clone, Debug)]
pub(crate) struct TlsAsk {
    mode: Mode,
    /// The root certificate: a file, or `system`.
    root: Option<String>,
}

impl TlsAsk {
    /// From the URL's `sslmode` and `sslrootcert` (else the environment's).
    pub(crate) fn new(sslmode: Option<&str>, sslrootcert: Option<&str>) -> Result<TlsAsk> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let root = sslrootcert
            .map(str::to_owned)
            .or_else(|| env("PGSSLROOTCERT"));
        // (as libpq: the system's roots mean the name is checked too)
        let system = root.as_deref() == Some("system");
        let mode = match sslmode
            .map(str::to_owned)
            .or_else(|| env("PGSSLMODE"))
            .as_deref()
        {
            None if system => Mode::VerifyFull,
            Some(weaker) if system && weaker != "verify-full" => {
                return Err(Error::InvalidRequest(format!(
                    "sslrootcert=system checks the server's name: use it with \
                     sslmode=verify-full, not {weaker}"
                )));
            }
            None | Some("prefer") => Mode::Prefer,
            Some("disable") => Mode::Disable,
            Some("allow") => Mode::Allow,
            Some("require") => Mode::Require,
            Some("verify-ca") => Mode::VerifyCa,
            Some("verify-full") => Mode::VerifyFull,
            Some(other) => {
                return Err(Error::InvalidRequest(format!(
                    "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, \
                     verify-full"
                )));
            }
        };
        let root = root.or_else(|| {
            let home = std::env::var_os("HOME")?;
            let default = PathBuf::from(home).join(".postgresql/root.crt");
            default
                .exists()
                .then(|| default.to_string_lossy().into_owned())
        });
        Ok(TlsAsk { mode, root })
    }

    /// The mode as `tokio-postgres` takes it (it knows three).
    pub(crate) fn ssl_mode(&self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode;
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The connector: its certificate checks as the mode says.
    pub(crate) fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match (self.mode, &self.root) {
            (Mode::VerifyFull, root) => self.webpki(root.as_deref(), &provider)?,
            (Mode::VerifyCa, root) | (Mode::Require, root @ Some(_)) => {
                Arc::new(ChainOnly(self.webpki(root.as_deref(), &provider)?))
            }
            _ => Arc::new(Unchecked(Arc::clone(&provider))),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Storage(format!("cannot set up TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }

    /// A verifier of the chain (and the name) against the root.
    fn webpki(
        &self,
        root: Option<&str>,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<WebPkiServerVerifier>> {
        let mut roots = RootCertStore::empty();
        match root {
            Some("system") => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            }
            Some(file) => {
                let certs = CertificateDer::pem_file_iter(file)
                    .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                    .map_err(|e| {
                        Error::InvalidRequest(format!(
                            "cannot read the root certificate {file} (sslrootcert): {e}"
                        ))
                    })?;
                for cert in certs {
                    roots.add(cert).map_err(|e| {
                        Error::InvalidRequest(format!("{file} (sslrootcert) is not usable: {e}"))
                    })?;
                }
            }
            None => {
                return Err(Error::InvalidRequest(
                    "sslmode verify-ca and verify-full need a root certificate: sslrootcert=FILE \
                     in the store's URL (or PGSSLROOTCERT, or ~/.postgresql/root.crt; \
                     sslrootcert=system for the system's)"
                        .into(),
                ));
            }
        }
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
            .build()
            .map_err(|e| Error::InvalidRequest(format!("cannot check certificates: {e}")))
    }
}

/// Any certificate (libpq's `prefer` and `require` without a root): the
/// link is private from those who only listen, not from the one who
/// answers.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The chain checked, the name not (libpq's `verify-ca`).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
