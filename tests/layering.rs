//! The layering of `src/`, written once in [`FLOORS`] (each module's `//!`
//! says what it is for and what it uses), held against the code: every
//! `crate::MODULE` path in a file of a top-level module (use lines and
//! inline paths, unit tests included, comments not) must name a module on
//! a lower floor, or be one of the few [`ALLOWED_UP`] imports with its
//! reason.
//!
//! A new top-level module fails this test until it is given a floor: the
//! table is where the decision is written down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, highest first: a module may use the modules of the floors
/// below its own, never one of its own floor or above.
const FLOORS: &[&[&str]] = &[
    // one function per mode, main's only callee
    &["app"],
    // the same study against several targets
    &["targets"],
    // sweeps: steps, repeats, warm-up, reset, SLO
    &["study"],
    // one benchmark run; the exact merge of generators' results
    &["engine", "fleet"],
    // every renderer and the one reader and writer of result files; the
    // live metrics endpoint
    &["report", "metrics"],
    // the monitor, the client's CPU, the pooler's console
    &["observe"],
    // statistics over two results; findings over one
    &["compare", "diagnose"],
    // argv -> Config, no side effects
    &["cli"],
    // plain result types
    &["model"],
    // plain validated settings
    &["config"],
    &["script", "init", "stats", "tempdb"],
    &["expr", "prompt", "sigstop"],
    &[
        "random",
        "program",
        "wallclock",
        "cnum",
        "decimal",
        "oserror",
    ],
];

/// Imports that go up or sideways on purpose: (from, to, why). At most
/// three may ever be listed here.
const ALLOWED_UP: &[(&str, &str, &str)] = &[];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules of `src/`: its directories and `.rs` files other
/// than `lib.rs` and `main.rs`.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(src_dir())
        .expect("src/ lists")
        .map(|entry| entry.expect("entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            if path.is_dir() {
                Some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib" && stem != "main").then(|| stem.to_owned())
            }
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("directory lists") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments (line comments, doc comments),
/// so that prose naming a module is no import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules named by `crate::NAME` paths and `use crate::{NAME, ...}`
/// groups in `code`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                names.insert(identifier(item.trim_start()));
            }
        } else {
            names.insert(identifier(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Every import between two different top-level modules: (from, to) with
/// the files that make it.
fn imports() -> BTreeMap<(String, String), Vec<String>> {
    let modules = top_level_modules();
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut found: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src_dir()).expect("under src");
        let first = rel.components().next().expect("a component");
        let first = first.as_os_str().to_string_lossy();
        let from = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        if !modules.contains(&from) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("source reads");
        for to in named_modules(&code_of(&text)) {
            if to != from && modules.contains(&to) {
                found
                    .entry((from.clone(), to))
                    .or_default()
                    .push(rel.display().to_string());
            }
        }
    }
    found
}

#[test]
fn every_top_level_module_has_a_floor() {
    let missing: Vec<String> = top_level_modules()
        .into_iter()
        .filter(|m| floor_of(m).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "modules of src/ without a floor in tests/layering.rs: {missing:?}"
    );
    let listed: Vec<&str> = FLOORS.iter().flat_map(|f| f.iter().copied()).collect();
    let modules = top_level_modules();
    let stale: Vec<&&str> = listed.iter().filter(|m| !modules.contains(**m)).collect();
    assert!(
        stale.is_empty(),
        "floors name modules that are gone: {stale:?}"
    );
}

#[test]
fn no_module_imports_one_on_its_own_floor_or_above() {
    assert!(ALLOWED_UP.len() <= 3, "at most three upward imports");
    let mut wrong = Vec::new();
    for ((from, to), files) in imports() {
        let (Some(a), Some(b)) = (floor_of(&from), floor_of(&to)) else {
            continue;
        };
        let allowed = ALLOWED_UP.iter().any(|(f, t, _)| *f == from && *t == to);
        if b <= a && !allowed {
            wrong.push(format!("{from} -> {to} (in {})", files.join(", ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_of_paths_finds_uses_groups_and_inline_paths() {
    let code = code_of(
        "use crate::config::{Benchmark, Config};\n\
         use crate::{expr, script::Script};\n\
         // crate::app in a comment\n\
         let x = crate::wallclock::now_us();\n\
         let y = pgcrate::nothing;\n",
    );
    let names: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(names, ["config", "expr", "script", "wallclock"]);
}
