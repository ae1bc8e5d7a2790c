#!/usr/bin/env bash
# `fixscope pcap CAP -p 9878 --json [FLAGS]` of two builds, alternated A B B A in every round
# (so a drift of the host's speed within a round weighs on both alike), the capture read
# into the page cache before each run; prints the medians of each build's wall times, their
# ratio and the median of the per-round ratios B/A. No output check (diff the outputs apart).
#
#   scripts/bench-ab-abba.sh OLD_BINARY NEW_BINARY CAPTURE ROUNDS [FLAGS...]
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: $0 A B CAPTURE ROUNDS [FLAGS...]" >&2; exit 2; }
(( $4 >= 1 && $4 <= 50 )) || { echo "ROUNDS must be 1..50" >&2; exit 2; }
A=$1 B=$2 CAP=$3 RUNS=$4; shift 4; EXTRA="$*"
t() { cat "$CAP" >/dev/null; local s=$(date +%s%N); "$1" pcap "$CAP" -p 9878 --json $EXTRA >/dev/null 2>&1; echo $(( $(date +%s%N) - s )); }
as=(); bs=(); rs=()
for ((r=0;r<RUNS;r++)); do a1=$(t $A); b1=$(t $B); b2=$(t $B); a2=$(t $A); a=$(( (a1+a2)/2 )); b=$(( (b1+b2)/2 )); as+=($a1 $a2); bs+=($b1 $b2); rs+=($(echo "$b / $a" | bc -l)); done
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
ma=$(printf '%s\n' "${as[@]}" | med); mb=$(printf '%s\n' "${bs[@]}" | med); mr=$(printf '%s\n' "${rs[@]}" | med)
awk -v e="$EXTRA" -v a=$ma -v b=$mb -v r=$mr -v n=$RUNS 'BEGIN {printf "flags [%s]: A median %.3f s, B median %.3f s, ratio of medians %.3f, median per-round ratio %.3f (%d rounds ABBA)\n", e, a/1e9, b/1e9, b/a, r, n}'
