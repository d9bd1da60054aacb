//! Script errors, displayed exactly as pgbench prints them.
//!
//! `Display` gives the whole text pgbench writes to standard error, with
//! `pgbolt` for the program name and without the final newline: the
//! `pgbolt: error: ` line, then for syntax errors the offending command and
//! a caret under the column at fault, and for unknown builtins the list of
//! builtins. All of these errors stop pgbolt before it connects (exit 1).

use std::fmt;
use std::io;

use crate::expr::ExprError;
use crate::oserror::os_message;

use super::builtin::list_builtins;

/// A problem with a script or a script option.
#[derive(Debug)]
pub enum ScriptError {
    Syntax(Box<SyntaxError>),
    /// `\if` blocks that do not nest.
    Condition {
        script: String,
        /// 1-based index of the command at fault (the end of the script
        /// for an unterminated `\if`).
        command: usize,
        kind: ConditionErrorKind,
    },
    /// More than [`super::MAX_PARAMETERS`] variables in one SQL command
    /// under the extended or prepared protocol.
    TooManyParameters {
        sql: String,
    },
    /// A script with no command.
    Empty {
        script: String,
    },
    Open {
        path: String,
        source: io::Error,
    },
    Read {
        path: String,
        source: io::Error,
    },
    /// A script file that is not UTF-8 (pgbench would take any bytes).
    NotUtf8 {
        path: String,
    },
    UnknownBuiltin {
        name: String,
    },
    /// More than [`super::MAX_SCRIPTS`] scripts.
    TooManyScripts,
    /// Every script has weight 0.
    ZeroTotalWeight,
    AmbiguousBuiltin {
        name: String,
        matches: usize,
    },
}

/// A syntax error in a backslash command, located as pgbench locates it.
#[derive(Debug)]
pub struct SyntaxError {
    /// The script's name (file name or builtin description).
    pub source: String,
    /// 1-based line of the backslash.
    pub line: usize,
    pub kind: SyntaxErrorKind,
    /// The meta command's name as written, when pgbench names it.
    pub command: Option<String>,
    /// The command's text from the backslash, when pgbench shows it.
    pub text: Option<String>,
    /// 0-based byte column of the caret, relative to `text`.
    pub column: Option<usize>,
}

#[derive(Debug)]
pub enum SyntaxErrorKind {
    MissingArgument,
    MissingCommand,
    TooManyArguments,
    UnexpectedArgument,
    InvalidCommand,
    InvalidSleepTime {
        time: String,
    },
    UnknownTimeUnit {
        unit: String,
    },
    /// `\gset` or `\aset` not right after an SQL command; pgbench names
    /// the meta command before it, if any.
    GsetWithoutSql {
        previous: Option<String>,
    },
    Expression(ExprError),
}

impl SyntaxErrorKind {
    fn message(&self) -> &'static str {
        match self {
            SyntaxErrorKind::MissingArgument => "missing argument",
            SyntaxErrorKind::MissingCommand => "missing command",
            SyntaxErrorKind::TooManyArguments => "too many arguments",
            SyntaxErrorKind::UnexpectedArgument => "unexpected argument",
            SyntaxErrorKind::InvalidCommand => "invalid command",
            SyntaxErrorKind::InvalidSleepTime { .. } => "invalid sleep time, must be an integer",
            SyntaxErrorKind::UnknownTimeUnit { .. } => {
                "unrecognized time unit, must be us, ms or s"
            }
            SyntaxErrorKind::GsetWithoutSql { .. } => "\\gset must follow an SQL command",
            SyntaxErrorKind::Expression(e) => e.message(),
        }
    }

    fn detail(&self) -> Option<&str> {
        match self {
            SyntaxErrorKind::InvalidSleepTime { time } => Some(time),
            SyntaxErrorKind::UnknownTimeUnit { unit } => Some(unit),
            SyntaxErrorKind::Expression(e) => e.detail.as_deref(),
            SyntaxErrorKind::GsetWithoutSql { previous } => previous.as_deref(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionErrorKind {
    ElifWithoutIf,
    ElifAfterElse,
    ElseWithoutIf,
    ElseAfterElse,
    EndifWithoutIf,
    IfWithoutEndif,
}

impl ConditionErrorKind {
    fn message(self) -> &'static str {
        match self {
            ConditionErrorKind::ElifWithoutIf => "\\elif without matching \\if",
            ConditionErrorKind::ElifAfterElse => "\\elif after \\else",
            ConditionErrorKind::ElseWithoutIf => "\\else without matching \\if",
            ConditionErrorKind::ElseAfterElse => "\\else after \\else",
            ConditionErrorKind::EndifWithoutIf => "\\endif without matching \\if",
            ConditionErrorKind::IfWithoutEndif => "\\if without matching \\endif",
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.kind.message())?;
        if let Some(detail) = self.kind.detail() {
            write!(f, " ({detail})")?;
        }
        if let (Some(column), None) = (self.column, &self.text) {
            write!(f, " at column {}", column + 1)?;
        }
        if let Some(command) = &self.command {
            write!(f, " in command \"{command}\"")?;
        }
        if let Some(text) = &self.text {
            write!(f, "\n{text}")?;
            if let Some(column) = self.column {
                // Padded by hand: a format width above 65,535 panics, and a
                // script line may be longer than that.
                f.write_str("\n")?;
                for _ in 0..column {
                    f.write_str(" ")?;
                }
                f.write_str("^ error found here")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Syntax(e) => e.fmt(f),
            ScriptError::Condition {
                script,
                command,
                kind,
            } => write!(
                f,
                "condition error in script \"{script}\" command {command}: {}",
                kind.message()
            ),
            ScriptError::TooManyParameters { sql } => write!(
                f,
                "statement has too many arguments (maximum is {}): {sql}",
                super::MAX_PARAMETERS
            ),
            ScriptError::Empty { script } => {
                write!(f, "empty command list for script \"{script}\"")
            }
            ScriptError::Open { path, source } => {
                write!(f, "could not open file \"{path}\": {}", os_message(source))
            }
            ScriptError::Read { path, source } => {
                write!(f, "could not read file \"{path}\": {}", os_message(source))
            }
            ScriptError::NotUtf8 { path } => {
                write!(f, "could not read file \"{path}\": not valid UTF-8")
            }
            ScriptError::UnknownBuiltin { name } => write!(
                f,
                "no builtin script found for name \"{name}\"\n{}",
                without_last_newline(&list_builtins())
            ),
            ScriptError::TooManyScripts => {
                write!(f, "at most {} SQL scripts are allowed", super::MAX_SCRIPTS)
            }
            ScriptError::ZeroTotalWeight => {
                write!(f, "total script weight must not be zero")
            }
            ScriptError::AmbiguousBuiltin { name, matches } => write!(
                f,
                "ambiguous builtin name: {matches} builtin scripts found for prefix \"{name}\"\n{}",
                without_last_newline(&list_builtins())
            ),
        }
    }
}

fn without_last_newline(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

impl std::error::Error for ScriptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScriptError::Open { source, .. } | ScriptError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<SyntaxError> for ScriptError {
    fn from(e: SyntaxError) -> Self {
        ScriptError::Syntax(Box::new(e))
    }
}
