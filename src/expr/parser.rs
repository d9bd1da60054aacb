//! A precedence-climbing parser reproducing pgbench's bison grammar.
//!
//! Precedence, lowest first: `OR`; `AND`; prefix `NOT`; `IS ...`, `ISNULL`,
//! `NOTNULL`; the comparisons (non-associative: `1 < 2 < 3` is a syntax
//! error); the bitwise operators `| # & << >>` (and prefix `~`, which binds
//! like them: `~1+2` is `~(1+2)`); `+ -`; `* / %`; unary `+ -`.
//!
//! Operators become function calls exactly as pgbench builds them, which
//! fixes the order in which operands are evaluated: `a > b` is `b < a`
//! (so `b` is evaluated first), `-x` is `0 - x`, `~x` is `-1 # x`,
//! `x ISNULL` is `x IS NULL`, `x NOTNULL` is `NOT (x IS NULL)`.
//!
//! Errors are raised at the token where pgbench's parser raises them (see
//! the lexer's module doc), with pgbench's message and detail; then, as
//! pgbench does, the rest of the line is lexed and a lexical error found
//! there replaces the first error.

use super::error::{ExprError, ExprErrorKind};
use super::func::{self, Arity, Func};
use super::lexer::{Lexer, Tok, Token};
use super::vars::VarNames;
use super::Value;

/// Deepest nesting of parentheses, prefix operators, function calls and
/// CASE accepted (the parser recurses once per level).
pub(crate) const MAX_NESTING: usize = 256;

/// A node of the syntax tree; children are indices into `Ast::nodes`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Const(Value),
    Var(usize),
    Call(Func, Vec<usize>),
}

/// The syntax tree of one expression, nodes stored in one vector.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ast {
    pub nodes: Vec<Node>,
}

const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_NOT: u8 = 3;
const PREC_IS: u8 = 4;
const PREC_CMP: u8 = 5;
const PREC_BIT: u8 = 6;
const PREC_ADD: u8 = 7;
const PREC_MUL: u8 = 8;
const PREC_UNARY: u8 = 9;

/// A binary operator: its precedence, the function it calls and whether the
/// operands are swapped (`a > b` is `b < a`).
fn binary(tok: &Tok) -> Option<(u8, Func, bool)> {
    Some(match tok {
        Tok::Or => (PREC_OR, Func::Or, false),
        Tok::And => (PREC_AND, Func::And, false),
        Tok::Eq => (PREC_CMP, Func::Eq, false),
        Tok::Ne => (PREC_CMP, Func::Ne, false),
        Tok::Lt => (PREC_CMP, Func::Lt, false),
        Tok::Le => (PREC_CMP, Func::Le, false),
        Tok::Gt => (PREC_CMP, Func::Lt, true),
        Tok::Ge => (PREC_CMP, Func::Le, true),
        Tok::BitOr => (PREC_BIT, Func::BitOr, false),
        Tok::Hash => (PREC_BIT, Func::BitXor, false),
        Tok::BitAnd => (PREC_BIT, Func::BitAnd, false),
        Tok::Shl => (PREC_BIT, Func::Shl, false),
        Tok::Shr => (PREC_BIT, Func::Shr, false),
        Tok::Plus => (PREC_ADD, Func::Add, false),
        Tok::Minus => (PREC_ADD, Func::Sub, false),
        Tok::Star => (PREC_MUL, Func::Mul, false),
        Tok::Slash => (PREC_MUL, Func::Div, false),
        Tok::Percent => (PREC_MUL, Func::Mod, false),
        _ => return None,
    })
}

pub(crate) struct Parser<'a, 'v> {
    lexer: Lexer<'a>,
    text: &'a str,
    lookahead: Option<Token>,
    vars: &'v mut VarNames,
    ast: Ast,
    nesting: usize,
}

impl<'a, 'v> Parser<'a, 'v> {
    pub fn new(text: &'a str, vars: &'v mut VarNames) -> Self {
        Parser {
            lexer: Lexer::new(text),
            text,
            lookahead: None,
            vars,
            ast: Ast::default(),
            nesting: 0,
        }
    }

    /// Parses the whole text as one expression; returns the tree and its root.
    pub fn parse(mut self) -> Result<(Ast, usize), ExprError> {
        match self.whole() {
            Ok(root) => Ok((self.ast, root)),
            Err(e) => Err(self.lexer.last_error(e)),
        }
    }

    fn whole(&mut self) -> Result<usize, ExprError> {
        let root = self.expr(0)?;
        let tok = self.peek()?;
        if tok.kind != Tok::End {
            return Err(syntax_error(&tok));
        }
        Ok(root)
    }

    fn peek(&mut self) -> Result<Token, ExprError> {
        if self.lookahead.is_none() {
            self.lookahead = Some(self.lexer.next_token()?);
        }
        Ok(self.lookahead.clone().unwrap_or(Token {
            kind: Tok::End,
            start: self.text.len(),
            end: self.text.len(),
        }))
    }

    fn advance(&mut self) -> Result<Token, ExprError> {
        let tok = self.peek()?;
        self.lookahead = None;
        Ok(tok)
    }

    fn expect(&mut self, kind: Tok) -> Result<Token, ExprError> {
        let tok = self.advance()?;
        if tok.kind != kind {
            return Err(syntax_error(&tok));
        }
        Ok(tok)
    }

    fn add(&mut self, node: Node) -> usize {
        self.ast.nodes.push(node);
        self.ast.nodes.len() - 1
    }

    fn constant(&mut self, value: Value) -> usize {
        self.add(Node::Const(value))
    }

    fn call(&mut self, f: Func, args: Vec<usize>) -> usize {
        self.add(Node::Call(f, args))
    }

    fn expr(&mut self, min_prec: u8) -> Result<usize, ExprError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            let tok = self.peek()?;
            return Err(ExprError::new(
                ExprErrorKind::TooDeeplyNested,
                None,
                tok.error_column(),
            ));
        }
        let result = self.expr_inner(min_prec);
        self.nesting -= 1;
        result
    }

    fn expr_inner(&mut self, min_prec: u8) -> Result<usize, ExprError> {
        let mut lhs = self.prefix()?;
        loop {
            let tok = self.peek()?;
            if let Some((prec, f, swap)) = binary(&tok.kind) {
                if prec < min_prec {
                    return Ok(lhs);
                }
                self.advance()?;
                let rhs = self.expr(prec + 1)?;
                let args = if swap { vec![rhs, lhs] } else { vec![lhs, rhs] };
                lhs = self.call(f, args);
                if prec == PREC_CMP {
                    let next = self.peek()?;
                    if binary(&next.kind).is_some_and(|(p, _, _)| p == PREC_CMP) {
                        return Err(syntax_error(&next));
                    }
                }
                continue;
            }
            if !matches!(tok.kind, Tok::Is | Tok::IsNull | Tok::NotNull) || PREC_IS < min_prec {
                return Ok(lhs);
            }
            self.advance()?;
            lhs = match tok.kind {
                Tok::IsNull => self.is(lhs, Value::Null, false),
                Tok::NotNull => self.is(lhs, Value::Null, true),
                _ => {
                    let mut operand = self.advance()?;
                    let negated = operand.kind == Tok::Not;
                    if negated {
                        operand = self.advance()?;
                    }
                    let value = match operand.kind {
                        Tok::Null => Value::Null,
                        Tok::Bool(b) => Value::Bool(b),
                        _ => return Err(syntax_error(&operand)),
                    };
                    self.is(lhs, value, negated)
                }
            };
        }
    }

    /// `x IS value`, or `NOT (x IS value)`.
    fn is(&mut self, lhs: usize, value: Value, negated: bool) -> usize {
        let rhs = self.constant(value);
        let is = self.call(Func::Is, vec![lhs, rhs]);
        if negated {
            self.call(Func::Not, vec![is])
        } else {
            is
        }
    }

    fn prefix(&mut self) -> Result<usize, ExprError> {
        let tok = self.advance()?;
        match tok.kind {
            Tok::Int(i) => Ok(self.constant(Value::Int(i))),
            Tok::Double(d) => Ok(self.constant(Value::Double(d))),
            Tok::Bool(b) => Ok(self.constant(Value::Bool(b))),
            Tok::Null => Ok(self.constant(Value::Null)),
            Tok::Variable(ref name) => {
                let slot = self.vars.slot(name);
                Ok(self.add(Node::Var(slot)))
            }
            Tok::Ident(ref name) => self.function(name, &tok),
            Tok::LParen => {
                let inner = self.expr(0)?;
                self.expect(Tok::RParen)?;
                Ok(inner)
            }
            Tok::Case => self.case(),
            Tok::Plus => self.expr(PREC_UNARY),
            Tok::Minus => {
                if self.peek()?.kind == Tok::MaxIntPlusOne {
                    self.advance()?;
                    return Ok(self.constant(Value::Int(i64::MIN)));
                }
                let zero = self.constant(Value::Int(0));
                let operand = self.expr(PREC_UNARY)?;
                Ok(self.call(Func::Sub, vec![zero, operand]))
            }
            Tok::Tilde => {
                let ones = self.constant(Value::Int(-1));
                let operand = self.expr(PREC_BIT + 1)?;
                Ok(self.call(Func::BitXor, vec![ones, operand]))
            }
            Tok::Not => {
                let operand = self.expr(PREC_NOT + 1)?;
                Ok(self.call(Func::Not, vec![operand]))
            }
            _ => Err(syntax_error(&tok)),
        }
    }

    /// `name(args)`: the name is checked as soon as it is read, the number
    /// of arguments when the closing parenthesis is read.
    fn function(&mut self, name: &str, name_tok: &Token) -> Result<usize, ExprError> {
        let Some((f, arity, canonical)) = func::lookup(name) else {
            return Err(ExprError::new(
                ExprErrorKind::UnexpectedFunctionName,
                Some(name.to_owned()),
                name_tok.error_column(),
            ));
        };
        self.expect(Tok::LParen)?;
        let mut args = Vec::new();
        if self.peek()?.kind != Tok::RParen {
            // pgbench's grammar lets an empty list be followed by `, expr`:
            // `f(, 1)` is `f(1)`.
            if self.peek()?.kind == Tok::Comma {
                self.advance()?;
            }
            loop {
                args.push(self.expr(0)?);
                if self.peek()?.kind != Tok::Comma {
                    break;
                }
                self.advance()?;
            }
        }
        let close = self.expect(Tok::RParen)?;
        let wrong_count = |kind| {
            Err(ExprError::new(
                kind,
                Some(canonical.to_owned()),
                close.error_column(),
            ))
        };
        match arity {
            Arity::Exactly(n) if args.len() != n => {
                return wrong_count(ExprErrorKind::UnexpectedNumberOfArguments)
            }
            Arity::AtLeastOne if args.is_empty() => {
                return wrong_count(ExprErrorKind::AtLeastOneArgumentExpected)
            }
            Arity::Hash | Arity::Permute => {
                let (min, max) = if arity == Arity::Hash { (1, 2) } else { (2, 3) };
                if args.len() < min || args.len() > max {
                    return wrong_count(ExprErrorKind::UnexpectedNumberOfArguments);
                }
                if args.len() == min {
                    let slot = self.vars.slot("default_seed");
                    args.push(self.add(Node::Var(slot)));
                }
            }
            _ => {}
        }
        Ok(self.call(f, args))
    }

    /// `CASE WHEN c THEN v [WHEN ...] [ELSE e] END` as a call with arguments
    /// `c1, v1, c2, v2, ..., e` (`e` is NULL when there is no ELSE).
    fn case(&mut self) -> Result<usize, ExprError> {
        let mut args = Vec::new();
        self.expect(Tok::When)?;
        loop {
            args.push(self.expr(0)?);
            self.expect(Tok::Then)?;
            args.push(self.expr(0)?);
            let tok = self.advance()?;
            match tok.kind {
                Tok::When => continue,
                Tok::Else => {
                    args.push(self.expr(0)?);
                    self.expect(Tok::EndKw)?;
                    return Ok(self.call(Func::Case, args));
                }
                Tok::EndKw => {
                    args.push(self.constant(Value::Null));
                    return Ok(self.call(Func::Case, args));
                }
                _ => return Err(syntax_error(&tok)),
            }
        }
    }
}

fn syntax_error(tok: &Token) -> ExprError {
    ExprError::new(ExprErrorKind::SyntaxError, None, tok.error_column())
}
