//! Test certificates, generated at start with `rcgen` (ECDSA P-256).
//!
//! One CA signs everything: the server certificate for `localhost` and
//! `127.0.0.1` (subject alternative names), two deliberately flawed server
//! certificates (common name `localhost` but no SAN at all, which libpq
//! accepts by its common-name fallback and strict verifiers may not; and one
//! for `wrong.example`, which `verify-full` must reject), and a client
//! certificate whose common name is the superuser, for `cert` authentication.
//! Server keys are mode 0600 and owned by the server's OS user, as the server
//! demands; the client key is 0600 and owned by the current user, as libpq
//! demands.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose,
};

use super::os::{self, ServerOwner};
use super::Error;

/// A certificate and its private key, both PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFiles {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (mode 0600).
    pub key: PathBuf,
}

/// Every certificate file of an instance built with `.ssl(true)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslFiles {
    /// The CA certificate that signed all the others (`sslrootcert=`).
    pub ca_cert: PathBuf,
    /// Server certificate with SAN `localhost` and `127.0.0.1`.
    pub server: CertFiles,
    /// Server certificate with common name `localhost` and no SAN.
    pub server_no_san: CertFiles,
    /// Server certificate for `wrong.example` only.
    pub server_wrong_host: CertFiles,
    /// Client certificate whose common name is the superuser's name.
    pub client: CertFiles,
}

/// Which server certificate the server presents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ServerCert {
    /// Valid for `localhost` and `127.0.0.1`.
    #[default]
    Localhost,
    /// Common name `localhost`, no subject alternative names.
    LocalhostNoSan,
    /// Valid only for `wrong.example`.
    WrongHost,
}

impl SslFiles {
    /// The files of one server certificate.
    pub fn server_cert(&self, which: ServerCert) -> &CertFiles {
        match which {
            ServerCert::Localhost => &self.server,
            ServerCert::LocalhostNoSan => &self.server_no_san,
            ServerCert::WrongHost => &self.server_wrong_host,
        }
    }
}

/// Generates all certificates into `dir` (which must exist).
pub(crate) fn generate(
    dir: &Path,
    owner: &ServerOwner,
    client_cn: &str,
) -> Result<SslFiles, Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name = name("pgbolt throwaway CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key)?;
    let ca_cert = dir.join("ca.crt");
    os::write_file(&ca_cert, ca.pem().as_bytes(), 0o644)?;
    owner.chown(&ca_cert)?;

    let leaf = |file: &str, cn: &str, sans: &[&str]| -> Result<CertFiles, Error> {
        let key = KeyPair::generate()?;
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans)?;
        params.distinguished_name = name(cn);
        let cert = params.signed_by(&key, &ca, &ca_key)?;
        write_pair(dir, file, &cert, &key)
    };
    let server = leaf("server", "localhost", &["localhost", "127.0.0.1"])?;
    let server_no_san = leaf("server-no-san", "localhost", &[])?;
    let server_wrong_host = leaf("server-wrong-host", "wrong.example", &["wrong.example"])?;
    for files in [&server, &server_no_san, &server_wrong_host] {
        owner.chown(&files.cert)?;
        owner.chown(&files.key)?;
    }
    let client = leaf("client", client_cn, &[])?;
    Ok(SslFiles {
        ca_cert,
        server,
        server_no_san,
        server_wrong_host,
        client,
    })
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

fn write_pair(
    dir: &Path,
    stem: &str,
    cert: &Certificate,
    key: &KeyPair,
) -> Result<CertFiles, Error> {
    let files = CertFiles {
        cert: dir.join(format!("{stem}.crt")),
        key: dir.join(format!("{stem}.key")),
    };
    os::write_file(&files.cert, cert.pem().as_bytes(), 0o644)?;
    os::write_file(&files.key, key.serialize_pem().as_bytes(), 0o600)?;
    Ok(files)
}
