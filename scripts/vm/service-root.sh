#!/usr/bin/env bash
# The Debian 12 root `make test-service` boots with a real systemd as PID 1: built once
# by mmdebstrap from Debian's packages into target/service-vm/root (kept while this file and
# its package list are unchanged), with Debian's own kernel and initramfs so QEMU boots it
# from an ext4 image like any server. Nothing of fixscope is in it: the test installs the
# .deb into a copy (scripts/test-service.sh).
#
# Prints the root's path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/target/service-vm
root=$out/root
# What a minimal server has, plus what the test reads the service with: iproute2 (tc),
# bpftool (no BPF program left), curl (/metrics), procps, libcap2-bin (capsh --decode), man-db
# (systemd-analyze verify checks the units' Documentation= man pages).
packages=systemd,systemd-sysv,udev,dbus,iproute2,curl,procps,libcap2-bin,bpftool,kmod,man-db,linux-image-amd64,initramfs-tools,zstd
stamp="$packages $(sha256sum "$0" | cut -c1-16)"
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] && [ -d "$root/usr" ]; then
    echo "$root"
    exit 0
fi
command -v mmdebstrap >/dev/null || { echo "service-root: mmdebstrap is missing (scripts/install-deps.sh --service-test)" >&2; exit 1; }
rm -rf "$root" && mkdir -p "$out"
# The serial console is the test's only output: the kernel's, systemd's status lines and the
# test runner's, all on ttyS0. No getty: nobody logs in.
mmdebstrap --quiet --variant=apt --include="$packages" \
    --customize-hook='echo fixscope-vm >"$1/etc/hostname"' \
    --customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\n" >"$1/etc/fstab"' \
    --customize-hook='chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer' \
    --customize-hook='chroot "$1" passwd -d root' \
    bookworm "$root" http://deb.debian.org/debian >&2
ls "$root"/boot/vmlinuz-* "$root"/boot/initrd.img-* >/dev/null
echo "$stamp" >"$out/stamp"
echo "$root"
