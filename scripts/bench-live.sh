#!/usr/bin/env bash
# Live-capture benchmarks for BENCHMARKS.md (needs root: BPF, network namespaces).
#
#   sudo scripts/bench-live.sh                 # all sections
#   sudo SECTIONS="a c" RUNS=5 scripts/bench-live.sh
#
# a  BPF cost per hooked packet (kernel accounting, BPF_ENABLE_STATS):
#    a1: crates/fixscope-live/examples/bpf_cost.rs (300-byte ping-pong on lo), RUNS times;
#    a2: kernel.bpf_stats_enabled=1 and bpftool's run_time_ns/run_cnt of this run's
#        fxs_ingress/fxs_egress while `fixscope sim client --rate 50000 --pad ...` (300-byte
#        orders) runs on lo, RUNS times. The sysctl is restored on exit.
# b  Sustained load on lo with `fixscope live -i lo` attached (default idle strategy):
#    an open-loop ramp (RAMP_RATES) to find the highest rate the simulator drives here
#    (achieved >= 95% of target, every order complete), then RUNS runs at that rate and
#    one closed-loop run (--window); RUNS runs at 10k orders/s. Per run: kernel ring drops,
#    requests vs matched, fixscope's CPU time (sum_exec_runtime from
#    /proc/PID/task/*/schedstat, sampled when the client starts and when it ends),
#    messages, ns of CPU per message (d).
# c  Observer effect over a veth pair between two network namespaces created here
#    (10.201.0.1 exchange, 10.201.0.2 client; deleted on exit): closed-loop order rate and
#    client round-trip p50/p99 without and with fixscope attached to the exchange-side
#    veth, alternated B/A/B/A..., OBS_PAIRS pairs; then the same A/B at a fixed open-loop
#    rate (OBS_RATE orders/s, below saturation): round-trip p50/p99 without and with.
#
#    OBS_VARIANTS lists the fixscope set-ups alternated with "no" (not attached):
#    "yes" = attached, watching the traffic's port (default settings); "normal" = the same
#    with `--priority normal` (consumer at ordinary priority); "filter" = attached but watching a port
#    nobody uses (the BPF programs parse and filter every packet, nothing is copied), which
#    separates the kernel-side parse cost from the copy + user-space cost.
#    OBS_LAYOUT: "shared" (default) lets the scheduler put everything on every CPU;
#    "split" is the production layout: client and exchange confined to CPU 0 (taskset),
#    fixscope to CPU 1 (taskset + -c 1). Its BPF programs still run on CPU 0, in the
#    senders' context, so their cost stays in the measurement.
# FIXSCOPE_ALT=/path/to/another/fixscope makes a2 an A/B: each run measures this tree's
# build and then that binary (the simulator is always this tree's); in b, each run at the
# highest rate is followed by one with that binary (B_MAX_ONLY=1 skips b's other runs).
# build and then that binary (the simulator is always this tree's). In c, the OBS_VARIANTS
# entry "alt" is that binary attached with default settings (e.g. OBS_VARIANTS="yes alt").
# OBS_BPF_STATS=1: c also records the BPF programs' kernel accounting (run_time_ns/run_cnt,
# kernel.bpf_stats_enabled=1 for the section) of each attached run: bpf_ns_per_run.
# FIXSCOPE_WRAP prefixes fixscope's command line (e.g. "nice -n 10 chrt -b 0" to try a
# lower scheduling class). Everything started here is killed by PID in the exit trap; fixscope detaches on exit.
# Results: $BENCH_DIR/live-*.tsv and a markdown summary on stdout.
set -euo pipefail

SECTIONS=${SECTIONS:-"a b c"}
RUNS=${RUNS:-5}
PORT=${PORT:-29878}
PAD=${PAD:-130}                    # 58=Text bytes: the client's 35=D is 166 bytes unpadded
                                   # (measured with tcpdump), +4+130 = 300 bytes on the wire
ORDER_BYTES=${ORDER_BYTES:-300}
SESSIONS=${SESSIONS:-4}
RUN_S=${RUN_S:-6}                  # seconds of order flow per run
RAMP_RATES=${RAMP_RATES:-"100000 200000 300000 400000 600000"}
WINDOW=${WINDOW:-32}               # closed-loop outstanding orders per session
OBS_PAIRS=${OBS_PAIRS:-4}
OBS_RATE=${OBS_RATE:-100000}
OBS_VARIANTS=${OBS_VARIANTS:-yes}
OBS_MODES=${OBS_MODES:-"closed open"}
OBS_LAYOUT=${OBS_LAYOUT:-shared}
BENCH_DIR=${BENCH_DIR:-/tmp/fixscope-bench}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXSCOPE=$CARGO_TARGET_DIR/release/fixscope
BPF_COST=$CARGO_TARGET_DIR/release/examples/bpf_cost
NS_EX=fxsbench-ex-$$
NS_CL=fxsbench-cl-$$
VETH_EX=fxbex$$
VETH_CL=fxbcl$$

(( EUID == 0 )) || { echo "needs root" >&2; exit 2; }
# bpftool names this run's programs in section a2 (Debian: apt-get install bpftool).
command -v bpftool >/dev/null || { echo "installing bpftool" >&2; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bpftool >/dev/null; }
(( RUNS >= 1 && RUNS <= 20 && OBS_PAIRS >= 1 && OBS_PAIRS <= 20 )) || { echo "RUNS/OBS_PAIRS out of range" >&2; exit 2; }
mkdir -p "$BENCH_DIR"
W=$BENCH_DIR/live-work
mkdir -p "$W"

PIDS=()
STATS_BEFORE=""
cleanup() {
    set +e
    local p
    for p in "${PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then kill -INT "$p" 2>/dev/null; fi
    done
    sleep 0.5
    for p in "${PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null; sleep 0.2; fi
        if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null; fi
    done
    [[ -n $STATS_BEFORE ]] && sysctl -qw kernel.bpf_stats_enabled="$STATS_BEFORE"
    ip netns list 2>/dev/null | grep -qw "$NS_EX" && ip netns del "$NS_EX"
    ip netns list 2>/dev/null | grep -qw "$NS_CL" && ip netns del "$NS_CL"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench-build.sh
source "$ROOT/scripts/bench-build.sh"
build_release "-p fixscope" "-p fixscope-live --example bpf_cost"
REV=$(source_rev)
FIXSCOPE=$(snapshot "$FIXSCOPE" fixscope-live)
BPF_COST=$(snapshot "$BPF_COST" bpf_cost)
echo "fixscope $REV ($("$FIXSCOPE" --version)), binaries snapshotted in $BENCH_DIR/bin" >&2

# "prog_id name run_cnt run_time_ns" for each BPF program fd that process $1 holds.
prog_stats() {
    local fd id name
    for fd in /proc/"$1"/fd/*; do
        [[ $(readlink "$fd" 2>/dev/null) == "anon_inode:bpf-prog" ]] || continue
        local info=/proc/$1/fdinfo/${fd##*/}
        id=$(awk '$1 == "prog_id:" {print $2}' "$info")
        name=$(bpftool prog show id "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("name","?"))')
        [[ $name == fxs_* ]] || continue
        awk -v id="$id" -v n="$name" '$1 == "run_cnt:" {c = $2} $1 == "run_time_ns:" {t = $2} END {print id, n, c + 0, t + 0}' "$info"
    done
}
# CPU time of process $1 in ns: the scheduler's exact sum_exec_runtime over its threads
# (/proc/PID/task/*/schedstat); agrees with utime+stime from /proc/PID/stat, without ticks.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
forget_pid() { local p=$1 q; local keep=(); for q in "${PIDS[@]}"; do [[ $q == "$p" ]] || keep+=("$q"); done; PIDS=("${keep[@]}"); }

# start_exchange NETNS ADDR -> sets EX_PID
start_exchange() {
    local ns=$1 addr=$2
    if [[ -n $ns ]]; then
        ip netns exec "$ns" ${APP_WRAP:-} "$FIXSCOPE" sim exchange --listen "$addr:$PORT" </dev/null >"$W/exchange.out" 2>"$W/exchange.err" &
    else
        "$FIXSCOPE" sim exchange --listen "$addr:$PORT" </dev/null >"$W/exchange.out" 2>"$W/exchange.err" &
    fi
    EX_PID=$!; PIDS+=("$EX_PID")
    local i
    for (( i = 0; i < 100; i++ )); do
        grep -q "listening" "$W/exchange.err" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "exchange did not start: $(cat "$W/exchange.err")" >&2; return 1
}
stop_pid() { # SIGINT, bounded wait, then TERM
    local p=$1 i
    kill -INT "$p" 2>/dev/null || true
    for (( i = 0; i < 100; i++ )); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
    wait "$p" 2>/dev/null || true
    forget_pid "$p"
}
# start_fixscope NETNS IFACE [extra flags] -> sets FX_PID; output in $W/fixscope.{out,err}
# Watches $FX_PORT (default: the traffic's port).
start_fixscope() {
    local ns=$1 iface=$2; shift 2
    local port=${FX_PORT:-$PORT}
    if [[ -n $ns ]]; then
        ip netns exec "$ns" ${FIXSCOPE_WRAP:-} "${FX_BIN:-$FIXSCOPE}" live -i "$iface" -p "$port" --json -r 0 "$@" </dev/null >"$W/fixscope.out" 2>"$W/fixscope.err" &
    else
        ${FIXSCOPE_WRAP:-} "${FX_BIN:-$FIXSCOPE}" live -i "$iface" -p "$port" --json -r 0 "$@" </dev/null >"$W/fixscope.out" 2>"$W/fixscope.err" &
    fi
    FX_PID=$!; PIDS+=("$FX_PID")
    local i
    for (( i = 0; i < 200; i++ )); do
        grep -q "watching" "$W/fixscope.err" 2>/dev/null && return 0
        kill -0 "$FX_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "fixscope did not attach: $(cat "$W/fixscope.err")" >&2; return 1
}
# run_client NETNS ADDR FLAGS... -> client report in $W/client.out
run_client() {
    local ns=$1 addr=$2; shift 2
    if [[ -n $ns ]]; then
        ip netns exec "$ns" ${APP_WRAP:-} "$FIXSCOPE" sim client --connect "$addr:$PORT" --sessions "$SESSIONS" "$@" </dev/null >"$W/client.out" 2>"$W/client.err"
    else
        "$FIXSCOPE" sim client --connect "$addr:$PORT" --sessions "$SESSIONS" "$@" </dev/null >"$W/client.out" 2>"$W/client.err"
    fi
}
# Client report -> "achieved_rate sent complete incomplete p50_us p99_us"
client_fields() {
    awk '
        /achieved/ { for (i = 1; i <= NF; i++) { if ($i == "sent") sent = $(i+1); if ($i == "achieved" || $i ~ /^achieved/) { split($(i-1), a, "/"); rate = a[1] } } }
        /complete,/ { for (i = 1; i <= NF; i++) { if ($i == "complete,") comp = $(i-1); if ($i == "incomplete,") inc = $(i-1) } }
        $1 == "first" && $2 == "from" && $3 == "write" { p50 = $5; p99 = $7 }
        END { printf "%s %s %s %s %s %s\n", rate, sent, comp, inc, p50, p99 }' "$W/client.out"
}
# fixscope JSON summary -> "requests matched messages drops_req drops_resp records"
fixscope_fields() {
    tail -n 1 "$W/fixscope.out" | python3 -c '
import json, sys
d = json.load(sys.stdin); c = d["counters"]; s = d["source"]
print(c["requests"], c["matched"], c["messages"], s["kernel_ring_drops_request"], s["kernel_ring_drops_response"], s["kernel_records"], s["kernel_requests_in_range"], s["kernel_hook_calls"], c["tcp_gaps"], c["segments"], s.get("consumer_raises", 0))'
}

# One measured run on lo: exchange + fixscope live + client. Appends a row to $1.
# live_run TSV LABEL IDLE CLIENT_FLAGS...
live_run() {
    local tsv=$1 label=$2 idle=$3; shift 3
    local l0 l1 c0 c1 t0 t1
    start_exchange "" 127.0.0.1
    start_fixscope "" lo -s "$idle"
    l0=$(load1); c0=$(cpu_ns "$FX_PID"); t0=$(date +%s%N)
    run_client "" 127.0.0.1 "$@"
    c1=$(cpu_ns "$FX_PID"); t1=$(date +%s%N); l1=$(load1)
    sleep 1
    stop_pid "$FX_PID"
    stop_pid "$EX_PID"
    RUN_NO=$(( ${RUN_NO:-0} + 1 ))
    cp "$W/fixscope.out" "$W/run$RUN_NO-$label.fixscope.json"; cp "$W/client.out" "$W/run$RUN_NO-$label.client.txt"
    read -r rate sent comp inc p50 p99 < <(client_fields)
    read -r req matched msgs dreq dresp recs kreq hooks gaps segs < <(fixscope_fields)
    echo "  kernel: requests_in_range $kreq hook_calls $hooks records $recs; pipeline segments $segs tcp_gaps $gaps" >&2
    python3 - "$tsv" "$label" "$idle" "$rate" "$sent" "$comp" "$inc" "$req" "$matched" "$msgs" "$dreq" "$dresp" "$recs" "$c0" "$c1" "$t0" "$t1" "$l0" "$l1" <<'EOF'
import os, sys
(tsv, label, idle, rate, sent, comp, inc, req, matched, msgs, dreq, dresp, recs,
 c0, c1, t0, t1, l0, l1) = sys.argv[1:]
cpu_s = (int(c1) - int(c0)) / 1e9
wall_s = (int(t1) - int(t0)) / 1e9
msgs_s = int(msgs) / wall_s
row = [label, idle, rate, sent, comp, inc, req, matched, msgs, dreq, dresp, recs,
       f"{wall_s:.3f}", f"{cpu_s:.3f}", f"{100*cpu_s/wall_s:.1f}", f"{msgs_s:.0f}",
       f"{cpu_s*1e9/int(msgs):.0f}" if int(msgs) else "nan",
       f"{100*cpu_s/wall_s/(msgs_s/1e5):.2f}" if msgs_s else "nan", l0, l1]
new = not os.path.exists(tsv)
with open(tsv, "a") as f:
    if new:
        f.write("\t".join(["label", "idle", "achieved_rate", "sent", "complete", "incomplete",
            "requests", "matched", "messages", "drops_req", "drops_resp", "kernel_records",
            "wall_s", "cpu_s", "cpu_pct", "msgs_per_s", "cpu_ns_per_msg",
            "cpu_pct_per_100k_msgs_s", "load1_before", "load1_after"]) + "\n")
    f.write("\t".join(row) + "\n")
print("  " + " ".join(f"{k}={v}" for k, v in zip(["label","idle","rate","sent","complete","incomplete","req","matched","msgs","drop_req","drop_resp","records","wall","cpu_s","cpu%","msgs/s","ns/msg","cpu%/100k","load","load"], row)), file=sys.stderr)
EOF
}

STATS_BEFORE=$(sysctl -n kernel.bpf_stats_enabled)
echo "machine: $(nproc) vCPU, kernel $(uname -r), load $(cat /proc/loadavg)" >&2

# ---------------------------------------------------------------- a: BPF cost
if [[ " $SECTIONS " == *" a "* ]]; then
    echo "== a1: bpf_cost example, $RUNS runs" >&2
    A1=$BENCH_DIR/live-a1-bpf-cost.tsv
    printf 'run\twatched\tns_per_packet\trun_cnt\tus_per_round_trip\tload1\n' >"$A1"
    for (( i = 1; i <= RUNS; i++ )); do
        "$BPF_COST" 20000 "$ORDER_BYTES" >"$W/bpf_cost.out" 2>&1
        awk -v run="$i" -v load="$(load1)" '
            /^watched port/ { w = "watched"; split($0, a, "("); split(a[2], b, " "); rt[w] = b[1] }
            /^unwatched port/ { w = "unwatched"; split($0, a, "("); split(a[2], b, " "); rt[w] = b[1] }
            $1 == "both" { printf "%d\t%s\t%s\t%s\t%s\t%s\n", run, w, $(NF-1), $3, rt[w], load }' \
            "$W/bpf_cost.out" >>"$A1"
        grep -E "port|both" "$W/bpf_cost.out" | sed 's/^/  /' >&2
    done

    echo "== a2: bpftool run_time_ns/run_cnt under sim at 50k orders/s, $RUNS runs" >&2
    A2=$BENCH_DIR/live-a2-bpf-stats.tsv
    printf 'run\tprog\trun_cnt\trun_time_ns\tns_per_packet\torder_rate\tload1\tbuild\n' >"$A2"
    sysctl -qw kernel.bpf_stats_enabled=1
    BUILDS=(tree); [[ -n ${FIXSCOPE_ALT:-} ]] && BUILDS+=(alt)
    for (( i = 1; i <= RUNS; i++ )); do
    for build in "${BUILDS[@]}"; do
        FX_BIN=$FIXSCOPE; [[ $build == alt ]] && FX_BIN=$FIXSCOPE_ALT
        start_exchange "" 127.0.0.1
        start_fixscope "" lo
        run_client "" 127.0.0.1 --rate 50000 --duration "$RUN_S" --pad "$PAD"
        # This run's programs: the bpf-prog fds fixscope holds; their fdinfo carries the
        # kernel's run_time_ns/run_cnt (other engineers' fixscopes may be attached too).
        prog_stats "$FX_PID" >"$W/progs.txt"
        stop_pid "$FX_PID"; stop_pid "$EX_PID"
        read -r rate _ < <(client_fields)
        python3 - "$W/progs.txt" "$i" "$rate" "$(load1)" "$build" >>"$A2" <<'EOF2'
import sys
lines, run, rate, load, build = open(sys.argv[1]).read().split("\n"), *sys.argv[2:6]
tot_c = tot_t = 0
for l in lines:
    if not l.strip(): continue
    pid, name, c, t = l.split()
    c, t = int(c), int(t)
    tot_c += c; tot_t += t
    print(f"{run}\t{name}\t{c}\t{t}\t{t/c if c else 0:.0f}\t{rate}\t{load}\t{build}")
print(f"{run}\tboth\t{tot_c}\t{tot_t}\t{tot_t/tot_c if tot_c else 0:.0f}\t{rate}\t{load}\t{build}")
EOF2
        tail -n 1 "$A2" | sed 's/^/  /' >&2
    done
    done
    unset FX_BIN
    sysctl -qw kernel.bpf_stats_enabled="$STATS_BEFORE"
fi

# ---------------------------------------------------------------- b: sustained on lo
if [[ " $SECTIONS " == *" b "* ]]; then
    B=$BENCH_DIR/live-b-sustained.tsv
    rm -f "$B"
    echo "== b: open-loop ramp with fixscope attached: $RAMP_RATES" >&2
    MAX_RATE=""
    for r in $RAMP_RATES; do
        live_run "$B" "ramp-$r" backoff --rate "$r" --duration "$RUN_S" --pad "$PAD"
        ok=$(tail -n 1 "$B" | awk -F'\t' -v r="$r" '{ print ($3 >= 0.95 * r && $6 == 0) ? 1 : 0 }')
        if [[ $ok == 1 ]]; then MAX_RATE=$r; else break; fi
    done
    MAX_RATE=${MAX_RATE:-100000}
    echo "== b: highest open-loop rate driven: $MAX_RATE/s; $RUNS runs there" >&2
    for (( i = 1; i <= RUNS; i++ )); do
        live_run "$B" "max-$MAX_RATE" backoff --rate "$MAX_RATE" --duration "$RUN_S" --pad "$PAD"
        # FIXSCOPE_ALT: each run at the highest rate is followed by one with that binary
        # (label "…-alt"), alternated in one run for an A/B of the user-space cost.
        if [[ -n ${FIXSCOPE_ALT:-} ]]; then
            FX_BIN=$FIXSCOPE_ALT live_run "$B" "max-$MAX_RATE-alt" backoff --rate "$MAX_RATE" --duration "$RUN_S" --pad "$PAD"
        fi
    done
    # B_MAX_ONLY=1: only the ramp and the runs at the highest rate (A/B of the cost per message).
    if [[ -z ${B_MAX_ONLY:-} ]]; then
    echo "== b: closed loop, window $WINDOW x $SESSIONS sessions" >&2
    live_run "$B" "closed-w$WINDOW" backoff --window "$WINDOW" --duration "$RUN_S" --pad "$PAD"
    echo "== b: 10k orders/s, default idle strategy, $RUNS runs" >&2
    for (( i = 1; i <= RUNS; i++ )); do
        live_run "$B" "rate-10000" backoff --rate 10000 --duration "$RUN_S" --pad "$PAD"
    done
    fi
fi

# ---------------------------------------------------------------- c: observer effect
if [[ " $SECTIONS " == *" c "* ]]; then
    C=$BENCH_DIR/live-c-observer.tsv
    printf 'mode\tpair\tfixscope\tachieved_rate\tsent\tcomplete\tincomplete\tp50_us\tp99_us\tload1\tfixscope_cpu_ns\tkernel_records\tbpf_ns_per_run\n' >"$C"
    [[ ${OBS_BPF_STATS:-0} == 1 ]] && sysctl -qw kernel.bpf_stats_enabled=1
    echo "== c: veth $VETH_EX ($NS_EX, 10.201.0.1) <-> $VETH_CL ($NS_CL, 10.201.0.2)" >&2
    ip netns add "$NS_EX"
    ip netns add "$NS_CL"
    ip link add "$VETH_EX" netns "$NS_EX" type veth peer name "$VETH_CL" netns "$NS_CL"
    ip -n "$NS_EX" addr add 10.201.0.1/24 dev "$VETH_EX"
    ip -n "$NS_CL" addr add 10.201.0.2/24 dev "$VETH_CL"
    for ns in "$NS_EX" "$NS_CL"; do ip -n "$ns" link set lo up; done
    ip -n "$NS_EX" link set "$VETH_EX" up
    ip -n "$NS_CL" link set "$VETH_CL" up
    FX_EXTRA=()
    case $OBS_LAYOUT in
        shared) ;;
        split) APP_WRAP="taskset -c 0"; FIXSCOPE_WRAP="taskset -c 1"; FX_EXTRA=(-c 1) ;;
        *) echo "OBS_LAYOUT must be shared or split" >&2; exit 2 ;;
    esac
    echo "   layout $OBS_LAYOUT" >&2
    for mode in $OBS_MODES; do
    if [[ $mode == closed ]]; then LOAD=(--window "$WINDOW"); else LOAD=(--rate "$OBS_RATE"); fi
    for (( i = 1; i <= OBS_PAIRS; i++ )); do
        for with in no $OBS_VARIANTS; do
            start_exchange "$NS_EX" 10.201.0.1
            fx_cpu=0; records=0
            case $with in
                no) ;;
                yes) start_fixscope "$NS_EX" "$VETH_EX" "${FX_EXTRA[@]}" ;;
                alt) FX_BIN=$FIXSCOPE_ALT start_fixscope "$NS_EX" "$VETH_EX" "${FX_EXTRA[@]}" ;;
                normal) start_fixscope "$NS_EX" "$VETH_EX" "${FX_EXTRA[@]}" --priority normal ;;
                filter) FX_PORT=$((PORT + 1000)) start_fixscope "$NS_EX" "$VETH_EX" "${FX_EXTRA[@]}" ;;
                *) echo "unknown OBS_VARIANTS entry: $with" >&2; exit 2 ;;
            esac
            l=$(load1)
            [[ $with != no ]] && cpu0=$(cpu_ns "$FX_PID")
            run_client "$NS_CL" 10.201.0.1 "${LOAD[@]}" --duration "$RUN_S" --pad "$PAD"
            bpf_ns=nan
            if [[ $with != no ]]; then
                fx_cpu=$(( $(cpu_ns "$FX_PID") - cpu0 ))
                if [[ ${OBS_BPF_STATS:-0} == 1 ]]; then
                    bpf_ns=$(prog_stats "$FX_PID" | awk '{c += $3; t += $4} END {printf "%.0f", c ? t / c : 0}')
                fi
                sleep 0.3; stop_pid "$FX_PID"
                read -r req matched _ dreq dresp records _ _ _ _ raises < <(fixscope_fields)
                echo "  fixscope ($with): requests $req matched $matched drops $dreq/$dresp records $records cpu $((fx_cpu / 1000000)) ms consumer raised $raises times" >&2
            fi
            stop_pid "$EX_PID"
            read -r rate sent comp inc p50 p99 < <(client_fields)
            printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$i" "$with" "$rate" "$sent" "$comp" "$inc" "$p50" "$p99" "$l" "$fx_cpu" "$records" "$bpf_ns" >>"$C"
            echo "  $mode pair $i fixscope=$with rate $rate p50 ${p50}us p99 ${p99}us load $l" >&2
        done
    done
    done
    ip netns del "$NS_EX"; ip netns del "$NS_CL"
    sysctl -qw kernel.bpf_stats_enabled="$STATS_BEFORE"
fi

echo
echo "fixscope $REV; machine: $(nproc) vCPU, kernel $(uname -r), load now $(cat /proc/loadavg)"
python3 - "$BENCH_DIR" "$SECTIONS" <<'EOF'
import csv, os, statistics as st, sys
d, sections = sys.argv[1], sys.argv[2].split()
def rows(name):
    p = os.path.join(d, name)
    return list(csv.DictReader(open(p), delimiter="\t")) if os.path.exists(p) else []
def med(xs): return st.median(xs) if xs else float("nan")
def rng(xs): return f"{min(xs):.0f}–{max(xs):.0f}" if xs else "-"
if "a" in sections:
    print("\n### a. BPF cost per hooked packet")
    r = rows("live-a1-bpf-cost.tsv")
    for w in ("watched", "unwatched"):
        xs = [float(x["ns_per_packet"]) for x in r if x["watched"] == w]
        if xs: print(f"- bpf_cost example, {w} port: median {med(xs):.0f} ns/packet (range {rng(xs)}), {len(xs)} runs")
    for b in ("tree", "alt"):
        r = [x for x in rows("live-a2-bpf-stats.tsv") if x["prog"] == "both" and x.get("build", "tree") == b]
        xs = [float(x["ns_per_packet"]) for x in r]
        if xs: print(f"- sim 50k orders/s on lo, bpftool stats ({b} build): median {med(xs):.0f} ns/packet (range {rng(xs)}), {len(xs)} runs")
if "b" in sections:
    print("\n### b/d. Sustained on lo with fixscope attached")
    print("| run | achieved orders/s | requests | matched | ring drops req/resp | msgs/s | fixscope CPU % | CPU % per 100k msgs/s | ns CPU/msg | load1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for x in rows("live-b-sustained.tsv"):
        print(f"| {x['label']} | {float(x['achieved_rate']):,.0f} | {x['requests']} | {x['matched']} | {x['drops_req']}/{x['drops_resp']} | "
              f"{float(x['msgs_per_s']):,.0f} | {x['cpu_pct']} | {x['cpu_pct_per_100k_msgs_s']} | {x['cpu_ns_per_msg']} | {x['load1_before']}–{x['load1_after']} |")
    for lab in sorted({x["label"] for x in rows("live-b-sustained.tsv")}):
        g = [x for x in rows("live-b-sustained.tsv") if x["label"] == lab]
        if len(g) < 2: continue
        f = lambda k: [float(x[k]) for x in g]
        print(f"- {lab}: {len(g)} runs; medians: rate {med(f('achieved_rate')):,.0f}/s, CPU {med(f('cpu_pct')):.1f}% "
              f"(range {min(f('cpu_pct')):.1f}–{max(f('cpu_pct')):.1f}), CPU%/100k msgs/s {med(f('cpu_pct_per_100k_msgs_s')):.2f}, "
              f"{med(f('cpu_ns_per_msg')):.0f} ns/msg (range {rng(f('cpu_ns_per_msg'))}); drops total {sum(f('drops_req'))+sum(f('drops_resp')):.0f}; "
              f"matched==requests in {sum(1 for x in g if x['matched']==x['requests'])}/{len(g)}")
if "c" in sections:
    for mode in ("closed", "open"):
        r = [x for x in rows("live-c-observer.tsv") if x["mode"] == mode]
        title = "closed loop, window per session" if mode == "closed" else "open loop at a fixed rate"
        print(f"\n### c. Observer effect (veth between namespaces, {title})")
        m = {}
        names = {"no": "not attached", "yes": "attached", "alt": "attached, FIXSCOPE_ALT build", "normal": "attached, --priority normal", "filter": "attached, port not in traffic (filter only)"}
        variants = list(dict.fromkeys(x["fixscope"] for x in r))
        print("| fixscope | runs | orders/s median (range) | p50 us median | p99 us median | fixscope user-space CPU ns/order | kernel records/order | BPF ns/run median |")
        print("|---|---|---|---|---|---|---|---|")
        for w in variants:
            g = [x for x in r if x["fixscope"] == w]
            rate = [float(x["achieved_rate"]) for x in g]
            p50 = [float(x["p50_us"]) for x in g]; p99 = [float(x["p99_us"]) for x in g]
            cpu = [float(x["fixscope_cpu_ns"]) / max(float(x["complete"]), 1) for x in g]
            recs = [float(x["kernel_records"]) / max(float(x["complete"]), 1) for x in g]
            m[w] = (rate, p50, p99)
            bpf = [float(x["bpf_ns_per_run"]) for x in g if x.get("bpf_ns_per_run", "nan") not in ("nan", "", "0")]
            if g: print(f"| {names.get(w, w)} | {len(g)} | {med(rate):,.0f} ({rng(rate)}) | {med(p50):.1f} | {med(p99):.1f} | {med(cpu):.0f} | {med(recs):.2f} | {f'{med(bpf):.0f} ({rng(bpf)})' if bpf else '-'} |")
        for w in variants:
            if w == "no" or not m.get("no") or not m["no"][0] or not m[w][0]: continue
            pairs = [y / n for n, y in zip(m["no"][0], m[w][0])]
            print(f"\n{names.get(w, w)} / not attached, orders/s: ratio of medians {med(m[w][0])/med(m['no'][0]):.3f}; per pair median {med(pairs):.3f} (range {min(pairs):.3f}–{max(pairs):.3f})")
            print(f"p50: {med(m[w][1])/med(m['no'][1]):.3f}; p99: {med(m[w][2])/med(m['no'][2]):.3f}")
    r = rows("live-c-observer.tsv")
    loads = [float(x["load1"]) for x in r]
    if loads: print(f"load1 during c: median {med(loads):.2f} (range {min(loads):.2f}–{max(loads):.2f})")
EOF
