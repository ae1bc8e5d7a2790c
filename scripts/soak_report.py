#!/usr/bin/env python3
"""Checks one run of scripts/soak.sh (or one step of its ramp) and prints the figures.

  soak_report.py ramp RATE CLIENT_REPORT FIXSCOPE_JSONL
  soak_report.py soak RATE CLIENT_REPORT FIXSCOPE_JSONL RSS_TSV WARMUP_S RSS_SLACK_KIB

fixscope's side comes from its JSON lines (the summary is the last line). The simulator's
client has only a text report: the two figures used from it (requests sent, orders
complete) are read with one pattern each. Exit status 0 when every check holds.
"""

import json
import re
import sys

# A step of the ramp whose client round trip p99 exceeds this has a backlog building up.
MAX_P99_US = 20_000


def client_report(path):
    text = open(path).read()
    sent = re.search(r"sent (\d+) requests .*= (\d+)/s achieved \(target (\d+)/s", text)
    done = re.search(r"(\d+) complete, (\d+) incomplete", text)
    # count, p50, p90, p99 (µs) of the round trip from the order's write.
    trip = re.search(r"first from write\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text)
    if not sent or not done or not trip:
        sys.exit(f"soak: cannot read the client's report {path}:\n{text}")
    return {
        "sent": int(sent.group(1)),
        "achieved": int(sent.group(2)),
        "target": int(sent.group(3)),
        "complete": int(done.group(1)),
        "incomplete": int(done.group(2)),
        "p99_us": float(trip.group(4)),
    }


def summary(path):
    lines = [l for l in open(path) if l.strip()]
    s = json.loads(lines[-1])
    if s.get("type") != "summary":
        sys.exit(f"soak: no summary at the end of {path}")
    return s


def drops(s):
    src = s["source"]
    return src["kernel_ring_drops_request"] + src["kernel_ring_drops_response"]


def accounting(s):
    """requests = matched + every kind of unanswered; returns (ok, text)."""
    c = s["counters"]
    parts = ["matched", "unanswered_pending", "unanswered_evicted", "unanswered_closed",
             "untracked_requests"]
    total = sum(c[p] for p in parts)
    text = (f"requests {c['requests']} = " + " + ".join(f"{p} {c[p]}" for p in parts)
            + f" (= {total}); alerts: timed_out {c['timed_out']}, late {c['late']}")
    return total == c["requests"], text


def ramp(rate, client_path, jsonl):
    cl, s = client_report(client_path), summary(jsonl)
    # Sustained: the rate achieved, every order answered, no drop, and no backlog building
    # up (a backlog grows without bound over a long run even when a short step completes).
    ok = (cl["achieved"] >= 0.95 * cl["target"] and cl["incomplete"] == 0 and drops(s) == 0
          and s["counters"]["requests"] == cl["sent"] and cl["p99_us"] <= MAX_P99_US)
    print(f"ramp {rate}/s: achieved {cl['achieved']}/s, round trip p99 {cl['p99_us']:.0f} µs "
          f"(at most {MAX_P99_US} µs), sent {cl['sent']}, incomplete "
          f"{cl['incomplete']}, fixscope requests {s['counters']['requests']}, matched "
          f"{s['counters']['matched']}, ring drops {drops(s)} -> {'ok' if ok else 'not sustained'}",
          file=sys.stderr)
    return ok


def soak(rate, client_path, jsonl, rss_path, warmup_s, slack_kib):
    cl, s = client_report(client_path), summary(jsonl)
    rows = [l.split("\t") for l in open(rss_path).read().splitlines()[1:] if l.strip()]
    rss = [(int(t), int(k)) for t, k in rows]
    after = [k for t, k in rss if t >= warmup_s]
    checks = []
    if len(after) < 10:
        checks.append((False, f"too few RSS samples after the {warmup_s}s warm-up: {len(after)}"))
    else:
        base, top, last = after[0], max(after), after[-1]
        # Least-squares slope over the samples after warm-up, KiB per minute.
        ts = [t for t, _ in rss if t >= warmup_s]
        mt, mk = sum(ts) / len(ts), sum(after) / len(after)
        slope = (sum((t - mt) * (k - mk) for t, k in zip(ts, after))
                 / max(1e-9, sum((t - mt) ** 2 for t in ts))) * 60
        checks.append((top - base <= slack_kib,
                       f"RSS after {warmup_s}s warm-up: {base} KiB -> max {top} KiB, last {last} "
                       f"KiB ({len(after)} samples, slope {slope:+.1f} KiB/min; allowed growth "
                       f"{slack_kib} KiB); peak over the run {max(k for _, k in rss)} KiB"))
    checks.append((drops(s) == 0, f"ring drops {drops(s)}"))
    checks.append(accounting(s))
    c = s["counters"]
    checks.append((c["requests"] == cl["sent"],
                   f"fixscope saw {c['requests']} requests, the client sent {cl['sent']} "
                   f"({cl['complete']} complete, {cl['incomplete']} incomplete)"))
    checks.append((cl["achieved"] >= 0.95 * cl["target"],
                   f"rate achieved {cl['achieved']}/s of {cl['target']}/s; client round trip "
                   f"p99 {cl['p99_us']:.0f} µs"))
    stages = {x["stage"]: x for x in s.get("stages", [])}
    ack = stages.get("ack", {})
    us = lambda k: "-" if ack.get(k) is None else f"{ack[k] / 1000:.0f}"
    print(f"soak at {rate}/s over {s.get('duration_s', 0):.0f}s: {c['matched']} matched, "
          f"ack p50/p99/max {us('p50_ns')}/{us('p99_ns')}/{us('max_ns')} µs")
    for ok, text in checks:
        print(f"  [{'ok' if ok else 'FAIL'}] {text}")
    return all(ok for ok, _ in checks)


def main(argv):
    if len(argv) >= 5 and argv[1] == "ramp":
        return ramp(int(argv[2]), argv[3], argv[4])
    if len(argv) >= 8 and argv[1] == "soak":
        return soak(int(argv[2]), argv[3], argv[4], argv[5], int(argv[6]), int(argv[7]))
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv) else 1)
