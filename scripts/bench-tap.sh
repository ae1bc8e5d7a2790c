#!/usr/bin/env bash
# `fixscope live --tap` on a mirror port vs `fixscope live` (eBPF) on the watched host, for
# BENCHMARKS.md §7 (needs root: network namespaces, tc).
#
#   sudo scripts/bench-tap.sh
#   sudo RATES="20000 50000 100000" RUNS=3 scripts/bench-tap.sh
#
# Namespaces created here (deleted on exit): A runs `fixscope sim exchange`, B the client,
# joined by a veth pair; tc on A's end mirrors its ingress and egress (u32 + mirred) into a
# veth whose peer is in M. Per rate and run, alternated: "tap" = `fixscope live --tap` in
# M on the mirror's end; "live" = `fixscope live` (eBPF) on A's end, the mirror still on
# (the same traffic and kernel work in both). Per run: the client's orders (sent,
# complete), fixscope's requests and matched, the capture's drops (tap: tap_drops +
# tap_interface_drops; live: kernel ring drops), fixscope's CPU (the scheduler's
# sum_exec_runtime over its threads, from when the client starts until it ends), FIX
# messages, ns of CPU per message. The highest rate with zero drops and every order matched
# is what §7 reports. Results: $BENCH_DIR/tap.tsv and a line per run on stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$ROOT/target/bench}
# shellcheck source=scripts/bench-build.sh
source "$ROOT/scripts/bench-build.sh"
RATES=${RATES:-"10000 50000 100000 150000"}
RUNS=${RUNS:-3}
RUN_S=${RUN_S:-5}
SESSIONS=${SESSIONS:-4}
PAD=${PAD:-130}
PORT=${PORT:-29878}
MODES=${MODES:-"tap live"}

[[ $(id -u) -eq 0 ]] || { echo "bench-tap: needs root" >&2; exit 1; }
mkdir -p "$BENCH_DIR"
build_release "-p fixscope --bin fixscope"
FIXSCOPE=$(snapshot "$ROOT/target/release/fixscope" fixscope)
W=$(mktemp -d)
PIDS=()
A=fxb24-$$-a; B=fxb24-$$-b; M=fxb24-$$-m
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    for n in $A $B $M; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$W"
}
trap cleanup EXIT
for n in $A $B $M; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip -n $A link add va type veth peer name vb netns $B
ip -n $A link add mira type veth peer name mirm netns $M
ip -n $A addr add 10.241.0.1/24 dev va
ip -n $B addr add 10.241.0.2/24 dev vb
for x in "$A va" "$B vb" "$A mira" "$M mirm"; do set -- $x; ip -n "$1" link set "$2" up; done
tc -n $A qdisc add dev va clsact
for hook in ingress egress; do
    tc -n $A filter add dev va $hook protocol all u32 match u32 0 0 action mirred egress mirror dev mira
done

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
stop_pid() {
    local p=$1 i
    kill -INT "$p" 2>/dev/null || true
    for (( i = 0; i < 200; i++ )); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
wait_for() { # FILE TEXT PID
    local i
    for (( i = 0; i < 200; i++ )); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.05
    done
    echo "bench-tap: no '$2' in $1: $(cat "$1")" >&2; return 1
}

TSV=$BENCH_DIR/tap.tsv
printf 'mode\trate\trun\tsent\tcomplete\trequests\tmatched\tmessages\tdrops\tcpu_s\twall_s\tcpu_pct\tns_per_msg\tbuild\n' >"$TSV"
echo "machine: $(nproc) vCPU, kernel $(uname -r), build $(source_rev)" >&2
for rate in $RATES; do
for (( run = 1; run <= RUNS; run++ )); do
for mode in $MODES; do
    ip netns exec $A "$FIXSCOPE" sim exchange --listen 10.241.0.1:$PORT </dev/null >"$W/ex.out" 2>"$W/ex.err" &
    EX=$!; PIDS+=("$EX"); wait_for "$W/ex.err" listening "$EX"
    if [[ $mode == tap ]]; then
        ip netns exec $M "$FIXSCOPE" live --tap -i mirm -p $PORT --json -r 0 </dev/null >"$W/fx.out" 2>"$W/fx.err" &
    else
        ip netns exec $A "$FIXSCOPE" live -i va -p $PORT --json -r 0 </dev/null >"$W/fx.out" 2>"$W/fx.err" &
    fi
    FX=$!; PIDS+=("$FX"); wait_for "$W/fx.err" watching "$FX"
    c0=$(cpu_ns "$FX"); t0=$(date +%s%N)
    ip netns exec $B "$FIXSCOPE" sim client --connect 10.241.0.1:$PORT --sessions "$SESSIONS" \
        --rate "$rate" --count $(( rate * RUN_S )) --pad "$PAD" </dev/null >"$W/cl.out" 2>"$W/cl.err" || true
    c1=$(cpu_ns "$FX"); t1=$(date +%s%N)
    sleep 1
    stop_pid "$FX"; stop_pid "$EX"
    cp "$W/fx.out" "$BENCH_DIR/tap-$mode-$rate-$run.json"; cp "$W/fx.err" "$BENCH_DIR/tap-$mode-$rate-$run.err"
    python3 - "$TSV" "$mode" "$rate" "$run" "$c0" "$c1" "$t0" "$t1" "$(source_rev)" "$W/fx.out" "$W/cl.out" <<'EOF'
import json, re, sys
tsv, mode, rate, run, c0, c1, t0, t1, build, fx, cl = sys.argv[1:]
d = json.loads(open(fx).read().strip().splitlines()[-1]); c = d["counters"]; s = d["source"]
drops = (s["tap_drops"] + s["tap_interface_drops"]) if mode == "tap" else \
    (s["kernel_ring_drops_request"] + s["kernel_ring_drops_response"])
text = open(cl).read()
sent = re.search(r"sent (\d+)", text); comp = re.search(r"(\d+) complete,", text)
cpu = (int(c1) - int(c0)) / 1e9; wall = (int(t1) - int(t0)) / 1e9
row = [mode, rate, run, sent.group(1) if sent else "?", comp.group(1) if comp else "?",
       c["requests"], c["matched"], c["messages"], drops, f"{cpu:.3f}", f"{wall:.3f}",
       f"{100 * cpu / wall:.1f}", f"{cpu * 1e9 / max(c['messages'], 1):.0f}", build]
open(tsv, "a").write("\t".join(map(str, row)) + "\n")
print("  " + " ".join(f"{k}={v}" for k, v in zip(
    ["mode", "rate", "run", "sent", "complete", "requests", "matched", "msgs", "drops", "cpu_s",
     "wall_s", "cpu%", "ns/msg"], row)), file=sys.stderr)
EOF
done
done
done
echo "results: $TSV" >&2
