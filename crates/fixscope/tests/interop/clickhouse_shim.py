"""A small stand-in for ClickHouse's HTTP interface that runs every request in the real
ClickHouse engine (chdb, in-process): the SQL, the types, MergeTree and the ArrowStream
input format are ClickHouse's own. For the tests of `fixscope --clickhouse`.

usage: clickhouse_shim.py SESSION_DIR [USER PASSWORD]
Prints "PORT <n>" once listening on 127.0.0.1; serves until stdin closes.

- POST/GET /?query=SQL[&...] with an optional body: the body is appended to the query,
  as ClickHouse does; `INSERT INTO t FORMAT ArrowStream` takes the body as Arrow data
  (read by ClickHouse's ArrowStream format from a file). Results as TabSeparated.
- With USER and PASSWORD, a request without those X-ClickHouse-User/-Key headers is
  refused (516, as ClickHouse does).
"""
import http.server
import os
import re
import sys
import tempfile
import threading
import urllib.parse

from chdb import session

sess = session.Session(sys.argv[1])
lock = threading.Lock()
user, password = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else (None, None)
INSERT_ARROW = re.compile(r"^\s*INSERT\s+INTO\s+([\w.]+)\s+FORMAT\s+ArrowStream\s*$", re.I)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, text):
        body = text.encode() if isinstance(text, str) else text
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_query(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if user is not None and (
            self.headers.get("X-ClickHouse-User") != user
            or self.headers.get("X-ClickHouse-Key") != password
        ):
            return self.answer(516, "Code: 516. DB::Exception: Authentication failed")
        try:
            with lock:
                m = INSERT_ARROW.match(query)
                if m:
                    with tempfile.NamedTemporaryFile(suffix=".arrows", delete=False) as f:
                        f.write(body)
                    try:
                        sess.query(
                            f"INSERT INTO {m.group(1)} SELECT * FROM file('{f.name}', 'ArrowStream')"
                        )
                    finally:
                        os.unlink(f.name)
                    return self.answer(200, "")
                sql = query + ("\n" + body.decode() if body else "")
                result = sess.query(sql, "TabSeparated")
                return self.answer(200, result.bytes() if hasattr(result, "bytes") else str(result))
        except Exception as e:  # ClickHouse answers errors with 500 and the message
            return self.answer(500, str(e))

    do_GET = handle_query
    do_POST = handle_query


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"PORT {server.server_address[1]}", flush=True)
sys.stdin.read()
server.shutdown()
