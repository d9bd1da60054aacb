//! Every kind of page in a real headless Chromium, 1280 px wide: a run, a
//! sweep over geometric values and one over linear values, targets
//! compared, a comparison and a fleet's merged results. Each page loads
//! without a network request or a console message, does not scroll
//! sideways, has no two text labels of a chart overlapping (their boxes
//! read by a small script added to a copy of the page), and shows in its
//! header the versions, command line, scripts' SHA-256, scale, time and
//! outcome of the JSON it embeds. The results come from short real runs
//! on the shared server; the pages are rendered from them.

use std::path::{Path, PathBuf};

use crate::html_support::{measure, Browsed};
use crate::report_support::*;
use serde_json::Value;

/// Runs pgbolt with `args` in `dir` and reads the JSON it wrote to
/// `json`.
fn result(dir: &Path, json: &str, args: &[&str]) -> Value {
    let mut full = args.to_vec();
    let option = format!("--json={json}");
    full.push(&option);
    let out = Run::new(shared_database(), &full).in_dir(dir).pgbolt();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    read(&dir.join(json))
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("result");
    serde_json::from_str(&text).expect("JSON")
}

/// pgbolt offline (`--render`, `--compare`, `--merge`) in `dir`.
fn offline(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pgbolt"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("pgbolt runs");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}

/// `--render` of `json` in `dir`: the page's path.
fn render(dir: &Path, json: &str) -> PathBuf {
    let page = format!("{json}.html");
    offline(
        dir,
        &[&format!("--render={json}"), &format!("--html={page}")],
    );
    dir.join(page)
}

/// The text of some HTML: tags dropped, entities read.
fn text(html: &str) -> String {
    let tags = regex::Regex::new("<[^>]*>").expect("regex");
    tags.replace_all(html, "")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The header shows what `run` (a run's result, as JSON) holds.
fn assert_header(page: &Browsed, run: &Value, what: &str) {
    let field = |name: &str| {
        page.header(name)
            .map(|h| text(&h))
            .unwrap_or_else(|| panic!("{what}: no header field {name}"))
    };
    let context = &run["context"];
    let server = context["server_version"].as_str().unwrap_or("unknown");
    assert_eq!(
        field("versions"),
        format!(
            "pgbolt {}, server {server}",
            run["tool_version"].as_str().expect("version")
        ),
        "{what}"
    );
    match context["command_line"].as_str() {
        Some(line) => assert_eq!(field("command"), line, "{what}"),
        None => assert!(page.header("command").is_none(), "{what}"),
    }
    let scripts = field("scripts");
    for s in run["options"]["scripts"].as_array().expect("scripts") {
        let name = s["name"].as_str().expect("name");
        assert!(
            scripts.contains(&format!("{name} @{}", s["weight"])),
            "{what}: {scripts}"
        );
        if let Some(hash) = s["sha256"].as_str() {
            assert!(
                scripts.contains(&format!("sha256 {hash}")),
                "{what}: {scripts}"
            );
        }
    }
    assert!(
        field("scale").starts_with(&run["options"]["scale"].to_string()),
        "{what}"
    );
    if let Some(start) = context["started_us"].as_i64() {
        let time = field("time");
        assert!(
            time.starts_with(&pgbolt::wallclock::utc(start)) || time.contains(" to "),
            "{what}: {time}"
        );
    }
    assert!(page.header("outcome").is_some(), "{what}");
}

/// Opens `page` and checks what every page must be; `run` is the result
/// its header is read from.
fn check(page: &Path, run: &Value, what: &str) -> Browsed {
    let m = measure(page);
    m.browsed.assert_clean(what);
    assert!(
        m.scroll_width <= 1280.0,
        "{what}: scrolls sideways ({} px)",
        m.scroll_width
    );
    assert!(
        m.overlaps.is_empty(),
        "{what}: labels overlap: {:?}",
        m.overlaps
    );
    assert_header(&m.browsed, run, what);
    let size = std::fs::metadata(page).expect("page").len();
    println!("{what}: {size} bytes");
    m.browsed
}

#[test]
fn a_run_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = result(dir.path(), "run.json", &["-S", "-c", "2", "-T", "2"]);
    let page = check(&render(dir.path(), "run.json"), &run, "run page");
    assert_eq!(text(&page.header("outcome").expect("outcome")), "completed");
}

#[test]
fn sweep_pages_geometric_and_linear() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ticks = regex::Regex::new(r#"<text class="tx"[^>]*>([^<]*)<"#).expect("regex");
    for (values, json, logarithmic) in [
        ("clients:1..8*2", "geometric.json", true),
        ("clients:1,2,3", "linear.json", false),
    ] {
        let sweep = result(
            dir.path(),
            json,
            &[
                "-S",
                "-t",
                "30",
                &format!("--sweep={values}"),
                "--slo=p99<50ms",
            ],
        );
        let page = check(
            &render(dir.path(), json),
            &sweep["steps"][0]["result"],
            json,
        );
        // The swept values' ticks: 1, 2, 4, 8 on a logarithmic axis; 0 to
        // 3 on a linear one.
        let first: Vec<String> = ticks
            .captures_iter(&page.dom)
            .map(|c| c[1].to_owned())
            .take(4)
            .collect();
        if logarithmic {
            assert_eq!(first, ["1", "2", "4", "8"], "{json}");
        } else {
            assert_eq!(first[0], "0", "{json}: {first:?}");
        }
        assert!(page.dom.contains("SLO p99 &lt; 50 ms"), "{json}");
        assert!(page.header("length").is_some(), "{json}");
    }
    // A sweep of 64 steps (the linear sweep's steps repeated at 1 to 64
    // clients) stays within the page budget of 600 KB.
    let mut sweep = read(&dir.path().join("linear.json"));
    let (steps, points) = (sweep["steps"].clone(), sweep["summary"]["points"].clone());
    let count = steps.as_array().expect("steps").len();
    let many = |items: &Value| -> Value {
        (0..64)
            .map(|i| {
                let mut item = items[i % count].clone();
                item["value"] = (i + 1).into();
                item
            })
            .collect()
    };
    sweep["steps"] = many(&steps);
    sweep["summary"]["points"] = many(&points);
    std::fs::write(dir.path().join("many.json"), sweep.to_string()).expect("write");
    let page = render(dir.path(), "many.json");
    let size = std::fs::metadata(&page).expect("page").len();
    println!("64-step sweep page: {size} bytes");
    assert!(size <= 600 * 1024, "{size} bytes");
    check(&page, &sweep["steps"][0]["result"], "64-step sweep");
}

#[test]
fn a_targets_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = shared_database();
    let targets = result(
        dir.path(),
        "targets.json",
        &[
            "-S",
            "-t",
            "30",
            "--sweep=clients:1,2",
            &format!("--target=one=dbname={db}"),
            &format!("--target=two=dbname={db}"),
        ],
    );
    let first = &targets["targets"][0]["sweep"]["steps"][0]["result"];
    let page = check(&render(dir.path(), "targets.json"), first, "targets page");
    assert!(
        page.dom.contains("<h2>Findings</h2><h3>one</h3>"),
        "{}",
        page.dom
    );
    let length = text(&page.header("length").expect("step lengths"));
    assert!(
        length.starts_with("one: ") && length.contains("; two: "),
        "{length}"
    );
}

#[test]
fn a_comparison_page_and_a_merged_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = result(dir.path(), "a.json", &["-S", "-c", "2", "-T", "2"]);
    result(dir.path(), "b.json", &["-S", "-c", "1", "-T", "2"]);
    offline(
        dir.path(),
        &["--compare", "a.json", "b.json", "--html=comparison.html"],
    );
    let page = check(&dir.path().join("comparison.html"), &a, "comparison page");
    assert!(page.figure("verdict").is_some());

    let start_at = pgbolt::wallclock::now_us() / 1_000_000 + 2;
    let generators: Vec<_> = (0..2)
        .map(|i| {
            let args = [
                "-S".to_owned(),
                "-c".to_owned(),
                "2".to_owned(),
                "-T".to_owned(),
                "2".to_owned(),
                format!("--generator={i}/2"),
                format!("--start-at={start_at}"),
                format!("--json=g{i}.json"),
            ];
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Run::new(shared_database(), &args)
                .in_dir(dir.path())
                .pgbolt_command()
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("generator starts")
        })
        .collect();
    for child in generators {
        let out = child.wait_with_output().expect("generator ends");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    offline(
        dir.path(),
        &[
            "--merge",
            "g0.json",
            "g1.json",
            "--json=merged.json",
            "--html=merged.html",
        ],
    );
    let merged = read(&dir.path().join("merged.json"));
    assert!(merged["context"]["server_version"].is_string(), "{merged}");
    let page = check(&dir.path().join("merged.html"), &merged, "merged page");
    assert!(!text(&page.header("versions").expect("versions")).contains("unknown"));
}
