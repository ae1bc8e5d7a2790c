#!/usr/bin/env bash
# Installs what fixscope needs to build, test and run its demo on a fresh Debian/Ubuntu
# machine. Idempotent: quick when everything is already there.
set -euo pipefail

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
have clang || need_apt+=(clang)
have llvm-strip || need_apt+=(llvm)
have pkg-config || need_apt+=(pkg-config)
have tcpdump || need_apt+=(tcpdump)
have tshark || need_apt+=(tshark)
have tmux || need_apt+=(tmux)        # the live keys test types into a real terminal
have ip || need_apt+=(iproute2)
have tc || need_apt+=(iproute2)
have make || need_apt+=(make)
have prometheus || need_apt+=(prometheus)   # the Prometheus e2e test scrapes a live run
have promtool || need_apt+=(prometheus)     # (Debian's package has both)
have curl || need_apt+=(curl)               # scripts/bench-prometheus.sh
have cc || need_apt+=(gcc)
dpkg -s libelf-dev >/dev/null 2>&1 || need_apt+=(libelf-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || need_apt+=(zlib1g-dev)
dpkg -s linux-libc-dev >/dev/null 2>&1 || need_apt+=(linux-libc-dev)

if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: need root to install: ${need_apt[*]}" >&2
        exit 1
    fi
    echo "install-deps: installing ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! have cargo; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        echo "install-deps: cargo is in ~/.cargo/bin; add it to PATH" >&2
    else
        echo "install-deps: Rust is missing: install it with rustup (https://rustup.rs) or 'apt-get install cargo'" >&2
        exit 1
    fi
fi
