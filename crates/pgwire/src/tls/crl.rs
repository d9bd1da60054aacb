//! Certificate revocation lists, used when and as libpq uses them.
//!
//! libpq consults CRLs only when it verifies the chain against a root
//! certificate file (not `sslrootcert=system`). The lists come from
//! `sslcrl` and `sslcrldir`, or `~/.postgresql/root.crl` when neither is
//! set. A CRL file that is missing or holds nothing readable turns the
//! check off without a word (libpq does not require CRLs); otherwise every
//! certificate of the chain must be covered by a current list from its
//! issuer, and an unrevoked certificate without one fails verification like
//! a revoked one (`certificate verify failed`).
//!
//! OpenSSL finds the lists of a `sslcrldir` by the hash of the issuer's
//! name (`HASH.r0`, `HASH.r1`, ...): here every file named that way is
//! read and the verifier matches lists to issuers itself, so a list whose
//! file name carries the wrong hash is used where OpenSSL would miss it.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer};

use crate::conninfo::Config;

/// The lists to check the chain against, or `None` when libpq would not
/// check revocation.
pub(crate) fn load(config: &Config) -> Option<Vec<CertificateRevocationListDer<'static>>> {
    let given = |p: &Option<std::path::PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
    let dir = given(&config.sslcrldir);
    let file = given(&config.sslcrl).or_else(|| match dir {
        None => Some(super::home_file("root.crl")),
        Some(_) => None,
    });
    let mut lists = Vec::new();
    if let Some(file) = file {
        let bytes = std::fs::read(file).ok()?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .filter(Result::is_ok)
            .count();
        lists.extend(CertificateRevocationListDer::pem_slice_iter(&bytes).flatten());
        if lists.is_empty() && certs == 0 {
            return None;
        }
    }
    if let Some(dir) = dir {
        lists.extend(hashed_lists(&dir));
    }
    Some(lists)
}

/// The lists in the files of `dir` named as OpenSSL's lookup names them.
fn hashed_lists(dir: &Path) -> Vec<CertificateRevocationListDer<'static>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| is_hashed_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .flat_map(|bytes| {
            CertificateRevocationListDer::pem_slice_iter(&bytes)
                .flatten()
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `3387b84d.r0`: eight hex digits, `.r`, a number.
fn is_hashed_name(name: &str) -> bool {
    let Some((hash, n)) = name.split_once(".r") else {
        return false;
    };
    hash.len() == 8
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hashed_file_names_are_read_from_a_directory() {
        let cases = [
            ("3387b84d.r0", true),
            ("3387B84D.r12", true),
            ("3387b84d.0", false),
            ("3387b84d.r", false),
            ("root.crl", false),
            ("3387b84.r0", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_hashed_name(name), want, "{name}");
        }
    }
}
