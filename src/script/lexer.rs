//! Splitting a script into SQL commands and backslash commands.
//!
//! pgbench hands its scripts to psql's SQL lexer, so where a command ends is
//! decided by the same token rules as the server's lexer: semicolons end a
//! command only outside quotes, comments, parentheses and the `BEGIN ... END`
//! body of a `CREATE FUNCTION`/`CREATE PROCEDURE`. This scanner reproduces
//! those rules byte by byte, including psql's quirks that decide what ends
//! up in the command text:
//!
//! - whitespace and `--` comments before a command are dropped; inside a
//!   command they are kept (since PostgreSQL 15), as are `/* */` comments,
//!   which nest;
//! - `\;` puts a semicolon into the command without ending it, `\:` a colon;
//! - any other backslash outside quotes ends the SQL collected so far and
//!   starts a backslash command;
//! - `:'name'` and `:"name"` are kept verbatim (they open no quote), and
//!   `:{?name}` becomes `FALSE`, because pgbench gives psql's lexer no
//!   variables to test;
//! - a quoted string closed and reopened after a newline continues;
//! - an identifier stuck to a number or a `$n` parameter belongs to it, so
//!   `1e'...'` holds a plain string, not an `E'...'` one.
//!
//! The scanner state (parenthesis depth and the function-body heuristic)
//! survives backslash commands, as it does in pgbench.

/// Why [`SqlScanner::scan`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A command-ending semicolon (it is part of the collected text).
    Semicolon,
    /// A backslash starting a meta command, at this byte offset.
    Backslash(usize),
    /// The end of the script.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    /// `'...'` with standard conforming strings.
    Standard,
    /// `E'...'`, backslash escapes.
    Escape,
    /// `B'...'` and `X'...'`: no doubled quotes.
    Bits,
    /// `U&'...'`.
    Unicode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Initial,
    /// Inside a `/* */` comment, with the nesting depth beyond the first.
    Comment(usize),
    /// Inside a quoted string.
    String(Quote),
    /// Inside a double-quoted identifier (plain or `U&"..."`).
    Identifier,
    /// Inside a dollar-quoted string opened by this delimiter.
    Dollar(Vec<u8>),
}

/// The SQL half of psql's lexer, over a whole script.
pub(crate) struct SqlScanner<'a> {
    src: &'a [u8],
    pos: usize,
    state: State,
    paren_depth: usize,
    begin_depth: usize,
    identifier_count: usize,
    identifiers: [u8; 4],
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

/// Characters of variable names (also dollar-quote tags after the first).
pub(crate) fn is_var_char(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

fn is_ident_cont(b: u8) -> bool {
    is_var_char(b) || b == b'$'
}

/// psql's whitespace; the vertical tab is one since PostgreSQL 16.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_newline(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

impl<'a> SqlScanner<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        SqlScanner {
            src: src.as_bytes(),
            pos: 0,
            state: State::Initial,
            paren_depth: 0,
            begin_depth: 0,
            identifier_count: 0,
            identifiers: [0; 4],
        }
    }

    /// Continue scanning SQL at `pos` (after a backslash command).
    pub(crate) fn resume_at(&mut self, pos: usize) {
        self.pos = pos;
        self.state = State::Initial;
    }

    fn at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn rest_starts_with(&self, s: &[u8]) -> bool {
        self.src[self.pos..].starts_with(s)
    }

    /// Append the next `n` bytes of input to `out`.
    fn echo(&mut self, n: usize, out: &mut Vec<u8>) {
        let end = (self.pos + n).min(self.src.len());
        out.extend_from_slice(&self.src[self.pos..end]);
        self.pos = end;
    }

    /// Scan SQL text into `out` until a command-ending semicolon, a
    /// backslash command or the end of input.
    pub(crate) fn scan(&mut self, out: &mut Vec<u8>) -> Stop {
        while self.pos < self.src.len() {
            let stop = match self.state {
                State::Initial => self.initial(out),
                State::Comment(depth) => {
                    self.comment(depth, out);
                    None
                }
                State::String(kind) => {
                    self.string(kind, out);
                    None
                }
                State::Identifier => {
                    self.quoted_identifier(out);
                    None
                }
                State::Dollar(_) => {
                    self.dollar(out);
                    None
                }
            };
            if let Some(stop) = stop {
                return stop;
            }
        }
        Stop::End
    }

    fn initial(&mut self, out: &mut Vec<u8>) -> Option<Stop> {
        let b = self.src[self.pos];
        let next = self.at(self.pos + 1);
        match b {
            _ if is_space(b) => {
                let start = self.pos;
                while self.pos < self.src.len() && is_space(self.src[self.pos]) {
                    self.pos += 1;
                }
                if !out.is_empty() {
                    out.extend_from_slice(&self.src[start..self.pos]);
                }
            }
            b'-' if next == b'-' => {
                let start = self.pos;
                while self.pos < self.src.len() && !is_newline(self.src[self.pos]) {
                    self.pos += 1;
                }
                if !out.is_empty() {
                    out.extend_from_slice(&self.src[start..self.pos]);
                }
            }
            b'/' if next == b'*' => {
                self.echo(2, out);
                self.state = State::Comment(0);
            }
            b'\'' => {
                self.echo(1, out);
                self.state = State::String(Quote::Standard);
            }
            b'"' => {
                self.echo(1, out);
                self.state = State::Identifier;
            }
            b'$' => self.dollar_start(out),
            b'(' => {
                self.paren_depth += 1;
                self.echo(1, out);
            }
            b')' => {
                self.paren_depth = self.paren_depth.saturating_sub(1);
                self.echo(1, out);
            }
            b';' => {
                self.echo(1, out);
                if self.paren_depth == 0 && self.begin_depth == 0 {
                    self.identifier_count = 0;
                    return Some(Stop::Semicolon);
                }
            }
            b'\\' if next == b';' || next == b':' => {
                out.push(next);
                self.pos += 2;
                if next == b';' {
                    self.identifier_count = 0;
                }
            }
            b'\\' => {
                let at = self.pos;
                self.pos += 1;
                return Some(Stop::Backslash(at));
            }
            b':' => self.colon(out),
            b'0'..=b'9' => self.number(out),
            _ if is_ident_start(b) => self.word(out),
            _ => self.echo(1, out),
        }
        None
    }

    /// A colon: a type cast, a psql variable reference or itself.
    fn colon(&mut self, out: &mut Vec<u8>) {
        let next = self.at(self.pos + 1);
        if next == b':' || next == b'=' {
            self.echo(2, out);
            return;
        }
        let names_end = |from: usize| {
            let mut i = from;
            while i < self.src.len() && is_var_char(self.src[i]) {
                i += 1;
            }
            i
        };
        if is_var_char(next) {
            let end = names_end(self.pos + 1);
            self.echo(end - self.pos, out);
            return;
        }
        if next == b'\'' || next == b'"' {
            let end = names_end(self.pos + 2);
            if end > self.pos + 2 && self.at(end) == next {
                self.echo(end + 1 - self.pos, out);
                return;
            }
        }
        if next == b'{' && self.at(self.pos + 2) == b'?' {
            let end = names_end(self.pos + 3);
            if end > self.pos + 3 && self.at(end) == b'}' {
                out.extend_from_slice(b"FALSE");
                self.pos = end + 1;
                return;
            }
        }
        self.echo(1, out);
    }

    /// An identifier or keyword, or the prefix of a special string literal.
    fn word(&mut self, out: &mut Vec<u8>) {
        let b = self.src[self.pos];
        let next = self.at(self.pos + 1);
        if next == b'\'' {
            let kind = match b {
                b'e' | b'E' => Some(Quote::Escape),
                b'b' | b'B' | b'x' | b'X' => Some(Quote::Bits),
                b'n' | b'N' => Some(Quote::Standard),
                _ => None,
            };
            if let Some(kind) = kind {
                self.echo(2, out);
                self.state = State::String(kind);
                return;
            }
        }
        if (b == b'u' || b == b'U') && next == b'&' {
            match self.at(self.pos + 2) {
                b'\'' => {
                    self.echo(3, out);
                    self.state = State::String(Quote::Unicode);
                }
                b'"' => {
                    self.echo(3, out);
                    self.state = State::Identifier;
                }
                _ => self.echo(1, out),
            }
            return;
        }
        let start = self.pos;
        while self.pos < self.src.len() && is_ident_cont(self.src[self.pos]) {
            self.pos += 1;
        }
        let word = &self.src[start..self.pos];
        out.extend_from_slice(word);
        self.track_function_body(word);
    }

    /// psql's heuristic for `CREATE [OR REPLACE] FUNCTION|PROCEDURE ...
    /// BEGIN ATOMIC ... END`: semicolons inside the body end nothing.
    fn track_function_body(&mut self, word: &[u8]) {
        if self.identifier_count == 0 {
            self.identifiers = [0; 4];
        }
        let is = |k: &str| word.eq_ignore_ascii_case(k.as_bytes());
        if (is("create") || is("function") || is("procedure") || is("or") || is("replace"))
            && self.identifier_count < self.identifiers.len()
        {
            self.identifiers[self.identifier_count] = word[0].to_ascii_lowercase();
        }
        self.identifier_count += 1;
        let ids = self.identifiers;
        let routine = ids[0] == b'c'
            && (ids[1] == b'f'
                || ids[1] == b'p'
                || (ids[1] == b'o' && ids[2] == b'r' && (ids[3] == b'f' || ids[3] == b'p')));
        if routine && self.paren_depth == 0 {
            if is("begin") {
                self.begin_depth += 1;
            } else if is("case") {
                if self.begin_depth >= 1 {
                    self.begin_depth += 1;
                }
            } else if is("end") && self.begin_depth > 0 {
                self.begin_depth -= 1;
            }
        }
    }

    /// The length of a dollar-quote delimiter (`$tag$`) at `i`, if any.
    fn dollar_delimiter(&self, i: usize) -> Option<usize> {
        let mut j = i + 1;
        if is_ident_start(self.at(j)) {
            j += 1;
            while j < self.src.len() && is_var_char(self.src[j]) {
                j += 1;
            }
        }
        (self.at(j) == b'$').then_some(j + 1 - i)
    }

    fn dollar_start(&mut self, out: &mut Vec<u8>) {
        if let Some(len) = self.dollar_delimiter(self.pos) {
            let tag = self.src[self.pos..self.pos + len].to_vec();
            self.echo(len, out);
            self.state = State::Dollar(tag);
            return;
        }
        // `$1` parameters and a `$` before something else are plain text.
        self.echo(1, out);
        if self.digits(out) > 0 {
            self.junk(out);
        }
    }

    /// Echoes the digits at the current position; how many there were.
    fn digits(&mut self, out: &mut Vec<u8>) -> usize {
        let start = self.pos;
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        out.extend_from_slice(&self.src[start..self.pos]);
        self.pos - start
    }

    /// A number: digits, and a decimal point with more digits unless two
    /// points follow (`1..10`), then any identifier stuck to it.
    fn number(&mut self, out: &mut Vec<u8>) {
        self.digits(out);
        if self.at(self.pos) == b'.' && self.at(self.pos + 1) != b'.' {
            self.echo(1, out);
            self.digits(out);
        }
        self.junk(out);
    }

    /// psql's lexer reads an identifier right after a number or a `$n`
    /// parameter as part of that token (`1e`, `2x`, `$1abc`: "trailing
    /// junk" the server rejects), so a quote right after it opens a plain
    /// string: `1e'\'` is not an `E'...'` string. Nor is the identifier a
    /// keyword for the function-body heuristic.
    fn junk(&mut self, out: &mut Vec<u8>) {
        if is_ident_start(self.at(self.pos)) {
            let start = self.pos;
            while self.pos < self.src.len() && is_ident_cont(self.src[self.pos]) {
                self.pos += 1;
            }
            out.extend_from_slice(&self.src[start..self.pos]);
        }
    }

    fn dollar(&mut self, out: &mut Vec<u8>) {
        let State::Dollar(tag) = &self.state else {
            return;
        };
        if self.src[self.pos] != b'$' {
            let start = self.pos;
            while self.pos < self.src.len() && self.src[self.pos] != b'$' {
                self.pos += 1;
            }
            out.extend_from_slice(&self.src[start..self.pos]);
            return;
        }
        match self.dollar_delimiter(self.pos) {
            Some(len) if self.src[self.pos..self.pos + len] == tag[..] => {
                self.echo(len, out);
                self.state = State::Initial;
            }
            // A different delimiter: its closing `$` may open the real one.
            Some(len) => self.echo(len - 1, out),
            None => {
                self.echo(1, out);
                while self.pos < self.src.len() && is_var_char(self.src[self.pos]) {
                    self.echo(1, out);
                }
            }
        }
    }

    fn comment(&mut self, depth: usize, out: &mut Vec<u8>) {
        if self.rest_starts_with(b"/*") {
            self.echo(2, out);
            self.state = State::Comment(depth + 1);
        } else if self.src[self.pos] == b'*' {
            let mut end = self.pos;
            while self.at(end) == b'*' {
                end += 1;
            }
            if self.at(end) == b'/' {
                self.echo(end + 1 - self.pos, out);
                self.state = match depth {
                    0 => State::Initial,
                    _ => State::Comment(depth - 1),
                };
            } else {
                self.echo(end - self.pos, out);
            }
        } else {
            self.echo(1, out);
        }
    }

    fn string(&mut self, kind: Quote, out: &mut Vec<u8>) {
        match self.src[self.pos] {
            b'\'' if kind != Quote::Bits && self.at(self.pos + 1) == b'\'' => self.echo(2, out),
            b'\'' => {
                self.echo(1, out);
                match self.quote_continuation(self.pos) {
                    Some(end) => self.echo(end - self.pos, out),
                    None => self.state = State::Initial,
                }
            }
            b'\\' if kind == Quote::Escape => self.echo(2, out),
            _ => self.echo(1, out),
        }
    }

    /// After a closing quote at `i - 1`: the end of whitespace holding a
    /// newline followed by another quote, which continues the string.
    fn quote_continuation(&self, mut i: usize) -> Option<usize> {
        let skip_comment = |mut i: usize| {
            while i < self.src.len() && !is_newline(self.src[i]) {
                i += 1;
            }
            i
        };
        loop {
            match self.at(i) {
                b' ' | b'\t' | 0x0b | 0x0c => i += 1,
                b'-' if self.at(i + 1) == b'-' => i = skip_comment(i),
                _ => break,
            }
        }
        if !is_newline(self.at(i)) {
            return None;
        }
        i += 1;
        loop {
            match self.at(i) {
                b if b != 0 && is_space(b) => i += 1,
                b'-' if self.at(i + 1) == b'-' => {
                    i = skip_comment(i);
                    if !is_newline(self.at(i)) {
                        return None;
                    }
                    i += 1;
                }
                b'\'' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    fn quoted_identifier(&mut self, out: &mut Vec<u8>) {
        if self.src[self.pos] == b'"' {
            if self.at(self.pos + 1) == b'"' {
                self.echo(2, out);
            } else {
                self.echo(1, out);
                self.state = State::Initial;
            }
        } else {
            self.echo(1, out);
        }
    }
}
