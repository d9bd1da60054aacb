//! `--temp-instance`: a benchmark on a throwaway server from one command,
//! and nothing left behind (no process, no directory) whatever happens.
//!
//! Each test gives pgbolt a temporary directory of its own as `TMPDIR`, so
//! "nothing left behind" means that directory is empty afterwards and no
//! process mentions it on its command line.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::tempinst_support::{text, Scratch};

#[test]
fn a_run_initializes_benchmarks_reports_and_cleans_up() {
    let scratch = Scratch::new();
    let out = scratch.run(&[
        "--temp-instance",
        "--temp-instance-setting=shared_buffers=48MB",
        "-s",
        "1",
        "-c",
        "2",
        "-t",
        "20",
    ]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The newest server found, named with its directory.
    let chosen = pgbolt::tempdb::find_bin_dir().expect("server programs");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("throwaway instance: PostgreSQL ")
            && first.ends_with(&format!(", from {}", chosen.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("server settings: shared_buffers=48MB\n"),
        "{stdout}"
    );
    assert!(stdout.contains("scaling factor: 1\n"), "{stdout}");
    assert!(
        stdout.contains("number of transactions actually processed: 40/40\n"),
        "{stdout}"
    );
    assert!(stdout.contains("latency percentiles: p50 = "), "{stdout}");
    assert!(
        stderr.contains("creating pgbench's tables at scale 1"),
        "{stderr}"
    );
    assert!(!stderr.contains("scale option ignored"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn pgbench_output_leaves_out_the_header() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "-s", "1", "-t", "5", "--pgbench-output"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.starts_with("pgbolt ("), "{stdout}");
    assert!(!stdout.contains("throwaway instance"), "{stdout}");
    assert!(!stdout.contains("percentiles"), "{stdout}");
    scratch.assert_nothing_left();
}

#[test]
fn json_on_standard_output_stays_pure_json() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "-s", "1", "-t", "5", "--json=-"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("standard output is JSON");
    assert!(json.get("schema_version").is_some());
    assert!(
        stderr.contains("throwaway instance: PostgreSQL "),
        "{stderr}"
    );
    scratch.assert_nothing_left();
}

#[test]
fn initialization_alone_runs_no_benchmark() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "-i", "-s", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("done in "), "{stderr}");
    assert!(!text(&out.stdout).contains("tps = "));
    scratch.assert_nothing_left();
}

#[test]
fn a_setting_the_server_rejects_shows_the_servers_message() {
    let scratch = Scratch::new();
    let out = scratch.run(&[
        "--temp-instance",
        "--temp-instance-setting=shared_buffers=lots",
        "-i",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("pgbolt: error: could not start the throwaway instance: "),
        "{stderr}"
    );
    assert!(stderr.contains("shared_buffers"), "{stderr}");
    scratch.assert_nothing_left();
}

/// A connection limit set lower than `-c` is refused before the tables
/// are loaded, and the hint names the setting that raises it.
#[test]
fn a_connection_limit_below_the_clients_names_the_setting_that_raises_it() {
    let scratch = Scratch::new();
    let out = scratch.run(&[
        "--temp-instance",
        "--temp-instance-setting=max_connections=5",
        "--temp-instance-setting=superuser_reserved_connections=1",
        "-c",
        "6",
        "-t",
        "1",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the server cannot accept 6 more connections: max_connections is 5"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--temp-instance-setting=max_connections=6;"),
        "{stderr}"
    );
    // Known before the tables are loaded, refused before.
    assert!(!stderr.contains("generating data"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn a_failing_option_starts_nothing() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "-c", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("-c/--client must be in range"));
    scratch.assert_nothing_left();
}

#[test]
fn missing_server_binaries_say_where_we_looked_and_how_to_install() {
    let scratch = Scratch::new();
    let out = scratch
        .command(&["--temp-instance", "-i"])
        .env("PATH", "")
        .env("PGBOLT_TEMP_INSTANCE_BIN_DIRS", "/nonexistent/pgbolt-bin")
        .output()
        .expect("run pgbolt");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/nonexistent/pgbolt-bin"), "{stderr}");
    assert!(stderr.contains("apt-get install postgresql"), "{stderr}");
    scratch.assert_nothing_left();
}

#[test]
fn a_kept_instance_can_be_used_and_stopped_with_the_printed_commands() {
    let scratch = Scratch::new();
    let out = scratch.run(&["--temp-instance", "--temp-instance-keep", "-i", "-s", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let command_after = |label: &str| {
        stderr
            .lines()
            .find_map(|line| line.trim_start().strip_prefix(label))
            .unwrap_or_else(|| panic!("no {label} line in {stderr}"))
            .trim()
            .to_string()
    };
    let connect = command_after("connect:");
    let stop = command_after("stop:");

    let query = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{connect} -Atc 'select count(*) from pgbench_branches'"
        ))
        .output()
        .expect("run the connect command");
    assert_eq!(text(&query.stdout).trim(), "1", "{}", text(&query.stderr));

    let stopped = Command::new("sh").arg("-c").arg(&stop).output().unwrap();
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    scratch.assert_nothing_left();
}

#[test]
fn ctrl_c_during_a_run_prints_the_report_and_cleans_up() {
    let scratch = Scratch::new();
    let mut child = scratch
        .command(&[
            "--temp-instance",
            "-s",
            "1",
            "-c",
            "2",
            "-T",
            "60",
            "-P",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pgbolt");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let progress = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.starts_with("progress: "));
    assert!(progress.is_some(), "the run never reported progress");

    // SAFETY: kill() with the id of a child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    // Ended by the signal, not by the end of the 60-second run.
    assert_ne!(status.code(), Some(0), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("Run was interrupted")),
        "{rest:?}"
    );
    assert!(
        stdout.contains("number of transactions actually processed: "),
        "{stdout}\n{rest:?}"
    );
    scratch.assert_nothing_left();
}
