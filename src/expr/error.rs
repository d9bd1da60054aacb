//! Errors found while parsing an expression.

use std::fmt;

/// What is wrong with an expression; `message` gives pgbench's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprErrorKind {
    SyntaxError,
    UnexpectedCharacter,
    BigintConstantOverflow,
    DoubleConstantOverflow,
    UnexpectedFunctionName,
    AtLeastOneArgumentExpected,
    UnexpectedNumberOfArguments,
    /// pgbolt's own limit of 256 nested parentheses, prefix operators,
    /// calls and CASEs (pgbench's parser runs out of stack some thousands
    /// of levels deep and reports "memory exhausted").
    TooDeeplyNested,
}

impl ExprErrorKind {
    pub fn message(self) -> &'static str {
        match self {
            ExprErrorKind::SyntaxError => "syntax error",
            ExprErrorKind::UnexpectedCharacter => "unexpected character",
            ExprErrorKind::BigintConstantOverflow => "bigint constant overflow",
            ExprErrorKind::DoubleConstantOverflow => "double constant overflow",
            ExprErrorKind::UnexpectedFunctionName => "unexpected function name",
            ExprErrorKind::AtLeastOneArgumentExpected => "at least one argument expected",
            ExprErrorKind::UnexpectedNumberOfArguments => "unexpected number of arguments",
            ExprErrorKind::TooDeeplyNested => "expression is too deeply nested",
        }
    }
}

/// A parse error: pgbench's message, its optional detail (shown by pgbench in
/// parentheses after the message) and the byte offset within the expression
/// text where pgbench puts its caret.
///
/// For errors found at the end of the expression the column is the length
/// of the text, the place of the newline that ends the command. (When a
/// script file's last line has no newline, pgbench puts the caret one byte
/// earlier, on the last character.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub kind: ExprErrorKind,
    pub detail: Option<String>,
    pub column: usize,
}

impl ExprError {
    pub(crate) fn new(kind: ExprErrorKind, detail: Option<String>, column: usize) -> Self {
        ExprError {
            kind,
            detail,
            column,
        }
    }

    pub fn message(&self) -> &'static str {
        self.kind.message()
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExprError {}
