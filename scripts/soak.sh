#!/usr/bin/env bash
# Soak: `fixscope live` on the loopback of a network namespace of its own, measuring the
# built-in exchange and client at the highest rate this machine sustains, for MINUTES.
#
#   sudo scripts/soak.sh              # 10 minutes
#   sudo scripts/soak.sh 3            # 3 minutes
#   sudo RATE=50000 scripts/soak.sh   # skip the ramp, use this rate
#
# 1. Ramp (unless RATE is set): RAMP_RATES orders/s for RAMP_S seconds each, fixscope
#    attached; the highest rate the client achieves (>= 95% of target, every order
#    complete, round trip p99 <= 20 ms: no backlog building up) with no ring drop is the
#    soak's rate.
# 2. Soak: exchange, `fixscope live --json` and the client for MINUTES at that rate; fixscope's
#    RSS (VmRSS) sampled every second, its JSON summary kept.
# 3. Report (scripts/soak_report.py): RSS after warm-up (flat: growth within RSS_SLACK_KIB),
#    ring drops (0), and the request accounting (matched + pending + evicted + closed +
#    untracked = requests; timed_out/late are alerts within matched/pending), and fixscope's
#    requests against what the client sent. Exit 0 only if every check holds.
#
# Everything runs in namespace fxsoak-PID (deleted on exit); processes started here are
# stopped by PID. Results in $SOAK_DIR (default /tmp/fixscope-soak).
set -euo pipefail

MINUTES=${1:-${MINUTES:-10}}
RAMP_RATES=${RAMP_RATES:-"10000 25000 50000 100000 150000 200000 300000"}
RAMP_S=${RAMP_S:-15}
SESSIONS=${SESSIONS:-4}
PORT=${PORT:-29911}
WARMUP_S=${WARMUP_S:-30}
RSS_SLACK_KIB=${RSS_SLACK_KIB:-4096}
SOAK_DIR=${SOAK_DIR:-/tmp/fixscope-soak}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXSCOPE=${FIXSCOPE:-$ROOT/target/release/fixscope}
NS=fxsoak-$$

(( EUID == 0 )) || { echo "soak: needs root (BPF, a network namespace)" >&2; exit 2; }
[[ $MINUTES =~ ^[0-9]+$ ]] && (( MINUTES >= 1 && MINUTES <= 1440 )) ||
    { echo "soak: MINUTES must be 1..1440, got $MINUTES" >&2; exit 2; }
if [[ -z ${SKIP_BUILD:-} && $FIXSCOPE == "$ROOT/target/release/fixscope" ]]; then
    echo "soak: building (release)" >&2
    (cd "$ROOT" && cargo build --release -q --bin fixscope)
fi
mkdir -p "$SOAK_DIR"

PIDS=()
cleanup() {
    set +e
    local p
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo up
inns() { ip netns exec "$NS" "$@"; }   # foreground only

start_exchange() {
    # Simple commands (not the inns function) in the background, so $! is the pid of
    # `ip netns exec`, which execs the program in place.
    ip netns exec "$NS" "$FIXSCOPE" sim exchange --listen "127.0.0.1:$PORT" \
        --ack-delay lognormal:40us,0.5 --fill-delay uniform:20us-150us 2>"$SOAK_DIR/exchange.err" &
    PIDS+=($!)
    local i
    for i in $(seq 100); do
        grep -q "listening on" "$SOAK_DIR/exchange.err" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "soak: the exchange did not start" >&2
    exit 1
}

# start_live OUT: fixscope live in the background, its pid in LIVE_PID once attached.
start_live() {
    ip netns exec "$NS" "$FIXSCOPE" live -i lo -p "$PORT" --json -r 10 >"$1" 2>"$1.err" &
    LIVE_PID=$!
    PIDS+=("$LIVE_PID")
    local i
    for i in $(seq 150); do
        grep -q "fixscope: watching" "$1.err" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "soak: fixscope live did not attach: $(cat "$1.err")" >&2
    exit 1
}

stop_live() {
    sleep 0.5
    kill -TERM "$LIVE_PID"
    wait "$LIVE_PID" || { echo "soak: fixscope live failed: $(cat "$1.err")" >&2; exit 1; }
}

# client RATE SECONDS OUT: the client's text report (its only output format).
client() {
    inns "$FIXSCOPE" sim client --connect "127.0.0.1:$PORT" --sessions "$SESSIONS" \
        --rate "$1" --duration "$2" >"$3" 2>&1
}

start_exchange
RATE=${RATE:-}
if [[ -z $RATE ]]; then
    echo "soak: ramp ${RAMP_RATES} orders/s, ${RAMP_S}s each" >&2
    for r in $RAMP_RATES; do
        start_live "$SOAK_DIR/ramp-$r.jsonl"
        client "$r" "$RAMP_S" "$SOAK_DIR/ramp-$r.client"
        stop_live "$SOAK_DIR/ramp-$r.jsonl"
        if python3 "$ROOT/scripts/soak_report.py" ramp "$r" "$SOAK_DIR/ramp-$r.client" \
            "$SOAK_DIR/ramp-$r.jsonl"; then
            RATE=$r
        else
            break
        fi
    done
    [[ -n $RATE ]] || { echo "soak: not even ${RAMP_RATES%% *}/s is sustained here" >&2; exit 1; }
fi

SECONDS_TOTAL=$((MINUTES * 60))
echo "soak: ${MINUTES} min at ${RATE} orders/s (${SESSIONS} sessions), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start_live "$SOAK_DIR/soak.jsonl"
RSS=$SOAK_DIR/rss.tsv
printf 't_s\trss_kib\n' >"$RSS"
ip netns exec "$NS" "$FIXSCOPE" sim client --connect "127.0.0.1:$PORT" --sessions "$SESSIONS" \
    --rate "$RATE" --duration "$SECONDS_TOTAL" >"$SOAK_DIR/soak.client" 2>&1 &
CLIENT_PID=$!
PIDS+=("$CLIENT_PID")
t=0
while kill -0 "$CLIENT_PID" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$LIVE_PID/status" 2>/dev/null || true)
    [[ -n $rss ]] && printf '%d\t%s\n' "$t" "$rss" >>"$RSS"
    sleep 1
    t=$((t + 1))
done
wait "$CLIENT_PID" || { echo "soak: client failed: $(tail -5 "$SOAK_DIR/soak.client")" >&2; exit 1; }
stop_live "$SOAK_DIR/soak.jsonl"
echo "soak: load at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 "$ROOT/scripts/soak_report.py" soak "$RATE" "$SOAK_DIR/soak.client" \
    "$SOAK_DIR/soak.jsonl" "$RSS" "$WARMUP_S" "$RSS_SLACK_KIB"
