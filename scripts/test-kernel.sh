#!/usr/bin/env bash
# `make test-kernel`: boots each kernel of the matrix in a VM (virtme-ng + QEMU) and runs the
# verifier-acceptance and probe tests, the live crate's tests, the live end-to-end tests and
# the --breakdown end-to-end tests inside, with the test binaries built here (the VM sees
# this machine's files read-only). Fails if anything fails in any VM.
#
#   scripts/test-kernel.sh [LABEL|/path/to/vmlinuz-RELEASE ...]
#   FIXSCOPE_VM_PHASES=verifier scripts/test-kernel.sh 5.10 6.1     (`make test-verifier`)
#
# Default matrix (labels of scripts/vm/fetch-kernels.sh, which fetches Debian's packages into
# target/kernels without installing them): 5.10 (Debian 11), 6.1 and 6.1-rt (Debian 12, no
# TCX: the clsact fallback), 6.12 (TCX) and 7.x (trixie-backports: the newest verifier).
# QEMU runs without KVM (--disable-kvm): with KVM, `-cpu host` aborts on these machines
# ("failed to set MSR 0x10a"). Environment: FIXSCOPE_VM_MEMORY (2G), FIXSCOPE_VM_CPUS (2),
# FIXSCOPE_VM_TIMEOUT (seconds per VM, 2400), FIXSCOPE_VNG_VENV (~/.cache/fixscope-vng),
# FIXSCOPE_VM_PHASES ("all"; "verifier": load every program in every configuration, attach
# nothing — CI's check; or a comma list of verifier,live,e2e,breakdown,tls,dist — tls runs
# `live --tls-uprobes` against real OpenSSL (tls_uprobes.rs); dist, only when named, runs
# `make dist`'s static binary: `make test-dist-kernels`), FIXSCOPE_VM_STEP_TIMEOUT
# (seconds per test binary in the VM, 900), FIXSCOPE_VM_WATCH_AFTER (seconds after which a
# step still running gets a diagnosis from inside, 240), FIXSCOPE_VM_STALL_AFTER (seconds of a
# silent log after which the host asks QEMU where the vCPUs are, 300). Logs: target/test-kernel/<NN>-<release>.log (NN: run order); a summary table at the end
# (docs/kernels.md), also written to target/test-kernel/summary.md.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
memory=${FIXSCOPE_VM_MEMORY:-2G}
cpus=${FIXSCOPE_VM_CPUS:-2}
vm_timeout=${FIXSCOPE_VM_TIMEOUT:-2400}
phases=${FIXSCOPE_VM_PHASES:-all}
venv=${FIXSCOPE_VNG_VENV:-$HOME/.cache/fixscope-vng}
export PATH=$HOME/.cargo/bin:$PATH

labels=()
paths=()
for a in "$@"; do
    case $a in
    /* | ./*) paths+=("$a") ;;
    *) labels+=("$a") ;;
    esac
done
[ $# -gt 0 ] || labels=(5.10 6.1 6.1-rt 6.12 7.x)

# qemu, busybox, udev, kmod, virtme-ng (in a venv), and the labelled kernels: installed or
# fetched if missing.
FIXSCOPE_VNG_VENV=$venv FIXSCOPE_KERNELS="${labels[*]}" scripts/install-deps.sh --kernel-test
export PATH=$venv/bin:$PATH # vng runs virtme-run from PATH

kernels=()
names=()
if [ ${#labels[@]} -gt 0 ]; then
    while read -r label release; do
        kernels+=("$repo/target/kernels/root/boot/vmlinuz-$release")
        names+=("$label")
    done < <(scripts/vm/fetch-kernels.sh "${labels[@]}")
fi
for k in "${paths[@]}"; do
    kernels+=("$k")
    names+=("${k##*/vmlinuz-}")
done
for k in "${kernels[@]}"; do
    [ -r "$k" ] || { echo "test-kernel: no kernel image $k" >&2; exit 1; }
    release=${k##*/vmlinuz-}
    moddir=$(dirname "$(dirname "$k")")/lib/modules/$release
    [ -d "$moddir" ] || { echo "test-kernel: no $moddir" >&2; exit 1; }
done

# The test binaries, and the examples and the fixscope binary they run — optimised: QEMU
# without KVM runs user space ~10-50x slower than the host, and the e2e tests' start-up and
# timeout limits assume an ordinary machine.
cargo build --release -p fixscope-live --examples
cargo build --release --bin fixscope
bins=$(cargo test --release --no-run --message-format=json -p fixscope-live --test live \
    -p fixscope --test live_e2e --test breakdown_e2e |
    python3 "$repo/scripts/vm/test-binaries.py" live live_e2e breakdown_e2e)
read -r live_bin e2e_bin breakdown_bin <<<"$bins"
# Phase "tls" (FIX over TLS without keys): `live --tls-uprobes` on each kernel's TCP hooks
# (fexit where BPF trampolines work, the socket tracepoints where not), against Python's
# OpenSSL.
tls_tests=""
if [ "$phases" = all ] || [[ ",$phases," == *",tls,"* ]]; then
    tls_tests=$(cargo test --release --no-run --message-format=json -p fixscope --test tls_uprobes |
        python3 "$repo/scripts/vm/test-binaries.py" tls_uprobes)
fi
# Phase "dist" (`make test-dist-kernels`): `make dist`'s static binary, not the one
# built above, in an empty root inside each VM (crates/fixscope/tests/dist_binary.rs).
dist_tests="" dist_bin=""
if [[ ",$phases," == *",dist,"* ]]; then
    dist_bin=$(ls "$repo"/dist/fixscope-*-x86_64-linux 2>/dev/null | head -1)
    [ -x "$dist_bin" ] || { echo "test-kernel: phase dist needs \`make dist\` first" >&2; exit 1; }
    dist_tests=$(cargo test --release --no-run --message-format=json -p fixscope --test dist_binary |
        python3 "$repo/scripts/vm/test-binaries.py" dist_binary)
fi

logdir=$repo/target/test-kernel
stall_after=${FIXSCOPE_VM_STALL_AFTER:-300}
# LOG MONITOR KALLSYMS: once the log has not grown for $stall_after s, where the vCPUs are
# (twice, a minute apart), appended to the log; then the VM is stopped (its QEMU, found by
# its own monitor socket's path), rather than left to run into $vm_timeout.
watch_stall() {
    local log=$1 monitor=$2 map=$3 size=-1 still=0 reports=0
    while true; do
        if [ "$reports" -ge 2 ]; then
            local qemu
            qemu=$(pgrep -f -- "unix:$monitor,server" | head -n 1)
            echo "== host watchdog: stopping the stalled VM (QEMU pid ${qemu:-not found})" >>"$log"
            [ -n "$qemu" ] && kill "$qemu"
            return
        fi
        sleep 10
        local now
        now=$(stat -c %s "$log" 2>/dev/null || echo 0)
        if [ "$now" != "$size" ]; then
            size=$now still=0
            continue
        fi
        still=$((still + 10))
        if [ "$still" -ge "$stall_after" ]; then
            echo "== host watchdog: no output for ${still} s; where the vCPUs are:" >>"$log"
            python3 "$repo/scripts/vm/vcpu-where.py" "$monitor" "$map" 10 >>"$log" 2>&1
            # (its own lines are not the guest's progress)
            reports=$((reports + 1)) still=$((stall_after - 60))
            size=$(stat -c %s "$log" 2>/dev/null || echo 0)
        fi
    done
}
mkdir -p "$logdir"
summary=()
failed=0
for i in "${!kernels[@]}"; do
    k=${kernels[$i]}
    release=${k##*/vmlinuz-}
    # One log per VM run, in run order (a label may be given more than once: repeated runs).
    log=$logdir/$(printf '%02d' $((i + 1)))-$release.log
    echo "== test-kernel: booting $release (${names[$i]}; no KVM, $cpus vCPUs, $memory; $phases); log: $log"
    t0=$SECONDS
    # A QEMU monitor socket per VM, and nokaslr, so that a VM whose log stops growing (a hang
    # whose guest cannot report itself: stalled timers, CPUs spinning with interrupts off) is
    # diagnosed from here: scripts/vm/vcpu-where.py prints where each vCPU is, as kernel
    # symbols (the guest's own /proc/kallsyms, which inside.sh leaves in $logdir: Debian's
    # System.map is a stub), into the log.
    monitor=$logdir/$(printf '%02d' $((i + 1))).monitor
    rm -f "$monitor"
    : >"$log"
    set +e
    timeout --kill-after=30 "$vm_timeout" vng --run "$k" --user root --disable-kvm \
        --cpus "$cpus" --memory "$memory" --append nokaslr --rwdir "$logdir" \
        --qemu-opts="-monitor unix:$monitor,server=on,wait=off" -- \
        "$(printf '%q ' env "FIXSCOPE_VM_WATCH_AFTER=${FIXSCOPE_VM_WATCH_AFTER:-240}" \
            "FIXSCOPE_VM_STEP_TIMEOUT=${FIXSCOPE_VM_STEP_TIMEOUT:-900}" \
            "FIXSCOPE_VM_HOLD_SCHED_SWITCH=${FIXSCOPE_VM_HOLD_SCHED_SWITCH:-1}" \
            "FIXSCOPE_VM_DIST_TESTS=$dist_tests" "FIXSCOPE_DIST_BIN=$dist_bin" \
            "FIXSCOPE_VM_TLS_TESTS=$tls_tests" \
            "$repo/scripts/vm/inside.sh" "$repo" "$phases" "$live_bin" "$e2e_bin" \
            "$breakdown_bin" "$logdir")" \
        </dev/null 2>&1 | tee -a "$log" &
    vm=$!
    watch_stall "$log" "$monitor" "$logdir/kallsyms-$release" &
    watcher=$!
    wait "$vm"
    rc=$?
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null
    rm -f "$monitor"
    set -e
    secs=$((SECONDS - t0))
    # Pass only with a clean exit AND the VM's own verdict line saying no failures: a VM that
    # panics, hangs (timeout) or loses its output cannot pass.
    verdict=$(grep -a -o 'FIXSCOPE-VM-RESULT [0-9]*' "$log" | tail -n 1 || true)
    if [ "$rc" -eq 0 ] && [ "$verdict" = "FIXSCOPE-VM-RESULT 0" ]; then
        result=pass
    else
        result="FAIL (exit $rc, ${verdict:-no verdict line})"
        failed=1
    fi
    # What `fixscope check` said inside (the probes decide the attach mode, not the version).
    attach=$(awk '/^== attach mode: / {a = $4} END {print a}' "$log")
    # From libtest's own "test result:" lines (per-test lines can be interleaved with
    # libbpf's messages on stderr).
    # (awk, not grep: a pattern that matches nothing must not end the script under pipefail)
    passed=$(awk '/test result: [a-zA-Z]+\. [0-9]+ passed/ {
        for (i = 1; i < NF; i++) if ($(i + 1) ~ /^passed;?$/) n += $i } END {print n + 0}' "$log")
    tfailed=$(awk '/test result:/ {
        for (i = 1; i < NF; i++) if ($(i + 1) ~ /^failed;?$/) n += $i } END {print n + 0}' "$log")
    late=$(awk 'match($0, /late_records [0-9]+/) {
        n += substr($0, RSTART + 13, RLENGTH - 13)} END {print n + 0}' "$log")
    # (the byte-exact check's own unit tests, common::allowances, print the same line)
    retrans=$(awk '/retransmitted segment\(s\)/ && !/allowances/ {n++} END {print n + 0}' "$log")
    summary+=("| $release (${names[$i]}) | ${attach:-?} | $passed passed, $tfailed failed | $late late, $retrans with retransmissions | ${secs} s | $result |")
done

{
    echo "| kernel | attach mode (probed) | tests | late records, checks with retransmissions (TCG) | VM time | result |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${summary[@]}"
} | tee "$logdir/summary.md"
exit "$failed"
