//! Builtin scripts, script files and `@weight` suffixes.

use std::io::Read;
use std::path::Path;

use super::error::ScriptError;
use super::parse::parse_script;
use super::Script;
use crate::expr::vars::VarNames;

/// The most scripts (`-b`, `-f`, `-N`, `-S`) one run may use.
pub const MAX_SCRIPTS: usize = 128;

/// A script compiled into pgbolt, chosen with `-b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name given to `-b` and `--show-script`.
    pub name: &'static str,
    /// The script's name in reports.
    pub description: &'static str,
    pub text: &'static str,
}

/// pgbench's builtin scripts, word for word.
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        description: "<builtin: TPC-B (sort of)>",
        text: "\\set aid random(1, 100000 * :scale)\n\
               \\set bid random(1, 1 * :scale)\n\
               \\set tid random(1, 10 * :scale)\n\
               \\set delta random(-5000, 5000)\n\
               BEGIN;\n\
               UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
               SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
               UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
               UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
               INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
               END;\n",
    },
    Builtin {
        name: "simple-update",
        description: "<builtin: simple update>",
        text: "\\set aid random(1, 100000 * :scale)\n\
               \\set bid random(1, 1 * :scale)\n\
               \\set tid random(1, 10 * :scale)\n\
               \\set delta random(-5000, 5000)\n\
               BEGIN;\n\
               UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
               SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
               INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
               END;\n",
    },
    Builtin {
        name: "select-only",
        description: "<builtin: select only>",
        text: "\\set aid random(1, 100000 * :scale)\n\
               SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    },
];

/// The builtin named `name` or by an unambiguous prefix of its name.
pub fn find_builtin(name: &str) -> Result<&'static Builtin, ScriptError> {
    let mut found = BUILTINS.iter().filter(|b| b.name.starts_with(name));
    match (found.next(), found.count()) {
        (Some(builtin), 0) => Ok(builtin),
        (None, _) => Err(ScriptError::UnknownBuiltin {
            name: name.to_owned(),
        }),
        (Some(_), more) => Err(ScriptError::AmbiguousBuiltin {
            name: name.to_owned(),
            matches: more + 1,
        }),
    }
}

/// What `-b list` writes to standard error (before exiting with 0).
pub fn list_builtins() -> String {
    let mut out = String::from("Available builtin scripts:\n");
    for b in &BUILTINS {
        out.push_str(&format!("  {:>13}: {}\n", b.name, b.description));
    }
    out.push('\n');
    out
}

/// What `--show-script=name` writes to standard error (before exiting
/// with 0).
pub fn show_builtin(name: &str) -> Result<String, ScriptError> {
    let b = find_builtin(name)?;
    Ok(format!("-- {}: {}\n{}\n", b.name, b.description, b.text))
}

/// Parse a builtin script.
pub fn load_builtin(
    builtin: &Builtin,
    weight: u32,
    vars: &mut VarNames,
) -> Result<Script, ScriptError> {
    parse_script(builtin.description, builtin.text, weight, vars)
}

/// Read and parse a script file; `-` reads standard input. As in pgbench,
/// which parses the file as a C string, a NUL byte ends the script.
pub fn load_file(file: &Path, weight: u32, vars: &mut VarNames) -> Result<Script, ScriptError> {
    // The file is opened by its own bytes (a Linux path need not be UTF-8);
    // messages and reports show it with replacement characters.
    let path = file.to_string_lossy();
    let mut bytes = Vec::new();
    let read = if file.as_os_str() == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes)
    } else {
        let mut opened = std::fs::File::open(file).map_err(|source| ScriptError::Open {
            path: path.to_string(),
            source,
        })?;
        opened.read_to_end(&mut bytes)
    };
    read.map_err(|source| ScriptError::Read {
        path: path.to_string(),
        source,
    })?;
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    let text = String::from_utf8(bytes).map_err(|_| ScriptError::NotUtf8 {
        path: path.to_string(),
    })?;
    parse_script(&path, &text, weight, vars)
}
