//! The expression language of `\set` (and `\if`, `\elif`), as pgbench's.
//!
//! [`parse`] turns the text into an [`Expr`]: the lexer and a
//! precedence-climbing parser build a syntax tree with pgbench's
//! precedence, operand order and parse-time errors (unknown functions,
//! argument counts, constant overflows, each with pgbench's caret
//! position); variables become slots of the run's [`VarNames`].
//!
//! The tree is then flattened into a small stack program: constants,
//! variable loads, function calls over the top of the stack, and jumps for
//! the lazy `AND`, `OR` and `CASE`. Evaluating walks that vector with a
//! value stack the caller keeps between evaluations, so the per-transaction
//! path allocates nothing and cannot overflow the native stack however
//! deeply an expression nests. The semantics (types, NULL propagation,
//! overflow and coercion errors, argument evaluation order, the limit of
//! 16 evaluated arguments) are pgbench's `evaluateExpr`.

mod error;
mod eval;
mod format;
mod func;
mod lexer;
mod parser;
mod program;
pub mod vars;

pub use error::{ExprError, ExprErrorKind};
pub use eval::{EvalContext, EvalError, EvalStack};
pub use format::{PgDouble, PgFixed};
pub use func::Func;
pub use program::Expr;

pub(crate) use lexer::parse_double as parse_c_double;

use vars::VarNames;

/// A value of the expression language.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl Value {
    /// pgbench's name of the value's type, used in coercion errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
        }
    }

    /// Truth as `\if` and `CASE WHEN` see it: NULL and zero are false.
    pub fn truth(&self) -> bool {
        match *self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }
}

impl std::fmt::Display for Value {
    /// The text pgbench substitutes for the value in SQL (`NULL`, `true`,
    /// `false`, the integer, or the double with 15 significant digits).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => f.write_str(if b { "true" } else { "false" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => write!(f, "{}", PgDouble(d)),
        }
    }
}

/// Parses an expression, resolving its variables to slots of `vars`
/// (`hash()` and `permute()` without a seed use the variable
/// `default_seed`, which gets a slot too).
pub fn parse(text: &str, vars: &mut VarNames) -> Result<Expr, ExprError> {
    let (ast, root) = parser::Parser::new(text, vars).parse()?;
    Ok(Expr::compile(&ast, root))
}
