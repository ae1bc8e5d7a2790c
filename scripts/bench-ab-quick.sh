#!/usr/bin/env bash
# A quicker A/B than bench-ab.sh, for bisecting: `fixscope pcap CAP -p 9878 --json` at default
# flags and with `--threads 1`, A and B alternated round by round, the capture read into the
# page cache before each run; prints the median of the per-round ratios B/A. No output check.
#
#   A=/path/to/fixscope-before B=target/release/fixscope CAP=big.pcap RUNS=9 scripts/bench-ab-quick.sh
set -euo pipefail
A=${A:?A=old binary}
B=${B:?B=new binary}
CAP=${CAP:?CAP=capture}
RUNS=${RUNS:-9}
PORT=${PORT:-9878}
timed() { cat "$CAP" >/dev/null; local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
rd=() r1=()
for ((r = 1; r <= RUNS; r++)); do
    a=$(timed "$A" pcap "$CAP" -p "$PORT" --json); b=$(timed "$B" pcap "$CAP" -p "$PORT" --json)
    a1=$(timed "$A" pcap "$CAP" -p "$PORT" --json --threads 1); b1=$(timed "$B" pcap "$CAP" -p "$PORT" --json --threads 1)
    rd+=("$(echo "$b / $a" | bc -l)"); r1+=("$(echo "$b1 / $a1" | bc -l)")
done
printf 'default B/A %.3f  --threads 1 B/A %.3f (medians of %d per-round ratios)\n' \
    "$(printf '%s\n' "${rd[@]}" | median)" "$(printf '%s\n' "${r1[@]}" | median)" "$RUNS"
