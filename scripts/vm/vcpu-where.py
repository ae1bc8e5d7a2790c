#!/usr/bin/env python3
"""Where a test-kernel VM's CPUs are, from outside: for a VM whose log has stopped growing.

    vcpu-where.py MONITOR_SOCKET SYSTEM_MAP [SAMPLES]

Asks QEMU's human monitor (a unix socket scripts/test-kernel.sh gives each VM) for every
vCPU's registers SAMPLES times, a second apart, and prints each vCPU's instruction pointer as
a kernel symbol (the VM boots with nokaslr, so System.map's addresses are the running ones),
its privilege level and whether it is halted. A guest whose clock or timers have stopped
cannot diagnose itself; this can: a CPU spinning in one kernel function shows the same
symbol sample after sample, an idle one shows HLT=1, a user-space loop CPL=3.
"""

import bisect
import re
import socket
import sys
import time


def load_symbols(path):
    addrs, names = [], []
    try:
        f = open(path)
    except OSError as e:  # the guest has not written it yet (a hang during boot)
        print(f"vcpu-where: no symbols ({e}); raw addresses only")
        return addrs, names
    with f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                addrs.append(int(parts[0], 16))
                names.append(parts[2])
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def symbolise(rip, addrs, names):
    i = bisect.bisect_right(addrs, rip) - 1
    if rip < 0xFFFF800000000000:
        return "user space"
    if i < 0:
        return "kernel (no symbol)"
    return f"{names[i]}+{rip - addrs[i]:#x}"


def monitor(sock_path, command, timeout=20.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    out = b""

    def until_prompt():
        nonlocal out
        while not out.rstrip().endswith(b"(qemu)"):
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk

    until_prompt()  # the banner
    out = b""
    s.sendall(command.encode() + b"\n")
    until_prompt()
    s.close()
    return out.decode(errors="replace")


def main():
    sock_path, system_map = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    addrs, names = load_symbols(system_map)
    for n in range(samples):
        try:
            text = monitor(sock_path, "info registers -a")
        except OSError as e:
            print(f"vcpu-where: monitor {sock_path}: {e}")
            return 1
        cpus = re.split(r"\nCPU#(\d+)", "\n" + text)
        line = []
        for i in range(1, len(cpus) - 1, 2):
            regs = cpus[i + 1]
            rip = re.search(r"RIP=([0-9a-f]{16})", regs)
            cpl = re.search(r"CPL=(\d)", regs)
            hlt = re.search(r"HLT=(\d)", regs)
            if not rip:
                continue
            r = int(rip.group(1), 16)
            line.append(
                f"cpu{cpus[i]} {symbolise(r, addrs, names)} "
                f"(rip {r:#x}, CPL={cpl.group(1) if cpl else '?'}, HLT={hlt.group(1) if hlt else '?'})"
            )
        print(f"vcpu-where sample {n + 1}/{samples}: " + "; ".join(line), flush=True)
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
