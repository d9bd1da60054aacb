//! TLS with libpq's `sslmode` semantics, on rustls.
//!
//! | sslmode | chain checked | host name checked |
//! |---|---|---|
//! | `allow`, `prefer`, `require` | only if a root certificate file exists | no |
//! | `verify-ca` | yes | no |
//! | `verify-full` | yes | yes |
//!
//! rustls always checks the host name along with the chain, so the
//! verification is our own [`ServerCertVerifier`]: it calls webpki's chain
//! and revocation check only ([`crl`] says which lists). `verify-full`'s host
//! name check is made after the handshake, as libpq makes it ([`peer_name`]),
//! and failures are worded as libpq words them ([`reason`]).
//!
//! The root certificates come from `sslrootcert`, else
//! `~/.postgresql/root.crt`; `sslrootcert=system` loads the system bundle
//! (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`) and, as in
//! libpq, demands `verify-full`. As OpenSSL without partial chains (libpq's
//! use of it), only the file's self-issued certificates are trust anchors;
//! the others are offered to webpki as intermediates. A client certificate
//! comes from `sslcert` and `sslkey` (default `~/.postgresql/postgresql.crt`
//! / `.key`) when the certificate file exists.
//!
//! libpq reads the root, revocation and client files as the TLS session
//! starts, so a problem with one of them is a failed handshake: `prefer`
//! then goes on without TLS. Only the checks libpq makes on the options
//! themselves (`sslrootcert=system` with a weak `sslmode`) fail every
//! connection.

mod crl;
mod peer_name;
mod reason;
mod root_leaf;

pub(crate) use peer_name::check as check_peer_name;
pub(crate) use reason::{handshake_message, text as reason_text};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use sha2::Digest;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::conninfo::{Config, SslCertMode, SslMode, SslProtocolVersion};
use crate::error::{strerror, Error};

/// A ready TLS client configuration for one [`Config`], built once and
/// shared by every connection made from it.
pub(crate) fn client_config(config: &Config) -> Result<Option<Arc<ClientConfig>>, Error> {
    if config.sslmode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let root_file = root_cert_file(config);
    let is_system = config.sslrootcert.as_deref() == Some(Path::new("system"));
    if config.sslcertmode == SslCertMode::Require {
        return Err(Error::config("sslcertmode=require is not supported yet"));
    }
    if is_system && config.sslmode != SslMode::VerifyFull {
        return Err(Error::config(format!(
            "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
            mode_name(config.sslmode)
        )));
    }
    let check_chain = match config.sslmode {
        SslMode::VerifyFull | SslMode::VerifyCa => true,
        _ => root_file.exists(),
    };
    let at_start = |e: Error| Error::tls_msg(e.to_string());
    let chain = match check_chain {
        false => None,
        true => Some(chain_verifier(config, &root_file, is_system, &provider).map_err(at_start)?),
    };
    let verifier = Arc::new(PgVerifier {
        chain,
        provider: provider.clone(),
    });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&protocol_versions(config)?)
        .map_err(Error::tls)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut tls = match client_identity(config, &provider).map_err(at_start)? {
        Some(identity) => {
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(identity)))
        }
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

/// The TLS versions between `ssl_min_protocol_version` and
/// `ssl_max_protocol_version` that rustls speaks (1.2 and 1.3).
fn protocol_versions(
    config: &Config,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, Error> {
    let min = config
        .ssl_min_protocol_version
        .unwrap_or(SslProtocolVersion::Tls1_2);
    let max = config
        .ssl_max_protocol_version
        .unwrap_or(SslProtocolVersion::Tls1_3);
    let mut versions = Vec::new();
    if min <= SslProtocolVersion::Tls1_3 && SslProtocolVersion::Tls1_3 <= max {
        versions.push(&rustls::version::TLS13);
    }
    if min <= SslProtocolVersion::Tls1_2 && SslProtocolVersion::Tls1_2 <= max {
        versions.push(&rustls::version::TLS12);
    }
    if versions.is_empty() {
        // As a handshake that cannot start: `prefer` goes on without TLS,
        // as libpq does when the server refuses these versions.
        return Err(Error::tls_msg(format!(
            "SSL error: no protocols available\nThis client supports TLSv1.2 and TLSv1.3 \
             only, none of them between {} and {}.",
            reason::version_name(min),
            reason::version_name(max)
        )));
    }
    Ok(versions)
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

/// The chain check against the root certificates, with the revocation
/// lists libpq would use (none with `sslrootcert=system`).
fn chain_verifier(
    config: &Config,
    root_file: &Path,
    is_system: bool,
    provider: &Arc<CryptoProvider>,
) -> Result<ChainCheck, Error> {
    let roots = load_roots(root_file, is_system)?;
    let crls = match is_system {
        true => None,
        false => crl::load(config),
    };
    let without_lists = crls.as_ref().is_some_and(Vec::is_empty);
    let with_lists = crls.as_ref().is_some_and(|lists| !lists.is_empty());
    let webpki = match roots.anchors.is_empty() {
        true => None,
        false => Some(
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots.anchors), provider.clone())
                .with_crls(crls.unwrap_or_default())
                .enforce_revocation_expiration()
                .build()
                .map_err(|e| {
                    Error::config(format!("could not load certificate revocation list: {e}"))
                })?,
        ),
    };
    Ok(ChainCheck {
        webpki,
        without_lists,
        with_lists,
        anchors: roots.anchor_ders,
        links: roots.links,
    })
}

/// The root file's certificates, split as OpenSSL uses its trust store: a
/// chain is trusted only when it ends at a self-issued certificate, so only
/// those are trust anchors; any other certificate in the file (an
/// intermediate kept beside its root) only helps build a chain to one.
struct RootFile {
    anchors: RootCertStore,
    /// The anchors as read, to recognise a server certificate that is one
    /// of them (see [`root_leaf`]).
    anchor_ders: Vec<CertificateDer<'static>>,
    links: Vec<CertificateDer<'static>>,
}

fn load_roots(file: &Path, is_system: bool) -> Result<RootFile, Error> {
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
    let mut roots = RootFile {
        anchors: RootCertStore::empty(),
        anchor_ders: Vec::new(),
        links: Vec::new(),
    };
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(&e))? {
        let cert = cert.map_err(|e| bad(&e))?;
        if !root_leaf::is_self_issued(&cert) {
            roots.links.push(cert);
            continue;
        }
        // A system bundle may hold certificates webpki cannot use; skip those.
        match roots.anchors.add(cert.clone()) {
            Ok(()) => roots.anchor_ders.push(cert),
            Err(e) if !is_system => return Err(bad(&e)),
            Err(_) => {}
        }
    }
    if roots.anchors.is_empty() && roots.links.is_empty() {
        return Err(bad(&"no certificate or crl found"));
    }
    Ok(roots)
}

/// The client certificate and key, loaded and checked as libpq does: a
/// missing certificate file means none is sent; a certificate file without
/// a readable, private key that matches it is an error. The certificate is
/// sent as it is (X.509 version 1 included, as OpenSSL sends it): judging
/// it is the server's business.
fn client_identity(
    config: &Config,
    provider: &CryptoProvider,
) -> Result<Option<Arc<CertifiedKey>>, Error> {
    if config.sslcertmode == SslCertMode::Disable {
        return Ok(None);
    }
    let cert_file = config
        .sslcert
        .clone()
        .unwrap_or_else(|| home_file("postgresql.crt"));
    match std::fs::metadata(&cert_file) {
        Ok(_) => {}
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => {
            return Err(Error::config(format!(
                "could not open certificate file \"{}\": {}",
                cert_file.display(),
                strerror(&e)
            )))
        }
    }
    let key_file = config
        .sslkey
        .clone()
        .unwrap_or_else(|| home_file("postgresql.key"));
    let certs = CertificateDer::pem_file_iter(&cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| e.to_string())
        .and_then(|certs| match certs.is_empty() {
            true => Err("no start line".to_string()),
            false => Ok(certs),
        })
        .map_err(|why| {
            Error::config(format!(
                "could not read certificate file \"{}\": {why}",
                cert_file.display()
            ))
        })?;
    check_key_file(&key_file)?;
    let key_error = |why: &dyn std::fmt::Display| {
        Error::config(format!(
            "could not load private key file \"{}\": {why}",
            key_file.display()
        ))
    };
    let der = read_key(&key_file).map_err(|why| key_error(&why))?;
    let key = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| key_error(&e))?;
    if let (Some(spki), Ok((_, cert))) = (key.public_key(), X509Certificate::from_der(&certs[0])) {
        if spki.as_ref() != cert.tbs_certificate.subject_pki.raw {
            return Err(key_error(&"key values mismatch"));
        }
    }
    Ok(Some(Arc::new(CertifiedKey::new(certs, key))))
}

/// The private key of `file`: PEM, else DER, as libpq tries both.
fn read_key(file: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = std::fs::read(file).map_err(|e| strerror(&e))?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => return Ok(key),
        Err(_) if memchr::memmem::find(&bytes, b"ENCRYPTED").is_some() => {
            return Err("encrypted private keys are not supported".to_string())
        }
        Err(_) => {}
    }
    PrivateKeyDer::try_from(bytes).map_err(|_| "unsupported".to_string())
}

fn is_absent(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))
}

/// libpq's checks of the key file before reading it: it must exist, be a
/// regular file, and not be readable by others (0600 or stricter, or 0640
/// when owned by root).
fn check_key_file(key_file: &Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(key_file).map_err(|e| {
        Error::config(match e.raw_os_error() {
            Some(libc::ENOENT) => format!(
                "certificate present, but not private key file \"{}\"",
                key_file.display()
            ),
            _ => format!(
                "could not stat private key file \"{}\": {}",
                key_file.display(),
                strerror(&e)
            ),
        })
    })?;
    if !meta.is_file() {
        return Err(Error::config(format!(
            "private key file \"{}\" is not a regular file",
            key_file.display()
        )));
    }
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

/// The name rustls is given for the server: the host name (sent as SNI
/// unless `sslsni=0`), or the address, for which no SNI is sent.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
    // An address in one of inet_aton's short forms (`127.1`) is an address
    // to libpq too: no SNI for it.
    ServerName::try_from(host.to_owned())
        .ok()
        .or_else(|| peer_name::parse_ip(host).map(|ip| ServerName::IpAddress(ip.into())))
        .ok_or_else(|| Error::tls_msg(format!("invalid host name \"{host}\" for TLS")))
}

/// webpki's chain and revocation check; its host name check is not used
/// (libpq's is made after the handshake).
#[derive(Debug)]
struct ChainCheck {
    /// None when the root file holds no self-issued certificate: no chain
    /// can be trusted then.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    /// Revocation is checked but no list was found: as with OpenSSL, no
    /// certificate can be shown unrevoked.
    without_lists: bool,
    /// Revocation lists are in use.
    with_lists: bool,
    /// The trust anchors as read (see [`RootFile`]).
    anchors: Vec<CertificateDer<'static>>,
    /// The root file's other certificates, offered as intermediates.
    links: Vec<CertificateDer<'static>>,
}

#[derive(Debug)]
struct PgVerifier {
    chain: Option<ChainCheck>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PgVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        if chain.without_lists {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownRevocationStatus,
            ));
        }
        let Some(webpki) = &chain.webpki else {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            ));
        };
        let with_links: Vec<CertificateDer<'_>>;
        let intermediates = match chain.links.is_empty() {
            true => intermediates,
            false => {
                with_links = intermediates.iter().chain(&chain.links).cloned().collect();
                &with_links
            }
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(e)))
                if root_leaf::is_ca_as_leaf(&e) && !chain.with_lists =>
            {
                root_leaf::accept(end_entity, &chain.anchors, now).ok_or(
                    rustls::Error::InvalidCertificate(CertificateError::Other(e)),
                )
            }
            other => other,
        }
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
