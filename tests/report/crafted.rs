//! Result files that pgbolt did not write as they are: crafted fields,
//! absurd sizes, and files of another kind given to `--render` and
//! `--compare`. Each ends at once with exit status 1 and a message naming
//! the file and the field (or saying what the file is), never with a
//! loop, a panic or memory that grows. The results edited here come from
//! one short real run and one short sweep on the shared server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::report_support::*;
use serde_json::Value;

/// A short run's and a short sweep's JSON, and a comparison's page and
/// JSON, written once for every test here.
struct Saved {
    _dir: tempfile::TempDir,
    run: Value,
    sweep: Value,
    dir: PathBuf,
}

fn saved() -> &'static Saved {
    static SAVED: OnceLock<Saved> = OnceLock::new();
    SAVED.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        for args in [
            &["-S", "-t", "50", "--json=run.json"][..],
            &["-S", "-t", "20", "--sweep=clients:1,2", "--json=sweep.json"][..],
        ] {
            let out = Run::new(shared_database(), args)
                .in_dir(dir.path())
                .pgbolt();
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        }
        for args in [
            &[
                "--compare",
                "run.json",
                "run.json",
                "--json=comparison.json",
                "--html=comparison.html",
            ][..],
            &[
                "--compare",
                "sweep.json",
                "sweep.json",
                "--html=sweep-comparison.html",
            ][..],
        ] {
            let out = offline(dir.path(), args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        }
        let read = |name: &str| -> Value {
            let text = std::fs::read_to_string(dir.path().join(name)).expect("result");
            serde_json::from_str(&text).expect("JSON")
        };
        Saved {
            run: read("run.json"),
            sweep: read("sweep.json"),
            dir: dir.path().to_owned(),
            _dir: dir,
        }
    })
}

/// pgbolt with `args` in `dir`, connecting nowhere, given two minutes at
/// most (a loop would otherwise hang the suite).
fn offline(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgbolt"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pgbolt runs");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("pgbolt {args:?} still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Writes `value` as `name` in a directory of its own, then runs
/// `--render` and `--compare` (against the real run) on it: both must
/// end with status 1 and `wanted` after the file's name.
fn refused(name: &str, value: &Value, wanted: &str) {
    let s = saved();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(s.dir.join("run.json"), dir.path().join("run.json")).expect("copy");
    std::fs::write(dir.path().join(name), value.to_string()).expect("write");
    let render = format!("--render={name}");
    for args in [
        &[&render, "--html=page.html"][..],
        &["--compare", "run.json", name][..],
    ] {
        let out = offline(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let message = format!("pgbolt: error: result file \"{name}\": {wanted}\n");
        assert_eq!(stderr(&out), message, "{args:?}");
        assert!(!dir.path().join("page.html").exists());
    }
}

#[test]
fn a_series_width_of_zero_is_refused() {
    let mut run = saved().run.clone();
    run["series"]["width_us"] = 0.into();
    refused(
        "zero.json",
        &run,
        "field series.width_us is 0: it must be from 1 to 31622400000000 µs",
    );
}

#[test]
fn a_negative_series_width_is_refused() {
    let mut run = saved().run.clone();
    run["series"]["width_us"] = (-1_000_000).into();
    refused(
        "negative.json",
        &run,
        "field series.width_us is -1000000: it must be from 1 to 31622400000000 µs",
    );
}

#[test]
fn absurd_times_are_refused() {
    let mut run = saved().run.clone();
    run["timings"]["bench_duration_us"] = (-5).into();
    refused(
        "duration.json",
        &run,
        "field timings.bench_duration_us is -5: it must be from 0 to 3162240000000000 µs",
    );
    let mut run = saved().run.clone();
    run["series"]["intervals"][0]["offset_s"] = 1e300.into();
    refused(
        "offset.json",
        &run,
        "field series.intervals[0].offset_s is 1e300: it must be from -3.16224e9 to 3.16224e9",
    );
}

#[test]
fn a_sweep_with_a_crafted_step_is_refused() {
    let mut sweep = saved().sweep.clone();
    sweep["steps"][1]["result"]["series"]["width_us"] = 0.into();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("sweep.json"), sweep.to_string()).expect("write");
    for args in [
        &["--render=sweep.json", "--html=page.html"][..],
        &["--compare", "sweep.json", "sweep.json"][..],
    ] {
        let out = offline(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "pgbolt: error: result file \"sweep.json\": invalid sweep result: field steps[1].result.series.width_us is 0: it must be from 1 to 31622400000000 µs\n",
            "{args:?}"
        );
    }
}

/// The embedded JSON of the page `name` in `dir`.
fn embedded(dir: &Path, name: &str) -> Value {
    let page = std::fs::read_to_string(dir.join(name)).expect("page");
    let json = pgbolt::report::html::embedded_json(&page).expect("embedded JSON");
    serde_json::from_str(json).expect("JSON")
}

/// A comparison's page embeds both results, so `--render` draws it again
/// (the same comparison, the same results); a comparison's JSON holds the
/// figures only, and `--render` says what it is and where its page comes
/// from, where it used to name a missing field of a run's result.
#[test]
fn a_comparison_given_to_render_is_drawn_or_named_for_what_it_is() {
    let s = saved();
    for page in ["comparison.html", "sweep-comparison.html"] {
        let again = format!("again-{page}");
        let out = offline(
            &s.dir,
            &[&format!("--render={page}"), &format!("--html={again}")],
        );
        assert_eq!(out.status.code(), Some(0), "{page}: {}", stderr(&out));
        assert_eq!(embedded(&s.dir, &again), embedded(&s.dir, page), "{page}");
    }
    let out = offline(&s.dir, &["--render=comparison.json", "--html=page.html"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "pgbolt: error: \"comparison.json\" is the JSON of a comparison of two runs (pgbolt --compare): it holds the figures, not the two results its page draws; render the comparison's page (--render PAGE.html), or make one from the two results: pgbolt --compare BASELINE CANDIDATE --html=FILE\n",
    );
    std::fs::write(s.dir.join("notes.txt"), "a list of things\n").expect("write");
    let out = offline(&s.dir, &["--render=notes.txt", "--html=page.html"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "pgbolt: error: \"notes.txt\" is neither JSON nor a page written by pgbolt; --render draws the result of a run, a merged fleet, a sweep or targets compared, or a comparison's page\n"
    );
    assert!(!s.dir.join("page.html").exists());
}

/// A comparison's page whose embedded result was tampered with is refused
/// as that result's file would be, naming the side.
#[test]
fn a_comparison_page_with_a_crafted_result_is_refused() {
    let s = saved();
    let mut e = embedded(&s.dir, "comparison.html");
    e["candidate"]["series"]["width_us"] = 0.into();
    let page = std::fs::read_to_string(s.dir.join("comparison.html")).expect("page");
    let json = pgbolt::report::html::embedded_json(&page).expect("embedded");
    let crafted = page.replace(json, &e.to_string());
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("c.html"), crafted).expect("write");
    let out = offline(dir.path(), &["--render=c.html", "--html=page.html"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "pgbolt: error: result file \"c.html\": its candidate's result: field series.width_us is 0"
        ),
        "{}",
        stderr(&out)
    );
}

/// A result file's name and a server's version are outside text: in the
/// Markdown comparison they stay on their line and show as written (no
/// raw HTML), and in the text comparison each stays on its line.
#[test]
fn the_comparisons_escape_the_names_and_strings_they_embed() {
    let hostile = "18\n<script>alert(1)</script>";
    let mut run = saved().run.clone();
    run["context"]["server_version"] = hostile.into();
    let dir = tempfile::tempdir().expect("temp dir");
    let name = "b\n<script>alert(2)<\\script>|`x`.json";
    std::fs::write(dir.path().join(name), run.to_string()).expect("write");
    std::fs::copy(saved().dir.join("run.json"), dir.path().join("a.json")).expect("copy");
    let md = offline(
        dir.path(),
        &["--compare", "a.json", name, "--compare-format=markdown"],
    );
    assert!(md.status.success(), "{}", stderr(&md));
    let md = stdout(&md);
    // Raw HTML only ever inside a code span, where Markdown shows it as
    // text.
    for line in md.lines().filter(|l| l.contains('<')) {
        assert!(line.starts_with("- ") && line.contains(": `"), "{line}");
    }
    assert!(
        md.contains("- candidate: `b\\n<script>alert(2)<\\script>\\|'x'.json` ("),
        "{md}"
    );
    assert!(
        md.contains("- server version: `18.6` → `18\\n<script>alert(1)</script>`"),
        "{md}"
    );
    assert!(md.lines().all(|l| !l.starts_with('<')), "{md}");
    let text = offline(dir.path(), &["--compare", "a.json", name]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = stdout(&text);
    assert!(
        text.contains("candidate: b\\n<script>alert(2)<\\script>|`x`.json ("),
        "{text}"
    );
    assert!(
        text.contains("  server version: 18.6 -> 18\\n<script>alert(1)</script>\n"),
        "{text}"
    );
}
