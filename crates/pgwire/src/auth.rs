//! The client side of authentication: cleartext, MD5, SCRAM-SHA-256 and
//! SCRAM-SHA-256-PLUS, with `channel_binding` and `require_auth` enforced.
//!
//! The SCRAM computation is in [`scram`] (which remembers the salted
//! password between connections); this module picks the mechanism,
//! supplies the channel binding data (`tls-server-end-point`, the hash of
//! the server certificate), and refuses exchanges the configuration rules
//! out. Kerberos, GSSAPI and SSPI are not supported.

use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl;
use postgres_protocol::message::frontend;

use crate::backend::AuthRequest;
use crate::conninfo::{AuthMethod, AuthRequirement, ChannelBinding, SaslMechanism, Secret};
use crate::error::Error;

mod scram;
use scram::{Binding, Scram};

/// What the exchange needs to know about the connection.
pub(crate) struct AuthContext<'a> {
    pub user: &'a str,
    pub password: Option<&'a Secret>,
    /// The server's end-entity certificate when TLS is in use.
    pub server_cert: Option<&'a [u8]>,
    pub channel_binding: ChannelBinding,
    /// `require_auth` as written (for messages) and as parsed.
    pub require_auth: Option<&'a str>,
    pub requirement: AuthRequirement,
}

/// What the server asked for, as `require_auth` judges it.
#[derive(Clone, Copy)]
enum Asked {
    Method(AuthMethod),
    /// A request code no `require_auth` method names (Kerberos 4 and 5,
    /// crypt, SCM credentials, anything newer).
    Unknown,
    /// AuthenticationOk with no completed exchange before it.
    Nothing,
}

impl Asked {
    fn of(req: AuthRequest<'_>) -> Option<Asked> {
        Some(match req {
            AuthRequest::Ok | AuthRequest::SaslContinue(_) | AuthRequest::SaslFinal(_) => {
                return None
            }
            AuthRequest::Cleartext => Asked::Method(AuthMethod::Password),
            AuthRequest::Md5 { .. } => Asked::Method(AuthMethod::Md5),
            AuthRequest::Sasl(_) => Asked::Method(AuthMethod::ScramSha256),
            AuthRequest::Unsupported(7 | 8) => Asked::Method(AuthMethod::Gss),
            AuthRequest::Unsupported(9) => Asked::Method(AuthMethod::Sspi),
            AuthRequest::Unsupported(_) => Asked::Unknown,
        })
    }

    fn allowed_by(self, requirement: &AuthRequirement) -> bool {
        match self {
            Asked::Method(method) => requirement.allows(method),
            Asked::Unknown => false,
            Asked::Nothing => requirement.allows_no_authentication(),
        }
    }

    fn description(self) -> &'static str {
        match self {
            Asked::Method(AuthMethod::Password) => "server requested a cleartext password",
            Asked::Method(AuthMethod::Md5) => "server requested a hashed password",
            Asked::Method(AuthMethod::Gss) => "server requested GSSAPI authentication",
            Asked::Method(AuthMethod::Sspi) => "server requested SSPI authentication",
            Asked::Method(AuthMethod::ScramSha256) => "server requested SASL authentication",
            Asked::Unknown => "server requested an unknown authentication type",
            Asked::Nothing => "server did not complete authentication",
        }
    }
}

/// The exchange in progress.
#[derive(Default)]
pub(crate) struct Exchange {
    scram: Option<Scram>,
    /// SCRAM-SHA-256-PLUS was used.
    bound: bool,
    /// The client finished its part: a password or hash was sent, or the
    /// SCRAM exchange was verified (libpq's `client_finished_auth`).
    finished: bool,
    /// A SASL exchange was started (a second AuthenticationSASL is refused).
    sasl_started: bool,
}

impl Exchange {
    /// Answers one authentication request, writing the response into `out`.
    /// Returns true on AuthenticationOk.
    pub(crate) fn step(
        &mut self,
        req: AuthRequest<'_>,
        ctx: &AuthContext<'_>,
        out: &mut BytesMut,
    ) -> Result<bool, Error> {
        if let Some(asked) = Asked::of(req) {
            if ctx.require_auth.is_some() && !asked.allowed_by(&ctx.requirement) {
                return Err(require_failed(ctx, asked.description()));
            }
        }
        let sasl_or_ok = matches!(
            req,
            AuthRequest::Ok
                | AuthRequest::Sasl(_)
                | AuthRequest::SaslContinue(_)
                | AuthRequest::SaslFinal(_)
        );
        if ctx.channel_binding == ChannelBinding::Require && !sasl_or_ok {
            // A password, MD5, GSSAPI or SSPI request can never bind the
            // channel: libpq refuses it before answering, in these words.
            return Err(Error::auth(
                "channel binding required but not supported by server's authentication request",
            ));
        }
        match req {
            AuthRequest::Ok => {
                self.finish_checks(ctx)?;
                Ok(true)
            }
            AuthRequest::Cleartext => {
                frontend::password_message(password(ctx)?, out).map_err(encode)?;
                self.finished = true;
                Ok(false)
            }
            AuthRequest::Md5 { salt } => {
                let hash = md5_hash(ctx.user.as_bytes(), password(ctx)?, salt);
                frontend::password_message(hash.as_bytes(), out).map_err(encode)?;
                self.finished = true;
                Ok(false)
            }
            AuthRequest::Sasl(mechanisms) => {
                self.start_scram(mechanisms, ctx, out)?;
                Ok(false)
            }
            AuthRequest::SaslContinue(data) => {
                let scram = self.scram.as_mut().ok_or_else(out_of_order)?;
                scram.update(data).map_err(|e| {
                    Error::auth(format!("malformed SCRAM message from server: {e}"))
                })?;
                frontend::sasl_response(scram.message(), out).map_err(encode)?;
                Ok(false)
            }
            AuthRequest::SaslFinal(data) => {
                let mut scram = self.scram.take().ok_or_else(out_of_order)?;
                scram
                    .finish(data)
                    .map_err(|e| Error::auth(format!("invalid SCRAM server signature: {e}")))?;
                self.finished = true;
                Ok(false)
            }
            AuthRequest::Unsupported(7 | 8) => {
                Err(Error::auth("GSSAPI authentication not supported"))
            }
            AuthRequest::Unsupported(9) => Err(Error::auth("SSPI authentication not supported")),
            AuthRequest::Unsupported(1) => {
                Err(Error::auth("Kerberos 4 authentication not supported"))
            }
            AuthRequest::Unsupported(2) => {
                Err(Error::auth("Kerberos 5 authentication not supported"))
            }
            AuthRequest::Unsupported(4) => Err(Error::auth("Crypt authentication not supported")),
            AuthRequest::Unsupported(code) => Err(Error::auth(format!(
                "authentication method {code} not supported"
            ))),
        }
    }

    /// Starts SCRAM with libpq 18's checks in libpq's order: TLS for
    /// `channel_binding=require`, one exchange only, the mechanism chosen
    /// from the server's list, `require_auth`'s mechanisms, then channel
    /// binding and the password.
    fn start_scram(
        &mut self,
        mechanisms: &[u8],
        ctx: &AuthContext<'_>,
        out: &mut BytesMut,
    ) -> Result<(), Error> {
        let tls = ctx.server_cert.is_some();
        if ctx.channel_binding == ChannelBinding::Require && !tls {
            return Err(Error::auth("channel binding required, but SSL not in use"));
        }
        if self.sasl_started {
            return Err(Error::auth("duplicate SASL authentication request"));
        }
        self.sasl_started = true;
        let mut chosen = None;
        for name in mechanisms.split(|b| *b == 0).take_while(|m| !m.is_empty()) {
            if name == sasl::SCRAM_SHA_256_PLUS.as_bytes() {
                if !tls {
                    // A server that offers binding without TLS has lost its
                    // TLS somewhere (a proxy?): libpq stops here.
                    return Err(Error::auth(
                        "server offered SCRAM-SHA-256-PLUS authentication over a non-SSL connection",
                    ));
                }
                if ctx.channel_binding != ChannelBinding::Disable {
                    chosen = Some(sasl::SCRAM_SHA_256_PLUS);
                }
            } else if name == sasl::SCRAM_SHA_256.as_bytes() && chosen.is_none() {
                chosen = Some(sasl::SCRAM_SHA_256);
            }
        }
        let Some(mechanism) = chosen else {
            return Err(Error::auth(
                "none of the server's SASL authentication mechanisms are supported",
            ));
        };
        // From here on libpq counts the password as needed: a refusal
        // below without one lets pgbench ask for it and try again.
        let unanswered = password(ctx).is_err();
        if ctx.require_auth.is_some()
            && !ctx.requirement.allows_mechanism(SaslMechanism::ScramSha256)
        {
            return Err(require_failed(
                ctx,
                &format!("server requested {mechanism} authentication"),
            )
            .wanting_password(unanswered));
        }
        let plus = mechanism == sasl::SCRAM_SHA_256_PLUS;
        if ctx.channel_binding == ChannelBinding::Require && !plus {
            return Err(Error::auth(
                "channel binding is required, but server did not offer an authentication \
                 method that supports channel binding",
            )
            .wanting_password(unanswered));
        }
        let binding = match ctx.server_cert {
            Some(cert) if plus => Binding::TlsServerEndPoint(crate::tls::server_end_point(cert)?),
            // We could bind, but the server did not offer it.
            Some(_) if ctx.channel_binding != ChannelBinding::Disable => Binding::Unrequested,
            _ => Binding::Unsupported,
        };
        let scram = Scram::new(password(ctx)?, binding).map_err(Error::auth)?;
        frontend::sasl_initial_response(mechanism, scram.message(), out).map_err(encode)?;
        self.bound = plus;
        self.scram = Some(scram);
        Ok(())
    }

    /// AuthenticationOk: libpq's checks in libpq's order (`require_auth`,
    /// then channel binding), then pgbolt's own refusal of a SCRAM
    /// exchange cut short, which libpq lets pass when neither check applies.
    fn finish_checks(&self, ctx: &AuthContext<'_>) -> Result<(), Error> {
        if ctx.require_auth.is_some()
            && !self.finished
            && !Asked::Nothing.allowed_by(&ctx.requirement)
        {
            return Err(require_failed(ctx, Asked::Nothing.description()));
        }
        if ctx.channel_binding == ChannelBinding::Require && !(self.bound && self.finished) {
            return Err(Error::auth(
                "channel binding required, but server authenticated client without channel \
                 binding",
            ));
        }
        if self.scram.is_some() {
            return Err(Error::auth(
                "server reported authentication success before the SCRAM exchange completed",
            ));
        }
        Ok(())
    }
}

fn require_failed(ctx: &AuthContext<'_>, reason: &str) -> Error {
    Error::auth(format!(
        "authentication method requirement \"{}\" failed: {reason}",
        ctx.require_auth.unwrap_or_default(),
    ))
}

/// The password to answer with; an empty one counts as none, as in libpq.
fn password<'a>(ctx: &AuthContext<'a>) -> Result<&'a [u8], Error> {
    ctx.password
        .map(Secret::expose)
        .filter(|p| !p.is_empty())
        .ok_or_else(Error::no_password)
}

fn out_of_order() -> Error {
    Error::protocol("SASL message from server outside of a SASL exchange")
}

fn encode(e: std::io::Error) -> Error {
    Error::protocol(format!("could not encode authentication message: {e}"))
}

#[cfg(test)]
mod order_tests;
#[cfg(test)]
mod tests;
