//! FIX over TLS, offline (#49): rustls client and server in-process exchange a FIX script;
//! every flight they write becomes a TCP segment at a time the script chooses, and the same
//! script is written again as plain FIX on the same segment times. `fixscope pcap
//! --tls-keylog` on the TLS capture gives the plaintext capture's per-order latencies — the
//! generator's truth — on every plan; and the captures broken on purpose (a dropped segment,
//! a capture starting mid-session, a key log missing a connection, a corrupted record, a
//! wrong key) are counted, with no wrong number and no panic.

mod support;
mod support_dist;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};
use support::{
    analyse, assert_stage, at, counter, endpoint, every_plan_with_flags, fix_message, stage,
    write_pcap, TimedPacket, SERVER_PORT, US,
};

/// One write of application data: `from` sends `parts` (each part one TLS record, each
/// record one TCP segment at its time).
struct Write {
    from: Peer,
    parts: Vec<(u64, Vec<u8>)>,
    /// Over TLS, each part's record is cut into two TCP segments 3 µs apart (the part's
    /// time is the second's: the segment that completes the record).
    cut_record: bool,
}

/// A FIX session scripted as writes, with the truth: each order's first-response latency.
struct FixScript {
    writes: Vec<Write>,
    latencies: Vec<u64>,
    seq: [u64; 2],
    /// The client's CompID (the venue's is `VENUE`).
    client: &'static str,
}

fn message(client: &str, side: usize, seq: u64, fields: &[(u32, &str)]) -> Vec<u8> {
    let (sender, target) = if side == 0 {
        (client, "VENUE")
    } else {
        ("VENUE", client)
    };
    let seq = seq.to_string();
    let mut all = vec![fields[0], (34, seq.as_str())];
    all.extend([(49, sender), (52, "20261128-12:00:00.000"), (56, target)]);
    all.extend_from_slice(&fields[1..]);
    fix_message("FIX.4.4", &all)
}

impl FixScript {
    fn next(&mut self, side: usize, fields: &[(u32, &str)]) -> Vec<u8> {
        let m = message(self.client, side, self.seq[side], fields);
        self.seq[side] += 1;
        m
    }

    fn order(&mut self, id: &str) -> Vec<u8> {
        self.next(
            0,
            &[
                (35, "D"),
                (11, id),
                (55, "ABC"),
                (54, "1"),
                (38, "100"),
                (40, "2"),
                (44, "10.5"),
            ],
        )
    }

    fn ack(&mut self, id: &str) -> Vec<u8> {
        let exec = format!("E{id}");
        self.next(
            1,
            &[(35, "8"), (11, id), (17, &exec), (150, "0"), (39, "0")],
        )
    }

    /// Logons, then `n` orders: single ones, two orders in one record, and an order split
    /// across two records (each record a segment; the message's time is its second's).
    fn build(n: usize, t0: u64) -> FixScript {
        Self::build_as("CLIENT", n, t0)
    }

    /// [`FixScript::build`] of a client named `client` (another FIX session).
    fn build_as(client: &'static str, n: usize, t0: u64) -> FixScript {
        let mut s = FixScript {
            writes: vec![],
            latencies: vec![],
            seq: [1, 1],
            client,
        };
        let logon = [(35, "A"), (98, "0"), (108, "30")];
        let l = s.next(0, &logon);
        s.writes.push(Write {
            from: Peer::Client,
            parts: vec![(t0, l)],
            cut_record: false,
        });
        let l = s.next(1, &logon);
        s.writes.push(Write {
            from: Peer::Server,
            parts: vec![(t0 + 50 * US, l)],
            cut_record: false,
        });
        let mut t = t0 + 1_000 * US;
        let mut i = 0;
        while i < n {
            let delay = (80 + 13 * i as u64) * US;
            if i % 5 == 3 && i + 1 < n {
                // Two orders in one record; both answered in one record.
                let (a, b) = (format!("ORD{i}"), format!("ORD{}", i + 1));
                let req = [s.order(&a), s.order(&b)].concat();
                s.writes.push(Write {
                    from: Peer::Client,
                    parts: vec![(t, req)],
                    cut_record: false,
                });
                let resp = [s.ack(&a), s.ack(&b)].concat();
                s.writes.push(Write {
                    from: Peer::Server,
                    parts: vec![(t + delay, resp)],
                    cut_record: false,
                });
                s.latencies.extend([delay, delay]);
                i += 2;
            } else if i % 5 == 1 {
                // The order split across two records, 7 µs apart: timed by the second.
                let id = format!("ORD{i}");
                let req = s.order(&id);
                let (head, tail) = req.split_at(req.len() / 2);
                s.writes.push(Write {
                    from: Peer::Client,
                    parts: vec![(t - 7 * US, head.to_vec()), (t, tail.to_vec())],
                    cut_record: false,
                });
                let resp = s.ack(&id);
                s.writes.push(Write {
                    from: Peer::Server,
                    parts: vec![(t + delay, resp)],
                    cut_record: false,
                });
                s.latencies.push(delay);
                i += 1;
            } else {
                let id = format!("ORD{i}");
                let req = s.order(&id);
                // Every fifth order's record comes in two TCP segments.
                s.writes.push(Write {
                    from: Peer::Client,
                    parts: vec![(t, req)],
                    cut_record: i % 5 == 2,
                });
                let resp = s.ack(&id);
                s.writes.push(Write {
                    from: Peer::Server,
                    parts: vec![(t + delay, resp)],
                    cut_record: false,
                });
                s.latencies.push(delay);
                i += 1;
            }
            t += 2_000 * US;
        }
        s
    }

    /// The script as plain FIX: each part one segment at its time.
    fn plain(&self, client_port: u16) -> Vec<TimedPacket> {
        let mut conn = tcp(client_port);
        let t0 = self.writes[0].parts[0].0;
        let mut packets: Vec<TimedPacket> = conn
            .handshake()
            .into_iter()
            .map(|p| at(t0 - 500 * US, p))
            .collect();
        for w in &self.writes {
            for (t, bytes) in &w.parts {
                packets.push(at(*t, send(&mut conn, w.from, bytes)));
            }
        }
        packets
    }

    /// The script over TLS: the handshake's flights before the first write, then each part
    /// one record, its flight one segment at the part's time. Returns the packets and the
    /// connection's client random.
    fn tls(&self, pair: &mut TlsPair, client_port: u16) -> (Vec<TimedPacket>, [u8; 32]) {
        let mut conn = tcp(client_port);
        let t0 = self.writes[0].parts[0].0;
        let mut packets: Vec<TimedPacket> = conn
            .handshake()
            .into_iter()
            .map(|p| at(t0 - 500 * US, p))
            .collect();
        let handshake = pair.wire.clone();
        for (k, (peer, bytes)) in handshake.iter().enumerate() {
            packets.push(at(
                t0 - 400 * US + k as u64 * 10 * US,
                send(&mut conn, *peer, bytes),
            ));
        }
        for w in &self.writes {
            for (t, bytes) in &w.parts {
                let flight = pair.send(w.from, bytes);
                let wire = pair.wire[flight].1.clone();
                if w.cut_record {
                    let (head, tail) = wire.split_at(wire.len() / 2);
                    packets.push(at(*t - 3 * US, send(&mut conn, w.from, head)));
                    packets.push(at(*t, send(&mut conn, w.from, tail)));
                } else {
                    packets.push(at(*t, send(&mut conn, w.from, &wire)));
                }
            }
        }
        let hello = &handshake[0].1;
        let random = hello[11..43].try_into().unwrap();
        (packets, random)
    }
}

fn tcp(client_port: u16) -> SyntheticConnection {
    SyntheticConnection::new(
        endpoint(false, 2, client_port),
        endpoint(false, 1, SERVER_PORT),
    )
}

fn send(
    conn: &mut SyntheticConnection,
    from: Peer,
    bytes: &[u8],
) -> fixscope_core::pcap_writer::TcpPacketSpec {
    match from {
        Peer::Client => conn.client_sends(bytes),
        Peer::Server => conn.server_sends(bytes),
    }
}

fn write_keys(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The key log lines of every connection but the one with `client_random`.
fn without(text: &str, client_random: &[u8; 32]) -> String {
    let hex: String = client_random.iter().map(|b| format!("{b:02x}")).collect();
    text.lines()
        .filter(|l| !l.contains(&hex))
        .map(|l| format!("{l}\n"))
        .collect()
}

const ORDERS: usize = 12;
const T0: u64 = 1_000_000_000;

/// The plaintext run of the script, and the TLS run's capture and key log, for `suite`.
struct Case {
    dir: tempfile::TempDir,
    script: FixScript,
    plain: std::path::PathBuf,
    tls_packets: Vec<TimedPacket>,
    keys: String,
    client_random: [u8; 32],
}

fn case(suite: TlsSuite) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let script = FixScript::build(ORDERS, T0);
    let plain = dir.path().join("plain.pcap");
    write_pcap(&plain, &script.plain(40_001));
    let ends = TlsEndpoints::new(suite);
    let mut pair = ends.connect();
    let (tls_packets, client_random) = script.tls(&mut pair, 40_001);
    Case {
        dir,
        script,
        plain,
        tls_packets,
        keys: ends.key_log.text(),
        client_random,
    }
}

impl Case {
    fn tls_path(&self, name: &str, packets: &[TimedPacket]) -> std::path::PathBuf {
        let path = self.dir.path().join(name);
        write_pcap(&path, packets);
        path
    }

    fn keys_file(&self, name: &str, text: &str) -> String {
        write_keys(self.dir.path(), name, text)
    }
}

#[test]
fn every_suite_gives_the_plaintext_latencies_on_every_plan() {
    for suite in TlsSuite::ALL {
        let c = case(suite);
        let (_, plain) = analyse(&[&c.plain], &[]);
        assert_stage(&plain, "first_response", &c.script.latencies);
        let tls = c.tls_path("tls.pcap", &c.tls_packets);
        let keys = c.keys_file("keys.log", &c.keys);
        let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
        // The generator's truth, and the plaintext run's figures, exactly.
        assert_stage(&summary, "first_response", &c.script.latencies);
        assert_eq!(summary["stages"], plain["stages"], "{suite:?}: stages");
        for name in ["requests", "matched", "responses", "messages"] {
            assert_eq!(
                counter(&summary, name),
                counter(&plain, name),
                "{suite:?}: {name}"
            );
        }
        assert_eq!(counter(&summary, "tls_connections"), 1);
        assert!(counter(&summary, "tls_records_decrypted") >= 2 * ORDERS as u64);
        assert_eq!(
            summary["tls_undecrypted"],
            serde_json::json!([]),
            "{suite:?}"
        );
        for name in [
            "tls_no_key",
            "tls_no_handshake",
            "tls_auth_failed",
            "tls_resyncs",
            "tls_unsupported",
        ] {
            assert_eq!(counter(&summary, name), 0, "{suite:?}: {name}");
        }
        // Without --tls-keylog the TLS counters are absent and nothing is measured.
        let (_, blind) = analyse(&[&tls], &[]);
        assert!(blind["counters"].get("tls_connections").is_none());
        assert_eq!(stage(&blind, "first_response")["count"], 0);
    }
}

#[test]
fn a_dropped_segment_loses_its_order_only_and_resyncs() {
    for suite in [TlsSuite::Tls13Aes128Gcm, TlsSuite::Tls12Aes256Gcm] {
        let c = case(suite);
        // Drop the client's segment of the first single order after the handshake (order
        // 0: its request). Its answer is unmatched; every other order is exact.
        let t_drop = T0 + 1_000 * US;
        let packets: Vec<TimedPacket> = c
            .tls_packets
            .iter()
            .filter(|p| p.ts_ns != t_drop)
            .cloned()
            .collect();
        assert_eq!(packets.len() + 1, c.tls_packets.len());
        let tls = c.tls_path("dropped.pcap", &packets);
        let keys = c.keys_file("keys.log", &c.keys);
        let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
        assert_stage(&summary, "first_response", &c.script.latencies[1..]);
        assert_eq!(counter(&summary, "tls_resyncs"), 1, "{suite:?}");
        assert_eq!(counter(&summary, "tls_auth_failed"), 0);
        assert_eq!(counter(&summary, "tcp_gaps"), 1);
    }
}

#[test]
fn a_capture_starting_mid_session_is_counted_not_measured() {
    let c = case(TlsSuite::Tls13Chacha20);
    // From the fourth order on: no TCP handshake, no TLS hellos.
    let from = T0 + 1_000 * US + 4 * 2_000 * US;
    let packets: Vec<TimedPacket> = c
        .tls_packets
        .iter()
        .filter(|p| p.ts_ns >= from)
        .cloned()
        .collect();
    let tls = c.tls_path("mid.pcap", &packets);
    let keys = c.keys_file("keys.log", &c.keys);
    let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
    assert_eq!(counter(&summary, "tls_connections"), 1);
    assert_eq!(counter(&summary, "tls_no_handshake"), 1);
    assert_eq!(stage(&summary, "first_response")["count"], 0);
    assert_eq!(counter(&summary, "tls_records_decrypted"), 0);
}

#[test]
fn a_key_log_missing_one_connection() {
    let c = case(TlsSuite::Tls12Chacha20);
    // A second connection on another client port, its own key lines dropped.
    let ends = TlsEndpoints::new(TlsSuite::Tls13Aes256Gcm);
    let mut pair = ends.connect();
    let other = FixScript::build(4, T0 + 100_000 * US);
    let (mut packets, random) = other.tls(&mut pair, 40_002);
    packets.extend(c.tls_packets.iter().cloned());
    packets.sort_by_key(|p| p.ts_ns);
    let tls = c.tls_path("two.pcap", &packets);
    let text = format!("{}{}", c.keys, without(&ends.key_log.text(), &random));
    assert_ne!(random, c.client_random);
    let keys = c.keys_file("keys.log", &text);
    let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
    assert_eq!(counter(&summary, "tls_connections"), 2);
    assert_eq!(counter(&summary, "tls_no_key"), 1);
    // The summary names the connection not decrypted, and only it: JSON and text.
    let named = summary["tls_undecrypted"]
        .as_array()
        .expect("tls_undecrypted");
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0]["connection"]
        .as_str()
        .unwrap()
        .contains(":40002 -> "));
    assert_eq!(named[0]["reason"], "no_key");
    for plan in [&["--threads", "4"][..], &[][..]] {
        let mut flags = vec!["--tls-keylog", keys.as_str()];
        flags.extend_from_slice(plan);
        let (_, other) = analyse(&[&tls], &flags);
        assert_eq!(
            other["tls_undecrypted"], summary["tls_undecrypted"],
            "{plan:?}"
        );
    }
    let out = support::fixscope(&[
        "pcap",
        tls.to_str().unwrap(),
        "-p",
        "9878",
        "--tls-keylog",
        &keys,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("TLS NOT DECRYPTED: ")
            && text.contains(":40002 -> ")
            && text.contains("(no_key)"),
        "{text}"
    );
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("TLS NOT DECRYPTED"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    // The connection with its key: exact; the other's orders are not measured.
    assert_stage(&summary, "first_response", &c.script.latencies);
}

#[test]
fn a_corrupted_record_is_dropped_and_counted() {
    let c = case(TlsSuite::Tls13Aes128Gcm);
    // Flip a ciphertext byte of the answer to the last order.
    let mut packets = c.tls_packets.clone();
    let last = packets
        .iter()
        .rposition(|p| !p.spec.payload.is_empty())
        .unwrap();
    let n = packets[last].spec.payload.len();
    packets[last].spec.payload[n - 20] ^= 0x40;
    let tls = c.tls_path("corrupt.pcap", &packets);
    let keys = c.keys_file("keys.log", &c.keys);
    let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
    assert_eq!(counter(&summary, "tls_auth_failed"), 1);
    let answered = &c.script.latencies[..ORDERS - 1];
    assert_stage(&summary, "first_response", answered);
}

#[test]
fn a_wrong_key_decrypts_nothing_and_measures_nothing() {
    let c = case(TlsSuite::Tls12Aes128Gcm);
    // Every secret with its last hex digit changed.
    let wrong: String = c
        .keys
        .lines()
        .map(|l| {
            let mut l = l.to_string();
            let last = l.pop().unwrap();
            l.push(if last == '0' { '1' } else { '0' });
            l + "\n"
        })
        .collect();
    let tls = c.tls_path("wrong.pcap", &c.tls_packets);
    let keys = c.keys_file("wrong.log", &wrong);
    let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
    assert!(counter(&summary, "tls_auth_failed") > 0);
    assert_eq!(counter(&summary, "tls_records_decrypted"), 0);
    assert_eq!(stage(&summary, "first_response")["count"], 0);
}

#[test]
fn pcapng_decryption_secrets_blocks_are_used_by_themselves() {
    use fixscope_core::decode::LinkType;
    use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, FrameOptions};
    let c = case(TlsSuite::Tls13Aes256Gcm);
    let path = c.dir.path().join("with-secrets.pcapng");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w =
        CaptureWriter::new(file, CaptureFormat::pcapng_nanos(), LinkType::Ethernet).unwrap();
    // A Decryption Secrets Block (type 0xA): secrets type TLSK, length, the key log.
    let mut body = fixscope_core::pcap::DSB_TLS_KEY_LOG.to_le_bytes().to_vec();
    body.extend_from_slice(&(c.keys.len() as u32).to_le_bytes());
    body.extend_from_slice(c.keys.as_bytes());
    w.write_custom_block(0xA, &body).unwrap();
    for p in &c.tls_packets {
        w.write_packet(
            p.ts_ns,
            &p.spec.frame(LinkType::Ethernet, &FrameOptions::default()),
        )
        .unwrap();
    }
    w.finish().unwrap();
    // No --tls-keylog: the capture's own secrets.
    let summary = every_plan_with_flags(&[&path], &[]);
    assert_stage(&summary, "first_response", &c.script.latencies);
    assert_eq!(counter(&summary, "tls_connections"), 1);
    assert_eq!(counter(&summary, "tls_no_key"), 0);
}

/// Each suite's version and IANA name (RFC 8446 §B.4, RFC 5289, RFC 7905): what the
/// session table must show for a session carried over it.
fn iana(suite: TlsSuite) -> (&'static str, &'static str) {
    match suite {
        TlsSuite::Tls13Aes128Gcm => ("TLS1.3", "TLS_AES_128_GCM_SHA256"),
        TlsSuite::Tls13Aes256Gcm => ("TLS1.3", "TLS_AES_256_GCM_SHA384"),
        TlsSuite::Tls13Chacha20 => ("TLS1.3", "TLS_CHACHA20_POLY1305_SHA256"),
        TlsSuite::Tls12Aes128Gcm => ("TLS1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        TlsSuite::Tls12Aes256Gcm => ("TLS1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        TlsSuite::Tls12Chacha20 => ("TLS1.2", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    }
}

const PLANS: [&[&str]; 4] = [
    &["--threads", "1"],
    &[],
    &["--threads", "2"],
    &["--threads", "4"],
];

#[test]
fn the_session_table_shows_each_session_s_tls_version_and_suite_on_every_plan() {
    for suite in TlsSuite::ALL {
        let c = case(suite);
        // The TLS session (client port 40001) beside the same script in the clear (40003),
        // another session (its own CompID).
        let mut packets = c.tls_packets.clone();
        packets.extend(FixScript::build_as("PLAIN", ORDERS, T0).plain(40_003));
        packets.sort_by_key(|p| p.ts_ns);
        let both = c.tls_path("both.pcap", &packets);
        let keys = c.keys_file("keys.log", &c.keys);
        let (version, name) = iana(suite);
        for plan in PLANS {
            let mut flags = vec!["--tls-keylog", keys.as_str()];
            flags.extend_from_slice(plan);
            let (_, summary) = analyse(&[&both], &flags);
            let sessions = summary["sessions"].as_array().expect("sessions");
            assert_eq!(sessions.len(), 2, "{suite:?} {plan:?}");
            for s in sessions {
                let client = s["client"].as_str().unwrap();
                if client.ends_with(":40001") {
                    assert_eq!(s["tls_version"], version, "{suite:?} {plan:?}");
                    assert_eq!(s["tls_cipher_suite"], name, "{suite:?} {plan:?}");
                } else {
                    assert!(client.ends_with(":40003"), "{client}");
                    // Plain FIX: the object as it always was.
                    assert!(s.get("tls_version").is_none(), "{suite:?} {plan:?}: {s}");
                    assert!(s.get("tls_cipher_suite").is_none());
                }
            }
        }
        // The text table: a `tls` column, the plain session's `-`; the HTML report's too.
        let html = c.dir.path().join("report.html");
        let out = support::fixscope(&[
            "pcap",
            both.to_str().unwrap(),
            "-p",
            "9878",
            "--tls-keylog",
            &keys,
            "--html",
            html.to_str().unwrap(),
        ]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let header = text
            .lines()
            .find(|l| l.contains("sender->target") && l.contains("client -> server"))
            .unwrap_or_else(|| panic!("no session table:\n{text}"));
        assert!(header.trim_end().ends_with(" tls"), "{header}");
        let row = |port: &str| {
            text.lines()
                .find(|l| l.contains(&format!(":{port} -> ")))
                .unwrap_or_else(|| panic!("no row of {port}:\n{text}"))
                .trim_end()
                .to_string()
        };
        assert!(
            row("40001").ends_with(&format!(" {version} {name}")),
            "{text}"
        );
        assert!(row("40003").ends_with(" -"), "{text}");
        let html = std::fs::read_to_string(&html).unwrap();
        assert!(html.contains(&format!("<td class=\"l\">{version} {name}</td>")));
    }
    // An HdrHistogram log keeps them: `fixscope report` shows the run's table.
    let c = case(TlsSuite::Tls12Chacha20);
    let tls = c.tls_path("tls.pcap", &c.tls_packets);
    let keys = c.keys_file("keys.log", &c.keys);
    let hlog = c.dir.path().join("run.hlog");
    let (_, summary) = analyse(
        &[&tls],
        &["--tls-keylog", &keys, "--hlog", hlog.to_str().unwrap()],
    );
    let out = support::fixscope(&["report", hlog.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let reported: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a summary")).unwrap();
    let (version, name) = iana(TlsSuite::Tls12Chacha20);
    assert_eq!(reported["sessions"][0]["tls_version"], version);
    assert_eq!(reported["sessions"][0]["tls_cipher_suite"], name);
    assert_eq!(
        reported["sessions"][0]["tls_cipher_suite"],
        summary["sessions"][0]["tls_cipher_suite"]
    );
    // A run without TLS sessions has no `tls` column.
    let c = case(TlsSuite::Tls13Aes128Gcm);
    let out = support::fixscope(&["pcap", c.plain.to_str().unwrap(), "-p", "9878"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.contains("sender->target") && l.contains("client -> server"))
        .unwrap_or_else(|| panic!("no session table:\n{text}"));
    assert!(!header.contains("tls"), "{header}");
}

/// Client ports of [`broken_three_ways`]'s connections.
const DECRYPTED: u16 = 40_001;
const NO_KEY: u16 = 40_002;
const NO_HANDSHAKE: u16 = 40_004;

/// One capture where every TLS counter but `tls_unsupported` (rustls has no CBC suite to
/// make one) is not zero: a decrypted connection with a dropped segment (a resync) and a
/// corrupted record (an auth failure), one whose key line is missing, and one captured
/// from its fourth order on (no handshake); and its key log.
fn broken_three_ways() -> (Case, std::path::PathBuf, String) {
    let c = case(TlsSuite::Tls13Aes128Gcm);
    let t_drop = T0 + 1_000 * US;
    let mut packets: Vec<TimedPacket> = c
        .tls_packets
        .iter()
        .filter(|p| p.ts_ns != t_drop)
        .cloned()
        .collect();
    let last = packets
        .iter()
        .rposition(|p| !p.spec.payload.is_empty())
        .unwrap();
    let n = packets[last].spec.payload.len();
    packets[last].spec.payload[n - 20] ^= 0x40;
    let no_key = TlsEndpoints::new(TlsSuite::Tls12Aes256Gcm);
    let (other, random) = FixScript::build(4, T0 + 100_000 * US).tls(&mut no_key.connect(), NO_KEY);
    packets.extend(other);
    let mid = TlsEndpoints::new(TlsSuite::Tls13Chacha20);
    let from = T0 + 200_000 * US + 1_000 * US + 4 * 2_000 * US;
    let (late, _) =
        FixScript::build(ORDERS, T0 + 200_000 * US).tls(&mut mid.connect(), NO_HANDSHAKE);
    packets.extend(late.into_iter().filter(|p| p.ts_ns >= from));
    packets.sort_by_key(|p| p.ts_ns);
    let path = c.tls_path("broken.pcap", &packets);
    let text = format!(
        "{}{}{}",
        c.keys,
        without(&no_key.key_log.text(), &random),
        mid.key_log.text()
    );
    let keys = c.keys_file("keys.log", &text);
    (c, path, keys)
}

/// The key log's counters (`--tls-uprobes` adds its own: `tls_uprobe_*`, zero here).
const TLS_COUNTERS: [&str; 7] = [
    "tls_connections",
    "tls_records_decrypted",
    "tls_no_key",
    "tls_no_handshake",
    "tls_unsupported",
    "tls_auth_failed",
    "tls_resyncs",
];

#[test]
fn every_output_carries_the_tls_counters() {
    let (c, tls, keys) = broken_three_ways();
    let prom = c.dir.path().join("fixscope.prom");
    let flags = ["--tls-keylog", keys.as_str()];
    let summary = every_plan_with_flags(&[&tls], &flags);
    // Every tls_* counter the JSON has (the key log's seven among them).
    let json: Vec<(String, u64)> = summary["counters"]
        .as_object()
        .expect("counters")
        .iter()
        .filter(|(name, _)| name.starts_with("tls_"))
        .map(|(name, v)| (name.clone(), v.as_u64().expect("a count")))
        .collect();
    for name in TLS_COUNTERS {
        assert!(json.iter().any(|(n, _)| n == name), "JSON lacks {name}");
    }
    assert_eq!(counter(&summary, "tls_connections"), 3);
    assert!(counter(&summary, "tls_records_decrypted") >= 2 * ORDERS as u64 - 2);
    for name in [
        "tls_no_key",
        "tls_no_handshake",
        "tls_auth_failed",
        "tls_resyncs",
    ] {
        assert_eq!(counter(&summary, name), 1, "{name}");
    }
    assert_eq!(counter(&summary, "tls_unsupported"), 0);
    // The text summary with every counter, and Prometheus (the textfile): the same values.
    let out = support::fixscope(&[
        "pcap",
        tls.to_str().unwrap(),
        "-p",
        "9878",
        "--tls-keylog",
        &keys,
        "--counters",
        "all",
        "--prometheus-textfile",
        prom.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let prom = std::fs::read_to_string(&prom).unwrap();
    for (name, value) in json {
        let line = format!("  {name:<30} {value}");
        assert!(
            text.lines().any(|l| l == line),
            "text lacks {line:?}:\n{text}"
        );
        let metric = format!("fixscope_{name}_total");
        assert!(
            prom.lines().any(|l| l == format!("{metric} {value}")),
            "prometheus lacks {metric} {value}:\n{prom}"
        );
        assert!(
            prom.contains(&format!("# TYPE {metric} counter\n")),
            "{metric}"
        );
        if !TLS_COUNTERS.contains(&name.as_str()) {
            continue;
        }
        let help = prom
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# HELP {metric} ")))
            .unwrap_or_else(|| panic!("no HELP for {metric}"));
        assert!(help.starts_with("--tls-keylog only"), "{metric}: {help}");
    }
}

#[test]
fn a_tls_connection_not_decrypted_is_an_alarm_in_every_output() {
    let (c, tls, keys) = broken_three_ways();
    let summary = every_plan_with_flags(&[&tls], &["--tls-keylog", &keys]);
    // JSON: each named with its reason, only those.
    let named: Vec<(String, String)> = summary["tls_undecrypted"]
        .as_array()
        .expect("tls_undecrypted")
        .iter()
        .map(|u| {
            let conn = u["connection"].as_str().unwrap();
            let port = conn
                .split(" -> ")
                .next()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap();
            (port.to_string(), u["reason"].as_str().unwrap().to_string())
        })
        .collect();
    let want = [
        (NO_KEY.to_string(), "no_key".to_string()),
        (NO_HANDSHAKE.to_string(), "no_handshake".to_string()),
    ];
    assert_eq!(named, want);
    let html = c.dir.path().join("report.html");
    let out = support::fixscope(&[
        "pcap",
        tls.to_str().unwrap(),
        "-p",
        "9878",
        "--tls-keylog",
        &keys,
        "--html",
        html.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // Text: a line per connection before the figures, and the alarms line.
    for (port, why) in &want {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("TLS NOT DECRYPTED: ")
                    && l.contains(&format!(":{port} -> "))
                    && l.contains(&format!("({why})")))
                .count(),
            1,
            "{text}"
        );
    }
    let lines = text
        .lines()
        .filter(|l| l.starts_with("TLS NOT DECRYPTED: "));
    assert_eq!(lines.clone().count(), 2, "{text}");
    assert!(
        !lines
            .clone()
            .any(|l| l.contains(&format!(":{DECRYPTED} -> "))),
        "{text}"
    );
    let alarms = text
        .lines()
        .skip_while(|l| !l.starts_with("alarms:"))
        .take_while(|l| !l.starts_with("notable:") && !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for alarm in ["tls_no_key 1", "tls_no_handshake 1", "tls_auth_failed 1"] {
        assert!(alarms.contains(alarm), "alarms lack {alarm}: {alarms}");
    }
    // HTML: the alarm rows marked.
    let html = std::fs::read_to_string(&html).unwrap();
    for name in ["tls_no_key", "tls_no_handshake", "tls_auth_failed"] {
        assert!(
            html.contains(&format!(
                "<tr class=\"warn\"><td class=\"l\"><code>{name}</code>"
            )),
            "{name}"
        );
    }
    assert!(!html.contains("<tr class=\"warn\"><td class=\"l\"><code>tls_resyncs</code>"));
}

/// The shipped form (#48): `make dist`'s static binary, in an empty root, decrypts every
/// suite as the dynamic build does — the same JSON, byte for byte. Run by `make test-dist`.
#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn the_static_binary_decrypts_every_suite_as_the_dynamic_build() {
    let test = "the_static_binary_decrypts_every_suite_as_the_dynamic_build";
    fixscope_testkit::require_root(test);
    let root = support_dist::EmptyRoot::new(test);
    for suite in TlsSuite::ALL {
        let c = case(suite);
        let tls = c.tls_path("tls.pcap", &c.tls_packets);
        root.put("/tmp/tls.pcap", &std::fs::read(&tls).unwrap());
        root.put("/tmp/keys.log", c.keys.as_bytes());
        // The same relative paths on both sides, so the JSON names the same files.
        let args = [
            "pcap",
            "tmp/tls.pcap",
            "-p",
            "9878",
            "--json",
            "--tls-keylog",
            "tmp/keys.log",
        ];
        let run = |mut cmd: std::process::Command| {
            let out = cmd.output().expect("run fixscope");
            assert!(
                out.status.success(),
                "{suite:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let inside = run(root.command(&args));
        let dynamic = run({
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fixscope"));
            c.current_dir(root.path()).args(args);
            c
        });
        let summary = inside
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["type"] == "summary")
            .expect("a summary");
        assert_eq!(counter(&summary, "matched"), ORDERS as u64, "{suite:?}");
        assert_eq!(counter(&summary, "tls_no_key"), 0, "{suite:?}");
        assert_eq!(
            inside, dynamic,
            "{suite:?}: the static binary's JSON differs"
        );
    }
}
