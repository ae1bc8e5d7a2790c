#!/usr/bin/env bash
# Fetches the kernels of `make test-kernel`'s matrix from Debian's archive WITHOUT touching the
# host's packages: a private apt state (its own sources.list, lists, cache and an empty dpkg
# status, all under target/kernels/apt) for `apt-get download`, then `dpkg-deb -x` into
# target/kernels/root and `depmod -b` there. Prints one line per kernel: "LABEL RELEASE".
#
#   scripts/vm/fetch-kernels.sh [LABEL ...]     (default: every label below)
#
# Prints "LABEL RELEASE" per kernel; the image is target/kernels/root/boot/vmlinuz-RELEASE, its
# modules target/kernels/root/lib/modules/RELEASE.
#
# The matrix (LABEL: suite, metapackage): the metapackage's newest version in that suite
# names the image package, so each run takes the archive's current kernel of the series.
#   5.10     bullseye-security  linux-image-amd64       Debian 11: Amazon Linux 2 / RHEL 8's BPF level
#   6.1      bookworm(-security) linux-image-amd64      Debian 12: no TCX (clsact fallback)
#   6.1-rt   bookworm(-security) linux-image-rt-amd64   Debian 12 PREEMPT_RT
#   6.12     bookworm-security  linux-image-6.12-amd64  Debian 12's newer kernel: TCX
#   7.x      trixie-backports   linux-image-amd64       the newest verifier the archive has
# Needs: apt-get, dpkg-deb, depmod (kmod), debian-archive-keyring. Network: deb.debian.org.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
base=$repo/target/kernels
state=$base/apt
root=$base/root
mirror=${FIXSCOPE_DEBIAN_MIRROR:-http://deb.debian.org}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# LABEL -> "suite-pattern metapackage" (the pattern matches apt-cache madison's archive column).
declare -A spec=(
    [5.10]="bullseye-security linux-image-amd64"
    [6.1]="bookworm(-security)?/ linux-image-amd64"
    [6.1-rt]="bookworm(-security)?/ linux-image-rt-amd64"
    [6.12]="bookworm-security linux-image-6.12-amd64"
    [7.x]="trixie-backports linux-image-amd64"
)
all=(5.10 6.1 6.1-rt 6.12 7.x)
labels=("$@")
[ ${#labels[@]} -gt 0 ] || labels=("${all[@]}")

mkdir -p "$state"/{etc/apt.conf.d,etc/preferences.d,etc/sources.list.d,lists/partial,cache/archives/partial} "$root"
: >"$state/status"
cat >"$state/etc/sources.list" <<EOF
deb [signed-by=$keyring] $mirror/debian-security bullseye-security main
deb [signed-by=$keyring] $mirror/debian bookworm main
deb [signed-by=$keyring] $mirror/debian-security bookworm-security main
deb [signed-by=$keyring] $mirror/debian trixie-backports main
EOF
apt_opts=(
    -o "Dir::Etc=$state/etc" -o "Dir::State::Lists=$state/lists"
    -o "Dir::Cache=$state/cache" -o "Dir::State::status=$state/status"
    -o APT::Architecture=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root
)
# Lists older than a day are refreshed (a security update replaces the kernel's package).
stamp=$state/lists/.updated
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
    echo "fetch-kernels: apt-get update (private state in $state)" >&2
    apt-get "${apt_opts[@]}" update -qq >&2
    touch "$stamp"
fi

for label in "${labels[@]}"; do
    [ -n "${spec[$label]:-}" ] || { echo "fetch-kernels: no kernel labelled $label (${all[*]})" >&2; exit 2; }
    read -r suite meta <<<"${spec[$label]}"
    version=$(apt-cache "${apt_opts[@]}" madison "$meta" |
        awk -F' [|] ' -v s="$suite" '$3 ~ s {gsub(/ /, "", $2); print $2}' | sort -V | tail -n 1)
    [ -n "$version" ] || { echo "fetch-kernels: $meta not found in $suite" >&2; exit 1; }
    image=$(apt-cache "${apt_opts[@]}" depends "$meta=$version" |
        awk '/Depends: linux-image-/ {print $2; exit}')
    [ -n "$image" ] || { echo "fetch-kernels: $meta=$version names no image package" >&2; exit 1; }
    release=${image#linux-image-}
    release=${release%-unsigned}
    if [ ! -r "$root/boot/vmlinuz-$release" ] || [ ! -f "$root/lib/modules/$release/modules.dep" ]; then
        # Since 6.16 (trixie-backports) the image package is split: the kernel itself is in
        # linux-binary-RELEASE, the modules in linux-modules-RELEASE.
        pkgs=("$image")
        mapfile -t -O 1 pkgs < <(apt-cache "${apt_opts[@]}" depends "$image" |
            awk -v r="$release" '/Depends: linux-(base|binary|modules)-/ && index($2, r) {print $2}')
        echo "fetch-kernels: $label: downloading ${pkgs[*]} ($meta $version)" >&2
        rm -f "$state/cache/archives/"*.deb
        (cd "$state/cache/archives" && apt-get "${apt_opts[@]}" download -qq "${pkgs[@]}" >&2)
        for deb in "$state/cache/archives/"*.deb; do
            dpkg-deb -x "$deb" "$root"
        done
        rm -f "$state/cache/archives/"*.deb
        # Debian 13's packages put the modules under usr/lib (merged /usr).
        if [ -d "$root/usr/lib/modules/$release" ]; then
            mkdir -p "$root/lib/modules"
            rm -rf "$root/lib/modules/$release"
            mv "$root/usr/lib/modules/$release" "$root/lib/modules/$release"
        fi
        # ... and the kernel there too (their postinst links it into /boot).
        if [ ! -r "$root/boot/vmlinuz-$release" ] && [ -r "$root/lib/modules/$release/vmlinuz" ]; then
            mkdir -p "$root/boot"
            ln -sf "../lib/modules/$release/vmlinuz" "$root/boot/vmlinuz-$release"
        fi
        [ -r "$root/boot/vmlinuz-$release" ] || { echo "fetch-kernels: no vmlinuz in ${pkgs[*]}" >&2; exit 1; }
        depmod -b "$root" "$release"
    fi
    echo "$label $release"
done
