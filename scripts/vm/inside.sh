#!/usr/bin/env bash
# Runs inside a test-kernel VM (scripts/test-kernel.sh boots it with virtme-ng): prepares what
# the live tests need on a bare VM, then runs the verifier-acceptance test and the live
# end-to-end tests with the test binaries the host built. The host's files are visible
# read-only; /tmp is the VM's own.
#
# Usage: inside.sh REPO LIVE_TESTS_BIN LIVE_E2E_BIN
# Prints "FIXSCOPE-VM-RESULT <failures>" last; the host trusts only that line (a VM that
# panics or hangs cannot print it).
set -uo pipefail

repo=$1 live_bin=$2 e2e_bin=$3
release=$(uname -r)
echo "== uname -r: $release"
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
for t in tc ip tcpdump tshark; do
    command -v "$t" >/dev/null || fail "$t not found in the VM"
done
# Where the kernel's BTF is (the programs do not need it; reported for the table).
[ -e /sys/kernel/btf/vmlinux ] && echo "== kernel BTF: yes" || echo "== kernel BTF: no"

major=${release%%.*}
rest=${release#*.}
minor=${rest%%[!0-9]*}
if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 6 ]; }; then
    tcx=yes
    skip=()
else
    # TCX arrived in 6.6: the tests that require it fail loudly by design (require_kernel),
    # so they are left out here, by name; the clsact fallback is what `auto` picks.
    tcx=no
    skip=(--skip tcx_links --skip lifecycle_leaves_nothing_attached_tcx)
fi
echo "== TCX: $tcx"

# No KVM here: the CPU is emulated, so the live e2e tests widen their loose bounds on the
# kernel's own TCP path (never the exact per-order checks); see live_e2e.rs `tolerance`.
export FIXSCOPE_TEST_EMULATED_CPU=1

run() { # NAME DIR COMMAND...: one test binary, timed, from its package's directory
    local name=$1 dir=$2
    shift 2
    local t0=$SECONDS
    echo "== $name: $*"
    if (cd "$dir" && "$@"); then
        echo "== $name: ok ($((SECONDS - t0)) s)"
    else
        fail "$name ($((SECONDS - t0)) s)"
    fi
}

# 1. Verifier acceptance: every program in every configuration that changes what the
#    verifier sees, for every attach type this kernel has (prints the complexity).
run "verifier" "$repo/crates/fixscope-live" "$live_bin" --exact --nocapture \
    verifier::every_program_loads_in_every_configuration
# ... also without the kernel's BTF (hidden behind an empty tmpfs in a private mount
#     namespace): the programs use no CO-RE, so it must not matter.
run "verifier-without-kernel-btf" "$repo/crates/fixscope-live" \
    unshare -m sh -c 'mount -t tmpfs none /sys/kernel/btf && exec "$0" "$@"' "$live_bin" \
    --exact verifier::every_program_loads_in_every_configuration

# 2. The live crate's tests: attach (auto and the clsact fallback), byte-exact capture on lo
#    and veth, clsact hygiene (a foreign filter survives), leftovers after SIGKILL.
run "fixscope-live tests" "$repo/crates/fixscope-live" "$live_bin" --test-threads=1 "${skip[@]}"

# 3. End to end with the binary: the simulator's orders measured exactly against its
#    truth, exit/SIGTERM/SIGKILL then `fixscope detach` removing only ours.
run "live e2e" "$repo/crates/fixscope" "$e2e_bin" --test-threads=1 "${skip[@]}" \
    loopback_delay_distributions_match_truth_order_by_order \
    client_role_and_ipv6_match_truth \
    veth_between_namespaces_matches_truth \
    lifecycle_leaves_nothing_attached_tc \
    lifecycle_leaves_nothing_attached_tcx

echo "FIXSCOPE-VM-RESULT $failures"
exit $((failures > 0))
