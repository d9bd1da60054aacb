//! Outside text (file names, script names, target names and the other
//! differences between two results) as the text and Markdown reports
//! embed it.
//!
//! Such text is whatever a file name or a result file held: a newline in
//! it would start a line of its own (in Markdown, a line starting with
//! `<script>` opens raw HTML), an escape sequence would drive the
//! terminal. So every control character is shown as its Rust escape
//! (`\n`, `\u{1b}`), in every rendering; in Markdown, the characters that
//! would end a table cell or a code span, open an emphasis, a link or
//! HTML are escaped too. Markdown shows a backslash before a letter as it
//! is, so `\n` reads as written.

/// `text` on one line: each control character as its escape.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as Markdown text (a table cell, a list item) that shows it as
/// it is.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in line(text).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` inside a Markdown code span: on one line, with no backtick to
/// end the span (and no `|`, which ends a table cell even there).
pub fn code(text: &str) -> String {
    line(text).replace('`', "'").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_stays_on_its_line_and_shows_as_it_is() {
        let name = "a\n<script>alert(1)</script>|`x`\u{1b}[2J";
        assert_eq!(line(name), "a\\n<script>alert(1)</script>|`x`\\u{1b}[2J");
        assert_eq!(
            markdown(name),
            "a\\\\n&lt;script&gt;alert(1)&lt;/script&gt;\\|\\`x\\`\\\\u{1b}\\[2J"
        );
        assert_eq!(code(name), "a\\n<script>alert(1)</script>\\|'x'\\u{1b}[2J");
    }
}
