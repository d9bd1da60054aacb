//! libpq 18's checks on the server's requests, each with libpq's wording:
//! `require_auth` against request codes no method names and against the
//! SASL mechanism once chosen, and the order of the SASL start checks.

use super::*;

fn context<'a>(
    password: &'a Secret,
    cert: Option<&'a [u8]>,
    channel_binding: ChannelBinding,
    require_auth: Option<&'a str>,
) -> AuthContext<'a> {
    AuthContext {
        user: "user",
        password: Some(password),
        server_cert: cert,
        channel_binding,
        require_auth,
        requirement: AuthRequirement::parse(require_auth.unwrap_or("")).expect("valid"),
    }
}

fn first_error(reqs: &[AuthRequest<'_>], ctx: &AuthContext<'_>) -> String {
    let mut exchange = Exchange::default();
    for req in reqs {
        if let Err(e) = exchange.step(*req, ctx, &mut BytesMut::new()) {
            return e.to_string();
        }
    }
    panic!("no error for {reqs:?}");
}

#[test]
fn request_codes_without_a_method_fail_require_auth_and_are_named_otherwise() {
    let secret = Secret::new("pw");
    let cases: &[(u32, &str)] = &[
        (1, "Kerberos 4 authentication not supported"),
        (2, "Kerberos 5 authentication not supported"),
        (4, "Crypt authentication not supported"),
        (6, "authentication method 6 not supported"),
        (13, "authentication method 13 not supported"),
    ];
    for (code, plain) in cases {
        let req = [AuthRequest::Unsupported(*code)];
        let free = context(&secret, None, ChannelBinding::Prefer, None);
        assert_eq!(first_error(&req, &free), *plain, "code {code}");
        let required = context(&secret, None, ChannelBinding::Prefer, Some("!md5"));
        assert_eq!(
            first_error(&req, &required),
            "authentication method requirement \"!md5\" failed: server requested an unknown \
             authentication type",
            "code {code}"
        );
    }
}

/// `require_auth`, the server certificate (TLS), the server's mechanism
/// list and the expected reason (`None`: the exchange starts).
type MechanismCase<'a> = (&'a str, Option<&'a [u8]>, &'a [u8], Option<&'a str>);

/// `channel_binding`, the server certificate, the mechanism list, the error.
type OrderCase<'a> = (ChannelBinding, Option<&'a [u8]>, &'a [u8], &'a str);

#[test]
fn require_auth_judges_the_chosen_sasl_mechanism() {
    let secret = Secret::new("pw");
    let cert: &[u8] = b"not a certificate";
    let both = b"SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0";
    let plain = b"SCRAM-SHA-256\0\0";
    let cases: &[MechanismCase<'_>] = &[
        (
            "!scram-sha-256",
            None,
            plain,
            Some("server requested SCRAM-SHA-256 authentication"),
        ),
        (
            "oauth",
            None,
            plain,
            Some("server requested SCRAM-SHA-256 authentication"),
        ),
        (
            "!scram-sha-256,!oauth",
            None,
            plain,
            Some("server requested SASL authentication"),
        ),
        (
            "password",
            None,
            plain,
            Some("server requested SASL authentication"),
        ),
        ("!oauth", None, plain, None),
        ("scram-sha-256", None, plain, None),
        (
            "oauth",
            Some(cert),
            both,
            Some("server requested SCRAM-SHA-256-PLUS authentication"),
        ),
    ];
    for (spec, cert, mechanisms, want) in cases {
        // Without TLS nothing can bind; with it, the server's PLUS is chosen.
        let channel_binding = if cert.is_some() {
            ChannelBinding::Prefer
        } else {
            ChannelBinding::Disable
        };
        let ctx = context(&secret, *cert, channel_binding, Some(spec));
        let got =
            Exchange::default().step(AuthRequest::Sasl(mechanisms), &ctx, &mut BytesMut::new());
        match want {
            Some(reason) => assert_eq!(
                got.expect_err(spec).to_string(),
                format!("authentication method requirement \"{spec}\" failed: {reason}")
            ),
            None => assert!(got.is_ok(), "{spec}: {got:?}"),
        }
    }
}

#[test]
fn sasl_start_checks_come_in_libpq_order() {
    let secret = Secret::new("pw");
    let cert: &[u8] = b"not a certificate";
    let unknown = b"OAUTHBEARER\0\0";
    let cases: &[OrderCase<'_>] = &[
        (
            ChannelBinding::Require,
            None,
            unknown,
            "channel binding required, but SSL not in use",
        ),
        (
            ChannelBinding::Require,
            Some(cert),
            unknown,
            "none of the server's SASL authentication mechanisms are supported",
        ),
        (
            ChannelBinding::Prefer,
            None,
            b"SCRAM-SHA-256\0SCRAM-SHA-256-PLUS\0\0",
            "server offered SCRAM-SHA-256-PLUS authentication over a non-SSL connection",
        ),
        (
            ChannelBinding::Require,
            Some(cert),
            b"SCRAM-SHA-256\0\0",
            "channel binding is required, but server did not offer an authentication method \
             that supports channel binding",
        ),
    ];
    for (channel_binding, cert, mechanisms, want) in cases {
        let ctx = context(&secret, *cert, *channel_binding, None);
        let got =
            Exchange::default().step(AuthRequest::Sasl(mechanisms), &ctx, &mut BytesMut::new());
        assert_eq!(got.expect_err(want).to_string(), *want);
    }
}

#[test]
fn a_second_sasl_request_is_refused() {
    let secret = Secret::new("pw");
    let ctx = context(&secret, None, ChannelBinding::Prefer, None);
    let sasl = AuthRequest::Sasl(b"SCRAM-SHA-256\0\0");
    assert_eq!(
        first_error(&[sasl, sasl], &ctx),
        "duplicate SASL authentication request"
    );
}

#[test]
fn success_before_scram_completes_is_refused_in_libpq_words_first() {
    let secret = Secret::new("pw");
    let sasl = AuthRequest::Sasl(b"SCRAM-SHA-256\0\0");
    let cases = [
        (
            ChannelBinding::Prefer,
            Some("scram-sha-256"),
            "authentication method requirement \"scram-sha-256\" failed: server did not \
             complete authentication",
        ),
        (
            ChannelBinding::Prefer,
            Some("scram-sha-256,none"),
            "server reported authentication success before the SCRAM exchange completed",
        ),
        (
            ChannelBinding::Prefer,
            None,
            "server reported authentication success before the SCRAM exchange completed",
        ),
    ];
    for (channel_binding, require_auth, want) in cases {
        let ctx = context(&secret, None, channel_binding, require_auth);
        assert_eq!(first_error(&[sasl, AuthRequest::Ok], &ctx), want);
    }
    let ctx = context(&secret, None, ChannelBinding::Prefer, Some("password"));
    let mut exchange = Exchange::default();
    let mut out = BytesMut::new();
    assert!(!exchange
        .step(AuthRequest::Cleartext, &ctx, &mut out)
        .expect("password sent"));
    assert!(exchange
        .step(AuthRequest::Ok, &ctx, &mut out)
        .expect("finished"));
}

#[test]
fn a_refusal_after_scram_was_chosen_asks_for_a_missing_password() {
    let empty = Secret::new("");
    let given = Secret::new("pw");
    let cert: &[u8] = b"not a certificate";
    let scram_only = AuthRequest::Sasl(b"SCRAM-SHA-256\0\0");
    let cases = [
        (
            &empty,
            None,
            ChannelBinding::Prefer,
            Some("!scram-sha-256"),
            true,
        ),
        (
            &given,
            None,
            ChannelBinding::Prefer,
            Some("!scram-sha-256"),
            false,
        ),
        (&empty, Some(cert), ChannelBinding::Require, None, true),
        (&empty, None, ChannelBinding::Require, None, false),
        (&empty, None, ChannelBinding::Prefer, Some("md5"), false),
    ];
    for (secret, cert, channel_binding, require_auth, wanted) in cases {
        let ctx = context(secret, cert, channel_binding, require_auth);
        let err = Exchange::default()
            .step(scram_only, &ctx, &mut BytesMut::new())
            .expect_err("refused");
        assert_eq!(
            err.needs_password(),
            wanted,
            "{require_auth:?} {channel_binding:?}: {err}"
        );
    }
}
