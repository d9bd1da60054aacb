//! SCRAM against a server played by the test, using the RFC 7677 test
//! vector's salt, iteration count and password; the server side's own
//! arithmetic is first checked against the RFC's recorded proof.

use super::*;
use sha2::{Digest, Sha256};

const SALT_B64: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const ITERATIONS: u32 = 4096;

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn salted_password(password: &[u8], salt: &[u8]) -> [u8; 32] {
    let mut block = salt.to_vec();
    block.extend_from_slice(&[0, 0, 0, 1]);
    let mut u = hmac(password, &block);
    let mut out = u;
    for _ in 1..ITERATIONS {
        u = hmac(password, &u);
        for (o, x) in out.iter_mut().zip(u) {
            *o ^= x;
        }
    }
    out
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unb64(text: &str) -> Vec<u8> {
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = B64.iter().position(|x| *x == c).expect("base64 digit") as u32;
        bits = bits << 6 | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
        }
    }
    out
}

/// ClientProof and ServerSignature for an auth message.
fn proof_and_signature(password: &str, auth_message: &str) -> (Vec<u8>, Vec<u8>) {
    let salted = salted_password(password.as_bytes(), &unb64(SALT_B64));
    let client_key = hmac(&salted, b"Client Key");
    let stored_key: [u8; 32] = Sha256::digest(client_key).into();
    let client_sig = hmac(&stored_key, auth_message.as_bytes());
    let proof = client_key
        .iter()
        .zip(client_sig)
        .map(|(a, b)| a ^ b)
        .collect();
    let server_key = hmac(&salted, b"Server Key");
    (proof, hmac(&server_key, auth_message.as_bytes()).to_vec())
}

#[test]
fn the_test_server_reproduces_rfc_7677() {
    let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
    let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                        s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let without_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let auth = format!("{client_first_bare},{server_first},{without_proof}");
    let (proof, sig) = proof_and_signature("pencil", &auth);
    assert_eq!(b64(&proof), "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    assert_eq!(b64(&sig), "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

/// The payload of the single frontend message in `out`, after the tag and
/// length (and after the mechanism name and length for the first one).
fn sasl_payload(out: &mut BytesMut, initial: bool) -> String {
    assert_eq!(out[0], b'p');
    let mut body = &out[5..];
    if initial {
        let nul = body.iter().position(|b| *b == 0).unwrap();
        body = &body[nul + 5..];
    }
    let text = String::from_utf8(body.to_vec()).unwrap();
    out.clear();
    text
}

fn ctx<'a>(password: &'a Secret, cert: Option<&'a [u8]>, cb: ChannelBinding) -> AuthContext<'a> {
    AuthContext {
        user: "user",
        password: Some(password),
        server_cert: cert,
        channel_binding: cb,
        require_auth: None,
        requirement: AuthRequirement::default(),
    }
}

/// Plays the server with the RFC's salt and count; `tamper` corrupts the
/// server signature. Returns whether the proof was right, the final message
/// without its proof, and the client's verdict on the server's last word.
fn run_exchange(password: &str, tamper: bool) -> Result<(bool, String, Result<(), Error>), Error> {
    let secret = Secret::new(password);
    let c = ctx(&secret, None, ChannelBinding::Prefer);
    let mut ex = Exchange::default();
    let mut out = BytesMut::new();
    ex.step(AuthRequest::Sasl(b"SCRAM-SHA-256\0\0"), &c, &mut out)?;
    let first = sasl_payload(&mut out, true);
    let bare = first
        .strip_prefix("n,,")
        .expect("no channel binding without TLS");
    let client_nonce = bare.strip_prefix("n=,r=").unwrap();
    let server_first = format!("r={client_nonce}srvnonce,s={SALT_B64},i={ITERATIONS}");
    ex.step(
        AuthRequest::SaslContinue(server_first.as_bytes()),
        &c,
        &mut out,
    )?;
    let final_msg = sasl_payload(&mut out, false);
    let (without_proof, proof) = final_msg.rsplit_once(",p=").unwrap();
    let auth = format!("{bare},{server_first},{without_proof}");
    let (want_proof, mut sig) = proof_and_signature("pencil", &auth);
    let proof_ok = unb64(proof) == want_proof;
    if tamper {
        sig[0] ^= 1;
    }
    let server_final = format!("v={}", b64(&sig));
    let verdict = ex
        .step(
            AuthRequest::SaslFinal(server_final.as_bytes()),
            &c,
            &mut out,
        )
        .and_then(|_| ex.step(AuthRequest::Ok, &c, &mut out))
        .map(|ok| assert!(ok));
    Ok((proof_ok, without_proof.to_string(), verdict))
}

#[test]
fn scram_exchange_with_the_right_password() {
    let (proof_ok, without_proof, verdict) = run_exchange("pencil", false).unwrap();
    assert!(proof_ok, "the server would reject the proof");
    verdict.unwrap();
    assert!(without_proof.starts_with("c=biws,r="), "{without_proof}");
}

#[test]
fn scram_proof_with_a_wrong_password_is_wrong() {
    let (proof_ok, _, verdict) = run_exchange("pencils", false).unwrap();
    assert!(!proof_ok);
    assert!(
        verdict.is_err(),
        "the client must not trust a server that disagrees"
    );
}

#[test]
fn a_forged_server_signature_is_refused() {
    let (_, _, verdict) = run_exchange("pencil", true).unwrap();
    let err = verdict.unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Auth);
    assert!(
        err.to_string().contains("invalid SCRAM server signature"),
        "{err}"
    );
}

#[test]
fn channel_binding_required_refuses_requests_that_cannot_bind() {
    let secret = Secret::new("pencil");
    let c = ctx(&secret, Some(b"cert"), ChannelBinding::Require);
    let requests = [
        AuthRequest::Cleartext,
        AuthRequest::Md5 { salt: [1, 2, 3, 4] },
        AuthRequest::Unsupported(7),
    ];
    for req in requests {
        let mut out = BytesMut::new();
        let err = Exchange::default().step(req, &c, &mut out).unwrap_err();
        assert_eq!(
            err.to_string(),
            "channel binding required but not supported by server's authentication request"
        );
        assert!(out.is_empty(), "nothing may be sent");
    }
}

#[test]
fn channel_binding_choices() {
    let secret = Secret::new("pencil");
    let cert: &[u8] = b"not a certificate";
    // (offered, TLS cert present, channel_binding, expected result)
    type Case = (
        &'static [u8],
        bool,
        ChannelBinding,
        Result<&'static str, &'static str>,
    );
    let cases: &[Case] = &[
        (
            b"SCRAM-SHA-256\0\0",
            false,
            ChannelBinding::Prefer,
            Ok("n,,"),
        ),
        (
            b"SCRAM-SHA-256\0\0",
            true,
            ChannelBinding::Prefer,
            Ok("y,,"),
        ),
        (
            b"SCRAM-SHA-256\0SCRAM-SHA-256-PLUS\0\0",
            true,
            ChannelBinding::Disable,
            Ok("n,,"),
        ),
        (
            b"SCRAM-SHA-256\0\0",
            false,
            ChannelBinding::Require,
            Err("SSL not in use"),
        ),
        (
            b"SCRAM-SHA-256\0\0",
            true,
            ChannelBinding::Require,
            Err("did not offer"),
        ),
        (
            b"SCRAM-SHA-256-PLUS\0\0",
            true,
            ChannelBinding::Require,
            Err("could not parse"),
        ),
        (
            b"OTHER\0\0",
            false,
            ChannelBinding::Prefer,
            Err("mechanisms are supported"),
        ),
    ];
    for (offered, tls, cb, want) in cases {
        let c = ctx(&secret, tls.then_some(cert), *cb);
        let mut out = BytesMut::new();
        let got = Exchange::default().step(AuthRequest::Sasl(offered), &c, &mut out);
        match (got, want) {
            (Ok(_), Ok(prefix)) => assert!(sasl_payload(&mut out, true).starts_with(prefix)),
            (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{e}"),
            (got, want) => panic!("{offered:?} {cb:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn require_auth_rules() {
    let secret = Secret::new("pw");
    let cases: &[(&str, AuthRequest<'_>, bool)] = &[
        ("password", AuthRequest::Cleartext, true),
        ("md5", AuthRequest::Cleartext, false),
        ("!password", AuthRequest::Cleartext, false),
        ("!password", AuthRequest::Md5 { salt: [1, 2, 3, 4] }, true),
        (
            "scram-sha-256",
            AuthRequest::Md5 { salt: [1, 2, 3, 4] },
            false,
        ),
        ("none", AuthRequest::Ok, true),
        ("scram-sha-256", AuthRequest::Ok, false),
        ("!none", AuthRequest::Ok, false),
    ];
    for (spec, req, ok) in cases {
        let c = AuthContext {
            require_auth: Some(spec),
            requirement: AuthRequirement::parse(spec).unwrap(),
            ..ctx(&secret, None, ChannelBinding::Prefer)
        };
        let got = Exchange::default().step(*req, &c, &mut BytesMut::new());
        assert_eq!(got.is_ok(), *ok, "{spec} {req:?}: {got:?}");
        if let Err(e) = got {
            assert!(e.to_string().starts_with(&format!(
                "authentication method requirement \"{spec}\" failed: "
            )));
        }
    }
}

#[test]
fn md5_and_cleartext_responses() {
    let secret = Secret::new("pw");
    let c = ctx(&secret, None, ChannelBinding::Prefer);
    let mut out = BytesMut::new();
    Exchange::default()
        .step(AuthRequest::Md5 { salt: [1, 2, 3, 4] }, &c, &mut out)
        .unwrap();
    let want = md5_hash(b"user", b"pw", [1, 2, 3, 4]);
    assert_eq!(&out[5..out.len() - 1], want.as_bytes());
    let no_password = AuthContext {
        password: None,
        ..ctx(&secret, None, ChannelBinding::Prefer)
    };
    let err = Exchange::default()
        .step(AuthRequest::Cleartext, &no_password, &mut BytesMut::new())
        .unwrap_err();
    assert_eq!(err.to_string(), "fe_sendauth: no password supplied");
}
