#!/usr/bin/env bash
# The demonstration of `make demo`: a short benchmark on a throwaway
# PostgreSQL server that pgbolt starts, loads (scale 10), measures and
# removes again. Nothing on the machine is configured or left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
# When run as root the server runs as the `postgres` OS user, which must be
# able to reach the temporary directory.
export TMPDIR=/tmp
set -x
target/release/pgbolt --temp-instance -c 8 -j 2 -T 10 -P 2
