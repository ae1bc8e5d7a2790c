#!/usr/bin/env bash
# Runs inside a test-kernel VM (scripts/test-kernel.sh boots it with virtme-ng): prepares what
# the live tests need on a bare VM, then runs the verifier-acceptance test and the live
# end-to-end tests with the test binaries the host built. The host's files are visible
# read-only; /tmp is the VM's own.
#
# Usage: inside.sh REPO PHASES LIVE_TESTS_BIN LIVE_E2E_BIN BREAKDOWN_E2E_BIN [OUT_DIR]
# OUT_DIR (writable from the VM): where the kernel's symbols go, for the host's diagnosis of
# a VM that stops answering (scripts/vm/vcpu-where.py).
# PHASES: "all", or "verifier" (load every program in every configuration, attach nothing).
# Prints "FIXSCOPE-VM-RESULT <failures>" last; the host trusts only that line (a VM that
# panics or hangs cannot print it).
set -uo pipefail

repo=$1 phases=$2 live_bin=$3 e2e_bin=$4 breakdown_bin=$5 out_dir=${6:-}
release=$(uname -r)
echo "== uname -r: $release"
if [ -n "$out_dir" ]; then
    cp /proc/kallsyms "$out_dir/kallsyms-$release" 2>/dev/null ||
        echo "== (no kallsyms copy in $out_dir: a hang cannot be symbolised from the host)"
fi
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# bpffs and tracefs (virtme-ng mounts tracefs, not bpffs); libbpf needs neither for tc/TCX,
# but bpftool and the kernel's own diagnostics expect them.
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing || true
# The modules the tests use; on Debian's kernels they are modules, not built in. A missing
# one fails here, by name, not later as an obscure netlink error.
for m in sch_ingress cls_bpf veth 8021q; do
    if ! modprobe "$m"; then
        fail "modprobe $m (is /lib/modules/$release there?)"
    fi
done
ip link set lo up
# udev's coldplug runs the host's 85-hwclock.rules for rtc0 (`hwclock --hctosys`) in the guest:
# a step of the guest's wall clock, as large as its drift from the emulated RTC (under TCG the
# guest's TSC can be miscalibrated: "tsc: Unable to calibrate against PIT"; 70 ms on 7.3). A
# step while a test runs moves UNIX time against the monotonic clock under the test's feet;
# let it happen first. The offset is printed at start and end: a step during the run shows.
command -v udevadm >/dev/null && { udevadm settle --timeout=300 || echo "udevadm settle: timed out"; }
wall_offset() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }
start_offset=$(wall_offset)
echo "== CLOCK_REALTIME - CLOCK_MONOTONIC at start: $start_offset ns"
for t in tc ip tcpdump tshark; do
    command -v "$t" >/dev/null || fail "$t not found in the VM"
done
# What the kernel can do, probed as a user would (`fixscope check`), and from it, not from
# the version number, what runs: TCX where the probe attached a TCX link, the clsact
# fallback elsewhere. The tests that require TCX are left out by name where it is missing
# (they fail loudly by design).
echo "== RLIMIT_MEMLOCK: $(ulimit -l) KiB (the capture raises it where the kernel charges BPF maps to it)"
fixscope=$repo/target/release/fixscope
"$fixscope" check || fail "fixscope check: live capture cannot run here"
attach=$("$fixscope" check --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["attach_mode"])')
echo "== attach mode: $attach"
skip=()
if [ "$attach" != tcx ]; then
    skip=(--skip tcx_links --skip lifecycle_leaves_nothing_attached_tcx)
fi

# No KVM here: the CPU is emulated, so the live e2e tests widen their loose bounds on the
# kernel's own TCP path (never the exact per-order checks); see live_e2e.rs `tolerance`.
export FIXSCOPE_TEST_EMULATED_CPU=1

# The kernel's warnings and errors go into the log as they come (an RCU stall, a soft
# lockup or a BPF splat explains a hang or a failure that the tests alone cannot).
dmesg --follow --level=emerg,alert,crit,err,warn --time-format=reltime 2>/dev/null |
    sed -u 's/^/kernel: /' &
# A hung test binary fails its step after this long and the VM goes on (rather than the
# whole VM running into FIXSCOPE_VM_TIMEOUT with nothing said).
step_timeout=${FIXSCOPE_VM_STEP_TIMEOUT:-900}

# A step that runs far past its usual time gets a diagnosis in the log before the timeout ends
# it: every task's state, CPU time and kernel stack, the BPF programs' run counts, and the
# kernel's backtrace of every CPU (sysrq l). A hang then says where it spins.
watch_after=${FIXSCOPE_VM_WATCH_AFTER:-240}
diagnose() { # NAME: what the guest is doing now
    echo "== watchdog: $1 still running after ${watch_after} s; diagnosis follows"
    cat /proc/loadavg
    ps -eLo pid,tid,stat,pcpu,time,wchan:28,comm,args --sort=-pcpu | head -40
    # Kernel stacks of what runs or waits uninterruptibly, and of every test process.
    for t in /proc/[0-9]*/task/[0-9]*; do
        local comm state
        comm=$(cat "$t/comm" 2>/dev/null) || continue
        state=$(awk '{print $3}' "$t/stat" 2>/dev/null)
        case "$state:$comm" in
        R:* | D:* | *:fixscope* | *:breakdown_e2e* | *:live_e2e* | *:live-*)
            echo "-- $t ($comm): $(awk '{print "state " $3 " utime " $14 " stime " $15}' "$t/stat" 2>/dev/null)"
            sed 's/^/   /' "$t/stack" 2>/dev/null | head -20
            ;;
        esac
    done
    command -v bpftool >/dev/null && bpftool prog show 2>/dev/null | grep -E 'run_cnt|name' | head -40
    grep -E 'NET_RX|NET_TX|TIMER|SCHED' /proc/softirqs
    echo 1 >/proc/sys/kernel/sysrq 2>/dev/null && echo l >/proc/sysrq-trigger 2>/dev/null
    sleep 2
    dmesg | tail -n 120 | sed 's/^/kernel-tail: /'
}

run() { # NAME DIR COMMAND...: one test binary, timed, from its package's directory
    local name=$1 dir=$2
    shift 2
    local t0=$SECONDS
    echo "== $name: $*"
    (sleep "$watch_after" && diagnose "$name" && sleep 120 && diagnose "$name") &
    local watchdog=$!
    if (cd "$dir" && timeout --kill-after=10 "$step_timeout" "$@"); then
        echo "== $name: ok ($((SECONDS - t0)) s)"
    else
        fail "$name ($((SECONDS - t0)) s)"
    fi
    kill "$watchdog" 2>/dev/null
    wait "$watchdog" 2>/dev/null
}

# PHASES "all" runs 1-5; a comma list of "verifier,live,e2e,breakdown,tls" runs those (a hang's
# diagnosis: FIXSCOPE_VM_PHASES=breakdown).
want() { [ "$phases" = all ] || [[ ",$phases," == *",$1,"* ]]; }

# 1. Verifier acceptance: every program in every configuration that changes what the
#    verifier sees, for every attach type this kernel has (prints the complexity), and the
#    probes against the upstream versions (these kernels carry no BPF backports).
want verifier && run "verifier" "$repo/crates/fixscope-live" "$live_bin" --test-threads=1 --nocapture \
    verifier:: probes::
# ... also without the kernel's BTF (hidden behind an empty tmpfs in a private mount
#     namespace): the TC programs use no CO-RE, so it must not matter.
want verifier && run "verifier-without-kernel-btf" "$repo/crates/fixscope-live" \
    unshare -m sh -c 'mount -t tmpfs none /sys/kernel/btf && exec "$0" "$@"' "$live_bin" \
    --exact verifier::every_program_loads_in_every_configuration

if want live || want e2e || want breakdown; then
    # Two other probes on sched_switch for the VM's life, so that --breakdown's attach and
    # detach never make the kernel patch __schedule: under TCG, Debian 12's 6.1 guests made
    # no visible progress through that patching (docs/kernels.md, round 5). Like a production host whose
    # monitoring already traces the scheduler. FIXSCOPE_VM_HOLD_SCHED_SWITCH=0: without.
    if [ "${FIXSCOPE_VM_HOLD_SCHED_SWITCH:-1}" != 0 ]; then
        python3 "$repo/scripts/vm/hold-sched-switch.py" &
        hold_pid=$!
        sleep 2
        kill -0 "$hold_pid" 2>/dev/null || fail "hold-sched-switch.py did not stay up"
    fi
    # 2. The live crate's tests: attach (auto and the clsact fallback), byte-exact capture
    #    on lo and veth, clsact hygiene (a foreign filter survives), leftovers after SIGKILL,
    #    --breakdown's socket and scheduler hooks.
    #    --nocapture: each run's late_records and retransmissions go into the log.
    want live && run "fixscope-live tests" "$repo/crates/fixscope-live" "$live_bin" --test-threads=1 \
        --nocapture "${skip[@]}" --skip verifier:: --skip probes::

    # 3. End to end with the binary: the simulator's orders measured exactly against its
    #    truth, exit/SIGTERM/SIGKILL then `fixscope detach` removing only ours. --nocapture:
    #    the per-order excess over the truth (the timestamp error docs/kernels.md publishes).
    want e2e && run "live e2e" "$repo/crates/fixscope" "$e2e_bin" --test-threads=1 --nocapture "${skip[@]}" \
        loopback_delay_distributions_match_truth_order_by_order \
        client_role_and_ipv6_match_truth \
        veth_between_namespaces_matches_truth \
        lifecycle_leaves_nothing_attached_tc \
        lifecycle_leaves_nothing_attached_tcx

    # 4. --breakdown end to end: each stage of each order against the exchange's truth.
    want breakdown && run "breakdown e2e" "$repo/crates/fixscope" "$breakdown_bin" --test-threads=1 --nocapture
fi

# 5. FIX over TLS without keys: `live --tls-uprobes` on this kernel's TCP hooks, every
#    call checked against the decryption of the same packets.
if want tls; then
    if [ -z "${FIXSCOPE_VM_TLS_TESTS:-}" ]; then
        fail "phase tls: FIXSCOPE_VM_TLS_TESTS missing"
    else
        run "tls uprobes" "$repo/crates/fixscope" "$FIXSCOPE_VM_TLS_TESTS" --test-threads=1 --nocapture
    fi
fi

# 6. `make dist`'s static binary, only when the phase is named (it needs `make dist`):
#    `check`, `pcap`, `live -i lo` and `live --tap` in an empty root on this kernel.
if [[ ",$phases," == *",dist,"* ]]; then
    if [ -z "${FIXSCOPE_VM_DIST_TESTS:-}" ] || [ ! -x "${FIXSCOPE_DIST_BIN:-}" ]; then
        fail "phase dist: FIXSCOPE_VM_DIST_TESTS or FIXSCOPE_DIST_BIN missing"
    else
        echo "== static binary: $("$FIXSCOPE_DIST_BIN" --version) ($FIXSCOPE_DIST_BIN)"
        run "static binary" "$repo/crates/fixscope" "$FIXSCOPE_VM_DIST_TESTS" --ignored \
            --test-threads=1 --nocapture
    fi
fi

[ -n "${hold_pid:-}" ] && kill "$hold_pid" 2>/dev/null
end_offset=$(wall_offset)
echo "== CLOCK_REALTIME - CLOCK_MONOTONIC at end: $end_offset ns (moved $(( (end_offset - start_offset) / 1000 )) us during the run)"
echo "FIXSCOPE-VM-RESULT $failures"
exit $((failures > 0))
