#!/usr/bin/env bash
# `make dist` — one static x86_64 Linux binary with no runtime dependency but the
# kernel, and a release archive around it:
#   dist/fixscope-VERSION-x86_64-linux          the binary (stripped; debug link to fixscope.debug)
#   dist/fixscope.debug                         its debug info (gdb, perf, addr2line find it beside the binary)
#   dist/fixscope-VERSION-x86_64-linux.tar.gz   the binary, man pages, completions, units, example config, docs
#   dist/SHA256SUMS
#
# Static glibc, not musl (BENCHMARKS.md §2u): glibc's allocator and string functions keep
# `pcap` as fast as the dynamic build, and libbpf-sys links libelf/zlib statically against
# glibc out of the box. What static glibc cannot do — load NSS modules — fixscope does not
# ask of it: `--clickhouse` resolves names itself (fixscope-records/src/name_lookup.rs) and
# `-Z USER` reads /etc/passwd and /etc/group (fixscope/src/user_db.rs). libpcap is built
# without D-Bus (scripts/static-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

TARGET=x86_64-unknown-linux-gnu
MAX_BYTES=$((20 * 1024 * 1024))

scripts/static-deps.sh
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
name="fixscope-$version-x86_64-linux"

# --target: RUSTFLAGS then apply to fixscope only, not to build scripts and proc macros.
# relocation-model=static: a plain static executable (not static-pie), which is what
# `ldd` calls "not a dynamic executable" and what every kernel and loader runs.
LIBPCAP_LIBDIR="$PWD/target/static-deps/lib" LIBBPF_SYS_LIBRARY_PATH="$PWD/target/static-deps/lib" \
RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
    cargo build --locked --profile dist --features static --target "$TARGET" --bin fixscope -p fixscope
built="target/$TARGET/dist/fixscope"

mkdir -p dist
rm -rf "dist/$name" "dist/$name.tar.gz" dist/fixscope.debug
objcopy --only-keep-debug --compress-debug-sections=zlib "$built" dist/fixscope.debug
objcopy --strip-debug --strip-unneeded --add-gnu-debuglink=dist/fixscope.debug "$built" "dist/$name"
chmod 0755 "dist/$name"

# The promises, checked on what was built.
if ldd "dist/$name" >/dev/null 2>&1; then
    echo "dist: dist/$name is dynamically linked:" >&2
    ldd "dist/$name" >&2
    exit 1
fi
if readelf -d "dist/$name" 2>/dev/null | grep -q NEEDED; then
    echo "dist: dist/$name needs shared libraries:" >&2
    readelf -d "dist/$name" | grep NEEDED >&2
    exit 1
fi
size=$(stat -c %s "dist/$name")
if [ "$size" -gt "$MAX_BYTES" ]; then
    echo "dist: dist/$name is $size bytes, over the 20 MiB budget" >&2
    exit 1
fi
"dist/$name" --version >/dev/null

# The archive: what a host needs beside the binary. Man pages, completions and the example
# config come from the binary itself, so they always match its flags.
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
root="$staged/$name"
mkdir -p "$root"
cp "dist/$name" "$root/fixscope"
cp README.md CHANGELOG.md "$root/"
cp LICENSE* "$root/" 2>/dev/null || true
[ -f docs/deploy.md ] && cp docs/deploy.md "$root/"
if "dist/$name" config example >/dev/null 2>&1; then
    "dist/$name" config example >"$root/fixscope.toml"
fi
if "dist/$name" manpages --help >/dev/null 2>&1; then
    mkdir -p "$root/man"
    "dist/$name" manpages "$root/man" >/dev/null
fi
if "dist/$name" completions bash >/dev/null 2>&1; then
    mkdir -p "$root/completions"
    "dist/$name" completions bash >"$root/completions/fixscope.bash"
    "dist/$name" completions zsh >"$root/completions/_fixscope"
    "dist/$name" completions fish >"$root/completions/fixscope.fish"
fi
if [ -d packaging/systemd ]; then
    cp -r packaging/systemd "$root/systemd"
fi
tar -C "$staged" --owner=0 --group=0 --sort=name -czf "dist/$name.tar.gz" "$name"
(cd dist && sha256sum "$name" "$name.tar.gz" fixscope.debug >SHA256SUMS)
echo "dist: dist/$name ($((size / 1024 / 1024)) MiB, static), dist/$name.tar.gz, dist/fixscope.debug"
