//! Transaction scripts: files and builtins, parsed into commands.
//!
//! A script is parsed once, before any connection opens, into a list of
//! [`Command`]s that the engine runs without looking anything up:
//!
//! - every variable (`:name` in SQL, in expressions, in shell arguments and
//!   the targets of `\set`/`\setshell`) is a slot of the [`VarNames`](crate::expr::vars::VarNames) table
//!   shared by all scripts of a run;
//! - an SQL command carries both of its run-time forms: literal pieces and
//!   variable slots for the simple protocol (pgbench substitutes the text of
//!   a variable in place, and leaves `:name` as written when the variable is
//!   not set), and the text with `$1..$n` plus one slot per parameter for
//!   the extended and prepared protocols;
//! - `\if`/`\elif`/`\else`/`\endif` carry the command indices they jump to.
//!
//! Splitting follows pgbench exactly, because pgbench uses psql's SQL lexer
//! (see the `lexer` module); errors are reported where and how pgbench reports them
//! (see [`ScriptError`]). Like pgbench, `:name` is recognised anywhere in an
//! SQL command's text, quotes included, and the extended form replaces it
//! there too.

mod builtin;
mod define;
mod error;
mod lexer;
mod meta;
mod parse;
mod sql;

#[cfg(test)]
mod tests;

pub use builtin::{
    find_builtin, list_builtins, load_builtin, load_file, show_builtin, Builtin, BUILTINS,
    MAX_SCRIPTS,
};
pub use define::AUTOMATIC_VARIABLES;
pub use error::{ConditionErrorKind, ScriptError, SyntaxError, SyntaxErrorKind};
pub use parse::parse_script;
pub use sql::{valid_variable_name, SqlPiece, MAX_PARAMETERS};

use crate::expr::Expr;

/// How SQL commands are sent (`-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryMode {
    #[default]
    Simple,
    Extended,
    Prepared,
}

impl QueryMode {
    /// The name used by `-M` and in the report.
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// One parsed script with its selection weight.
#[derive(Debug, Clone)]
pub struct Script {
    /// The file name, `-` for standard input, or a builtin's description
    /// such as `<builtin: TPC-B (sort of)>`.
    pub name: String,
    /// The weight given with `@W` (1 by default).
    pub weight: u32,
    pub commands: Vec<Command>,
    /// SHA-256 of the script's text (hex): results record it so that a
    /// comparison can tell whether two runs ran the same script.
    pub sha256: String,
}

impl Script {
    /// Check what depends on the query mode: with the extended and prepared
    /// protocols an SQL command takes at most [`MAX_PARAMETERS`] variables.
    pub fn check_query_mode(&self, mode: QueryMode) -> Result<(), ScriptError> {
        if mode == QueryMode::Simple {
            return Ok(());
        }
        for command in &self.commands {
            if let CommandKind::Sql(sql) = &command.kind {
                if sql.params.len() > MAX_PARAMETERS {
                    return Err(ScriptError::TooManyParameters {
                        sql: sql.text.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// One command of a script.
#[derive(Debug, Clone)]
pub struct Command {
    /// The command's first line as written (an SQL command) or its whole
    /// text from the backslash (a meta command), as pgbench shows it in
    /// per-command reports.
    pub first_line: String,
    /// A meta command as pgbench's `--debug` shows it when it runs: the
    /// backslash and its words one space apart, for `\set` only the
    /// variable, for `\if` and `\elif` only the name (empty for SQL).
    pub words: String,
    pub kind: CommandKind,
}

/// What a command does, with its arguments resolved.
#[derive(Debug, Clone)]
pub enum CommandKind {
    Sql(SqlCommand),
    /// `\set var expression`.
    Set {
        target: Target,
        expr: Expr,
    },
    /// `\setshell var command [args...]`: run a command and store its
    /// output, an integer, in `target`.
    SetShell {
        target: Target,
        command: Vec<ShellWord>,
    },
    /// `\shell command [args...]`.
    Shell {
        command: Vec<ShellWord>,
    },
    /// `\sleep n [us|ms|s]`.
    Sleep {
        duration: SleepTime,
        unit: TimeUnit,
    },
    /// `\if condition`: when false, continue at `false_target`, and if that
    /// command is an [`CommandKind::Elif`], evaluate its condition.
    If {
        condition: Expr,
        false_target: usize,
    },
    /// `\elif condition`. Reached by running off the end of the previous
    /// branch, it continues at `end`; reached as a `false_target`, its
    /// condition is evaluated like an `\if`'s.
    Elif {
        condition: Expr,
        false_target: usize,
        end: usize,
    },
    /// `\else`, reached by running off the end of the previous branch:
    /// continue at `end`.
    Else {
        end: usize,
    },
    /// `\endif`: nothing to do.
    Endif,
    StartPipeline,
    SyncPipeline,
    EndPipeline,
}

/// A variable a command assigns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub slot: usize,
    /// pgbench checks the name only when the variable is first assigned, at
    /// run time (`set: invalid variable name: "1x"`); the engine reports
    /// that error when this is false.
    pub valid_name: bool,
}

/// A word of a `\shell` or `\setshell` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellWord {
    /// Passed as is (`::word` is passed as `:word`).
    Literal(String),
    /// `:name`: the variable's value; undefined is a run-time error.
    Var(usize),
}

/// The duration of a `\sleep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepTime {
    /// A number written in the script (pgbench reads it with `atoi`).
    Constant(i32),
    /// `:name`: the variable's integer value at run time.
    Var(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Microseconds,
    Milliseconds,
    Seconds,
}

impl TimeUnit {
    /// The number of microseconds in one unit.
    fn micros(self) -> i32 {
        match self {
            TimeUnit::Microseconds => 1,
            TimeUnit::Milliseconds => 1_000,
            TimeUnit::Seconds => 1_000_000,
        }
    }

    /// pgbench's length of `\sleep amount unit`, in µs. pgbench multiplies
    /// in a C `int` (PostgreSQL builds with `-fwrapv`), so a product past
    /// 2^31 - 1 µs (about 35 minutes) wraps: `\sleep 2148 s` does not
    /// sleep, `\sleep 4295 s` sleeps 32.7 ms.
    pub fn sleep_micros(self, amount: i32) -> i64 {
        i64::from(amount.wrapping_mul(self.micros()))
    }
}

/// An SQL command, possibly several queries joined with `\;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlCommand {
    /// The text as collected from the script, variables not substituted.
    pub text: String,
    /// The simple-protocol form: literal text and variables in order.
    pub pieces: Vec<SqlPiece>,
    /// The extended-protocol form: `text` with each `:name` replaced by
    /// `$1`, `$2`, ... in order of appearance.
    pub extended_text: String,
    /// One slot per `$n`, in order (a variable used twice appears twice).
    pub params: Vec<usize>,
    /// Whether `\gset` or `\aset` stores the results.
    pub results: ResultVars,
}

/// Where the results of an SQL command go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultVars {
    /// Results are discarded.
    Discard,
    /// `\gset [prefix]`: the single row of the last query, one variable per
    /// column named `prefix` + column name.
    Gset { prefix: String },
    /// `\aset [prefix]`: like `\gset` for every query of a `\;` compound
    /// that returns rows (the last row of each wins).
    Aset { prefix: String },
}
