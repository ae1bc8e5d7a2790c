#!/usr/bin/env bash
# Simulator throughput: can one core of the exchange take >= 300,000 orders/s on loopback?
# The exchange is pinned to CPU 1, the client to CPU 0; each run sends open-loop at RATE for
# SECS seconds and reports the client's achieved rate, how many orders were acked and
# filled, and the exchange's CPU time (user+sys) per order.
#   scripts/bench-sim.sh [RATE] [SECS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-300000}
SECS=${2:-5}
RUNS=${3:-3}
cargo build --release -q --bin fixscope
BIN=${CARGO_TARGET_DIR:-target}/release/fixscope
PORT=$((20000 + RANDOM % 20000))
echo "# sim throughput: rate=$RATE/s secs=$SECS runs=$RUNS; $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-4s %12s %10s %10s %14s %12s\n" run achieved acked filled exch_cpu_s ns/order
for run in $(seq "$RUNS"); do
    taskset -c 1 "$BIN" sim exchange --listen "127.0.0.1:$PORT" --duration $((SECS + 4)) 2>/dev/null &
    EX=$!
    trap 'kill $EX 2>/dev/null || true' EXIT
    sleep 0.5
    OUT=$(taskset -c 0 "$BIN" sim client --connect "127.0.0.1:$PORT" --rate "$RATE" --duration "$SECS" --pad 100)
    # CPU time of the exchange so far (utime + stime, clock ticks).
    TICKS=$(awk '{print $14 + $15}' "/proc/$EX/stat")
    kill -TERM "$EX" 2>/dev/null || true
    wait "$EX" 2>/dev/null || true
    HZ=$(getconf CLK_TCK)
    ACHIEVED=$(echo "$OUT" | sed -n 's/.* = \([0-9.]*\)\/s achieved.*/\1/p')
    SENT=$(echo "$OUT" | sed -n 's/.*sent \([0-9]*\) requests.*/\1/p')
    ACKS=$(echo "$OUT" | sed -n 's/.*responses: \([0-9]*\) acks.*/\1/p')
    FILLED=$(echo "$OUT" | sed -n 's/.* acks, \([0-9]*\) filled.*/\1/p')
    CPU=$(awk -v t="$TICKS" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
    NS=$(awk -v t="$TICKS" -v hz="$HZ" -v n="$SENT" 'BEGIN { printf "%.0f", t * 1e9 / hz / n }')
    printf "%-4s %12s %10s %10s %14s %12s\n" "$run" "$ACHIEVED" "$ACKS" "$FILLED" "$CPU" "$NS"
    PORT=$((PORT + 1))
done
