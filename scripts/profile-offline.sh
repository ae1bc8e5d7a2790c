#!/usr/bin/env bash
# Where the one pipeline's time goes, to find where to cut it for more cores
# (BENCHMARKS.md §2d): `perf record` of `fixscope pcap CAP -p PORT --json` on 2 CPUs (the
# default there: one pipeline and its reading thread) on bench-offline.sh's capture, the
# samples summed per thread and, on the pipeline thread, per candidate stage of a two-stage
# split:
#
#   A  = what is per connection and needs no session state: the connection table, TCP
#        reassembly, FIX framing (checksum, BodyLength) — could run on the reading thread;
#   X  = field extraction (MessageFacts::extract and the field walk it inlines): per
#        message, no session state — movable to A if the facts travel as offsets;
#   B  = the session layer, correlation, statistics, interval reports and outputs;
#   ?  = the rest (allocator, memmove, the prefetch channel's hand-over and futex wakes,
#        kernel).
#
# The closure `MessageSink::stream_event::{{closure}}` inlines framing's hand-over, field
# extraction and routing: its samples are split by source file with `perf annotate -l`
# (facts.rs, fix/message.rs, fix/scan.rs: X; the rest: B).
#
#   scripts/profile-offline.sh                  # the capture of bench-offline.sh (made if absent)
#   BIG=/path/to/capture.pcap PORT=9878 scripts/profile-offline.sh
set -euo pipefail

PORT=${PORT:-9878}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/target/bench-offline}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
CAP=${BIG:-$WORK/orders-520000-r700.pcap}
command -v perf >/dev/null || { echo "perf missing (apt-get install -y linux-perf)" >&2; exit 2; }
if [[ ! -s $CAP ]]; then
    echo "no capture at $CAP: run scripts/bench-offline.sh once (it makes it), or set BIG" >&2
    exit 2
fi
(cd "$ROOT" && cargo build --release -q -p fixscope)
BIN=$CARGO_TARGET_DIR/release/fixscope
DATA=$WORK/profile.perf
mkdir -p "$WORK"
cat "$CAP" >/dev/null
# On 2 CPUs (taskset: the default counts the CPUs it may use; perf itself pinned, so the
# profiled command is not an exec inside the record) the default is one pipeline with its
# reading thread, on any host.
taskset -c 0,1 perf record -q -F 4999 -o "$DATA" -- "$BIN" pcap "$CAP" -p "$PORT" --json \
    >"$WORK/profile-out.json" 2>"$WORK/profile-stderr.txt"

# Symbols that inline field extraction into routing (which ones depends on the compiler's
# inlining): each one's share of samples in extraction, from its annotate lines by file.
MIXED=(
    'fixscope_core::pipeline::MessageSink::stream_event::{{closure}}'
    'fixscope_core::pipeline::Router::on_message'
    'fixscope_core::pipeline::MessageSink::stream_event'
)
shares=""
for sym in "${MIXED[@]}"; do
    share=$(perf annotate -i "$DATA" --stdio -l "$sym" 2>/dev/null |
        grep -E '^\s+[0-9.]+\s+\S+\.rs:[0-9]+' |
        awk '{ split($2, f, ":"); t += $1; if (f[1] ~ /^(facts|message|scan)\.rs$/) x += $1 }
             END { if (t > 0) printf "%.4f\n", x / t }' || true)
    [[ -n $share ]] && shares+="$sym=$share;"
done
[[ -n $shares ]] || { echo "no routing symbol found to split (inlining changed?): ${MIXED[*]}" >&2; exit 1; }
echo "extraction share of the routing symbols: $shares"

perf report -i "$DATA" --no-children -g none --sort comm,symbol --percent-limit 0 -t '|' 2>/dev/null |
    grep -v '^#' | grep '|' |
    awk -F'|' -v shares="$shares" '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    BEGIN {
        n = split(shares, kv, ";")
        for (i = 1; i <= n; i++) if (kv[i] != "") { j = index(kv[i], "="); xs[substr(kv[i], 1, j - 1)] = substr(kv[i], j + 1) }
    }
    {
        pct = trim($1); sub(/%/, "", pct); comm = trim($2); sym = trim($3)
        sub(/^\[[.k]\] /, "", sym)
        thread[comm] += pct
        if (comm != "fixscope") next
        if (sym in xs) { stage["X"] += pct * xs[sym]; stage["B"] += pct * (1 - xs[sym]); next }
        # hashbrown `find` out of line: the connection table lookup per segment (a
        # `--call-graph dwarf` run put every sampled caller in the inlined on_segment).
        if (sym ~ /reassembly|framing|frame_one|byte_sum|Pipeline::on_segment|Pipeline::housekeeping|ClosedConnections|^hashbrown::raw::RawTable<T,A>::find$/)
            stage["A"] += pct
        else if (sym ~ /MessageFacts|fix::message|fix::scan/)
            stage["X"] += pct
        else if (sym ~ /session::|correlate::|stats::|slowest::|sparse_hist::|report::|hlog::|group::|Correlator|Pipeline::counters|driver::|json/)
            stage["B"] += pct
        else
            stage["?"] += pct
    }
    END {
        printf "samples per thread (%% of the run):\n"
        for (t in thread) printf "  %-16s %6.2f\n", t, thread[t]
        printf "pipeline thread by candidate stage (%% of the run):\n"
        n = split("A X B ?", order, " ")
        for (i = 1; i <= n; i++) printf "  %-3s %6.2f\n", order[i], stage[order[i]]
        r = thread["fixscope-reader"]
        printf "two stages, cut after framing  : reader+A %.1f | X+B+? %.1f\n", r + stage["A"], stage["X"] + stage["B"] + stage["?"]
        printf "two stages, cut after extraction: reader+A+X %.1f | B+? %.1f\n", r + stage["A"] + stage["X"], stage["B"] + stage["?"]
    }'
echo "CPU seconds per thread (samples / 4999 Hz):"
perf report -i "$DATA" --sort comm -F sample,comm -g none 2>/dev/null |
    awk '$1 ~ /^[0-9]+$/ {printf "  %-16s %.3f\n", $2, $1 / 4999}'
echo "top symbols (pipeline thread, then reader):"
perf report -i "$DATA" --no-children -g none --sort comm,symbol --percent-limit 1 2>/dev/null |
    grep -v '^#' | grep '%' | head -30
