#!/usr/bin/env bash
# A/B of two fixscope builds writing records (is a change to the writer faster?): `fixscope
# pcap CAP -p PORT --json --records DIR`, A then B each round, the capture read into the
# page cache before each timed run. Prints each round's wall and CPU seconds (user + system,
# /usr/bin/time) and B/A, then the medians of the per-round ratios.
#
#   A=/path/to/fixscope-before B=target/release/fixscope CAP=big.pcap RUNS=9 scripts/bench-records-ab.sh
set -euo pipefail
: "${A:?A=first build}" "${B:?B=second build}" "${CAP:?CAP=capture}"
RUNS=${RUNS:-7}
PORT=${PORT:-9878}
[ -x /usr/bin/time ] || { echo "bench-records-ab: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ratios=()
for i in $(seq "$RUNS"); do
    for x in A B; do
        bin=$A
        [ "$x" = B ] && bin=$B
        rm -rf "$work/rec"
        cat "$CAP" > /dev/null
        /usr/bin/time -o "$work/t$x" -f "%e %U %S" "$bin" pcap "$CAP" -p "$PORT" --json \
            --records "$work/rec" > /dev/null 2> /dev/null
    done
    line=$(echo "$(tail -1 "$work/tA") $(tail -1 "$work/tB")" | awk '{
        printf "%.3f %.3f %.3f %.3f %.3f %.3f", $1, $2 + $3, $4, $5 + $6, $4 / $1, ($5 + $6) / ($2 + $3) }')
    read -r aw ac bw bc rw rc <<< "$line"
    echo "round $i: A ${aw}s cpu ${ac}s | B ${bw}s cpu ${bc}s | B/A wall $rw cpu $rc"
    ratios+=("$rw $rc")
done
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
wall=$(printf '%s\n' "${ratios[@]}" | cut -d' ' -f1 | median)
cpu=$(printf '%s\n' "${ratios[@]}" | cut -d' ' -f2 | median)
echo "median per-round B/A: wall $wall, cpu $cpu"
