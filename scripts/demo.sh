#!/usr/bin/env bash
# The demonstration run of `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "pgbolt is built: target/release/pgbolt"
echo "The demonstration benchmark needs the run engine and --temp-instance, which are not supported yet;" >&2
echo "no benchmark was run." >&2
exit 1
