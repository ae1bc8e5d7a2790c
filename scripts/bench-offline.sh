#!/usr/bin/env bash
# fixscope pcap end to end, to show what every core buys: this tree A/B against earlier
# builds, a thread sweep and tshark's FIX dissector, on one ~500 MB capture with ~745
# one-second intervals.
#
#   scripts/bench-offline.sh                    # RUNS=7, baselines 235d3ed (the start of the
#                                               # last round of the work on every core) and
#                                               # fa19c4f (main before round 5),
#                                               # --threads 1-4 and default, tshark once (§2f)
#   RUNS=3 TSHARK_RUNS=0 scripts/bench-offline.sh
#   BIG=/path/to/capture.pcap PORT=9878 scripts/bench-offline.sh
#   ONE_CPU=0 PER_THREAD=0 ...                  # without the pinned run / per-thread CPU
#
# Every run is the command a user runs, default flags: `fixscope pcap CAP -p PORT --json`
# (stdout to a file). The capture is read into the page cache before each timed run (this
# VM evicts it within tens of seconds). Runs are alternated: for each round, every build
# once, in turn; the table gives medians (and min–max) and ratios of medians.
#
# Builds: BASELINES (commits) are built from `git archive` into $WORK/src-REV with their own
# target dirs (once; reused after), this tree with `cargo build --release`.
# The capture: BIG if given, else gen_capture (crates/fixscope-core/examples) with
# ORDERS=520000 SESSIONS=8 RATE=700/s: 1.56 M FIX messages, 504 MB, 743 s of capture time.
set -euo pipefail

RUNS=${RUNS:-7}
TSHARK_RUNS=${TSHARK_RUNS:-1}
BASELINES=${BASELINES:-"235d3ed fa19c4f"}
THREADS_SWEEP=${THREADS_SWEEP:-"1 2 3 4"}
ORDERS=${ORDERS:-520000}
SESSIONS=${SESSIONS:-8}
RATE=${RATE:-700}
PORT=${PORT:-9878}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/target/bench-offline}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"

(( RUNS >= 1 && RUNS <= 20 )) || { echo "RUNS must be 1..20" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }
BENCH_DIR=$WORK
# shellcheck source=bench-common.sh
source "$ROOT/scripts/bench-common.sh"

echo "== building this tree (release)" >&2
(cd "$ROOT" && cargo build --release -q -p fixscope && cargo build --release -q -p fixscope-core --example gen_capture)
REV=$(source_rev)
declare -A BIN
BIN[this]=$(snapshot "$CARGO_TARGET_DIR/release/fixscope" "fixscope-$REV")
for rev in $BASELINES; do
    out=$WORK/fixscope-$rev
    if [[ ! -x $out ]]; then
        echo "== building $rev (once)" >&2
        rm -rf "$WORK/src-$rev" && mkdir -p "$WORK/src-$rev"
        (cd "$ROOT" && git archive "$rev") | tar -x -C "$WORK/src-$rev"
        (cd "$WORK/src-$rev" && CARGO_TARGET_DIR=$WORK/target-$rev cargo build --release -q -p fixscope)
        cp "$WORK/target-$rev/release/fixscope" "$out"
    fi
    BIN[$rev]=$out
done

CAP=${BIG:-$WORK/orders-$ORDERS-r$RATE.pcap}
if [[ ! -s $CAP ]]; then
    echo "== generating $CAP" >&2
    "$CARGO_TARGET_DIR/release/examples/gen_capture" "$CAP" --orders "$ORDERS" \
        --sessions "$SESSIONS" --port "$PORT" --rate "$RATE" >&2
fi
SIZE=$(stat -L -c %s "$CAP")

now_ns() { date +%s%N; }
# timed OUT CMD...: prints "wall_s cpu_s" (cpu: user+sys of the process and its threads).
timed() {
    local out=$1; shift
    local tv=$WORK/time-v.txt t0 t1
    cat "$CAP" >/dev/null
    t0=$(now_ns)
    /usr/bin/time -v -o "$tv" "$@" >"$out" 2>"$WORK/stderr.txt"
    t1=$(now_ns)
    awk -F': ' -v a="$t0" -v b="$t1" '/User time|System time/{s += $2}
        END{printf "%.4f %.2f\n", (b-a)/1e9, s}' "$tv"
}
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# The variants measured, alternated each round: baselines and this tree at default flags,
# this tree at every --threads of the sweep, and this tree at default flags pinned to one
# CPU (`taskset -c 0`: what the default gains from the second core).
VARIANTS=()
for rev in $BASELINES; do VARIANTS+=("$rev"); done
VARIANTS+=("this")
for t in $THREADS_SWEEP; do VARIANTS+=("this-t$t"); done
ONE_CPU=${ONE_CPU:-1}
(( ONE_CPU )) && command -v taskset >/dev/null && VARIANTS+=("this-1cpu")
declare -A WALL CPU
echo "== $RUNS rounds, load average at start: $(load1), $(nproc) CPUs" >&2
for round in $(seq "$RUNS"); do
    for v in "${VARIANTS[@]}"; do
        case $v in
            this-t*) cmd=("${BIN[this]}" pcap "$CAP" -p "$PORT" --json --threads "${v#this-t}") ;;
            this-1cpu) cmd=(taskset -c 0 "${BIN[this]}" pcap "$CAP" -p "$PORT" --json) ;;
            *) cmd=("${BIN[$v]}" pcap "$CAP" -p "$PORT" --json) ;;
        esac
        read -r wall cpu < <(timed "$WORK/out-$v.json" "${cmd[@]}")
        WALL[$v]+="$wall "
        CPU[$v]+="$cpu "
    done
    echo "   round $round done (load $(load1))" >&2
done

MSGS=$(tail -n 1 "$WORK/out-this.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["messages"])')
same=yes
for t in $THREADS_SWEEP; do
    cmp -s "$WORK/out-this-t1.json" "$WORK/out-this-t$t.json" || same="NO (--threads $t differs)"
done
cmp -s "$WORK/out-this-t1.json" "$WORK/out-this.json" || same="NO (default differs)"

echo
echo "fixscope pcap $(basename "$CAP") -p $PORT --json   ($((SIZE / 1000000)) MB, $MSGS FIX messages; this tree = $REV)"
echo "load average at end: $(cat /proc/loadavg | cut -d' ' -f1-3); CPUs: $(nproc)"
printf '%-14s %10s %18s %9s %12s %10s\n' build "wall s" "(min-max)" "CPU s" "M msgs/s" "vs this"
THIS_MED=$(echo "${WALL[this]}" | tr ' ' '\n' | grep . | median)
for v in "${VARIANTS[@]}"; do
    med=$(echo "${WALL[$v]}" | tr ' ' '\n' | grep . | median)
    cpu=$(echo "${CPU[$v]}" | tr ' ' '\n' | grep . | median)
    lo=$(echo "${WALL[$v]}" | tr ' ' '\n' | grep . | sort -g | head -1)
    hi=$(echo "${WALL[$v]}" | tr ' ' '\n' | grep . | sort -g | tail -1)
    awk -v v="$v" -v m="$med" -v lo="$lo" -v hi="$hi" -v c="$cpu" -v n="$MSGS" -v t="$THIS_MED" \
        'BEGIN{printf "%-14s %10.3f %18s %9.2f %12.2f %9.2fx\n", v, m, lo "-" hi, c, n/m/1e6, m/t}'
done
echo "outputs of every --threads identical to --threads 1: $same"
T1=$(echo "${WALL[this-t1]}" | tr ' ' '\n' | grep . | median)
awk -v a="$T1" -v b="$THIS_MED" 'BEGIN{printf "default vs --threads 1: %.2fx\n", a/b}'
if [[ -n ${WALL[this-1cpu]:-} ]]; then
    cmp -s "$WORK/out-this-t1.json" "$WORK/out-this-1cpu.json" || echo "outputs: default on one CPU DIFFERS"
    C1=$(echo "${WALL[this-1cpu]}" | tr ' ' '\n' | grep . | median)
    awk -v a="$C1" -v b="$THIS_MED" 'BEGIN{printf "default vs default pinned to one CPU (the second core): %.2fx\n", a/b}'
fi
# Per-round ratios (each round's pair ran back to back: robust to load drifting).
ratio_median() {
    paste <(echo "${WALL[$1]}" | tr ' ' '\n' | grep .) <(echo "${WALL[$2]}" | tr ' ' '\n' | grep .) |
        awk '{print $1/$2}' | median
}
for v in "${VARIANTS[@]}"; do
    [[ $v == this ]] && continue
    printf 'median of per-round ratios %s / default: %.2fx\n' "$v" "$(ratio_median "$v" this)"
done

# Per-thread CPU (how the work scales with threads): `perf record` at 2 kHz on one run per
# --threads, CPU seconds per thread (samples / 2000): what each worker repeats, what
# divides, what the merger (the calling thread, "fixscope") costs. PER_THREAD=0 skips it.
if (( ${PER_THREAD:-1} )) && command -v perf >/dev/null; then
    echo
    echo "CPU seconds per thread (perf, 2 kHz; one run each):"
    # d: the default (no --threads); 1: everything on one thread (no reading thread).
    for t in d 1 ${PER_THREAD_SWEEP-}; do
        cat "$CAP" >/dev/null
        flag=(--threads "$t")
        [[ $t == d ]] && flag=()
        perf record -q -F 2000 -o "$WORK/perf-t$t.data" "${BIN[this]}" pcap "$CAP" -p "$PORT" --json \
            "${flag[@]}" >/dev/null 2>&1 || { echo "  perf record failed"; break; }
        printf '  --threads %-2s' "$t"
        perf report -i "$WORK/perf-t$t.data" --sort comm -F sample,comm -g none 2>/dev/null |
            awk '$1 ~ /^[0-9]+$/ {printf "  %s %.3f", $2, $1/2000}'
        echo
    done
fi

if (( TSHARK_RUNS > 0 )) && ! command -v tshark >/dev/null; then
    echo "tshark not installed (scripts/install-deps.sh installs it): skipped"
elif (( TSHARK_RUNS > 0 )); then
    walls=""
    for _ in $(seq "$TSHARK_RUNS"); do
        read -r wall _ < <(timed "$WORK/tshark.out" tshark -r "$CAP" -d "tcp.port==$PORT,fix" -Y fix \
            -T fields -e frame.time_epoch -e fix.MsgType -e fix.ClOrdID)
        walls+="$wall "
    done
    tmed=$(echo "$walls" | tr ' ' '\n' | grep . | median)
    tmsgs=$(awk -F'\t' '{ if ($2 != "") n += split($2, a, ",") } END { print n + 0 }' "$WORK/tshark.out")
    awk -v t="$tmed" -v f="$THIS_MED" -v n="$tmsgs" -v m="$MSGS" 'BEGIN{
        printf "tshark: %.2f s (%d runs), %d messages (fixscope: %d): fixscope default is %.1fx faster\n",
        t, '"$TSHARK_RUNS"', n, m, t/f }'
fi
echo "bench-offline.sh ran for ${SECONDS} s"
