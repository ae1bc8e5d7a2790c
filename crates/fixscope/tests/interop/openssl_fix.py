#!/usr/bin/env python3
"""FIX through `openssl s_server` and `openssl s_client` on 127.0.0.1 (ChaCha20-Poly1305),
for crates/fixscope/tests/tls_openssl.rs.

  openssl_fix.py DIR PORT N OUT [--tls12]

Makes a self-signed certificate in DIR, starts `s_server` (TLS 1.3
TLS_CHACHA20_POLY1305_SHA256, or with --tls12 TLS 1.2 ECDHE-RSA-CHACHA20-POLY1305; its
key log in DIR/keys.log) and `s_client`, then sends N NewOrderSingles one at a time
through s_client's stdin; each is read from s_server's stdout and answered with an
ExecutionReport of the same ClOrdID through s_server's stdin, read back from s_client's
stdout. OUT gets one line an order: ClOrdID send_ns receive_ns (time.time_ns(), taken
before the order is written to s_client and after its report was read from it). The last
line on stdout is what s_client says it negotiated: `negotiated PROTOCOL SUITE`.
Every wait is bounded (10 s); the processes started here are ended here, by their handles.
"""
import os
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_fix import cert, field, fix, messages  # noqa: E402

WAIT_S = 10


class Pipe:
    """A process's stdout as the `recv` that tls_fix.messages reads."""

    def __init__(self, f):
        self.fd = f.fileno()

    def recv(self, n):
        return os.read(self.fd, n)


def reader(stream, out):
    """Puts every FIX message of `stream` on `out`, dropping text printed before it."""
    for msg in messages(Pipe(stream)):
        start = msg.find(b"8=FIX")
        if start >= 0:
            out.put(msg[start:])
    out.put(None)


def lines_until(stream, needle, seen):
    """Reads text lines of `stream` (into `seen`) until one contains `needle`."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line.decode(errors="replace").rstrip())
        if needle in line:
            return line.decode().strip()
    sys.exit("no %r from openssl: %s" % (needle, "\n".join(seen)))


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    directory, port, n, out = argv[1], int(argv[2]), int(argv[3]), argv[4]
    tls12 = "--tls12" in argv
    cert(directory)
    if tls12:
        suite = ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"]
    else:
        suite = ["-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"]
    server = subprocess.Popen(
        ["openssl", "s_server", "-accept", "127.0.0.1:%d" % port, "-naccept", "1",
         "-cert", os.path.join(directory, "cert.pem"),
         "-key", os.path.join(directory, "key.pem"),
         "-keylogfile", os.path.join(directory, "keys.log")] + suite,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    client = None
    try:
        seen = []
        lines_until(server.stdout, b"ACCEPT", seen)
        client = subprocess.Popen(
            ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-brief"] + suite,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        protocol = lines_until(client.stderr, b"Protocol version:", seen).split(": ")[1]
        negotiated = lines_until(client.stderr, b"Ciphersuite:", seen).split(": ")[1]
        at_server, at_client = queue.Queue(), queue.Queue()
        for stream, q in ((server.stdout, at_server), (client.stdout, at_client)):
            threading.Thread(target=reader, args=(stream, q), daemon=True).start()
        lines = []
        for i in range(n):
            cl_ord_id = b"OSSL%d" % i
            order = fix(b"D", i + 1, [(11, cl_ord_id), (55, b"EURUSD"), (54, b"1"), (38, b"100")])
            sent = time.time_ns()
            client.stdin.write(order)
            client.stdin.flush()
            got = at_server.get(timeout=WAIT_S)
            assert got is not None and field(got, b"11") == cl_ord_id, got
            server.stdin.write(fix(b"8", i + 1, [(11, cl_ord_id), (39, b"0"), (150, b"0")]))
            server.stdin.flush()
            reply = at_client.get(timeout=WAIT_S)
            received = time.time_ns()
            assert reply is not None and field(reply, b"11") == cl_ord_id, reply
            lines.append("%s %d %d\n" % (cl_ord_id.decode(), sent, received))
            time.sleep(0.005)
        with open(out, "w") as f:
            f.writelines(lines)
        # s_client closes the connection at its stdin's end; s_server (-naccept 1) then exits.
        client.stdin.close()
        client.wait(timeout=WAIT_S)
        server.stdin.close()
        server.wait(timeout=WAIT_S)
        print("negotiated %s %s" % (protocol, negotiated), flush=True)
    finally:
        for p in (client, server):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main(sys.argv)
