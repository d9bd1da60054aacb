//! Escaping of every text that comes from outside the renderer.
//!
//! Script names, commands, SQL, server strings and file names go through
//! [`esc`] before they reach the page, in text and in attribute values
//! alike (it escapes both quotes). The embedded JSON goes through
//! [`script_data`], since inside `<script>` HTML escapes mean nothing and
//! only the end of the element matters.

/// `s` with `&`, `<`, `>`, `"` and `'` escaped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text made safe inside `<script type="application/json">`: every
/// `<` is written `\u003c`, which JSON reads back as `<`, so neither
/// `</script>` nor `<!--` can occur in the element.
pub fn script_data(json: &str) -> String {
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_stays_text() {
        assert_eq!(
            esc("<script>alert('x\")</script>&"),
            "&lt;script&gt;alert(&#39;x&quot;)&lt;/script&gt;&amp;"
        );
        let json = serde_json::to_string("</script><!--").expect("json");
        let safe = script_data(&json);
        assert!(!safe.contains('<'));
        let back: String = serde_json::from_str(&safe).expect("reads back");
        assert_eq!(back, "</script><!--");
    }
}
