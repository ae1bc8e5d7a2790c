#!/usr/bin/env python3
"""The live cost of `--tls-uprobes` against `--tls-keylog` (BENCHMARKS.md §9).

An OpenSSL FIX exchange and client (Python's ssl, tests/interop/tls_fix.py) on lo, the
client sending ORDERS orders back to back; per run, alternated RUNS times:

  none     no fixscope (the applications alone)
  keylog   fixscope live --tls-keylog (decrypts; the client writes its key log)
  uprobes  fixscope live --tls-uprobes (no key log: uprobes on the system's libssl)

and per order: the exchange's CPU (a uprobe's trap is charged to the process that makes the
call; each run has an exchange of its own, whose whole CPU — every thread, start-up and all
— comes from wait4's rusage), fixscope's CPU while the client ran (each thread's
/proc/PID/task/TID/schedstat), the client's round trip (median), and that fixscope matched
every order. The round trip also moves with how awake the vCPUs are: a run with fixscope
polling keeps them from idling, so `none` is not the floor of the other two.

  FIXSCOPE=target/release/fixscope ORDERS=20000 RUNS=5 scripts/bench-tls-live.py
"""
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

FIXSCOPE = os.environ.get("FIXSCOPE", "target/release/fixscope")
ORDERS = int(os.environ.get("ORDERS", "20000"))
RUNS = int(os.environ.get("RUNS", "5"))
PORT = os.environ.get("PORT", "19899")
SCRIPT = "crates/fixscope/tests/interop/tls_fix.py"


def cpu_ns(pid):
    total = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(stat) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return total


def wait_for(path, text, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and text in open(path).read():
            return
        time.sleep(0.05)
    sys.exit(f"{path}: no '{text}' within {timeout} s:\n" + open(path).read())


def start_exchange(d):
    err = open(os.path.join(d, "ex.err"), "w")
    exchange = subprocess.Popen(["python3", SCRIPT, "serve", d, PORT], stderr=err)
    wait_for(os.path.join(d, "ex.err"), "listening")
    return exchange


def stop_exchange(exchange):
    """The exchange's CPU over its whole life, in ns (user + system, every thread)."""
    exchange.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(exchange.pid, 0)
    exchange.returncode = 0
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def run(mode, d):
    exchange = start_exchange(d)
    keys = os.path.join(d, "keys.log")
    open(keys, "w").close()
    live = None
    if mode != "none":
        flags = ["--tls-keylog", keys] if mode == "keylog" else ["--tls-uprobes"]
        err = open(os.path.join(d, "fx.err"), "w")
        out = open(os.path.join(d, "out.json"), "w")
        live = subprocess.Popen(
            [FIXSCOPE, "live", "-i", "lo", "-p", PORT, "--json", *flags], stdout=out, stderr=err)
        wait_for(os.path.join(d, "fx.err"), "fixscope: watching")
    fx0 = live and cpu_ns(live.pid)
    client_out = os.path.join(d, "client.txt")
    subprocess.run(["python3", SCRIPT, "client", PORT, str(ORDERS), client_out,
                    keys if mode == "keylog" else os.path.join(d, "nokeys.log"), "--no-pause"],
                   check=True)
    exchange_cpu = stop_exchange(exchange)
    matched = None
    if live:
        time.sleep(1)  # the merge's grace and the last drain
        fx1 = cpu_ns(live.pid)
        live.send_signal(signal.SIGINT)
        live.wait(30)
        summary = [json.loads(l) for l in open(os.path.join(d, "out.json")) if l.strip()][-1]
        matched = summary["counters"]["matched"]
    rtts = []
    for line in open(client_out):
        _, sent, received = line.split()
        rtts.append(int(received) - int(sent))
    return {
        "exchange_ns": exchange_cpu / ORDERS,
        "fixscope_ns": (fx1 - fx0) / ORDERS if live else 0.0,
        "rtt_ns": statistics.median(rtts),
        "matched": matched,
    }


def main():
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["python3", SCRIPT, "cert", d], check=True)
        results = {m: [] for m in ("none", "keylog", "uprobes")}
        for i in range(RUNS):
            for mode in results:
                r = run(mode, d)
                if r["matched"] not in (None, ORDERS):
                    sys.exit(f"{mode}: fixscope matched {r['matched']} of {ORDERS}")
                results[mode].append(r)
                print(f"round {i + 1} {mode}: {r}", file=sys.stderr)
    print(f"{ORDERS} orders x {RUNS} rounds (medians per order)")
    print(f"{'mode':<9} {'exchange CPU':>13} {'fixscope CPU':>13} {'client RTT p50':>15}")
    for mode, rs in results.items():
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"{mode:<9} {med('exchange_ns') / 1000:>10.2f} us {med('fixscope_ns') / 1000:>10.2f} us"
              f" {med('rtt_ns') / 1000:>12.1f} us")


if __name__ == "__main__":
    main()
