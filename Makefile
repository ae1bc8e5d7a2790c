# fixscope — the two commands a newcomer needs:
#   make demo   installs what is missing, builds, and measures the built-in simulator live on lo
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
FIXSCOPE := target/release/fixscope

.PHONY: demo test deps build lint bench clean
.PHONY: soak

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --bin fixscope

demo: build
	$(FIXSCOPE) demo

test: deps
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace --no-fail-fast -- --test-threads=2

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench: deps
	$(CARGO) bench -p fixscope-core

clean:
	$(CARGO) clean

# Soak (not part of `make test`): fixscope live + the simulator at the highest rate this
# machine sustains for SOAK_MINUTES (default 10); RSS flat, no ring drop, every request
# accounted for. Figures: docs/reliability-lifecycle.md.
SOAK_MINUTES ?= 10
soak: deps
	scripts/soak.sh $(SOAK_MINUTES)
