//! The throwaway server and PgBouncer let in the user who started pgbolt
//! and nobody else: another OS user (`nobody`) is refused by socket and by
//! TCP while a run is going on, and the starting user gets in with the
//! instance's password file; the password is in that file only, never in
//! what pgbolt prints or writes.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::tempinst_support::{text, Scratch};

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `psql -c sql` of the server `--temp-instance` chooses, run as `os_user`
/// when given (we are root), with no `PG*` variable but `PGPASSFILE` if
/// given, never prompting for a password.
fn psql(os_user: Option<&str>, conninfo: &str, passfile: Option<&Path>, sql: &str) -> Output {
    let bin_dir = pgbolt::tempdb::find_bin_dir().expect("server programs");
    let psql = bin_dir.join("psql").to_string_lossy().into_owned();
    let mut command = match os_user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--", &psql]);
            c
        }
        None => Command::new(&psql),
    };
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PG") {
            command.env_remove(name);
        }
    }
    if let Some(file) = passfile {
        command.env("PGPASSFILE", file);
    }
    command
        .args(["-X", "-w", "-A", "-t", "-c", sql, conninfo])
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .expect("run psql")
}

fn assert_refused(out: &Output, what: &str) {
    assert!(
        !out.status.success(),
        "{what}: let in: {}",
        text(&out.stdout)
    );
}

fn assert_let_in(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
}

/// The only directory under the scratch `TMPDIR` whose name starts with
/// `prefix`.
fn instance_dir(scratch: &Scratch, prefix: &str) -> PathBuf {
    let found: Vec<PathBuf> = scratch
        .instances()
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{prefix}: {found:?}");
    found.into_iter().next().unwrap()
}

/// The socket inodes of the TCP listeners on this machine.
fn tcp_listener_inodes() -> Vec<String> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // st 0A is LISTEN; the inode is the tenth field.
            if fields.len() > 9 && fields[3] == "0A" {
                inodes.push(fields[9].to_string());
            }
        }
    }
    inodes
}

/// The process whose command line names `needle`.
fn pid_of(needle: &str) -> i32 {
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            return pid;
        }
    }
    panic!("no process names {needle}");
}

/// Whether process `pid` holds a listening TCP socket.
fn listens_on_tcp(pid: i32) -> bool {
    let listeners = tcp_listener_inodes();
    fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the process's descriptors")
        .flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .any(|inode| listeners.contains(&inode))
}

/// Ends the run on drop, so a failed assertion leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let _ = self.0.wait();
    }
}

#[test]
fn another_os_user_cannot_reach_the_throwaway_server_or_pgbouncer() {
    if !running_as_root() {
        eprintln!("skipped: switching to the nobody OS user needs root");
        return;
    }
    let scratch = Scratch::new();
    let mut child = scratch
        .command(&[
            "--temp-instance",
            "--temp-pgbouncer",
            "--temp-instance-setting=listen_addresses=127.0.0.1",
            "-s",
            "1",
            "-c",
            "1",
            "-T",
            "60",
            "-S",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn pgbolt");
    let started = scratch.wait_for_process(&mut child, |p| p.contains("pgbouncer.ini"));
    let running = Running(child);
    assert!(started, "the throwaway PgBouncer never started");

    let server = instance_dir(&scratch, "pgbolt-tempdb-");
    let pooler = instance_dir(&scratch, "pgbolt-pgbouncer-");
    for dir in [&server, &pooler] {
        let meta = fs::metadata(dir).expect("instance directory");
        assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{dir:?}");
        assert_ne!(meta.uid(), 65534, "{dir:?}");
    }
    let passfile = server.join("pgpass");
    let meta = fs::metadata(&passfile).expect("the password file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let read = Command::new("runuser")
        .args(["-u", "nobody", "--", "cat"])
        .arg(&passfile)
        .output()
        .expect("runuser");
    assert!(!read.status.success(), "nobody read the password file");

    let socket = format!(
        "host={} port=5432 user=postgres dbname=postgres",
        server.display()
    );
    let tcp = "host=127.0.0.1 port=5432 user=postgres dbname=postgres";
    let bouncer = format!(
        "host={} port=6432 user=postgres dbname=postgres",
        pooler.display()
    );
    let console = format!(
        "host={} port=6432 user=postgres dbname=pgbouncer",
        pooler.display()
    );
    for (what, conninfo, sql) in [
        ("the server's socket", socket.as_str(), "SELECT 1"),
        ("the server's TCP port", tcp, "SELECT 1"),
        ("PgBouncer's socket", bouncer.as_str(), "SELECT 1"),
        ("PgBouncer's console", console.as_str(), "SHOW VERSION"),
    ] {
        assert_refused(&psql(Some("nobody"), conninfo, None, sql), what);
        // Without the password even root is refused: the directory's mode
        // is not the only guard.
        assert_refused(&psql(None, conninfo, None, sql), what);
        assert_let_in(&psql(None, conninfo, Some(&passfile), sql), what);
    }
    let pgbouncer = pid_of(&format!("{}/pgbouncer.ini", pooler.display()));
    assert!(!listens_on_tcp(pgbouncer), "PgBouncer listens on TCP");

    drop(running);
    scratch.assert_nothing_left();
}

#[test]
fn the_instance_password_appears_only_in_its_password_file() {
    let scratch = Scratch::new();
    let json = scratch.path().join("r.json");
    let html = scratch.path().join("r.html");
    let out = scratch.run(&[
        "--temp-instance",
        "--temp-instance-keep",
        "-s",
        "1",
        "-t",
        "5",
        "--debug",
        &format!("--json={}", json.display()),
        &format!("--html={}", html.display()),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let server = instance_dir(&scratch, "pgbolt-tempdb-");
    let passfile = server.join("pgpass");
    assert!(stderr.contains(&format!("password file: {}", passfile.display())));
    let line = fs::read_to_string(&passfile).expect("the password file");
    let password = line.trim_end().rsplit(':').next().expect("a password");
    assert!(password.len() >= 32, "a short password");
    let written = [
        text(&out.stdout),
        stderr.clone(),
        fs::read_to_string(&json).expect("JSON"),
        fs::read_to_string(&html).expect("page"),
        fs::read_to_string(server.join("server.log")).expect("server log"),
    ];
    for output in &written {
        assert!(!output.contains(password), "the password was shown");
    }
    let stop = stderr
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("stop:"))
        .expect("the stop command");
    let stopped = Command::new("sh").arg("-c").arg(stop).output().unwrap();
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    fs::remove_file(&json).unwrap();
    fs::remove_file(&html).unwrap();
    scratch.assert_nothing_left();
}
