# fixscope — the two commands a newcomer needs:
#   make demo   installs what is missing, builds, and measures the built-in simulator live on lo
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
FIXSCOPE := target/release/fixscope

.PHONY: demo test deps build lint bench clean fuzz fuzz-seeds soak

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --bin fixscope

# A newcomer's first build, within 2 minutes on 2 vCPUs: only the demo's packages
# (install-deps.sh --demo: a compiler, clang, libelf, libpcap), only what it runs (no
# `records` feature: Arrow and Parquet are half a full build) in a faster-building profile
# (Cargo.toml [profile.demo]). `make test` installs and builds everything else.
demo:
	@scripts/install-deps.sh --demo
	$(CARGO) build --profile demo --bin fixscope -p fixscope --no-default-features
	target/demo/fixscope demo

test: deps
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace --no-fail-fast -- --test-threads=2

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	# make demo's build (no default features) stays clean too.
	$(CARGO) clippy -p fixscope --bin fixscope --no-default-features -- -D warnings

# No files and no modules that use each other in a loop, in any crate, so that each layer
# can be read, tested and changed without the ones above it (the team's tool, beside the
# checkout in ../shared; CI has it). The core's layers are also a test
# (crates/fixscope-core/tests/layers.rs, in `make test`).
.PHONY: cycles
cycles:
	@test -f ../shared/tools/module-cycles.py || { echo "make cycles: ../shared/tools/module-cycles.py is missing (the team's shared folder beside the checkout; CI has it)" >&2; exit 1; }
	python3 ../shared/tools/module-cycles.py --max-circles 0 crates/*

# Coverage-guided fuzzing (libFuzzer on stable Rust), FUZZ_SECONDS (default 45) per target;
# `make fuzz FUZZ_TARGETS="fix pcap"` for some. Findings: docs/reliability.md.
fuzz: deps
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),45) scripts/fuzz.sh $(FUZZ_TARGETS)

# Rewrites the fuzz targets' committed seeds (fuzz/seeds/) from their generator.
fuzz-seeds:
	$(CARGO) run -p fixscope-fuzz --bin fuzz-seeds

bench: deps
	$(CARGO) bench -p fixscope-core

# FIX over TLS: `fixscope pcap --tls-keylog` on §2's 504 MB capture re-sent over TLS against
# the plaintext run, default plan and --threads 1 (BENCHMARKS.md §9). RUNS (5), SUITE
# (aes128; aes256 chacha tls12-aes128 tls12-aes256 tls12-chacha), BENCH_DIR
# (/tmp/fixscope-bench: ~1.1 GB of captures, kept for the next run).
.PHONY: bench-tls
bench-tls: deps
	scripts/bench-tls.sh

clean:
	$(CARGO) clean

# Soak (not part of `make test`): fixscope live + the simulator at the highest rate this
# machine sustains for SOAK_MINUTES (default 10); RSS flat, no ring drop, every request
# accounted for. Figures: docs/reliability.md.
SOAK_MINUTES ?= 10
soak: deps
	scripts/soak.sh $(SOAK_MINUTES)
# Boots the kernel matrix — Debian's 5.10, 6.1, 6.1 PREEMPT_RT, 6.12 and the newest 7.x,
# fetched into target/kernels without installing them — in QEMU VMs (virtme-ng, no KVM) and
# runs the verifier, probe, live and end-to-end tests inside; see docs/kernels.md.
# `make test-kernel KERNELS="5.10 7.x"` for some.
# ---- Shipping: one static binary to copy (no runtime dependency but the kernel) and a
# release archive: dist/fixscope-VERSION-x86_64-linux, dist/fixscope.debug, the .tar.gz,
# SHA256SUMS. Static glibc with libelf, zlib and a D-Bus-free libpcap built in
# (scripts/dist.sh).
.PHONY: dist
dist: deps
	scripts/dist.sh

# The static binary on its own (crates/fixscope/tests/dist_binary.rs): no library, debug
# info beside it, and in an empty root (unshare + chroot) `pcap` byte-identical to the
# dynamic build, `check`, `live -i lo` (after -Z) and `live --tap` counting every order of
# the simulator run outside, `--clickhouse` by a host name from the root's /etc/hosts; and
# `pcap --tls-keylog` on every TLS suite byte-identical to the dynamic build (tls_offline.rs).
# `make test-dist-kernels` runs it inside the kernel matrix VMs (5.10, 6.1, 6.12, 7.x).
.PHONY: test-dist test-dist-kernels
test-dist: dist
	FIXSCOPE_DIST_BIN=$(CURDIR)/$(DIST_BIN) \
		$(CARGO) test -p fixscope --test dist_binary -- --ignored --test-threads=1
	FIXSCOPE_DIST_BIN=$(CURDIR)/$(DIST_BIN) \
		$(CARGO) test -p fixscope --test tls_offline -- --ignored --exact \
		the_static_binary_decrypts_every_suite_as_the_dynamic_build
test-dist-kernels: dist
	FIXSCOPE_VM_PHASES=dist scripts/test-kernel.sh $(or $(KERNELS),5.10 6.1 6.12 7.x)

# The .deb under a real systemd, as a service runs in production: a Debian 12 root
# (mmdebstrap, Debian's kernel) booted in QEMU installs the package and runs fixscope@test
# against the simulator on lo: non-root with exactly its three capabilities, /metrics,
# journal, records read back by DuckDB, nothing left after stop, a drop-in without CAP_BPF
# failing with one line, purge clean. ~5 min the first time (the root is cached in
# target/service-vm), then ~2 min.
.PHONY: test-service
test-service: deb
	scripts/test-service.sh

.PHONY: test-kernel
test-kernel: deps
	scripts/test-kernel.sh $(KERNELS)

# ---- CI's verifier check (.ci/run), so that no change ships programs an older kernel
# refuses: every program in every configuration loaded (not attached) inside VMs of the
# oldest kernel we support, 5.10, and of 6.1 (~1-2 min each).
.PHONY: test-verifier
test-verifier: deps
	FIXSCOPE_VM_PHASES=verifier scripts/test-kernel.sh 5.10 6.1

# ---- Hardware time stamps: the vendors' own trailer captures (../shared/tap-samples, kept
# out of the repository by their licences; FIXSCOPE_TAP_SAMPLES=DIR points elsewhere).
# `make test` uses fixtures built from the same layouts instead.
.PHONY: test-tap-samples
test-tap-samples: deps
	$(CARGO) test -p fixscope-core --test tap_samples -- --ignored

# ---- Mirror ports: `live --tap` on a veth mirror, 40,000 orders at 4,000/s, beside eBPF
# and a tcpdump recording: no false alarm (docs/tap.md). About a minute; not in `make test`.
.PHONY: test-tap-long
test-tap-long: deps
	FIXSCOPE_TAP_ORDERS=40000 FIXSCOPE_TAP_RATE=4000 $(CARGO) test -p fixscope --test tap_e2e -- --exact --nocapture tap_agrees_with_ebpf_on_a_plain_mirror

# ---- Shipping: manual pages, completions and packages. FIXSCOPE_BIN is the binary they carry
# and are generated from: by default `make dist`'s static one (built here when missing), so
# the packages depend on nothing; FIXSCOPE_BIN=target/release/fixscope for a quick try. `make man` lays them out in packaging/stage (scripts/package-stage.sh);
# `make deb` and `make rpm` write dist/ (cargo-deb, cargo-generate-rpm: installed by
# `scripts/install-deps.sh --packaging`, not needed by `make test`); `make test-packages`
# runs lintian and rpm on them and installs and purges the .deb (root).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
DIST_BIN := dist/fixscope-$(VERSION)-x86_64-linux
FIXSCOPE_BIN ?= $(DIST_BIN)
.PHONY: fixscope-bin man deb rpm packages test-packages
fixscope-bin:
	@if [ "$(FIXSCOPE_BIN)" = "$(DIST_BIN)" ] && [ ! -x "$(DIST_BIN)" ]; then scripts/dist.sh; fi
	@if [ "$(FIXSCOPE_BIN)" = "$(or $(CARGO_TARGET_DIR),target)/release/fixscope" ]; then $(CARGO) build --release --bin fixscope; fi
man: fixscope-bin
	scripts/package-stage.sh "$(FIXSCOPE_BIN)" packaging/stage
deb: man
	@scripts/install-deps.sh --packaging
	mkdir -p dist && $(CARGO) deb -p fixscope --no-build --no-strip -o dist/
rpm: man
	@scripts/install-deps.sh --packaging
	mkdir -p dist && $(CARGO) generate-rpm -p crates/fixscope -o dist/
packages: deb rpm
test-packages: packages
	scripts/test-packages.sh
