//! `--temp-instance` at its edges: signals in every phase, options that
//! make no sense with it, odd settings, a kept instance restarted by hand.
//!
//! Each test gives pgbolt a `TMPDIR` of its own, so "nothing left behind"
//! means that directory is empty afterwards and no process mentions it.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::tempinst_support::{stdout_of_success, text, Scratch};

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// Reads standard error until a line starting with `prefix` (returned
/// with the lines before it), or to its end.
fn stderr_until(reader: &mut impl BufRead, prefix: &str) -> (bool, String) {
    let mut seen = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return (false, seen),
            Ok(_) => {
                seen.push_str(&line);
                if line.starts_with(prefix) {
                    return (true, seen);
                }
            }
        }
    }
}

/// Waits for `child` and collects the rest of its output.
fn finish(mut child: Child, mut err: impl Read, mut seen: String) -> (ExitStatus, String, String) {
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read stdout");
    err.read_to_string(&mut seen).expect("read stderr");
    (child.wait().expect("wait"), out, seen)
}

#[test]
fn ctrl_c_while_the_server_starts_dies_of_sigint_quietly_and_cleans_up() {
    let scratch = Scratch::new();
    let mut child = scratch.spawn(&["--temp-instance", "-s", "1", "-T", "5"]);
    let starting = scratch.wait_for_process(&mut child, |p| p.contains("postgres -D"));
    assert!(starting, "the server never started");
    signal(&child, libc::SIGINT);
    let err = child.stderr.take().expect("stderr");
    let (status, _, stderr) = finish(child, err, String::new());
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {stderr}");
    assert!(!stderr.contains("could not start"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn sighup_during_a_run_dies_of_sighup_and_cleans_up() {
    let scratch = Scratch::new();
    let mut child = scratch.spawn(&["--temp-instance", "-s", "1", "-T", "30", "-P", "1"]);
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let (running, seen) = stderr_until(&mut err, "progress: ");
    assert!(running, "the run never reported progress: {seen}");
    signal(&child, libc::SIGHUP);
    let (status, _, stderr) = finish(child, err, seen);
    assert_eq!(status.signal(), Some(libc::SIGHUP), "{status:?}: {stderr}");
    assert!(!stderr.contains("aborted"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn ctrl_c_during_the_load_says_the_instance_is_removed_and_nothing_else() {
    let scratch = Scratch::new();
    let mut child = scratch.spawn(&["--temp-instance", "-s", "20", "-T", "5"]);
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let (loading, seen) = stderr_until(&mut err, "generating data");
    assert!(loading, "the load never started: {seen}");
    signal(&child, libc::SIGINT);
    let (status, _, stderr) = finish(child, err, seen);
    assert_eq!(status.code(), Some(130), "{status:?}: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last, "pgbolt: error: initialization was interrupted; the throwaway instance is removed",
        "{stderr}"
    );
    assert!(!stderr.contains("run -i again"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn a_background_job_that_ignores_sigint_keeps_running() {
    let scratch = Scratch::new();
    let mut command = scratch.command(&["--temp-instance", "-s", "1", "-T", "3", "-P", "1"]);
    // SAFETY: only changes a signal disposition in the child before exec,
    // as a shell does for a background job.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pgbolt");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let (running, seen) = stderr_until(&mut err, "progress: ");
    assert!(running, "the run never reported progress: {seen}");
    signal(&child, libc::SIGINT);
    let (status, out, stderr) = finish(child, err, seen);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("interrupted"), "{stderr}");
    assert!(out.contains("tps = "), "{out}");
    scratch.assert_nothing_left();
}

#[test]
fn connection_options_are_refused_rather_than_ignored() {
    let scratch = Scratch::new();
    let cases: &[(&[&str], &str)] = &[
        (&["-U", "bob"], "-U/--username"),
        (&["-d", "mydb"], "a database name"),
        (&["mydb"], "a database name"),
        (&["-h", "/tmp"], "-h/--host"),
    ];
    for (extra, named) in cases {
        let mut args = vec!["--temp-instance", "-s", "1", "-t", "1"];
        args.extend_from_slice(extra);
        let out = scratch.command(&args).output().expect("run pgbolt");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&format!("--temp-instance cannot be used with {named}")),
            "{extra:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{extra:?} ran something");
    }
    scratch.assert_nothing_left();
}

#[test]
fn include_directives_are_not_settings() {
    let scratch = Scratch::new();
    for directive in ["include", "include_dir", "include_if_exists"] {
        let stderr = refused_setting(&scratch, &format!("{directive}=/etc/passwd"));
        assert!(
            stderr.contains(&format!(
                "\"{directive}\" is a configuration file directive, not a setting"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("root:"), "{stderr}");
    }
    scratch.assert_nothing_left();
}

/// Runs `-i` on a throwaway instance with `--temp-instance-setting=SETTING`,
/// which must be refused before anything starts; returns standard error.
fn refused_setting(scratch: &Scratch, setting: &str) -> String {
    let option = format!("--temp-instance-setting={setting}");
    let out = scratch.run(&["--temp-instance", "-i", "-s", "1", &option]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{setting}: {stderr}");
    assert!(out.stdout.is_empty(), "{setting}: something started");
    stderr
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a PostgreSQL program, of the server `--temp-instance` chooses, as
/// the account that owns the instance.
fn as_server_owner(program: &str) -> Command {
    let bin_dir = pgbolt::tempdb::find_bin_dir().expect("server programs");
    let program = bin_dir.join(program).to_string_lossy().into_owned();
    if running_as_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", &program]);
        command
    } else {
        Command::new(program)
    }
}

#[test]
fn a_kept_instance_can_be_restarted_with_its_log_and_benchmarked_again() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "--temp-instance-keep", "-i", "-s", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dir = stderr
        .lines()
        .find_map(|l| l.strip_prefix("pgbolt: the throwaway instance keeps running in "))
        .expect("where the instance is kept")
        .to_string();
    let data = format!("{dir}/data");
    let log = format!("{dir}/server.log");
    let pg_ctl = |args: &[&str]| {
        let status = as_server_owner("pg_ctl")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("pg_ctl");
        assert!(status.success(), "pg_ctl {args:?}");
    };
    pg_ctl(&["stop", "-D", &data, "-m", "fast"]);
    pg_ctl(&["start", "-w", "-D", &data, "-l", &log]);
    let user = if running_as_root() {
        "postgres".to_string()
    } else {
        std::env::var("USER").unwrap_or_default()
    };
    let again = scratch
        .command(&["-h", &dir, "-U", &user, "-t", "2", "postgres"])
        .env("PGPASSFILE", format!("{dir}/pgpass"))
        .output()
        .expect("run pgbolt");
    let stdout = stdout_of_success(&again);
    assert!(
        stdout.contains("number of transactions actually processed: 2/2"),
        "{stdout}"
    );
    pg_ctl(&["stop", "-D", &data, "-m", "fast"]);
    fs::remove_dir_all(&dir).expect("remove the kept instance");
    scratch.assert_nothing_left();
}

#[test]
fn a_server_crash_during_the_run_is_explained_from_the_server_log() {
    let scratch = Scratch::new();
    let script = scratch.path().join("crash.sql");
    fs::write(
        &script,
        "SELECT pg_backend_pid() AS pid \\gset\n\\shell kill -KILL :pid\nSELECT 1;\n",
    )
    .expect("write script");
    let script = script.to_string_lossy().into_owned();
    let out = scratch.run(&["--temp-instance", "-s", "1", "-t", "1", "-f", &script]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pgbolt: the throwaway instance's server crashed; its log says:"),
        "{stderr}"
    );
    assert!(stderr.contains("was terminated by signal 9"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn a_rejected_setting_is_shown_once() {
    let scratch = Scratch::new();
    let out = scratch.run(&[
        "--temp-instance",
        "-i",
        "-s",
        "1",
        "--temp-instance-setting=shared_buffers=lots",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let complaint = "invalid value for parameter \"shared_buffers\": \"lots\"";
    assert_eq!(stderr.matches(complaint).count(), 1, "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn the_last_value_of_a_repeated_setting_wins() {
    let scratch = Scratch::new();
    let out = scratch.run(&[
        "--temp-instance",
        "-i",
        "-s",
        "1",
        "--temp-instance-setting=work_mem=8MB",
        "--temp-instance-setting=work_mem=16MB",
    ]);
    let stdout = stdout_of_success(&out);
    assert!(
        stdout.contains("server settings: work_mem=16MB\n"),
        "{stdout}"
    );
    scratch.assert_nothing_left();
}

#[test]
fn an_empty_binary_directory_list_means_the_standard_search() {
    let scratch = Scratch::new();
    for value in ["", ":"] {
        let out = scratch
            .command(&["--temp-instance", "-i", "-s", "1"])
            .env("PGBOLT_TEMP_INSTANCE_BIN_DIRS", value)
            .output()
            .expect("run pgbolt");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{value:?}: {stderr}");
    }
    scratch.assert_nothing_left();
}

#[test]
fn settings_that_decide_where_the_server_listens_are_refused_before_anything_starts() {
    let scratch = Scratch::new();
    for setting in ["port=5433", "unix_socket_directories=/tmp", "hba_file=/x"] {
        let stderr = refused_setting(&scratch, setting);
        let name = setting.split('=').next().unwrap_or_default();
        assert!(
            stderr.contains(&format!("--temp-instance-setting cannot set {name}")),
            "{stderr}"
        );
    }
    scratch.assert_nothing_left();
}
