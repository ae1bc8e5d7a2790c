#!/usr/bin/env bash
# Coverage-guided fuzzing of fixscope's parsers on stable Rust: libFuzzer (libfuzzer-sys)
# with the SanitizerCoverage instrumentation rustc exposes as stable codegen flags
# (-Cpasses=sancov-module + LLVM options) - the same instrumentation cargo-fuzz uses, minus
# AddressSanitizer (nightly only; our targets are safe Rust, where overflow checks and
# debug assertions are what catches mistakes). Why this way: docs/reliability.md.
#
#   scripts/fuzz.sh [TARGET...]     default: every target, FUZZ_SECONDS (45) each
#
# New corpus entries go to target/fuzz/corpus/<target> (not committed); a crash is written
# to target/fuzz/artifacts/<target>/ and ends the run with exit code 1: copy it to
# fuzz/regressions/<target>/ with the fix, and `make test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-45}
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(pcap decode reassembly fix record socket_record tls soupbin_ouch sofh_ilink3
    moldudp64_itch mdp3)

SANCOV=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    --cfg fuzzing
    -Cdebug-assertions
    -Coverflow-checks
)
# libfuzzer-sys compiles libFuzzer (C++): clang++ (installed with clang) serves if c++ is absent.
command -v c++ >/dev/null 2>&1 || export CXX=clang++
bins=()
for t in "${TARGETS[@]}"; do bins+=(--bin "fuzz_$t"); done
# --target keeps the instrumentation off build scripts and proc macros (as cargo-fuzz does);
# a target dir of its own keeps it out of the ordinary build's cache.
# No LTO for the fuzz binaries: five thin-LTO links cost minutes and find nothing more.
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    RUSTFLAGS="${SANCOV[*]}" cargo build --release -p fixscope-fuzz --features libfuzzer \
    "${bins[@]}" --target "$TRIPLE" --target-dir target/fuzz

status=0
for t in "${TARGETS[@]}"; do
    corpus=target/fuzz/corpus/$t
    artifacts=target/fuzz/artifacts/$t/
    mkdir -p "$corpus" "$artifacts"
    echo "fuzz: $t for ${FUZZ_SECONDS}s"
    # -rss_limit_mb/-timeout: a target that needs 2 GB or 10 s on one input is a finding.
    if ! "target/fuzz/$TRIPLE/release/fuzz_$t" "$corpus" "fuzz/seeds/$t" \
        -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$artifacts" -print_final_stats=1 2>&1 |
        grep -E '^(#[0-9]+.*(DONE|INITED)|stat::|==[0-9]+==|SUMMARY|artifact|thread .* panicked)'; then
        :
    fi
    if [ -n "$(ls -A "$artifacts")" ]; then
        echo "fuzz: $t FOUND A CRASH: $(ls "$artifacts")" >&2
        status=1
    fi
done
exit $status
