//! The HTML report (`--html`, `--render`) opened in a real headless
//! Chromium: each page loads without attempting any network request and
//! without a console message, its screenshot is not blank, and the key
//! figures in its DOM are the JSON result's. Cases: a normal run, an
//! aborted run, an interrupted run, `-R -L` with skipped transactions, several scripts with
//! `-r`, a run that commits nothing, hostile script names and SQL, and a
//! one-hour synthetic result for the size and element budgets.

use std::path::Path;
use std::process::Output;

use crate::html_support::{browse, Browsed};
use crate::report_support::*;
use pgbolt::report::render_html;
use serde_json::Value;

/// Runs pgbolt with `args` plus `--json` and `--html` in `dir`; returns
/// the output, the JSON and the page's path.
fn run(dir: &Path, args: &[&str]) -> (Output, Value, std::path::PathBuf) {
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--json=result.json", "--html=report.html"]);
    let out = Run::new(shared_database(), &full).in_dir(dir).pgbolt();
    let text = std::fs::read_to_string(dir.join("result.json"))
        .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}): {}", stderr(&out)));
    let json: Value = serde_json::from_str(&text).expect("JSON result");
    (out, json, dir.join("report.html"))
}

/// The key figures of the DOM are the JSON's, as the page prints them.
fn assert_figures(page: &Browsed, json: &Value) {
    let figure = |name: &str| {
        page.figure(name)
            .unwrap_or_else(|| panic!("no figure {name} in the page"))
    };
    assert_eq!(
        figure("tps"),
        format!("{:.1}", json["tps"].as_f64().expect("tps"))
    );
    let counts = &json["counts"];
    for name in ["committed", "failed", "retried", "skipped"] {
        assert_eq!(figure(name), counts[name].to_string(), "{name}");
    }
    let percentiles = &json["latency"]["percentiles"];
    if percentiles.is_null() {
        assert_eq!(figure("p50"), "none");
    } else {
        for name in ["p50", "p90", "p99", "p99_9", "p99_99", "max"] {
            let v = percentiles[name].as_f64().expect("percentile");
            assert_eq!(figure(name), format!("{v:.3}"), "{name}");
        }
    }
    assert_eq!(
        page.figure("aborted").is_some(),
        json["aborted"] == Value::Bool(true)
    );
}

/// The JSON embedded in the page (as the DOM holds it) is the result.
fn assert_embedded(page: &Browsed, json: &Value) {
    let embedded = pgbolt::report::html::embedded_json(&page.dom).expect("embedded JSON");
    let value: Value = serde_json::from_str(embedded).expect("embedded JSON parses");
    assert_eq!(&value, json);
}

/// Opens the page and checks everything a page of `json` must show.
fn check_page(path: &Path, json: &Value, what: &str) -> Browsed {
    let page = browse(path);
    page.assert_clean(what);
    assert_figures(&page, json);
    assert_embedded(&page, json);
    page
}

/// The page with its rendering time stamp masked.
fn masked(page: &str) -> String {
    let re = regex::Regex::new(r"at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.").expect("regex");
    re.replace(page, "at (time).").into_owned()
}

/// Pages are long: a difference is shown where it starts.
fn assert_same_page(later: &str, during: &str, source: &str) {
    if later == during {
        return;
    }
    let at = later
        .bytes()
        .zip(during.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(later.len().min(during.len()));
    let around = |s: &str| {
        s.get(at.saturating_sub(80)..(at + 80).min(s.len()))
            .unwrap_or("")
            .to_owned()
    };
    panic!(
        "--render={source} differs at byte {at}:\n  rendered: {}\n  during:   {}",
        around(later),
        around(during)
    );
}

#[test]
fn a_normal_run_and_its_rendering_later_are_the_same_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, json, path) = run(dir.path(), &["-S", "-c", "2", "-j", "2", "-T", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(json["series"]["intervals"][0]["latency_histogram"].is_string());
    let page = check_page(&path, &json, "normal run");
    assert!(page.dom.contains("Throughput over time"));
    let pdf = crate::html_support::print_to_pdf(&path);
    assert!(pdf.starts_with(b"%PDF"), "not a PDF");
    let pages = pdf.windows(10).filter(|w| w == b"/Type /Pag").count();
    assert!(
        pdf.len() > 20_000 && pages >= 2,
        "{} bytes, {pages} page objects",
        pdf.len()
    );
    let during = std::fs::read_to_string(&path).expect("page");
    for source in ["result.json", "report.html"] {
        let out = Run::new(
            "unused",
            &[&format!("--render={source}"), "--html=rendered.html"],
        )
        .in_dir(dir.path())
        .pgbolt();
        assert!(out.status.success(), "{source}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{source}");
        let later = std::fs::read_to_string(dir.path().join("rendered.html")).expect("rendered");
        assert_same_page(&masked(&later), &masked(&during), source);
    }
}

#[test]
fn an_aborted_run_has_a_report_that_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sql = "\\set x random(1, 4)\nSELECT CASE WHEN :x = 4 THEN 1/0 ELSE 1 END;\n";
    let file = script("abort.sql", sql);
    let (out, json, path) = run(dir.path(), &["-f", &file.path, "-c", "2", "-t", "100"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json["aborted"], true);
    let page = check_page(&path, &json, "aborted run");
    assert!(page.dom.contains("ended early"));
}

/// SIGINT in the middle of a run: the page is written, and says so.
#[test]
fn an_interrupted_run_has_a_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "-S",
        "-T",
        "30",
        "-c",
        "2",
        "--json=result.json",
        "--html=report.html",
    ];
    let app = "html_sigint";
    let child = Run::new(shared_database(), &args)
        .env("PGAPPNAME", app)
        .in_dir(dir.path())
        .pgbolt_command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    wait_for_second_statement(app, "SELECT abalance %");
    // SAFETY: kill() with the id of a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("pgbolt ends");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("result.json")).expect("JSON");
    let json: Value = serde_json::from_str(&text).expect("JSON result");
    assert_eq!(json["aborted"], true);
    let page = check_page(&dir.path().join("report.html"), &json, "interrupted run");
    assert!(page.dom.contains("ended early"));
}

#[test]
fn a_throttled_run_shows_its_lag_and_skipped_transactions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, json, path) = run(
        dir.path(),
        &["-S", "-c", "1", "-T", "2", "-R", "20000", "-L", "0.2"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let skipped = json["counts"]["skipped"].as_u64().expect("skipped");
    assert!(skipped > 0, "nothing skipped: {}", stdout(&out));
    let page = check_page(&path, &json, "-R -L run");
    assert!(page.dom.contains("schedule lag"));
    let late = json["counts"]["latency_late"].as_u64().expect("late");
    assert!(
        page.figure("late")
            .is_some_and(|t| t.starts_with(&format!("{late} ("))),
        "{:?}",
        page.figure("late")
    );
    assert!(page
        .figure("skipped_schedule")
        .is_some_and(|t| t.starts_with(&format!("{skipped} ("))));
}

#[test]
fn several_scripts_with_per_command_figures() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, json, path) = run(
        dir.path(),
        &[
            "-b",
            "select-only@3",
            "-b",
            "simple-update@1",
            "-r",
            "-c",
            "2",
            "-t",
            "30",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let page = check_page(&path, &json, "several scripts");
    assert_eq!(page.dom.matches("<h3>Commands of").count(), 2);
    assert!(page.dom.contains("UPDATE pgbench_accounts SET abalance"));
}

#[test]
fn a_run_that_commits_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("fail.sql"), "SELECT 1/0;\n").expect("script");
    let (out, json, path) = run(
        dir.path(),
        &[
            "-f",
            "fail.sql",
            "--continue-on-error",
            "-c",
            "2",
            "-t",
            "3",
        ],
    );
    assert_eq!(json["counts"]["committed"], 0, "{}", stderr(&out));
    let page = check_page(&path, &json, "nothing committed");
    assert!(page.dom.contains("No transaction committed."));
}

#[test]
fn hostile_names_and_sql_show_as_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The script's path is `<script>alert(1)</script>.sql`: a directory
    // `<script>alert(1)<` holding `script>.sql`.
    let sub = dir.path().join("<script>alert(1)<");
    std::fs::create_dir(&sub).expect("directory");
    let sql = "SELECT '</script><script>alert(2)</script>' AS \"<img src=x onerror=alert(3)>\";\n";
    std::fs::write(sub.join("script>.sql"), sql).expect("script");
    let name = "<script>alert(1)</script>.sql";
    let (out, json, path) = run(dir.path(), &["-f", name, "-r", "-t", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json["scripts"][0]["name"], name);
    let page = check_page(&path, &json, "hostile names");
    assert_eq!(page.dom.matches("<script").count(), 1, "{}", page.dom);
    assert!(!page.dom.contains("<img"));
    assert!(page
        .dom
        .contains("&lt;script&gt;alert(1)&lt;/script&gt;.sql"));
    assert!(page.dom.contains("&lt;img src=x onerror=alert(3)&gt;"));
}

#[test]
fn an_html_path_that_cannot_be_written_stops_before_connecting() {
    let out = Run::new(
        "no_such_database",
        &["--html=/nonexistent-dir/report.html", "-t", "1"],
    )
    .pgbolt();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("could not open HTML file \"/nonexistent-dir/report.html\""),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("no_such_database"),
        "{}",
        stderr(&out)
    );
}

/// A page that cannot be written at the end (a full disk) is an error
/// after the report, with exit status 2; the JSON is still written.
#[test]
fn a_full_disk_under_the_page_is_an_error_after_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("report.html");
    std::os::unix::fs::symlink("/dev/full", &page).expect("symlink");
    let out = Run::new(
        shared_database(),
        &[
            "-S",
            "-t",
            "20",
            "--json=result.json",
            &format!("--html={}", page.display()),
        ],
    )
    .in_dir(dir.path())
    .pgbolt();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "could not write \"{}\": No space left on device\n",
            page.display()
        )),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("number of transactions actually processed: 20/20"));
    assert!(dir.path().join("result.json").exists());
}

#[test]
fn render_refuses_what_makes_no_sense_offline() {
    for (args, wanted) in [
        (
            &["--render=r.json", "--html=x.html", "mydb"][..],
            "--render takes no database name",
        ),
        (
            &["--render=r.json", "--html=x.html", "-c", "4"][..],
            "-c/--client cannot be used with --render",
        ),
        (&["--render=r.json"][..], "--render needs --html=FILE"),
        (
            &["--render=/nonexistent.json", "--html=x.html"][..],
            "could not read result file \"/nonexistent.json\"",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pgbolt"))
            .args(args)
            .output()
            .expect("pgbolt runs");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(wanted), "{args:?}: {}", stderr(&out));
    }
}

mod synthetic {
    use pgbolt::model::run::{RunContext, RunResult, Timings};
    use pgbolt::model::run::{RunLimit, RunOptions, ScriptInfo};
    use pgbolt::report::render_html;
    use pgbolt::stats::{Outcome, StatsLayout, ThreadStats, Transaction};

    /// A one-hour run at 250 transactions per second, with a slow period,
    /// some failures and retries, recorded as the engine records it.
    pub fn one_hour() -> RunResult {
        let start = 1_795_780_800_000_000i64;
        let mut stats = ThreadStats::new(&StatsLayout {
            commands_per_script: vec![2],
            latency_limit_us: None,
            throttled: false,
            start_us: start,
            series: true,
        });
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let per_second = 250;
        for n in 0..3600 * per_second {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = start + 10_000 + n as i64 * 1_000_000 / per_second as i64;
            let slow = if (1800..2000).contains(&(n / per_second)) {
                5
            } else {
                1
            };
            let tail = 1i64 << (x % 4096).trailing_zeros().min(9);
            let latency = (600 + (x % 900) as i64) * tail * slow;
            let outcome = if x % 997 == 0 {
                Outcome::Failed(pgbolt::stats::FailureKind::Serialization)
            } else {
                Outcome::Committed
            };
            stats.record_transaction(&Transaction {
                script: 0,
                outcome,
                tries: 1 + u32::from(x % 331 == 0),
                latency_us: latency,
                lag_us: 0,
                end_us: at,
            });
        }
        let options = RunOptions {
            scripts: vec![ScriptInfo {
                name: "<builtin: TPC-B (sort of)>".into(),
                weight: 1,
                commands: vec![
                    "\\set aid random(1, 100000 * :scale)".into(),
                    "SELECT 1;".into(),
                ],
                sha256: None,
            }],
            scale: 100,
            partitioning: None,
            query_mode: "prepared".into(),
            clients: 32,
            threads: 8,
            max_tries: 3,
            limit: RunLimit::DurationSeconds(3600),
            rate: None,
            latency_limit_us: None,
            progress_s: Some(1),
            connect_per_transaction: false,
            pool_size: None,
            failures_detailed: false,
            report_per_command: true,
            continue_on_error: false,
            warmup_s: 0,
            variables: Default::default(),
        };
        let timings = Timings {
            bench_duration_us: 3_600_000_000,
            initial_connection_us: 10_000,
            total_connection_us: 0,
        };
        let mut result = RunResult::build(options, timings, false, &stats).expect("result");
        result.context = RunContext {
            command_line: Some(
                "pgbolt -c 32 -j 8 -T 3600 -P 1 -M prepared -r --html=r.html".into(),
            ),
            server_version: Some("18.1".into()),
            server_settings: Default::default(),
            started_us: Some(start),
            ended_us: Some(start + 3_600_010_000),
        };
        result
    }

    /// Thread CPU time in µs.
    fn cpu_us() -> i64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
    }

    /// Renders `result` as `--render` does (reading its JSON, then
    /// rendering), printing the CPU time it took: measured, never
    /// asserted (timings belong in bench/).
    pub fn render_measured(result: &RunResult) -> String {
        let json = pgbolt::report::to_json(result).expect("json");
        let before = cpu_us();
        let read = pgbolt::report::read_result(&json).expect("read");
        let page = render_html(&read, 0).expect("render");
        println!(
            "reading and rendering the one-hour result took {:.3} s of CPU (this build)",
            (cpu_us() - before) as f64 / 1e6
        );
        page
    }
}

/// Elements inside the page's `<svg>` elements, the `<svg>` included.
fn svg_elements(page: &str) -> usize {
    let mut count = 0;
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start;
        let svg = &rest[start..end];
        count += svg.matches('<').count() - svg.matches("</").count();
        rest = &rest[end..];
    }
    count
}

#[test]
fn a_one_hour_run_stays_within_the_budgets() {
    let result = synthetic::one_hour();
    assert!(
        result.series.intervals.len() > 400,
        "{}",
        result.series.intervals.len()
    );
    let page = synthetic::render_measured(&result);
    assert_eq!(page, render_html(&result, 0).expect("render"));
    let elements = svg_elements(&page);
    println!(
        "one-hour page: {} bytes, {} SVG elements, {} intervals of {} s",
        page.len(),
        elements,
        result.series.intervals.len(),
        result.series.width_us / 1_000_000
    );
    assert!(page.len() <= 400 * 1024, "{} bytes", page.len());
    assert!(elements <= 5000, "{elements} SVG elements");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hour.html");
    std::fs::write(&path, &page).expect("write");
    let json: Value =
        serde_json::from_str(&pgbolt::report::to_json(&result).expect("json")).expect("JSON");
    let browsed = check_page(&path, &json, "one-hour run");
    assert_eq!(svg_elements(&browsed.dom), elements);
}

/// A page that does reach for the network is caught: the checks above
/// can fail.
#[test]
fn the_browser_checks_see_requests_and_console_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("leaky.html");
    std::fs::write(
        &path,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body></html>",
    )
    .expect("write");
    let page = browse(&path);
    assert!(
        page.requests.iter().any(|r| r.contains("example.invalid")),
        "{:?}",
        page.requests
    );
    assert!(page.console.iter().any(|l| l.contains("boom")));
}
