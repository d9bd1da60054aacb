//! Tokens of the expression language, read one at a time.
//!
//! The parser asks for the next token only when pgbench's bison parser would
//! read it, so that when several problems exist the one pgbench reports is the
//! one reported here (a lexical error further right never hides an unknown
//! function name further left).
//!
//! Lexing rules follow pgbench's scanner: keywords are case-insensitive and
//! win over identifiers of the same length; an identifier is a letter, `_`
//! or any byte >= 0x80 followed by those or digits; `:name` is a variable
//! (the name may start with a digit); a backslash-newline is skipped; a
//! newline ends the expression.

use super::error::{ExprError, ExprErrorKind};

/// One token with the byte range it covers in the source text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// Where pgbench puts its caret for an error found at this token: on the
    /// token's last byte, or on the newline that ends the expression.
    pub fn error_column(&self) -> usize {
        if self.end > self.start {
            self.end - 1
        } else {
            self.start
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    End,
    Int(i64),
    /// `9223372036854775808`, only valid right after a unary minus.
    MaxIntPlusOne,
    Double(f64),
    Bool(bool),
    Null,
    Variable(String),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    BitOr,
    BitAnd,
    Hash,
    Tilde,
    LParen,
    RParen,
    Comma,
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    EndKw,
}

pub(crate) struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
}

fn is_alpha(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_alnum(b: u8) -> bool {
    is_alpha(b) || b.is_ascii_digit()
}

fn keyword(word: &str) -> Option<Tok> {
    const KEYWORDS: &[(&str, Tok)] = &[
        ("and", Tok::And),
        ("or", Tok::Or),
        ("not", Tok::Not),
        ("is", Tok::Is),
        ("isnull", Tok::IsNull),
        ("notnull", Tok::NotNull),
        ("case", Tok::Case),
        ("when", Tok::When),
        ("then", Tok::Then),
        ("else", Tok::Else),
        ("end", Tok::EndKw),
        ("null", Tok::Null),
        ("true", Tok::Bool(true)),
        ("false", Tok::Bool(false)),
    ];
    KEYWORDS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(word))
        .map(|(_, t)| t.clone())
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer {
            src: text.as_bytes(),
            pos: 0,
        }
    }

    fn peek_byte(&self, at: usize) -> Option<u8> {
        self.src.get(at).copied()
    }

    /// Skips spaces and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek_byte(self.pos) {
                Some(b' ' | b'\t' | b'\r' | 0x0b | 0x0c) => self.pos += 1,
                Some(b'\\') => {
                    let mut at = self.pos + 1;
                    if self.peek_byte(at) == Some(b'\r') {
                        at += 1;
                    }
                    if self.peek_byte(at) == Some(b'\n') {
                        self.pos = at + 1;
                    } else {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    pub fn next_token(&mut self) -> Result<Token, ExprError> {
        self.skip_blanks();
        let start = self.pos;
        let Some(b) = self.peek_byte(start) else {
            return Ok(Token {
                kind: Tok::End,
                start,
                end: start,
            });
        };
        if b == b'\n' {
            // The command ends here; stay on the newline.
            return Ok(Token {
                kind: Tok::End,
                start,
                end: start,
            });
        }
        if b.is_ascii_digit()
            || (b == b'.'
                && self
                    .peek_byte(start + 1)
                    .is_some_and(|c| c.is_ascii_digit()))
        {
            return self.number(start);
        }
        if is_alpha(b) {
            return Ok(self.word(start));
        }
        if b == b':' && self.peek_byte(start + 1).is_some_and(is_alnum) {
            return Ok(self.variable(start));
        }
        self.operator(start, b)
    }

    /// A keyword or the name of a function, starting at `start`.
    fn word(&mut self, start: usize) -> Token {
        let mut end = start + 1;
        while self.peek_byte(end).is_some_and(is_alnum) {
            end += 1;
        }
        let word = String::from_utf8_lossy(&self.src[start..end]).into_owned();
        self.pos = end;
        let kind = keyword(&word).unwrap_or(Tok::Ident(word));
        Token { kind, start, end }
    }

    /// `:name`, a variable, starting at `start` (its colon).
    fn variable(&mut self, start: usize) -> Token {
        let mut end = start + 1;
        while self.peek_byte(end).is_some_and(is_alnum) {
            end += 1;
        }
        let name = String::from_utf8_lossy(&self.src[start + 1..end]).into_owned();
        self.pos = end;
        Token {
            kind: Tok::Variable(name),
            start,
            end,
        }
    }

    /// An operator or punctuation of one or two characters, the first one
    /// `b` at `start`; any other character is an error.
    fn operator(&mut self, start: usize, b: u8) -> Result<Token, ExprError> {
        let two = |c: u8| self.peek_byte(start + 1) == Some(c);
        let (kind, len) = match b {
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'%' => (Tok::Percent, 1),
            b'=' => (Tok::Eq, 1),
            b'<' if two(b'>') => (Tok::Ne, 2),
            b'<' if two(b'=') => (Tok::Le, 2),
            b'<' if two(b'<') => (Tok::Shl, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if two(b'=') => (Tok::Ge, 2),
            b'>' if two(b'>') => (Tok::Shr, 2),
            b'>' => (Tok::Gt, 1),
            b'!' if two(b'=') => (Tok::Ne, 2),
            b'|' => (Tok::BitOr, 1),
            b'&' => (Tok::BitAnd, 1),
            b'#' => (Tok::Hash, 1),
            b'~' => (Tok::Tilde, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            _ => {
                self.pos = start + 1;
                return Err(ExprError::new(
                    ExprErrorKind::UnexpectedCharacter,
                    Some(String::from_utf8_lossy(&[b]).into_owned()),
                    start,
                ));
            }
        };
        self.pos = start + len;
        Ok(Token {
            kind,
            start,
            end: self.pos,
        })
    }

    /// What pgbench finally reports after finding `first`: before printing
    /// the line it lexes the rest of it, and a lexical error found there
    /// (an unexpected character, a constant overflow) is reported instead,
    /// the last one winning. So `1 2 $` is an unexpected `$`, not a syntax
    /// error at `2`, and `'abc'` is an unexpected `'` at the closing quote.
    pub fn last_error(&mut self, first: ExprError) -> ExprError {
        let mut error = first;
        loop {
            match self.next_token() {
                Ok(Token { kind: Tok::End, .. }) => return error,
                Ok(_) => {}
                Err(e) => error = e,
            }
        }
    }

    /// Integers, doubles and the special `9223372036854775808`.
    fn number(&mut self, start: usize) -> Result<Token, ExprError> {
        let digits = |mut at: usize| {
            while self.peek_byte(at).is_some_and(|c| c.is_ascii_digit()) {
                at += 1;
            }
            at
        };
        let int_end = digits(start);
        let mut end = int_end;
        let mut is_double = false;
        if self.peek_byte(end) == Some(b'.') {
            end = digits(end + 1);
            is_double = true;
        }
        if matches!(self.peek_byte(end), Some(b'e' | b'E')) {
            let mut at = end + 1;
            if matches!(self.peek_byte(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if self.peek_byte(at).is_some_and(|c| c.is_ascii_digit()) {
                end = digits(at);
                is_double = true;
            }
        }
        self.pos = end;
        let text = std::str::from_utf8(&self.src[start..end]).unwrap_or_default();
        let kind = if is_double {
            match parse_double(text) {
                Some(d) => Tok::Double(d),
                None => {
                    return Err(ExprError::new(
                        ExprErrorKind::DoubleConstantOverflow,
                        Some(text.to_owned()),
                        end - 1,
                    ))
                }
            }
        } else if text == "9223372036854775808" {
            Tok::MaxIntPlusOne
        } else {
            match text.parse::<i64>() {
                Ok(i) => Tok::Int(i),
                Err(_) => {
                    return Err(ExprError::new(
                        ExprErrorKind::BigintConstantOverflow,
                        Some(text.to_owned()),
                        end - 1,
                    ))
                }
            }
        };
        Ok(Token { kind, start, end })
    }
}

/// Parses a decimal double as C's `strtod` does, failing where `strtod`
/// reports a range error: overflow to infinity, or a nonzero value that
/// underflows below the smallest normal double.
pub(crate) fn parse_double(text: &str) -> Option<f64> {
    let d: f64 = text.parse().ok()?;
    if d.is_infinite() {
        return None;
    }
    if d == 0.0 || d.abs() < f64::MIN_POSITIVE {
        // strtod sets ERANGE when the result is subnormal or rounds to zero
        // although the text is not zero.
        let nonzero = text
            .bytes()
            .take_while(|c| !matches!(c, b'e' | b'E'))
            .any(|c| (b'1'..=b'9').contains(&c));
        if nonzero {
            return None;
        }
    }
    Some(d)
}
