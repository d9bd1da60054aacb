"""Summary of the raw runs, and the text tables.

Ratios are B / A (pgbolt / pgbench by default): above 1 is better for tps,
below 1 is better for every cost (CPU, latency, connection time, memory, wall
time, syscalls). A pair's ratio compares a B run with the mean of the A runs
just before and after it (only the one before when the closing run is
missing); a workload's ratio for a metric is the median over its pairs.
Absolute figures are the median over a tool's runs.

The server-bound limit is the tps the server could reach if it had every
core of the machine and the client cost nothing: cores / server CPU per
transaction (equivalently, cores x wall / server CPU per transaction
transactions in a run's wall time). A tool's share of it is the transactions
it completed divided by that many, which reduces to server CPU / (cores x
wall): the fraction of the machine the server got while that tool drove it.
The rest went to the client and to idle time. It is computed per run over
the whole wall time (connection set-up included) and its median is shown.

IPIs/txn counts the machine's rescheduling interrupts (a CPU waking a task
on another CPU) per transaction. On a virtual machine each one is a VM
exit, and at `-j 2` it tells the two speeds apart: runs where every client
thread and its backends share a CPU make none and run fastest; runs that
wake across CPUs make a few hundredths per transaction and pay for it on
both sides (docs/performance.md, "Two speeds at -j 2").

Each goal also shows the range of its per-pair ratios and the machine's
noise for that metric: every A run that has A runs on both sides is compared
with their mean exactly as a B run is, and the largest distance of such an
A/A ratio from 1 is the noise. A goal met or missed by less than that is
marked "within noise": the same program would land on either side of it.
"""

from statistics import median

from .workloads import METRICS

RATIO_COLUMNS = ("tps", "client_cpu_per_txn", "server_cpu_per_txn", "latency_ms",
                 "conn_ms", "rss_kb", "wall_s", "syscalls_per_txn", "lag_p99_ms", "lag_max_ms")
# Metrics taken from one extra run per tool rather than from the pairs.
EXTRA_RUN_METRICS = ("syscalls_per_txn", "lag_p99_ms")


def _median(values):
    values = [v for v in values if v is not None]
    return median(values) if values else None


def _ratio(b, a):
    if a is None or b is None or a == 0:
        return None
    return b / a


def _bracket(a_runs, metric):
    """The mean of a metric over the A runs around one B run (None if any lacks it)."""
    values = [r.get(metric) for r in a_runs]
    if any(v is None for v in values):
        return None
    return sum(values) / len(values)


def _a_noise(runs, metric):
    """The largest distance from 1 of an A run's ratio to the mean of the A
    runs on either side of it (None with fewer than three A runs)."""
    a_runs = sorted((r for r in runs if r["side"] == "a" and "error" not in r),
                    key=lambda r: r["pair"])
    distances = []
    for before, run, after in zip(a_runs, a_runs[1:], a_runs[2:]):
        ratio = _ratio(run.get(metric), _bracket([before, after], metric))
        if ratio is not None:
            distances.append(abs(ratio - 1))
    return max(distances) if distances else None


def summarize_workload(workload, runs, syscall_runs, cores, lag_runs=()):
    runs = [r for r in runs if r["workload"] == workload.name]
    sys_runs = {r["side"]: r for r in syscall_runs if r["workload"] == workload.name}
    logged = [r for r in lag_runs if r["workload"] == workload.name and "error" not in r]
    out = {"workload": workload.name, "args": list(workload.args), "tools": {}, "ratios": {},
           "failures": {}, "goals": []}
    for side in ("a", "b"):
        mine = [r for r in runs if r["side"] == side]
        bad = [r for r in mine if "error" in r]
        if bad:
            out["failures"][side] = bad[0]["error"]
        ok = [r for r in mine if "error" not in r]
        figures = {m: _median([r.get(m) for r in ok]) for m in RATIO_COLUMNS}
        figures["syscalls_per_txn"] = sys_runs.get(side, {}).get("syscalls_per_txn")
        figures["lag_p99_ms"] = _median([r["lag_p99_ms"] for r in logged if r["side"] == side])
        figures["runs"] = len(ok)
        figures["ipis_per_txn"] = _median([r.get("ipis_per_txn") for r in ok])
        srv = figures["server_cpu_per_txn"]
        figures["server_limit_tps"] = cores / srv if srv else None
        figures["limit_share"] = _median(
            [r["server_cpu_s"] / (cores * r["wall_s"]) for r in ok if r.get("tps") is not None])
        out["tools"][side] = figures
    by_pair = {(r["side"], r["pair"]): r for r in runs if "error" not in r}
    whole = []
    for (side, pair), b in sorted(by_pair.items()):
        if side != "b" or ("a", pair) not in by_pair:
            continue
        a_runs = [by_pair[("a", pair)]]
        if ("a", pair + 1) in by_pair:
            a_runs.append(by_pair[("a", pair + 1)])
        whole.append((b, a_runs))
    for m in RATIO_COLUMNS:
        out["ratios"][m] = _median([_ratio(b.get(m), _bracket(a_runs, m)) for b, a_runs in whole])
    for m in EXTRA_RUN_METRICS:
        out["ratios"][m] = _ratio(out["tools"]["b"][m], out["tools"]["a"][m])
    out["pairs"] = len(whole)
    for goal in workload.goals:
        ratio = out["ratios"][goal.metric]
        pair_ratios = [r for r in (_ratio(b.get(goal.metric), _bracket(a_runs, goal.metric))
                                   for b, a_runs in whole) if r is not None]
        noise = None if goal.metric in EXTRA_RUN_METRICS else _a_noise(runs, goal.metric)
        out["goals"].append({
            "goal": goal.describe(), "metric": goal.metric, "op": goal.op,
            "target": goal.target, "ratio": ratio, "met": goal.met(ratio),
            "pair_range": [min(pair_ratios), max(pair_ratios)] if pair_ratios else None,
            "noise": noise,
            "within_noise": (None if ratio is None or noise is None
                             else abs(ratio - goal.target) < noise),
        })
    return out


# -- text rendering ------------------------------------------------------------

def _fmt(value, scale=1.0, digits=2):
    return "-" if value is None else f"{value * scale:.{digits}f}"


def _table(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def failure_text(summary, labels):
    if "a" in summary["failures"]:
        return f"{labels['a']} failed: {summary['failures']['a']}"
    if "b" in summary["failures"]:
        return f"{labels['b']} cannot run this workload yet: {summary['failures']['b']}"
    return None


def ratio_table(summaries, labels):
    header = ["workload", "pairs"] + [METRICS[m] for m in RATIO_COLUMNS]
    rows, notes = [], []
    for s in summaries:
        failure = failure_text(s, labels)
        if failure and s["pairs"] == 0:
            rows.append([s["workload"], "0"] + ["n/a"] * len(RATIO_COLUMNS))
            notes.append(f"{s['workload']}: {failure}")
            continue
        rows.append([s["workload"], str(s["pairs"])]
                    + [_fmt(s["ratios"][m]) for m in RATIO_COLUMNS])
        if failure:
            notes.append(f"{s['workload']}: {failure}")
    text = _table(header, rows)
    return text + ("\n" + "\n".join(notes) if notes else "")


def absolute_table(summaries, labels):
    header = ["workload", "tool", "runs", "tps", "client us/txn", "server us/txn", "latency ms",
              "conn ms", "RSS MB", "wall s", "server-bound tps", "share", "syscalls/txn",
              "IPIs/txn", "lag p99 ms", "lag max ms"]
    rows = []
    for s in summaries:
        for side in ("a", "b"):
            f = s["tools"][side]
            rows.append([s["workload"], labels[side], str(f["runs"]), _fmt(f["tps"], digits=0),
                         _fmt(f["client_cpu_per_txn"], 1e6, 1),
                         _fmt(f["server_cpu_per_txn"], 1e6, 1), _fmt(f["latency_ms"], digits=3),
                         _fmt(f["conn_ms"], digits=1), _fmt(f["rss_kb"], 1 / 1024, 1),
                         _fmt(f["wall_s"]), _fmt(f["server_limit_tps"], digits=0),
                         "-" if f["limit_share"] is None else f"{f['limit_share'] * 100:.0f}%",
                         _fmt(f["syscalls_per_txn"]), _fmt(f.get("ipis_per_txn"), digits=3),
                         _fmt(f.get("lag_p99_ms"), digits=3), _fmt(f.get("lag_max_ms"), digits=3)])
    return _table(header, rows)


def goals_table(summaries, labels):
    header = ["workload", "goal (B/A)", "measured", "pairs", "A/A noise", "status"]
    rows = []
    for s in summaries:
        for g in s["goals"]:
            if g["met"] is None:
                status = "n/a: " + ("see the failure above" if s["failures"] else "not measured")
            else:
                status = "met" if g["met"] else "UNMET"
                if g.get("within_noise"):
                    status += " (within noise)"
            measured = "-" if g["ratio"] is None else f"{g['ratio']:.3f}x"
            span = g.get("pair_range")
            pairs = "-" if span is None else f"{span[0]:.2f}-{span[1]:.2f}"
            noise = "-" if g.get("noise") is None else f"+/-{g['noise']:.2f}"
            rows.append([s["workload"], g["goal"], measured, pairs, noise, status])
    return _table(header, rows)


def render(summaries, labels, context):
    parts = [
        f"A = {labels['a']}: {context['tools']['a']['path']} ({context['tools']['a']['version']})",
        f"B = {labels['b']}: {context['tools']['b']['path']} ({context['tools']['b']['version']})",
        f"server: PostgreSQL {context['server_version']}; machine: {context['machine']['cores']} "
        f"cores, {context['machine']['cpu']}; {context['settings']['pairs']} pairs of "
        f"{context['settings']['seconds']} s, scale {context['settings']['scale']}",
        f"load average at start: {context['machine']['loadavg_start']}; at end: "
        f"{context['machine'].get('loadavg_end', 'unknown')}"
        + (f"; syscalls counted with {context['syscall_method']}"
           if context.get("syscall_method") else ""),
        "",
        "Ratios B/A, median of per-pair ratios (tps: higher is better; all others: lower is "
        "better)",
        ratio_table(summaries, labels),
        "",
        "Medians per tool (server-bound tps = cores / server CPU per transaction; "
        "share = server CPU / (cores x wall), the part of that limit the tool reached)",
        absolute_table(summaries, labels),
        "",
        "Goals",
        goals_table(summaries, labels),
    ]
    return "\n".join(parts)
