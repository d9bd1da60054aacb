# The two set-up commands: `make demo` and `make test`. Both install what they
# need on a Debian/Ubuntu machine (as root) before doing anything else.

CARGO ?= cargo
PG_BINDIR := $(shell ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

.PHONY: demo test deps build check fuzz

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --release

demo: build
	@bash scripts/demo.sh

check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test: deps check
	$(CARGO) test --workspace

# Property-based fuzzing of every parser of outside input (see
# tests/robust_fuzz.rs), many more cases than `make test` runs; raise
# FUZZ_CASES for a longer hunt.
FUZZ_CASES ?= 100000
fuzz:
	PGBOLT_FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release --test robust_fuzz --test robust_fakeserver
