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

/// One step of the compiler's explicit work list (it does not recurse, so
/// no expression is too long to compile).
enum Work {
    Visit(usize),
    Emit(Op, isize),
    /// Emit a jump whose target is set by the matching `Land`.
    Jump(fn(usize) -> Op, isize, usize),
    /// The current position is the target of jump number `.0`.
    Land(usize),
}

struct Compiler {
    ops: Vec<Op>,
    depth: usize,
    max_stack: usize,
    /// Index in `ops` of each jump, by jump number.
    jumps: Vec<usize>,
}

impl Compiler {
    fn emit(&mut self, op: Op, stack_change: isize) {
        self.ops.push(op);
        self.depth = self.depth.saturating_add_signed(stack_change);
        self.max_stack = self.max_stack.max(self.depth);
    }

    fn new_jump(&mut self) -> usize {
        self.jumps.push(usize::MAX);
        self.jumps.len() - 1
    }

    /// The steps for one node, in execution order.
    fn steps(&mut self, ast: &Ast, node: usize, out: &mut Vec<Work>) {
        match &ast.nodes[node] {
            Node::Const(v) => out.push(Work::Emit(Op::Push(*v), 1)),
            Node::Var(slot) => out.push(Work::Emit(Op::Var(*slot), 1)),
            Node::Call(f @ (Func::And | Func::Or), args) => {
                let skip = self.new_jump();
                let lazy = if *f == Func::And { Op::And } else { Op::Or };
                out.extend([
                    Work::Visit(args[0]),
                    Work::Jump(lazy, -1, skip),
                    Work::Visit(args[1]),
                    Work::Emit(Op::ToBool, 0),
                    Work::Land(skip),
                ]);
            }
            Node::Call(Func::Case, args) => {
                let (pairs, otherwise) = args.split_at(args.len() - 1);
                let mut ends = Vec::new();
                for pair in pairs.chunks(2) {
                    let next = self.new_jump();
                    let end = self.new_jump();
                    ends.push(end);
                    out.extend([
                        Work::Visit(pair[0]),
                        Work::Jump(Op::When, -1, next),
                        Work::Visit(pair[1]),
                        Work::Jump(Op::Jump, -1, end),
                        Work::Land(next),
                    ]);
                }
                out.push(Work::Visit(otherwise[0]));
                out.extend(ends.into_iter().map(Work::Land));
            }
            Node::Call(f, args) => {
                out.extend(args.iter().take(MAX_FARGS).map(|&a| Work::Visit(a)));
                out.push(if args.len() > MAX_FARGS {
                    Work::Emit(Op::TooManyArgs, 0)
                } else {
                    Work::Emit(Op::Call(*f, args.len()), 1 - args.len() as isize)
                });
            }
        }
    }

    fn run(&mut self, ast: &Ast, root: usize) {
        let mut todo = vec![Work::Visit(root)];
        let mut steps = Vec::new();
        while let Some(work) = todo.pop() {
            match work {
                Work::Visit(node) => {
                    steps.clear();
                    self.steps(ast, node, &mut steps);
                    todo.extend(steps.drain(..).rev());
                }
                Work::Emit(op, change) => self.emit(op, change),
                Work::Jump(op, change, number) => {
                    self.jumps[number] = self.ops.len();
                    self.emit(op(usize::MAX), change);
                }
                Work::Land(number) => {
                    let target = self.ops.len();
                    if let Some(Op::And(t) | Op::Or(t) | Op::When(t) | Op::Jump(t)) =
                        self.ops.get_mut(self.jumps[number])
                    {
                        *t = target;
                    }
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
            jumps: Vec::new(),
        };
        c.run(ast, root);
        Expr {
            ops: c.ops,
            max_stack: c.max_stack,
        }
    }
}
