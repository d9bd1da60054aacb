"""One comparison session: a server, an initial data set, and alternating runs.

The two tools run alternately, A B A B ... A, on the same server and data:
every B run is bracketed by an A run before and after it (a closing A run
ends each workload). Pair i is B run i with A runs i and i+1; its ratio for a
metric is B / the mean of the two A runs, which cancels any drift of the
machine that is linear over the three runs (other work on the machine
starting or stopping, page cache, CPU frequency, table growth under tpcb).
The summary takes the median of those per-pair ratios.

Before every run the harness does, identically for both tools, the
housekeeping pgbench would do itself without `-n` (for tpcb: truncate
pgbench_history, vacuum pgbench_branches and pgbench_tellers), then a
CHECKPOINT, so no run inherits dirty buffers from the other tool's run. Each
workload starts with a short unmeasured warm-up run of tool A.
"""

import os
import sys

from . import runner
from .server import HarnessError

DBNAME = "postgres"
# How long a client may run past its -T before the harness kills it; -i runs
# get a fixed budget.
GRACE_S = 300
INIT_TIMEOUT_S = 3600


def client_env():
    """The environment both tools get: ours without any PG* variable."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def tool_version(path):
    done = runner.spawn_measured([path, "--version"], client_env(), 30)
    text = (done[1] or done[2]).strip()
    return text.splitlines()[0] if text else f"(exit {done[0]}, no output)"


class Session:
    def __init__(self, server, tools, pairs, seconds, scale, syscalls, warmup, log=print,
                 pooler=None):
        self.server = server
        # The throwaway pgbouncer of the pooler-* workloads (harness/pooler.py).
        self.pooler = pooler
        self.warmup = warmup
        self.tools = tools  # {"a": (label, path), "b": (label, path)}
        self.pairs = pairs
        self.seconds = seconds
        self.scale = scale
        self.syscalls = syscalls  # None, "perf" or "strace"
        self.log = log
        self.runs = []
        self.syscall_runs = []
        self.lag_runs = []

    # -- set-up ----------------------------------------------------------

    def initialize(self, pgbench):
        """Creates the data set once with the reference pgbench, then vacuums."""
        self.log(f"initializing: pgbench -i -s {self.scale} ...")
        argv = [pgbench, "-i", "-s", str(self.scale), "-q", *self.server.conn_args(), DBNAME]
        code, out, err, _, _ = runner.spawn_measured(argv, client_env(), INIT_TIMEOUT_S)
        if code != 0:
            raise HarnessError(f"pgbench -i failed: {runner.last_lines(err or out, 10)}")
        self.server.sql("VACUUM ANALYZE")
        self.server.sql("CHECKPOINT")

    def _prepare(self, workload):
        if workload.name == "tpcb":
            self.server.sql("TRUNCATE pgbench_history")
            self.server.sql("VACUUM pgbench_branches")
            self.server.sql("VACUUM pgbench_tellers")
        self.server.sql("CHECKPOINT")

    def _settings(self, workload, apply):
        for key, value in workload.server_settings.items():
            if apply:
                self.server.sql(f"ALTER SYSTEM SET {key} = '{value}'")
            else:
                self.server.sql(f"ALTER SYSTEM RESET {key}")
        if workload.server_settings:
            self.server.sql("SELECT pg_reload_conf()")

    # -- runs ------------------------------------------------------------

    def timeout(self, workload):
        return self.seconds + GRACE_S if workload.kind == "run" else INIT_TIMEOUT_S

    def label(self, side, workload):
        """Who runs on `side`: tool B itself on side A of a baseline workload."""
        if side == "a" and workload.baseline:
            return f"{self.tools['b'][0]} baseline"
        return self.tools[side][0]

    def argv(self, side, workload, script_path):
        path = self.tools[side][1]
        args = list(workload.args)
        if side == "a" and workload.baseline:
            path, args = self.tools["b"][1], list(workload.baseline)
        if workload.kind == "run":
            args += ["-n", "-T", str(self.seconds)]
            if script_path:
                args += ["-f", script_path]
        if workload.pooler:
            if self.pooler is None:
                raise HarnessError(f"workload {workload.name} needs the throwaway pgbouncer")
            conn = self.pooler.conn_args(workload.pooler == "tcp")
        else:
            conn = self.server.conn_args()
        return [path, *args, *conn, DBNAME]

    def warm_up(self, workload, script_path):
        """One unmeasured run of the reference tool before a workload's pairs.

        The first run of a workload otherwise pays for first touches (pages of
        shared memory that 1000 backends map for the first time, cold caches,
        WAL segments that the first large -i creates rather than recycles)
        and the first run is always tool A's, which would favour tool B. For
        an -i workload the warm-up is one whole unmeasured initialization.
        """
        if self.warmup <= 0:
            return
        self._prepare(workload)
        argv = self.argv("a", workload, script_path)
        if workload.kind == "run":
            argv[argv.index("-T") + 1] = str(self.warmup)
        code, _, _, _, wall = runner.spawn_measured(argv, client_env(), self.timeout(workload))
        self.server.wait_quiet()
        self.log(f"  {workload.name} warm-up {self.label('a', workload)}: {wall:.1f} s, exit {code}")

    def run_workload(self, workload, script_path):
        """All pairs of one workload; stops early once a tool cannot run it."""
        self._settings(workload, True)
        try:
            self.warm_up(workload, script_path)
            for pair in range(self.pairs):
                failed = False
                for side in ("a", "b"):
                    rec = self._one_run(workload, script_path, side, pair)
                    failed = failed or "error" in rec
                if failed:
                    self.log(f"  {workload.name}: stopping after pair {pair + 1}: a tool failed")
                    break
            else:
                self._one_run(workload, script_path, "a", self.pairs)
                if workload.throttled:
                    for _ in range(self.pairs):
                        for side in ("a", "b"):
                            self._lag_run(workload, script_path, side)
                if self.syscalls and workload.kind == "run":
                    for side in ("a", "b"):
                        self._syscall_run(workload, script_path, side)
        finally:
            self._settings(workload, False)

    def _one_run(self, workload, script_path, side, pair):
        self._prepare(workload)
        label = self.label(side, workload)
        rec = runner.measure(self.argv(side, workload, script_path), self.server, client_env(),
                             self.timeout(workload))
        runner.derive(rec, workload.kind)
        rec.update(workload=workload.name, side=side, tool=label, pair=pair)
        self.runs.append(rec)
        step = f"pair {pair + 1}/{self.pairs}" if pair < self.pairs else "closing run"
        self.log(f"  {workload.name} {step} {label}: {brief(rec)}")
        return rec

    def _lag_run(self, workload, script_path, side):
        """A run with a per-transaction log, for the schedule lag's p99
        (pgbench reports only its average and maximum); as many per tool as
        there are pairs, alternating, after the measured runs, whose figures
        the log's cost per transaction would change."""
        self._prepare(workload)
        argv = self.argv(side, workload, script_path)
        p99, worst, error = runner.lag_run(argv, client_env(), self.timeout(workload))
        rec = {"workload": workload.name, "side": side, "tool": self.tools[side][0],
               "lag_p99_ms": p99, "lag_max_ms": worst}
        if error:
            rec["error"] = error
        self.lag_runs.append(rec)
        self.log(f"  {workload.name} logged run {rec['tool']}: "
                 + (f"FAILED: {error}" if error else f"lag p99 {p99:.3f} ms, max {worst:.3f} ms"))
        self.server.wait_quiet()

    def _syscall_run(self, workload, script_path, side):
        self._prepare(workload)
        argv = self.argv(side, workload, script_path)
        calls, txns, error = runner.count_syscalls(self.syscalls, argv, client_env(),
                                                   self.timeout(workload))
        rec = {"workload": workload.name, "side": side, "tool": self.label(side, workload),
               "method": self.syscalls, "syscalls": calls, "transactions": txns}
        if error:
            rec["error"] = error
        elif txns:
            rec["syscalls_per_txn"] = calls / txns
        self.syscall_runs.append(rec)
        self.log(f"  {workload.name} syscalls {rec['tool']}: "
                 f"{rec.get('syscalls_per_txn', rec.get('error'))}")
        self.server.wait_quiet()


def brief(rec):
    """One progress line for a run record."""
    if "error" in rec:
        return f"FAILED (exit {rec['exit_code']}): {rec['error']}"
    parts = [f"wall {rec['wall_s']:.2f} s"]
    if rec.get("tps") is not None:
        parts.insert(0, f"tps {rec['tps']:.0f}")
        parts.append(f"client {rec['client_cpu_per_txn'] * 1e6:.1f} us/txn")
        parts.append(f"server {rec['server_cpu_per_txn'] * 1e6:.1f} us/txn")
        if rec.get("ipis_per_txn") is not None:
            parts.append(f"IPIs {rec['ipis_per_txn']:.3f}/txn")
    else:
        parts.append(f"client CPU {rec['client_cpu_s']:.2f} s")
        parts.append(f"server CPU {rec['server_cpu_s']:.2f} s")
    if "warning" in rec:
        parts.append(f"warning: {rec['warning']}")
    return ", ".join(parts)


def progress(msg):
    print(msg, file=sys.stderr, flush=True)
