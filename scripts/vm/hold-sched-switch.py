#!/usr/bin/env python3
"""Holds two probes on the sched_switch tracepoint for as long as it runs (inside a VM).

A tracepoint's call site in __schedule is patched (text_poke_bp: INT3, then the bytes) only
when its number of probes goes 0<->1 or 1<->2. With two probes already there, the third
(fixscope --breakdown's tp_btf program) attaches and detaches with no patching at all. Under
QEMU TCG, Debian 12's 6.1 kernels made no visible progress through that patching when
fixscope's link was closed (docs/kernels.md, round 5): holding these two keeps the VM
matrix on what it tests — fixscope's programs — as on a production host where a monitoring
agent already traces the scheduler.

Probe 1: the ftrace event (tracing_on stays 0: nothing is written). Probe 2: a perf counting
event on the tracepoint (perf_event_open, CPU 0).
"""

import ctypes
import os
import signal
import struct
import sys

TRACEFS = "/sys/kernel/tracing"
EVENT = f"{TRACEFS}/events/sched/sched_switch"
PERF_TYPE_TRACEPOINT = 2
SYS_PERF_EVENT_OPEN = 298  # x86_64


def main():
    with open(f"{TRACEFS}/tracing_on", "w") as f:
        f.write("0")
    with open(f"{EVENT}/enable", "w") as f:
        f.write("1")
    with open(f"{EVENT}/id") as f:
        tp_id = int(f.read())
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size, config, then zeros
    # (counting, enabled, no sampling).
    attr = struct.pack("<IIQ", PERF_TYPE_TRACEPOINT, 64, tp_id) + bytes(48)
    buf = ctypes.create_string_buffer(attr, 64)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(SYS_PERF_EVENT_OPEN, buf, -1, 0, -1, 0)
    if fd < 0:
        print(f"hold-sched-switch: perf_event_open: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    print(f"hold-sched-switch: ftrace event + perf event (fd {fd}) on sched_switch", flush=True)

    def release(*_):
        with open(f"{EVENT}/enable", "w") as f:
            f.write("0")
        with open(f"{TRACEFS}/tracing_on", "w") as f:
            f.write("1")
        sys.exit(0)

    signal.signal(signal.SIGTERM, release)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
