#!/usr/bin/env bash
# Installs what fixscope needs to build, test and run its demo on a fresh Debian/Ubuntu
# machine. Idempotent: quick when everything is already there.
set -euo pipefail

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
# Installs the packages named (none: nothing), as root only.
apt_install() {
    [ $# -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: need root to install: $*" >&2
        exit 1
    fi
    echo "install-deps: installing $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Waits for another apt-get (a second install-deps, unattended-upgrades) to finish.
    apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "$@" >/dev/null
}
# `make demo` (--demo): only what its build and run need, then stop — a newcomer's
# first command stays within 2 minutes; `make test` installs the rest.
if [ "${1:-}" = "--demo" ]; then
    have cc || need_apt+=(gcc)
    have clang || need_apt+=(clang)
    have pkg-config || need_apt+=(pkg-config)
    have make || need_apt+=(make)
    dpkg -s libelf-dev >/dev/null 2>&1 || need_apt+=(libelf-dev)
    dpkg -s zlib1g-dev >/dev/null 2>&1 || need_apt+=(zlib1g-dev)
    dpkg -s linux-libc-dev >/dev/null 2>&1 || need_apt+=(linux-libc-dev)
    dpkg -s libpcap-dev >/dev/null 2>&1 || need_apt+=(libpcap-dev)  # live --tap links it
    apt_install "${need_apt[@]}"
    if ! have cargo; then
        echo "install-deps: Rust is missing: install it with rustup (https://rustup.rs) or 'apt-get install cargo'" >&2
        exit 1
    fi
    exit 0
fi
have clang || need_apt+=(clang)
have llvm-strip || need_apt+=(llvm)
have pkg-config || need_apt+=(pkg-config)
have tcpdump || need_apt+=(tcpdump)
have tshark || need_apt+=(tshark)
have tmux || need_apt+=(tmux)        # the live keys test types into a real terminal
have chromium || need_apt+=(chromium)  # the HTML report test loads the page in a real browser
have ip || need_apt+=(iproute2)
have tc || need_apt+=(iproute2)
have make || need_apt+=(make)
have prometheus || need_apt+=(prometheus)   # the Prometheus e2e test scrapes a live run
have promtool || need_apt+=(prometheus)     # (Debian's package has both)
have curl || need_apt+=(curl)               # scripts/bench-prometheus.sh
have java || need_apt+=(openjdk-17-jdk-headless)   # the QuickFIX/J engine test (engines/quickfixj)
have mvn || need_apt+=(maven)
have setpriv || need_apt+=(util-linux)               # the least-privilege tests
have cc || need_apt+=(gcc)
have openssl || need_apt+=(openssl)      # the TLS tests' OpenSSL peers (s_server, s_client, ssl)
have node || need_apt+=(nodejs)          # tls_uprobes.rs: an engine on memory BIOs (Node.js's tls)
[ -x /usr/bin/time ] || need_apt+=(time)  # make bench-tls: each run's CPU time
dpkg -s libelf-dev >/dev/null 2>&1 || need_apt+=(libelf-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || need_apt+=(zlib1g-dev)
dpkg -s linux-libc-dev >/dev/null 2>&1 || need_apt+=(linux-libc-dev)
# live --tap: libpcap through the `pcap` crate; the tap tests convert a recording to
# pcapng with editcap (wireshark-common, installed with tshark).
dpkg -s libpcap-dev >/dev/null 2>&1 || need_apt+=(libpcap-dev)
have editcap || need_apt+=(wireshark-common)
# make dist: libpcap is built from Debian's source without D-Bus (scripts/static-deps.sh).
have flex || need_apt+=(flex)
have bison || need_apt+=(bison)
# make test-service: a Debian root for the service VM, read back with debugfs.
have mmdebstrap || need_apt+=(mmdebstrap)
have debugfs || need_apt+=(e2fsprogs)
have qemu-system-x86_64 || need_apt+=(qemu-system-x86)
# The man page test renders every page (man-db, groff); the units test runs
# systemd-analyze verify and security (the systemd package, without booting it).
have man || need_apt+=(man-db)
have groff || need_apt+=(groff-base)
have systemd-analyze || need_apt+=(systemd)

apt_install "${need_apt[@]}"

if ! have cargo; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        echo "install-deps: cargo is in ~/.cargo/bin; add it to PATH" >&2
    else
        echo "install-deps: Rust is missing: install it with rustup (https://rustup.rs) or 'apt-get install cargo'" >&2
        exit 1
    fi
fi

# Independent HdrHistogram readers for the interval-log tests (crates/fixscope/tests/hlog_*):
# Java's HistogramLogProcessor (Maven Central) and PyPI's hdrhistogram, inside the
# repository (target/interop) because tests read nothing outside it. Needs java, javac,
# maven and python3-venv.
interop="$(cd "$(dirname "$0")/.." && pwd)/target/interop"
hdr_java_version=2.2.2
need_apt=()
have java || need_apt+=(default-jre-headless)
have javac || need_apt+=(default-jdk-headless)
have mvn || need_apt+=(maven)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
apt_install "${need_apt[@]}"
mkdir -p "$interop"
if [ ! -f "$interop/HdrHistogram-$hdr_java_version.jar" ]; then
    echo "install-deps: fetching org.hdrhistogram:HdrHistogram:$hdr_java_version"
    mvn -q dependency:copy -Dartifact="org.hdrhistogram:HdrHistogram:$hdr_java_version" \
        -DoutputDirectory="$interop" >/dev/null
fi
# real-logic's SBE tool: the independent decoder of the iLink 3 cross-check
# (crates/fixscope-ilink3/tests/seam_contract/sbe_tool.rs generates Java decoders from
# the crate's schema with it).
sbe_tool_version=1.30.0
if [ ! -f "$interop/sbe-all-$sbe_tool_version.jar" ]; then
    echo "install-deps: fetching uk.co.real-logic:sbe-all:$sbe_tool_version"
    mvn -q dependency:copy -Dartifact="uk.co.real-logic:sbe-all:$sbe_tool_version" \
        -DoutputDirectory="$interop" >/dev/null
fi
if [ ! -x "$interop/py/bin/python" ] || ! "$interop/py/bin/python" -c 'import hdrh' 2>/dev/null; then
    echo "install-deps: creating the Python venv with hdrhistogram"
    python3 -m venv "$interop/py"
    "$interop/py/bin/pip" install -q 'hdrhistogram==0.10.*'
fi
# The readers of `--records`: DuckDB and pyarrow read the Parquet files the tests
# write (crates/fixscope/tests/records.rs); the ClickHouse engine (chdb-core, in-process)
# runs the requests of `--clickhouse` (crates/fixscope/tests/clickhouse.rs).
if ! "$interop/py/bin/python" -c 'import duckdb, pyarrow, chdb' 2>/dev/null; then
    echo "install-deps: adding DuckDB, pyarrow and chdb-core to the Python venv"
    "$interop/py/bin/pip" install -q 'duckdb==1.*' 'pyarrow>=17' 'chdb-core==26.*'
fi

# Only for `make test-kernel` and `make test-verifier` (their scripts call
# `install-deps.sh --kernel-test`; `make test` does not): QEMU, busybox-static (virtme-ng builds the
# VM's initramfs with it), udev, kmod (depmod for the fetched kernels, modprobe inside the VM),
# virtme-ng in a venv (FIXSCOPE_VNG_VENV), then the matrix's kernels themselves, fetched
# from Debian's archive into target/kernels through a private apt state (scripts/vm/
# fetch-kernels.sh: the host's packages stay as they are). FIXSCOPE_KERNELS names the
# labels to fetch (default: all).
install_kernel_test_deps() {
    local need=() venv=${FIXSCOPE_VNG_VENV:-$HOME/.cache/fixscope-vng}
    have qemu-system-x86_64 || need+=(qemu-system-x86)
    dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static) # virtme-run wants it static
    { have depmod && have modprobe; } || need+=(kmod)
    # The VM's init starts udevd, which names virtio-serial ports (/dev/virtio-ports/virtme.*):
    # without it a command's output and exit code do not reach the host.
    [ -x /lib/systemd/systemd-udevd ] || have udevd || need+=(udev)
    have dpkg-deb || need+=(dpkg)
    have ip || need+=(iproute2)
    dpkg -s debian-archive-keyring >/dev/null 2>&1 || need+=(debian-archive-keyring)
    dpkg -s python3-venv >/dev/null 2>&1 || need+=(python3-venv)
    apt_install "${need[@]}"
    if [ ! -x "$venv/bin/vng" ]; then
        echo "install-deps: installing virtme-ng into $venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q 'virtme-ng==1.42'
    fi
    # shellcheck disable=SC2086 # FIXSCOPE_KERNELS is a list of labels
    "$(dirname "$0")/vm/fetch-kernels.sh" ${FIXSCOPE_KERNELS:-} >/dev/null
}
# Only for `make deb`, `make rpm` and `make test-packages`: cargo-deb and
# cargo-generate-rpm (crates.io), lintian, and rpm (rpmbuild's tools for `rpm -qlp`).
install_packaging_deps() {
    local need=()
    have lintian || need+=(lintian)
    have rpm || need+=(rpm)
    have dpkg-deb || need+=(dpkg)
    apt_install "${need[@]}"
    command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
    command -v cargo-generate-rpm >/dev/null 2>&1 || cargo install cargo-generate-rpm --locked
}
if [ "${1:-}" = "--packaging" ]; then
    install_packaging_deps
fi
if [ "${1:-}" = "--kernel-test" ]; then
    install_kernel_test_deps
fi
