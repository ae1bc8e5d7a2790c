#!/usr/bin/env python3
"""Reads `cargo test --no-run --message-format=json` on stdin and prints the executables of
the named integration-test targets, in the order named (space-separated)."""
import json
import sys

wanted = sys.argv[1:]
found = {}
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    target = msg["target"]
    if "test" in target["kind"] and target["name"] in wanted:
        found[target["name"]] = msg["executable"]
missing = [w for w in wanted if w not in found]
if missing:
    sys.exit(f"test-binaries: cargo built no test target named {', '.join(missing)}")
print(" ".join(found[w] for w in wanted))
