//! The generators table printed after a merged report: each generator's
//! clients, threads, commits, window and CPU, and which are missing.

use crate::model::run::RunResult;

/// Generator indexes as a comma-separated list.
pub fn list(indexes: &[u32]) -> String {
    indexes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The generators table printed after the merged report.
pub fn render(merged: &RunResult, missing: &[u32], count: u32) -> String {
    let mut out = format!(
        "generators: {} of {count}{}\n",
        merged.generators.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (missing: {})", list(missing))
        }
    );
    out.push_str("generator  clients  threads   committed          tps  window start (UTC)        length (s)  cpu (s)  saturated  file\n");
    for g in &merged.generators {
        out.push_str(&format!(
            "{:>9}  {:>7}  {:>7}  {:>10}  {:>11.3}  {}  {:>10.3}  {:>7}  {:>9}  {}\n",
            g.index,
            g.clients,
            g.threads,
            g.committed,
            g.tps,
            crate::wallclock::utc(g.window_start_us),
            (g.window_end_us - g.window_start_us) as f64 / 1e6,
            g.cpu_s.map_or("-".to_owned(), |s| format!("{s:.2}")),
            g.saturated.as_deref().unwrap_or("no"),
            g.source
        ));
    }
    out
}
