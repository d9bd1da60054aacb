"""A throwaway PgBouncer in front of the comparison's server.

The `pooler-*` workloads run both tools through it, to compare how they open
thousands of connections against a listener with a short accept queue:
pgbouncer's default `listen_backlog` (128) is kept on purpose, as a new user
would have it. It pools in transaction mode and listens on a Unix socket in
its own temporary directory and on 127.0.0.1 (a free port), so a workload
chooses the socket or TCP.

Run as root, it runs as the OS user `postgres` (pgbouncer refuses root)
through `setpriv`, which keeps the harness's raised limit on open files:
`runuser` opens a PAM session that resets it to 1,024, too few for
thousands of clients. Its server connections close once idle for a second
(`server_idle_timeout`), so the harness's wait for a server without client
backends ends soon after each run.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

from .server import HarnessError

PGBOUNCER = "/usr/sbin/pgbouncer"
MAX_CLIENT_CONN = 12000
POOL_SIZE = 20
START_TIMEOUT_S = 20


def ini_text(root, server_socket_dir, server_port, port):
    """pgbouncer.ini for a bouncer in `root` in front of the server."""
    return (
        "[databases]\n"
        f"* = host={server_socket_dir} port={server_port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        f"unix_socket_dir = {root}\n"
        "auth_type = trust\n"
        f"auth_file = {os.path.join(root, 'users.txt')}\n"
        "pool_mode = transaction\n"
        f"max_client_conn = {MAX_CLIENT_CONN}\n"
        f"default_pool_size = {POOL_SIZE}\n"
        "server_idle_timeout = 1\n"
        "log_connections = 0\n"
        "log_disconnections = 0\n"
        f"logfile = {os.path.join(root, 'pgbouncer.log')}\n"
    )


def conn_args(root, port, tcp):
    """Connection options that reach the bouncer over TCP or its Unix socket."""
    return ["-h", "127.0.0.1" if tcp else root, "-p", str(port), "-U", "postgres"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bouncer:
    """A running throwaway pgbouncer; use as a context manager."""

    def __init__(self, server):
        self.server = server
        self.root = None
        self.port = None
        self.proc = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _start(self):
        if not os.path.exists(PGBOUNCER):
            raise HarnessError(f"{PGBOUNCER} is missing: the pooler-* workloads need Debian's "
                               "pgbouncer (apt-get install pgbouncer)")
        self.root = tempfile.mkdtemp(prefix="pgbolt-bench-pgbouncer-")
        self.port = free_port()
        ini = os.path.join(self.root, "pgbouncer.ini")
        with open(ini, "w") as f:
            f.write(ini_text(self.root, self.server.root, self.server.port, self.port))
        with open(os.path.join(self.root, "users.txt"), "w") as f:
            f.write('"postgres" ""\n')
        argv = [PGBOUNCER, ini]
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            for path in [self.root, *(os.path.join(self.root, n) for n in os.listdir(self.root))]:
                os.chown(path, pw.pw_uid, pw.pw_gid)
            argv = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups",
                    *argv]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        path = os.path.join(self.root, f".s.PGSQL.{self.port}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise HarnessError(f"pgbouncer did not start:\n{self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self, lines=20):
        try:
            with open(os.path.join(self.root, "pgbouncer.log")) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no pgbouncer log)"

    def conn_args(self, tcp):
        return conn_args(self.root, self.port, tcp)

    def stop(self):
        """Stops pgbouncer and removes its directory; safe to call twice."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
