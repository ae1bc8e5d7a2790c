#!/usr/bin/env bash
# A/B of two fixscope builds on the whole command a user runs (a refactoring must not make
# it slower): `fixscope pcap CAP -p PORT --json` at default flags and with `--threads 1`,
# alternated round by round (A default, B default, A --threads 1, B --threads 1), the
# capture read into the page cache before each timed run. Prints per-run times, medians and
# per-round ratios B/A, and checks that both builds' outputs are identical.
#
#   A=/path/to/fixscope-before B=target/release/fixscope CAP=big.pcap RUNS=7 scripts/bench-ab.sh
#   (NEW_FIELDS="response_before_request" when B adds a JSON field A does not write)
#
# CAP defaults to the 504 MB capture of scripts/bench-offline.sh (made with gen_capture).
set -euo pipefail
A=${A:?A=old binary}
B=${B:?B=new binary}
source "$(dirname "$0")/bench-common.sh"
run() { timed_pcap "$1" "$2" /dev/null "${@:3}"; }  # run BIN OUT [flags...]

declare -a ad bd a1 b1
for ((r = 1; r <= RUNS; r++)); do
    ad[r]=$(run "$A" "$WORK/a.json")
    bd[r]=$(run "$B" "$WORK/b.json")
    a1[r]=$(run "$A" "$WORK/a1.json" --threads 1)
    b1[r]=$(run "$B" "$WORK/b1.json" --threads 1)
    printf 'round %d: default A %s B %s (B/A %.3f) | --threads 1 A %s B %s (B/A %.3f)\n' "$r" \
        "${ad[r]}" "${bd[r]}" "$(ratio "${bd[r]}" "${ad[r]}")" \
        "${a1[r]}" "${b1[r]}" "$(ratio "${b1[r]}" "${a1[r]}")"
done
# NEW_FIELDS="f1 f2": JSON fields only B writes (an added counter), removed from B's output
# before the comparison; everything else must be byte for byte the same.
for f in ${NEW_FIELDS:-}; do
    sed -i -E "s/,\"$f\":[^,}]*//g; s/\"$f\":[^,}]*,//g" "$WORK/b.json" "$WORK/b1.json"
done
cmp -s "$WORK/a.json" "$WORK/b.json" && cmp -s "$WORK/a1.json" "$WORK/b1.json" \
    && echo "outputs: identical (default and --threads 1${NEW_FIELDS:+, but for $NEW_FIELDS})" \
    || { echo "outputs DIFFER" >&2; exit 1; }
for k in default threads1; do
    if [[ $k == default ]]; then xa=("${ad[@]}"); xb=("${bd[@]}"); else xa=("${a1[@]}"); xb=("${b1[@]}"); fi
    ma=$(printf '%s\n' "${xa[@]}" | median); mb=$(printf '%s\n' "${xb[@]}" | median)
    ratios=$(for ((r = 1; r <= RUNS; r++)); do ratio "${xb[r-1]}" "${xa[r-1]}"; echo; done | median)
    printf '%-9s median A %.3f s, B %.3f s, B/A of medians %.3f, median per-round B/A %.3f\n' \
        "$k" "$ma" "$mb" "$(ratio "$mb" "$ma")" "$ratios"
done
