//! Server errors and notices worded as libpq words them.
//!
//! pgbench prints `PQerrorMessage()` verbatim, so a failed statement shows
//! `ERROR:  primary message`, then (when the server gave a position in the
//! statement) a `LINE n: ...` excerpt with a caret under the position, then
//! `DETAIL:`, `HINT:`, `QUERY:` and, for errors, `CONTEXT:` lines. This
//! module reproduces that layout, including libpq's 60-column excerpt
//! window. Both the benchmark engine and `-i` word server errors with it.

use crate::DbError;

const DISPLAY_SIZE: usize = 60;
const MIN_RIGHT_CUT: usize = 10;

/// The text libpq would build for `err`, raised by `query`, ending in a
/// newline. `is_error` (an ErrorResponse, not a NoticeResponse) selects
/// the CONTEXT line, which libpq shows for errors only.
pub fn libpq_message(err: &DbError, query: Option<&str>, is_error: bool) -> String {
    let mut msg = format!("{}:  {}", err.severity, err.message);
    let mut cursor: Option<(&str, usize)> = None;
    if let Some(pos) = err.position {
        match query {
            Some(q) => cursor = Some((q, pos as usize)),
            None => msg.push_str(&format!(" at character {pos}")),
        }
    } else if let Some(pos) = err.internal_position {
        match &err.internal_query {
            Some(q) => cursor = Some((q.as_str(), pos as usize)),
            None => msg.push_str(&format!(" at character {pos}")),
        }
    }
    msg.push('\n');
    if let Some((q, pos)) = cursor {
        if pos > 0 {
            push_error_position(&mut msg, q, pos - 1);
        }
    }
    if let Some(detail) = &err.detail {
        msg.push_str(&format!("DETAIL:  {detail}\n"));
    }
    if let Some(hint) = &err.hint {
        msg.push_str(&format!("HINT:  {hint}\n"));
    }
    if let Some(internal) = &err.internal_query {
        msg.push_str(&format!("QUERY:  {internal}\n"));
    }
    if is_error {
        if let Some(context) = &err.where_ {
            msg.push_str(&format!("CONTEXT:  {context}\n"));
        }
    }
    msg
}

/// Appends `LINE n: <excerpt>` and a caret line for the 0-based character
/// position `loc` of `query` (every character counted one column wide).
fn push_error_position(msg: &mut String, query: &str, loc: usize) {
    let chars: Vec<char> = query
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let mut line = 1;
    let mut begin = 0;
    let mut end = None;
    for (i, &c) in chars.iter().enumerate() {
        if c == '\r' || c == '\n' {
            if i < loc {
                if c == '\r' || i == 0 || chars[i - 1] != '\r' {
                    line += 1;
                }
                begin = i + 1;
            } else {
                end = Some(i);
                break;
            }
        }
    }
    let mut end = end.unwrap_or(chars.len());
    if loc > chars.len() {
        return;
    }
    let mut begin_cut = false;
    let mut end_cut = false;
    if end - begin > DISPLAY_SIZE {
        if begin + DISPLAY_SIZE >= loc + MIN_RIGHT_CUT {
            end = begin + DISPLAY_SIZE;
            end_cut = true;
        } else {
            if loc + MIN_RIGHT_CUT < end {
                end = loc + MIN_RIGHT_CUT;
                end_cut = true;
            }
            if end - begin > DISPLAY_SIZE {
                begin = end - DISPLAY_SIZE;
                begin_cut = true;
            }
        }
    }
    let prefix = format!("LINE {line}: {}", if begin_cut { "..." } else { "" });
    let caret_column = prefix.chars().count() + loc - begin;
    msg.push_str(&prefix);
    msg.extend(&chars[begin..end]);
    if end_cut {
        msg.push_str("...");
    }
    msg.push('\n');
    msg.push_str(&" ".repeat(caret_column));
    msg.push_str("^\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(message: &str, position: Option<u32>) -> DbError {
        DbError {
            severity: "ERROR".into(),
            code: "42501".into(),
            message: message.into(),
            position,
            ..DbError::default()
        }
    }

    #[test]
    fn excerpt_and_caret_as_libpq_prints_them() {
        let query = "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))";
        let text = libpq_message(
            &error("permission denied for schema public", Some(14)),
            Some(query),
            true,
        );
        assert_eq!(
            text,
            "ERROR:  permission denied for schema public\n\
             LINE 1: create table pgbench_history(tid int,bid int,aid    int,delt...\n\
             \x20                    ^\n"
        );
    }

    #[test]
    fn long_line_cut_on_both_sides() {
        let query = format!("{}X{}", "a".repeat(100), "b".repeat(100));
        let text = libpq_message(&error("boom", Some(101)), Some(&query), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            format!("LINE 1: ...{}X{}...", "a".repeat(50), "b".repeat(9))
        );
        assert_eq!(lines[2].find('^'), Some(8 + 3 + 50));
    }

    #[test]
    fn later_lines_are_numbered() {
        let query = "create table t\n  partition of p\n  for values from (x)";
        let text = libpq_message(&error("bad", Some(52)), Some(query), true);
        let caret = format!("{}^", " ".repeat(8 + 19));
        assert_eq!(
            text,
            format!("ERROR:  bad\nLINE 3:   for values from (x)\n{caret}\n")
        );
    }

    #[test]
    fn detail_hint_and_context() {
        let mut e = error("must be owner of table pgbench_accounts", None);
        e.detail = Some("d".into());
        e.hint = Some("h".into());
        e.where_ = Some("w".into());
        assert_eq!(
            libpq_message(&e, Some("drop table x"), true),
            "ERROR:  must be owner of table pgbench_accounts\nDETAIL:  d\nHINT:  h\nCONTEXT:  w\n"
        );
        e.severity = "NOTICE".into();
        assert!(!libpq_message(&e, None, false).contains("CONTEXT"));
    }
}
