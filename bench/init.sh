#!/bin/sh
# Wall time of `pgbench -i` against pgbolt's `-i` on one throwaway server,
# alternating runs, and the ratio of the medians (goal: pgbolt <= 0.67x).
#
# usage: bench/init.sh [SCALE] [ROUNDS] [OPTION...]
#   OPTIONs go to both (e.g. --partitions=4 --partition-method=hash).
# PGBOLT_INIT: the pgbolt command to time (default: the `init` example,
#   built here; once the binary dispatches -i: "target/release/pgbolt -i").
# PGBIN: PostgreSQL programs (default /usr/lib/postgresql/15/bin).
# FSYNC: fsync setting of the throwaway server (default off).
set -eu

SCALE=${1:-50}
ROUNDS=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
FSYNC=${FSYNC:-off}
cd "$(dirname "$0")/.."

if [ -z "${PGBOLT_INIT:-}" ]; then
    cargo build --release --quiet --example init
    PGBOLT_INIT="target/release/examples/init -i"
fi

DIR=$(mktemp -d /tmp/pgbolt-bench-init.XXXXXX)
PORT=$((20000 + $$ % 10000))
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ "$(id -u)" = 0 ]; then chown postgres "$DIR"; fi
cleanup() {
    as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

as_pg "$PGBIN/initdb" -D "$DIR/data" -A trust >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w \
    -o "-k $DIR -c listen_addresses='' -p $PORT -c fsync=$FSYNC" start >/dev/null

export PGHOST="$DIR" PGPORT="$PORT"
if [ "$(id -u)" = 0 ]; then export PGUSER=postgres; fi
"$PGBIN/psql" -X -q -d postgres -c "create database bench_pgbench" -c "create database bench_pgbolt"

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$DIR/pgbench.times"
: > "$DIR/pgbolt.times"
i=1
while [ "$i" -le "$ROUNDS" ]; do
    t0=$(now)
    "$PGBIN/pgbench" -i -s "$SCALE" "$@" bench_pgbench 2>"$DIR/pgbench.err" || { cat "$DIR/pgbench.err"; exit 1; }
    t1=$(now)
    $PGBOLT_INIT -s "$SCALE" "$@" bench_pgbolt 2>"$DIR/pgbolt.err" || { cat "$DIR/pgbolt.err"; exit 1; }
    t2=$(now)
    a=$(elapsed "$t0" "$t1")
    b=$(elapsed "$t1" "$t2")
    echo "$a" >> "$DIR/pgbench.times"
    echo "$b" >> "$DIR/pgbolt.times"
    printf 'round %d: pgbench %.2f s, pgbolt %.2f s\n' "$i" "$a" "$b"
    printf '  pgbench: %s\n  pgbolt:  %s\n' "$(tail -n 1 "$DIR/pgbench.err")" "$(tail -n 1 "$DIR/pgbolt.err")"
    i=$((i + 1))
done

A=$(median < "$DIR/pgbench.times")
B=$(median < "$DIR/pgbolt.times")
printf 'scale %s %s, median of %s: pgbench %.2f s, pgbolt %.2f s, ratio %.2f\n' \
    "$SCALE" "$*" "$ROUNDS" "$A" "$B" "$(echo "$B / $A" | bc -l)"
