#!/usr/bin/env bash
# The C libraries the static binary (`make dist`) links, built once into
# target/static-deps. Only libpcap is built here: Debian's libpcap.a calls D-Bus (and,
# through libdbus, libsystemd), which no static link can satisfy, so it is built from
# Debian's own source tarball without D-Bus, RDMA, Bluetooth, USB or netlink — `live --tap`
# uses none of them (AF_PACKET only). libelf.a and libz.a come from Debian's -dev packages
# (libbpf-sys links them statically with its `static` feature).
#
# The tarball is Debian's (deb.debian.org is reachable from CI); its SHA-256 is pinned.
set -euo pipefail
cd "$(dirname "$0")/.."

PCAP_VERSION=1.10.3
PCAP_SHA256=2a8885c403516cf7b0933ed4b14d6caa30e02052489ebd414dc75ac52e7559e6
PCAP_URL="http://deb.debian.org/debian/pool/main/libp/libpcap/libpcap_${PCAP_VERSION}.orig.tar.gz"

out="$PWD/target/static-deps"
# libelf.a and libz.a beside libpcap.a, so the link searches one directory of static
# libraries only (the system's has Debian's D-Bus libpcap.a too).
mkdir -p "$out/lib"
for lib in libelf.a libz.a; do
    [ -f "/usr/lib/x86_64-linux-gnu/$lib" ] || { echo "static-deps: /usr/lib/x86_64-linux-gnu/$lib is missing (libelf-dev, zlib1g-dev)" >&2; exit 1; }
    cp -u "/usr/lib/x86_64-linux-gnu/$lib" "$out/lib/"
done
if [ -f "$out/lib/libpcap.a" ] && [ "$(cat "$out/.pcap-version" 2>/dev/null)" = "$PCAP_VERSION" ]; then
    exit 0
fi
for tool in flex bison make cc curl; do
    command -v "$tool" >/dev/null || { echo "static-deps: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
work="$out/build"
rm -rf "$work" && mkdir -p "$work"
tarball="$work/libpcap.tar.gz"
curl -fsSL --retry 3 -o "$tarball" "$PCAP_URL"
echo "$PCAP_SHA256  $tarball" | sha256sum -c --quiet - \
    || { echo "static-deps: $PCAP_URL does not have the pinned SHA-256" >&2; exit 1; }
tar xzf "$tarball" -C "$work"
(
    cd "$work/libpcap-$PCAP_VERSION"
    ./configure --quiet --prefix="$out" --disable-shared \
        --disable-dbus --disable-rdma --disable-bluetooth --disable-usb --disable-netmap \
        --without-libnl --without-dpdk --without-dag --without-septel --without-snf \
        --without-turbocap --disable-remote CFLAGS="-O2 -fPIC" >/dev/null
    make -s -j"$(nproc)" libpcap.a >/dev/null
    mkdir -p "$out/lib" "$out/include"
    cp libpcap.a "$out/lib/"
)
rm -rf "$work"
echo "$PCAP_VERSION" > "$out/.pcap-version"
echo "static-deps: libpcap $PCAP_VERSION (no D-Bus) in $out/lib"
