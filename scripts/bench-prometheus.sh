#!/usr/bin/env bash
# Scrape cost of `fixscope live --prometheus` for BENCHMARKS.md (needs root: BPF).
#
#   sudo scripts/bench-prometheus.sh             # RUNS runs at RATE orders/s on lo
#   sudo RATE=600000 RUNS=3 scripts/bench-prometheus.sh
#
# Per run: exchange + `fixscope live -i lo --json --prometheus 127.0.0.1:PORT
# --prometheus-sessions SESSIONS` + client (SESSIONS sessions, 300-byte orders, open loop,
# RUN_S seconds), while a scraper asks for /metrics every SCRAPE_S seconds, alternating the
# protobuf (native histograms) and OpenMetrics encodings. Reports per encoding the median
# scrape time (curl's time_total on lo) and body size, and per run the kernel ring drops
# and requests vs matched from fixscope's JSON summary. Each run is an A/B pair: first
# without `--prometheus` (no exporter at all), then with it and scraped, so drops caused by
# a busy host show in both.
# Results: $BENCH_DIR/prometheus-*.tsv and a markdown summary on stdout.
set -euo pipefail

RATE=${RATE:-600000}
RUNS=${RUNS:-3}
RUN_S=${RUN_S:-6}
SESSIONS=${SESSIONS:-4}
SCRAPE_S=${SCRAPE_S:-1}
PAD=${PAD:-130}
MPORT=${MPORT:-29874}
BENCH_DIR=${BENCH_DIR:-/tmp/fixscope-bench}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXSCOPE=$CARGO_TARGET_DIR/release/fixscope
PROTO='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'

(( EUID == 0 )) || { echo "needs root" >&2; exit 2; }
(( RUNS >= 1 && RUNS <= 20 && RUN_S >= 2 && RUN_S <= 60 )) || { echo "RUNS/RUN_S out of range" >&2; exit 2; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }
mkdir -p "$BENCH_DIR"
W=$BENCH_DIR/prometheus-work
mkdir -p "$W"

PIDS=()
cleanup() {
    set +e
    local p
    for p in "${PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then kill -INT "$p" 2>/dev/null; fi
    done
    wait 2>/dev/null
}
trap cleanup EXIT

(cd "$ROOT" && cargo build --release -q -p fixscope)

SCRAPES=$BENCH_DIR/prometheus-scrapes.tsv
RUNS_TSV=$BENCH_DIR/prometheus-runs.tsv
printf 'run\tencoding\tseconds\tbytes\n' > "$SCRAPES"
printf 'run\tmode\trequests\tmatched\tring_drops\n' > "$RUNS_TSV"
HTTP_CPU=$BENCH_DIR/prometheus-http-cpu.tsv
printf 'run\tcpu_ns\tscrapes\n' > "$HTTP_CPU"
SNAPS=$BENCH_DIR/prometheus-snapshot.tsv
printf 'run\tseconds\n' > "$SNAPS"

for run in $(seq 1 "$RUNS"); do
  for mode in plain scraped; do
    rm -f "$W"/*
    EXPORT=()
    [[ $mode == scraped ]] && EXPORT=(--prometheus "127.0.0.1:$MPORT" --prometheus-sessions "$SESSIONS")
    "$FIXSCOPE" sim exchange --listen 127.0.0.1:0 --truth /dev/null 2> "$W/ex.err" &
    EX=$!; PIDS+=("$EX")
    for _ in $(seq 1 100); do grep -q "listening on" "$W/ex.err" && break; sleep 0.1; done
    PORT=$(grep -o "listening on .*" "$W/ex.err" | sed 's/.*://')
    "$FIXSCOPE" live -i lo -p "$PORT" --json "${EXPORT[@]}" > "$W/live.json" 2> "$W/live.err" &
    LV=$!; PIDS+=("$LV")
    for _ in $(seq 1 150); do grep -q "watching" "$W/live.err" && break; sleep 0.1; done
    "$FIXSCOPE" sim client --connect "127.0.0.1:$PORT" --sessions "$SESSIONS" --rate "$RATE" \
        --count $((RATE * RUN_S)) --pad "$PAD" > "$W/client.out" 2>&1 &
    CL=$!; PIDS+=("$CL")
    i=0
    while [[ $mode == scraped ]] && kill -0 "$CL" 2>/dev/null; do
        if (( i % 2 == 0 )); then enc=protobuf; accept=$PROTO; else enc=openmetrics; accept='application/openmetrics-text;version=1.0.0'; fi
        curl -s -o "$W/body" -H "Accept: $accept" -w "$run\t$enc\t%{time_total}\t%{size_download}\n" \
            "http://127.0.0.1:$MPORT/metrics" >> "$SCRAPES" || true
        if [[ $enc == openmetrics ]]; then
            awk -v run="$run" '/^fixscope_prometheus_snapshot_cpu_seconds /{print run "\t" $2}' "$W/body" >> "$SNAPS"
        fi
        i=$((i + 1))
        sleep "$SCRAPE_S"
    done
    wait "$CL" || true
    if [[ $mode == scraped ]]; then
        # CPU time of the HTTP thread (all its scrapes), from the scheduler.
        for t in /proc/"$LV"/task/*; do
            if [[ $(cat "$t/comm") == fixscope-metric* ]]; then
                printf '%s\t%s\t%s\n' "$run" "$(cut -d' ' -f1 "$t/schedstat")" "$i" >> "$HTTP_CPU"
            fi
        done
    fi
    sleep 0.5
    kill -INT "$LV"; wait "$LV" || true
    kill -INT "$EX"; wait "$EX" || true
    python3 - "$W/live.json" "$run" "$mode" >> "$RUNS_TSV" <<'EOF'
import json, sys
summary = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
c, s = summary["counters"], summary.get("source", {})
drops = s.get("kernel_ring_drops_request", 0) + s.get("kernel_ring_drops_response", 0)
print(f'{sys.argv[2]}\t{sys.argv[3]}\t{c["requests"]}\t{c["matched"]}\t{drops}')
EOF
  done
done

python3 - "$SCRAPES" "$RUNS_TSV" "$RATE" "$SNAPS" "$HTTP_CPU" <<'EOF'
import csv, statistics, sys
http = [int(x["cpu_ns"]) / int(x["scrapes"]) for x in csv.DictReader(open(sys.argv[5]), delimiter="\t") if int(x["scrapes"]) > 0]
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
runs = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
snaps = [float(x["seconds"]) for x in csv.DictReader(open(sys.argv[4]), delimiter="\t") if float(x["seconds"]) > 0]
print(f"| encoding | scrapes | median scrape time | median bytes |")
print("|---|---|---|---|")
for enc in ("protobuf", "openmetrics"):
    r = [x for x in rows if x["encoding"] == enc]
    if r:
        t = statistics.median(float(x["seconds"]) for x in r) * 1e6
        b = statistics.median(int(x["bytes"]) for x in r)
        print(f"| {enc} | {len(r)} | {t:.0f} µs | {int(b):,} |")
if http:
    print(f"\nHTTP thread CPU per scrape (both encodings, from schedstat): median {statistics.median(http) / 1e3:.0f} µs over {len(http)} runs")
if snaps:
    print(f"snapshot build on the pipeline thread (once per interval), thread CPU time: median {statistics.median(snaps) * 1e6:.0f} µs, max {max(snaps) * 1e6:.0f} µs over {len(snaps)} samples")
print()
print(f"| run at {int(sys.argv[3]):,} orders/s | exporter | requests | matched | ring drops |")
print("|---|---|---|---|---|")
for x in runs:
    mode = "--prometheus, scraped" if x["mode"] == "scraped" else "none"
    print(f'| {x["run"]} | {mode} | {int(x["requests"]):,} | {int(x["matched"]):,} | {x["ring_drops"]} |')
EOF
