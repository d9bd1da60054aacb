//! Several load generators (`--generator`, `--start-at`, `--merge`)
//! against one real server over TCP.
//!
//! Four generators run as separate processes, each in a network namespace
//! of its own with its own address (veth pairs made by the test; when
//! namespaces cannot be made, all four use the loopback address and the
//! test says so), start together with `--start-at`, and their results are
//! merged. What must hold: the merged committed count is the number of
//! rows the transactions inserted and within the server's commit delta,
//! the merged histogram is the one rebuilt from the union of the
//! generators' `-l` logs, `client_id` is global, and the windows start
//! within the tolerance. Then every refusal of `--merge`, and a generator
//! ready after its start time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{pgbolt_path, stderr, stdout};
use pgbolt::stats::LatencyHistogram;
use pgbolt::tempdb::TempDb;

const GENERATORS: u32 = 4;
const NET: &str = "10.231";

/// The test binary's server, listening on every address, trusting the
/// generators' networks.
fn server() -> &'static TempDb {
    static SERVER: OnceLock<TempDb> = OnceLock::new();
    SERVER.get_or_init(|| {
        pgbolt::tempdb::install_signal_cleanup().expect("cleanup");
        let db = TempDb::builder()
            .tcp(true)
            .setting("listen_addresses", "*")
            .start()
            .expect("server starts");
        let hba = db.data_dir().join("pg_hba.conf");
        let mut text = std::fs::read_to_string(&hba).expect("pg_hba.conf");
        text.push_str(&format!("host all all {NET}.0.0/16 trust\n"));
        std::fs::write(&hba, text).expect("pg_hba.conf");
        db.psql("select pg_reload_conf()").expect("reload");
        db.psql("create table fleet_rows (client int, generator int)")
            .expect("table");
        db
    })
}

/// Network namespaces, one per generator, removed when dropped.
struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    /// Namespace `i` reaches the server at `NET.i.1` from `NET.i.2`; `None`
    /// (and the reason) when they cannot be made.
    fn create(count: u32) -> Result<Namespaces, String> {
        let mut made = Namespaces { names: Vec::new() };
        for i in 0..count {
            let name = format!("pgbolt_fleet_{}_{i}", std::process::id());
            let (host, peer) = (
                format!("pgbf{i}h{}", std::process::id() % 1000),
                format!("pgbf{i}p"),
            );
            let steps: Vec<Vec<String>> = vec![
                vec!["netns".into(), "add".into(), name.clone()],
                vec![
                    "link".into(),
                    "add".into(),
                    host.clone(),
                    "type".into(),
                    "veth".into(),
                    "peer".into(),
                    "name".into(),
                    peer.clone(),
                ],
                vec![
                    "link".into(),
                    "set".into(),
                    peer.clone(),
                    "netns".into(),
                    name.clone(),
                ],
                vec![
                    "addr".into(),
                    "add".into(),
                    format!("{NET}.{i}.1/24"),
                    "dev".into(),
                    host.clone(),
                ],
                vec!["link".into(), "set".into(), host.clone(), "up".into()],
                vec![
                    "-n".into(),
                    name.clone(),
                    "addr".into(),
                    "add".into(),
                    format!("{NET}.{i}.2/24"),
                    "dev".into(),
                    peer.clone(),
                ],
                vec![
                    "-n".into(),
                    name.clone(),
                    "link".into(),
                    "set".into(),
                    peer,
                    "up".into(),
                ],
                vec![
                    "-n".into(),
                    name.clone(),
                    "link".into(),
                    "set".into(),
                    "lo".into(),
                    "up".into(),
                ],
            ];
            made.names.push(name);
            for step in steps {
                let out = Command::new("ip")
                    .args(&step)
                    .output()
                    .map_err(|e| format!("ip: {e}"))?;
                if !out.status.success() {
                    return Err(format!("ip {}: {}", step.join(" "), stderr(&out)));
                }
            }
        }
        Ok(made)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.names {
            // Deleting the namespace removes its end of the pair, and so
            // the pair.
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
    }
}

/// Generator `i`'s command: inside its namespace when there are any.
fn generator_command(ns: Option<&Namespaces>, i: u32) -> Command {
    let db = server();
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns.names[i as usize]])
                .arg(pgbolt_path());
            c.args(["-h", &format!("{NET}.{i}.1")]);
            c
        }
        None => {
            let mut c = Command::new(pgbolt_path());
            c.args(["-h", "127.0.0.1"]);
            c
        }
    };
    cmd.args(["-p", &db.port().to_string(), "-U", &whoami(db)]);
    cmd.env_remove("PGHOST").env("PGDATABASE", "postgres");
    cmd
}

fn whoami(db: &TempDb) -> String {
    db.env()
        .into_iter()
        .find(|(k, _)| *k == "PGUSER")
        .map(|(_, v)| v)
        .expect("PGUSER")
}

fn now_us() -> i64 {
    pgbolt::wallclock::now_us()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

fn merge(args: &[&Path], options: &[&str]) -> Output {
    Command::new(pgbolt_path())
        .arg("--merge")
        .args(args)
        .args(options)
        .output()
        .expect("pgbolt runs")
}

/// The four generators' results (and their directories' logs), run once
/// for the whole binary.
fn fleet() -> &'static (tempfile::TempDir, Vec<PathBuf>, i64) {
    static FLEET: OnceLock<(tempfile::TempDir, Vec<PathBuf>, i64)> = OnceLock::new();
    FLEET.get_or_init(|| {
        let db = server();
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("insert.sql");
        std::fs::write(
            &script,
            "insert into fleet_rows values (:client_id, :generator);\n",
        )
        .expect("script");
        let namespaces = Namespaces::create(GENERATORS);
        if let Err(why) = &namespaces {
            eprintln!(
                "network namespaces unavailable ({why}): the generators share the loopback address"
            );
        }
        let ns = namespaces.as_ref().ok();
        let commits_before = commits(db);
        let start_at = now_us() / 1_000_000 + 4;
        let children: Vec<_> = (0..GENERATORS)
            .map(|i| {
                let mut cmd = generator_command(ns, i);
                cmd.current_dir(dir.path()).args([
                    "-n",
                    "-f",
                    &script.display().to_string(),
                    "-D",
                    &format!("generator={i}"),
                    "-c",
                    "10",
                    "-j",
                    "6",
                    "-T",
                    "2",
                    "-l",
                    &format!("--log-prefix=gen{i}"),
                    &format!("--generator={i}/{GENERATORS}"),
                    &format!("--start-at={start_at}"),
                    "--random-seed=42",
                    // The server's commit count is compared: no monitor.
                    "--no-monitor",
                    &format!("--json=gen{i}.json"),
                ]);
                cmd.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("generator starts")
            })
            .collect();
        let mut results = Vec::new();
        for (i, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().expect("generator ends");
            assert!(out.status.success(), "generator {i}: {}", stderr(&out));
            results.push(dir.path().join(format!("gen{i}.json")));
        }
        let committed = commits(db) - commits_before;
        drop(namespaces);
        (dir, results, committed)
    })
}

/// Committed transactions of database `postgres`, once the statistics of
/// ended sessions have been flushed.
fn commits(db: &TempDb) -> i64 {
    db.psql("select pg_sleep(0.5); select pg_stat_clear_snapshot(); select xact_commit from pg_stat_database where datname = 'postgres'")
        .expect("psql")
        .lines()
        .filter_map(|l| l.trim().parse::<i64>().ok())
        .next_back()
        .expect("xact_commit")
}

#[test]
fn four_generators_merge_into_the_exact_whole() {
    let (dir, results, commit_delta) = fleet();
    let paths: Vec<&Path> = results.iter().map(PathBuf::as_path).collect();
    let merged_path = dir.path().join("merged.json");
    let out = merge(&paths, &[&format!("--json={}", merged_path.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("number of clients: 10"), "{text}");
    assert!(text.contains("number of threads: 6"), "{text}");
    assert!(
        text.contains(&format!("generators: {GENERATORS} of {GENERATORS}")),
        "{text}"
    );
    let merged = json(&merged_path);
    let committed = merged["counts"]["committed"].as_i64().expect("committed");

    // Every committed transaction inserted one row; the server's commits
    // add the generators' set-up queries (a few each) to them.
    let rows: i64 = server()
        .psql("select count(*) from fleet_rows")
        .expect("count")
        .trim()
        .parse()
        .expect("number");
    assert_eq!(rows, committed);
    assert!(
        (committed..=committed + 10 * i64::from(GENERATORS)).contains(commit_delta),
        "server commits {commit_delta}, merged committed {committed}"
    );

    // client_id is global: 10 clients numbered 0..9 across the generators,
    // each generator's after the previous ones'.
    let ids = server()
        .psql("select generator, min(client), max(client) from fleet_rows group by 1 order by 1")
        .expect("ids");
    assert_eq!(ids.trim(), "0|0|2\n1|3|5\n2|6|7\n3|8|9", "{ids}");

    // The merged histogram is the union of the generators' transaction logs.
    let mut from_logs = LatencyHistogram::new();
    let mut logged = 0;
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("gen") || name.ends_with(".json") || name.ends_with(".sql") {
            continue;
        }
        for line in std::fs::read_to_string(&path).expect("log").lines() {
            let latency: i64 = line.split(' ').nth(2).expect("field").parse().expect("µs");
            from_logs.record(latency);
            logged += 1;
        }
    }
    assert_eq!(logged, committed);
    let histogram = merged["latency"]["histogram"].as_str().expect("histogram");
    let decoded = LatencyHistogram::from_base64(histogram).expect("decodes");
    assert_eq!(
        decoded.buckets().collect::<Vec<_>>(),
        from_logs.buckets().collect::<Vec<_>>()
    );

    // The windows started together.
    let starts: Vec<i64> = paths
        .iter()
        .map(|p| {
            json(p)["generator"]["window_start_us"]
                .as_i64()
                .expect("start")
        })
        .collect();
    let start_at = json(paths[0])["generator"]["start_at_us"]
        .as_i64()
        .expect("start_at");
    for s in &starts {
        assert!(
            (s - start_at).abs() < pgbolt::config::fleet::LATE_TOLERANCE_US,
            "{starts:?} {start_at}"
        );
    }
    let generators = merged["generators"].as_array().expect("generators");
    assert_eq!(generators.len(), 4);
    for g in generators {
        assert!(g["cpu_s"].as_f64().is_some_and(|s| s > 0.0), "{g}");
    }
    assert!(text.contains("cpu (s)  saturated"), "{text}");
}

/// Regression: the per-interval series started when the process did, so
/// a generator started 3 to 4 s before its `--start-at` showed empty
/// intervals, then all its transactions (a merged page: 0 tps, then a
/// spike). Each generator's series and the merged one now start with the
/// measured window, at `--start-at`, and the first interval has
/// transactions.
#[test]
fn a_generator_started_early_has_its_first_interval_full() {
    let (dir, results, _) = fleet();
    let paths: Vec<&Path> = results.iter().map(PathBuf::as_path).collect();
    let merged_path = dir.path().join("merged_series.json");
    let out = merge(&paths, &[&format!("--json={}", merged_path.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let generators: Vec<serde_json::Value> = paths.iter().map(|p| json(p)).collect();
    let start_at = generators[0]["generator"]["start_at_us"].as_i64().unwrap();
    for file in &generators {
        // The window opens at --start-at (its threads start µs after it).
        let window_start = file["generator"]["window_start_us"].as_i64().unwrap();
        assert!(
            (0..pgbolt::config::fleet::LATE_TOLERANCE_US).contains(&(window_start - start_at)),
            "{window_start} {start_at}"
        );
        let started = file["context"]["started_us"].as_i64().unwrap();
        assert!(start_at - started > 2_000_000, "{started} {start_at}");
    }
    for file in generators.iter().chain([&json(&merged_path)]) {
        let series = &file["series"];
        assert_eq!(series["start_us"].as_i64(), Some(start_at), "{series}");
        let committed: Vec<u64> = series["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["counts"]["committed"].as_u64().unwrap())
            .collect();
        assert!(committed.len() >= 2 && committed[0] > 0, "{committed:?}");
    }
}

#[test]
fn merge_refuses_what_is_not_one_whole_run() {
    let (dir, results, _) = fleet();
    let p: Vec<&Path> = results.iter().map(PathBuf::as_path).collect();

    let out = merge(&p[..3], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("generator 3 of 4 missing; merge the others anyway with --allow-partial"),
        "{}",
        stderr(&out)
    );
    let out = merge(&p[..3], &["--allow-partial"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("generators: 3 of 4 (missing: 3)"),
        "{}",
        stdout(&out)
    );

    let out = merge(&[p[0], p[1], p[1], p[2], p[3]], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("generator 1 appears twice"),
        "{}",
        stderr(&out)
    );

    // Another run (its own --run-id), and another script under the same id.
    let other = |name: &str, sql: &str, run_id: &str| -> PathBuf {
        let script = dir.path().join(format!("{name}.sql"));
        std::fs::write(&script, sql).expect("script");
        let json = dir.path().join(format!("{name}.json"));
        let out = generator_command(None, 0)
            .args([
                "-n",
                "-f",
                &script.display().to_string(),
                "-t",
                "3",
                "-c",
                "4",
            ])
            .args(["--generator=0/4", &format!("--run-id={run_id}")])
            .arg(format!("--json={}", json.display()))
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", stderr(&out));
        json
    };
    let another_run = other("another", "select 1;\n", "another-run");
    let out = merge(&[&another_run, p[1], p[2], p[3]], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("results of different runs"),
        "{}",
        stderr(&out)
    );

    let a = other("script_a", "select 1;\n", "same-id");
    let b = other("script_b", "select 2;\n", "same-id");
    let b_as_1 = dir.path().join("script_b_as_1.json");
    let mut value = json(&b);
    value["generator"]["index"] = 1.into();
    std::fs::write(&b_as_1, value.to_string()).expect("write");
    let out = merge(&[&a, &b_as_1], &["--allow-partial"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("different scripts"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_generator_ready_after_its_start_time_does_not_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let late = now_us() / 1_000_000 - 5;
    let script = dir.path().join("one.sql");
    std::fs::write(&script, "select 1;\n").expect("script");
    let out = generator_command(None, 0)
        .current_dir(dir.path())
        .args(["-n", "-f", &script.display().to_string(), "-T", "1"])
        .args(["--generator=0/2", "-c", "2"])
        .arg(format!("--start-at={late}"))
        .arg("--json=late.json")
        .output()
        .expect("runs");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("later than the 1 s allowed: this generator does not run"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("late.json").exists());
}

#[test]
fn bad_generator_options_are_refused_before_anything() {
    let run = |args: &[&str], env: Option<&str>| -> Output {
        let mut cmd = Command::new(pgbolt_path());
        cmd.args(args).env_remove("JOB_COMPLETION_INDEX");
        if let Some(v) = env {
            cmd.env("JOB_COMPLETION_INDEX", v);
        }
        cmd.output().expect("runs")
    };
    let cases: [(&[&str], Option<&str>, &str); 6] = [
        (
            &["--generator=4/4", "-c", "8"],
            None,
            "invalid value \"4/4\" for option --generator",
        ),
        (
            &["--generators=4", "-c", "8"],
            None,
            "JOB_COMPLETION_INDEX is not set",
        ),
        (
            &["--generators=4", "-c", "8"],
            Some("7"),
            "JOB_COMPLETION_INDEX is \"7\"",
        ),
        (
            &["--generator=0/4", "-c", "3"],
            None,
            "3 clients cannot be shared by 4 generators",
        ),
        (
            &["--start-at=soon"],
            None,
            "invalid value \"soon\" for option --start-at",
        ),
        (
            &["--merge"],
            None,
            "--merge needs the result files to merge",
        ),
    ];
    for (args, env, expected) in cases {
        let out = run(args, env);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = run(&["--merge", "a.json", "-c", "4"], None);
    assert!(
        stderr(&out).contains("-c/--client cannot be used with --merge"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_kubernetes_manifest_of_the_docs_is_valid() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scale-out.md"))
        .expect("docs/scale-out.md");
    let start = page.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let end = start + page[start..].find("```").expect("its end");
    let manifest = &page[start..end];
    assert!(manifest.contains("completionMode: Indexed"), "{manifest}");
    assert!(manifest.contains("--generators=4"), "{manifest}");
    // The generator's arguments are a command line pgbolt accepts.
    let bench = crate::common::k8s::validate_job(manifest, 2);
    assert_eq!(bench.fleet.map(|s| (s.index, s.count)), Some((2, 4)));
}

/// The backend-samples counted in a JSON `StateCounts`.
fn samples_in(counts: &serde_json::Value) -> u64 {
    let field = |name: &str| counts[name].as_u64().expect("count");
    let waiting: u64 = counts["waiting"]
        .as_object()
        .expect("waiting")
        .values()
        .map(|n| n.as_u64().expect("count"))
        .sum();
    field("on_cpu") + field("client") + field("idle_in_transaction") + field("other") + waiting
}

/// Regression: a generator's monitor counted its sibling generators'
/// commits as other sessions' work, and the merged result had no
/// diagnosis at all (its page: no findings, no server view). Each
/// generator now sees its siblings as sessions named like its clients,
/// and the merge draws the fleet's diagnosis: every generator's backends,
/// and the server's commits held against the whole fleet's, so nothing
/// there is another session.
#[test]
fn the_merged_result_carries_the_fleets_diagnosis() {
    let db = server();
    let dbname = crate::common::bench_database(db, &["-s", "1"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let start_at = now_us() / 1_000_000 + 3;
    let children: Vec<_> = (0..2)
        .map(|i| {
            let mut cmd = generator_command(None, i);
            cmd.current_dir(dir.path())
                .args(["-n", "-b", "select-only", "-c", "2", "-T", "2"])
                .arg(format!("--generator={i}/2"))
                .arg(format!("--start-at={start_at}"))
                .arg(format!("--json=g{i}.json"))
                .arg(&dbname)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("generator starts")
        })
        .collect();
    let mut paths = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("generator ends");
        assert!(out.status.success(), "generator {i}: {}", stderr(&out));
        let path = dir.path().join(format!("g{i}.json"));
        let d = &json(&path)["diagnosis"];
        assert!(
            samples_in(&d["activity"]["others"]["same_name"]) > 0,
            "generator {i} did not see its sibling: {}",
            d["activity"]
        );
        paths.push(path);
    }
    let merged_path = dir.path().join("merged.json");
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let out = merge(&inputs, &[&format!("--json={}", merged_path.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("\ndiagnosis:\n"), "{text}");
    assert!(text.contains("  client: each generator's own"), "{text}");
    let d = &json(&merged_path)["diagnosis"];
    assert_eq!(d["monitor"]["ran"], true, "{d}");
    let own: Vec<u64> = inputs
        .iter()
        .map(|p| samples_in(&json(p)["diagnosis"]["activity"]["total"]))
        .collect();
    let fleet = samples_in(&d["activity"]["total"]);
    assert!(fleet > *own.iter().max().expect("two"), "{own:?} {fleet}");
    for f in d["findings"].as_array().expect("findings") {
        assert_ne!(f["id"], "other-sessions", "{text}");
        if f["id"] == "commits-disagree" {
            assert_eq!(f["severity"], "info", "{text}");
        }
    }
    assert!(!text.contains("from other sessions"), "{text}");
}
