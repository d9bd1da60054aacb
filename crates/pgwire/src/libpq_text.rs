//! Server errors and notices worded as libpq words them.
//!
//! pgbench prints `PQerrorMessage()` verbatim, so a failed statement shows
//! `ERROR:  primary message`, then (when the server gave a position in the
//! statement) a `LINE n: ...` excerpt with a caret under the position, then
//! `DETAIL:`, `HINT:`, `QUERY:` and, for errors, `CONTEXT:` lines. This
//! module reproduces that layout, including libpq's 60-column excerpt
//! window. Both the benchmark engine and `-i` word server errors with it.

mod encoding;

pub use encoding::ClientEncoding;

use crate::{DbError, Error};

const DISPLAY_SIZE: usize = 60;
const MIN_RIGHT_CUT: usize = 10;

/// `PQerrorMessage` after `query` failed with `error`, ending in a
/// newline: the server's error as [`libpq_message`] words it, followed by
/// libpq's lines about the closed connection when the server closed it
/// right after (as after a FATAL error); any other error as `Display`
/// gives it.
pub fn query_failure(error: &Error, query: Option<&str>) -> String {
    match error.db_error() {
        Some(db) => {
            let mut text = libpq_message(db, query, true);
            if let Some(end) = error.closed_after_text() {
                text.push_str(end);
                text.push('\n');
            }
            text
        }
        None => format!("{error}\n"),
    }
}

/// The text libpq would build for `err`, raised by `query`, ending in a
/// newline, in a UTF-8 session (see [`libpq_message_in`]).
pub fn libpq_message(err: &DbError, query: Option<&str>, is_error: bool) -> String {
    libpq_message_in(
        err,
        query.map(str::as_bytes),
        is_error,
        ClientEncoding::Utf8,
    )
}

/// The text libpq would build for `err`, raised by `query`, ending in a
/// newline. `is_error` (an ErrorResponse, not a NoticeResponse) selects
/// the CONTEXT line, which libpq shows for errors only; `encoding`, the
/// session's client encoding, decides where the server's character
/// position falls in `query` (bytes as sent, UTF-8 or not) and how wide
/// the excerpt's characters are.
pub fn libpq_message_in(
    err: &DbError,
    query: Option<&[u8]>,
    is_error: bool,
    encoding: ClientEncoding,
) -> String {
    let mut msg = format!("{}:  {}", err.severity, err.message);
    let mut cursor: Option<(&[u8], usize)> = None;
    if let Some(pos) = err.position {
        match query {
            Some(q) => cursor = Some((q, pos as usize)),
            None => msg.push_str(&format!(" at character {pos}")),
        }
    } else if let Some(pos) = err.internal_position {
        match &err.internal_query {
            Some(q) => cursor = Some((q.as_bytes(), pos as usize)),
            None => msg.push_str(&format!(" at character {pos}")),
        }
    }
    msg.push('\n');
    if let Some((q, pos)) = cursor {
        if pos > 0 {
            push_error_position(&mut msg, q, pos - 1, encoding);
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
/// position `loc` of `query`, as libpq's `reportErrorPosition` does: the
/// characters are those of the client encoding, the window and the caret
/// are measured in screen columns (see [`ClientEncoding`]), and tabs are
/// shown as spaces.
fn push_error_position(msg: &mut String, query: &[u8], loc: usize, encoding: ClientEncoding) {
    // offset[i], column[i]: the byte offset and the screen column where
    // character i starts; each list ends with the end of the line.
    let mut offset = Vec::new();
    let mut column = Vec::new();
    let mut line = 1;
    let mut begin = 0;
    let (mut at, mut col) = (0, 0);
    let mut previous = 0u8;
    loop {
        offset.push(at);
        column.push(col);
        let Some(&b) = query.get(at) else { break };
        let i = offset.len() - 1;
        if b == b'\r' || b == b'\n' {
            if i >= loc {
                break;
            }
            if b == b'\r' || i == 0 || previous != b'\r' {
                line += 1;
            }
            begin = i + 1;
        }
        let (len, width) = encoding.char_at(&query[at..]);
        previous = b;
        at += len;
        col += width;
    }
    let mut end = offset.len() - 1;
    if loc > end {
        return;
    }
    let mut begin_cut = false;
    let mut end_cut = false;
    if column[end] - column[begin] > DISPLAY_SIZE {
        if column[begin] + DISPLAY_SIZE >= column[loc] + MIN_RIGHT_CUT {
            while column[end] - column[begin] > DISPLAY_SIZE {
                end -= 1;
            }
            end_cut = true;
        } else {
            while column[loc] + MIN_RIGHT_CUT < column[end] {
                end -= 1;
                end_cut = true;
            }
            while column[end] - column[begin] > DISPLAY_SIZE {
                begin += 1;
                begin_cut = true;
            }
        }
    }
    let prefix = format!("LINE {line}: {}", if begin_cut { "..." } else { "" });
    let caret_column = prefix.len() + column[loc] - column[begin];
    msg.push_str(&prefix);
    let excerpt: Vec<u8> = query[offset[begin]..offset[end]]
        .iter()
        .map(|&b| if b == b'\t' { b' ' } else { b })
        .collect();
    msg.push_str(&String::from_utf8_lossy(&excerpt));
    if end_cut {
        msg.push_str("...");
    }
    msg.push('\n');
    msg.push_str(&" ".repeat(caret_column));
    msg.push_str("^\n");
}

/// Screen columns of a character in libpq's excerpt: 2 for East Asian wide
/// and fullwidth characters, 1 for everything else (libpq counts
/// zero-width and control characters as 1 there).
fn display_width(c: char) -> usize {
    let c = u32::from(c);
    let wide = WIDE
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok();
    if wide {
        2
    } else {
        1
    }
}

/// The code points of East Asian Width W or F in Unicode 14.0 (the version
/// PostgreSQL 15's tables follow), without the non-spacing marks among
/// them, as inclusive ranges in ascending order. Reserved code points that
/// `EastAsianWidth.txt` lists as W count too (U+FA6E..U+FA6F, U+FADA..U+FAFF), as
/// they do in PostgreSQL's table.
const WIDE: [(u32, u32); 122] = [
    (0x1100, 0x115f),
    (0x231a, 0x231b),
    (0x2329, 0x232a),
    (0x23e9, 0x23ec),
    (0x23f0, 0x23f0),
    (0x23f3, 0x23f3),
    (0x25fd, 0x25fe),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267f, 0x267f),
    (0x2693, 0x2693),
    (0x26a1, 0x26a1),
    (0x26aa, 0x26ab),
    (0x26bd, 0x26be),
    (0x26c4, 0x26c5),
    (0x26ce, 0x26ce),
    (0x26d4, 0x26d4),
    (0x26ea, 0x26ea),
    (0x26f2, 0x26f3),
    (0x26f5, 0x26f5),
    (0x26fa, 0x26fa),
    (0x26fd, 0x26fd),
    (0x2705, 0x2705),
    (0x270a, 0x270b),
    (0x2728, 0x2728),
    (0x274c, 0x274c),
    (0x274e, 0x274e),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27b0, 0x27b0),
    (0x27bf, 0x27bf),
    (0x2b1b, 0x2b1c),
    (0x2b50, 0x2b50),
    (0x2b55, 0x2b55),
    (0x2e80, 0x2e99),
    (0x2e9b, 0x2ef3),
    (0x2f00, 0x2fd5),
    (0x2ff0, 0x2ffb),
    (0x3000, 0x3029),
    (0x302e, 0x303e),
    (0x3041, 0x3096),
    (0x309b, 0x30ff),
    (0x3105, 0x312f),
    (0x3131, 0x318e),
    (0x3190, 0x31e3),
    (0x31f0, 0x321e),
    (0x3220, 0x3247),
    (0x3250, 0x4dbf),
    (0x4e00, 0xa48c),
    (0xa490, 0xa4c6),
    (0xa960, 0xa97c),
    (0xac00, 0xd7a3),
    (0xf900, 0xfaff),
    (0xfe10, 0xfe19),
    (0xfe30, 0xfe52),
    (0xfe54, 0xfe66),
    (0xfe68, 0xfe6b),
    (0xff01, 0xff60),
    (0xffe0, 0xffe6),
    (0x16fe0, 0x16fe3),
    (0x16ff0, 0x16ff1),
    (0x17000, 0x187f7),
    (0x18800, 0x18cd5),
    (0x18d00, 0x18d08),
    (0x1aff0, 0x1aff3),
    (0x1aff5, 0x1affb),
    (0x1affd, 0x1affe),
    (0x1b000, 0x1b122),
    (0x1b150, 0x1b152),
    (0x1b164, 0x1b167),
    (0x1b170, 0x1b2fb),
    (0x1f004, 0x1f004),
    (0x1f0cf, 0x1f0cf),
    (0x1f18e, 0x1f18e),
    (0x1f191, 0x1f19a),
    (0x1f200, 0x1f202),
    (0x1f210, 0x1f23b),
    (0x1f240, 0x1f248),
    (0x1f250, 0x1f251),
    (0x1f260, 0x1f265),
    (0x1f300, 0x1f320),
    (0x1f32d, 0x1f335),
    (0x1f337, 0x1f37c),
    (0x1f37e, 0x1f393),
    (0x1f3a0, 0x1f3ca),
    (0x1f3cf, 0x1f3d3),
    (0x1f3e0, 0x1f3f0),
    (0x1f3f4, 0x1f3f4),
    (0x1f3f8, 0x1f43e),
    (0x1f440, 0x1f440),
    (0x1f442, 0x1f4fc),
    (0x1f4ff, 0x1f53d),
    (0x1f54b, 0x1f54e),
    (0x1f550, 0x1f567),
    (0x1f57a, 0x1f57a),
    (0x1f595, 0x1f596),
    (0x1f5a4, 0x1f5a4),
    (0x1f5fb, 0x1f64f),
    (0x1f680, 0x1f6c5),
    (0x1f6cc, 0x1f6cc),
    (0x1f6d0, 0x1f6d2),
    (0x1f6d5, 0x1f6d7),
    (0x1f6dd, 0x1f6df),
    (0x1f6eb, 0x1f6ec),
    (0x1f6f4, 0x1f6fc),
    (0x1f7e0, 0x1f7eb),
    (0x1f7f0, 0x1f7f0),
    (0x1f90c, 0x1f93a),
    (0x1f93c, 0x1f945),
    (0x1f947, 0x1f9ff),
    (0x1fa70, 0x1fa74),
    (0x1fa78, 0x1fa7c),
    (0x1fa80, 0x1fa86),
    (0x1fa90, 0x1faac),
    (0x1fab0, 0x1faba),
    (0x1fac0, 0x1fac5),
    (0x1fad0, 0x1fad9),
    (0x1fae0, 0x1fae7),
    (0x1faf0, 0x1faf6),
    (0x20000, 0x2fffd),
    (0x30000, 0x3fffd),
];

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
    fn wide_characters_take_two_columns() {
        assert_eq!(display_width('a'), 1);
        assert_eq!(display_width('é'), 1);
        assert_eq!(display_width('\u{301}'), 1);
        assert_eq!(display_width('漢'), 2);
        assert_eq!(display_width('ア'), 2);
        assert_eq!(display_width('\u{20000}'), 2);
        // Reserved, but W in Unicode 14's EastAsianWidth.txt.
        assert_eq!(display_width('\u{fa6e}'), 2);
        assert_eq!(display_width('\u{faff}'), 2);
        let query = format!("'{}' || x", "漢".repeat(40));
        let text = libpq_message(&error("boom", Some(47)), Some(&query), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], format!("LINE 1: ...{}' || x", "漢".repeat(27)));
        assert_eq!(lines[2].find('^'), Some(8 + 3 + 54 + 5));
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
