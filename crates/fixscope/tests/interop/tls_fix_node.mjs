// A FIX exchange over TLS in Node.js, for crates/fixscope/tests/tls_uprobes.rs: Node's
// `tls` drives OpenSSL through memory BIOs (its own socket I/O, outside SSL_read and
// SSL_write), the engine kind `--tls-uprobes` cannot tie to a connection.
//
//   node tls_fix_node.mjs DIR PORT   answer each NewOrderSingle (35=D) with an
//                                    ExecutionReport (35=8) of the same ClOrdID (11), with
//                                    DIR's cert.pem and key.pem (tls_fix.py cert DIR);
//                                    prints "listening" on stderr once it accepts
import { readFileSync } from "node:fs";
import { join } from "node:path";
import tls from "node:tls";

const SOH = "\x01";
const [dir, port] = process.argv.slice(2);

function fix(msgType, seq, fields) {
  let body = `35=${msgType}${SOH}49=B${SOH}56=A${SOH}34=${seq}${SOH}`;
  for (const [tag, value] of fields) body += `${tag}=${value}${SOH}`;
  const msg = `8=FIX.4.4${SOH}9=${Buffer.byteLength(body, "latin1")}${SOH}${body}`;
  let sum = 0;
  for (const b of Buffer.from(msg, "latin1")) sum = (sum + b) % 256;
  return msg + `10=${String(sum).padStart(3, "0")}${SOH}`;
}

function field(msg, tag) {
  for (const part of msg.split(SOH)) {
    if (part.startsWith(`${tag}=`)) return part.slice(tag.length + 1);
  }
  return null;
}

const server = tls.createServer(
  { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
  (socket) => {
    socket.setNoDelay(true);
    let buf = "";
    let seq = 1;
    socket.on("data", (data) => {
      buf += data.toString("latin1");
      for (;;) {
        const end = buf.indexOf(`${SOH}10=`);
        const stop = end < 0 ? -1 : buf.indexOf(SOH, end + 1);
        if (stop < 0) break;
        const msg = buf.slice(0, stop + 1);
        buf = buf.slice(stop + 1);
        if (field(msg, "35") === "D") {
          socket.write(fix("8", seq++, [[11, field(msg, "11")], [39, "0"], [150, "0"]]), "latin1");
        }
      }
    });
    socket.on("error", () => {});
  },
);
server.listen(Number(port), "127.0.0.1", () => console.error("listening"));
