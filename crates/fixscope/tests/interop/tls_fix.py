#!/usr/bin/env python3
"""A FIX exchange and client over TLS with OpenSSL (Python's ssl module), for
crates/fixscope/tests/tls_live.rs.

  tls_fix.py cert DIR                      write a self-signed cert.pem and key.pem into DIR
  tls_fix.py serve DIR PORT [HOST]         answer each NewOrderSingle (35=D) with an
                                           ExecutionReport (35=8) of the same ClOrdID (11);
                                           prints "listening" on stderr once it accepts
                                           connections on HOST (default 127.0.0.1)
  tls_fix.py client PORT N OUT [KEYLOG] [--tls12] [--late] [--big] [--no-pause] [--linger=SECS]
                   [--host=HOST]
                                           send N orders, one at a time; OUT gets one line a
                                           order: ClOrdID send_ns receive_ns (time.time_ns());
                                           KEYLOG: the client's SSLContext.keylog_filename
                                           (OpenSSL appends the lines during the handshake);
                                           --late: OpenSSL writes them to KEYLOG.private, and
                                           they are appended to KEYLOG only after half the
                                           orders were answered (an engine that logs late);
                                           --big: every order and its report carry a 40,000-byte
                                           Text (58): each spans three TLS records, and the
                                           exchange reads it in several SSL_read calls;
                                           --no-pause: the next order right after the last
                                           report, not 10 ms later (benchmarks);
                                           --linger=SECS: stay connected, silent, SECS after
                                           the last report before closing (a quiet peer);
                                           --host=HOST: the exchange's address (default 127.0.0.1)
                                           --burst: every order first, back to back, then the
                                           reports: records queue at the exchange, several
                                           behind each other when it reads

The client's own round trip (its send before the request is on the wire, its receive after
the response was) bounds the wire latency fixscope measures.
"""
import os
import socket
import ssl
import subprocess
import sys
import threading
import time

SOH = b"\x01"


def fix(msg_type, seq, fields):
    body = b"35=" + msg_type + SOH + b"49=A" + SOH + b"56=B" + SOH
    body += b"34=" + str(seq).encode() + SOH
    for tag, value in fields:
        body += str(tag).encode() + b"=" + value + SOH
    head = b"8=FIX.4.4" + SOH + b"9=" + str(len(body)).encode() + SOH
    msg = head + body
    return msg + b"10=%03d" % (sum(msg) % 256) + SOH


def messages(sock):
    """Complete FIX messages read from sock (framed by their checksum field)."""
    buf = b""
    while True:
        end = buf.find(SOH + b"10=")
        if end >= 0 and buf.find(SOH, end + 1) >= 0:
            stop = buf.find(SOH, end + 1) + 1
            yield buf[:stop]
            buf = buf[stop:]
            continue
        data = sock.recv(65536)
        if not data:
            return
        buf += data


def field(msg, tag):
    for part in msg.split(SOH):
        if part.startswith(tag + b"="):
            return part[len(tag) + 1:]
    return None


def cert(directory):
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=fix.test", "-keyout", os.path.join(directory, "key.pem"),
         "-out", os.path.join(directory, "cert.pem")],
        check=True, capture_output=True)


def serve(directory, port, host):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem"))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen()
    print("listening", file=sys.stderr, flush=True)

    def session(conn):
        try:
            with ctx.wrap_socket(conn, server_side=True) as tls:
                tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                seq = 1
                for msg in messages(tls):
                    if field(msg, b"35") == b"D":
                        report = [(11, field(msg, b"11")), (39, b"0"), (150, b"0")]
                        text = field(msg, b"58")
                        if text:
                            report.append((58, text))
                        tls.sendall(fix(b"8", seq, report))
                        seq += 1
        except (ssl.SSLError, OSError):
            pass

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=session, args=(conn,), daemon=True).start()


def client(port, n, out, keylog, tls12, late, big, pause=True, linger=0.0, host="127.0.0.1",
           burst=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if keylog:
        ctx.keylog_filename = keylog + ".private" if late else keylog
    with socket.create_connection((host, port)) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw) as tls:
            replies = messages(tls)
            lines = []
            if burst:
                sent = {}
                for i in range(n):
                    cl_ord_id = b"ORD%d" % i
                    sent[cl_ord_id] = time.time_ns()
                    tls.sendall(fix(b"D", i + 1, [(11, cl_ord_id), (55, b"EURUSD"), (54, b"1"),
                                                  (38, b"100")]))
                for _ in range(n):
                    reply = next(replies)
                    received = time.time_ns()
                    cl_ord_id = field(reply, b"11")
                    lines.append("%s %d %d\n" % (cl_ord_id.decode(), sent[cl_ord_id], received))
                n = 0
            for i in range(n):
                cl_ord_id = b"ORD%d" % i
                fields = [(11, cl_ord_id), (55, b"EURUSD"), (54, b"1"), (38, b"100")]
                if big:
                    fields.append((58, b"x" * 40000))
                order = fix(b"D", i + 1, fields)
                sent = time.time_ns()
                tls.sendall(order)
                reply = next(replies)
                received = time.time_ns()
                assert field(reply, b"11") == cl_ord_id, reply
                lines.append("%s %d %d\n" % (cl_ord_id.decode(), sent, received))
                if late and i + 1 == n // 2:
                    with open(keylog + ".private", "rb") as private, open(keylog, "ab") as shared:
                        shared.write(private.read())
                if pause:
                    time.sleep(0.01)
            # The answers are in OUT before the connection goes quiet.
            with open(out, "w") as f:
                f.writelines(lines)
            time.sleep(linger)
    with open(out, "w") as f:
        f.writelines(lines)


def main(argv):
    if argv[1] == "cert":
        cert(argv[2])
    elif argv[1] == "serve":
        serve(argv[2], int(argv[3]), argv[4] if len(argv) > 4 else "127.0.0.1")
    elif argv[1] == "client":
        rest = [a for a in argv[5:] if not a.startswith("--")]
        hosts = [a.split("=", 1)[1] for a in argv[5:] if a.startswith("--host=")]
        client(int(argv[2]), int(argv[3]), argv[4], rest[0] if rest else None,
               "--tls12" in argv, "--late" in argv, "--big" in argv, "--no-pause" not in argv,
               next((float(a.split("=", 1)[1]) for a in argv if a.startswith("--linger=")), 0.0),
               hosts[0] if hosts else "127.0.0.1", "--burst" in argv)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
