"""The workloads of the comparison and the targets pgbolt is held to.

Each workload is one pgbench command line (minus connection options, `-n` and
`-T`, which the runner adds) plus the goals the issue sets for it. Goals are
stated on the ratio pgbolt / pgbench of one metric, so they are independent of
the machine.
"""

from dataclasses import dataclass, field

# The script of the `pipeline` workload: ten point selects sent as one pipeline.
PIPELINE_SCRIPT = "".join(
    [f"\\set aid{i} random(1, 100000 * :scale)\n" for i in range(1, 11)]
    + ["\\startpipeline\n"]
    + [f"SELECT abalance FROM pgbench_accounts WHERE aid = :aid{i};\n" for i in range(1, 11)]
    + ["\\endpipeline\n"]
)

# Metric keys, in table order, with their column titles.
METRICS = {
    "tps": "tps",
    "client_cpu_per_txn": "client CPU/txn",
    "server_cpu_per_txn": "server CPU/txn",
    "latency_ms": "latency",
    "conn_ms": "conn time",
    "rss_kb": "peak RSS",
    "wall_s": "wall",
    "syscalls_per_txn": "syscalls/txn",
    "lag_p99_ms": "lag p99",
    "lag_max_ms": "lag max",
}


@dataclass(frozen=True)
class Goal:
    """The ratio pgbolt / pgbench of `metric` must satisfy `op` `target`."""

    metric: str
    op: str
    target: float

    def met(self, ratio):
        if ratio is None:
            return None
        return ratio >= self.target if self.op == ">=" else ratio <= self.target

    def describe(self):
        return f"{METRICS[self.metric]} {self.op} {self.target:.2f}x"


@dataclass(frozen=True)
class Workload:
    name: str
    args: tuple
    goals: tuple
    # "run" for a timed benchmark run, "init" for a timed `-i`.
    kind: str = "run"
    # Settings applied with ALTER SYSTEM for this workload only.
    server_settings: dict = field(default_factory=dict)
    # The custom script file, when the workload has one.
    script: str = ""
    # Through the throwaway pgbouncer (harness/pooler.py): "unix" for its
    # socket, "tcp" for 127.0.0.1; "" connects to the server directly.
    pooler: str = ""
    # When set, side A is not the reference tool but tool B itself with
    # these arguments: a workload that holds a pgbolt mode to pgbolt's own
    # direct mode (the ratios are then B with `args` / B with `baseline`).
    baseline: tuple = ()

    @property
    def throttled(self):
        """A rate-limited run (`-R`): its schedule lag is measured too."""
        return self.kind == "run" and "-R" in self.args


# What the pooler workloads hold pgbolt to: connecting at least as fast as
# pgbench, running as fast, in no more memory.
POOLER_GOALS = (Goal("conn_ms", "<=", 1.0), Goal("tps", ">=", 1.0), Goal("rss_kb", "<=", 1.0))


# What the rate-limited workloads hold pgbolt to: a fifth less client CPU per
# transaction than pgbench at the same rate, and a schedule lag (how late a
# transaction starts after its scheduled time) no worse at its 99th
# percentile and at its maximum.
RATE_GOALS = (Goal("client_cpu_per_txn", "<=", 0.8), Goal("lag_p99_ms", "<=", 1.0),
              Goal("lag_max_ms", "<=", 1.0))


def rate_workload(rate, clients):
    """Select-only under `-R rate` with `clients` clients on one thread."""
    label = f"{rate // 1000}k" if rate % 1000 == 0 else str(rate)
    return Workload(f"rate-{label}-c{clients}",
                    ("-S", "-R", str(rate), "-c", str(clients), "-j", "1"), RATE_GOALS)


def pooler_workload(clients, pooler):
    """Select-only in simple mode through pgbouncer, with `clients` clients."""
    suffix = "" if pooler == "unix" else "-tcp"
    return Workload(f"pooler-{clients}{suffix}",
                    ("-S", "-M", "simple", "-c", str(clients), "-j", "2"),
                    POOLER_GOALS, pooler=pooler)


WORKLOADS = (
    Workload(
        "select-prepared",
        ("-S", "-M", "prepared", "-c", "8", "-j", "2"),
        (Goal("tps", ">=", 1.15), Goal("client_cpu_per_txn", "<=", 0.6)),
    ),
    Workload(
        "select-1thread",
        ("-S", "-M", "prepared", "-c", "8", "-j", "1"),
        (Goal("tps", ">=", 1.3),),
    ),
    Workload(
        "select-simple",
        ("-S", "-M", "simple", "-c", "8", "-j", "2"),
        (Goal("tps", ">=", 1.1),),
    ),
    Workload(
        "select-1000",
        ("-S", "-M", "prepared", "-c", "1000", "-j", "2"),
        (Goal("tps", ">=", 1.2), Goal("conn_ms", "<=", 0.3), Goal("rss_kb", "<=", 1.0)),
    ),
    Workload(
        "tpcb",
        ("-M", "prepared", "-c", "8", "-j", "2"),
        (Goal("tps", ">=", 1.05),),
        server_settings={"synchronous_commit": "off"},
    ),
    Workload(
        "pipeline",
        ("-M", "prepared", "-c", "8", "-j", "2"),
        (Goal("tps", ">=", 1.1),),
        script=PIPELINE_SCRIPT,
    ),
    Workload(
        "latency-1",
        ("-S", "-M", "prepared", "-c", "1", "-j", "1"),
        (Goal("latency_ms", "<=", 0.95),),
    ),
    *(rate_workload(rate, clients) for rate, clients in
      ((1000, 1), (5000, 1), (1000, 8), (5000, 8), (20000, 8), (5000, 64), (20000, 64))),
    *(pooler_workload(clients, pooler) for pooler in ("unix", "tcp")
      for clients in (400, 4000, 10000)),
    Workload(
        "pooler-connect-1000",
        ("-C", "-S", "-M", "simple", "-c", "1000", "-j", "2"),
        (Goal("tps", ">=", 1.0),),
        pooler="unix",
    ),
    # pgbolt's application-side pool against pgbolt's direct connections:
    # 1000 clients sharing 16 connections cost at most 1.1 times the CPU per
    # transaction of 16 clients with a connection each.
    Workload(
        "app-pool-1000",
        ("-S", "-M", "prepared", "-c", "1000", "-j", "2", "--pool-size=16"),
        (Goal("client_cpu_per_txn", "<=", 1.1),),
        baseline=("-S", "-M", "prepared", "-c", "16", "-j", "2"),
    ),
    # Always last: it leaves the database at scale 50.
    Workload("init-50", ("-i", "-s", "50"), (Goal("wall_s", "<=", 0.67),), kind="init"),
)

BY_NAME = {w.name: w for w in WORKLOADS}


def select(names):
    """The workloads named in `names` (comma-separated), in canonical order.

    Canonical order keeps `init-50` last, since it leaves the database at a
    different scale from the one the timed runs use.
    """
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        raise ValueError(
            f"unknown workload {', '.join(unknown)}; choose from {', '.join(BY_NAME)}"
        )
    return [w for w in WORKLOADS if w.name in wanted]
