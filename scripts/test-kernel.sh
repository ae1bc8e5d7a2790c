#!/usr/bin/env bash
# `make test-kernel`: boots each kernel of the matrix in a VM (virtme-ng + QEMU) and runs the
# verifier-acceptance test and the live end-to-end tests inside, with the test binaries built
# here (the VM sees this machine's files read-only). Fails if anything fails in any VM.
#
#   scripts/test-kernel.sh [/boot/vmlinuz-... ...]
#
# Default matrix: Debian 12's own kernels — the newest /boot/vmlinuz-6.1.* (linux-image-amd64:
# no TCX, so the clsact fallback) and /boot/vmlinuz-6.12.* (linux-image-6.12-amd64: TCX).
# QEMU runs without KVM (--disable-kvm): with KVM, `-cpu host` aborts on these machines
# ("failed to set MSR 0x10a"). Environment: FIXSCOPE_VM_MEMORY (2G), FIXSCOPE_VM_CPUS (2),
# FIXSCOPE_VM_TIMEOUT (seconds per VM, 2400), FIXSCOPE_VNG_VENV (~/.cache/fixscope-vng).
# Logs: target/test-kernel/<release>.log; a summary table at the end (docs/kernels.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
memory=${FIXSCOPE_VM_MEMORY:-2G}
cpus=${FIXSCOPE_VM_CPUS:-2}
vm_timeout=${FIXSCOPE_VM_TIMEOUT:-2400}
venv=${FIXSCOPE_VNG_VENV:-$HOME/.cache/fixscope-vng}
export PATH=$HOME/.cargo/bin:$PATH

# qemu, Debian's kernels and virtme-ng (in a venv): installed if missing.
FIXSCOPE_VNG_VENV=$venv scripts/install-deps.sh --kernel-test
export PATH=$venv/bin:$PATH # vng runs virtme-run from PATH

newest() { ls -v $1 2>/dev/null | tail -n 1; }
if [ $# -gt 0 ]; then
    kernels=("$@")
else
    kernels=("$(newest '/boot/vmlinuz-6.1.*')" "$(newest '/boot/vmlinuz-6.12.*')")
fi
for k in "${kernels[@]}"; do
    [ -r "$k" ] || { echo "test-kernel: no kernel image $k" >&2; exit 1; }
    release=${k#/boot/vmlinuz-}
    [ -d "/lib/modules/$release" ] || { echo "test-kernel: no /lib/modules/$release" >&2; exit 1; }
done

# The test binaries, and the examples and the fixscope binary they run — optimised: QEMU
# without KVM runs user space ~10-50x slower than the host, and the e2e tests' start-up and
# timeout limits assume an ordinary machine.
cargo build --release -p fixscope-live --examples
bins=$(cargo test --release --no-run --message-format=json -p fixscope-live --test live \
    -p fixscope --test live_e2e | python3 "$repo/scripts/vm/test-binaries.py" live live_e2e)
read -r live_bin e2e_bin <<<"$bins"

logdir=$repo/target/test-kernel
mkdir -p "$logdir"
summary=()
failed=0
for k in "${kernels[@]}"; do
    release=${k#/boot/vmlinuz-}
    log=$logdir/$release.log
    echo "== test-kernel: booting $release (no KVM, $cpus vCPUs, $memory); log: $log"
    t0=$SECONDS
    set +e
    timeout --kill-after=30 "$vm_timeout" vng --run "$k" --user root --disable-kvm \
        --cpus "$cpus" --memory "$memory" -- \
        "$(printf '%q ' "$repo/scripts/vm/inside.sh" "$repo" "$live_bin" "$e2e_bin")" \
        </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
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
    tcx=$(grep -a -o '== TCX: [a-z]*' "$log" | tail -n 1 | cut -d' ' -f3 || true)
    # From libtest's own "test result:" lines (per-test lines can be interleaved with
    # libbpf's messages on stderr).
    passed=$(grep -a -o -E 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" |
        awk '{n += $4} END {print n + 0}')
    tfailed=$(grep -a -o -E '[0-9]+ failed;' "$log" | awk '{n += $1} END {print n + 0}')
    attach=$([ "$tcx" = yes ] && echo "tcx (auto), tc" || echo "tc (auto: clsact fallback)")
    summary+=("| $release | $attach | $passed passed, $tfailed failed | ${secs} s | $result |")
done

echo
echo "| kernel | attach | tests | duration | result |"
echo "|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
exit "$failed"
