//! The builder: what kind of instance to make, and the start sequence.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bins::BinSearch;
use super::config::{self, ServerConfig, ServerSsl};
use super::instance::TempDb;
use super::os::{self, Secret, ServerOwner};
use super::ssl::{self, ServerCert};
use super::{cluster, lifecycle, Error, StartFailure};

/// How many times a start is retried when another process took the TCP
/// port between our probe and the server's bind.
const PORT_ATTEMPTS: usize = 3;

/// A `pg_hba.conf` authentication method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthMethod {
    /// No password asked.
    #[default]
    Trust,
    /// Cleartext password.
    Password,
    /// MD5 challenge (falls back to SCRAM for SCRAM-hashed passwords).
    Md5,
    /// SCRAM-SHA-256.
    ScramSha256,
    /// Client certificate (TCP with SSL only; the certificate's common name
    /// must be the user name).
    Cert,
}

impl AuthMethod {
    pub(crate) fn hba_keyword(self) -> &'static str {
        match self {
            AuthMethod::Trust => "trust",
            AuthMethod::Password => "password",
            AuthMethod::Md5 => "md5",
            AuthMethod::ScramSha256 => "scram-sha-256",
            AuthMethod::Cert => "cert",
        }
    }
}

/// How the server stores passwords (`password_encryption`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordEncryption {
    /// `md5` hashes: needed for a client to see an MD5 challenge.
    Md5,
    /// SCRAM-SHA-256 verifiers (the server default since PostgreSQL 14).
    ScramSha256,
}

impl PasswordEncryption {
    pub(crate) fn setting(self) -> &'static str {
        match self {
            PasswordEncryption::Md5 => "md5",
            PasswordEncryption::ScramSha256 => "scram-sha-256",
        }
    }
}

/// Describes a throwaway instance; [`Builder::start`] makes it.
///
/// Defaults: binaries found the standard way, Unix socket only, `trust`
/// everywhere, superuser `postgres` when running as root (the server's OS
/// user) or the current OS user otherwise, no SSL, fast unsafe settings
/// (`fsync`, `synchronous_commit`, `full_page_writes` off, 32MB
/// `shared_buffers`), 60 s start time-out.
#[derive(Debug, Clone)]
pub struct Builder {
    pub(crate) bins: BinSearch,
    pub(crate) os_user: String,
    pub(crate) tcp: bool,
    pub(crate) local_auth: AuthMethod,
    pub(crate) host_auth: AuthMethod,
    pub(crate) host_ssl_only: bool,
    pub(crate) superuser: Option<String>,
    pub(crate) superuser_password: Option<Secret>,
    pub(crate) users: Vec<(String, Secret)>,
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) ssl: bool,
    pub(crate) server_cert: ServerCert,
    pub(crate) password_encryption: Option<PasswordEncryption>,
    pub(crate) start_timeout: Duration,
    pub(crate) fast_settings: bool,
    pub(crate) private: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            bins: BinSearch::Standard,
            os_user: "postgres".to_string(),
            tcp: false,
            local_auth: AuthMethod::Trust,
            host_auth: AuthMethod::Trust,
            host_ssl_only: false,
            superuser: None,
            superuser_password: None,
            users: Vec::new(),
            settings: Vec::new(),
            ssl: false,
            server_cert: ServerCert::Localhost,
            password_encryption: None,
            start_timeout: Duration::from_secs(60),
            fast_settings: true,
            private: false,
        }
    }
}

impl Builder {
    /// Looks for the server programs only in `dirs` (an empty list finds
    /// nothing: the way to test the "not installed" error).
    pub fn bin_dirs(mut self, dirs: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        self.bins = BinSearch::Only(dirs.into_iter().map(Into::into).collect());
        self
    }

    /// The OS account the server runs as when we run as root (default `postgres`).
    pub fn os_user(mut self, name: impl Into<String>) -> Self {
        self.os_user = name.into();
        self
    }

    /// Whether to apply the fast, unsafe settings that suit tests (`fsync`,
    /// `synchronous_commit` and `full_page_writes` off, 32MB
    /// `shared_buffers`). Off, the server keeps PostgreSQL's own defaults,
    /// which is what a benchmark of a "clean server" wants.
    pub fn fast_settings(mut self, on: bool) -> Self {
        self.fast_settings = on;
        self
    }

    /// Lets in only who can read the instance's password file
    /// ([`TempDb::passfile`]): `scram-sha-256` on the socket and on TCP,
    /// with a superuser password drawn for this instance (unless one is
    /// set). The directory is the owner's only in any case.
    ///
    /// The password's verifier is made with one SCRAM iteration where the
    /// server has `scram_iterations` (PostgreSQL 16 and later): the drawn
    /// password has 128 random bits, which no stretching makes any
    /// harder to guess, and 4096 iterations cost every new connection
    /// milliseconds of CPU on both sides, which `-C` runs would measure
    /// instead of the server.
    pub fn private(mut self) -> Self {
        self.private = true;
        self.local_auth = AuthMethod::ScramSha256;
        self.host_auth = AuthMethod::ScramSha256;
        self
    }

    /// Also listen on 127.0.0.1, on a free port.
    pub fn tcp(mut self, on: bool) -> Self {
        self.tcp = on;
        self
    }

    /// The authentication method for every connection.
    pub fn auth(self, method: AuthMethod) -> Self {
        self.local_auth(method).host_auth(method)
    }

    /// The authentication method for Unix-socket connections.
    pub fn local_auth(mut self, method: AuthMethod) -> Self {
        self.local_auth = method;
        self
    }

    /// The authentication method for TCP connections.
    pub fn host_auth(mut self, method: AuthMethod) -> Self {
        self.host_auth = method;
        self
    }

    /// Accept TCP connections only over SSL (`hostssl` lines).
    pub fn host_ssl_only(mut self, on: bool) -> Self {
        self.host_ssl_only = on;
        self
    }

    /// The bootstrap superuser's name.
    pub fn superuser(mut self, name: impl Into<String>) -> Self {
        self.superuser = Some(name.into());
        self
    }

    /// The superuser's password (default: a random one, see
    /// [`TempDb::superuser_password`]).
    pub fn superuser_password(mut self, password: impl Into<String>) -> Self {
        self.superuser_password = Some(Secret(password.into()));
        self
    }

    /// A login role created after start, with this password.
    pub fn user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.users.push((name.into(), Secret(password.into())));
        self
    }

    /// A server setting `name = value` (later settings win).
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// `max_connections`.
    pub fn max_connections(self, n: u32) -> Self {
        self.setting("max_connections", n.to_string())
    }

    /// Turn SSL on with freshly generated certificates (see [`ssl::SslFiles`]).
    pub fn ssl(mut self, on: bool) -> Self {
        self.ssl = on;
        self
    }

    /// The certificate the server presents (default [`ServerCert::Localhost`]).
    pub fn server_cert(mut self, which: ServerCert) -> Self {
        self.server_cert = which;
        self
    }

    /// How passwords are stored. Default: `md5` when either authentication
    /// method is `md5` (so clients really get an MD5 challenge), SCRAM otherwise.
    pub fn password_encryption(mut self, encryption: PasswordEncryption) -> Self {
        self.password_encryption = Some(encryption);
        self
    }

    /// How long to wait for the server to accept connections.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    fn effective_encryption(&self) -> PasswordEncryption {
        self.password_encryption.unwrap_or(
            if self.local_auth == AuthMethod::Md5 || self.host_auth == AuthMethod::Md5 {
                PasswordEncryption::Md5
            } else {
                PasswordEncryption::ScramSha256
            },
        )
    }

    fn check(&self) -> Result<(), Error> {
        for (name, value) in &self.settings {
            config::check_setting(name, value)?;
        }
        if self.local_auth == AuthMethod::Cert {
            return Err(Error::InvalidOption {
                option: "local authentication",
                reason: "cert authentication needs SSL, which Unix sockets do not use".to_string(),
            });
        }
        if self.host_auth == AuthMethod::Cert && !self.ssl {
            return Err(Error::InvalidOption {
                option: "host authentication",
                reason: "cert authentication needs .ssl(true)".to_string(),
            });
        }
        let names = self
            .superuser
            .iter()
            .chain(self.users.iter().map(|(n, _)| n));
        for name in names {
            if name.is_empty() || name.contains('\0') {
                return Err(Error::InvalidOption {
                    option: "role name",
                    reason: format!("{name:?} is empty or contains a NUL byte"),
                });
            }
        }
        let passwords = self
            .superuser_password
            .iter()
            .chain(self.users.iter().map(|(_, p)| p));
        if passwords.into_iter().any(|p| p.as_str().contains('\0')) {
            return Err(Error::InvalidOption {
                option: "password",
                reason: "contains a NUL byte".to_string(),
            });
        }
        Ok(())
    }

    /// Creates, starts and configures the instance.
    pub fn start(mut self) -> Result<TempDb, Error> {
        self.check()?;
        if self.private && self.superuser_password.is_none() {
            self.superuser_password = Some(Secret(os::random_password()?));
        }
        let bin_dir = self.bins.find()?;
        let owner = ServerOwner::resolve(&self.os_user)?;
        let superuser = self.superuser.clone().unwrap_or_else(|| owner.name.clone());
        let root = tempfile::Builder::new()
            .prefix("pgbolt-tempdb-")
            .tempdir_in(temp_base())
            .map_err(|e| Error::io("creating a temporary directory", e))?
            .keep();
        os::make_private(&root)?;
        // From here on the registry owns the directory: dropping `db` (or
        // returning early, which drops it) stops and removes everything.
        let id = lifecycle::register(root.clone());
        let mut db = TempDb::new(id, root, bin_dir, owner, superuser);
        self.prepare(&mut db)?;
        self.run(&mut db)?;
        db.configure_roles(
            self.superuser_password.as_ref(),
            &self.users,
            self.effective_encryption(),
            self.private,
        )?;
        os::write_passfile(&db.passfile, &db.superuser, &db.superuser_password)?;
        Ok(db)
    }

    /// Data directory, certificates and configuration files.
    fn prepare(&self, db: &mut TempDb) -> Result<(), Error> {
        db.owner.chown(&db.root)?;
        db.superuser_password = Secret(cluster::init_data_dir(
            &db.bin_dir,
            &db.owner,
            &db.superuser,
            &db.data_dir,
        )?);
        config::include_pgbolt_conf(&db.data_dir)?;
        config::write_hba(
            &db.data_dir,
            &db.owner,
            self.local_auth,
            self.host_auth,
            self.host_ssl_only,
        )?;
        db.owner.chown_tree(&db.data_dir)?;
        let ssl = if self.ssl {
            let dir = db.root.join("ssl");
            std::fs::create_dir(&dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            db.owner.chown(&dir)?;
            let files = ssl::generate(&dir, &db.owner, &db.superuser)?;
            let server = files.server_cert(self.server_cert);
            let server_ssl = ServerSsl {
                cert: server.cert.clone(),
                key: server.key.clone(),
                ca: files.ca_cert.clone(),
            };
            db.ssl = Some(files);
            Some(server_ssl)
        } else {
            None
        };
        db.config = ServerConfig {
            port: 5432,
            tcp: self.tcp,
            socket_dir: db.root.clone(),
            password_encryption: self.effective_encryption(),
            ssl,
            fast_settings: self.fast_settings,
            settings: self.settings.clone(),
        };
        Ok(())
    }

    /// Starts the postmaster, retrying with another port if one was stolen.
    fn run(&self, db: &mut TempDb) -> Result<(), Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            if self.tcp {
                db.config.port = free_port()?;
            }
            db.config.write(&db.data_dir, &db.owner)?;
            match start_postmaster(db, self.start_timeout) {
                Err(e) if self.tcp && attempt < PORT_ATTEMPTS && cluster::port_taken(&e) => {
                    continue
                }
                other => return other,
            }
        }
    }
}

fn start_postmaster(db: &mut TempDb, timeout: Duration) -> Result<(), Error> {
    let pid =
        cluster::spawn_postmaster(&db.bin_dir, &db.owner, &db.root, &db.data_dir, &db.log_file)?;
    if !lifecycle::set_pid(db.id, pid) {
        lifecycle::stop_postmaster(pid);
        return Err(Error::Interrupted);
    }
    db.pid = pid;
    let result = cluster::wait_ready(pid, &db.data_dir, &db.log_file, timeout);
    if let Err(Error::StartFailed {
        reason: StartFailure::Exited(_),
        ..
    }) = &result
    {
        // Reaped already: forget the pid so nobody signals a recycled one.
        lifecycle::set_pid(db.id, 0);
        db.pid = 0;
    }
    result
}

/// Where instance directories go: `$TMPDIR`, unless that is so long the
/// socket path (`<dir>/pgbolt-tempdb-XXXXXX/.s.PGSQL.NNNNN`) would not fit
/// in a Unix socket address (107 bytes), then `/tmp`.
pub(crate) fn temp_base() -> PathBuf {
    const SOCKET_SUFFIX: usize = "/pgbolt-tempdb-XXXXXX/.s.PGSQL.65535".len();
    let base = std::env::temp_dir();
    if base.as_os_str().len() + SOCKET_SUFFIX > 107 {
        PathBuf::from("/tmp")
    } else {
        base
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| Error::io("looking for a free TCP port", e))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::io("looking for a free TCP port", e))
}

/// Paths of an instance's directory layout.
pub(crate) fn layout(root: &Path) -> (PathBuf, PathBuf) {
    (root.join("data"), root.join("server.log"))
}
