//! The flattened form of an expression: a vector of stack operations.

use super::func::Func;
use super::parser::{Ast, Node};
use super::Value;

/// pgbench evaluates at most this many arguments of a function; a call with
/// more fails at run time after evaluating the first ones.
pub(crate) const MAX_FARGS: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    Push(Value),
    /// Push the value of a variable slot.
    Var(usize),
    /// Replace the top `nargs` values by the function's result.
    Call(Func, usize),
    /// A function call with more than [`MAX_FARGS`] arguments.
    TooManyArgs,
    /// Lazy `AND`: pop the left operand; NULL or false decide the result
    /// (pushed) and jump to the target, true falls through to the right
    /// operand.
    And(usize),
    /// Lazy `OR`, the mirror of `And`.
    Or(usize),
    /// The right operand of `AND`/`OR`: NULL stays NULL, else must be a
    /// boolean.
    ToBool,
    /// `CASE WHEN`: pop the condition; if it is not true, jump.
    When(usize),
    Jump(usize),
}

/// A parsed expression, ready to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub(crate) ops: Vec<Op>,
    /// The deepest the value stack gets while evaluating.
    pub(crate) max_stack: usize,
}

struct Compiler {
    ops: Vec<Op>,
    depth: usize,
    max_stack: usize,
}

impl Compiler {
    fn push(&mut self, op: Op, stack_change: isize) {
        self.ops.push(op);
        self.depth = self.depth.saturating_add_signed(stack_change);
        self.max_stack = self.max_stack.max(self.depth);
    }

    /// Emits a jump with a target to be patched; returns its index.
    fn jump(&mut self, op: fn(usize) -> Op, stack_change: isize) -> usize {
        self.push(op(usize::MAX), stack_change);
        self.ops.len() - 1
    }

    fn patch(&mut self, at: usize) {
        let target = self.ops.len();
        match &mut self.ops[at] {
            Op::And(t) | Op::Or(t) | Op::When(t) | Op::Jump(t) => *t = target,
            _ => {}
        }
    }

    fn emit(&mut self, ast: &Ast, node: usize) {
        match &ast.nodes[node] {
            Node::Const(v) => self.push(Op::Push(*v), 1),
            Node::Var(slot) => self.push(Op::Var(*slot), 1),
            Node::Call(f @ (Func::And | Func::Or), args) => {
                self.emit(ast, args[0]);
                let lazy = if *f == Func::And { Op::And } else { Op::Or };
                let skip = self.jump(lazy, -1);
                self.emit(ast, args[1]);
                self.push(Op::ToBool, 0);
                self.patch(skip);
            }
            Node::Call(Func::Case, args) => {
                let (pairs, otherwise) = args.split_at(args.len() - 1);
                let mut ends = Vec::new();
                for pair in pairs.chunks(2) {
                    self.emit(ast, pair[0]);
                    let next = self.jump(Op::When, -1);
                    self.emit(ast, pair[1]);
                    ends.push(self.jump(Op::Jump, -1));
                    self.patch(next);
                }
                self.emit(ast, otherwise[0]);
                for end in ends {
                    self.patch(end);
                }
            }
            Node::Call(f, args) => {
                for &arg in args.iter().take(MAX_FARGS) {
                    self.emit(ast, arg);
                }
                if args.len() > MAX_FARGS {
                    self.push(Op::TooManyArgs, 0);
                } else {
                    self.push(Op::Call(*f, args.len()), 1 - args.len() as isize);
                }
            }
        }
    }
}

impl Expr {
    pub(crate) fn compile(ast: &Ast, root: usize) -> Expr {
        let mut c = Compiler {
            ops: Vec::new(),
            depth: 0,
            max_stack: 0,
        };
        c.emit(ast, root);
        Expr {
            ops: c.ops,
            max_stack: c.max_stack,
        }
    }
}
