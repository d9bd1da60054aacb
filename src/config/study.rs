//! What a study asks for, parsed from `--sweep`, `--slo` and friends with
//! no side effects. Errors are the reason a value is refused, for the
//! command line to put after the option's name.

/// The option swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Clients,
    Threads,
    Rate,
}

impl Dimension {
    /// The word on the command line and in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Clients => "clients",
            Dimension::Threads => "threads",
            Dimension::Rate => "rate",
        }
    }
}

/// The values a sweep takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Given, in the order given.
    List(Vec<f64>),
    /// Doubling from 1 until a stopping rule says enough.
    Auto,
}

/// `--sweep=DIMENSION:VALUES`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub dimension: Dimension,
    pub values: Values,
}

/// The most steps a list may have, so that a typing slip
/// (`1..100000`) is refused instead of run for a week.
pub const MAX_STEPS: usize = 1000;

/// Parses `clients:1,2,4`, `clients:1..64*2`, `rate:100..500+100`,
/// `clients:auto`.
pub fn parse_sweep(text: &str) -> Result<Sweep, String> {
    let (name, values) = text
        .split_once(':')
        .ok_or("expected DIMENSION:VALUES, such as clients:1,2,4,8")?;
    let dimension = match name {
        "clients" => Dimension::Clients,
        "threads" => Dimension::Threads,
        "rate" => Dimension::Rate,
        _ => {
            return Err(format!(
                "unknown dimension \"{name}\" (expected clients, threads or rate)"
            ))
        }
    };
    if values == "auto" {
        if dimension != Dimension::Clients {
            return Err("auto sweeps clients only".into());
        }
        return Ok(Sweep {
            dimension,
            values: Values::Auto,
        });
    }
    let mut list = Vec::new();
    for item in values.split(',') {
        match item.split_once("..") {
            Some((from, rest)) => expand_range(from, rest, &mut list)?,
            None => list.push(number(item)?),
        }
        if list.len() > MAX_STEPS {
            return Err(format!("more than {MAX_STEPS} steps"));
        }
    }
    for &value in &list {
        if dimension != Dimension::Rate && (value.fract() != 0.0 || value > f64::from(i32::MAX)) {
            return Err(format!("{} must be whole numbers", dimension.name()));
        }
    }
    Ok(Sweep {
        dimension,
        values: Values::List(list),
    })
}

/// `FROM..TO*FACTOR`, `FROM..TO+STEP` or `FROM..TO` (step 1).
fn expand_range(from: &str, rest: &str, list: &mut Vec<f64>) -> Result<(), String> {
    let from = number(from)?;
    let (to, next): (f64, Box<dyn Fn(f64) -> f64>) =
        if let Some((to, factor)) = rest.split_once('*') {
            let factor = number(factor)?;
            if factor <= 1.0 {
                return Err("a range's factor must be above 1".into());
            }
            (number(to)?, Box::new(move |v| v * factor))
        } else if let Some((to, step)) = rest.split_once('+') {
            let step = number(step)?;
            (number(to)?, Box::new(move |v| v + step))
        } else {
            (number(rest)?, Box::new(|v| v + 1.0))
        };
    if to < from {
        return Err("a range must not end below its start".into());
    }
    let mut value = from;
    while value <= to * (1.0 + 1e-12) {
        list.push(value);
        if list.len() > MAX_STEPS {
            return Err(format!("more than {MAX_STEPS} steps"));
        }
        value = next(value);
    }
    Ok(())
}

fn number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("\"{text}\" is not a positive number")),
    }
}

/// One latency objective: a percentile below a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// As written, `p99.9`.
    pub name: String,
    /// 0.999 for `p99.9`.
    pub quantile: f64,
    pub limit_ms: f64,
}

impl std::fmt::Display for Slo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}<{}ms", self.name, self.limit_ms)
    }
}

/// Parses `p99<10ms`, `p50<2ms,p99.9<50ms`; units ms, us and s.
pub fn parse_slo(text: &str) -> Result<Vec<Slo>, String> {
    text.split(',').map(parse_condition).collect()
}

fn parse_condition(text: &str) -> Result<Slo, String> {
    let wanted = "expected pNN<LIMIT with a unit, such as p99<10ms";
    let (name, limit) = text.split_once('<').ok_or(wanted)?;
    let percent: f64 = name
        .strip_prefix('p')
        .and_then(|p| p.parse().ok())
        .filter(|p: &f64| *p > 0.0 && *p < 100.0)
        .ok_or_else(|| format!("\"{name}\" is not a percentile such as p99 or p99.9"))?;
    let (digits, scale) = if let Some(d) = limit.strip_suffix("ms") {
        (d, 1.0)
    } else if let Some(d) = limit.strip_suffix("us") {
        (d, 0.001)
    } else if let Some(d) = limit.strip_suffix('s') {
        (d, 1000.0)
    } else {
        return Err(wanted.into());
    };
    Ok(Slo {
        name: name.to_owned(),
        quantile: percent / 100.0,
        limit_ms: number(digits)? * scale,
    })
}

/// What happens between steps besides pgbench's own vacuum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// pgbench's vacuum only.
    Vacuum,
    /// A `CHECKPOINT` after it, so that no step pays for an earlier
    /// step's dirty pages.
    Checkpoint,
}

/// Parses `--sweep-reset`.
pub fn parse_reset(text: &str) -> Result<Reset, String> {
    match text {
        "vacuum" => Ok(Reset::Vacuum),
        "checkpoint" => Ok(Reset::Checkpoint),
        _ => Err("expected vacuum or checkpoint".into()),
    }
}

/// The order of the values in each pass of `--repeat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// As given, then reversed, and so on.
    Alternate,
    /// A new permutation for every pass, drawn from the seed.
    Shuffle,
}

impl Order {
    /// The word on the command line and in the result file.
    pub fn name(self) -> &'static str {
        match self {
            Order::Alternate => "alternate",
            Order::Shuffle => "shuffle",
        }
    }
}

/// Parses `--repeat-order`.
pub fn parse_order(text: &str) -> Result<Order, String> {
    match text {
        "alternate" => Ok(Order::Alternate),
        "shuffle" => Ok(Order::Shuffle),
        _ => Err("expected alternate or shuffle".into()),
    }
}

/// Everything a study was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    pub sweep: Sweep,
    /// Times each step is measured.
    pub repeat: u32,
    /// The order of the values in the passes.
    pub order: Order,
    pub reset: Reset,
    pub slo: Vec<Slo>,
    /// `-j` as given, which caps each step's threads.
    pub jobs: Option<u32>,
}

impl Study {
    /// The most clients a step of a list sweep opens (`None` for `auto`,
    /// whose last step is not known in advance).
    pub fn largest_clients(&self) -> Option<u32> {
        match (&self.sweep.dimension, &self.sweep.values) {
            (Dimension::Clients, Values::List(values)) => values
                .iter()
                .copied()
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                .map(|v| v as u32),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Vec<f64> {
        match parse_sweep(text).unwrap().values {
            Values::List(v) => v,
            Values::Auto => panic!("auto"),
        }
    }

    #[test]
    fn lists_and_ranges_expand() {
        assert_eq!(list("clients:1,2,4,8"), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(
            list("clients:1..64*2"),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        );
        assert_eq!(list("clients:1..10*3"), [1.0, 3.0, 9.0]);
        assert_eq!(list("threads:1..4"), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(list("rate:100..300+100,500"), [100.0, 200.0, 300.0, 500.0]);
        assert_eq!(list("rate:2.5"), [2.5]);
        assert_eq!(parse_sweep("clients:auto").unwrap().values, Values::Auto);
    }

    #[test]
    fn bad_sweeps_say_why() {
        for (text, reason) in [
            ("clients", "expected DIMENSION:VALUES"),
            ("scale:1,2", "unknown dimension \"scale\""),
            ("clients:1,x", "\"x\" is not a positive number"),
            ("clients:0,1", "\"0\" is not a positive number"),
            ("clients:1.5", "clients must be whole numbers"),
            ("clients:8..1", "must not end below its start"),
            ("clients:1..8*1", "factor must be above 1"),
            ("clients:1..100000", "more than 1000 steps"),
            ("rate:auto", "auto sweeps clients only"),
        ] {
            let err = parse_sweep(text).unwrap_err();
            assert!(err.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn slos_parse_with_their_units() {
        let slo = parse_slo("p99<10ms,p99.9<2s,p50<500us").unwrap();
        let got: Vec<(f64, f64)> = slo.iter().map(|s| (s.quantile, s.limit_ms)).collect();
        for ((q, limit), (want_q, want_limit)) in
            got.into_iter()
                .zip([(0.99, 10.0), (0.999, 2000.0), (0.5, 0.5)])
        {
            assert!(
                (q - want_q).abs() < 1e-12 && limit == want_limit,
                "{q} {limit}"
            );
        }
        assert_eq!(slo[1].to_string(), "p99.9<2000ms");
        for bad in ["p99>10ms", "q99<10ms", "p100<1ms", "p99<10", "p99<-1ms"] {
            assert!(parse_slo(bad).is_err(), "{bad}");
        }
    }
}
