//! Every example of the documentation (`README.md`, `docs/*.md`) goes
//! through the command line as pgbolt reads it: the `pgbolt ...` lines of
//! its code blocks and `pgbolt ...` commands quoted in the text are parsed
//! and validated by [`pgbolt::cli::parse`], the binary's own first step,
//! and every long option quoted (`--client=10`) must name an option. An
//! example may still fail for what it needs around it (a script file, a
//! server), never because pgbolt does not know how it is written.
//!
//! Regression: docs/options.md showed `--clients=10` as a long option;
//! the option is `--client` and the example failed.

use std::path::{Path, PathBuf};

use pgbolt::cli::{parse, Environment};

/// The documentation files, README first.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The command lines of `text`: `pgbolt` lines of fenced code blocks
/// (joined over trailing backslashes, comments cut) and inline code
/// spans that start with `pgbolt ` and are a command, not a synopsis or
/// a line of output (no `...`, `: `, brackets, parentheses, pipes, `&` or
/// upper-case placeholders such as `N`).
fn command_lines(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let line = line.trim();
            let line = match pending.take() {
                Some(before) => format!("{before} {line}"),
                None if line.starts_with("pgbolt ") => line.to_owned(),
                None => continue,
            };
            match line.strip_suffix('\\') {
                Some(start) => pending = Some(start.to_owned()),
                None => found.push(without_comment(&line)),
            }
        } else {
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with("pgbolt ") && !synopsis(span) {
                    found.push(span.to_owned());
                }
            }
        }
    }
    found
}

fn synopsis(span: &str) -> bool {
    span.contains(['[', '(', '|', '&'])
        || span.contains("...")
        || span.contains("X.Y.Z")
        || span.contains(": ")
        || {
            words(span)
                .iter()
                .any(|w| w.chars().all(|c| c.is_ascii_uppercase()))
        }
}

/// `line` up to a `#` that starts a shell comment.
fn without_comment(line: &str) -> String {
    match line.find(" #") {
        Some(at) => line[..at].trim_end().to_owned(),
        None => line.to_owned(),
    }
}

/// Splits a command line as a shell would, for the quoting the docs use
/// (single and double quotes, no expansions).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Errors that say the command line itself is wrong.
const MISWRITTEN: &[&str] = &[
    "unrecognized option",
    "is ambiguous",
    "requires an argument",
    "doesn't allow an argument",
    "invalid value",
    "invalid option",
    "must be in range",
    "cannot be used",
    "is not supported yet",
    "too many command-line arguments",
];

fn miswritten(args: &[String]) -> Option<String> {
    let env = Environment::default();
    let error = parse(args.iter().map(String::as_str), &env).err()?;
    let text = error.to_string();
    MISWRITTEN
        .iter()
        .any(|phrase| text.contains(phrase))
        .then_some(text)
}

#[test]
fn every_command_line_in_the_docs_is_well_formed() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("read page");
        for line in command_lines(&text) {
            let args = words(&line);
            checked += 1;
            if let Some(error) = miswritten(&args[1..]) {
                failures.push(format!("{}: {line}\n  {error}", page.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Long options quoted that are not pgbolt's: an ambiguous abbreviation
/// shown as such, pgbench 15's word for `--client`, `initdb`'s.
const NOT_OPTIONS: &[&str] = &["--d", "--clients", "--no-locale"];

#[test]
fn every_long_option_quoted_in_the_docs_exists() {
    let mut failures = Vec::new();
    // performance.md documents the options of bench/compare.
    for page in pages()
        .into_iter()
        .filter(|p| !p.ends_with("performance.md"))
    {
        let text = std::fs::read_to_string(&page).expect("read page");
        for (i, span) in text.split('`').enumerate() {
            let Some(option) = span.strip_prefix("--").filter(|_| i % 2 == 1) else {
                continue;
            };
            let name: String = option
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            if name.is_empty() || name.ends_with('-') || NOT_OPTIONS.contains(&span) {
                continue;
            }
            let error = miswritten(&[format!("--{name}")]);
            if let Some(error) =
                error.filter(|e| e.contains("unrecognized") || e.contains("ambiguous"))
            {
                failures.push(format!("{}: `{span}`: {error}", page.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_clients_example_is_gone() {
    let args = words("pgbolt --clients=10 mydb");
    assert!(miswritten(&args[1..]).is_some_and(|e| e.contains("unrecognized option")));
    let args = words("pgbolt --client=10 mydb");
    assert_eq!(miswritten(&args[1..]), None);
}
