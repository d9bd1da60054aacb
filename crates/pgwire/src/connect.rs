//! Opening a connection without blocking: the host list, libpq's fallbacks,
//! and the per-attempt state machine in [`attempt`].
//!
//! A [`Connector`] is built once per configuration (it holds the TLS client
//! configuration, which is costly to build) and starts any number of
//! [`Connecting`]s. Each `Connecting` walks the host list in order, and each
//! host's addresses in order; an address that fails is recorded and the next
//! one tried, so the final error lists every attempt, as libpq's does.
//!
//! Fallbacks follow libpq: `sslmode=prefer` retries the same address without
//! TLS when the handshake or the TLS startup fails; `sslmode=allow` retries
//! with TLS when the server rejects the plain startup. Unix-domain sockets
//! never use TLS. `target_session_attrs=prefer-standby` makes a second pass
//! over the hosts accepting any server when no standby was found.

mod attempt;

use std::collections::VecDeque;
use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use socket2::SockAddr;

use crate::connection::Connection;
use crate::conninfo::{Config, HostKind, SslMode, SslNegotiation, TargetSessionAttrs};
use crate::error::{Attempt, DbError, Error, ErrorKind};
use attempt::{is_not_ready, After, Step, Try};

/// The readiness a connection waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    Read,
    Write,
}

/// What [`Connecting::poll`] achieved.
#[derive(Debug)]
pub enum ConnectProgress {
    /// Wait until `fd` is ready for `interest` (or the deadline passes),
    /// then poll again. When `new_socket` is true the fd belongs to a socket
    /// opened during this poll (the first one, or the next host's, or a
    /// retry with or without TLS): register it with the poller. Any earlier
    /// socket of this `Connecting` is closed by then (epoll forgets closed
    /// fds by itself; the number may even be reused for the new socket).
    Wait {
        fd: RawFd,
        interest: Interest,
        new_socket: bool,
    },
    /// The listener's accept queue is full (a Unix-domain socket's
    /// `connect` said `EAGAIN`): there is no socket to wait on yet. Poll
    /// again after giving the listener time to accept (a short timer, not
    /// at once: that would spin), or at [`Connecting::deadline`] at the
    /// latest; `connect_timeout` runs from the first try.
    Busy,
    /// The session is established and ready for queries (boxed: the
    /// waits are many and small).
    Ready(Box<Connection>),
}

pub(crate) struct Shared {
    pub config: Config,
    /// The TLS configuration, or why there is none: the kind tells a
    /// configuration that cannot be used (every connection fails) from one
    /// whose handshake can only fail (`prefer` then goes on without TLS).
    pub tls: Result<Option<Arc<ClientConfig>>, (ErrorKind, String)>,
}

/// Starts connections for one configuration; cheap to clone.
#[derive(Clone)]
pub struct Connector {
    shared: Arc<Shared>,
}

impl Connector {
    /// Prepares TLS for `config`. Problems that libpq reports per attempt
    /// (a missing root certificate, say) are reported by the attempts that
    /// need TLS, so that a Unix-socket connection still works.
    pub fn new(config: &Config) -> Result<Connector, Error> {
        if config.sslnegotiation == SslNegotiation::Direct
            && matches!(
                config.sslmode,
                SslMode::Disable | SslMode::Allow | SslMode::Prefer
            )
        {
            return Err(Error::config(format!(
                "weak sslmode \"{}\" may not be used with sslnegotiation=direct (use \
                 \"require\", \"verify-ca\", or \"verify-full\")",
                crate::tls::mode_name(config.sslmode)
            )));
        }
        config
            .auth_requirement()
            .map_err(|e| Error::config(e.to_string()))?;
        let tls = crate::tls::client_config(config).map_err(|e| (e.kind(), e.to_string()));
        Ok(Connector {
            shared: Arc::new(Shared {
                config: config.clone(),
                tls,
            }),
        })
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Begins connecting; nothing happens until the first [`Connecting::poll`].
    pub fn connect(&self) -> Connecting {
        let mut order: Vec<usize> = (0..self.shared.config.hosts.len()).collect();
        if self.shared.config.load_balance_random {
            shuffle(&mut order);
        }
        Connecting {
            shared: self.shared.clone(),
            order,
            next_host: 0,
            second_pass: false,
            pending: VecDeque::new(),
            current: None,
            attempts: Vec::new(),
            warnings: Vec::new(),
            notices: Vec::new(),
            announced: false,
            started: false,
        }
    }
}

/// One address to try, with what the messages and TLS need to know.
pub(crate) struct Candidate {
    pub addr: SockAddr,
    /// `on socket "..."` / `at "host" (addr), port N`.
    pub target: String,
    /// The name the server certificate must match; `None` for Unix sockets.
    pub tls_name: Option<String>,
    pub host_index: usize,
}

/// A connection being opened. See [`ConnectProgress`] for the protocol.
pub struct Connecting {
    shared: Arc<Shared>,
    /// The order in which the hosts are tried (indexes into the host list).
    order: Vec<usize>,
    next_host: usize,
    second_pass: bool,
    pending: VecDeque<Candidate>,
    /// Boxed: a `Connecting` is moved around by its owner, a `Try` is large.
    current: Option<Box<Try>>,
    attempts: Vec<Attempt>,
    warnings: Vec<String>,
    /// Notices servers sent during the attempts so far.
    notices: Vec<DbError>,
    /// The current socket was already reported to the caller.
    announced: bool,
    /// An attempt has already got under way (its socket is connecting or
    /// connected).
    started: bool,
}

impl Connecting {
    /// Starts connecting with a one-off [`Connector`].
    pub fn start(config: &Config) -> Result<Connecting, Error> {
        Ok(Connector::new(config)?.connect())
    }

    /// Advances as far as possible without blocking.
    pub fn poll(&mut self) -> Result<ConnectProgress, Error> {
        loop {
            let Some(current) = self.current.as_mut() else {
                self.current = Some(Box::new(self.next_try()?));
                self.announced = false;
                if !std::mem::replace(&mut self.started, true) {
                    self.check_connect_timeout()?;
                }
                continue;
            };
            if current.deadline().is_some_and(|d| Instant::now() >= d) {
                self.fail(Error::timeout());
                continue;
            }
            match current.step(&self.shared, self.second_pass) {
                Ok(Step::Wait(interest)) => {
                    let new_socket = !std::mem::replace(&mut self.announced, true);
                    return Ok(ConnectProgress::Wait {
                        fd: current.fd(),
                        interest,
                        new_socket,
                    });
                }
                Ok(Step::Busy) => return Ok(ConnectProgress::Busy),
                Ok(Step::Ready) => {
                    let mut done = self
                        .current
                        .take()
                        .ok_or_else(|| Error::state("no attempt"))?;
                    self.notices.append(&mut done.notices);
                    return Ok(ConnectProgress::Ready(Box::new((*done).into_connection())));
                }
                Err(e) => self.fail(e),
            }
        }
    }

    /// libpq reads `connect_timeout` once its first attempt is under way
    /// (its socket connecting), after any that failed at once: a value
    /// that is not an integer ends the connection there, with those
    /// attempts and this one named in the error.
    fn check_connect_timeout(&mut self) -> Result<(), Error> {
        let Some(value) = self.shared.config.invalid_connect_timeout.as_deref() else {
            return Ok(());
        };
        let error = Error::config(format!(
            "invalid integer value \"{value}\" for connection option \"connect_timeout\""
        ));
        if let Some(current) = self.current.take() {
            self.attempts.push(Attempt {
                target: Some(current.target().to_owned()),
                error,
            });
        }
        Err(Error::attempts(std::mem::take(&mut self.attempts)))
    }

    /// Sends the connection request again, on a new socket, when the
    /// current attempt's socket has not connected yet: over TCP, a listener
    /// whose accept queue is full drops the handshake, and the kernel sends
    /// it again only a second later. True when a new socket was opened;
    /// the next [`Connecting::poll`] then reports it (`new_socket`) and
    /// the old one is closed. `connect_timeout` still runs from the first
    /// socket. Which stall is worth this is the caller's choice.
    pub fn redial(&mut self) -> bool {
        let Some(current) = self.current.as_mut() else {
            return false;
        };
        if !current.redial(&self.shared.config) {
            return false;
        }
        self.announced = false;
        true
    }

    /// When the current attempt times out (`connect_timeout`); call
    /// [`Connecting::poll`] then even if the socket shows no readiness.
    pub fn deadline(&self) -> Option<Instant> {
        self.current.as_ref().and_then(|t| t.deadline())
    }

    /// Warnings produced so far (an unsafe password file, in libpq's words).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Notices the server sent as the session started (that a long
    /// `application_name` is truncated, say), failed attempts' included.
    /// libpq's default notice processor prints them as they arrive, so
    /// pgbench shows them once per connection.
    pub fn take_notices(&mut self) -> Vec<DbError> {
        std::mem::take(&mut self.notices)
    }

    /// Records the failure of the current attempt, or retries the same
    /// address with or without TLS when `sslmode` says so.
    fn fail(&mut self, error: Error) {
        let Some(mut current) = self.current.take() else {
            return;
        };
        self.notices.append(&mut current.notices);
        self.announced = false;
        let config = &self.shared.config;
        if current.retry_without_appname(config, &error) {
            self.attempts.push(Attempt {
                target: Some(current.target().to_owned()),
                error,
            });
            let tls = current.uses_tls();
            let failed = *current;
            let retried = failed.retried();
            match Try::start(
                &self.shared,
                failed.into_candidate(),
                tls,
                &mut self.warnings,
            ) {
                Ok(mut t) => {
                    t.repeat_without_appname(retried);
                    self.current = Some(Box::new(t));
                }
                Err(failed) => self.attempts.push(Attempt {
                    target: Some(failed.0.target),
                    error: failed.1,
                }),
            }
            return;
        }
        let retry = if is_not_ready(&error) {
            None
        } else {
            current.fallback(config, &error)
        };
        if retry.is_none() {
            match current.after(&error) {
                After::NextAddress => {}
                After::NextHost => self.pending.clear(),
                After::Stop => {
                    self.pending.clear();
                    self.next_host = config.hosts.len();
                    self.second_pass = true;
                }
            }
        }
        self.attempts.push(Attempt {
            target: Some(current.target().to_owned()),
            error,
        });
        if let Some(tls) = retry {
            match Try::start(
                &self.shared,
                (*current).into_candidate(),
                tls,
                &mut self.warnings,
            ) {
                Ok(mut t) => {
                    t.mark_retry();
                    self.current = Some(Box::new(t));
                }
                Err(failed) => self.attempts.push(Attempt {
                    target: Some(failed.0.target),
                    error: failed.1,
                }),
            }
        }
    }

    /// Opens the socket for the next candidate address, resolving host
    /// names as they come up; the error of the whole list when none is left.
    fn next_try(&mut self) -> Result<Try, Error> {
        let config = &self.shared.config;
        loop {
            if let Some(candidate) = self.pending.pop_front() {
                let tls = initial_tls(config, &candidate);
                match Try::start(&self.shared, candidate, tls, &mut self.warnings) {
                    Ok(t) => return Ok(t),
                    Err(failed) => {
                        self.attempts.push(Attempt {
                            target: Some(failed.0.target),
                            error: failed.1,
                        });
                        continue;
                    }
                }
            }
            if self.next_host >= config.hosts.len() {
                let any_standby_miss = self
                    .attempts
                    .iter()
                    .any(|a| a.error.kind() == ErrorKind::SessionAttrs);
                if config.target_session_attrs == TargetSessionAttrs::PreferStandby
                    && !self.second_pass
                    && any_standby_miss
                {
                    self.second_pass = true;
                    self.next_host = 0;
                    continue;
                }
                if self.attempts.is_empty() {
                    return Err(Error::config("no host to connect to"));
                }
                return Err(Error::attempts(std::mem::take(&mut self.attempts)));
            }
            let index = self
                .order
                .get(self.next_host)
                .copied()
                .unwrap_or(self.next_host);
            self.next_host += 1;
            // libpq reads a host's port when its turn comes: out of range,
            // the host is skipped; not an integer, the connection ends.
            if config.hosts[index].port == 0 {
                let written = config.host_spellings.get(index).map(|s| s.port.as_str());
                if let Err(e) = crate::conninfo::port(written.unwrap_or("0")) {
                    let fatal = !matches!(e, crate::conninfo::Error::InvalidPort { .. });
                    self.attempts.push(Attempt {
                        target: None,
                        error: Error::config(e.to_string()),
                    });
                    if fatal {
                        return Err(Error::attempts(std::mem::take(&mut self.attempts)));
                    }
                    continue;
                }
            }
            // Then its `hostaddr`: one the resolver refuses skips the host.
            if let Some(written) = config.host_spellings.get(index) {
                if !written.hostaddr.is_empty() {
                    if let Err(e) = crate::conninfo::host_address(&written.hostaddr) {
                        self.attempts.push(Attempt {
                            target: None,
                            error: Error::config(e.to_string()),
                        });
                        continue;
                    }
                }
            }
            match candidates(config, index) {
                Ok(list) => self.pending.extend(list),
                Err(e) => self.attempts.push(Attempt {
                    target: None,
                    error: e,
                }),
            }
        }
    }
}

/// Whether the first try at a candidate uses TLS: never over Unix sockets,
/// not first under `allow`, otherwise unless TLS is disabled.
fn initial_tls(config: &Config, candidate: &Candidate) -> bool {
    candidate.tls_name.is_some() && !matches!(config.sslmode, SslMode::Disable | SslMode::Allow)
}

/// The addresses of host number `index`, in resolver order.
fn candidates(config: &Config, index: usize) -> Result<Vec<Candidate>, Error> {
    let host = &config.hosts[index];
    let port = host.port;
    match &host.kind {
        HostKind::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            if path.as_os_str().len() > MAX_SOCKET_PATH {
                return Err(Error::config(format!(
                    "Unix-domain socket path \"{}\" is too long (maximum {MAX_SOCKET_PATH} bytes)",
                    path.display()
                )));
            }
            let addr = SockAddr::unix(socket_name(&path)).map_err(Error::io)?;
            Ok(vec![Candidate {
                addr,
                target: format!("on socket \"{}\"", path.display()),
                tls_name: None,
                host_index: index,
            }])
        }
        HostKind::Tcp { name, addr } => {
            let mut addrs: Vec<SocketAddr> = match (addr, name) {
                (Some(ip), _) => vec![SocketAddr::new(*ip, port)],
                (None, Some(name)) => (name.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| {
                        let text = e.to_string();
                        let why = text
                            .strip_prefix("failed to lookup address information: ")
                            .unwrap_or(&text);
                        Error::config(format!(
                            "could not translate host name \"{name}\" to address: {why}"
                        ))
                    })?
                    .collect(),
                (None, None) => vec![SocketAddr::new([127, 0, 0, 1].into(), port)],
            };
            if config.load_balance_random {
                shuffle(&mut addrs);
            }
            Ok(addrs
                .into_iter()
                .map(|sa| {
                    let ip = sa.ip().to_string();
                    let tls_name = name.clone().unwrap_or_else(|| ip.clone());
                    // As libpq: a `hostaddr` is shown alone, as written; a
                    // resolved name is followed by its address when they
                    // differ; the port is shown as written.
                    let spelling = config.host_spellings.get(index);
                    let written = spelling
                        .map(|s| s.hostaddr.as_str())
                        .filter(|a| !a.is_empty());
                    let port = spelling
                        .map(|s| s.port.as_str())
                        .filter(|p| !p.is_empty())
                        .map_or_else(|| port.to_string(), str::to_owned);
                    let target = if let Some(written) = written {
                        format!("at \"{written}\", port {port}")
                    } else if addr.is_some() || tls_name == ip {
                        format!("at \"{ip}\", port {port}")
                    } else {
                        format!("at \"{tls_name}\" ({ip}), port {port}")
                    };
                    Candidate {
                        addr: SockAddr::from(sa),
                        target,
                        tls_name: Some(tls_name),
                        host_index: index,
                    }
                })
                .collect())
        }
    }
}

/// Puts `items` in a random order (Fisher-Yates), for
/// `load_balance_hosts=random`. The randomness comes from the standard
/// library's per-process random hash keys; it spreads connections, it
/// protects nothing.
fn shuffle<T>(items: &mut [T]) {
    use std::hash::{BuildHasher, Hasher};
    let mut state = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1;
    for i in (1..items.len()).rev() {
        // xorshift64: a new 64-bit value for each draw.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// The longest Unix-domain socket path: `sun_path` holds 108 bytes with
/// the terminating NUL, and libpq counts an abstract name's `@` too.
const MAX_SOCKET_PATH: usize = 107;

/// The name to connect to for a socket path: a path starting with `@`
/// names a socket in Linux's abstract namespace, whose name is the path
/// with a NUL byte in place of the `@` (libpq's and the server's rule).
fn socket_name(path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    match bytes.strip_prefix(b"@") {
        Some(rest) => {
            let mut name = Vec::with_capacity(bytes.len());
            name.push(0);
            name.extend_from_slice(rest);
            PathBuf::from(OsString::from_vec(name))
        }
        None => path.to_path_buf(),
    }
}

/// libpq's rule for `connect_timeout`: zero means none, and anything under
/// two seconds is two seconds.
pub(crate) fn attempt_timeout(config: &Config) -> Option<Duration> {
    config
        .connect_timeout
        .filter(|d| !d.is_zero())
        .map(|d| d.max(Duration::from_secs(2)))
}
