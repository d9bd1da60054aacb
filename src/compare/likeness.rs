//! Like with like: what differs between two runs besides their figures.
//!
//! Scripts are compared by their text's SHA-256 (and weight) when both
//! results record it, else by their commands' first lines; a difference
//! there refuses the comparison. Options that shape the workload (`-D`
//! variables among them, which a script reads as its input), the
//! server's version and its recorded settings are warnings: comparing
//! them is often the very point (a new `shared_buffers`, an upgrade), but
//! the reader must see them first.

use serde::{Deserialize, Serialize};

use crate::model::run::RunResult;

use crate::model::run::{RunLimit, ScriptInfo};

/// One thing that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// What differs (`scripts`, `clients`, `setting shared_buffers`, ...).
    pub what: String,
    pub baseline: String,
    pub candidate: String,
    /// Whether this difference refuses the comparison.
    pub refuses: bool,
}

/// Everything that differs between the runs, the scripts first.
pub fn differences(a: &RunResult, b: &RunResult) -> Vec<Difference> {
    let mut out = Vec::new();
    scripts(&a.options.scripts, &b.options.scripts, &mut out);
    let (oa, ob) = (&a.options, &b.options);
    let mut note = |what: &str, x: String, y: String| {
        if x != y {
            out.push(Difference {
                what: what.to_owned(),
                baseline: x,
                candidate: y,
                refuses: false,
            });
        }
    };
    note("scale", oa.scale.to_string(), ob.scale.to_string());
    note("partitioning", partitioning(a), partitioning(b));
    note("query mode", oa.query_mode.clone(), ob.query_mode.clone());
    note("clients", oa.clients.to_string(), ob.clients.to_string());
    note("threads", oa.threads.to_string(), ob.threads.to_string());
    note("length", limit(&oa.limit), limit(&ob.limit));
    note("rate", or_none(oa.rate), or_none(ob.rate));
    note(
        "warm-up",
        format!("{} s", oa.warmup_s),
        format!("{} s", ob.warmup_s),
    );
    note(
        "latency limit",
        or_none(oa.latency_limit_us.map(|us| us as f64 / 1000.0)),
        or_none(ob.latency_limit_us.map(|us| us as f64 / 1000.0)),
    );
    note(
        "connection per transaction (-C)",
        oa.connect_per_transaction.to_string(),
        ob.connect_per_transaction.to_string(),
    );
    note(
        "max tries",
        oa.max_tries.to_string(),
        ob.max_tries.to_string(),
    );
    note(
        "merged runs",
        a.merged_runs.to_string(),
        b.merged_runs.to_string(),
    );
    note("aborted", a.aborted.to_string(), b.aborted.to_string());
    note(
        "pool size (--pool-size)",
        oa.pool_size.map_or("none".to_owned(), |n| n.to_string()),
        ob.pool_size.map_or("none".to_owned(), |n| n.to_string()),
    );
    note(
        "continue on error",
        oa.continue_on_error.to_string(),
        ob.continue_on_error.to_string(),
    );
    let variables: std::collections::BTreeSet<&String> =
        oa.variables.keys().chain(ob.variables.keys()).collect();
    for name in variables {
        let get = |v: &std::collections::BTreeMap<String, String>| {
            v.get(name).cloned().unwrap_or_else(|| "not set".to_owned())
        };
        note(
            &format!("variable {name} (-D)"),
            get(&oa.variables),
            get(&ob.variables),
        );
    }
    let (ca, cb) = (&a.context, &b.context);
    let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_owned());
    note(
        "server version",
        version(&ca.server_version),
        version(&cb.server_version),
    );
    let names: std::collections::BTreeSet<&String> = ca
        .server_settings
        .keys()
        .chain(cb.server_settings.keys())
        .collect();
    for name in names {
        let get = |s: &std::collections::BTreeMap<String, String>| {
            s.get(name).cloned().unwrap_or_else(|| "unknown".to_owned())
        };
        note(
            &format!("setting {name}"),
            get(&ca.server_settings),
            get(&cb.server_settings),
        );
    }
    out
}

fn scripts(a: &[ScriptInfo], b: &[ScriptInfo], out: &mut Vec<Difference>) {
    let describe = |s: &[ScriptInfo]| {
        s.iter()
            .map(|s| format!("{}@{}", s.name, s.weight))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let same = a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.weight == y.weight
                && match (&x.sha256, &y.sha256) {
                    (Some(hx), Some(hy)) => hx == hy,
                    _ => x.commands == y.commands,
                }
        });
    if same {
        return;
    }
    let (mut da, mut db) = (describe(a), describe(b));
    if da == db {
        da.push_str(" (text differs)");
        db.push_str(" (text differs)");
    }
    out.push(Difference {
        what: "scripts".to_owned(),
        baseline: da,
        candidate: db,
        refuses: true,
    });
}

fn partitioning(r: &RunResult) -> String {
    match &r.options.partitioning {
        Some(p) => format!("{} partitions by {}", p.partitions, p.method),
        None => "none".to_owned(),
    }
}

fn limit(l: &RunLimit) -> String {
    match l {
        RunLimit::TransactionsPerClient(n) => format!("{n} transactions per client"),
        RunLimit::DurationSeconds(s) => format!("{s} s"),
    }
}

fn or_none(v: Option<f64>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| v.to_string())
}
