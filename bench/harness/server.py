"""A throwaway PostgreSQL server for the comparison, and its CPU accounting.

The server lives in a fresh temporary directory: data directory, log and Unix
socket all inside it, `listen_addresses = ''` so nothing else can reach it.
When the harness runs as root the directory is owned by, and the server runs
as, the OS user `postgres` (PostgreSQL refuses to run as root).

Server CPU is read from /proc, in clock ticks. The postmaster forks every
backend and reaps it when it exits, at which point the kernel adds the
backend's user and system time to the postmaster's `cutime`/`cstime`. So
the server's total CPU at a moment is

    postmaster utime + stime + cutime + cstime
    + for every live child: utime + stime + cutime + cstime

and the difference between two such readings is everything the server spent
in between: backends that came and went (connection start-up and teardown
included), background processes (WAL writer, checkpointer, autovacuum), and
the postmaster itself.

Two races are closed. A child reaped while the reading is being taken would
be counted twice or not at all, so the postmaster is read before and after
the scan of its children and the reading is retried when its reaped-children
time moved in between. And a backend still running after its client left
would have part of its work charged to the next run, so after every run the
harness waits until no client backend is left: none whose title shows a
client connection, none exiting (an exiting process has no command line any
more) and no zombie waiting to be reaped.
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")

SETTINGS = {
    "listen_addresses": "''",
    "max_connections": "1100",
    "shared_buffers": "1GB",
}


class HarnessError(Exception):
    """A failure of the harness itself (not of a tool under test)."""


def find_bindir():
    """The directory holding initdb, pg_ctl and postgres, or None."""
    candidates = []
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(os.path.dirname(os.path.realpath(initdb)))
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(out.stdout.strip())
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    versions.sort(key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0)
    candidates.extend(reversed(versions))
    for d in candidates:
        if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "postgres")):
            return d
    return None


def apt_install(packages, why):
    """Installs Debian packages, or raises a HarnessError saying what to do."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise HarnessError(
            f"{why}; install {' '.join(packages)} with your package manager and retry"
        )
    print(f"installing {' '.join(packages)} ({why}) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise HarnessError(f"{' '.join(cmd)} failed:\n{done.stderr.strip()}")


def ensure_bindir():
    bindir = find_bindir()
    if bindir:
        return bindir
    apt_install(["postgresql"], "no initdb found")
    # Debian's package starts a cluster of its own; the harness never uses it.
    if shutil.which("pg_lsclusters"):
        subprocess.run(
            "pg_lsclusters -h | while read v n _; do pg_ctlcluster $v $n stop; done",
            shell=True,
            capture_output=True,
        )
    bindir = find_bindir()
    if not bindir:
        raise HarnessError("postgresql was installed but initdb is still not found")
    return bindir


def read_stat(pid):
    """(state, ppid, own ticks, reaped children's ticks) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2 :].split()
    return rest[0], int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])


def children(ppid):
    """{pid: stat} of the live (or zombie) children of `ppid`."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = read_stat(entry)
            if st and st[1] == ppid:
                found[int(entry)] = st
    return found


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Server:
    """A running throwaway server; use as a context manager."""

    def __init__(self, bindir):
        self.bindir = bindir
        self.root = None
        self.data = None
        self.port = 5432
        self.pid = None
        self.as_postgres = os.geteuid() == 0

    # -- lifecycle ---------------------------------------------------------

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

    def _sudo(self, argv):
        return ["runuser", "-u", "postgres", "--", *argv] if self.as_postgres else argv

    def _run_server_cmd(self, argv, what):
        done = subprocess.run(self._sudo(argv), cwd=self.root, capture_output=True, text=True)
        if done.returncode != 0:
            raise HarnessError(f"{what} failed:\n{(done.stdout + done.stderr).strip()}")

    def _start(self):
        self.root = tempfile.mkdtemp(prefix="pgbolt-bench-")
        if self.as_postgres:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.data = os.path.join(self.root, "data")
        initdb = os.path.join(self.bindir, "initdb")
        self._run_server_cmd(
            [initdb, "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--locale=C", "--no-sync"],
            "initdb",
        )
        settings = dict(SETTINGS, unix_socket_directories=f"'{self.root}'", port=str(self.port))
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write("\n# pgbolt bench harness\n")
            for key, value in settings.items():
                conf.write(f"{key} = {value}\n")
        pg_ctl = os.path.join(self.bindir, "pg_ctl")
        log = os.path.join(self.root, "server.log")
        try:
            self._run_server_cmd([pg_ctl, "-D", self.data, "-l", log, "-w", "-t", "120", "start"],
                                 "pg_ctl start")
        except HarnessError as e:
            raise HarnessError(f"{e}\nserver log:\n{self.log_tail()}") from None
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())

    def log_tail(self, lines=20):
        try:
            with open(os.path.join(self.root, "server.log")) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no server log)"

    def stop(self):
        """Stops the server and removes its directory; safe to call twice."""
        if self.root is None:
            return
        if self.pid is not None:
            pg_ctl = os.path.join(self.bindir, "pg_ctl")
            done = subprocess.run(
                self._sudo([pg_ctl, "-D", self.data, "-m", "fast", "-w", "-t", "60", "stop"]),
                cwd=self.root, capture_output=True, text=True,
            )
            if done.returncode != 0:
                try:
                    os.kill(self.pid, 9)
                except ProcessLookupError:
                    pass
            self.pid = None
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    # -- access --------------------------------------------------------------

    def conn_args(self):
        """Connection options every client gets."""
        return ["-h", self.root, "-p", str(self.port), "-U", "postgres"]

    def sql(self, statement):
        psql = os.path.join(self.bindir, "psql")
        argv = [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", *self.conn_args(),
                "-d", "postgres", "-c", statement]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise HarnessError(f"psql -c {statement!r} failed:\n{done.stderr.strip()}")
        return done.stdout

    def version(self):
        return self.sql("SHOW server_version").strip().splitlines()[-1].strip()

    # -- CPU accounting ------------------------------------------------------

    def wait_quiet(self, timeout=60.0):
        """Waits until no client backend is left (see the module doc); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            busy = []
            for pid, st in children(self.pid).items():
                title = cmdline(pid)
                if st[0] == "Z" or not title.strip() or "[local]" in title:
                    busy.append(pid)
            if not busy:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def cpu_seconds(self):
        """Total CPU the server has used so far (see the module doc)."""
        for _ in range(100):
            before = read_stat(self.pid)
            if before is None:
                raise HarnessError(f"the server (pid {self.pid}) is gone:\n{self.log_tail()}")
            ticks = before[2] + before[3]
            for st in children(self.pid).values():
                ticks += st[2] + st[3]
            after = read_stat(self.pid)
            if after is not None and after[3] == before[3]:
                return ticks / CLK_TCK
            time.sleep(0.01)
        raise HarnessError("server CPU could not be read: children kept exiting during the reading")
