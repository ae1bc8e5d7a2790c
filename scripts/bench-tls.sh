#!/usr/bin/env bash
# `make bench-tls` (BENCHMARKS.md §9): the whole command a user runs on a TLS capture
# against the same traffic in the clear, in FIX messages per second.
#
#   scripts/bench-tls.sh                       # RUNS=5 ORDERS=520000 SUITE=aes128
#   RUNS=7 SUITE=chacha scripts/bench-tls.sh   # aes128 aes256 chacha tls12-aes128 tls12-aes256 tls12-chacha
#
# The plaintext capture is §2's (crates/fixscope-core/examples/gen_capture.rs: ORDERS orders
# over 8 sessions, $BENCH_DIR/orders-$ORDERS.pcap, shared with bench-pcap-vs-tshark.sh); its
# TLS copy is the same traffic (crates/fixscope/examples/tls_capture.rs: each connection a
# rustls connection with a real handshake, each segment's payload one record in a segment at
# the same time) with the key log rustls wrote beside it. Both are generated when missing.
# Then, for the default plan and for `--threads 1`, RUNS pairs alternated (the order swapped
# every pair), each capture read into the page cache first:
#   A: fixscope pcap PLAIN -p 9878 --json
#   B: fixscope pcap TLS   -p 9878 --json --tls-keylog KEYS
# Messages/s = the plaintext run's FIX messages / wall time. Every TLS run must report the
# plaintext run's messages, orders and latency figures (stages), checked on every pair.
set -euo pipefail

RUNS=${RUNS:-5}
ORDERS=${ORDERS:-520000}
SESSIONS=${SESSIONS:-8}
PORT=${PORT:-9878}
SUITE=${SUITE:-aes128}
BENCH_DIR=${BENCH_DIR:-/tmp/fixscope-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(( RUNS >= 1 && RUNS <= 30 )) || { echo "RUNS must be 1..30" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }
mkdir -p "$BENCH_DIR"

cd "$ROOT"
cargo build --release -p fixscope --bin fixscope --example tls_capture >&2
cargo build --release -p fixscope-core --example gen_capture >&2
FIXSCOPE=$TARGET/release/fixscope

PLAIN=$BENCH_DIR/orders-$ORDERS.pcap
TLS=$BENCH_DIR/orders-$ORDERS-$SUITE.pcap
KEYS=$TLS.keys
if [[ ! -s $PLAIN ]]; then
    echo "== generating $PLAIN" >&2
    "$TARGET/release/examples/gen_capture" "$PLAIN" --orders "$ORDERS" --sessions "$SESSIONS" --port "$PORT" >&2
fi
if [[ ! -s $TLS || ! -s $KEYS || $TLS -ot $PLAIN ]]; then
    echo "== writing $PLAIN over TLS ($SUITE)" >&2
    "$TARGET/release/examples/tls_capture" "$PLAIN" "$TLS" "$KEYS" --suite "$SUITE" -p "$PORT" >&2
fi

now_ns() { date +%s%N; }
load1() { cut -d' ' -f1 /proc/loadavg; }
# timed CAP OUT [flags...]: prints "wall_s cpu_s" of `fixscope pcap CAP -p PORT --json flags`
# (CPU: user + system, /usr/bin/time).
timed() {
    local cap=$1 out=$2; shift 2
    cat "$cap" >/dev/null
    local t0 t1 tv=$BENCH_DIR/tls-time.txt
    t0=$(now_ns)
    /usr/bin/time -f '%U %S' -o "$tv" "$FIXSCOPE" pcap "$cap" -p "$PORT" --json "$@" >"$out" 2>"$BENCH_DIR/tls-stderr.txt"
    t1=$(now_ns)
    awk -v a="$t0" -v b="$t1" '{printf "%.4f %.2f\n", (b-a)/1e9, $1 + $2}' "$tv"
}
# same PLAIN_OUT TLS_OUT: the TLS run reports the plaintext run's figures; prints messages.
same() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
plain, tls = (json.loads(open(p).read().splitlines()[-1]) for p in sys.argv[1:3])
for k in ("messages", "requests", "matched", "unmatched_responses"):
    assert plain["counters"][k] == tls["counters"][k], (k, plain["counters"][k], tls["counters"][k])
assert plain["stages"] == tls["stages"], "the latency figures differ"
c = tls["counters"]
assert c["tls_connections"] > 0 and c["tls_records_decrypted"] > 0, c
for k in ("tls_no_key", "tls_no_handshake", "tls_unsupported", "tls_auth_failed"):
    assert c[k] == 0, (k, c[k])
print(plain["counters"]["messages"])
EOF
}

RES=$BENCH_DIR/bench-tls-$SUITE.tsv
printf 'plan\tpair\trun\twall_s\tcpu_s\tload1\n' >"$RES"
for plan in default threads1; do
    flags=()
    [[ $plan == threads1 ]] && flags=(--threads 1)
    for (( i = 1; i <= RUNS; i++ )); do
        order=(plain tls)
        (( i % 2 == 0 )) && order=(tls plain)
        for run in "${order[@]}"; do
            if [[ $run == plain ]]; then
                read -r w c < <(timed "$PLAIN" "$BENCH_DIR/tls-bench-plain.json" "${flags[@]}")
            else
                read -r w c < <(timed "$TLS" "$BENCH_DIR/tls-bench-tls.json" "${flags[@]}" --tls-keylog "$KEYS")
            fi
            printf '%s\t%d\t%s\t%s\t%s\t%s\n' "$plan" "$i" "$run" "$w" "$c" "$(load1)" >>"$RES"
            echo "$plan pair $i $run ${w}s cpu ${c}s load $(load1)" >&2
        done
        msgs=$(same "$BENCH_DIR/tls-bench-plain.json" "$BENCH_DIR/tls-bench-tls.json")
    done
done

echo
echo "fixscope $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty); $(nproc) vCPU, kernel $(uname -r)"
echo "plain: $PLAIN ($(stat -c %s "$PLAIN") bytes); TLS ($SUITE): $TLS ($(stat -c %s "$TLS") bytes); $msgs FIX messages; the TLS runs reported the same messages and stages on every pair"
echo "raw results: $RES"
python3 - "$RES" "$msgs" <<'EOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
msgs = int(sys.argv[2])
print()
print("| plan | run | runs | wall s median (range) | msgs/s median | TLS/plain msgs/s (ratio of medians) | per pair median (range) | CPU s median | TLS/plain msgs per CPU-s |")
print("|---|---|---|---|---|---|---|---|---|")
for plan in ("default", "threads1"):
    w = {r: [float(x["wall_s"]) for x in rows if x["plan"] == plan and x["run"] == r] for r in ("plain", "tls")}
    pairs = [p / t for p, t in zip(w["plain"], w["tls"])]
    c = {r: [float(x["cpu_s"]) for x in rows if x["plan"] == plan and x["run"] == r] for r in ("plain", "tls")}
    for r in ("plain", "tls"):
        m = st.median(w[r])
        ratio = f"**{100 * st.median(w['plain']) / m:.0f}%**" if r == "tls" else ""
        pp = f"{100 * st.median(pairs):.0f}% ({100 * min(pairs):.0f}–{100 * max(pairs):.0f}%)" if r == "tls" else ""
        name = "default" if plan == "default" else "`--threads 1`"
        cpu = st.median(c[r])
        cr = f"{100 * st.median(c['plain']) / cpu:.0f}%" if r == "tls" else ""
        print(f"| {name} | {r} | {len(w[r])} | {m:.3f} ({min(w[r]):.3f}–{max(w[r]):.3f}) | {msgs / m:,.0f} | {ratio} | {pp} | {cpu:.2f} | {cr} |")
loads = [float(x["load1"]) for x in rows]
print(f"\nload average (1 min) after each run: median {st.median(loads):.2f}, range {min(loads):.2f}–{max(loads):.2f}")
EOF
