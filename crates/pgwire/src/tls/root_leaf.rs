//! A server certificate that is itself one of the trusted roots.
//!
//! Copying a self-signed `server.crt` to the client's `root.crt` is the
//! usual libpq set-up, and `openssl req -x509` marks such a certificate as
//! a CA (`CA:TRUE`) by default. OpenSSL finds the certificate in its trust
//! store and accepts it; webpki refuses a CA certificate as the end of a
//! chain (`CaUsedAsEndEntity`). This module accepts exactly that case, and
//! only with the checks OpenSSL still makes on such a certificate: it is
//! self-issued (its own whole chain), valid now, it may be used by a TLS
//! server (extended key usage absent or naming the server, Netscape
//! certificate type absent or allowing servers, key usage absent or
//! allowing a TLS key exchange), and it has no critical extension that
//! cannot be read. With revocation lists
//! in use it is not accepted this way (OpenSSL would want a list from this
//! certificate covering it), so such a set-up fails closed.

use rustls::client::danger::ServerCertVerified;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::OtherError;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Whether webpki's refusal `error` is its "CA used as end entity".
pub(super) fn is_ca_as_leaf(error: &OtherError) -> bool {
    matches!(
        error.0.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::CaUsedAsEndEntity)
    )
}

/// Whether `cert` names itself as its issuer: only such a certificate of
/// the root file is a trust anchor. One that cannot be read counts as one,
/// so that webpki's refusal of it is reported.
pub(super) fn is_self_issued(cert: &[u8]) -> bool {
    X509Certificate::from_der(cert)
        .map_or(true, |(_, c)| c.subject().as_raw() == c.issuer().as_raw())
}

/// Accepts `end_entity` when it is byte for byte one of `roots` (the trust
/// anchors, all self-issued) and passes the checks above at `now`.
pub(super) fn accept(
    end_entity: &[u8],
    roots: &[CertificateDer<'_>],
    now: UnixTime,
) -> Option<ServerCertVerified> {
    if !roots.iter().any(|root| root.as_ref() == end_entity) {
        return None;
    }
    let (_, cert) = X509Certificate::from_der(end_entity).ok()?;
    let at =
        x509_parser::time::ASN1Time::from_timestamp(i64::try_from(now.as_secs()).ok()?).ok()?;
    // The roots are the self-issued certificates of the root file, each a
    // whole chain by itself (as OpenSSL by default, a trust anchor's own
    // signature is not checked).
    (cert.validity().is_valid_at(at) && for_tls_servers(&cert)).then(ServerCertVerified::assertion)
}

/// OpenSSL's "SSL server" purpose, as far as it concerns a trusted
/// self-signed certificate, and no unreadable critical extension.
fn for_tls_servers(cert: &X509Certificate<'_>) -> bool {
    // OpenSSL wants the server usage named; "any usage" alone does not do.
    let eku_ok = match cert.extended_key_usage() {
        Ok(None) => true,
        Ok(Some(eku)) => eku.value.server_auth,
        Err(_) => false,
    };
    // The old Netscape certificate type, when present, must allow servers.
    let netscape_ok = cert
        .extensions()
        .iter()
        .all(|ext| match ext.parsed_extension() {
            ParsedExtension::NSCertType(kind) => kind.ssl_server(),
            _ => true,
        });
    let ku_ok = match cert.key_usage() {
        Ok(None) => true,
        Ok(Some(ku)) => {
            ku.value.digital_signature() || ku.value.key_encipherment() || ku.value.key_agreement()
        }
        Err(_) => false,
    };
    let extensions_ok = cert.extensions().iter().all(|ext| {
        !ext.critical
            || !matches!(
                ext.parsed_extension(),
                ParsedExtension::UnsupportedExtension { .. } | ParsedExtension::ParseError { .. }
            )
    });
    eku_ok && netscape_ok && ku_ok && extensions_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };

    /// A self-signed certificate marked as a CA, as `openssl req -x509`
    /// makes one, changed by `edit`; its DER.
    fn self_signed(edit: impl FnOnce(&mut CertificateParams)) -> Vec<u8> {
        let mut params = CertificateParams::new(vec!["db.example".to_owned()]).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, "db.example");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        edit(&mut params);
        let key = KeyPair::generate().expect("key");
        params
            .self_signed(&key)
            .expect("certificate")
            .der()
            .to_vec()
    }

    fn accepted(der: &[u8], roots: &[Vec<u8>]) -> bool {
        let roots: Vec<CertificateDer<'_>> = roots
            .iter()
            .map(|r| CertificateDer::from(r.as_slice()))
            .collect();
        accept(der, &roots, UnixTime::now()).is_some()
    }

    #[test]
    fn a_self_signed_root_is_its_own_chain() {
        let plain = self_signed(|_| {});
        assert!(accepted(&plain, std::slice::from_ref(&plain)));
        let other = self_signed(|_| {});
        assert!(!accepted(&plain, &[other]), "not one of the roots");
    }

    #[test]
    fn openssl_purpose_checks_still_apply() {
        let server = self_signed(|p| {
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            p.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyCertSign,
            ];
        });
        assert!(accepted(&server, std::slice::from_ref(&server)));
        let refused = [
            self_signed(|p| p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]),
            self_signed(|p| p.extended_key_usages = vec![ExtendedKeyUsagePurpose::Any]),
            self_signed(|p| {
                p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign]
            }),
            self_signed(|p| {
                p.not_before = rcgen::date_time_ymd(2001, 1, 1);
                p.not_after = rcgen::date_time_ymd(2002, 1, 1);
            }),
        ];
        for der in refused {
            assert!(!accepted(&der, std::slice::from_ref(&der)));
        }
    }

    #[test]
    fn only_self_issued_certificates_are_trust_anchors() {
        let ca_key = KeyPair::generate().expect("key");
        let mut ca_params = CertificateParams::new(Vec::new()).expect("params");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "root");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("root");
        let mut mid_params = CertificateParams::new(Vec::new()).expect("params");
        mid_params
            .distinguished_name
            .push(DnType::CommonName, "intermediate");
        mid_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let mid_key = KeyPair::generate().expect("key");
        let mid = mid_params
            .signed_by(&mid_key, &ca, &ca_key)
            .expect("intermediate")
            .der()
            .to_vec();
        assert!(!is_self_issued(&mid), "an intermediate is no trust anchor");
        assert!(is_self_issued(ca.der()));
        assert!(is_self_issued(b"unreadable"), "left for webpki to refuse");
    }
}
