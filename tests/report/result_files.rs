//! The user's result files are written whole or not at all: a sweep that
//! never starts, a process killed in the middle and a full file system all
//! leave the previous `--json` and `--html` byte for byte, with no
//! temporary file beside them.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{bench_database, pgbolt_path, server, stderr, without_pg_env, Run};

const OLD_JSON: &str = "{\"previous\": \"result\"}\n";
const OLD_HTML: &str = "<html>previous page</html>\n";

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list the directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `r.json` and `r.html` in `dir`, holding a previous result.
fn old_files(dir: &Path) -> (PathBuf, PathBuf) {
    let (json, html) = (dir.join("r.json"), dir.join("r.html"));
    fs::write(&json, OLD_JSON).expect("write the old JSON");
    fs::write(&html, OLD_HTML).expect("write the old page");
    (json, html)
}

fn assert_old_files_kept(json: &Path, html: &Path, context: &str) {
    assert_eq!(fs::read_to_string(json).unwrap(), OLD_JSON, "{context}");
    assert_eq!(fs::read_to_string(html).unwrap(), OLD_HTML, "{context}");
}

fn outputs(json: &Path, html: &Path) -> [String; 2] {
    [
        format!("--json={}", json.display()),
        format!("--html={}", html.display()),
    ]
}

#[test]
fn a_sweep_refused_before_it_starts_keeps_the_old_files_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = old_files(dir.path());
    let [j, h] = outputs(&json, &html);
    let args = ["-S", "-T", "1", "--sweep=clients:1,2", &j, &h];
    let out = Run::new("pgbolt_no_such_database", &args).pgbolt();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_old_files_kept(&json, &html, &stderr(&out));
    assert_eq!(names(dir.path()), ["r.html", "r.json"]);
}

#[test]
fn kill_9_in_the_middle_of_a_sweep_keeps_the_old_files() {
    let dbname = bench_database(server(), &["-s", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = old_files(dir.path());
    let [j, h] = outputs(&json, &html);
    let args = ["-S", "-T", "3", "--sweep=clients:1,2", &j, &h];
    let mut child = Run::new(&dbname, &args)
        .pgbolt_command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("pgbolt starts");
    // Killed once its clients are at work.
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{dbname}' \
         AND application_name = 'pgbolt' AND state IS NOT NULL"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while server().psql(&sql).expect("pg_stat_activity").trim() == "0" {
        assert!(Instant::now() < deadline, "the sweep never started");
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    assert_old_files_kept(&json, &html, "after kill -9");
    assert_eq!(names(dir.path()), ["r.html", "r.json"]);
}

/// A tiny tmpfs, unmounted on drop.
struct SmallMount(tempfile::TempDir);

impl SmallMount {
    /// `None` when mounting is not allowed here (not root, a container
    /// without the capability).
    fn new() -> Option<SmallMount> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallMount(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// Fills the rest of the file system with one file.
    fn fill(&self) {
        let mut filler = fs::File::create(self.path().join("filler")).unwrap();
        let page = [0u8; 4096];
        while filler.write_all(&page).is_ok() {}
    }
}

impl Drop for SmallMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.path()).status();
    }
}

fn pgbolt_offline(args: &[&str]) -> Output {
    without_pg_env(pgbolt_path())
        .args(args)
        .output()
        .expect("pgbolt runs")
}

#[test]
fn a_full_file_system_leaves_no_partial_file_and_the_old_ones_intact() {
    let Some(mount) = SmallMount::new() else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let dbname = bench_database(server(), &["-s", "1"]);
    let inputs = tempfile::tempdir().unwrap();
    let run_json = inputs.path().join("run.json");
    let out = Run::new(&dbname, &["-S", "-t", "20"])
        .arg(&format!("--json={}", run_json.display()))
        .pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
    let run_json = run_json.to_string_lossy().into_owned();

    let (json, html) = old_files(mount.path());
    mount.fill();
    let [j, h] = outputs(&json, &html);
    let expected = ["filler", "r.html", "r.json"];

    let out = Run::new(&dbname, &["-S", "-t", "20", &j, &h]).pgbolt();
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{errors}");
    assert!(
        errors.contains(&format!("\"{}\"", json.display())),
        "{errors}"
    );
    assert!(errors.contains("No space left on device"), "{errors}");
    assert_old_files_kept(&json, &html, &errors);
    assert_eq!(names(mount.path()), expected);

    let render = format!("--render={run_json}");
    let offline: [(&str, Vec<&str>); 2] = [
        ("--render", vec![&render, &h]),
        ("--compare", vec!["--compare", &run_json, &run_json, &j, &h]),
    ];
    for (mode, args) in offline {
        let out = pgbolt_offline(&args);
        let errors = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{mode}: {errors}");
        assert!(
            errors.contains("No space left on device"),
            "{mode}: {errors}"
        );
        assert_old_files_kept(&json, &html, mode);
        assert_eq!(names(mount.path()), expected, "{mode}");
    }
}

#[test]
fn an_output_that_is_an_input_or_another_output_is_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        fs::write(dir.path().join(name), text).unwrap();
        name.to_owned()
    };
    let (g0, g1) = (file("g0.json", "{\"g\": 0}"), file("g1.json", "{\"g\": 1}"));
    let script = file("s.sql", "SELECT 1;\n");
    let before = names(dir.path());
    // Nothing listens there: a mode that got as far as connecting would
    // say so instead.
    let nowhere = ["-h", "/nonexistent-pgbolt-socket-dir"];
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["--merge", &g0, &g1, "--json=g0.json"],
            "is the --merge input",
        ),
        (
            vec!["--compare", &g0, &g1, "--json=./g0.json"],
            "is the --compare input",
        ),
        (
            vec!["--compare", &g0, &g1, "--html=g1.json"],
            "is the --compare input",
        ),
        (
            vec!["--render=g0.json", "--html=./g0.json"],
            "is the --render input",
        ),
        (
            [&nowhere[..], &["-f", &script, "--json=s.sql"]].concat(),
            "is the -f script",
        ),
        (
            [&nowhere[..], &["-S", "--json=new.out", "--html=./new.out"]].concat(),
            "is also the --json file",
        ),
    ];
    for (args, wanted) in cases {
        let out = without_pg_env(pgbolt_path())
            .args(&args)
            .current_dir(dir.path())
            .output()
            .expect("pgbolt runs");
        let errors = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {errors}");
        assert!(errors.contains(wanted), "{args:?}: {errors}");
        assert!(!errors.contains("connection"), "{args:?}: {errors}");
        assert_eq!(names(dir.path()), before, "{args:?}");
    }
    assert_eq!(
        fs::read_to_string(dir.path().join("g0.json")).unwrap(),
        "{\"g\": 0}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("s.sql")).unwrap(),
        "SELECT 1;\n"
    );
}

/// The address space pgbolt gets in [`offline_within_memory`]: far less
/// than a 2 GiB input, far more than the offline modes need.
const ADDRESS_SPACE: libc::rlim_t = 256 << 20;

/// Runs pgbolt with `args` (connecting nowhere) with at most
/// [`ADDRESS_SPACE`] of memory, and returns its exit status (`None` when a
/// signal ended it, as an allocation past the limit does) and its
/// standard error. A limit, rather than the child's peak RSS from
/// `wait4`: Linux counts into that peak the memory of the test process the
/// child was forked from, which other tests of this binary make grow.
fn offline_within_memory(args: &[&str]) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut command = without_pg_env(pgbolt_path());
    command.args(args);
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let out = command.output().expect("pgbolt runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn endless_and_huge_inputs_are_refused_with_flat_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = dir.path().join("sparse.json");
    fs::File::create(&sparse).unwrap().set_len(2 << 30).unwrap();
    let sparse = sparse.to_string_lossy().into_owned();
    let page = dir.path().join("page.html").to_string_lossy().into_owned();
    let html = format!("--html={page}");
    let cases: [(Vec<String>, &str); 6] = [
        (vec!["--render=/dev/zero".into(), html.clone()], "NUL byte"),
        (
            vec!["--compare".into(), "/dev/zero".into(), sparse.clone()],
            "NUL byte",
        ),
        (vec!["--merge".into(), "/dev/zero".into()], "NUL byte"),
        (
            vec![format!("--render={sparse}"), html.clone()],
            "more than the limit",
        ),
        (
            vec!["--merge".into(), sparse.clone()],
            "more than the limit",
        ),
        (
            vec![
                "--merge".into(),
                "--max-input-size=1kB".into(),
                "/dev/urandom".into(),
            ],
            "",
        ),
    ];
    for (args, wanted) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, errors) = offline_within_memory(&args);
        assert_eq!(code, Some(1), "{args:?}: {errors}");
        assert!(errors.contains(wanted), "{args:?}: {errors}");
        assert!(!errors.contains("panicked"), "{args:?}: {errors}");
    }
    assert!(!Path::new(&page).exists());
}

/// A generator's result, as `--generator=0/2` wrote it, to craft others
/// from.
fn generator_result() -> serde_json::Value {
    let dbname = bench_database(server(), &["-s", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g0.json");
    let json = format!("--json={}", path.display());
    let out = Run::new(
        &dbname,
        &["-S", "-c", "2", "-t", "5", "--generator=0/2", &json],
    )
    .pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn crafted_generator_counts_indexes_and_sums_are_refused() {
    let g0 = generator_result();
    let mut g1 = g0.clone();
    g1["generator"]["index"] = 1.into();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, value: &serde_json::Value| {
        let path = dir.path().join(name);
        fs::write(&path, value.to_string()).unwrap();
        path.to_string_lossy().into_owned()
    };
    let edit = |value: &serde_json::Value, pointer: &str, new: serde_json::Value| {
        let mut value = value.clone();
        *value.pointer_mut(pointer).expect(pointer) = new;
        value
    };
    let cases = [
        (
            edit(&g0, "/generator/count", u32::MAX.into()),
            "generator.count is 4294967295, which cannot be",
        ),
        (
            edit(
                &edit(&g0, "/generator/count", 3.into()),
                "/generator/index",
                7.into(),
            ),
            "generator.index is 7, which cannot be: it must be below generator.count (3)",
        ),
        (
            edit(&g0, "/options/clients", u32::MAX.into()),
            "its options.clients added to the other files'",
        ),
        (
            edit(&g0, "/counts/committed", u64::MAX.into()),
            "its counts.committed added to the other files'",
        ),
        (
            edit(&g0, "/counts/other_failures", u64::MAX.into()),
            "counts.",
        ),
    ];
    let second = write("g1.json", &g1);
    for (crafted, wanted) in cases {
        let first = write("crafted.json", &crafted);
        let (code, errors) =
            offline_within_memory(&["--merge", &second, &first, "--allow-partial"]);
        assert_eq!(code, Some(1), "{wanted}: {errors}");
        assert!(errors.contains(wanted), "{wanted}: {errors}");
        assert!(errors.contains("crafted.json"), "{errors}");
        assert!(!errors.contains("panicked"), "{errors}");
    }
}
