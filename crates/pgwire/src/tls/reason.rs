//! TLS failures in the words libpq prints for them.
//!
//! libpq reports a failed handshake as `SSL error: ` followed by OpenSSL's
//! reason: `certificate verify failed` for any chain that does not check
//! out, `tlsv1 alert unknown ca` when the server refuses our certificate,
//! and so on. Scripts and people search logs for those phrases, so a rustls
//! error is worded the same way when it has an OpenSSL counterpart, and in
//! rustls' own words otherwise.

use rustls::AlertDescription as Alert;

use crate::conninfo::{Config, SslProtocolVersion};

/// The text after `SSL error: ` for `e`.
pub(crate) fn text(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(_) | rustls::Error::InvalidCertRevocationList(_) => {
            "certificate verify failed".to_string()
        }
        rustls::Error::AlertReceived(alert) => match alert_text(*alert) {
            Some(text) => text.to_string(),
            None => e.to_string(),
        },
        _ => e.to_string(),
    }
}

/// The full message for a failed handshake: `SSL error: ...`, and when the
/// two sides share no protocol version, libpq's hint naming the range asked
/// for.
pub(crate) fn handshake_message(e: &rustls::Error, config: &Config) -> String {
    let mut message = format!("SSL error: {}", text(e));
    if is_version_mismatch(e) {
        let name =
            |v: Option<SslProtocolVersion>, default: &'static str| v.map_or(default, version_name);
        message.push_str(&format!(
            "\nThis may indicate that the server does not support any SSL protocol version \
             between {} and {}.",
            name(config.ssl_min_protocol_version, "TLSv1.2"),
            name(config.ssl_max_protocol_version, "TLSv1.3"),
        ));
    }
    message
}

pub(super) fn version_name(version: SslProtocolVersion) -> &'static str {
    match version {
        SslProtocolVersion::Tls1 => "TLSv1",
        SslProtocolVersion::Tls1_1 => "TLSv1.1",
        SslProtocolVersion::Tls1_2 => "TLSv1.2",
        SslProtocolVersion::Tls1_3 => "TLSv1.3",
    }
}

fn is_version_mismatch(e: &rustls::Error) -> bool {
    matches!(
        e,
        rustls::Error::AlertReceived(Alert::ProtocolVersion)
            | rustls::Error::PeerIncompatible(
                rustls::PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
                    | rustls::PeerIncompatible::ServerDoesNotSupportTls12Or13
                    | rustls::PeerIncompatible::Tls12NotOffered
                    | rustls::PeerIncompatible::Tls12NotOfferedOrEnabled
                    | rustls::PeerIncompatible::SupportedVersionsExtensionRequired
            )
    )
}

/// OpenSSL's reason text for a TLS alert received from the server.
fn alert_text(alert: Alert) -> Option<&'static str> {
    Some(match alert {
        Alert::UnexpectedMessage => "sslv3 alert unexpected message",
        Alert::BadRecordMac => "sslv3 alert bad record mac",
        Alert::DecompressionFailure => "sslv3 alert decompression failure",
        Alert::HandshakeFailure => "sslv3 alert handshake failure",
        Alert::NoCertificate => "sslv3 alert no certificate",
        Alert::BadCertificate => "sslv3 alert bad certificate",
        Alert::UnsupportedCertificate => "sslv3 alert unsupported certificate",
        Alert::CertificateRevoked => "sslv3 alert certificate revoked",
        Alert::CertificateExpired => "sslv3 alert certificate expired",
        Alert::CertificateUnknown => "sslv3 alert certificate unknown",
        Alert::IllegalParameter => "sslv3 alert illegal parameter",
        Alert::DecryptionFailed => "tlsv1 alert decryption failed",
        Alert::RecordOverflow => "tlsv1 alert record overflow",
        Alert::UnknownCA => "tlsv1 alert unknown ca",
        Alert::AccessDenied => "tlsv1 alert access denied",
        Alert::DecodeError => "tlsv1 alert decode error",
        Alert::DecryptError => "tlsv1 alert decrypt error",
        Alert::ExportRestriction => "tlsv1 alert export restriction",
        Alert::ProtocolVersion => "tlsv1 alert protocol version",
        Alert::InsufficientSecurity => "tlsv1 alert insufficient security",
        Alert::InternalError => "tlsv1 alert internal error",
        Alert::InappropriateFallback => "tlsv1 alert inappropriate fallback",
        Alert::UserCanceled => "tlsv1 alert user cancelled",
        Alert::NoRenegotiation => "tlsv1 alert no renegotiation",
        Alert::UnknownPSKIdentity => "tlsv1 alert unknown psk identity",
        Alert::NoApplicationProtocol => "tlsv1 alert no application protocol",
        Alert::MissingExtension => "tlsv13 alert missing extension",
        Alert::CertificateRequired => "tlsv13 alert certificate required",
        Alert::UnsupportedExtension => "tlsv1 unsupported extension",
        Alert::CertificateUnobtainable => "tlsv1 certificate unobtainable",
        Alert::UnrecognisedName => "tlsv1 unrecognized name",
        Alert::BadCertificateStatusResponse => "tlsv1 bad certificate status response",
        Alert::BadCertificateHashValue => "tlsv1 bad certificate hash value",
        _ => return None,
    })
}
