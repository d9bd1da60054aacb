//! Backslash (meta) commands.
//!
//! A meta command runs from its backslash to the end of the line; a
//! backslash right before a newline (or before `\r\n`) continues it on the
//! next line. Its words are separated by spaces, tabs, `\r`, `\f` and
//! `\v`. `\set`, `\if` and `\elif` take an expression, lexed from the end
//! of their last word to the end of the command. Error columns are byte offsets from the
//! backslash, as pgbench counts them, even when the command spans lines.

use crate::expr;

use super::error::{ScriptError, SyntaxError, SyntaxErrorKind};
use super::sql::valid_variable_name;
use super::{CommandKind, ShellWord, SleepTime, Target, TimeUnit};
use crate::expr::vars::VarNames;

/// pgbench's limit on the words of a meta command, the command included.
const MAX_WORDS: usize = 256;

/// A parsed meta command.
pub(crate) enum Meta {
    Command {
        kind: PendingKind,
        first_line: String,
        words: String,
    },
    /// `\gset` or `\aset`, to be merged into the preceding SQL command.
    Gset { aset: bool, prefix: String },
}

/// A command whose `\if` jumps are not resolved yet.
pub(crate) enum PendingKind {
    Ready(CommandKind),
    If(expr::Expr),
    Elif(expr::Expr),
    Else,
    Endif,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Name {
    Set,
    SetShell,
    Shell,
    Sleep,
    If,
    Elif,
    Else,
    Endif,
    Gset,
    Aset,
    StartPipeline,
    SyncPipeline,
    EndPipeline,
}

fn meta_name(word: &str) -> Option<Name> {
    const NAMES: [(&str, Name); 13] = [
        ("set", Name::Set),
        ("setshell", Name::SetShell),
        ("shell", Name::Shell),
        ("sleep", Name::Sleep),
        ("if", Name::If),
        ("elif", Name::Elif),
        ("else", Name::Else),
        ("endif", Name::Endif),
        ("gset", Name::Gset),
        ("aset", Name::Aset),
        ("startpipeline", Name::StartPipeline),
        ("syncpipeline", Name::SyncPipeline),
        ("endpipeline", Name::EndPipeline),
    ];
    NAMES
        .iter()
        .find(|(name, _)| word.eq_ignore_ascii_case(name))
        .map(|&(_, kind)| kind)
}

/// The byte offset of the newline ending the meta command whose backslash
/// is at `start`, or the end of the script.
fn command_end(src: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < src.len() {
        if src[i] == b'\n' && !continued(src, start, i) {
            return i;
        }
        i += 1;
    }
    src.len()
}

/// Whether the newline at `newline` is part of a continuation: a backslash
/// (not the command's own) right before it or before its `\r`.
fn continued(src: &[u8], start: usize, newline: usize) -> bool {
    let backslash = match newline.checked_sub(1) {
        Some(cr) if src[cr] == b'\r' => cr.checked_sub(1),
        before => before,
    };
    backslash.is_some_and(|b| b > start && src[b] == b'\\')
}

/// One meta command being parsed.
struct Line<'a> {
    source: &'a str,
    src: &'a str,
    /// Offset of the backslash.
    start: usize,
    /// Offset of the terminating newline (or the end of the script).
    end: usize,
    lineno: usize,
    /// Where the next word is looked for.
    pos: usize,
}

fn is_word_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

impl<'a> Line<'a> {
    fn byte(&self, i: usize) -> u8 {
        self.src.as_bytes().get(i).copied().unwrap_or(0)
    }

    /// The length of the line continuation (`\` newline or `\` `\r`
    /// newline) at `i`, or 0 when there is none.
    fn continuation_at(&self, i: usize) -> usize {
        let newline = match self.byte(i + 1) {
            b'\r' => i + 2,
            _ => i + 1,
        };
        match self.byte(i) == b'\\' && self.byte(newline) == b'\n' && newline < self.end {
            true => newline + 1 - i,
            false => 0,
        }
    }

    /// The next word and its offset, or `None` at the end of the command.
    fn word(&mut self) -> Option<(usize, &'a str)> {
        while self.pos < self.end {
            if is_word_space(self.byte(self.pos)) {
                self.pos += 1;
            } else if self.continuation_at(self.pos) > 0 {
                self.pos += self.continuation_at(self.pos);
            } else {
                break;
            }
        }
        if self.pos >= self.end {
            return None;
        }
        let start = self.pos;
        while self.pos < self.end {
            let b = self.byte(self.pos);
            if is_word_space(b) || b == b'\n' || self.continuation_at(self.pos) > 0 {
                break;
            }
            self.pos += 1;
        }
        Some((start, &self.src[start..self.pos]))
    }

    /// The command's text from the backslash, without trailing newlines.
    fn text(&self) -> String {
        self.src[self.start..self.end]
            .trim_end_matches(['\r', '\n'])
            .to_owned()
    }

    fn error(&self, kind: SyntaxErrorKind, command: &str, shown: Shown) -> ScriptError {
        let (text, column) = match shown {
            Shown::Nothing => (None, None),
            Shown::Line => (Some(self.text()), None),
            Shown::Caret(offset) => (Some(self.text()), Some(offset - self.start)),
        };
        SyntaxError {
            source: self.source.to_owned(),
            line: self.lineno,
            kind,
            command: Some(command.to_owned()),
            text,
            column,
        }
        .into()
    }
}

/// What a syntax error shows under its message.
enum Shown {
    Nothing,
    Line,
    /// The line and a caret under this script offset.
    Caret(usize),
}

/// Parse the meta command whose backslash is at `start` (on line `lineno`
/// of the script `source`). Returns the command, if the backslash was
/// followed by one, and the offset where SQL scanning resumes.
pub(crate) fn parse_meta(
    source: &str,
    src: &str,
    start: usize,
    lineno: usize,
    vars: &mut VarNames,
) -> Result<(Option<Meta>, usize), ScriptError> {
    let end = command_end(src.as_bytes(), start);
    let resume = (end + 1).min(src.len());
    let mut line = Line {
        source,
        src,
        start,
        end,
        lineno,
        pos: start + 1,
    };
    let Some((_, command)) = line.word() else {
        return Ok((None, resume));
    };
    let meta = match meta_name(command) {
        Some(name @ (Name::Set | Name::If | Name::Elif)) => {
            expression_command(&mut line, name, command, vars)?
        }
        name => word_command(&mut line, name, command, vars)?,
    };
    Ok((Some(meta), resume))
}

fn target(name: &str, vars: &mut VarNames) -> Target {
    Target {
        slot: vars.slot(name),
        valid_name: valid_variable_name(name),
    }
}

/// `\set`, `\if` and `\elif`.
fn expression_command(
    line: &mut Line<'_>,
    name: Name,
    command: &str,
    vars: &mut VarNames,
) -> Result<Meta, ScriptError> {
    let var = if name == Name::Set {
        match line.word() {
            Some((_, var)) => Some(var),
            None => {
                return Err(line.error(SyntaxErrorKind::MissingArgument, command, Shown::Nothing))
            }
        }
    } else {
        None
    };
    let text = &line.src[line.pos..line.end];
    let expr = match expr::parse(text, vars) {
        Ok(expr) => expr,
        Err(e) => {
            let mut column = line.pos + e.column;
            // Without a final newline pgbench's caret for an error at the
            // end of the expression lands on the last byte.
            if line.end == line.src.len() && e.column == text.len() {
                column = column.saturating_sub(1);
            }
            return Err(line.error(
                SyntaxErrorKind::Expression(e),
                command,
                Shown::Caret(column),
            ));
        }
    };
    let words = match var {
        Some(var) => format!("\\{command} {var}"),
        None => format!("\\{command}"),
    };
    let kind = match (name, var) {
        (Name::Set, Some(var)) => PendingKind::Ready(CommandKind::Set {
            target: target(var, vars),
            expr,
        }),
        (Name::If, _) => PendingKind::If(expr),
        _ => PendingKind::Elif(expr),
    };
    Ok(Meta::Command {
        kind,
        first_line: line.text(),
        words,
    })
}

/// Every meta command but `\set`, `\if` and `\elif`: a list of words.
fn word_command(
    line: &mut Line<'_>,
    name: Option<Name>,
    command: &str,
    vars: &mut VarNames,
) -> Result<Meta, ScriptError> {
    let mut words: Vec<(usize, &str)> = vec![(line.start + 1, command)];
    while let Some(word) = line.word() {
        if words.len() >= MAX_WORDS {
            return Err(line.error(SyntaxErrorKind::TooManyArguments, command, Shown::Nothing));
        }
        words.push(word);
    }
    let count = words.len();
    let check = |ok: bool, kind: SyntaxErrorKind| match ok {
        true => Ok(()),
        false => Err(line.error(kind, command, Shown::Line)),
    };
    let kind = match name {
        Some(Name::Sleep) => sleep(line, command, &words, vars)?,
        Some(Name::SetShell) => {
            check(count >= 3, SyntaxErrorKind::MissingArgument)?;
            CommandKind::SetShell {
                target: target(words[1].1, vars),
                command: shell_words(&words[2..], vars),
            }
        }
        Some(Name::Shell) => {
            check(count >= 2, SyntaxErrorKind::MissingCommand)?;
            CommandKind::Shell {
                command: shell_words(&words[1..], vars),
            }
        }
        Some(Name::Gset | Name::Aset) => {
            check(count <= 2, SyntaxErrorKind::TooManyArguments)?;
            return Ok(Meta::Gset {
                aset: name == Some(Name::Aset),
                prefix: words.get(1).map_or("", |w| w.1).to_owned(),
            });
        }
        Some(
            simple @ (Name::Else
            | Name::Endif
            | Name::StartPipeline
            | Name::SyncPipeline
            | Name::EndPipeline),
        ) => {
            check(count == 1, SyntaxErrorKind::UnexpectedArgument)?;
            let kind = match simple {
                Name::Else => PendingKind::Else,
                Name::Endif => PendingKind::Endif,
                Name::StartPipeline => PendingKind::Ready(CommandKind::StartPipeline),
                Name::SyncPipeline => PendingKind::Ready(CommandKind::SyncPipeline),
                _ => PendingKind::Ready(CommandKind::EndPipeline),
            };
            return Ok(Meta::Command {
                kind,
                first_line: line.text(),
                words: joined(&words),
            });
        }
        _ => return Err(line.error(SyntaxErrorKind::InvalidCommand, command, Shown::Line)),
    };
    Ok(Meta::Command {
        kind: PendingKind::Ready(kind),
        first_line: line.text(),
        words: joined(&words),
    })
}

/// A word command as pgbench's `--debug` shows it: its words after a
/// backslash, one space apart.
fn joined(words: &[(usize, &str)]) -> String {
    let mut text = String::from("\\");
    for (i, (_, word)) in words.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(word);
    }
    text
}

fn shell_words(words: &[(usize, &str)], vars: &mut VarNames) -> Vec<ShellWord> {
    words
        .iter()
        .map(|&(_, word)| match word.strip_prefix(':') {
            Some(rest) if rest.starts_with(':') => ShellWord::Literal(rest.to_owned()),
            Some(name) => ShellWord::Var(vars.slot(name)),
            None => ShellWord::Literal(word.to_owned()),
        })
        .collect()
}

/// `\sleep n [us|ms|s]`, where `n` may carry its unit (`10ms`).
fn sleep(
    line: &Line<'_>,
    command: &str,
    words: &[(usize, &str)],
    vars: &mut VarNames,
) -> Result<CommandKind, ScriptError> {
    if words.len() < 2 {
        return Err(line.error(SyntaxErrorKind::MissingArgument, command, Shown::Line));
    }
    if words.len() > 3 {
        let at = words[3].0;
        return Err(line.error(SyntaxErrorKind::TooManyArguments, command, Shown::Caret(at)));
    }
    let (time_at, time) = words[1];
    let mut unit = words.get(2).copied();
    let duration = match time.strip_prefix(':') {
        Some(name) => SleepTime::Var(vars.slot(name)),
        None => {
            let digits_start = usize::from(time.starts_with(['+', '-']));
            let digits_len = time[digits_start..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let rest = digits_start + digits_len;
            if rest < time.len() {
                if words.len() == 2 && digits_len > 0 {
                    unit = Some((time_at + rest, &time[rest..]));
                } else {
                    let kind = SyntaxErrorKind::InvalidSleepTime {
                        time: time.to_owned(),
                    };
                    return Err(line.error(kind, command, Shown::Caret(time_at)));
                }
            }
            SleepTime::Constant(crate::cnum::atoi(&time[..rest]))
        }
    };
    let unit = match unit {
        None => TimeUnit::Seconds,
        Some((_, u)) if u.eq_ignore_ascii_case("us") => TimeUnit::Microseconds,
        Some((_, u)) if u.eq_ignore_ascii_case("ms") => TimeUnit::Milliseconds,
        Some((_, u)) if u.eq_ignore_ascii_case("s") => TimeUnit::Seconds,
        Some((at, u)) => {
            let kind = SyntaxErrorKind::UnknownTimeUnit { unit: u.to_owned() };
            return Err(line.error(kind, command, Shown::Caret(at)));
        }
    };
    Ok(CommandKind::Sleep { duration, unit })
}
