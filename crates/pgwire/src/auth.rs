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
use crate::conninfo::{AuthMethod, AuthRequirement, ChannelBinding, Secret};
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

fn what_server_asked(method: Option<AuthMethod>) -> &'static str {
    match method {
        Some(AuthMethod::Password) => "server requested a cleartext password",
        Some(AuthMethod::Md5) => "server requested a hashed password",
        Some(AuthMethod::Gss) => "server requested GSSAPI authentication",
        Some(AuthMethod::Sspi) => "server requested SSPI authentication",
        Some(AuthMethod::ScramSha256) => "server requested SASL authentication",
        None => "server did not complete authentication",
    }
}

/// The exchange in progress.
#[derive(Default)]
pub(crate) struct Exchange {
    scram: Option<Scram>,
    /// SCRAM-SHA-256-PLUS was used.
    bound: bool,
    /// Some method was requested before AuthenticationOk.
    requested: bool,
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
        let method = match req {
            AuthRequest::Ok => None,
            AuthRequest::Cleartext => Some(AuthMethod::Password),
            AuthRequest::Md5 { .. } => Some(AuthMethod::Md5),
            AuthRequest::Sasl(_) => Some(AuthMethod::ScramSha256),
            AuthRequest::SaslContinue(_) | AuthRequest::SaslFinal(_) => None,
            AuthRequest::Unsupported(7 | 8) => Some(AuthMethod::Gss),
            AuthRequest::Unsupported(9) => Some(AuthMethod::Sspi),
            AuthRequest::Unsupported(_) => None,
        };
        if let Some(method) = method {
            self.requested = true;
            if !ctx.requirement.allows(method) {
                return Err(require_failed(ctx, Some(method)));
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
                frontend::password_message(password(ctx)?.as_bytes(), out).map_err(encode)?;
                Ok(false)
            }
            AuthRequest::Md5 { salt } => {
                let hash = md5_hash(ctx.user.as_bytes(), password(ctx)?.as_bytes(), salt);
                frontend::password_message(hash.as_bytes(), out).map_err(encode)?;
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
                Ok(false)
            }
            AuthRequest::Unsupported(7 | 8) => {
                Err(Error::auth("GSSAPI authentication not supported"))
            }
            AuthRequest::Unsupported(9) => Err(Error::auth("SSPI authentication not supported")),
            AuthRequest::Unsupported(2) => {
                Err(Error::auth("Kerberos 5 authentication not supported"))
            }
            AuthRequest::Unsupported(code) => Err(Error::auth(format!(
                "authentication method {code} not supported"
            ))),
        }
    }

    fn start_scram(
        &mut self,
        mechanisms: &[u8],
        ctx: &AuthContext<'_>,
        out: &mut BytesMut,
    ) -> Result<(), Error> {
        let offered = |name: &str| mechanisms.split(|b| *b == 0).any(|m| m == name.as_bytes());
        let plus = ctx.server_cert.is_some()
            && ctx.channel_binding != ChannelBinding::Disable
            && offered(sasl::SCRAM_SHA_256_PLUS);
        if ctx.channel_binding == ChannelBinding::Require && !plus {
            return Err(Error::auth(if ctx.server_cert.is_none() {
                "channel binding required, but SSL not in use"
            } else {
                "channel binding is required, but server did not offer an authentication \
                 method that supports channel binding"
            }));
        }
        let (mechanism, binding) = if plus {
            let cert = ctx.server_cert.unwrap_or_default();
            (
                sasl::SCRAM_SHA_256_PLUS,
                Binding::TlsServerEndPoint(crate::tls::server_end_point(cert)?),
            )
        } else if offered(sasl::SCRAM_SHA_256) {
            let binding =
                if ctx.server_cert.is_some() && ctx.channel_binding != ChannelBinding::Disable {
                    // We could bind, but the server did not offer it.
                    Binding::Unrequested
                } else {
                    Binding::Unsupported
                };
            (sasl::SCRAM_SHA_256, binding)
        } else {
            return Err(Error::auth(
                "none of the server's SASL authentication mechanisms are supported",
            ));
        };
        let scram = Scram::new(password(ctx)?, binding).map_err(Error::auth)?;
        frontend::sasl_initial_response(mechanism, scram.message(), out).map_err(encode)?;
        self.bound = plus;
        self.scram = Some(scram);
        Ok(())
    }

    fn finish_checks(&self, ctx: &AuthContext<'_>) -> Result<(), Error> {
        if self.scram.is_some() {
            return Err(Error::auth(
                "server reported authentication success before the SCRAM exchange completed",
            ));
        }
        if ctx.channel_binding == ChannelBinding::Require && !self.bound {
            return Err(Error::auth(
                "channel binding required, but server authenticated client without channel \
                 binding",
            ));
        }
        if !self.requested && !ctx.requirement.allows_no_authentication() {
            return Err(require_failed(ctx, None));
        }
        Ok(())
    }
}

fn require_failed(ctx: &AuthContext<'_>, method: Option<AuthMethod>) -> Error {
    Error::auth(format!(
        "authentication method requirement \"{}\" failed: {}",
        ctx.require_auth.unwrap_or_default(),
        what_server_asked(method)
    ))
}

/// The password to answer with; an empty one counts as none, as in libpq.
fn password<'a>(ctx: &AuthContext<'a>) -> Result<&'a str, Error> {
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
mod tests;
