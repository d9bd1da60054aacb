//! `verify-full`'s host name check, made as libpq makes it.
//!
//! libpq does not use the RFC 6125 rules a TLS library offers: it checks
//! the name after the handshake, against `host` exactly as given (never
//! `hostaddr`), and its fallback to the subject's common name depends on the
//! kind of host. A host that reads as an IP address (in `inet_aton`'s
//! lenient forms too) is matched against the IP-address alternative names,
//! a host name against the DNS ones; the common name is consulted when the
//! certificate has no alternative name of the host's kind, even if it has
//! some of the other kind. A DNS name matches case-insensitively, with a
//! leading `*.` standing for exactly one label. The error names the first
//! name examined and counts the others that were, so the messages are
//! libpq's word for word.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::error::Error;

/// Checks that the server certificate `der` was issued for `host` (the
/// `host` connection option of this attempt, if any).
pub(crate) fn check(der: &[u8], host: Option<&str>) -> Result<(), Error> {
    let Some(host) = host.filter(|h| !h.is_empty()) else {
        return Err(Error::tls_msg(
            "host name must be specified for a verified SSL connection",
        ));
    };
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| Error::tls_msg(format!("could not parse server certificate: {e}")))?;
    let host_ip = parse_ip(host);
    let mut seen = Seen::default();
    let mut check_cn = true;
    // A SAN extension that cannot be read fails the check rather than
    // letting the common name decide.
    let sans = cert
        .subject_alternative_name()
        .map_err(|_| Error::tls_msg("could not get server's host name from server certificate"))?
        .map(|ext| ext.value.general_names.as_slice())
        .unwrap_or_default();
    for name in sans {
        let matched = match name {
            GeneralName::DNSName(dns) => {
                check_cn &= host_ip.is_some();
                seen.name(dns_matches(dns, host)?, dns)
            }
            GeneralName::IPAddress(raw) => {
                check_cn &= host_ip.is_none();
                let (addr, text) = cert_ip(raw)?;
                seen.name(Some(addr) == host_ip, &text)
            }
            _ => continue,
        };
        if matched {
            return Ok(());
        }
    }
    if check_cn {
        if let Some(cn) = cert.subject().iter_common_name().next() {
            let text = cn.as_str().map_err(|_| {
                Error::tls_msg("could not get server's host name from server certificate")
            })?;
            if seen.name(dns_matches(text, host)?, text) {
                return Ok(());
            }
        }
    }
    Err(Error::tls_msg(match (seen.first, seen.count) {
        (Some(first), 1) => {
            format!("server certificate for \"{first}\" does not match host name \"{host}\"")
        }
        (Some(first), 2) => format!(
            "server certificate for \"{first}\" (and 1 other name) does not match host name \
             \"{host}\""
        ),
        (Some(first), n) => format!(
            "server certificate for \"{first}\" (and {} other names) does not match host name \
             \"{host}\"",
            n - 1
        ),
        (None, _) => "could not get server's host name from server certificate".to_string(),
    }))
}

/// The names examined so far: how many, and the first (for the message).
#[derive(Default)]
struct Seen {
    count: usize,
    first: Option<String>,
}

impl Seen {
    fn name(&mut self, matched: bool, text: &str) -> bool {
        self.count += 1;
        self.first.get_or_insert_with(|| text.to_owned());
        matched
    }
}

/// A DNS name or common name against the host: equal ignoring case, or a
/// `*.suffix` pattern whose `*` covers one label.
fn dns_matches(name: &str, host: &str) -> Result<bool, Error> {
    if name.contains('\0') {
        return Err(Error::tls_msg(
            "SSL certificate's name contains embedded null",
        ));
    }
    if name.eq_ignore_ascii_case(host) {
        return Ok(true);
    }
    let Some(suffix) = name.strip_prefix('*') else {
        return Ok(false);
    };
    if !suffix.starts_with('.') || suffix.len() < 2 || name.len() > host.len() {
        return Ok(false);
    }
    // libpq lets the label end with a dot (`a..example.com`), nothing more.
    let at = host.len() - suffix.len();
    if !host.is_char_boundary(at) {
        return Ok(false);
    }
    let (label, rest) = host.split_at(at);
    let inner = &label.as_bytes()[..label.len().saturating_sub(1)];
    Ok(rest.eq_ignore_ascii_case(suffix) && !inner.contains(&b'.'))
}

/// An IP address alternative name and its text.
fn cert_ip(raw: &[u8]) -> Result<(IpAddr, String), Error> {
    let addr = match raw.len() {
        4 => IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3])),
        16 => {
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(raw);
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        n => {
            return Err(Error::tls_msg(format!(
                "certificate contains IP address with invalid length {n}"
            )))
        }
    };
    Ok((addr, addr.to_string()))
}

/// The host as an IP address the way libpq reads it: IPv6 text, or IPv4 in
/// any form `inet_aton` accepts (`127.1`, `0x7f.0.0.1`, `2130706433`).
pub(crate) fn parse_ip(host: &str) -> Option<IpAddr> {
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    let parts: Vec<u32> = host
        .split('.')
        .map(aton_number)
        .collect::<Option<Vec<u32>>>()?;
    let (last, head) = parts.split_last()?;
    if head.len() > 3 || head.iter().any(|&p| p > 0xff) {
        return None;
    }
    let last_bits = 8 * (4 - head.len() as u32);
    if last_bits < 32 && *last >> last_bits != 0 {
        return None;
    }
    let mut value = *last;
    for (i, part) in head.iter().enumerate() {
        value |= part << (24 - 8 * i as u32);
    }
    Some(IpAddr::V4(Ipv4Addr::from(value)))
}

/// One number of an `inet_aton` address: decimal, octal with a leading 0,
/// hexadecimal with 0x.
fn aton_number(text: &str) -> Option<u32> {
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() && radix != 16 {
        return None;
    }
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
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
            ("*.example.com", ".example.com", false),
            ("*.example.com", "a..example.com", true),
            ("*.localhost", "a.localhost", true),
            ("db.example.com", "db2.example.com", false),
            ("a*.example.com", "ab.example.com", false),
            ("127.0.0.1", "127.0.0.1", true),
        ];
        for (pattern, host, want) in cases {
            assert_eq!(
                dns_matches(pattern, host).unwrap(),
                want,
                "{pattern} vs {host}"
            );
        }
    }

    #[test]
    fn hosts_read_as_addresses_as_inet_aton_reads_them() {
        let cases = [
            ("127.0.0.1", Some("127.0.0.1")),
            ("127.1", Some("127.0.0.1")),
            ("0x7f.0.0.1", Some("127.0.0.1")),
            ("017.0.0.1", Some("15.0.0.1")),
            ("2130706433", Some("127.0.0.1")),
            ("::1", Some("::1")),
            ("256.0.0.1", None),
            ("1.2.3.4.5", None),
            ("localhost", None),
            ("1.2.3.", None),
            ("08.1.1.1", None),
        ];
        for (host, want) in cases {
            let got = parse_ip(host).map(|ip| ip.to_string());
            assert_eq!(got.as_deref(), want, "{host}");
        }
    }
}
