#!/usr/bin/env bash
# `make test-service`: the .deb under a real systemd. Boots the Debian 12 root of
# scripts/vm/service-root.sh (its own kernel and initramfs, an ext4 disk) in QEMU (TCG;
# FIXSCOPE_SERVICE_KVM=1 for KVM) with the package and scripts/vm/inside-service.sh copied
# in; the VM installs the package, runs fixscope@test against the simulator on lo, checks
# it (user, capabilities, /metrics, journal, stop, a drop-in without CAP_BPF, purge) and
# powers off. Passes only on the VM's own verdict line. The state directory's records are
# then read back on the host with DuckDB. Log: target/service-vm/console.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
deb=$(ls dist/fixscope_*_amd64.deb 2>/dev/null | head -1)
[ -f "$deb" ] || { echo "test-service: no dist/fixscope_*_amd64.deb (make deb)" >&2; exit 1; }
root=$(scripts/vm/service-root.sh)
out=$repo/target/service-vm
log=$out/console.log

# The test's files, and the runner as a oneshot unit after multi-user.target.
t=$root/opt/fixscope-test
rm -rf "$t" && mkdir -p "$t"
cp "$deb" "$t/fixscope.deb"
cp scripts/vm/inside-service.sh "$t/"
cat >"$t/test.toml" <<'EOF'
# The instance the service test runs: fixscope@test.
command = "live"

[live]
interface = "lo"
port = "@PORT@"
prometheus = "127.0.0.1:9464"
records = "/var/lib/fixscope/test/records"
hlog = "/var/log/fixscope/test/test.hlog"
EOF
cat >"$root/etc/systemd/system/fixscope-vm-test.service" <<'EOF'
[Unit]
Description=fixscope service test (scripts/vm/inside-service.sh)
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/opt/fixscope-test/inside-service.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=900
[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../fixscope-vm-test.service "$root/etc/systemd/system/multi-user.target.wants/"

image=$out/disk.img
rm -f "$image"
mkfs.ext4 -q -F -L root -d "$root" "$image" 3G
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
# TCG by default: on this project's machines KVM's `-cpu host`/`max` abort on an MSR
# ("failed to set MSR 0x10a") and `host,-arch-capabilities` hangs the guest's early boot
# (docs/kernels.md). FIXSCOPE_SERVICE_KVM=1 uses KVM where it works.
accel=(-accel tcg)
if [ "${FIXSCOPE_SERVICE_KVM:-0}" = 1 ]; then
    accel=(-accel kvm -cpu max)
fi
echo "== test-service: booting $(basename "$kernel") with ${accel[*]}; log: $log"
timeout --kill-after=30 "${FIXSCOPE_SERVICE_TIMEOUT:-1200}" qemu-system-x86_64 "${accel[@]}" \
    -m 2G -smp 2 -nographic -no-reboot -kernel "$kernel" -initrd "$initrd" \
    -append "root=/dev/vda rw console=ttyS0 systemd.show_status=1 net.ifnames=0" \
    -drive "file=$image,format=raw,if=virtio" -nic none </dev/null >"$log" 2>&1 || true
grep -a -E '^(ok|FAIL): |^== ' "$log" || true
verdict=$(grep -a -o 'FIXSCOPE-SERVICE-RESULT [0-9]*' "$log" | tail -1 || true)
if [ "$verdict" != "FIXSCOPE-SERVICE-RESULT 0" ]; then
    echo "test-service: FAILED (${verdict:-no verdict line: see $log})" >&2
    exit 1
fi

# The records the service wrote, read back by DuckDB on the host (debugfs reads the image
# without mounting it).
rm -rf "$out/state" && mkdir -p "$out/state"
debugfs -R "rdump /mnt/out $out/state" "$image" >/dev/null 2>&1
"$repo/target/interop/py/bin/python" - "$out/state/out" <<'EOF'
import glob, sys
import duckdb
files = glob.glob(sys.argv[1] + "/records/orders/*/*.parquet")
assert files, "no orders parquet in the state directory"
n = duckdb.sql(f"select count(*) from read_parquet({files!r})").fetchone()[0]
print(f"== DuckDB: {n} orders in the service's records")
assert n == 1000, n
EOF
echo "test-service: passed"
