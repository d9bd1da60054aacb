//! A server certificate that is itself one of the trusted roots.
//!
//! Copying a self-signed `server.crt` to the client's `root.crt` is the
//! usual libpq set-up, and `openssl req -x509` marks such a certificate as
//! a CA (`CA:TRUE`) by default. OpenSSL finds the certificate in its trust
//! store and accepts it; webpki refuses a CA certificate as the end of a
//! chain (`CaUsedAsEndEntity`). This module accepts exactly that case, and
//! only with the checks OpenSSL still makes on such a certificate: it is
//! valid now, it may be used by a TLS server (extended key usage absent or
//! naming the server, key usage absent or allowing a TLS key exchange), and
//! it has no critical extension that cannot be read. With revocation lists
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

/// Accepts `end_entity` when it is byte for byte one of `roots` and passes
/// the checks above at `now`.
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
    (cert.validity().is_valid_at(at) && for_tls_servers(&cert)).then(ServerCertVerified::assertion)
}

/// OpenSSL's "SSL server" purpose, as far as it concerns a trusted
/// self-signed certificate, and no unreadable critical extension.
fn for_tls_servers(cert: &X509Certificate<'_>) -> bool {
    let eku_ok = match cert.extended_key_usage() {
        Ok(None) => true,
        Ok(Some(eku)) => eku.value.any || eku.value.server_auth,
        Err(_) => false,
    };
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
    eku_ok && ku_ok && extensions_ok
}
