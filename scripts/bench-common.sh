# Shared by the A/B benchmark scripts (sourced): the settings they all take and the timing,
# ratio and median helpers.
RUNS=${RUNS:-7}
PORT=${PORT:-9878}
CAP=${CAP:?CAP=capture}
WORK=${WORK:-$(mktemp -d)}
(( RUNS >= 1 && RUNS <= 30 )) || { echo "RUNS must be 1..30" >&2; exit 2; }

now_ns() { date +%s%N; }
# timed_pcap BIN OUT ERR [flags...]: `BIN pcap CAP -p PORT --json flags`, the capture read
# into the page cache first; prints wall seconds.
timed_pcap() {
    local bin=$1 out=$2 err=$3; shift 3
    cat "$CAP" >/dev/null
    local t0 t1
    t0=$(now_ns)
    "$bin" pcap "$CAP" -p "$PORT" --json "$@" >"$out" 2>"$err"
    t1=$(now_ns)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b-a)/1e9}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.4f", a / b}'; }
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
