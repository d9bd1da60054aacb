//! A Patroni cluster of two PostgreSQL 18 nodes and one etcd on loopback
//! (Debian's `patroni`, `etcd-server`, `etcd-client`; `make deps`
//! installs them), synchronous: `patronictl switchover` during a pgbolt
//! run under `--reconnect`, then the same switchover back under pgbench
//! 18.6, whose clients abort, then a failover (`kill -9` of the leader's
//! Patroni and postmaster, the standby promoted when the leader key
//! expires) under `--reconnect` again.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use crate::support::{
    check_against_server_gap, check_no_acknowledged_commit_lost, check_outage, finish, result,
    run_through, start, wait_until,
};

const BIN: &str = "/opt/pgbolt-pg18/bin";

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port on 127.0.0.1")
}

/// The `postgres` account's ids when the tests run as root (Patroni runs
/// PostgreSQL, which refuses root), else none.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("postgres").expect("name");
    // SAFETY: a valid C string; the entry is read at once, before any
    // other getpw* call of this thread.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(!entry.is_null(), "no postgres OS user");
    // SAFETY: checked non-null above.
    let entry = unsafe { &*entry };
    Some((entry.pw_uid, entry.pw_gid))
}

/// One etcd and two Patroni nodes; every process stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    etcd: Child,
    nodes: Vec<Child>,
    pub ports: [u16; 2],
}

impl Cluster {
    fn start() -> Cluster {
        for program in ["patroni", "patronictl", "etcd"] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {program}")])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success()),
                "{program} is not installed: run `make deps`"
            );
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let owner = server_user();
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
        }
        let (client, peer) = (free_port(), free_port());
        let etcd_dir = dir.path().join("etcd");
        let mut etcd = Command::new("etcd");
        etcd.args(["--name", "e", "--data-dir"])
            .arg(&etcd_dir)
            .args([
                "--listen-client-urls",
                &format!("http://127.0.0.1:{client}"),
                "--advertise-client-urls",
                &format!("http://127.0.0.1:{client}"),
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-cluster",
                &format!("e=http://127.0.0.1:{peer}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let etcd = etcd.spawn().expect("etcd starts");
        let ports = [free_port(), free_port()];
        let mut cluster = Cluster {
            dir,
            etcd,
            nodes: Vec::new(),
            ports,
        };
        for (i, port) in ports.iter().enumerate() {
            let config = cluster.node_config(i, *port, free_port(), client);
            let mut cmd = Command::new("patroni");
            cmd.arg(&config)
                .env("HOME", cluster.dir.path())
                .current_dir(cluster.dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(
                    std::fs::File::create(cluster.dir.path().join(format!("n{i}.log")))
                        .map(Stdio::from)
                        .unwrap_or_else(|_| Stdio::null()),
                )
                .process_group(0);
            if let Some((uid, gid)) = owner {
                cmd.uid(uid).gid(gid);
            }
            cluster.nodes.push(cmd.spawn().expect("patroni starts"));
        }
        cluster
    }

    fn config_path(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("n{i}.yml"))
    }

    fn node_config(&self, i: usize, port: u16, rest: u16, etcd: u16) -> PathBuf {
        let dir = self.dir.path().display();
        let text = format!(
            "scope: pgbolt-failover
name: n{i}
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd3:
  hosts: 127.0.0.1:{etcd}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 3
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: 'on'
  initdb:
    - encoding: UTF8
postgresql:
  listen: 127.0.0.1:{port}
  connect_address: 127.0.0.1:{port}
  data_dir: {dir}/n{i}
  bin_dir: {BIN}
  pgpass: {dir}/pgpass{i}
  authentication:
    superuser:
      username: postgres
      password: failover-test
    replication:
      username: replicator
      password: failover-test
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '{dir}'
"
        );
        let path = self.config_path(i);
        std::fs::write(&path, text).expect("write the node's configuration");
        path
    }

    /// `patronictl list -f json`, or none while it cannot answer.
    fn members(&self) -> Option<Vec<Value>> {
        let out = Command::new("patronictl")
            .arg("-c")
            .arg(self.config_path(0))
            .args(["list", "-f", "json"])
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .ok()?;
        serde_json::from_slice::<Vec<Value>>(&out.stdout).ok()
    }

    /// Waits for a leader and a synchronous standby; returns the
    /// leader's name and the standby's.
    fn wait_synchronous(&self) -> (String, String) {
        let mut names = (String::new(), String::new());
        wait_until(
            "a leader and a Sync Standby",
            Duration::from_secs(90),
            || {
                let Some(members) = self.members() else {
                    return false;
                };
                let role = |wanted: &str| {
                    members
                        .iter()
                        .find(|m| m["Role"] == wanted && m["State"] != "stopped")
                        .and_then(|m| m["Member"].as_str())
                        .map(str::to_owned)
                };
                match (role("Leader"), role("Sync Standby")) {
                    (Some(leader), Some(standby)) => {
                        names = (leader, standby);
                        true
                    }
                    _ => false,
                }
            },
        );
        names
    }

    fn switchover(&self, leader: &str, candidate: &str) {
        let out = Command::new("patronictl")
            .arg("-c")
            .arg(self.config_path(0))
            .args([
                "switchover",
                "--leader",
                leader,
                "--candidate",
                candidate,
                "--force",
            ])
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("patronictl runs");
        assert!(
            out.status.success(),
            "switchover: {}{}",
            common::stdout(&out),
            common::stderr(&out)
        );
    }

    /// The connection string through both nodes to the primary.
    fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1,127.0.0.1 port={},{} dbname=postgres user=postgres \
             target_session_attrs=read-write",
            self.ports[0], self.ports[1]
        )
    }

    fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// `kill -9` of node `name`'s Patroni and of its postmaster.
    fn kill(&mut self, name: &str) {
        let i: usize = name.trim_start_matches('n').parse().expect("a node's name");
        let pid_file = self.dir.path().join(format!("n{i}/postmaster.pid"));
        let postmaster: i32 = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.lines().next().and_then(|l| l.trim().parse().ok()))
            .expect("the leader's postmaster.pid");
        let patroni = self.nodes[i].id() as i32;
        for pid in [patroni, postmaster] {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.nodes[i].wait();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(node.id() as i32, libc::SIGTERM) };
        }
        for node in &mut self.nodes {
            let _ = node.wait();
        }
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
    }
}

fn program(path: impl AsRef<std::ffi::OsStr>, cluster: &Cluster, args: &[&str]) -> Command {
    let mut cmd = common::without_pg_env(path);
    cmd.args(args)
        .env("PGHOST", cluster.socket_dir())
        .stdin(Stdio::null());
    cmd
}

/// A number `sql` reads on the primary, through the host list.
fn number(cluster: &Cluster, sql: &str) -> Option<i64> {
    let conninfo = cluster.conninfo();
    let out = program(
        Path::new(BIN).join("psql"),
        cluster,
        &["-XAtq", "-d", &conninfo, "-c", sql],
    )
    .output()
    .ok()?;
    common::stdout(&out).trim().parse().ok()
}

fn history_rows(cluster: &Cluster) -> Option<i64> {
    number(cluster, "SELECT count(*) FROM pgbench_history")
}

/// Sessions of `application` on the primary.
fn sessions(cluster: &Cluster, application: &str) -> Option<i64> {
    number(
        cluster,
        &format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{application}'"),
    )
}

#[test]
fn a_switchover_and_a_failover_under_reconnect_lose_no_commit_and_pgbench_aborts() {
    let mut cluster = Cluster::start();
    cluster.wait_synchronous();
    let init = program(
        common::pgbolt_path(),
        &cluster,
        &["-i", "-q", "-s", "1", &cluster.conninfo()],
    )
    .output()
    .expect("pgbolt -i runs");
    assert!(init.status.success(), "{}", common::stderr(&init));
    let (leader, standby) = cluster.wait_synchronous();

    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let html = dir.path().join("run.html");
    let json_arg = format!("--json={}", json.display());
    let html_arg = format!("--html={}", html.display());
    let conninfo = cluster.conninfo();
    let out = run_through(
        program(
            common::pgbolt_path(),
            &cluster,
            &[
                "-c",
                "4",
                "-j",
                "2",
                "-R",
                "200",
                "-L",
                "300",
                "-t",
                "800",
                "--reconnect=30",
                &json_arg,
                &html_arg,
                &conninfo,
            ],
        ),
        "transactions before the switchover",
        || history_rows(&cluster).is_some_and(|n| n >= 100),
        || cluster.switchover(&leader, &standby),
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    if let Some(keep) = std::env::var_os("PGBOLT_FAILOVER_PAGE") {
        let _ = std::fs::copy(&html, keep);
    }
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let json = result(&json);
    let outage = check_outage(&json, 4, Some(3200));
    check_no_acknowledged_commit_lost(outage);
    let (run, server) = check_against_server_gap(outage);
    println!("switchover: outage {run} us, server-side gap {server} us\n{stdout}");
    for c in outage["clients"].as_array().expect("clients") {
        assert_ne!(c["host_before"], c["host_after"], "{c}");
    }

    // pgbench 18.6 under the same switchover, back to the first leader.
    let (leader, standby) = cluster.wait_synchronous();
    let out = run_through(
        program(
            common::pgbench_path(),
            &cluster,
            &["-n", "-c", "4", "-j", "2", "-T", "60", "-S", &conninfo],
        ),
        "pgbench's clients connected",
        || sessions(&cluster, "pgbench") == Some(4),
        || cluster.switchover(&leader, &standby),
    );
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let aborted = stderr
        .lines()
        .filter(|l| l.contains("client ") && l.contains(" aborted"))
        .count();
    assert_eq!(aborted, 4, "{stderr}");
    println!("pgbench: {}\n{stderr}", common::stdout(&out));

    // A failover: the leader killed, the synchronous standby promoted.
    // The outage lasts about the leader key's ttl, longer than the rest
    // of a -t schedule would (its late transactions are skipped, and
    // count): a timed run leaves every client time to commit again.
    let (leader, _) = cluster.wait_synchronous();
    let rows = history_rows(&cluster).expect("pgbench_history rows");
    let json = dir.path().join("failover.json");
    let json_arg = format!("--json={}", json.display());
    // Killing the leader needs the cluster mutably: no closure may hold
    // it meanwhile.
    let child = start(program(
        common::pgbolt_path(),
        &cluster,
        &[
            "-n",
            "-c",
            "4",
            "-j",
            "2",
            "-R",
            "200",
            "-L",
            "300",
            "-T",
            "22",
            "--reconnect=60",
            &json_arg,
            &conninfo,
        ],
    ));
    wait_until(
        "transactions before the failover",
        Duration::from_secs(60),
        || history_rows(&cluster).is_some_and(|n| n >= rows + 100),
    );
    cluster.kill(&leader);
    let out = finish(child);
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let json = result(&json);
    let outage = check_outage(&json, 4, None);
    check_no_acknowledged_commit_lost(outage);
    let (run, server) = check_against_server_gap(outage);
    println!("failover: outage {run} us, server-side gap {server} us\n{stdout}");
}
