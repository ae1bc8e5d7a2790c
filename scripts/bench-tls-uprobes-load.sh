#!/usr/bin/env bash
# --tls-uprobes under load, two ways on the same traffic (BENCHMARKS.md §9b):
#   one: one instance with --tls-uprobes --tls-keylog: every call's placement checked
#        against the decryption of the same packet (tls_uprobe_verified/disagreed);
#   two: --tls-uprobes alone beside --tls-keylog alone, their --trace files compared
#        message by message (what two instances' own stamps differ by).
# Two connections of N orders at RATE/s each (tls_fix.py's exchange, Python's ssl), two busy
# loops beside. Needs root. Usage: scripts/bench-tls-uprobes-load.sh one|two PORT N RATE [--tls12]
set -euo pipefail
MODE=$1 P=$2 N=$3 R=$4 X=${5:-}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN=${FIXSCOPE_BIN:-$ROOT/target/release/fixscope}
EXCHANGE=$ROOT/crates/fixscope/tests/interop/tls_fix.py
W=$(mktemp -d)
python3 "$EXCHANGE" cert "$W"
: > "$W/keys.log"
pids=()
watch() { # NAME FLAGS...: an instance, once it watches
    local name=$1; shift
    "$BIN" live -i lo -p "$P" --json --trace "$W/$name.csv" "$@" > "$W/$name.json" 2> "$W/$name.err" &
    pids+=($!)
    for _ in $(seq 300); do grep -q "watching" "$W/$name.err" && return; sleep 0.1; done
    echo "$name did not start: $(cat "$W/$name.err")" >&2; exit 1
}
if [ "$MODE" = one ]; then
    watch one --tls-uprobes --tls-keylog "$W/keys.log"
else
    watch u --tls-uprobes
    watch k --tls-keylog "$W/keys.log"
fi
python3 "$EXCHANGE" serve "$W" "$P" 2>/dev/null &
EX=$!
sleep 1
busy=()
for _ in 1 2; do timeout 60 python3 -c 'while True: pass' & busy+=($!); done
python3 "$ROOT/scripts/tls-pipelined-client.py" "$P" "$N" "$R" "$W/keys.log" a $X &
C=$!
python3 "$ROOT/scripts/tls-pipelined-client.py" "$P" "$N" "$R" "$W/keys.log" b $X
wait $C
kill "${busy[@]}" 2>/dev/null || true
sleep 1
kill -INT "${pids[@]}"
wait "${pids[@]}" || true
kill $EX
python3 - "$MODE" "$W" <<'PY'
import csv, json, sys
mode, w = sys.argv[1], sys.argv[2]
def summary(name):
    d = json.loads(open(f"{w}/{name}.json").read().strip().splitlines()[-1])
    c = d["counters"]
    print(name, {k: v for k, v in c.items() if k.startswith("tls_uprobe") or k in ("requests", "matched")})
    print(name, {k: v for k, v in d["source"].items() if k.startswith("tls_uprobe")})
if mode == "one":
    summary("one")
else:
    def times(name):
        return {(r["direction"], r["key"]): int(r["ts_ns"]) for r in csv.DictReader(open(f"{w}/{name}.csv"))}
    u, k = times("u"), times("k")
    d = [u[x] - k[x] for x in k if x in u]
    print("messages", len(d), "over 2us apart", sum(abs(v) > 2000 for v in d), "min", min(d), "max", max(d))
PY
rm -rf "$W"
