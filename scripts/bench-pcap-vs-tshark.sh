#!/usr/bin/env bash
# fixscope pcap vs tshark's FIX dissector, end to end, in FIX messages per second.
#
#   scripts/bench-pcap-vs-tshark.sh            # RUNS=5 by default
#   RUNS=3 ORDERS=520000 scripts/bench-pcap-vs-tshark.sh
#
# Generates a ~500 MB capture (crates/fixscope-core/examples/gen_capture.rs) in
# $BENCH_DIR if missing, then runs, alternately, N times each:
#   A: fixscope pcap CAP -p 9878 --json                      (release build)
#   B: tshark -r CAP -d tcp.port==9878,fix -Y fix -T fields \
#        -e frame.time_epoch -e fix.MsgType -e fix.ClOrdID
# Both write their output to a file in $BENCH_DIR (what a user would do). Messages/s =
# FIX messages in the capture / wall time. The message count comes from fixscope's
# counters.messages and is cross-checked against the number of MsgType values tshark
# printed (one per message; a frame with two messages prints "D,D").
#
# If a full tshark run is estimated (from one run on a ~50 MB prefix capture, the same
# generator with ORDERS/10 orders) to take longer than TSHARK_MAX_S (240 s), tshark runs
# on the prefix capture instead and its rate is extrapolated; the output says so.
# fixscope's peak RSS on the full capture comes from /usr/bin/time -v (max over runs).
set -euo pipefail

RUNS=${RUNS:-5}
ORDERS=${ORDERS:-520000}
SESSIONS=${SESSIONS:-8}
PORT=${PORT:-9878}
TSHARK_MAX_S=${TSHARK_MAX_S:-240}
BENCH_DIR=${BENCH_DIR:-/tmp/fixscope-bench}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXSCOPE=$CARGO_TARGET_DIR/release/fixscope
GEN=$CARGO_TARGET_DIR/release/examples/gen_capture

(( RUNS >= 1 && RUNS <= 20 )) || { echo "RUNS must be 1..20" >&2; exit 2; }
command -v tshark >/dev/null || { echo "tshark not installed (apt-get install -y tshark)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }
mkdir -p "$BENCH_DIR"

# shellcheck source=bench-build.sh
source "$ROOT/scripts/bench-build.sh"
build_release "-p fixscope" "-p fixscope-core --example gen_capture"
REV=$(source_rev)
FIXSCOPE=$(snapshot "$FIXSCOPE" fixscope-pcap)

FULL=$BENCH_DIR/orders-$ORDERS.pcap
PREFIX_ORDERS=$(( ORDERS / 10 ))
PREFIX=$BENCH_DIR/orders-$PREFIX_ORDERS.pcap
for spec in "$FULL:$ORDERS" "$PREFIX:$PREFIX_ORDERS"; do
    f=${spec%%:*}; n=${spec##*:}
    if [[ ! -s $f ]]; then
        echo "== generating $f ($n orders)" >&2
        "$GEN" "$f" --orders "$n" --sessions "$SESSIONS" --port "$PORT" >&2
    fi
done

now_ns() { date +%s%N; }
# Prints "wall_s maxrss_kb" for one command; stdout of the command goes to $1.
timed() {
    local out=$1; shift
    local tv=$BENCH_DIR/time-v.txt t0 t1
    t0=$(now_ns)
    /usr/bin/time -v -o "$tv" "$@" >"$out" 2>"$BENCH_DIR/stderr.txt"
    t1=$(now_ns)
    local rss cpu
    rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tv")
    cpu=$(awk -F': ' '/User time|System time/{s += $2} END{print s}' "$tv")
    awk -v a="$t0" -v b="$t1" -v r="$rss" -v c="$cpu" 'BEGIN{printf "%.4f %d %.2f\n", (b-a)/1e9, r, c}'
}
fixscope_msgs() { # messages framed, from the JSON summary
    tail -n 1 "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["messages"])'
}
tshark_msgs() { # one MsgType value per FIX message
    awk -F'\t' '{ if ($2 != "") n += split($2, a, ",") } END { print n + 0 }' "$1"
}
# The page cache of this VM is reclaimed within tens of seconds (seen: a warm 500 MB capture
# half evicted after a 60 s tshark run), which would time the disk instead of the tool:
# every run re-reads its capture into the cache first, untimed.
warm() { cat "$1" >/dev/null; }
run_fixscope() { warm "$1"; timed "$BENCH_DIR/fixscope.out" "$FIXSCOPE" pcap "$1" -p "$PORT" --json; }
run_tshark() {
    warm "$1"
    timed "$BENCH_DIR/tshark.out" tshark -r "$1" -d "tcp.port==$PORT,fix" -Y fix -T fields \
        -e frame.time_epoch -e fix.MsgType -e fix.ClOrdID
}

echo "== warming the page cache" >&2
cat "$FULL" "$PREFIX" >/dev/null

# Message counts (also checks that both tools see the same messages).
read -r _ _ _ < <(run_fixscope "$FULL"); FULL_MSGS=$(fixscope_msgs "$BENCH_DIR/fixscope.out")
read -r _ _ _ < <(run_fixscope "$PREFIX"); PREFIX_MSGS=$(fixscope_msgs "$BENCH_DIR/fixscope.out")
echo "== tshark on the prefix capture (estimate; also a warm-up)" >&2
read -r pw _ _ < <(run_tshark "$PREFIX")
PREFIX_TSHARK_MSGS=$(tshark_msgs "$BENCH_DIR/tshark.out")
if [[ $PREFIX_TSHARK_MSGS != "$PREFIX_MSGS" ]]; then
    echo "WARNING: tshark printed $PREFIX_TSHARK_MSGS MsgType values, fixscope framed $PREFIX_MSGS messages" >&2
fi
est=$(awk -v t="$pw" -v a="$FULL_MSGS" -v b="$PREFIX_MSGS" 'BEGIN{printf "%.0f", t*a/b}')
if (( est > TSHARK_MAX_S )); then
    T_CAP=$PREFIX; T_MSGS=$PREFIX_MSGS
    T_NOTE="tshark ran on the ${PREFIX_ORDERS}-order prefix capture ($(du -h "$PREFIX" | cut -f1)); full run estimated at ${est}s > ${TSHARK_MAX_S}s; its rate is extrapolated to the full capture"
else
    T_CAP=$FULL; T_MSGS=$FULL_MSGS
    T_NOTE="tshark ran on the full capture (estimated ${est}s per run)"
fi
echo "== $T_NOTE" >&2

RES=$BENCH_DIR/pcap-vs-tshark.tsv
printf 'run\ttool\tcapture\tmessages\twall_s\tmsgs_per_s\tmaxrss_kb\tcpu_s\tmsgs_per_cpu_s\tload1_before\tload1_after\n' >"$RES"
for (( i = 1; i <= RUNS; i++ )); do
    l0=$(load1); read -r w rss cpu < <(run_fixscope "$FULL"); l1=$(load1)
    m=$(fixscope_msgs "$BENCH_DIR/fixscope.out")
    [[ $m == "$FULL_MSGS" ]] || echo "WARNING: fixscope run $i framed $m messages" >&2
    printf '%d\tfixscope\t%s\t%s\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%s\n' "$i" "$(basename "$FULL")" "$m" "$w" \
        "$(awk -v m="$m" -v w="$w" 'BEGIN{print m/w}')" "$rss" "$cpu" "$(awk -v m="$m" -v c="$cpu" 'BEGIN{print (c > 0 ? m/c : 0)}')" "$l0" "$l1" >>"$RES"
    echo "run $i fixscope ${w}s cpu ${cpu}s rss ${rss}KB load $l0->$l1" >&2

    l0=$(load1); read -r w rss cpu < <(run_tshark "$T_CAP"); l1=$(load1)
    m=$(tshark_msgs "$BENCH_DIR/tshark.out")
    [[ $m == "$T_MSGS" ]] || echo "WARNING: tshark run $i printed $m MsgType values, expected $T_MSGS" >&2
    printf '%d\ttshark\t%s\t%s\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%s\n' "$i" "$(basename "$T_CAP")" "$m" "$w" \
        "$(awk -v m="$m" -v w="$w" 'BEGIN{print m/w}')" "$rss" "$cpu" "$(awk -v m="$m" -v c="$cpu" 'BEGIN{print (c > 0 ? m/c : 0)}')" "$l0" "$l1" >>"$RES"
    echo "run $i tshark   ${w}s cpu ${cpu}s rss ${rss}KB load $l0->$l1" >&2
done

echo
echo "fixscope $REV; machine: $(nproc) vCPU, kernel $(uname -r), $(tshark -v | head -1)"
echo "capture: $FULL, $(stat -c %s "$FULL") bytes, $FULL_MSGS FIX messages, $ORDERS orders, $SESSIONS sessions"
echo "$T_NOTE"
echo "raw results: $RES"
python3 - "$RES" <<'EOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def col(tool, k): return [float(r[k]) for r in rows if r["tool"] == tool]
print()
print("| tool | runs | wall s median (range) | msgs/s median (range) | msgs per CPU-second median (range) | peak RSS MB (max) |")
print("|---|---|---|---|---|---|")
for t in ("fixscope", "tshark"):
    w, r, m, c = col(t, "wall_s"), col(t, "msgs_per_s"), col(t, "maxrss_kb"), col(t, "msgs_per_cpu_s")
    print(f"| {t} | {len(w)} | {st.median(w):.2f} ({min(w):.2f}–{max(w):.2f}) | "
          f"{st.median(r):,.0f} ({min(r):,.0f}–{max(r):,.0f}) | {st.median(c):,.0f} ({min(c):,.0f}–{max(c):,.0f}) | {max(m)/1024:.0f} |")
f, t = col("fixscope", "msgs_per_s"), col("tshark", "msgs_per_s")
pairs = [a / b for a, b in zip(f, t)]
print()
print(f"ratio of medians (fixscope/tshark msgs/s): {st.median(f)/st.median(t):.1f}x; "
      f"per A/B pair: median {st.median(pairs):.1f}x, range {min(pairs):.1f}x–{max(pairs):.1f}x")
fc, tc = col("fixscope", "msgs_per_cpu_s"), col("tshark", "msgs_per_cpu_s")
print(f"ratio per CPU-second (user+sys): medians {st.median(fc)/st.median(tc):.1f}x; per pair median {st.median([a/b for a, b in zip(fc, tc)]):.1f}x")
loads = [float(r[k]) for r in rows for k in ("load1_before", "load1_after")]
print(f"load average (1 min) during the runs: median {st.median(loads):.2f}, range {min(loads):.2f}–{max(loads):.2f}")
EOF
