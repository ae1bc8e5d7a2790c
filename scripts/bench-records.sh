#!/usr/bin/env bash
# What `--records` costs (its target: at most 1.25× the run without): one build, the whole
# command a user runs — `fixscope pcap CAP -p PORT --json` without and with `--records DIR`
# — alternated round by round, the capture read into the page cache before each timed run.
# Prints per-run times, medians, the per-round ratio with/without, and the Parquet bytes per
# order.
#
#   BIN=target/release/fixscope CAP=big.pcap RUNS=9 scripts/bench-records.sh
set -euo pipefail
BIN=${BIN:?BIN=fixscope binary}
source "$(dirname "$0")/bench-common.sh"
run() { timed_pcap "$BIN" "$1" "$1.err" "${@:2}"; }  # run OUT [flags...]

declare -a without with
for ((r = 1; r <= RUNS; r++)); do
    without[r]=$(run "$WORK/without.json")
    rm -rf "$WORK/rec"
    with[r]=$(run "$WORK/with.json" --records "$WORK/rec")
    printf 'round %d: without %s with %s (with/without %.3f)\n' "$r" "${without[r]}" "${with[r]}" \
        "$(ratio "${with[r]}" "${without[r]}")"
done
# The records' own counter (`records_dropped_rows`, in "source") is the one difference allowed.
sed -e 's/"source":{"records_dropped_rows":0}/"source":{}/g' \
    -e 's/,"records_dropped_rows":0}/}/g' -e 's/"records_dropped_rows":0,//g' \
    "$WORK/with.json" > "$WORK/with.stripped.json"
cmp -s "$WORK/without.json" "$WORK/with.stripped.json" \
    && echo "reports: identical with and without --records (but for records_dropped_rows: 0)" \
    || { echo "reports DIFFER with --records" >&2; exit 1; }
mw=$(printf '%s\n' "${without[@]}" | median); mr=$(printf '%s\n' "${with[@]}" | median)
ratios=$(for ((r = 1; r <= RUNS; r++)); do ratio "${with[r]}" "${without[r]}"; echo; done | median)
printf 'median without %.3f s, with %.3f s, with/without of medians %.3f, median per-round %.3f\n' \
    "$mw" "$mr" "$(ratio "$mr" "$mw")" "$ratios"
orders=$(grep -o 'records: [0-9]* orders' "$WORK/with.json.err" | grep -o '[0-9]*')
obytes=$(du -sb "$WORK/rec/orders" | cut -f1); mbytes=$(du -sb "$WORK/rec/messages" | cut -f1)
printf 'orders %d: %d bytes of order records (%.1f per order), %d bytes of message records\n' \
    "$orders" "$obytes" "$(awk -v a="$obytes" -v b="$orders" 'BEGIN{print a/b}')" "$mbytes"
