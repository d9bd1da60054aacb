//! Evaluation of a compiled expression, with pgbench's semantics.

use std::fmt;
use std::io::Write;

use super::format::{PgDouble, PgFixed};
use super::func::Func;
use super::program::{Expr, Op, MAX_FARGS};
use super::vars::{VarError, VarNames, Variables};
use super::Value;
use crate::random::{self, PrngState};

const MIN_GAUSSIAN_PARAM: f64 = 2.0;
const MIN_ZIPFIAN_PARAM: f64 = 1.001;
const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// The value stack of evaluations, kept by each client and reused, so
/// evaluating allocates nothing once it has grown to the deepest
/// expression.
#[derive(Debug, Default, Clone)]
pub struct EvalStack(Vec<Value>);

impl EvalStack {
    pub fn new() -> Self {
        Self::default()
    }
}

/// What an evaluation reads and writes besides the expression.
pub struct EvalContext<'a> {
    /// The client's variables.
    pub vars: &'a mut Variables,
    /// The client's generator for `random*()` functions.
    pub random: &'a mut PrngState,
    pub stack: &'a mut EvalStack,
    /// The script's number (0-based, as pgbench prints it in `debug()`).
    pub script_index: usize,
    /// The command's index in its script (0-based; `debug()` prints it
    /// plus one, as pgbench does).
    pub command_index: usize,
    /// Where `debug()` writes (pgbench: standard error).
    pub debug_out: &'a mut dyn Write,
}

/// Why an evaluation failed; pgbench then aborts the client.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    UndefinedVariable {
        slot: usize,
    },
    /// A variable's text is empty; pgbench prints no message of its own.
    EmptyVariable {
        slot: usize,
    },
    /// A variable's text looks like an integer but is out of range.
    BigintOutOfRange {
        text: String,
    },
    /// A variable's text is blanks and a sign without digits.
    InvalidBigint {
        text: String,
    },
    /// A variable's text is no number or boolean; `text` holds its bytes,
    /// which need not be UTF-8 (a value `\gset` read from a `LATIN1`
    /// database).
    MalformedVariable {
        slot: usize,
        text: Vec<u8>,
    },
    CannotCoerce {
        from: &'static str,
        to: &'static str,
    },
    DoubleToIntOverflow(f64),
    BigintAddOutOfRange,
    BigintSubOutOfRange,
    BigintMulOutOfRange,
    BigintDivOutOfRange,
    DivisionByZero,
    TooManyArguments,
    EmptyRange,
    RangeTooLarge,
    GaussianParameter(f64),
    ZipfianParameter(f64),
    ExponentialParameter(f64),
    PermuteSize,
}

impl EvalError {
    /// The message pgbench logs (as `pgbench: error: ...`), or None where
    /// pgbench logs nothing but the client's abort.
    pub fn message(&self, names: &VarNames) -> Option<String> {
        self.message_bytes(names)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// [`EvalError::message`] as the bytes pgbench writes: a variable's
    /// value is quoted as it is, UTF-8 or not.
    pub fn message_bytes(&self, names: &VarNames) -> Option<Vec<u8>> {
        let name = |slot: usize| names.name(slot).to_owned();
        Some(match self {
            EvalError::UndefinedVariable { slot } => {
                format!("undefined variable \"{}\"", name(*slot)).into_bytes()
            }
            EvalError::EmptyVariable { .. } => return None,
            EvalError::MalformedVariable { slot, text } => {
                let mut message =
                    format!("malformed variable \"{}\" value: \"", name(*slot)).into_bytes();
                message.extend_from_slice(text);
                message.push(b'"');
                message
            }
            other => other.to_string().into_bytes(),
        })
    }
}

impl fmt::Display for EvalError {
    /// pgbench's message; variables are shown by slot (see [`EvalError::message`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::UndefinedVariable { slot } => write!(f, "undefined variable (slot {slot})"),
            EvalError::EmptyVariable { slot } => write!(f, "empty variable value (slot {slot})"),
            EvalError::BigintOutOfRange { text } => {
                write!(f, "value \"{text}\" is out of range for type bigint")
            }
            EvalError::InvalidBigint { text } => {
                write!(f, "invalid input syntax for type bigint: \"{text}\"")
            }
            EvalError::MalformedVariable { slot, text } => {
                let text = String::from_utf8_lossy(text);
                write!(f, "malformed variable (slot {slot}) value: \"{text}\"")
            }
            EvalError::CannotCoerce { from, to } => write!(f, "cannot coerce {from} to {to}"),
            EvalError::DoubleToIntOverflow(d) => write!(f, "double to int overflow for {}", PgFixed(*d)),
            EvalError::BigintAddOutOfRange => f.write_str("bigint add out of range"),
            EvalError::BigintSubOutOfRange => f.write_str("bigint sub out of range"),
            EvalError::BigintMulOutOfRange => f.write_str("bigint mul out of range"),
            EvalError::BigintDivOutOfRange => f.write_str("bigint div out of range"),
            EvalError::DivisionByZero => f.write_str("division by zero"),
            EvalError::TooManyArguments => {
                write!(f, "too many function arguments, maximum is {MAX_FARGS}")
            }
            EvalError::EmptyRange => f.write_str("empty range given to random"),
            EvalError::RangeTooLarge => f.write_str("random range is too large"),
            EvalError::GaussianParameter(p) => write!(
                f,
                "gaussian parameter must be at least {} (not {})",
                PgFixed(MIN_GAUSSIAN_PARAM),
                PgFixed(*p)
            ),
            EvalError::ZipfianParameter(p) => write!(
                f,
                "zipfian parameter must be in range [{MIN_ZIPFIAN_PARAM:.3}, {MAX_ZIPFIAN_PARAM:.0}] (not {})",
                PgFixed(*p)
            ),
            EvalError::ExponentialParameter(p) => write!(
                f,
                "exponential parameter must be greater than zero (not {})",
                PgFixed(*p)
            ),
            EvalError::PermuteSize => f.write_str("permute size parameter must be greater than zero"),
        }
    }
}

impl std::error::Error for EvalError {}

fn to_bool(v: &Value) -> Result<bool, EvalError> {
    match *v {
        Value::Bool(b) => Ok(b),
        other => Err(EvalError::CannotCoerce {
            from: other.type_name(),
            to: "boolean",
        }),
    }
}

fn to_int(v: &Value) -> Result<i64, EvalError> {
    match *v {
        Value::Int(i) => Ok(i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            // FLOAT8_FITS_IN_INT64: [-2^63, 2^63).
            if r.is_nan()
                || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r)
            {
                Err(EvalError::DoubleToIntOverflow(r))
            } else {
                Ok(r as i64)
            }
        }
        other => Err(EvalError::CannotCoerce {
            from: other.type_name(),
            to: "int",
        }),
    }
}

fn to_double(v: &Value) -> Result<f64, EvalError> {
    match *v {
        Value::Double(d) => Ok(d),
        Value::Int(i) => Ok(i as f64),
        other => Err(EvalError::CannotCoerce {
            from: other.type_name(),
            to: "double",
        }),
    }
}

impl Expr {
    /// Evaluates the expression for one client.
    pub fn eval(&self, cx: &mut EvalContext<'_>) -> Result<Value, EvalError> {
        let stack = &mut cx.stack.0;
        stack.clear();
        stack.reserve(self.max_stack);
        let mut pc = 0;
        while let Some(op) = self.ops.get(pc) {
            pc += 1;
            match *op {
                Op::Push(v) => stack.push(v),
                Op::Var(slot) => {
                    let v = cx
                        .vars
                        .get(slot)
                        .map_err(|e| variable_error(cx.vars, slot, e))?;
                    stack.push(v);
                }
                Op::Call(func, nargs) => {
                    let base = stack.len() - nargs;
                    let result = call(
                        func,
                        &stack[base..],
                        cx.random,
                        cx.debug_out,
                        cx.script_index,
                        cx.command_index,
                    )?;
                    stack.truncate(base);
                    stack.push(result);
                }
                Op::TooManyArgs => return Err(EvalError::TooManyArguments),
                Op::And(target) | Op::Or(target) => {
                    let is_and = matches!(op, Op::And(_));
                    let left = stack.pop().unwrap_or(Value::Null);
                    if left == Value::Null {
                        stack.push(Value::Null);
                        pc = target;
                    } else if to_bool(&left)? != is_and {
                        stack.push(Value::Bool(!is_and));
                        pc = target;
                    }
                }
                Op::ToBool => {
                    if let Some(top) = stack.last_mut() {
                        if *top != Value::Null {
                            *top = Value::Bool(to_bool(top)?);
                        }
                    }
                }
                Op::When(target) => {
                    if !stack.pop().unwrap_or(Value::Null).truth() {
                        pc = target;
                    }
                }
                Op::Jump(target) => pc = target,
            }
        }
        Ok(stack.pop().unwrap_or(Value::Null))
    }
}

fn variable_error(vars: &Variables, slot: usize, e: VarError) -> EvalError {
    let text = || String::from_utf8_lossy(vars.text(slot).unwrap_or_default()).into_owned();
    match e {
        VarError::Undefined => EvalError::UndefinedVariable { slot },
        VarError::Empty => EvalError::EmptyVariable { slot },
        VarError::BigintOutOfRange => EvalError::BigintOutOfRange { text: text() },
        VarError::InvalidBigint => EvalError::InvalidBigint { text: text() },
        VarError::Malformed => EvalError::MalformedVariable {
            slot,
            text: vars.text(slot).unwrap_or_default().to_vec(),
        },
    }
}

/// A non-lazy function on evaluated arguments (pgbench's
/// `evalStandardFunc`).
fn call(
    func: Func,
    args: &[Value],
    rng: &mut PrngState,
    debug_out: &mut dyn Write,
    script: usize,
    command: usize,
) -> Result<Value, EvalError> {
    let has_null = args.contains(&Value::Null);
    if has_null && func != Func::Is && func != Func::Debug {
        return Ok(Value::Null);
    }
    match func {
        Func::Add
        | Func::Sub
        | Func::Mul
        | Func::Div
        | Func::Mod
        | Func::Eq
        | Func::Ne
        | Func::Le
        | Func::Lt => arithmetic(func, &args[0], &args[1]),
        Func::BitAnd | Func::BitOr | Func::BitXor | Func::Shl | Func::Shr => {
            bitwise(func, &args[0], &args[1])
        }
        Func::Not => Ok(Value::Bool(!to_bool(&args[0])?)),
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs => Ok(abs(args[0])),
        Func::Debug => {
            write_debug(debug_out, script, command, &args[0]);
            Ok(args[0])
        }
        Func::Double | Func::Sqrt | Func::Ln | Func::Exp => {
            let d = to_double(&args[0])?;
            Ok(Value::Double(match func {
                Func::Sqrt => d.sqrt(),
                Func::Ln => d.ln(),
                Func::Exp => d.exp(),
                _ => d,
            }))
        }
        Func::Int => Ok(Value::Int(to_int(&args[0])?)),
        Func::Least | Func::Greatest => extremum(func == Func::Least, args),
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            random_call(func, args, rng)
        }
        Func::Pow => Ok(Value::Double(
            to_double(&args[0])?.powf(to_double(&args[1])?),
        )),
        Func::Is => Ok(Value::Bool(match (args[0], args[1]) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            _ => false,
        })),
        Func::HashMurmur2 | Func::HashFnv1a => hash(func, &args[0], &args[1]),
        Func::Permute => permute(&args[0], &args[1], &args[2]),
        // Lazy functions are compiled into jumps and never called.
        Func::And | Func::Or | Func::Case => Ok(Value::Null),
    }
}

/// `&`, `|`, `#`, `<<` and `>>` on integers.
fn bitwise(func: Func, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let (l, r) = (to_int(l)?, to_int(r)?);
    Ok(Value::Int(match func {
        Func::BitAnd => l & r,
        Func::BitOr => l | r,
        Func::BitXor => l ^ r,
        // x86-64 shifts by the count modulo 64, as pgbench's C does.
        Func::Shl => l.wrapping_shl(r as u32),
        _ => l.wrapping_shr(r as u32),
    }))
}

/// `abs(x)`, of the argument's own type.
fn abs(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Int(i.wrapping_abs()),
        Value::Double(d) => Value::Double(if d < 0.0 { -d } else { d }),
        // pgbench reads a boolean's storage as a double here.
        Value::Bool(b) => Value::Double(f64::from_bits(u64::from(b))),
        Value::Null => Value::Null,
    }
}

/// `hash_murmur2(val, seed)` and `hash_fnv1a(val, seed)`.
fn hash(func: Func, val: &Value, seed: &Value) -> Result<Value, EvalError> {
    let (val, seed) = (to_int(val)?, to_int(seed)?);
    Ok(Value::Int(if func == Func::HashMurmur2 {
        random::hash_murmur2(val, seed)
    } else {
        random::hash_fnv1a(val, seed)
    }))
}

/// `permute(i, size, seed)`; a size that is not positive is an error.
fn permute(val: &Value, size: &Value, seed: &Value) -> Result<Value, EvalError> {
    let (val, size, seed) = (to_int(val)?, to_int(size)?, to_int(seed)?);
    if size <= 0 {
        return Err(EvalError::PermuteSize);
    }
    Ok(Value::Int(random::permute(val, size, seed)))
}

fn write_debug(out: &mut dyn Write, script: usize, command: usize, v: &Value) {
    // pgbench ignores failures to write to stderr.
    let _ = write!(out, "debug(script={script},command={}): ", command + 1);
    let _ = match *v {
        Value::Null => writeln!(out, "null"),
        Value::Bool(b) => writeln!(out, "boolean {b}"),
        Value::Int(i) => writeln!(out, "int {i}"),
        Value::Double(d) => writeln!(out, "double {}", PgDouble(d)),
    };
}

/// `+ - * / %` and comparisons: double if either side is a double (except
/// `%`, always on integers), else checked 64-bit integer arithmetic.
fn arithmetic(func: Func, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let either_double = matches!(l, Value::Double(_)) || matches!(r, Value::Double(_));
    if either_double && func != Func::Mod {
        let (a, b) = (to_double(l)?, to_double(r)?);
        return Ok(match func {
            Func::Add => Value::Double(a + b),
            Func::Sub => Value::Double(a - b),
            Func::Mul => Value::Double(a * b),
            Func::Div => Value::Double(a / b),
            Func::Eq => Value::Bool(a == b),
            Func::Ne => Value::Bool(a != b),
            Func::Le => Value::Bool(a <= b),
            _ => Value::Bool(a < b),
        });
    }
    let (a, b) = (to_int(l)?, to_int(r)?);
    Ok(match func {
        Func::Add => Value::Int(a.checked_add(b).ok_or(EvalError::BigintAddOutOfRange)?),
        Func::Sub => Value::Int(a.checked_sub(b).ok_or(EvalError::BigintSubOutOfRange)?),
        Func::Mul => Value::Int(a.checked_mul(b).ok_or(EvalError::BigintMulOutOfRange)?),
        Func::Eq => Value::Bool(a == b),
        Func::Ne => Value::Bool(a != b),
        Func::Le => Value::Bool(a <= b),
        Func::Lt => Value::Bool(a < b),
        _ => {
            if b == 0 {
                return Err(EvalError::DivisionByZero);
            }
            let is_div = func == Func::Div;
            if b == -1 {
                if !is_div {
                    return Ok(Value::Int(0));
                }
                return a
                    .checked_neg()
                    .map(Value::Int)
                    .ok_or(EvalError::BigintDivOutOfRange);
            }
            Value::Int(if is_div { a / b } else { a % b })
        }
    })
}

/// `least`/`greatest`: doubles if any argument is a double, else integers;
/// compared as C's `Min`/`Max` macros do (which matters for NaN).
fn extremum(least: bool, args: &[Value]) -> Result<Value, EvalError> {
    if args.iter().any(|a| matches!(a, Value::Double(_))) {
        let mut acc = to_double(&args[0])?;
        for a in &args[1..] {
            let d = to_double(a)?;
            let keep = if least { acc < d } else { acc > d };
            if !keep {
                acc = d;
            }
        }
        Ok(Value::Double(acc))
    } else {
        let mut acc = to_int(&args[0])?;
        for a in &args[1..] {
            let i = to_int(a)?;
            acc = if least { acc.min(i) } else { acc.max(i) };
        }
        Ok(Value::Int(acc))
    }
}

fn random_call(func: Func, args: &[Value], rng: &mut PrngState) -> Result<Value, EvalError> {
    let (min, max) = (to_int(&args[0])?, to_int(&args[1])?);
    if min > max {
        return Err(EvalError::EmptyRange);
    }
    if max
        .checked_sub(min)
        .and_then(|d| d.checked_add(1))
        .is_none()
    {
        return Err(EvalError::RangeTooLarge);
    }
    if func == Func::Random {
        return Ok(Value::Int(rng.uniform(min, max)));
    }
    let param = to_double(&args[2])?;
    Ok(Value::Int(match func {
        Func::RandomGaussian => {
            if param < MIN_GAUSSIAN_PARAM {
                return Err(EvalError::GaussianParameter(param));
            }
            rng.gaussian(min, max, param)
        }
        Func::RandomZipfian => {
            // pgbench lets NaN through and then loops forever; pgbolt
            // rejects it.
            if !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&param) {
                return Err(EvalError::ZipfianParameter(param));
            }
            rng.zipfian(min, max, param)
        }
        _ => {
            if param <= 0.0 {
                return Err(EvalError::ExponentialParameter(param));
            }
            rng.exponential(min, max, param)
        }
    }))
}
