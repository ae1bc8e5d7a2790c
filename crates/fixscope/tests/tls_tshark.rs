//! An independent decoder agrees (#49): tshark, given the same key log, decodes the same FIX
//! messages at the same frame times as `fixscope pcap --tls-keylog`.
//!
//! rustls client and server exchange a FIX script in-process, one connection per suite
//! (TLS 1.3 AES-128-GCM and ChaCha20-Poly1305, TLS 1.2 AES-128-GCM), written as one pcap
//! and one key log. The script puts several FIX messages in one record, a message across
//! two records (each with whole messages beside it) and a record across two TCP segments.
//! tshark (TLS, then its FIX dissector over TLS) shows each message in the frame that
//! completes it; fixscope's `--trace` gives each request and response with its time. Every
//! message fixscope traced must be one tshark decoded — same direction, MsgType and
//! ClOrdID — at the time of tshark's frame, and the counts must agree. Both are also held
//! to the script's own truth (the segment completing the record with the message's last
//! byte), so a rule both got wrong the same way would still fail.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use fixscope_core::pcap_writer::{SyntheticConnection, TcpPacketSpec};
use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};
use support::{at, endpoint, fix_message, write_pcap, TimedPacket, SERVER_PORT, US};

/// One FIX message as the script means it to be seen.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    ts_ns: u64,
    response: bool,
    msg_type: String,
    /// Empty for messages without tag 11 (logons).
    clordid: String,
}

/// One write: `messages` from `from`, their bytes cut into records at `records`' byte
/// offsets (each record's end, and its time); a record marked `true` goes out as two TCP
/// segments 3 µs apart, the second at the record's time.
struct Write {
    from: Peer,
    messages: Vec<(String, String, Vec<u8>)>,
    records: Vec<(usize, u64, bool)>,
}

struct Script {
    prefix: &'static str,
    seq: [u64; 2],
    writes: Vec<Write>,
}

impl Script {
    fn message(&mut self, from: Peer, fields: &[(u32, &str)]) -> (String, String, Vec<u8>) {
        let side = usize::from(from == Peer::Server);
        let (sender, target) = if side == 0 {
            ("CLIENT", "VENUE")
        } else {
            ("VENUE", "CLIENT")
        };
        let seq = self.seq[side].to_string();
        self.seq[side] += 1;
        let mut all = vec![fields[0], (34, seq.as_str())];
        all.extend([(49, sender), (52, "20261128-12:00:00.000"), (56, target)]);
        all.extend_from_slice(&fields[1..]);
        let id = fields
            .iter()
            .find(|(tag, _)| *tag == 11)
            .map_or(String::new(), |(_, v)| v.to_string());
        (fields[0].1.to_string(), id, fix_message("FIX.4.4", &all))
    }

    fn order(&mut self, n: usize) -> (String, String, Vec<u8>) {
        let id = format!("{}-{n}", self.prefix);
        self.message(
            Peer::Client,
            &[
                (35, "D"),
                (11, &id),
                (55, "ABC"),
                (54, "1"),
                (38, "100"),
                (40, "2"),
                (44, "10.5"),
            ],
        )
    }

    fn ack(&mut self, n: usize) -> (String, String, Vec<u8>) {
        let id = format!("{}-{n}", self.prefix);
        let exec = format!("E{id}");
        self.message(
            Peer::Server,
            &[(35, "8"), (11, &id), (17, &exec), (150, "0"), (39, "0")],
        )
    }

    /// Each message whole in a record of its own at `t`.
    fn whole(&mut self, from: Peer, m: (String, String, Vec<u8>), t: u64, cut: bool) {
        let len = m.2.len();
        self.writes.push(Write {
            from,
            messages: vec![m],
            records: vec![(len, t, cut)],
        });
    }

    /// Logons, then orders in every shape, each answered.
    fn build(prefix: &'static str, t0: u64) -> Script {
        let mut s = Script {
            prefix,
            seq: [1, 1],
            writes: vec![],
        };
        let logon = [(35, "A"), (98, "0"), (108, "30")];
        let m = s.message(Peer::Client, &logon);
        s.whole(Peer::Client, m, t0, false);
        let m = s.message(Peer::Server, &logon);
        s.whole(Peer::Server, m, t0 + 50 * US, false);
        let mut t = t0 + 1_000 * US;
        let mut n = 0;
        for round in 0..3 {
            // A single order, its record cut across two TCP segments on the second round.
            let m = s.order(n);
            s.whole(Peer::Client, m, t, round == 1);
            let m = s.ack(n);
            s.whole(Peer::Server, m, t + (80 + 7 * round) * US, false);
            n += 1;
            t += 1_000 * US;
            // Three orders in one record; their acks in one record, cut across two segments
            // on the last round.
            let orders: Vec<_> = (n..n + 3).map(|k| s.order(k)).collect();
            let len = orders.iter().map(|m| m.2.len()).sum();
            s.writes.push(Write {
                from: Peer::Client,
                messages: orders,
                records: vec![(len, t, false)],
            });
            let acks: Vec<_> = (n..n + 3).map(|k| s.ack(k)).collect();
            let len = acks.iter().map(|m| m.2.len()).sum();
            s.writes.push(Write {
                from: Peer::Server,
                messages: acks,
                records: vec![(len, t + 120 * US, round == 2)],
            });
            n += 3;
            t += 1_000 * US;
            // Three orders in two records 9 µs apart: the first record holds the first
            // order and half the second; the second the rest of it and the third. The
            // second record is cut across two segments on the first round.
            let orders: Vec<_> = (n..n + 3).map(|k| s.order(k)).collect();
            let first = orders[0].2.len() + orders[1].2.len() / 2;
            let len = orders.iter().map(|m| m.2.len()).sum();
            s.writes.push(Write {
                from: Peer::Client,
                messages: orders,
                records: vec![(first, t - 9 * US, false), (len, t, round == 0)],
            });
            // Acks one by one.
            for k in n..n + 3 {
                let m = s.ack(k);
                s.whole(Peer::Server, m, t + (60 + 10 * k as u64) * US, false);
            }
            n += 3;
            t += 1_000 * US;
        }
        s
    }

    /// Every message and the time it is readable: its last byte's record's time.
    fn truth(&self) -> Vec<Seen> {
        let mut seen = vec![];
        for w in &self.writes {
            let mut end = 0;
            for (msg_type, clordid, bytes) in &w.messages {
                end += bytes.len();
                let &(_, ts_ns, _) = w.records.iter().find(|r| r.0 >= end).unwrap();
                seen.push(Seen {
                    ts_ns,
                    response: w.from == Peer::Server,
                    msg_type: msg_type.clone(),
                    clordid: clordid.clone(),
                });
            }
        }
        seen.sort();
        seen
    }

    /// The script over TLS on `pair`: TCP and TLS handshakes before the first write, then
    /// each record's flight one segment (or two) at its time.
    fn packets(&self, pair: &mut TlsPair, client_port: u16) -> Vec<TimedPacket> {
        let mut conn = SyntheticConnection::new(
            endpoint(false, 2, client_port),
            endpoint(false, 1, SERVER_PORT),
        );
        let t0 = self.writes[0].records[0].1;
        let mut packets: Vec<TimedPacket> = conn
            .handshake()
            .into_iter()
            .map(|p| at(t0 - 500 * US, p))
            .collect();
        for (k, (peer, bytes)) in pair.wire.clone().iter().enumerate() {
            let t = t0 - 400 * US + k as u64 * 10 * US;
            packets.push(at(t, send(&mut conn, *peer, bytes)));
        }
        for w in &self.writes {
            let plain: Vec<u8> = w.messages.iter().flat_map(|m| m.2.clone()).collect();
            let mut start = 0;
            for &(end, t, cut) in &w.records {
                let flight = pair.send(w.from, &plain[start..end]);
                start = end;
                let wire = pair.wire[flight].1.clone();
                if cut {
                    let (head, tail) = wire.split_at(wire.len() / 2);
                    packets.push(at(t - 3 * US, send(&mut conn, w.from, head)));
                    packets.push(at(t, send(&mut conn, w.from, tail)));
                } else {
                    packets.push(at(t, send(&mut conn, w.from, &wire)));
                }
            }
            assert_eq!(start, plain.len());
        }
        packets
    }
}

fn send(conn: &mut SyntheticConnection, from: Peer, bytes: &[u8]) -> TcpPacketSpec {
    match from {
        Peer::Client => conn.client_sends(bytes),
        Peer::Server => conn.server_sends(bytes),
    }
}

/// "1.000123456" (tshark's frame.time_epoch) in ns, exactly.
fn epoch_ns(s: &str) -> u64 {
    let (secs, frac) = s.split_once('.').unwrap_or((s, "0"));
    assert!(frac.len() <= 9, "time {s:?}");
    let frac = format!("{frac:0<9}");
    secs.parse::<u64>().expect("seconds") * 1_000_000_000 + frac.parse::<u64>().expect("ns")
}

/// Every FIX message tshark decodes, each at the time of the frame it shows it in.
fn tshark_messages(cap: &Path, keys: &Path) -> Vec<Seen> {
    fixscope_testkit::require_tool("tls_tshark", "tshark");
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(cap)
        .arg("-o")
        .arg(format!("tls.keylog_file:{}", keys.display()))
        // TLS on the FIX port, then FIX inside it: the FIX dissector's heuristic on TLS
        // (on by default; named so that a build with it off still decodes).
        .args(["-d", &format!("tcp.port=={SERVER_PORT},tls")])
        .args(["--enable-heuristic", "fix_tls"])
        .args(["-Y", "fix", "-T", "fields", "-E", "occurrence=a"])
        .args(["-e", "frame.number", "-e", "frame.time_epoch"])
        .args([
            "-e",
            "tcp.srcport",
            "-e",
            "fix.MsgType",
            "-e",
            "fix.ClOrdID",
        ])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut seen = vec![];
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 5, "tshark line {line:?}");
        let ts_ns = epoch_ns(f[1]);
        let response = f[2] == SERVER_PORT.to_string();
        let types: Vec<&str> = f[3].split(',').collect();
        let ids: Vec<&str> = f[4].split(',').filter(|s| !s.is_empty()).collect();
        // Logons (no ClOrdID) are alone in their records; every other message has one.
        let ids: Vec<&str> = if ids.is_empty() {
            vec![""; types.len()]
        } else {
            ids
        };
        assert_eq!(types.len(), ids.len(), "frame {}: {line:?}", f[0]);
        for (msg_type, clordid) in types.iter().zip(ids) {
            seen.push(Seen {
                ts_ns,
                response,
                msg_type: msg_type.to_string(),
                clordid: clordid.to_string(),
            });
        }
    }
    seen.sort();
    seen
}

/// Every request and response in fixscope's `--trace`, by ClOrdID.
fn fixscope_messages(cap: &Path, keys: &Path, trace: &Path) -> Vec<Seen> {
    let out = support::fixscope(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        &SERVER_PORT.to_string(),
        "--tls-keylog",
        keys.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "fixscope: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(trace).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("ts_ns,session,direction,msg_type,key"));
    let mut seen: Vec<Seen> = lines
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, ',').collect();
            assert_eq!(f.len(), 5, "trace line {l:?}");
            Seen {
                ts_ns: f[0].parse().expect("ts_ns"),
                response: f[2] == "response",
                msg_type: f[3].to_string(),
                clordid: f[4].to_string(),
            }
        })
        .collect();
    seen.sort();
    seen
}

const T0: u64 = 1_000_000_000;

#[test]
fn tshark_decodes_the_same_messages_at_the_same_frame_times() {
    let dir = tempfile::tempdir().unwrap();
    let suites = [
        (TlsSuite::Tls13Aes128Gcm, "T13AES"),
        (TlsSuite::Tls13Chacha20, "T13CHA"),
        (TlsSuite::Tls12Aes128Gcm, "T12AES"),
    ];
    let mut packets = vec![];
    let mut keys = String::new();
    let mut truth = vec![];
    for (k, (suite, prefix)) in suites.into_iter().enumerate() {
        // The connections overlap in time: each starts 300 µs after the one before.
        let script = Script::build(prefix, T0 + k as u64 * 300 * US);
        let ends = TlsEndpoints::new(suite);
        let mut pair = ends.connect();
        packets.extend(script.packets(&mut pair, 40_001 + k as u16));
        keys.push_str(&ends.key_log.text());
        truth.extend(script.truth());
    }
    packets.sort_by_key(|p| p.ts_ns);
    truth.sort();
    let cap = dir.path().join("tls.pcap");
    write_pcap(&cap, &packets);
    let key_file = dir.path().join("keys.log");
    std::fs::write(&key_file, &keys).unwrap();

    let tshark = tshark_messages(&cap, &key_file);
    let fixscope = fixscope_messages(&cap, &key_file, &dir.path().join("trace.csv"));

    // tshark decodes every message the script sent, each at its record's completing
    // segment.
    assert_eq!(tshark, truth, "tshark against the script");
    // fixscope frames the requests and responses (logons are neither): each one is a
    // message tshark decoded, at the time of the frame tshark shows it in.
    let by_id: BTreeMap<(&str, bool), &Seen> = tshark
        .iter()
        .filter(|m| !m.clordid.is_empty())
        .map(|m| ((m.clordid.as_str(), m.response), m))
        .collect();
    for m in &fixscope {
        let t = by_id
            .get(&(m.clordid.as_str(), m.response))
            .unwrap_or_else(|| panic!("fixscope's {m:?} is not among tshark's messages"));
        assert_eq!((&t.msg_type, t.ts_ns), (&m.msg_type, m.ts_ns), "{m:?}");
    }
    // And the counts agree: every order and every ack, on every connection.
    let traced: std::collections::BTreeSet<_> = fixscope
        .iter()
        .map(|m| (m.clordid.as_str(), m.response))
        .collect();
    assert_eq!(traced.len(), fixscope.len(), "a message traced twice");
    assert_eq!(fixscope.len(), by_id.len(), "messages with a ClOrdID");
    let orders_and_acks = truth.iter().filter(|m| !m.clordid.is_empty()).count();
    assert_eq!(fixscope.len(), orders_and_acks);
    assert_eq!(orders_and_acks, suites.len() * 2 * 21);
}
