#!/usr/bin/env bash
# The cost of `--breakdown`'s hooks for BENCHMARKS.md 4e (needs root).
#
#   sudo scripts/bench-breakdown.sh                       # RATES="10000 100000", RUNS=3
#   sudo RATES=10000 RUNS=5 RUN_S=8 scripts/bench-breakdown.sh
#
# Per rate and run: `fixscope sim exchange` + `sim client --rate R` (4 sessions, 300-byte
# orders) on lo, with the breakdown_cost example attached to lo watching the exchange's
# port, alternately without and with --breakdown. It drains both rings through
# poll_captured and prints BPF_ENABLE_STATS run_time_ns/run_cnt of every program it loaded
# and its own CPU (sum_exec_runtime of its threads). Everything started here is killed by
# PID on exit. Results: $BENCH_DIR/breakdown-*.txt and a table on stdout.
set -euo pipefail

RATES=${RATES:-"10000 100000"}
RUNS=${RUNS:-3}
RUN_S=${RUN_S:-6}
PORT=${PORT:-29891}
PAD=${PAD:-130}
SESSIONS=${SESSIONS:-4}
BENCH_DIR=${BENCH_DIR:-/tmp/fixscope-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
FIXSCOPE=${FIXSCOPE:-$CARGO_TARGET_DIR/release/fixscope}
COST=$CARGO_TARGET_DIR/release/examples/breakdown_cost

(( EUID == 0 )) || { echo "needs root" >&2; exit 2; }
(( RUNS >= 1 && RUNS <= 20 )) || { echo "RUNS out of range" >&2; exit 2; }
mkdir -p "$BENCH_DIR"
PIDS=()
cleanup() {
    set +e
    local p
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null; done
    sleep 0.3
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cargo build --release -q -p fixscope-live --example breakdown_cost --manifest-path "$ROOT/Cargo.toml"
[[ -x $FIXSCOPE ]] || cargo build --release -q -p fixscope --manifest-path "$ROOT/Cargo.toml"

echo "| rate | breakdown | run | client achieved | consumer CPU | events | hook: runs, ns/run |"
echo "|---|---|---|---|---|---|---|"
for rate in $RATES; do
    for (( run = 1; run <= RUNS; run++ )); do
        for mode in off on; do
            out=$BENCH_DIR/breakdown-$rate-$mode-$run.txt
            "$FIXSCOPE" sim exchange --listen "127.0.0.1:$PORT" </dev/null >/dev/null 2>"$BENCH_DIR/exchange.err" &
            ex=$!; PIDS+=("$ex")
            for (( i = 0; i < 100; i++ )); do grep -q listening "$BENCH_DIR/exchange.err" && break; sleep 0.05; done
            arg=""; [[ $mode == on ]] && arg=breakdown
            "$COST" lo "$PORT" $((RUN_S + 3)) $arg >"$out" 2>"$out.err" &
            cost=$!; PIDS+=("$cost")
            for (( i = 0; i < 100; i++ )); do grep -qs READY "$out" && break; sleep 0.05; done
            "$FIXSCOPE" sim client --connect "127.0.0.1:$PORT" --sessions "$SESSIONS" --rate "$rate" \
                --duration "$RUN_S" --pad "$PAD" </dev/null >"$out.client" 2>&1
            wait "$cost"
            kill -TERM "$ex" 2>/dev/null; wait "$ex" 2>/dev/null || true
            achieved=$(grep -o '= [0-9]*/s achieved' "$out.client" | head -1 | awk '{print $2}')
            awk -v rate="$rate" -v mode="$mode" -v run="$run" -v s="$((RUN_S + 3))" -v ach="${achieved:-?}" '
                $1 == "prog" { hooks = hooks sprintf("%s %d, %.0f; ", $2, $3, ($3 ? $4 / $3 : 0)) }
                $1 == "cpu_ns" { cpu = $2 }
                $1 == "events" { ev = $2 }
                END { printf "| %d | %s | %d | %s | %.2f%% | %d | %s |\n", rate, mode, run, ach, cpu / (s * 1e9) * 100, ev, hooks }' "$out"
        done
    done
done
