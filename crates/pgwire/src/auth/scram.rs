//! The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), with the salted
//! password remembered between connections.
//!
//! Deriving the salted password is 4096 rounds of HMAC-SHA-256 (the
//! server's iteration count), a few milliseconds of CPU per connection,
//! which is most of what a client spends on a connection: under `-C`
//! (a connection per transaction) or with a thousand clients, it would be
//! most of the benchmark client's work, and libpq does it for every
//! connection. The result depends only on the password, the salt and the
//! iteration count, which the server sends unchanged for a role, so it is
//! computed once per process and kept (with a digest of the password, not
//! the password, as the key): every connection still runs the whole
//! exchange with fresh nonces and checks the server's signature. The HMAC
//! keeps its padded key's hash states, so each round costs two SHA-256
//! compressions instead of four.

use std::sync::Mutex;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use sha2::{Digest, Sha256};

/// How the exchange treats channel binding (the GS2 header it sends).
pub(crate) enum Binding {
    /// The client cannot bind (no TLS): `n,,`.
    Unsupported,
    /// The client could bind but the server offered no `-PLUS`: `y,,`.
    Unrequested,
    /// SCRAM-SHA-256-PLUS with `tls-server-end-point` and this hash of the
    /// server's certificate.
    TlsServerEndPoint(Vec<u8>),
}

impl Binding {
    fn gs2_header(&self) -> &'static str {
        match self {
            Binding::Unsupported => "n,,",
            Binding::Unrequested => "y,,",
            Binding::TlsServerEndPoint(_) => "p=tls-server-end-point,,",
        }
    }
}

enum State {
    /// The client-first message was sent; awaiting the server-first one.
    First,
    /// The client-final message was sent; this signature must come back.
    Final {
        server_signature: [u8; 32],
    },
    Done,
}

/// One SCRAM exchange.
pub(crate) struct Scram {
    password: Vec<u8>,
    binding: Binding,
    nonce: String,
    /// The message to send next.
    message: String,
    state: State,
}

impl Scram {
    /// Starts an exchange: [`Scram::message`] is the client-first message.
    pub(crate) fn new(password: &[u8], binding: Binding) -> Result<Scram, String> {
        let mut random = [0u8; 18];
        fill_random(&mut random)?;
        Ok(Scram::with_nonce(password, binding, BASE64.encode(random)))
    }

    fn with_nonce(password: impl AsRef<[u8]>, binding: Binding, nonce: String) -> Scram {
        let message = format!("{}n=,r={nonce}", binding.gs2_header());
        Scram {
            password: normalize(password.as_ref()),
            binding,
            nonce,
            message,
            state: State::First,
        }
    }

    pub(crate) fn message(&self) -> &[u8] {
        self.message.as_bytes()
    }

    /// Reads the server-first message and prepares the client-final one.
    pub(crate) fn update(&mut self, server_first: &[u8]) -> Result<(), String> {
        if !matches!(self.state, State::First) {
            return Err("unexpected server-first message".into());
        }
        let text = std::str::from_utf8(server_first).map_err(|_| "not UTF-8".to_string())?;
        let (nonce, salt, iterations) = parse_server_first(text)?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("server nonce does not extend the client nonce".into());
        }
        let salted = salted_password(&self.password, &salt, iterations);
        let mut binding = self.binding.gs2_header().as_bytes().to_vec();
        if let Binding::TlsServerEndPoint(hash) = &self.binding {
            binding.extend_from_slice(hash);
        }
        let without_proof = format!("c={},r={nonce}", BASE64.encode(&binding));
        let client_first_bare = &self.message[self.binding.gs2_header().len()..];
        let auth_message = format!("{client_first_bare},{text},{without_proof}");
        let salted_key = HmacKey::new(&salted);
        let client_key = salted_key.mac(&[b"Client Key"]);
        let stored_key: [u8; 32] = Sha256::digest(client_key).into();
        let signature = HmacKey::new(&stored_key).mac(&[auth_message.as_bytes()]);
        let mut proof = client_key;
        for (p, s) in proof.iter_mut().zip(signature) {
            *p ^= s;
        }
        let server_key = salted_key.mac(&[b"Server Key"]);
        self.state = State::Final {
            server_signature: HmacKey::new(&server_key).mac(&[auth_message.as_bytes()]),
        };
        self.message = format!("{without_proof},p={}", BASE64.encode(proof));
        Ok(())
    }

    /// Checks the server-final message.
    pub(crate) fn finish(&mut self, server_final: &[u8]) -> Result<(), String> {
        let State::Final { server_signature } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Err("unexpected server-final message".into());
        };
        let text = std::str::from_utf8(server_final).map_err(|_| "not UTF-8".to_string())?;
        if let Some(error) = text.strip_prefix("e=") {
            return Err(format!("server error: {error}"));
        }
        let verifier = text
            .split(',')
            .find_map(|a| a.strip_prefix("v="))
            .ok_or("no verifier")?;
        let verifier = BASE64.decode(verifier).map_err(|_| "bad verifier")?;
        if verifier != server_signature {
            return Err("wrong server signature".into());
        }
        Ok(())
    }
}

/// The most rounds a server may ask for: far above any server's setting
/// (PostgreSQL's default is 4096), far below the hours of CPU that a
/// hostile server asking for 2^32 would cost.
const MAX_ITERATIONS: u32 = 10_000_000;

/// `r=`, `s=` and `i=` of the server-first message.
fn parse_server_first(text: &str) -> Result<(&str, Vec<u8>, u32), String> {
    let mut parts = text.split(',');
    let mut field = |name: &str| {
        parts
            .next()
            .and_then(|p| p.strip_prefix(name))
            .ok_or_else(|| format!("missing {name}"))
    };
    let nonce = field("r=")?;
    let salt = BASE64
        .decode(field("s=")?)
        .map_err(|_| "bad salt".to_string())?;
    let iterations: u32 = field("i=")?
        .parse()
        .map_err(|_| "bad iteration count".to_string())?;
    if iterations == 0 || iterations > MAX_ITERATIONS {
        return Err(format!(
            "iteration count {iterations} out of range (1 to {MAX_ITERATIONS})"
        ));
    }
    Ok((nonce, salt, iterations))
}

/// SASLprep of the password, or its bytes as they are where it is not
/// UTF-8, where SASLprep refuses it or where it leaves nothing (as libpq
/// and the server do).
fn normalize(password: impl AsRef<[u8]>) -> Vec<u8> {
    let bytes = password.as_ref();
    match std::str::from_utf8(bytes).map(stringprep::saslprep) {
        Ok(Ok(p)) if !p.is_empty() => p.into_owned().into_bytes(),
        _ => bytes.to_vec(),
    }
}

/// The last salted password computed, and what it was computed from.
struct Remembered {
    password_digest: [u8; 32],
    salt: Vec<u8>,
    iterations: u32,
    salted: [u8; 32],
}

static REMEMBERED: Mutex<Option<Remembered>> = Mutex::new(None);

/// Hi(password, salt, iterations) of RFC 5802, computed once per process
/// for the same inputs.
fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let digest: [u8; 32] = Sha256::digest(password).into();
    let matches = |r: &Remembered| {
        r.password_digest == digest && r.salt == salt && r.iterations == iterations
    };
    if let Ok(guard) = REMEMBERED.lock() {
        if let Some(r) = guard.as_ref().filter(|r| matches(r)) {
            return r.salted;
        }
    }
    let salted = hi(password, salt, iterations);
    if let Ok(mut guard) = REMEMBERED.lock() {
        *guard = Some(Remembered {
            password_digest: digest,
            salt: salt.to_vec(),
            iterations,
            salted,
        });
    }
    salted
}

fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let key = HmacKey::new(password);
    let mut u = key.mac(&[salt, &[0, 0, 0, 1]]);
    let mut result = u;
    for _ in 1..iterations {
        u = key.mac(&[&u]);
        for (r, x) in result.iter_mut().zip(u) {
            *r ^= x;
        }
    }
    result
}

/// HMAC-SHA-256 with the hash states of the padded key kept.
struct HmacKey {
    inner: Sha256,
    outer: Sha256,
}

impl HmacKey {
    fn new(key: &[u8]) -> HmacKey {
        let mut block = [0u8; 64];
        if key.len() > block.len() {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| {
            let mut hash = Sha256::new();
            hash.update(block.map(|b| b ^ byte));
            hash
        };
        HmacKey {
            inner: pad(0x36),
            outer: pad(0x5c),
        }
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut inner = self.inner.clone();
        for part in parts {
            inner.update(part);
        }
        let mut outer = self.outer.clone();
        outer.update(inner.finalize());
        outer.finalize().into()
    }
}

fn fill_random(buf: &mut [u8]) -> Result<(), String> {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: the pointer and length describe the unfilled part of buf.
        let n =
            unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("could not generate nonce: {e}"));
            }
        } else {
            filled += n as usize;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange (user "user", password "pencil").
    /// PostgreSQL ignores the SCRAM user name and pgbolt sends it empty, so
    /// the test puts RFC 7677's client-first message in place first.
    #[test]
    fn the_exchange_matches_rfc_7677() {
        let mut scram = Scram::with_nonce(
            "pencil",
            Binding::Unsupported,
            "rOprNGfwEbeRWgbNEkqO".to_string(),
        );
        assert_eq!(scram.message(), b"n,,n=,r=rOprNGfwEbeRWgbNEkqO");
        scram.message = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO".to_string();
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        scram
            .update(server_first.as_bytes())
            .expect("RFC 7677's server-first message");
        assert_eq!(
            String::from_utf8_lossy(scram.message()),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram
            .finish(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .expect("RFC 7677's server signature");
    }

    #[test]
    fn a_wrong_server_signature_is_refused() {
        let mut scram = Scram::with_nonce("pencil", Binding::Unsupported, "abc".to_string());
        scram
            .update(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .expect("a valid server-first message");
        assert!(scram
            .finish(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .is_err());
    }

    #[test]
    fn the_salted_password_is_remembered_for_the_same_inputs_only() {
        let salt = b"0123456789abcdef";
        let first = salted_password(b"pencil", salt, 4096);
        assert_eq!(first, hi(b"pencil", salt, 4096));
        assert_eq!(salted_password(b"pencil", salt, 4096), first);
        assert_eq!(
            salted_password(b"pencil2", salt, 4096),
            hi(b"pencil2", salt, 4096)
        );
        assert_eq!(
            salted_password(b"pencil", b"other salt", 4096),
            hi(b"pencil", b"other salt", 4096)
        );
        assert_eq!(
            salted_password(b"pencil", salt, 4097),
            hi(b"pencil", salt, 4097)
        );
    }

    #[test]
    fn a_server_nonce_that_does_not_extend_ours_is_refused() {
        let mut scram = Scram::with_nonce("x", Binding::Unsupported, "abc".to_string());
        assert!(scram.update(b"r=abd123,s=AAAA,i=4096").is_err());
        let mut scram = Scram::with_nonce("x", Binding::Unsupported, "abc".to_string());
        assert!(scram.update(b"r=abc,s=AAAA,i=4096").is_err());
        for i in ["0", "10000001", "4294967295"] {
            let mut scram = Scram::with_nonce("x", Binding::Unsupported, "abc".to_string());
            let first = format!("r=abc1,s=AAAA,i={i}");
            assert!(scram.update(first.as_bytes()).is_err(), "i={i}");
        }
    }

    #[test]
    fn the_binding_header_goes_into_the_final_message() {
        let cases = [
            (Binding::Unrequested, "c=eSws,"),
            (
                Binding::TlsServerEndPoint(vec![1, 2, 3]),
                "c=cD10bHMtc2VydmVyLWVuZC1wb2ludCwsAQID,",
            ),
        ];
        for (binding, expected) in cases {
            let mut scram = Scram::with_nonce("pencil", binding, "abc".to_string());
            scram
                .update(b"r=abcdef,s=AAAA,i=1")
                .expect("a valid server-first message");
            let message = String::from_utf8_lossy(scram.message()).into_owned();
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn a_server_error_in_the_final_message_is_reported() {
        let mut scram = Scram::with_nonce("pencil", Binding::Unsupported, "abc".to_string());
        scram
            .update(b"r=abcdef,s=AAAA,i=1")
            .expect("a valid server-first message");
        let error = scram
            .finish(b"e=invalid-proof")
            .expect_err("e= is an error");
        assert!(error.contains("invalid-proof"), "{error}");
    }

    #[test]
    fn a_password_saslprep_empties_is_used_as_it_is() {
        assert_eq!(normalize("\u{AD}"), "\u{AD}".as_bytes());
        assert_eq!(normalize("I\u{AD}X"), b"IX");
    }
}
