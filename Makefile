# The two set-up commands: `make demo` and `make test`. Both install what they
# need on a Debian/Ubuntu machine (as root) before doing anything else.

CARGO ?= cargo
CLIPPY = $(CARGO) clippy --workspace --all-targets -- -D warnings
.PHONY: demo test deps build check fuzz

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --release

demo: build
	@bash scripts/demo.sh

check:
	$(CARGO) fmt --all -- --check
	$(CLIPPY)

# The whole suite: formatting, clippy, the Rust tests (unit, integration
# against throwaway servers and the real pgbench) and the bench harness's own
# unit tests. TMPDIR must be reachable by the postgres OS user when running as
# root. scripts/test-suite builds the tests with clippy's lints (--lint: the
# same lints as `make check`, while compiling) and runs the test binaries
# TEST_LANES at a time (see docs/testing.md).
TEST_LANES ?= 2
test: deps
	$(CARGO) fmt --all -- --check
	TMPDIR=/tmp CARGO=$(CARGO) python3 scripts/test-suite --lanes $(TEST_LANES) --lint
	python3 -m unittest discover -s bench -q

# `make bench`: builds pgbolt in release mode, then compares it with pgbench on
# a throwaway server (see docs/performance.md). Pass options through BENCH_ARGS,
# e.g. make bench BENCH_ARGS="--pairs 5 --workloads select-prepared,tpcb".
.PHONY: bench
BENCH_ARGS ?=
bench: deps
	$(CARGO) build --release
	python3 -m unittest discover -s bench -q
	python3 bench/compare --json bench/results/latest.json $(BENCH_ARGS)

# Property-based fuzzing of every parser of outside input (see
# tests/fuzz/robust_fuzz.rs) and of the result-file readers of --render,
# --compare and --merge (tests/fuzz/results_fuzz.rs), many more cases than
# `make test` runs; raise FUZZ_CASES for a longer hunt.
FUZZ_CASES ?= 100000
fuzz:
	PGBOLT_FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release --test fuzz
