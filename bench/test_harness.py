"""Tests of the comparison's arithmetic and parsing (no server needed).

Run with: python3 -m unittest discover -s bench
"""

import os
import tempfile
import unittest

from harness import pooler, report, runner, workloads
from harness.session import Session

PGBENCH_OUTPUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: prepared
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 8 s
number of transactions actually processed: 400000
number of failed transactions: 0 (0.000%)
latency average = 0.160 ms
initial connection time = 17.125 ms
tps = 50000.500000 (without initial connection time)
"""


def run(side, pair, tps, client_cpu=1.0, workload="select-prepared", **extra):
    rec = {"workload": workload, "side": side, "pair": pair, "tps": tps, "transactions": 1000,
           "latency_ms": 1.0, "conn_ms": 10.0, "rss_kb": 1000, "wall_s": 8.0,
           "client_cpu_s": client_cpu, "server_cpu_s": 4.0,
           "client_cpu_per_txn": client_cpu / 1000, "server_cpu_per_txn": 4.0 / 1000}
    rec.update(extra)
    return rec


class ParseReport(unittest.TestCase):
    def test_reads_every_figure_of_a_pgbench_report(self):
        self.assertEqual(runner.parse_report(PGBENCH_OUTPUT), {
            "tps": 50000.5, "transactions": 400000, "latency_ms": 0.160, "conn_ms": 17.125,
            "lag_max_ms": None})

    def test_reads_the_report_of_a_connection_per_transaction(self):
        text = PGBENCH_OUTPUT.replace(
            "initial connection time = 17.125 ms\ntps = 50000.500000 (without initial connection "
            "time)", "average connection time = 0.142 ms\ntps = 12429.5 (including reconnection "
            "times)")
        self.assertEqual(runner.parse_report(text), {
            "tps": 12429.5, "transactions": 400000, "latency_ms": 0.160, "conn_ms": 0.142,
            "lag_max_ms": None})

    def test_missing_lines_are_none(self):
        self.assertEqual(runner.parse_report("pgbolt: error: not supported yet\n"),
                         {"tps": None, "transactions": None, "latency_ms": None, "conn_ms": None,
                          "lag_max_ms": None})

    def test_reads_the_maximum_schedule_lag_under_a_rate(self):
        text = PGBENCH_OUTPUT.replace(
            "latency average = 0.160 ms\n",
            "latency average = 0.160 ms\nrate limit schedule lag: avg 0.051 (max 1.234) ms\n")
        self.assertEqual(runner.parse_report(text)["lag_max_ms"], 1.234)

    def test_a_run_without_transactions_is_an_error(self):
        rec = {"stdout": "", "tps": None, "transactions": 0}
        self.assertIn("no transactions", runner.derive(rec, "run")["error"])

    def test_a_run_without_a_tps_line_is_an_error(self):
        rec = {"stdout": "something else", "tps": None, "transactions": None}
        self.assertIn("something else", runner.derive(rec, "run")["error"])


    def test_rescheduling_interrupts_are_summed_over_cpus(self):
        import os
        import tempfile
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("           CPU0       CPU1\n"
                    "LOC:    5299540    5492823   Local timer interrupts\n"
                    "RES:   18144666   19003314   Rescheduling interrupts\n")
        try:
            self.assertEqual(runner.rescheduling_interrupts(f.name), 18144666 + 19003314)
        finally:
            os.unlink(f.name)
        self.assertIsNone(runner.rescheduling_interrupts("/nonexistent/interrupts"))

    def test_peak_rss_is_the_childs_own(self):
        import os
        import sys
        peak = [None]
        code, *_ = runner.spawn_measured(
            [sys.executable, "-c", "import time; b = bytearray(40_000_000); time.sleep(0.3)"],
            dict(os.environ), 30, peak)
        self.assertEqual(code, 0)
        self.assertGreater(peak[0], 40_000)

    def test_ipis_per_transaction(self):
        rec = {"stdout": "", "tps": 10.0, "transactions": 1000, "client_cpu_s": 1.0,
               "server_cpu_s": 2.0, "resched_ipis": 40}
        self.assertEqual(runner.derive(rec, "run")["ipis_per_txn"], 0.04)


class Summary(unittest.TestCase):
    W = workloads.BY_NAME["select-prepared"]

    def test_each_b_run_is_compared_with_the_mean_of_its_neighbouring_a_runs(self):
        # A drifts up linearly 100, 200, 300, 400; B equals A's trend exactly.
        runs = [run("a", 0, 100), run("b", 0, 150), run("a", 1, 200), run("b", 1, 250),
                run("a", 2, 300), run("b", 2, 350), run("a", 3, 400)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertEqual(s["pairs"], 3)
        self.assertAlmostEqual(s["ratios"]["tps"], 1.0)

    def test_median_of_the_per_pair_ratios(self):
        runs = [run("a", 0, 100), run("b", 0, 300), run("a", 1, 100), run("b", 1, 110),
                run("a", 2, 100), run("b", 2, 120), run("a", 3, 100)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertAlmostEqual(s["ratios"]["tps"], 1.2)

    def test_without_a_closing_run_the_a_run_before_is_used(self):
        runs = [run("a", 0, 100), run("b", 0, 150)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertAlmostEqual(s["ratios"]["tps"], 1.5)

    def test_server_bound_limit_and_share(self):
        # 4 ms of server CPU per transaction on 2 cores: at most 500 tps.
        # 4 s of server CPU in 8 s of wall on 2 cores: a quarter of the machine.
        runs = [run("a", 0, 100), run("b", 0, 100)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertAlmostEqual(s["tools"]["a"]["server_limit_tps"], 500)
        self.assertAlmostEqual(s["tools"]["a"]["limit_share"], 0.25)

    def test_goals_are_met_or_not_on_the_ratio(self):
        runs = [run("a", 0, 100, client_cpu=1.0), run("b", 0, 120, client_cpu=0.5)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertEqual([(g["goal"], g["met"]) for g in s["goals"]],
                         [("tps >= 1.15x", True), ("client CPU/txn <= 0.60x", True)])

    def test_goals_show_their_pair_range_and_the_noise_of_the_a_runs(self):
        # A runs 100, 110, 100, 90: the second lies 1.10x from its
        # neighbours' mean, the third 1.0x: noise 0.10. B's pair ratios are
        # 1.2/1.05, 1.2/1.05... a median of 1.12, within 0.10 of 1.15.
        runs = [run("a", 0, 100), run("b", 0, 126), run("a", 1, 110), run("b", 1, 118),
                run("a", 2, 100), run("b", 2, 106), run("a", 3, 90)]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        tps = s["goals"][0]
        self.assertAlmostEqual(tps["noise"], 0.10)
        self.assertAlmostEqual(tps["pair_range"][0], 106 / 95)
        self.assertAlmostEqual(tps["pair_range"][1], 126 / 105)
        self.assertFalse(tps["met"])
        self.assertTrue(tps["within_noise"])
        table = report.goals_table([s], {"a": "pgbench", "b": "pgbolt"})
        self.assertIn("+/-0.10", table)
        self.assertIn("UNMET (within noise)", table)

    def test_a_failing_tool_b_gives_a_row_saying_so(self):
        error = "pgbolt: error: running a benchmark is not supported yet"
        runs = [run("a", 0, 100),
                {"workload": "select-prepared", "side": "b", "pair": 0, "error": error}]
        s = report.summarize_workload(self.W, runs, [], cores=2)
        self.assertEqual(s["pairs"], 0)
        self.assertIsNone(s["goals"][0]["met"])
        table = report.ratio_table([s], {"a": "pgbench", "b": "pgbolt"})
        self.assertIn("select-prepared: pgbolt cannot run this workload yet: pgbolt: error: "
                      "running a benchmark is not supported yet", table)


class ScheduleLag(unittest.TestCase):
    W = workloads.BY_NAME["rate-5k-c8"]

    def test_rate_workloads_are_throttled_and_the_others_not(self):
        self.assertTrue(self.W.throttled)
        self.assertEqual(self.W.args, ("-S", "-R", "5000", "-c", "8", "-j", "1"))
        self.assertFalse(workloads.BY_NAME["select-prepared"].throttled)

    def test_p99_and_maximum_come_from_the_seventh_field_of_the_logs(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for n, lags in enumerate((range(1, 51), range(51, 101))):
                path = os.path.join(d, f"lag.{n}")
                with open(path, "w") as f:
                    for i, lag in enumerate(lags):
                        f.write(f"{n} {i} 120 0 1764255000 {i} {lag * 1000}\n")
                    f.write(f"{n} 99 skipped 0 1764255001 5 900000\n")
                paths.append(path)
            self.assertEqual(runner.lag_from_logs(paths), (99.0, 100.0))
            self.assertEqual(runner.lag_from_logs([]), (None, None))

    def test_nearest_rank_percentile(self):
        self.assertEqual(runner.percentile([1, 2, 3], 0.99), 3)
        self.assertEqual(runner.percentile(list(range(1, 201)), 0.99), 198)
        self.assertIsNone(runner.percentile([], 0.99))

    def test_lag_goals_use_the_logged_runs_and_the_pairs(self):
        runs = [run("a", 0, 100, client_cpu=1.0, workload=self.W.name, lag_max_ms=2.0),
                run("b", 0, 100, client_cpu=0.7, workload=self.W.name, lag_max_ms=1.0),
                run("a", 1, 100, client_cpu=1.0, workload=self.W.name, lag_max_ms=2.0)]
        logged = [{"workload": self.W.name, "side": "a", "lag_p99_ms": 0.5},
                  {"workload": self.W.name, "side": "b", "lag_p99_ms": 0.6},
                  {"workload": self.W.name, "side": "a", "lag_p99_ms": 0.4},
                  {"workload": self.W.name, "side": "b", "lag_p99_ms": 0.5},
                  {"workload": self.W.name, "side": "a", "lag_p99_ms": 0.6},
                  {"workload": self.W.name, "side": "b", "error": "exit 2"}]
        s = report.summarize_workload(self.W, runs, [], 2, logged)
        goals = {g["metric"]: g for g in s["goals"]}
        self.assertTrue(goals["client_cpu_per_txn"]["met"])
        # Medians over each tool's logged runs: 0.55 against 0.5.
        self.assertAlmostEqual(goals["lag_p99_ms"]["ratio"], 1.1)
        self.assertFalse(goals["lag_p99_ms"]["met"])
        self.assertIsNone(goals["lag_p99_ms"]["noise"])
        self.assertAlmostEqual(goals["lag_max_ms"]["ratio"], 0.5)
        self.assertTrue(goals["lag_max_ms"]["met"])


class Selection(unittest.TestCase):
    def test_canonical_order_keeps_init_last(self):
        chosen = workloads.select("init-50,tpcb,select-prepared")
        self.assertEqual([w.name for w in chosen], ["select-prepared", "tpcb", "init-50"])

    def test_unknown_workload_is_named(self):
        with self.assertRaisesRegex(ValueError, "unknown workload nope"):
            workloads.select("nope")

    def test_pipeline_script_sends_ten_selects_in_one_pipeline(self):
        lines = workloads.PIPELINE_SCRIPT.splitlines()
        start, end = lines.index("\\startpipeline"), lines.index("\\endpipeline")
        self.assertEqual(len([l for l in lines[start:end] if l.startswith("SELECT")]), 10)


class Pooler(unittest.TestCase):
    class FakeServer:
        root, port = "/srv/pg", 5432

        def conn_args(self):
            return ["-h", self.root, "-p", "5432", "-U", "postgres"]

    class FakeBouncer:
        def conn_args(self, tcp):
            return pooler.conn_args("/tmp/bouncer", 6400, tcp)

    def argv(self, name):
        session = Session(self.FakeServer(), {"a": ("pgbench", "/bin/pgbench")}, 1, 8, 10,
                          None, 0, pooler=self.FakeBouncer())
        return session.argv("a", workloads.BY_NAME[name], None)

    def test_pooler_workloads_reach_the_bouncer_by_socket_or_tcp(self):
        self.assertEqual(self.argv("pooler-400")[-7:],
                         ["-h", "/tmp/bouncer", "-p", "6400", "-U", "postgres", "postgres"])
        self.assertIn("127.0.0.1", self.argv("pooler-4000-tcp"))
        self.assertIn("/srv/pg", self.argv("select-1000"))

    def test_the_clients_of_each_pooler_workload(self):
        counts = {w.name: w.args[w.args.index("-c") + 1]
                  for w in workloads.WORKLOADS if w.pooler}
        self.assertEqual(counts["pooler-10000"], "10000")
        self.assertEqual(counts["pooler-10000-tcp"], "10000")
        self.assertIn("-C", workloads.BY_NAME["pooler-connect-1000"].args)

    def test_a_baseline_workload_runs_tool_b_on_both_sides(self):
        session = Session(self.FakeServer(), {"a": ("pgbench", "/bin/pgbench"),
                                              "b": ("pgbolt", "/bin/pgbolt")}, 1, 8, 10, None, 0)
        w = workloads.BY_NAME["app-pool-1000"]
        a, b = session.argv("a", w, None), session.argv("b", w, None)
        self.assertEqual((a[0], b[0]), ("/bin/pgbolt", "/bin/pgbolt"))
        self.assertEqual(a[a.index("-c") + 1], "16")
        self.assertNotIn("--pool-size=16", a)
        self.assertIn("--pool-size=16", b)

    def test_the_bouncer_keeps_the_default_accept_queue_and_takes_every_client(self):
        ini = pooler.ini_text("/tmp/b", "/srv/pg", 5432, 6400)
        self.assertNotIn("listen_backlog", ini)
        self.assertIn("pool_mode = transaction", ini)
        self.assertIn(f"max_client_conn = {pooler.MAX_CLIENT_CONN}", ini)
        self.assertGreater(pooler.MAX_CLIENT_CONN, 10000)
        self.assertIn("* = host=/srv/pg port=5432", ini)


if __name__ == "__main__":
    unittest.main()
