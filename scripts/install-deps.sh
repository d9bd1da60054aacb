#!/usr/bin/env bash
# Installs the system packages pgbolt's demo and tests need, when missing:
# PostgreSQL's server binaries (initdb, pg_ctl, postgres) and pgbench, and
# pgbouncer for the pooler comparisons, ss (iproute2) for the failure-path
# tests. Uses apt-get, so it needs root on a
# Debian or Ubuntu machine; elsewhere it says what to install by hand.
set -euo pipefail

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
