//! `--help` and `--version` texts, generated from the option table.

use super::options::{Action, HelpLine, OptionDef, Section, OPTIONS};

/// Width of the column that holds the option names.
const NAME_COLUMN: usize = 27;

/// The line printed by `--version` (see [`super::program`]).
pub fn version() -> String {
    crate::program::version_line(crate::program::PROGRAM.as_str())
}

/// The text printed by `--help`.
pub fn usage() -> String {
    let name = crate::program::PROGRAM.as_str();
    let mut out = format!(
        "{name} is a benchmarking tool for PostgreSQL, compatible with pgbench.\n\n\
         Usage:\n  {name} [OPTION]... [DBNAME]\n",
    );
    for section in Section::ALL {
        out.push('\n');
        out.push_str(section.title());
        out.push('\n');
        let mut entries: Vec<(&OptionDef, &HelpLine)> = OPTIONS
            .iter()
            .flat_map(|def| def.help.iter().map(move |line| (def, line)))
            .filter(|(_, line)| line.section == section)
            .collect();
        entries.sort_by_key(|(_, line)| line.rank);
        for (def, line) in entries {
            push_entry(&mut out, def, line.text);
        }
    }
    out.push('\n');
    out.push_str(crate::program::BUG_REPORTS);
    out.push('\n');
    out.push_str(crate::program::HOME_PAGE);
    out.push('\n');
    out
}

fn names(def: &OptionDef) -> String {
    let mut names = String::from("  ");
    if let Some(short) = def.short {
        names.push('-');
        names.push(short);
        names.push_str(", ");
    }
    names.push_str("--");
    names.push_str(def.long);
    if !def.value_name.is_empty() {
        if matches!(def.action, Action::OptionalValue(_)) {
            names.push_str("[=");
            names.push_str(def.value_name);
            names.push(']');
        } else {
            names.push('=');
            names.push_str(def.value_name);
        }
    }
    names
}

fn push_entry(out: &mut String, def: &OptionDef, text: &str) {
    let names = names(def);
    let mut lines = text.lines();
    if names.len() < NAME_COLUMN {
        out.push_str(&format!("{names:<NAME_COLUMN$}"));
    } else {
        out.push_str(&names);
        out.push('\n');
        out.push_str(&" ".repeat(NAME_COLUMN));
    }
    out.push_str(lines.next().unwrap_or_default());
    out.push('\n');
    for more in lines {
        out.push_str(&" ".repeat(NAME_COLUMN));
        out.push_str(more.trim_start());
        out.push('\n');
    }
}
