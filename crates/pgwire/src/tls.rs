//! TLS with libpq's `sslmode` semantics, on rustls.
//!
//! | sslmode | chain checked | host name checked |
//! |---|---|---|
//! | `allow`, `prefer` | no | no |
//! | `require` | only if a root certificate file exists | no |
//! | `verify-ca` | yes | no |
//! | `verify-full` | yes | yes |
//!
//! rustls always checks the host name along with the chain, so the
//! verification is our own [`ServerCertVerifier`]: it calls webpki's chain
//! check, then, for `verify-full` only, the name check. The name check
//! follows libpq: the subject alternative names decide when the certificate
//! has any; otherwise the subject's common name is compared with the host name
//! (with a leading `*.` wildcard matching one label), which webpki alone would
//! refuse.
//!
//! The root certificates come from `sslrootcert`, else
//! `~/.postgresql/root.crt`; `sslrootcert=system` loads the system bundle
//! (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`) and, as in
//! libpq, demands `verify-full`. A client certificate comes from `sslcert`
//! and `sslkey` (default `~/.postgresql/postgresql.crt` / `.key`) when the
//! certificate file exists.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::Digest;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::conninfo::{Config, SslMode};
use crate::error::Error;

/// A ready TLS client configuration for one [`Config`], built once and
/// shared by every connection made from it.
pub(crate) fn client_config(config: &Config) -> Result<Option<Arc<ClientConfig>>, Error> {
    if config.sslmode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let root_file = root_cert_file(config);
    let is_system = config.sslrootcert.as_deref() == Some(Path::new("system"));
    if is_system && config.sslmode != SslMode::VerifyFull {
        return Err(Error::config(format!(
            "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
            mode_name(config.sslmode)
        )));
    }
    let check = match config.sslmode {
        SslMode::VerifyFull => Check::ChainAndHost,
        SslMode::VerifyCa => Check::Chain,
        SslMode::Require if root_file.exists() => Check::Chain,
        _ => Check::Nothing,
    };
    let roots = match check {
        Check::Nothing => None,
        _ => Some(Arc::new(load_roots(&root_file, is_system)?)),
    };
    if check != Check::Nothing {
        if let Some(crl) = config.sslcrl.as_deref().filter(|p| p.exists()) {
            return Err(Error::config(format!(
                "certificate revocation lists are not supported yet (sslcrl=\"{}\")",
                crl.display()
            )));
        }
    }
    let verifier = Arc::new(PgVerifier {
        roots,
        check,
        provider: provider.clone(),
    });
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::tls)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut tls = match client_identity(config)? {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(Error::tls)?,
        None => builder.with_no_client_auth(),
    };
    tls.enable_sni = config.sslsni;
    tls.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(Arc::new(tls)))
}

pub(crate) fn mode_name(mode: SslMode) -> &'static str {
    match mode {
        SslMode::Disable => "disable",
        SslMode::Allow => "allow",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

fn home_file(name: &str) -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".postgresql").join(name)
}

fn root_cert_file(config: &Config) -> PathBuf {
    match config.sslrootcert.as_deref() {
        Some(p) if p == Path::new("system") => std::env::var_os("SSL_CERT_FILE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt")),
        Some(p) => p.to_path_buf(),
        None => home_file("root.crt"),
    }
}

fn load_roots(file: &Path, is_system: bool) -> Result<RootCertStore, Error> {
    if !file.exists() {
        return Err(Error::config(format!(
            "root certificate file \"{}\" does not exist\nEither provide the file, use the \
             system's trusted roots with sslrootcert=system, or change sslmode to disable \
             server certificate verification.",
            file.display()
        )));
    }
    let bad = |e: &dyn std::fmt::Display| {
        Error::config(format!(
            "could not read root certificate file \"{}\": {e}",
            file.display()
        ))
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(&e))? {
        let cert = cert.map_err(|e| bad(&e))?;
        // A system bundle may hold certificates webpki cannot use; skip those.
        if let Err(e) = roots.add(cert) {
            if !is_system {
                return Err(bad(&e));
            }
        }
    }
    if roots.is_empty() {
        return Err(bad(&"no certificates found"));
    }
    Ok(roots)
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn client_identity(config: &Config) -> Result<Option<Identity>, Error> {
    let cert_file = config
        .sslcert
        .clone()
        .unwrap_or_else(|| home_file("postgresql.crt"));
    if !cert_file.exists() {
        return Ok(None);
    }
    let key_file = config
        .sslkey
        .clone()
        .unwrap_or_else(|| home_file("postgresql.key"));
    let certs = CertificateDer::pem_file_iter(&cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::config(format!(
                "could not load client certificate file \"{}\": {e}",
                cert_file.display()
            ))
        })?;
    check_key_permissions(&key_file)?;
    let key = PrivateKeyDer::from_pem_file(&key_file).map_err(|e| {
        let encrypted = std::fs::read(&key_file)
            .map(|b| memchr::memmem::find(&b, b"ENCRYPTED").is_some())
            .unwrap_or(false);
        let why = if encrypted {
            "encrypted private keys are not supported".to_string()
        } else {
            e.to_string()
        };
        Error::config(format!(
            "could not load private key file \"{}\": {why}",
            key_file.display()
        ))
    })?;
    Ok(Some((certs, key)))
}

/// libpq refuses a private key others can read: 0600 or stricter, or 0640
/// when owned by root.
fn check_key_permissions(key_file: &Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(key_file).map_err(|e| {
        Error::config(format!(
            "certificate present, but not private key file \"{}\": {}",
            key_file.display(),
            e.kind()
        ))
    })?;
    let mode = meta.mode() & 0o777;
    let too_open = if meta.uid() == 0 {
        mode & 0o037 != 0
    } else {
        mode & 0o077 != 0
    };
    if too_open {
        return Err(Error::config(format!(
            "private key file \"{}\" has group or world access; file must have permissions \
             u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) \
             or less if owned by root",
            key_file.display()
        )));
    }
    Ok(())
}

/// The name the server certificate must carry: the host name, or the
/// address when only `hostaddr` is known.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
    ServerName::try_from(host.to_owned())
        .map_err(|_| Error::tls_msg(format!("invalid host name \"{host}\" for TLS")))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndHost,
}

#[derive(Debug)]
struct PgVerifier {
    roots: Option<Arc<RootCertStore>>,
    check: Check,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PgVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            return Ok(ServerCertVerified::assertion());
        };
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        if self.check == Check::ChainAndHost {
            check_host_name(end_entity, &cert, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// libpq's host name rule: subject alternative names (DNS and IP) when the
/// certificate has any, else the common name.
fn check_host_name(
    der: &CertificateDer<'_>,
    parsed: &ParsedCertificate<'_>,
    server_name: &ServerName<'_>,
) -> Result<(), rustls::Error> {
    let host = server_name.to_str();
    let (_, x509) = X509Certificate::from_der(der)
        .map_err(|e| rustls::Error::General(format!("could not parse server certificate: {e}")))?;
    let mut names: Vec<String> = Vec::new();
    if let Ok(Some(san)) = x509.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(n) => names.push((*n).to_owned()),
                GeneralName::IPAddress(ip) => names.push(ip_text(ip)),
                _ => {}
            }
        }
    }
    let matched = if names.is_empty() {
        let cn = x509
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_owned);
        let Some(cn) = cn else {
            return Err(rustls::Error::General(
                "could not get server's host name from server certificate".into(),
            ));
        };
        let ok = wildcard_match(&cn, &host);
        names.push(cn);
        ok
    } else {
        verify_server_name(parsed, server_name).is_ok()
    };
    if matched {
        return Ok(());
    }
    let msg = match names.len() {
        1 => format!(
            "server certificate for \"{}\" does not match host name \"{host}\"",
            names[0]
        ),
        2 => format!(
            "server certificate for \"{}\" (and 1 other name) does not match host name \"{host}\"",
            names[0]
        ),
        n => format!(
            "server certificate for \"{}\" (and {} other names) does not match host name \"{host}\"",
            names[0],
            n - 1
        ),
    };
    Err(rustls::Error::General(msg))
}

fn ip_text(raw: &[u8]) -> String {
    match raw.len() {
        4 => std::net::Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]).to_string(),
        16 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(raw);
            std::net::Ipv6Addr::from(b).to_string()
        }
        _ => String::from("?"),
    }
}

/// Case-insensitive host name comparison where a leading `*.` in the
/// certificate's name stands for exactly one label.
fn wildcard_match(pattern: &str, host: &str) -> bool {
    if let Some(suffix) = pattern.strip_prefix("*.") {
        match host.split_once('.') {
            Some((label, rest)) => !label.is_empty() && rest.eq_ignore_ascii_case(suffix),
            None => false,
        }
    } else {
        pattern.eq_ignore_ascii_case(host)
    }
}

/// `tls-server-end-point` channel binding data: the hash of the server's
/// certificate, with SHA-256 unless its signature uses a stronger hash
/// (RFC 5929).
pub(crate) fn server_end_point(cert_der: &[u8]) -> Result<Vec<u8>, Error> {
    let (_, x509) = X509Certificate::from_der(cert_der)
        .map_err(|e| Error::tls_msg(format!("could not parse server certificate: {e}")))?;
    let oid = x509.signature_algorithm.algorithm.to_id_string();
    Ok(match oid.as_str() {
        // sha384WithRSAEncryption, ecdsa-with-SHA384
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => sha2::Sha384::digest(cert_der).to_vec(),
        // sha512WithRSAEncryption, ecdsa-with-SHA512
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => sha2::Sha512::digest(cert_der).to_vec(),
        _ => sha2::Sha256::digest(cert_der).to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_one_label() {
        let cases = [
            ("localhost", "localhost", true),
            ("LocalHost", "localhost", true),
            ("*.example.com", "db.example.com", true),
            ("*.example.com", "a.b.example.com", false),
            ("*.example.com", "example.com", false),
            ("db.example.com", "db2.example.com", false),
            ("127.0.0.1", "127.0.0.1", true),
        ];
        for (pattern, host, want) in cases {
            assert_eq!(wildcard_match(pattern, host), want, "{pattern} vs {host}");
        }
    }
}
