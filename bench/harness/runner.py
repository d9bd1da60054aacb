"""Runs one client process and measures it.

Client CPU and peak RSS come from the rusage `wait4` returns for that one
child: user + system time of all its threads (and of any process it waited
for), and the largest resident set it reached. Nothing else on the machine is
counted. Wall time is from spawn to reap.

Syscalls are counted in a separate, untimed run (`--syscalls`), because any
tracer slows the traced process down: with `perf stat -e
raw_syscalls:sys_enter` (a kernel tracepoint counter, cheap, follows threads
and children) where perf can open that event, otherwise with `strace -f -c`.
"""

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

from .server import HarnessError, apt_install

# Under -C the report gives tps "including reconnection times" and an
# "average connection time" per connection.
TPS = re.compile(r"^tps = ([0-9.]+) \((?:without initial connection time|"
                 r"including reconnection times)\)", re.M)
TXNS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.M)
CONN = re.compile(r"^(?:initial|average) connection time = ([0-9.]+) ms", re.M)
LAG = re.compile(r"^rate limit schedule lag: avg [0-9.]+ \(max ([0-9.]+)\) ms", re.M)


def last_lines(text, n=3):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def _sample_peak_rss(pid, stop, peak):
    """Keeps in peak[0] the highest VmHWM (peak resident set of the process
    since its exec, in kB) seen every 10 ms until `stop` is set."""
    path = f"/proc/{pid}/status"
    while not stop.wait(0.01):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0] or 0, int(line.split()[1]))
                        break
        except (OSError, ValueError):
            return


def spawn_measured(argv, env, timeout=None, peak_rss=None):
    """Runs argv; returns (exit code, stdout, stderr, rusage, wall seconds).

    A child still running after `timeout` seconds is killed and reported as
    timed out; if the harness is interrupted while waiting, the child is
    killed first. With a one-element list `peak_rss`, the child's peak
    resident set is sampled into it: the rusage's `ru_maxrss` cannot be used,
    as it includes the harness's own Python image, which the child carries
    until its exec.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env,
                                    stdin=subprocess.DEVNULL)
        except OSError as e:
            return 127, "", f"cannot start {argv[0]}: {e}", None, 0.0
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        stop = threading.Event()
        sampler = None
        if peak_rss is not None:
            sampler = threading.Thread(target=_sample_peak_rss, args=(proc.pid, stop, peak_rss),
                                       daemon=True)
            sampler.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
            stop.set()
            if sampler:
                sampler.join()
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if timeout and wall >= timeout and proc.returncode < 0:
            stderr += f"\n(killed by the harness: still running after {timeout:.0f} s)"
        return proc.returncode, out.read().decode(errors="replace"), stderr, usage, wall


def parse_report(stdout):
    """The figures of a pgbench-style report; missing ones are None."""
    def grab(rx, conv=float):
        m = rx.search(stdout)
        return conv(m.group(1)) if m else None
    return {
        "tps": grab(TPS),
        "transactions": grab(TXNS, int),
        "latency_ms": grab(LATENCY),
        "conn_ms": grab(CONN),
        "lag_max_ms": grab(LAG),
    }


def rescheduling_interrupts(path="/proc/interrupts"):
    """The machine's rescheduling interrupts so far (the IPIs one CPU sends
    another to run a task it woke), over all CPUs; None when not reported."""
    try:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] == "RES:":
                    return sum(int(v) for v in fields[1:] if v.isdigit())
    except OSError:
        pass
    return None


def measure(argv, server, env, timeout):
    """One measured run: the record with every raw figure, or an error."""
    if not server.wait_quiet():
        raise HarnessError("the server still has client backends from an earlier step")
    server_before = server.cpu_seconds()
    ipis_before = rescheduling_interrupts()
    peak_rss = [None]
    code, stdout, stderr, usage, wall = spawn_measured(argv, env, timeout, peak_rss)
    ipis_after = rescheduling_interrupts()
    quiet = server.wait_quiet()
    server_cpu = server.cpu_seconds() - server_before
    rec = {
        "argv": argv,
        "exit_code": code,
        "wall_s": wall,
        "client_user_s": usage.ru_utime if usage else None,
        "client_sys_s": usage.ru_stime if usage else None,
        "client_cpu_s": (usage.ru_utime + usage.ru_stime) if usage else None,
        "rss_kb": peak_rss[0],
        "server_cpu_s": server_cpu,
        "resched_ipis": (None if ipis_before is None or ipis_after is None
                         else ipis_after - ipis_before),
        "server_quiet_after": quiet,
        "stdout": stdout,
        "stderr": stderr,
    }
    rec.update(parse_report(stdout))
    if code != 0:
        rec["error"] = last_lines(stderr or stdout)
    if not quiet:
        rec["warning"] = "client backends outlived the run; server CPU may be undercounted"
    return rec


def derive(rec, kind):
    """Adds the per-transaction figures of a successful run record."""
    if kind != "run" or "error" in rec:
        return rec
    txns = rec.get("transactions")
    if txns == 0:
        rec["error"] = ("the run completed no transactions (connecting all clients may take "
                        "longer than -T)")
    elif txns is None or rec["tps"] is None:
        rec["error"] = "no transaction count or tps line in the output: " + last_lines(
            rec["stdout"])
    else:
        rec["client_cpu_per_txn"] = rec["client_cpu_s"] / txns
        rec["server_cpu_per_txn"] = rec["server_cpu_s"] / txns
        if rec.get("resched_ipis") is not None:
            rec["ipis_per_txn"] = rec["resched_ipis"] / txns
    return rec


# -- schedule lag from transaction logs ----------------------------------------

def percentile(values, fraction):
    """The nearest-rank percentile of a sorted list (None when empty)."""
    if not values:
        return None
    rank = max(1, -(-len(values) * fraction // 1))
    return values[int(rank) - 1]


def lag_from_logs(paths):
    """p99 and maximum of the schedule lag, in ms, over the transactions in
    per-transaction logs written under -R (`-l`): the lag in microseconds is
    the seventh field. Skipped and failed transactions (no latency) have no
    lag and are left out. (None, None) when no transaction was logged."""
    lags = []
    for path in paths:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 7 and fields[2].isdigit():
                    lags.append(int(fields[6]))
    lags.sort()
    if not lags:
        return None, None
    return percentile(lags, 0.99) / 1000, lags[-1] / 1000


def lag_run(argv, env, timeout):
    """Runs argv once more with a per-transaction log; (p99 ms, max ms, error)."""
    with tempfile.TemporaryDirectory(prefix="pgbolt-bench-lag-") as logs:
        prefix = os.path.join(logs, "lag")
        logged = [argv[0], "-l", "--log-prefix", prefix, *argv[1:]]
        code, stdout, stderr, _, _ = spawn_measured(logged, env, timeout)
        if code != 0:
            return None, None, last_lines(stderr or stdout)
        p99, worst = lag_from_logs([os.path.join(logs, n) for n in sorted(os.listdir(logs))])
        if p99 is None:
            return None, None, "the log holds no transaction"
        return p99, worst, None


# -- syscall counting ---------------------------------------------------------

def syscall_method():
    """'perf' when perf can count the syscall tracepoint here, else 'strace'."""
    perf = shutil.which("perf")
    if perf:
        probe = subprocess.run([perf, "stat", "-x,", "-e", "raw_syscalls:sys_enter", "--", "true"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and "raw_syscalls:sys_enter" in probe.stderr \
                and "<not" not in probe.stderr:
            return "perf"
    if not shutil.which("strace"):
        apt_install(["strace"], "--syscalls needs perf or strace")
    return "strace"


def count_syscalls(method, argv, env, timeout):
    """Runs argv under the counter; (syscalls, transactions, error)."""
    with tempfile.NamedTemporaryFile(suffix=".txt") as counts:
        if method == "perf":
            traced = ["perf", "stat", "-x,", "-o", counts.name, "-e", "raw_syscalls:sys_enter",
                      "--", *argv]
        else:
            traced = ["strace", "-f", "-c", "-o", counts.name, "--", *argv]
        code, stdout, stderr, _, _ = spawn_measured(traced, env, timeout)
        if code != 0:
            return None, None, last_lines(stderr or stdout)
        txns = parse_report(stdout)["transactions"]
        with open(counts.name) as f:
            text = f.read()
    total = None
    for line in text.splitlines():
        fields = line.split(",") if method == "perf" else line.split()
        if method == "perf" and len(fields) > 2 and fields[2] == "raw_syscalls:sys_enter":
            total = int(fields[0]) if fields[0].isdigit() else None
        elif method == "strace" and fields and fields[-1] == "total":
            total = int(fields[3])
    if total is None:
        return None, txns, f"cannot read the {method} counts: " + last_lines(text)
    return total, txns, None
