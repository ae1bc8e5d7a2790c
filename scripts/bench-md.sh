#!/usr/bin/env bash
# fixscope pcap --md on an ITCH 5.0 A/B pair (gen_md_capture: PACKETS packets of MESSAGES
# Add Orders on each feed), the whole command as a user runs it
# (`fixscope pcap CAP -p 9878 --json --md A,B=itch50`), RUNS times, the capture in the page
# cache first. Prints market-data messages (both feeds) per second of wall time, median
# and range, and peak RSS (BENCHMARKS.md §11).
#
#   scripts/bench-md.sh                      # RUNS=5 PACKETS=1000000 MESSAGES=5
set -euo pipefail

RUNS=${RUNS:-5}
PACKETS=${PACKETS:-1000000}
MESSAGES=${MESSAGES:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/target/bench-md}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }

(cd "$ROOT" && cargo build --release -q -p fixscope \
    && cargo build --release -q -p fixscope-core --example gen_md_capture)
BIN=$CARGO_TARGET_DIR/release/fixscope
CAP=$WORK/md-$PACKETS-$MESSAGES.pcap
[[ -s $CAP ]] || "$CARGO_TARGET_DIR/release/examples/gen_md_capture" "$CAP" \
    --packets "$PACKETS" --messages "$MESSAGES" >&2
MD=233.54.12.1:26400,233.54.12.2:26400=itch50
rows=()
for ((i = 1; i <= RUNS; i++)); do
    cat "$CAP" >/dev/null
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$WORK/time-v.txt" "$BIN" pcap "$CAP" -p 9878 --json --md "$MD" \
        >"$WORK/out.json" 2>"$WORK/err.txt"
    t1=$(date +%s%N)
    msgs=$(tail -n 1 "$WORK/out.json" | python3 -c \
        'import json,sys; f=json.load(sys.stdin)["feeds"][0]; print(sum(l["messages"] for l in f["legs"]))')
    rss=$(awk -F': ' '/Maximum resident/{print $2}' "$WORK/time-v.txt")
    rows+=("$(awk -v a="$t0" -v b="$t1" -v m="$msgs" -v r="$rss" \
        'BEGIN{printf "%.4f %d %.0f %d", (b-a)/1e9, m, m/((b-a)/1e9), r}')")
done
printf '%s\n' "${rows[@]}" >"$WORK/rows.txt"
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
echo "| runs | messages (A+B) | wall s median (range) | msgs/s median (range) | peak RSS |"
echo "|---|---|---|---|---|"
printf '| %d | %s | %s (%s-%s) | %s (%s-%s) | %d MB |\n' "$RUNS" \
    "$(awk 'NR==1{print $2}' "$WORK/rows.txt")" \
    "$(awk '{print $1}' "$WORK/rows.txt" | median)" \
    "$(awk '{print $1}' "$WORK/rows.txt" | sort -g | head -1)" \
    "$(awk '{print $1}' "$WORK/rows.txt" | sort -g | tail -1)" \
    "$(awk '{print $3}' "$WORK/rows.txt" | median)" \
    "$(awk '{print $3}' "$WORK/rows.txt" | sort -g | head -1)" \
    "$(awk '{print $3}' "$WORK/rows.txt" | sort -g | tail -1)" \
    $(( $(awk '{print $4}' "$WORK/rows.txt" | sort -g | tail -1) / 1024 ))
