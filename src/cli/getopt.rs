//! getopt_long, as glibc runs it for pgbench, on top of `lexopt`.
//!
//! lexopt splits arguments into short options (grouped or not), long
//! options with an optional `=value`, and positional values; it handles
//! `--` and lets options follow positional arguments (GNU permutation).
//! This module adds what lexopt leaves to its caller, with glibc's
//! behaviour and wording: the short-option table, abbreviated long options
//! (`--cli=4`), ambiguity errors that list the candidates in table order,
//! and "requires an argument" / "doesn't allow an argument" errors.
//! `-c=10` gives `-c` the value `=10`, as getopt does (lexopt's
//! `short_equals` is turned off).
//!
//! Not reproduced: `POSIXLY_CORRECT` (glibc then stops at the first
//! positional argument); pgbolt always permutes.

use std::ffi::OsString;

use lexopt::{Arg, Parser};

use super::error::CliError;
use super::gather::Gathered;
use super::options::{by_short, Action, OptionDef, Origin, OPTIONS};

/// Records a flag.
pub type RecordFlag = fn(&mut Gathered);
/// Checks and records an option's value.
pub type RecordValue = fn(&mut Gathered, &std::ffi::OsStr) -> Result<(), CliError>;
/// Checks and records an option whose value is optional (`--name[=value]`).
pub type RecordOptional = fn(&mut Gathered, Option<&std::ffi::OsStr>) -> Result<(), CliError>;

/// One option or argument, in command-line order.
pub enum Event {
    Flag(&'static OptionDef, RecordFlag),
    Value(&'static OptionDef, RecordValue, OsString),
    Optional(&'static OptionDef, RecordOptional, Option<OsString>),
    Positional(OsString),
}

pub struct Getopt {
    parser: Parser,
}

impl Getopt {
    /// `args` excludes the program name.
    pub fn new(args: Vec<OsString>) -> Getopt {
        let mut parser = Parser::from_args(args);
        parser.set_short_equals(false);
        Getopt { parser }
    }

    pub fn next_event(&mut self) -> Result<Option<Event>, CliError> {
        let arg = match self.parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => return Ok(None),
            // lexopt fails only when a value attached to a long option
            // (`--name=value`) was left unread; every such value is read
            // below, so this reports lexopt's own description should that
            // ever change.
            Err(err) => return Err(CliError::UnrecognizedOption(err.to_string())),
        };
        match arg {
            Arg::Value(value) => Ok(Some(Event::Positional(value))),
            Arg::Short(c) => {
                let def = by_short(c).ok_or(CliError::InvalidShortOption(c))?;
                match def.action {
                    Action::Flag(record) => Ok(Some(Event::Flag(def, record))),
                    Action::Value(record) => {
                        let value = self
                            .parser
                            .value()
                            .map_err(|_| CliError::MissingShortValue(c))?;
                        Ok(Some(Event::Value(def, record, value)))
                    }
                    Action::FirstArgument | Action::OptionalValue(_) => {
                        Err(CliError::InvalidShortOption(c))
                    }
                }
            }
            Arg::Long(name) => {
                let name = name.to_string();
                self.long(&name).map(Some)
            }
        }
    }

    fn long(&mut self, name: &str) -> Result<Event, CliError> {
        let def = match resolve_long(name) {
            Ok(def) => def,
            Err(candidates) => {
                let mut given = format!("--{name}");
                if let Some(value) = self.parser.optional_value() {
                    given.push('=');
                    given.push_str(&value.to_string_lossy());
                }
                return Err(if candidates.is_empty() {
                    CliError::UnrecognizedOption(given)
                } else {
                    CliError::AmbiguousOption { given, candidates }
                });
            }
        };
        match def.action {
            Action::Value(record) => {
                let value = self
                    .parser
                    .value()
                    .map_err(|_| CliError::MissingLongValue(def.long))?;
                Ok(Event::Value(def, record, value))
            }
            Action::Flag(record) => match self.parser.optional_value() {
                Some(_) => Err(CliError::LongTakesNoValue(def.long)),
                None => Ok(Event::Flag(def, record)),
            },
            // As getopt's `optional_argument`: only an attached `=value`.
            Action::OptionalValue(record) => {
                Ok(Event::Optional(def, record, self.parser.optional_value()))
            }
            Action::FirstArgument => Err(CliError::UnrecognizedOption(format!("--{name}"))),
        }
    }
}

/// The option a long name or abbreviation stands for, or the candidates
/// (none: unknown; several: ambiguous).
///
/// An exact name always wins. Abbreviations are matched against pgbench
/// 18's options first, then against newer pgbench options, then against
/// pgbolt's extensions, each tier only when no earlier one matched, so
/// that a valid pgbench 18 abbreviation keeps its meaning.
fn resolve_long(name: &str) -> Result<&'static OptionDef, Vec<&'static str>> {
    let known = || OPTIONS.iter().filter(|o| o.is_getopt());
    if let Some(def) = known().find(|o| o.long == name) {
        return Ok(def);
    }
    for origin in [Origin::Pgbench, Origin::PgbenchNext, Origin::Pgbolt] {
        let matches: Vec<&'static OptionDef> = known()
            .filter(|o| o.origin == origin && o.long.starts_with(name))
            .collect();
        match matches.as_slice() {
            [] => continue,
            [one] => return Ok(one),
            many => return Err(many.iter().map(|o| o.long).collect()),
        }
    }
    Err(Vec::new())
}
