//! A running instance and what tests and `--temp-instance` do with it.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::mem::ManuallyDrop;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::builder::{layout, PasswordEncryption};
use super::config::{ServerConfig, ServerSsl};
use super::os::{Secret, ServerOwner};
use super::ssl::{ServerCert, SslFiles};
use super::{cluster, lifecycle, Error};

/// How long [`TempDb::use_server_cert`] waits for the reload to show.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The database every connection helper targets.
const DATABASE: &str = "postgres";

/// A running throwaway PostgreSQL server. Dropping it stops the server
/// (immediate shutdown) and removes its directory.
#[derive(Debug)]
pub struct TempDb {
    pub(crate) id: u64,
    pub(crate) root: PathBuf,
    pub(crate) data_dir: PathBuf,
    pub(crate) log_file: PathBuf,
    /// The superuser's password in libpq's password-file format (mode
    /// 0600, the current OS user's), for clients of this instance.
    pub(crate) passfile: PathBuf,
    pub(crate) bin_dir: PathBuf,
    pub(crate) owner: ServerOwner,
    pub(crate) superuser: String,
    pub(crate) superuser_password: Secret,
    pub(crate) pid: i32,
    pub(crate) ssl: Option<SslFiles>,
    pub(crate) config: ServerConfig,
}

/// What [`TempDb::keep`] leaves behind: a server still running, and how to
/// reach and stop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptInstance {
    /// The directory holding everything (data, socket, log, certificates).
    pub root: PathBuf,
    /// The data directory.
    pub data_dir: PathBuf,
    /// The server log.
    pub log_file: PathBuf,
    /// The password file that lets its superuser in (`PGPASSFILE`).
    pub passfile: PathBuf,
    /// libpq connection string through the Unix socket (no password).
    pub conninfo: String,
    /// A shell command that opens `psql` on it, its password taken from
    /// [`Self::passfile`].
    pub connect_command: String,
    /// A shell command that stops the server and removes the directory.
    pub stop_command: String,
}

impl TempDb {
    pub(crate) fn new(
        id: u64,
        root: PathBuf,
        bin_dir: PathBuf,
        owner: ServerOwner,
        superuser: String,
    ) -> TempDb {
        let (data_dir, log_file) = layout(&root);
        let passfile = root.join("pgpass");
        TempDb {
            id,
            config: ServerConfig {
                port: 5432,
                tcp: false,
                socket_dir: root.clone(),
                password_encryption: PasswordEncryption::ScramSha256,
                ssl: None,
                fast_settings: true,
                settings: Vec::new(),
            },
            root,
            data_dir,
            log_file,
            passfile,
            bin_dir,
            owner,
            superuser,
            superuser_password: Secret::default(),
            pid: 0,
            ssl: None,
        }
    }

    /// A builder with the defaults (see [`super::Builder`]).
    pub fn builder() -> super::Builder {
        super::Builder::default()
    }

    /// Starts an instance with the defaults.
    pub fn start() -> Result<TempDb, Error> {
        Self::builder().start()
    }

    /// The directory of the PostgreSQL programs (`psql`, `pgbench`, ...).
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The path of one PostgreSQL program, e.g. `bin("pgbench")`.
    pub fn bin(&self, program: impl AsRef<OsStr>) -> PathBuf {
        self.bin_dir.join(program.as_ref())
    }

    /// The directory holding everything of this instance.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The directory of the Unix socket (`host=` for libpq).
    pub fn socket_dir(&self) -> &Path {
        &self.config.socket_dir
    }

    /// The port: of the TCP listener if any, and of the socket file name.
    pub fn port(&self) -> u16 {
        self.config.port
    }

    /// `127.0.0.1:port` when built with `.tcp(true)`.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.config
            .tcp
            .then(|| SocketAddr::from((Ipv4Addr::LOCALHOST, self.config.port)))
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The server log file.
    pub fn log_file(&self) -> &Path {
        &self.log_file
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        cluster::log_tail(&self.log_file, lines)
    }

    /// The password file (libpq's format, mode 0600) that gives the
    /// superuser's password: `passfile=` or `PGPASSFILE` for clients.
    pub fn passfile(&self) -> &Path {
        &self.passfile
    }

    /// The bootstrap superuser's name.
    pub fn superuser(&self) -> &str {
        &self.superuser
    }

    /// The superuser's password (random unless the builder set one).
    pub fn superuser_password(&self) -> &str {
        self.superuser_password.as_str()
    }

    /// The certificate files, when built with `.ssl(true)`.
    pub fn ssl_files(&self) -> Option<&SslFiles> {
        self.ssl.as_ref()
    }

    /// libpq connection string through the Unix socket, as the superuser,
    /// to database `postgres` (no password: use `PGPASSWORD` or [`Self::command`]).
    pub fn conninfo(&self) -> String {
        conninfo(
            &self.config.socket_dir.to_string_lossy(),
            self.config.port,
            &self.superuser,
        )
    }

    /// libpq connection string over TCP to 127.0.0.1, when built with `.tcp(true)`.
    pub fn tcp_conninfo(&self) -> Option<String> {
        self.config
            .tcp
            .then(|| conninfo("127.0.0.1", self.config.port, &self.superuser))
    }

    /// `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` for a child process (no password).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "PGHOST",
                self.config.socket_dir.to_string_lossy().into_owned(),
            ),
            ("PGPORT", self.config.port.to_string()),
            ("PGUSER", self.superuser.clone()),
            ("PGDATABASE", DATABASE.to_string()),
        ]
    }

    /// A command for PostgreSQL program `program` (from [`Self::bin_dir`])
    /// that connects to this instance through the socket as the superuser:
    /// every inherited `PG*` variable is removed, then [`Self::env`] and
    /// `PGPASSWORD` are set. It runs as the current OS user.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(self.bin(program));
        cluster::clear_pg_env(&mut cmd);
        cmd.envs(self.env());
        cmd.env("PGPASSWORD", self.superuser_password.as_str());
        cmd
    }

    /// Runs SQL with `psql` as the superuser in database `postgres` (stop
    /// at the first error, unaligned tuples-only output) and returns its
    /// standard output.
    pub fn psql(&self, sql: &str) -> Result<String, Error> {
        self.psql_in(DATABASE, sql)
    }

    /// [`Self::psql`] in another database.
    pub fn psql_in(&self, database: &str, sql: &str) -> Result<String, Error> {
        let mut cmd = self.command("psql");
        cmd.env("PGDATABASE", database);
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-f", "-"]);
        run_with_input(cmd, sql)
    }

    /// Creates a database with a name unique in this process and returns
    /// the name: tests sharing one server each work in their own database
    /// (pass it as `PGDATABASE`, `dbname=` or pgbench's last argument).
    pub fn create_database(&self) -> Result<String, Error> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let name = format!("tempdb_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.psql(&format!("CREATE DATABASE {}", sql_identifier(&name)))?;
        Ok(name)
    }

    /// Sets the superuser's password (if asked) and creates the extra roles;
    /// `one_iteration` makes SCRAM verifiers of one iteration (see
    /// [`super::Builder::private`]).
    pub(crate) fn configure_roles(
        &mut self,
        superuser_password: Option<&Secret>,
        users: &[(String, Secret)],
        encryption: PasswordEncryption,
        one_iteration: bool,
    ) -> Result<(), Error> {
        let md5 = encryption == PasswordEncryption::Md5;
        if superuser_password.is_none() && users.is_empty() && !md5 {
            return Ok(());
        }
        let mut sql = format!(
            "SET password_encryption = {};\n",
            sql_literal(encryption.setting())
        );
        if one_iteration {
            sql.push_str(
                "SELECT set_config('scram_iterations', '1', false) \
                 WHERE current_setting('server_version_num')::int >= 160000;\n",
            );
        }
        let new_password = superuser_password
            .unwrap_or(&self.superuser_password)
            .clone();
        let _ = writeln!(
            sql,
            "ALTER ROLE {} PASSWORD {};",
            sql_identifier(&self.superuser),
            sql_literal(new_password.as_str())
        );
        for (name, password) in users {
            let _ = writeln!(
                sql,
                "CREATE ROLE {} LOGIN PASSWORD {};",
                sql_identifier(name),
                sql_literal(password.as_str())
            );
        }
        self.psql(&sql).map_err(|e| {
            let secrets = users.iter().map(|(_, p)| p).chain([&new_password]);
            scrub(e, secrets)
        })?;
        self.superuser_password = new_password;
        Ok(())
    }

    /// Makes the server present another certificate: rewrites the
    /// configuration, reloads, and waits until new connections see it.
    pub fn use_server_cert(&mut self, which: ServerCert) -> Result<(), Error> {
        let files = self.ssl.as_ref().ok_or(Error::SslNotEnabled)?;
        let chosen = files.server_cert(which);
        self.config.ssl = Some(ServerSsl {
            cert: chosen.cert.clone(),
            key: chosen.key.clone(),
            ca: files.ca_cert.clone(),
        });
        self.config.write(&self.data_dir, &self.owner)?;
        // SAFETY: kill has no memory-safety preconditions.
        if unsafe { libc::kill(self.pid, libc::SIGHUP) } != 0 {
            return Err(Error::io(
                "signalling the server to reload",
                std::io::Error::last_os_error(),
            ));
        }
        let want = chosen.cert.to_string_lossy().into_owned();
        let start = Instant::now();
        loop {
            let shown = self.psql("SHOW ssl_cert_file")?;
            if shown.trim() == want {
                return Ok(());
            }
            if start.elapsed() > RELOAD_TIMEOUT {
                return Err(Error::ReloadTimedOut {
                    waited: RELOAD_TIMEOUT,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server and removes its directory (what `Drop` does).
    pub fn stop(self) {
        drop(self);
    }

    /// Leaves the server running and its directory in place, and returns
    /// how to reach and stop it. Nothing will clean it up any more.
    pub fn keep(self) -> KeptInstance {
        let this = ManuallyDrop::new(self);
        lifecycle::forget(this.id);
        let data = shell_quote(&this.data_dir.to_string_lossy());
        let pg_ctl = shell_quote(&this.bin("pg_ctl").to_string_lossy());
        let as_owner = if this.owner.switch {
            format!("runuser -u {} -- ", shell_quote(&this.owner.name))
        } else {
            String::new()
        };
        let conninfo = this.conninfo();
        KeptInstance {
            root: this.root.clone(),
            data_dir: this.data_dir.clone(),
            log_file: this.log_file.clone(),
            passfile: this.passfile.clone(),
            connect_command: format!(
                "PGPASSFILE={} {} {}",
                shell_quote(&this.passfile.to_string_lossy()),
                shell_quote(&this.bin("psql").to_string_lossy()),
                shell_quote(&conninfo)
            ),
            stop_command: format!(
                "{as_owner}{pg_ctl} stop -D {data} -m fast && rm -rf {}",
                shell_quote(&this.root.to_string_lossy())
            ),
            conninfo,
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        lifecycle::release(self.id);
    }
}

/// Removes passwords from a failed psql's message (psql may echo the
/// statement it failed on).
fn scrub<'a>(err: Error, secrets: impl Iterator<Item = &'a Secret>) -> Error {
    match err {
        Error::PsqlFailed { status, mut stderr } => {
            for secret in secrets.filter(|s| !s.as_str().is_empty()) {
                stderr = stderr.replace(secret.as_str(), "********");
            }
            Error::PsqlFailed { status, stderr }
        }
        other => other,
    }
}

/// Runs `cmd` with `input` on its standard input; its standard output, or
/// an error with its standard error.
fn run_with_input(mut cmd: Command, input: &str) -> Result<String, Error> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("running {program}"), e))?;
    let stdin = child.stdin.take();
    let input = input.to_string();
    // A separate writer, so a large output cannot block a large input.
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(input.as_bytes());
        }
    });
    let output = child
        .wait_with_output()
        .map_err(|e| Error::io(format!("running {program}"), e))?;
    let _ = writer.join();
    if !output.status.success() {
        return Err(Error::PsqlFailed {
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn conninfo(host: &str, port: u16, user: &str) -> String {
    format!(
        "host={} port={port} user={} dbname={DATABASE}",
        conninfo_value(host),
        conninfo_value(user)
    )
}

/// A libpq conninfo value: bare if simple, else single-quoted with `\` escapes.
fn conninfo_value(value: &str) -> String {
    if !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return value.to_string();
    }
    let mut out = String::from("'");
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// A POSIX shell word.
fn shell_quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

fn sql_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn sql_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_role_set_up_hides_passwords() {
        use std::os::unix::process::ExitStatusExt;
        let err = Error::PsqlFailed {
            status: std::process::ExitStatus::from_raw(256),
            stderr: "LINE 1: CREATE ROLE a PASSWORD 'hunter2' x\n".to_string(),
        };
        let secrets = [Secret("hunter2".to_string()), Secret(String::new())];
        let text = scrub(err, secrets.iter()).to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("PASSWORD '********' x"), "{text}");
    }

    #[test]
    fn quoting_tables() {
        let conn = [
            ("/tmp/abc", "/tmp/abc"),
            ("a b", "'a b'"),
            ("it's", "'it\\'s'"),
            ("", "''"),
        ];
        for (input, want) in conn {
            assert_eq!(conninfo_value(input), want, "conninfo {input:?}");
        }
        let shell = [
            ("/tmp/x", "/tmp/x"),
            ("a b", "'a b'"),
            ("it's", "'it'\\''s'"),
            ("host=/tmp port=5", "'host=/tmp port=5'"),
        ];
        for (input, want) in shell {
            assert_eq!(shell_quote(input), want, "shell {input:?}");
        }
        assert_eq!(sql_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(sql_literal("o'k"), "'o''k'");
    }
}
