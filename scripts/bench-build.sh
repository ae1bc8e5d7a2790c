# Shared by the bench scripts that build and snapshot their binaries (bench-live.sh,
# bench-tap.sh, bench-pcap-vs-tshark.sh; sourced, not run). Needs ROOT and BENCH_DIR. (The A/B
# scripts share bench-common.sh.)

# build_release PACKAGE_ARGS... : one `cargo build --release -q` per argument string,
# unless SKIP_BUILD is set (to rerun on binaries built before).
build_release() {
    [[ -n ${SKIP_BUILD:-} ]] && return 0
    echo "== building (release)" >&2
    local args
    for args in "$@"; do
        # shellcheck disable=SC2086 # each string is a list of cargo arguments
        (cd "$ROOT" && cargo build --release -q $args)
    done
}

# The commit measured: short hash, "-dirty" when tracked files differ from it.
source_rev() {
    local rev
    rev=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
    [[ -n $(cd "$ROOT" && git status --porcelain -uno 2>/dev/null) ]] && rev=$rev-dirty
    echo "$rev"
}

# snapshot BIN NAME: copies BIN to $BENCH_DIR/bin/NAME-PID and prints the copy's path, so
# a run uses one binary even if the tree changes (and cargo rebuilds) meanwhile.
snapshot() {
    mkdir -p "$BENCH_DIR/bin"
    cp "$1" "$BENCH_DIR/bin/$2-$$"
    echo "$BENCH_DIR/bin/$2-$$"
}

load1() { cut -d' ' -f1 /proc/loadavg; }
