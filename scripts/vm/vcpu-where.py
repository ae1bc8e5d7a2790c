#!/usr/bin/env python3
"""Where a test-kernel VM's CPUs are, from outside: for a VM whose log has stopped growing.

    vcpu-where.py MONITOR_SOCKET KALLSYMS [SAMPLES]

Asks QEMU's human monitor (a unix socket scripts/test-kernel.sh gives each VM) for every
vCPU's registers SAMPLES times, a second apart, and prints each vCPU's instruction pointer as
a kernel symbol (the VM boots with nokaslr and leaves its /proc/kallsyms on the host), its
privilege level and whether it is halted; then each vCPU's kernel stack, read from guest
memory, as the symbols of the return addresses on it (a scan, not an unwinder: stale frames
show too, read it top down). A guest whose CPUs spin in the kernel cannot diagnose itself;
this can: a CPU stuck in one kernel function shows the same symbol sample after sample, an
idle one HLT=1, a user-space loop CPL=3.
"""

import bisect
import re
import socket
import sys
import time

KERNEL_TEXT = (0xFFFFFFFF81000000, 0xFFFFFFFFC0000000)


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


def symbolise(addr, addrs, names):
    if addr < 0xFFFF800000000000:
        return "user space"
    i = bisect.bisect_right(addrs, addr) - 1
    if i < 0:
        return "kernel (no symbol)"
    return f"{names[i]}+{addr - addrs[i]:#x}"


class Monitor:
    """One session of QEMU's human monitor (the selected vCPU is per session)."""

    def __init__(self, path, timeout=20.0):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self._until_prompt()  # the banner

    def _until_prompt(self):
        out = b""
        while not out.rstrip().endswith(b"(qemu)"):
            chunk = self.s.recv(65536)
            if not chunk:
                break
            out += chunk
        # The monitor echoes the command with terminal escapes.
        return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.decode(errors="replace"))

    def run(self, command):
        self.s.sendall(command.encode() + b"\n")
        return self._until_prompt()

    def close(self):
        self.s.close()


def registers(text):
    """{cpu: (rip, rsp, cpl, hlt)} of an `info registers -a` output."""
    found = {}
    parts = re.split(r"\nCPU#(\d+)", "\n" + text)
    for i in range(1, len(parts) - 1, 2):
        regs = parts[i + 1]
        rip = re.search(r"RIP=([0-9a-f]{16})", regs)
        rsp = re.search(r"RSP=([0-9a-f]{16})", regs)
        cpl = re.search(r"CPL=(\d)", regs)
        hlt = re.search(r"HLT=(\d)", regs)
        if rip and rsp:
            found[int(parts[i])] = (
                int(rip.group(1), 16),
                int(rsp.group(1), 16),
                cpl.group(1) if cpl else "?",
                hlt.group(1) if hlt else "?",
            )
    return found


def main():
    sock_path, kallsyms = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    addrs, names = load_symbols(kallsyms)
    try:
        mon = Monitor(sock_path)
    except OSError as e:
        print(f"vcpu-where: monitor {sock_path}: {e}")
        return 1
    regs = {}
    for n in range(samples):
        regs = registers(mon.run("info registers -a"))
        line = [
            f"cpu{c} {symbolise(rip, addrs, names)} (rip {rip:#x}, CPL={cpl}, HLT={hlt})"
            for c, (rip, _, cpl, hlt) in sorted(regs.items())
        ]
        print(f"vcpu-where sample {n + 1}/{samples}: " + "; ".join(line), flush=True)
        time.sleep(1)
    for c, (rip, rsp, cpl, _) in sorted(regs.items()):
        print(f"vcpu-where cpu{c} stack (CPL={cpl}, rip {symbolise(rip, addrs, names)}):")
        if cpl != "0":
            continue
        mon.run(f"cpu {c}")
        mem = mon.run(f"x/256gx {rsp:#x}")
        for line in mem.splitlines():
            if ":" not in line:
                continue
            for v in re.findall(r"0x([0-9a-f]{16})", line.split(":", 1)[1]):
                x = int(v, 16)
                if KERNEL_TEXT[0] <= x < KERNEL_TEXT[1]:
                    print(f"    {symbolise(x, addrs, names)}")
    mon.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
