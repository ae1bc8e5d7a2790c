#!/usr/bin/env bash
# fixscope pcap on binary order flow against FIX: the same orders (ORDERS over SESSIONS
# sessions at RATE/s, per order a request, an ack 15-80 us later and a fill 20-400 us
# after it) as FIX (gen_capture), OUCH 4.2 and iLink 3 (gen_binary_capture), each timed
# as a user runs it, default flags (`fixscope pcap CAP -p PORT --json`, plus
# `--protocol PORT=NAME` for the binary ones, and once more with nothing named:
# recognised by their logins), alternated RUNS times, the capture in the
# page cache before each run. Prints a markdown table: messages framed per second of
# wall time, median and range, peak RSS (BENCHMARKS.md §11).
#
#   scripts/bench-binary.sh              # RUNS=5 ORDERS=520000
#   RUNS=3 ORDERS=100000 scripts/bench-binary.sh
set -euo pipefail

RUNS=${RUNS:-5}
ORDERS=${ORDERS:-520000}
SESSIONS=${SESSIONS:-8}
RATE=${RATE:-700}
PORT=${PORT:-15001}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/target/bench-binary}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"
(( RUNS >= 1 && RUNS <= 20 )) || { echo "RUNS must be 1..20" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }

echo "== building (release)" >&2
(cd "$ROOT" && cargo build --release -q -p fixscope \
    && cargo build --release -q -p fixscope-core --example gen_capture --example gen_binary_capture)
BIN=$CARGO_TARGET_DIR/release/fixscope
EX=$CARGO_TARGET_DIR/release/examples

declare -A CAP FLAGS
for kind in fix ouch42 ilink3; do
    CAP[$kind]=$WORK/$kind-$ORDERS.pcap
    if [[ ! -s ${CAP[$kind]} ]]; then
        echo "== generating ${CAP[$kind]}" >&2
        if [[ $kind == fix ]]; then
            "$EX/gen_capture" "${CAP[$kind]}" --orders "$ORDERS" --sessions "$SESSIONS" \
                --port "$PORT" --rate "$RATE" >&2
        else
            "$EX/gen_binary_capture" "${CAP[$kind]}" --protocol "$kind" --orders "$ORDERS" \
                --sessions "$SESSIONS" --port "$PORT" --rate "$RATE" >&2
        fi
    fi
    FLAGS[$kind]=""
    [[ $kind == fix ]] || FLAGS[$kind]="--protocol $PORT=$kind"
done
# The binary captures again with nothing named: each connection recognised by its login
# (the default plan meets the first one and reads the capture again on one pipeline).
for kind in ouch42 ilink3; do
    CAP[$kind-auto]=${CAP[$kind]}
    FLAGS[$kind-auto]=""
done
KINDS=(fix ouch42 ilink3 ouch42-auto ilink3-auto)

# run KIND: prints "wall_s messages rss_kb matched"
run() {
    local kind=$1 cap=${CAP[$1]} tv=$WORK/time-v.txt t0 t1
    cat "$cap" >/dev/null
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "$tv" "$BIN" pcap "$cap" -p "$PORT" --json ${FLAGS[$kind]} \
        >"$WORK/out-$kind.json" 2>"$WORK/err-$kind.txt"
    t1=$(date +%s%N)
    local counts rss
    counts=$(tail -n 1 "$WORK/out-$kind.json" | python3 -c \
        'import json,sys; c=json.load(sys.stdin)["counters"]; print(c["messages"], c["matched"])')
    rss=$(awk -F': ' '/Maximum resident/{print $2}' "$tv")
    awk -v a="$t0" -v b="$t1" -v c="$counts" -v r="$rss" \
        'BEGIN{split(c, m, " "); printf "%.4f %d %d %d\n", (b-a)/1e9, m[1], r, m[2]}'
}

for ((i = 1; i <= RUNS; i++)); do
    for kind in "${KINDS[@]}"; do
        echo "$kind $(run "$kind")" >>"$WORK/runs.txt.$$"
    done
done

median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
echo "| protocol | runs | orders matched | messages | wall s median (range) | msgs/s median (range) | peak RSS |"
echo "|---|---|---|---|---|---|---|"
for kind in "${KINDS[@]}"; do
    rows=$(grep "^$kind " "$WORK/runs.txt.$$")
    msgs=$(awk 'NR==1{print $3}' <<<"$rows")
    matched=$(awk 'NR==1{print $5}' <<<"$rows")
    wall=$(awk '{print $2}' <<<"$rows" | median)
    lo=$(awk '{print $2}' <<<"$rows" | sort -g | head -1)
    hi=$(awk '{print $2}' <<<"$rows" | sort -g | tail -1)
    rate=$(awk '{printf "%.0f\n", $3 / $2}' <<<"$rows" | median)
    rlo=$(awk '{printf "%.0f\n", $3 / $2}' <<<"$rows" | sort -g | head -1)
    rhi=$(awk '{printf "%.0f\n", $3 / $2}' <<<"$rows" | sort -g | tail -1)
    rss=$(awk '{print $4}' <<<"$rows" | sort -g | tail -1)
    printf '| %s | %d | %s | %s | %.2f (%.2f-%.2f) | %s (%s-%s) | %d MB |\n' \
        "$kind" "$RUNS" "$matched" "$msgs" "$wall" "$lo" "$hi" "$rate" "$rlo" "$rhi" $((rss / 1024))
done
rm -f "$WORK/runs.txt.$$"
