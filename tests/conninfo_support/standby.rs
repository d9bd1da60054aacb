//! A real hot standby of a throwaway primary, for `target_session_attrs`:
//! `pg_basebackup -R` into the primary's temporary root, started on a port
//! of its own beside the primary's socket, stopped when dropped (before the
//! primary, which removes the root).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

use pgbolt::tempdb::TempDb;

pub struct Standby {
    pg_ctl: PathBuf,
    data_dir: PathBuf,
    pub port: u16,
}

/// Runs a server program as the OS user the primary runs as (`postgres`
/// when the tests run as root, since PostgreSQL refuses root).
fn as_server_owner(program: PathBuf) -> Command {
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } == 0 {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn checked(what: &str, out: std::io::Result<Output>) {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

impl Standby {
    /// Lets replication connections in on the primary's socket, copies the
    /// primary with `pg_basebackup -R` and starts the copy in hot standby.
    pub fn of(primary: &TempDb) -> Standby {
        let hba = primary.data_dir().join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
        rules.push_str("local replication all trust\n");
        std::fs::write(&hba, rules).expect("write pg_hba.conf");
        primary
            .psql("SELECT pg_reload_conf()")
            .expect("reload the primary");
        let data_dir = primary.root().join("standby");
        let socket_dir = primary.socket_dir().display().to_string();
        checked(
            "pg_basebackup",
            as_server_owner(primary.bin("pg_basebackup"))
                .arg("-D")
                .arg(&data_dir)
                .args(["-R", "-X", "stream", "-h", &socket_dir])
                .args(["-p", &primary.port().to_string()])
                .args(["-U", primary.superuser()])
                .output(),
        );
        let port = free_port();
        let pg_ctl = primary.bin("pg_ctl");
        checked(
            "starting the standby",
            as_server_owner(pg_ctl.clone())
                .arg("-D")
                .arg(&data_dir)
                .args(["-o", &format!("-p {port} -c listen_addresses=''")])
                .arg("-l")
                .arg(data_dir.join("standby.log"))
                .args(["-w", "start"])
                .output(),
        );
        Standby {
            pg_ctl,
            data_dir,
            port,
        }
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        let _ = as_server_owner(self.pg_ctl.clone())
            .arg("-D")
            .arg(&self.data_dir)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}
