//! Table-driven tests of the expression language through its public API:
//! what an expression evaluates to, how it fails, and where parse errors
//! point. (`tests/runs/expr_diff.rs` checks the same things against pgbench.)

use pgbolt::expr::vars::{VarNames, Variables};
use pgbolt::expr::{parse, EvalContext, EvalError, EvalStack, ExprErrorKind, Value};
use pgbolt::random::PrngState;

/// Evaluates `text` with `:x` = 10 and `:s` = the text "2.5"; returns the
/// value or the error message, and what `debug()` printed.
fn eval(text: &str) -> (Result<Value, String>, String) {
    let mut names = VarNames::new();
    let x = names.slot("x");
    let s = names.slot("s");
    let expr = parse(text, &mut names).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    let mut vars = Variables::new(&names);
    vars.set(x, Value::Int(10));
    vars.set_text(s, "2.5");
    let mut rng = PrngState::seeded(0);
    let mut stack = EvalStack::new();
    let mut out = Vec::new();
    let result = expr.eval(&mut EvalContext {
        vars: &mut vars,
        random: &mut rng,
        stack: &mut stack,
        script_index: 1,
        command_index: 2,
        debug_out: &mut out,
    });
    let result = result.map_err(|e: EvalError| e.message(&names).unwrap_or_default());
    (result, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn values() {
    use Value::*;
    let cases: &[(&str, Value)] = &[
        ("1 + 2 * 3", Int(7)),
        ("(1 + 2) * 3", Int(9)),
        ("7 / 2", Int(3)),
        ("-7 / 2", Int(-3)),
        ("-7 % 3", Int(-1)),
        ("7.0 / 2", Double(3.5)),
        ("7.5 % 2", Int(0)),
        ("-9223372036854775808", Int(i64::MIN)),
        ("9223372036854775807 / -1", Int(-i64::MAX)),
        ("-9223372036854775808 % -1", Int(0)),
        ("~1 + 2", Int(-4)),
        ("1 << 64", Int(1)),
        ("-256 >> 4", Int(-16)),
        ("5 > 3", Bool(true)),
        ("3 >= 3.5", Bool(false)),
        ("1 != 1", Bool(false)),
        ("not true or true", Bool(true)),
        ("null and true", Null),
        ("false and 1 / 0 = 1", Bool(false)),
        ("true or 1 / 0 = 1", Bool(true)),
        ("null + 1", Null),
        ("null is null", Bool(true)),
        ("1 is not null", Bool(true)),
        ("1 is true", Bool(false)),
        ("1 notnull", Bool(true)),
        ("case when 0 then 1 when 2 then 3 else 4 end", Int(3)),
        ("case when null then 1 end", Null),
        ("abs(-9223372036854775808)", Int(i64::MIN)),
        ("least(3, 1.5, 2)", Double(1.5)),
        ("greatest(3, 1, 2)", Int(3)),
        ("int(2.5)", Int(2)),
        ("int(3.5)", Int(4)),
        ("double(3)", Double(3.0)),
        ("pow(2, 10)", Double(1024.0)),
        ("sqrt(16)", Double(4.0)),
        ("hash(10, 5432)", Int(-5817877081768721676)),
        ("hash_fnv1a(10, 5432)", Int(-7793829335365542153)),
        ("permute(0, 1, 5)", Int(0)),
        ("random(7, 7)", Int(7)),
        ("random_zipfian(3, 3, 2)", Int(3)),
        ("random_gaussian(1, 10, sqrt(-1))", Int(i64::MIN + 1)),
        ("random_exponential(1, 10, sqrt(-1))", Int(i64::MIN + 1)),
        (":x * 2", Int(20)),
        (":s * 2", Double(5.0)),
        ("MOD(7, 3) + Abs(-1)", Int(2)),
        ("abs(, -1)", Int(1)),
    ];
    for (text, want) in cases {
        assert_eq!(eval(text).0, Ok(*want), "{text}");
    }
}

#[test]
fn evaluation_errors() {
    let cases: &[(&str, &str)] = &[
        ("1 / 0", "division by zero"),
        ("1 % 0", "division by zero"),
        ("9223372036854775807 + 1", "bigint add out of range"),
        ("-9223372036854775808 - 1", "bigint sub out of range"),
        ("9223372036854775807 * 2", "bigint mul out of range"),
        ("-9223372036854775808 / -1", "bigint div out of range"),
        (
            "int(1e19)",
            "double to int overflow for 10000000000000000000.000000",
        ),
        ("int(sqrt(-1))", "double to int overflow for NaN"),
        ("not 1", "cannot coerce int to boolean"),
        ("true + 1", "cannot coerce boolean to int"),
        ("true + 1.5", "cannot coerce boolean to double"),
        ("1 and true", "cannot coerce int to boolean"),
        ("least(1, true)", "cannot coerce boolean to int"),
        ("random(5, 1)", "empty range given to random"),
        (
            "random(0, 9223372036854775807)",
            "random range is too large",
        ),
        (
            "random_gaussian(1, 10, 1.5)",
            "gaussian parameter must be at least 2.000000 (not 1.500000)",
        ),
        (
            "random_zipfian(1, 10, 1)",
            "zipfian parameter must be in range [1.001, 1000] (not 1.000000)",
        ),
        (
            "random_exponential(1, 10, 0)",
            "exponential parameter must be greater than zero (not 0.000000)",
        ),
        (
            "permute(1, 0, 3)",
            "permute size parameter must be greater than zero",
        ),
        (
            "greatest(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)",
            "too many function arguments, maximum is 16",
        ),
        (":nope", "undefined variable \"nope\""),
    ];
    for (text, want) in cases {
        assert_eq!(eval(text).0, Err(want.to_string()), "{text}");
    }
}

#[test]
fn debug_prints_pgbench_lines() {
    let cases: &[(&str, &str)] = &[
        ("debug(1)", "debug(script=1,command=3): int 1\n"),
        (
            "debug(1.0 / 3)",
            "debug(script=1,command=3): double 0.333333333333333\n",
        ),
        ("debug(1e20)", "debug(script=1,command=3): double 1e+20\n"),
        ("debug(-0.0)", "debug(script=1,command=3): double 0\n"),
        ("debug(0.0 * -1)", "debug(script=1,command=3): double -0\n"),
        ("debug(1 = 1)", "debug(script=1,command=3): boolean true\n"),
        ("debug(null)", "debug(script=1,command=3): null\n"),
        (
            "debug(exp(1000))",
            "debug(script=1,command=3): double Infinity\n",
        ),
        (
            "debug(2) > debug(1)",
            "debug(script=1,command=3): int 1\ndebug(script=1,command=3): int 2\n",
        ),
        ("false and debug(1) = 1", ""),
    ];
    for (text, want) in cases {
        assert_eq!(eval(text).1, *want, "{text}");
    }
}

#[test]
fn text_variables_convert_like_pgbench() {
    let cases: &[(&str, Result<Value, &str>)] = &[
        ("42", Ok(Value::Int(42))),
        ("  -7", Ok(Value::Int(-7))),
        ("2.5", Ok(Value::Double(2.5))),
        ("1e3", Ok(Value::Double(1000.0))),
        ("0x10", Ok(Value::Double(16.0))),
        ("t", Ok(Value::Bool(true))),
        ("YE", Ok(Value::Bool(true))),
        ("on", Ok(Value::Bool(true))),
        ("of", Ok(Value::Bool(false))),
        ("No", Ok(Value::Bool(false))),
        ("null", Ok(Value::Null)),
        ("o", Err("malformed variable \"v\" value: \"o\"")),
        ("1.5 ", Err("malformed variable \"v\" value: \"1.5 \"")),
        ("1e400", Err("malformed variable \"v\" value: \"1e400\"")),
        (
            "99999999999999999999",
            Err("value \"99999999999999999999\" is out of range for type bigint"),
        ),
        ("+", Err("invalid input syntax for type bigint: \"+\"")),
    ];
    for (text, want) in cases {
        let mut names = VarNames::new();
        let expr = parse(":v", &mut names).unwrap();
        let mut vars = Variables::new(&names);
        vars.set_text(names.lookup("v").unwrap(), text);
        let got = expr
            .eval(&mut EvalContext {
                vars: &mut vars,
                random: &mut PrngState::seeded(0),
                stack: &mut EvalStack::new(),
                script_index: 0,
                command_index: 0,
                debug_out: &mut std::io::sink(),
            })
            .map_err(|e| e.message(&names).unwrap_or_default());
        assert_eq!(got, want.map_err(str::to_owned), "{text:?}");
    }
}

#[test]
fn parse_errors_point_where_pgbench_does() {
    use ExprErrorKind::*;
    let cases: &[(&str, ExprErrorKind, Option<&str>, usize)] = &[
        ("1 +", SyntaxError, None, 3),
        ("1 2", SyntaxError, None, 2),
        ("(1", SyntaxError, None, 2),
        ("abc", UnexpectedFunctionName, Some("abc"), 2),
        ("Random(1)", UnexpectedNumberOfArguments, Some("random"), 8),
        ("least()", AtLeastOneArgumentExpected, Some("least"), 6),
        (
            "hash(1, 2, 3)",
            UnexpectedNumberOfArguments,
            Some("hash"),
            12,
        ),
        ("1 < 2 < 3", SyntaxError, None, 6),
        ("1 $ 2", UnexpectedCharacter, Some("$"), 2),
        ("1 2 $", UnexpectedCharacter, Some("$"), 4),
        ("'abc'", UnexpectedCharacter, Some("'"), 4),
        (
            "99999999999999999999",
            BigintConstantOverflow,
            Some("99999999999999999999"),
            19,
        ),
        ("1e400", DoubleConstantOverflow, Some("1e400"), 4),
        ("9223372036854775808", SyntaxError, None, 18),
        ("1 is 2", SyntaxError, None, 5),
        ("case when 1 then 2", SyntaxError, None, 18),
        ("1 +\n2", SyntaxError, None, 3),
    ];
    for &(text, kind, detail, column) in cases {
        let err = parse(text, &mut VarNames::new()).expect_err(text);
        assert_eq!(
            (err.kind, err.detail.as_deref(), err.column),
            (kind, detail, column),
            "{text:?}"
        );
    }
}

#[test]
fn continuation_lines_are_blanks() {
    assert_eq!(eval("1 +\\\n 2").0, Ok(Value::Int(3)));
    assert_eq!(eval("1 +\\\r\n 2").0, Ok(Value::Int(3)));
}

#[test]
fn deep_nesting_is_an_error_and_long_expressions_work() {
    let text = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    let err = parse(&text, &mut VarNames::new()).expect_err("too deep");
    assert_eq!(err.kind, ExprErrorKind::TooDeeplyNested);
    let nested = format!("{}1{}", "-(".repeat(120), ")".repeat(120));
    assert_eq!(eval(&nested).0, Ok(Value::Int(1)));
    assert_eq!(
        eval(&vec!["1"; 100_000].join(" + ")).0,
        Ok(Value::Int(100_000))
    );
    let case = format!("case {} else 0 end", "when false then 1 ".repeat(10_000));
    assert_eq!(eval(&case).0, Ok(Value::Int(0)));
}

#[test]
fn hash_and_permute_default_seed_is_a_variable() {
    let mut names = VarNames::new();
    parse("hash(1) + permute(1, 2)", &mut names).unwrap();
    assert!(names.lookup("default_seed").is_some());
}
