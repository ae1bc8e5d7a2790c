#!/usr/bin/env python3
"""A FIX-over-TLS client that sends on its own schedule: N orders at RATE/s, a thread
reading the reports (records queue at the exchange when it falls behind).
  tls-pipelined-client.py PORT N RATE KEYLOG TAG [--tls12]"""
import os, socket, ssl, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "fixscope", "tests", "interop"))
from tls_fix import fix, messages, field
port, n, rate, keylog = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
tls12 = "--tls12" in sys.argv
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname=False; ctx.verify_mode=ssl.CERT_NONE
if tls12: ctx.maximum_version = ssl.TLSVersion.TLSv1_2
ctx.keylog_filename = keylog
raw = socket.create_connection(("127.0.0.1", port)); raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
t = ctx.wrap_socket(raw)
got = [0]
def reader():
    for m in messages(t):
        got[0] += 1
        if got[0] == n: return
th = threading.Thread(target=reader); th.start()
start = time.time()
for i in range(n):
    due = start + i / rate
    d = due - time.time()
    if d > 0: time.sleep(d)
    t.sendall(fix(b"D", i + 1, [(11, b"C%s-%d" % (sys.argv[5].encode(), i)), (55, b"X"), (54, b"1"), (38, b"1")]))
th.join(30)
print("replies", got[0])
