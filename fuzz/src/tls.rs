//! Target `tls`: a key log, then TLS bytes of both directions in chunks (and holes), through
//! one `TlsConnection`: no panic, no hang, plaintext never more than went in, and every
//! chunk out timed no later than the chunk that completed it.
//!
//! Connections without their key are followed by calls (`--tls-uprobes`), so the calls'
//! placement on records (`fixscope-tls` `uprobe.rs`) is fuzzed too.
//!
//! Layout: byte 0 × 4 = how many key log bytes follow; then chunks, each a control byte
//! (bit 7: the server's; bits 0–6 × 8 + 1: the length; 0xff: a 100-byte hole in the
//! client's stream; 0xfe: an OpenSSL call, then a byte — bit 0: a write, bit 1: it did TCP
//! I/O, bit 2: the server's direction, bits 3–7: how far back its range starts —, a length
//! byte and its plaintext) and its bytes.

use fixscope_tls::{
    CallKind, KeyLog, KeySource, Plain, Secrets, Side, TlsCall, TlsConnection, TlsCounters,
};

/// The key log, with `--tls-uprobes`.
struct WithCalls(KeyLog);

impl KeySource for WithCalls {
    fn secrets(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        self.0.secrets(client_random)
    }

    fn by_uprobes(&self) -> bool {
        true
    }
}

pub fn tls(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (text, mut stream) = rest.split_at((n as usize * 4).min(rest.len()));
    let mut keys = KeyLog::new();
    keys.add_text(text);
    let keys = WithCalls(keys);
    let mut seq = [0u32; 2];
    let mut call_bytes = 0usize;
    let mut conn = TlsConnection::new();
    let mut counters = TlsCounters::default();
    let (mut ts, mut bytes_in, mut bytes_out) = (0u64, 0usize, 0usize);
    while let Some((&ctl, rest)) = stream.split_first() {
        ts += 1;
        if ctl == 0xff {
            conn.hole(Side::Client, 100, &mut counters);
            seq[0] = seq[0].wrapping_add(100);
            stream = rest;
            continue;
        }
        if ctl == 0xfe {
            let [how, len, rest @ ..] = rest else {
                break;
            };
            let (bytes, rest) = rest.split_at((*len as usize).min(rest.len()));
            let side = if how & 4 == 0 {
                Side::Client
            } else {
                Side::Server
            };
            let end = seq[side as usize];
            let call = TlsCall {
                kind: if how & 1 == 0 {
                    CallKind::Read
                } else {
                    CallKind::Write
                },
                tcp: (how & 2 != 0).then(|| (end.wrapping_sub(u32::from(how >> 3) * 32), end)),
                bytes,
                truncated: false,
                ts_ns: ts,
            };
            call_bytes += bytes.len();
            conn.call(side, &call, &mut counters, &mut |_, plain| {
                if let Plain::Data { ts_ns, .. } = plain {
                    assert!(
                        ts_ns <= ts,
                        "a call's bytes timed after the wire's last chunk"
                    );
                }
            });
            stream = rest;
            continue;
        }
        let side = if ctl & 0x80 == 0 {
            Side::Client
        } else {
            Side::Server
        };
        let len = ((ctl & 0x7f) as usize * 8 + 1).min(rest.len());
        let (chunk, rest) = rest.split_at(len);
        bytes_in += chunk.len();
        let at = seq[side as usize];
        seq[side as usize] = at.wrapping_add(chunk.len() as u32);
        conn.push_at(
            side,
            chunk,
            at,
            ts,
            &keys,
            &mut counters,
            &mut |_, plain| {
                if let Plain::Data { bytes, ts_ns } = plain {
                    assert!(
                        ts_ns <= ts,
                        "plaintext timed after the chunk that completed it"
                    );
                    bytes_out += bytes.len();
                }
            },
        );
        stream = rest;
    }
    assert!(
        bytes_out <= bytes_in + call_bytes,
        "more plaintext than bytes in"
    );
    assert!(counters.tls_connections <= 1);
    let gave_up = counters.tls_no_key
        + counters.tls_no_handshake
        + counters.tls_unsupported
        + counters.tls_uprobe_silent;
    assert!(gave_up <= 1, "a connection gives up once: {counters:?}");
}

/// A TLS 1.2 start: a key line, a ClientHello, a ServerHello (ECDHE-RSA-AES128-GCM), both
/// ChangeCipherSpecs and a protected record that does not verify.
pub fn seed() -> Vec<u8> {
    let random = [7u8; 32];
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut text = format!("CLIENT_RANDOM {} {}\n", hex(&random), hex(&[9u8; 48])).into_bytes();
    while text.len() % 4 != 0 {
        text.push(b'\n');
    }
    let mut out = vec![(text.len() / 4) as u8];
    out.extend_from_slice(&text);
    let record = |kind: u8, body: &[u8]| {
        let mut r = vec![kind, 3, 3];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    };
    let hello = |kind: u8, random: &[u8; 32], tail: &[u8]| {
        let mut b = vec![3, 3];
        b.extend_from_slice(random);
        b.push(0); // session id
        b.extend_from_slice(tail);
        let mut m = vec![kind, 0, 0, b.len() as u8];
        m.extend_from_slice(&b);
        record(22, &m)
    };
    let client_hello = hello(1, &random, &[0, 2, 0xc0, 0x2f, 1, 0]);
    let server_hello = hello(2, &[8u8; 32], &[0xc0, 0x2f, 0]);
    let ccs = record(20, &[1]);
    let protected = record(23, &[0x5a; 40]);
    let mut push = |server: bool, mut bytes: &[u8]| {
        // Chunks of 8k + 1 bytes, as the layout says.
        while !bytes.is_empty() {
            let k = ((bytes.len() - 1) / 8).min(7);
            out.push(k as u8 | if server { 0x80 } else { 0 });
            out.extend_from_slice(&bytes[..k * 8 + 1]);
            bytes = &bytes[k * 8 + 1..];
        }
    };
    push(false, &client_hello);
    push(true, &server_hello);
    push(true, &ccs);
    push(false, &ccs);
    push(false, &protected);
    out
}
