//! A real hot standby of a throwaway primary: `pg_basebackup -R` into a
//! temporary directory of its own, which is also its socket directory
//! (same port number as the primary), with conflicting queries cancelled
//! at once (`max_standby_streaming_delay = 0`); stopped and removed when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pgbolt::tempdb::TempDb;

pub struct Standby {
    dir: tempfile::TempDir,
    data: PathBuf,
    pg_ctl: PathBuf,
    pub port: u16,
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command run as the server's OS user (`postgres` when the tests run
/// as root, since PostgreSQL refuses root).
fn server_user_command(program: &Path, args: &[&str]) -> Command {
    let mut cmd = if root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// Runs `program args` as the server's OS user; its success is checked.
pub fn as_server_user(program: &Path, args: &[&str]) {
    let out = server_user_command(program, args)
        .output()
        .expect("command runs");
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Standby {
    /// Lets replication connections in on the primary's socket, copies the
    /// primary and starts the copy as its hot standby.
    pub fn of(primary: &TempDb) -> Standby {
        let hba = primary.data_dir().join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
        rules.push_str("local replication all trust\n");
        std::fs::write(&hba, rules).expect("write pg_hba.conf");
        primary.psql("SELECT pg_reload_conf()").expect("reload");
        let dir = tempfile::tempdir().expect("temp dir");
        if root() {
            let chown = Command::new("chown")
                .arg("postgres")
                .arg(dir.path())
                .status();
            assert!(
                chown.is_ok_and(|s| s.success()),
                "chown of {:?}",
                dir.path()
            );
        }
        let data = dir.path().join("data");
        let host = primary.socket_dir().display().to_string();
        let port = primary.port();
        let port_text = port.to_string();
        let data_text = data.display().to_string();
        as_server_user(
            &primary.bin("pg_basebackup"),
            &[
                "-h",
                &host,
                "-p",
                &port_text,
                "-U",
                primary.superuser(),
                "-D",
                &data_text,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        let auto = data.join("postgresql.auto.conf");
        let mut conf = std::fs::read_to_string(&auto).expect("read postgresql.auto.conf");
        conf.push_str(&format!(
            "unix_socket_directories = '{}'\nlisten_addresses = ''\nmax_standby_streaming_delay = 0\n",
            dir.path().display()
        ));
        std::fs::write(&auto, conf).expect("write postgresql.auto.conf");
        let pg_ctl = primary.bin("pg_ctl");
        let log = dir.path().join("log").display().to_string();
        as_server_user(&pg_ctl, &["-D", &data_text, "-l", &log, "-w", "start"]);
        Standby {
            dir,
            data,
            pg_ctl,
            port,
        }
    }

    /// The standby's socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Makes the standby a primary (`pg_ctl promote`, waiting for it).
    pub fn promote(&self) {
        let data = self.data.display().to_string();
        as_server_user(&self.pg_ctl, &["-D", &data, "-w", "promote"]);
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ =
            server_user_command(&self.pg_ctl, &["-D", &data, "-m", "immediate", "stop"]).output();
    }
}
