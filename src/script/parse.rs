//! From script text to commands: the loop of pgbench's `ParseScript`.
//!
//! SQL text collected by the scanner becomes a command unless it is only
//! whitespace and `--` comments. A backslash ends the SQL collected so far,
//! so an SQL command needs no semicolon before a meta command, even on the
//! same line. `\gset` and `\aset` are not commands of their own: they mark
//! the SQL command right before them. Once the whole script is read, the
//! `\if` structure is checked and its jumps resolved.

use super::error::{ConditionErrorKind, ScriptError, SyntaxError, SyntaxErrorKind};
use super::lexer::{SqlScanner, Stop};
use super::meta::{parse_meta, Meta, PendingKind};
use super::sql::sql_command;
use super::{Command, CommandKind, ResultVars, Script};
use crate::expr::vars::VarNames;

/// A command before `\if` jumps are resolved.
struct Pending {
    kind: PendingKind,
    first_line: String,
    words: String,
}

/// Parse the text of a script named `name` (a file name or a builtin's
/// description, used in error messages). Variables get slots in `vars`,
/// shared by all scripts of a run.
pub fn parse_script(
    name: &str,
    text: &str,
    weight: u32,
    vars: &mut VarNames,
) -> Result<Script, ScriptError> {
    let mut commands: Vec<Pending> = Vec::new();
    let mut scanner = SqlScanner::new(text);
    let mut buf = Vec::new();
    let mut lines = LineCounter {
        text: text.as_bytes(),
        counted: 0,
        line: 1,
    };
    loop {
        buf.clear();
        let stop = scanner.scan(&mut buf);
        if let Some(sql) = sql_text(&buf) {
            let first_line = first_line(&sql);
            commands.push(Pending {
                kind: PendingKind::Ready(CommandKind::Sql(sql_command(sql, vars))),
                first_line,
                words: String::new(),
            });
        }
        match stop {
            Stop::Semicolon => {}
            Stop::End => break,
            Stop::Backslash(at) => {
                lines.advance_to(at);
                let lineno = lines.line;
                let (meta, resume) = parse_meta(name, text, at, lineno, vars)?;
                scanner.resume_at(resume);
                match meta {
                    None => {}
                    Some(Meta::Command {
                        kind,
                        first_line,
                        words,
                    }) => commands.push(Pending {
                        kind,
                        first_line,
                        words,
                    }),
                    Some(Meta::Gset { aset, prefix }) => {
                        attach_gset(&mut commands, aset, prefix, name, lineno)?
                    }
                }
            }
        }
    }
    if commands.is_empty() {
        return Err(ScriptError::Empty {
            script: name.to_owned(),
        });
    }
    let commands = resolve_conditionals(name, commands)?;
    Ok(Script {
        name: name.to_owned(),
        weight,
        commands,
        sha256: sha256_hex(text),
    })
}

/// The SHA-256 of a script's text in hex, so that results can tell
/// whether two runs ran the same script.
fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Line numbers of offsets met in increasing order.
struct LineCounter<'a> {
    text: &'a [u8],
    counted: usize,
    line: usize,
}

impl LineCounter<'_> {
    fn advance_to(&mut self, offset: usize) {
        let newlines = self.text[self.counted..offset]
            .iter()
            .filter(|&&b| b == b'\n');
        self.line += newlines.count();
        self.counted = offset;
    }
}

/// The collected SQL text without leading whitespace and `--` comment
/// lines, or `None` when nothing else is left.
fn sql_text(buf: &[u8]) -> Option<String> {
    let mut i = 0;
    loop {
        match buf.get(i) {
            None => return None,
            Some(b) if b.is_ascii_whitespace() || *b == 0x0b => i += 1,
            Some(b'-') if buf.get(i + 1) == Some(&b'-') => {
                i += buf[i..].iter().position(|&b| b == b'\n')? + 1;
            }
            Some(_) => break,
        }
    }
    let text = buf[i..].to_vec();
    Some(String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into()))
}

/// pgbench's short form of an SQL command: up to 127 bytes of its first
/// line.
fn first_line(sql: &str) -> String {
    let mut end = sql.find(['\n', '\r']).unwrap_or(sql.len()).min(127);
    while !sql.is_char_boundary(end) {
        end -= 1;
    }
    sql[..end].to_owned()
}

fn attach_gset(
    commands: &mut [Pending],
    aset: bool,
    prefix: String,
    source: &str,
    line: usize,
) -> Result<(), ScriptError> {
    let error = |previous: Option<&Pending>| -> ScriptError {
        SyntaxError {
            source: source.to_owned(),
            line,
            kind: SyntaxErrorKind::GsetWithoutSql {
                previous: previous
                    .filter(|p| !matches!(p.kind, PendingKind::Ready(CommandKind::Sql(_))))
                    .map(|p| p.first_line.clone()),
            },
            command: None,
            text: None,
            column: None,
        }
        .into()
    };
    let sql = match commands.last_mut() {
        Some(Pending {
            kind: PendingKind::Ready(CommandKind::Sql(sql)),
            ..
        }) if sql.results == ResultVars::Discard => sql,
        last => return Err(error(last.as_deref())),
    };
    sql.results = match aset {
        true => ResultVars::Aset { prefix },
        false => ResultVars::Gset { prefix },
    };
    Ok(())
}

/// One `\if` block being checked: the indices of its `\if`, `\elif` and
/// `\else` commands so far.
struct Block {
    branches: Vec<usize>,
    has_else: bool,
}

/// Check the nesting of `\if` blocks, as pgbench does before running a
/// script, and work out where each branch command jumps.
fn resolve_conditionals(script: &str, pending: Vec<Pending>) -> Result<Vec<Command>, ScriptError> {
    let error = |command: usize, kind| ScriptError::Condition {
        script: script.to_owned(),
        command,
        kind,
    };
    // For each branch command: (where a false condition goes, block end).
    let mut jumps = vec![(0, 0); pending.len()];
    let mut stack: Vec<Block> = Vec::new();
    for (i, command) in pending.iter().enumerate() {
        match &command.kind {
            PendingKind::If(_) => stack.push(Block {
                branches: vec![i],
                has_else: false,
            }),
            PendingKind::Elif(_) | PendingKind::Else => {
                let is_else = matches!(command.kind, PendingKind::Else);
                let Some(block) = stack.last_mut() else {
                    let kind = match is_else {
                        true => ConditionErrorKind::ElseWithoutIf,
                        false => ConditionErrorKind::ElifWithoutIf,
                    };
                    return Err(error(i + 1, kind));
                };
                if block.has_else {
                    let kind = match is_else {
                        true => ConditionErrorKind::ElseAfterElse,
                        false => ConditionErrorKind::ElifAfterElse,
                    };
                    return Err(error(i + 1, kind));
                }
                block.has_else = is_else;
                block.branches.push(i);
            }
            PendingKind::Endif => {
                let Some(block) = stack.pop() else {
                    return Err(error(i + 1, ConditionErrorKind::EndifWithoutIf));
                };
                let end = i + 1;
                let mut targets = block.branches[1..].iter().map(|&b| match pending[b].kind {
                    PendingKind::Else => b + 1,
                    _ => b,
                });
                for &branch in &block.branches {
                    jumps[branch] = (targets.next().unwrap_or(end), end);
                }
            }
            PendingKind::Ready(_) => {}
        }
    }
    if !stack.is_empty() {
        return Err(error(pending.len() + 1, ConditionErrorKind::IfWithoutEndif));
    }
    Ok(pending
        .into_iter()
        .zip(jumps)
        .map(|(command, (false_target, end))| Command {
            first_line: command.first_line,
            words: command.words,
            kind: match command.kind {
                PendingKind::Ready(kind) => kind,
                PendingKind::If(condition) => CommandKind::If {
                    condition,
                    false_target,
                },
                PendingKind::Elif(condition) => CommandKind::Elif {
                    condition,
                    false_target,
                    end,
                },
                PendingKind::Else => CommandKind::Else { end },
                PendingKind::Endif => CommandKind::Endif,
            },
        })
        .collect())
}
