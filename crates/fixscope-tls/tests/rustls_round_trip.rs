//! rustls in-process, every suite: what the TLS layer decrypts from the wire is exactly what
//! each end wrote, and each message is timed by the segment that completed its record —
//! however the flights are cut into segments; with KeyUpdate, resumption and
//! HelloRetryRequest. The truth is rustls' (what was written, in which flight), never ours.

use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};
use fixscope_tls::{KeyLog, Plain, Side, TlsConnection, TlsCounters};
use proptest::prelude::*;

/// One end's plaintext as decrypted: every byte with its time.
#[derive(Default)]
struct Out {
    bytes: Vec<u8>,
    ts: Vec<u64>,
    gaps: usize,
}

/// What one end sent: each message and the flight that carried it.
struct Sent {
    messages: Vec<(Vec<u8>, usize)>,
}

/// Feeds the wire to a `TlsConnection`, each flight cut at `cuts(flight_len)` into segments
/// timed `flight * 1000 + k`.
fn decrypt(
    wire: &[(Peer, Vec<u8>)],
    keys: &KeyLog,
    cuts: &dyn Fn(usize, usize) -> Vec<usize>,
) -> (Out, Out, TlsCounters, TlsConnection) {
    let mut conn = TlsConnection::new();
    let mut counters = TlsCounters::default();
    let (mut client, mut server) = (Out::default(), Out::default());
    for (flight, (peer, bytes)) in wire.iter().enumerate() {
        let side = match peer {
            Peer::Client => Side::Client,
            Peer::Server => Side::Server,
        };
        let mut points = cuts(flight, bytes.len());
        points.push(0);
        points.push(bytes.len());
        points.sort();
        points.dedup();
        for (k, w) in points.windows(2).enumerate() {
            let ts = (flight * 1000 + k) as u64;
            conn.push(
                side,
                &bytes[w[0]..w[1]],
                ts,
                keys,
                &mut counters,
                &mut |s, p| {
                    let out = match s {
                        Side::Client => &mut client,
                        Side::Server => &mut server,
                    };
                    match p {
                        Plain::Data { bytes, ts_ns } => {
                            out.bytes.extend_from_slice(bytes);
                            out.ts.extend(std::iter::repeat_n(ts_ns, bytes.len()));
                        }
                        Plain::Gap => out.gaps += 1,
                    }
                },
            );
        }
    }
    (client, server, counters, conn)
}

/// The time the last segment of `flight` has when cut at `cuts`.
fn last_segment_ts(flight: usize, len: usize, cuts: &dyn Fn(usize, usize) -> Vec<usize>) -> u64 {
    let mut points = cuts(flight, len);
    points.push(0);
    points.push(len);
    points.sort();
    points.dedup();
    (flight * 1000 + points.len() - 2) as u64
}

fn check(
    out: &Out,
    sent: &Sent,
    wire: &[(Peer, Vec<u8>)],
    cuts: &dyn Fn(usize, usize) -> Vec<usize>,
) {
    let all: Vec<u8> = sent.messages.iter().flat_map(|m| m.0.clone()).collect();
    assert_eq!(out.bytes, all, "plaintext");
    assert_eq!(out.gaps, 0);
    let mut end = 0;
    for (m, flight) in &sent.messages {
        end += m.len();
        // Each message is one record, the last of its flight: completed by the flight's
        // last segment.
        let expect = last_segment_ts(*flight, wire[*flight].1.len(), cuts);
        assert_eq!(
            out.ts[end - 1],
            expect,
            "time of the message ending at {end}"
        );
    }
}

/// A FIX-like exchange: `n` requests and answers; a KeyUpdate from each side midway
/// (TLS 1.3).
fn exchange(pair: &mut TlsPair, n: usize, key_update: bool) -> (Sent, Sent) {
    let (mut c, mut s) = (Sent { messages: vec![] }, Sent { messages: vec![] });
    for i in 0..n {
        if key_update && i == n / 2 {
            pair.key_update(Peer::Client);
        }
        let req = format!("8=FIX.4.4\x019=5\x0135=D\x0111=ORD{i}\x0110=000\x01").into_bytes();
        let flight = pair.send(Peer::Client, &req);
        c.messages.push((req, flight));
        if key_update && i == n / 2 + 1 {
            pair.key_update(Peer::Server);
        }
        let resp = format!(
            "8=FIX.4.4\x019=5\x0135=8\x0111=ORD{i}\x01{}\x0110=000\x01",
            "x".repeat(i * 37)
        )
        .into_bytes();
        let flight = pair.send(Peer::Server, &resp);
        s.messages.push((resp, flight));
    }
    (c, s)
}

fn whole(_: usize, _: usize) -> Vec<usize> {
    vec![]
}

#[test]
fn every_suite_decrypts_with_keyupdate_and_resumption() {
    for suite in TlsSuite::ALL {
        let ends = TlsEndpoints::new(suite);
        for round in 0..2 {
            let mut pair = ends.connect();
            if round == 1 {
                assert_eq!(
                    pair.client.handshake_kind(),
                    Some(rustls::HandshakeKind::Resumed),
                    "{suite:?}: the second connection resumes"
                );
            }
            let (c, s) = exchange(&mut pair, 12, suite.is_tls13());
            let mut keys = KeyLog::new();
            keys.add_text(ends.key_log.text().as_bytes());
            let (client, server, counters, conn) = decrypt(&pair.wire, &keys, &whole);
            assert_eq!(conn.undecryptable(), None, "{suite:?}");
            check(&client, &c, &pair.wire, &whole);
            check(&server, &s, &pair.wire, &whole);
            assert_eq!(counters.tls_connections, 1);
            assert_eq!(
                counters.tls_auth_failed + counters.tls_no_key + counters.tls_resyncs,
                0
            );
            assert!(
                counters.tls_records_decrypted >= 24,
                "{suite:?}: {counters:?}"
            );
        }
    }
}

#[test]
fn hello_retry_request_is_followed() {
    let ends = TlsEndpoints::with_hello_retry(TlsSuite::Tls13Aes128Gcm);
    let mut pair = ends.connect();
    assert_eq!(
        pair.client.handshake_kind(),
        Some(rustls::HandshakeKind::FullWithHelloRetryRequest)
    );
    let (c, s) = exchange(&mut pair, 4, false);
    let mut keys = KeyLog::new();
    keys.add_text(ends.key_log.text().as_bytes());
    let (client, server, _, _) = decrypt(&pair.wire, &keys, &whole);
    check(&client, &c, &pair.wire, &whole);
    check(&server, &s, &pair.wire, &whole);
}

#[test]
fn a_connection_without_its_key_is_counted_not_decrypted() {
    let ends = TlsEndpoints::new(TlsSuite::Tls12Aes128Gcm);
    let mut pair = ends.connect();
    exchange(&mut pair, 3, false);
    let (client, server, counters, conn) = decrypt(&pair.wire, &KeyLog::new(), &whole);
    assert!(client.bytes.is_empty() && server.bytes.is_empty());
    assert_eq!(
        conn.undecryptable(),
        Some(fixscope_tls::Undecryptable::NoKey)
    );
    assert_eq!((counters.tls_connections, counters.tls_no_key), (1, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Flights cut into segments anywhere: the same plaintext, each message timed by the
    /// segment that completed its record.
    #[test]
    fn any_segmentation_gives_the_same_plaintext_and_times(
        suite in prop::sample::select(TlsSuite::ALL.to_vec()),
        seed in any::<u64>(),
        max_segment in 1usize..200,
    ) {
        let ends = TlsEndpoints::new(suite);
        let mut pair = ends.connect();
        let (c, s) = exchange(&mut pair, 5, suite.is_tls13());
        let mut keys = KeyLog::new();
        keys.add_text(ends.key_log.text().as_bytes());
        let cuts = move |flight: usize, len: usize| -> Vec<usize> {
            // A deterministic cut of each flight from the seed.
            let mut x = seed ^ (flight as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut at = 0;
            let mut points = vec![];
            while at < len {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                at += 1 + (x >> 33) as usize % max_segment;
                points.push(at.min(len));
            }
            points
        };
        let (client, server, counters, _) = decrypt(&pair.wire, &keys, &cuts);
        check(&client, &c, &pair.wire, &cuts);
        check(&server, &s, &pair.wire, &cuts);
        prop_assert_eq!(counters.tls_auth_failed, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Real sessions broken anywhere — bytes flipped, a flight dropped: no panic, and what
    /// comes out is never more than was sent, nor anything the sender did not send (every
    /// record out verified its tag).
    #[test]
    fn broken_sessions_never_give_wrong_plaintext(
        suite in prop::sample::select(TlsSuite::ALL.to_vec()),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        drop_flight in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let ends = TlsEndpoints::new(suite);
        let mut pair = ends.connect();
        let (c, s) = exchange(&mut pair, 6, suite.is_tls13());
        let mut keys = KeyLog::new();
        keys.add_text(ends.key_log.text().as_bytes());
        let mut wire = pair.wire.clone();
        let total: usize = wire.iter().map(|w| w.1.len()).sum();
        for (at, x) in flips {
            let mut at = at.index(total);
            for w in wire.iter_mut() {
                if at < w.1.len() {
                    w.1[at] ^= x;
                    break;
                }
                at -= w.1.len();
            }
        }
        if let Some(i) = drop_flight {
            let i = i.index(wire.len());
            wire.remove(i);
        }
        let (client, server, _, _) = decrypt(&wire, &keys, &whole);
        // A first byte flipped out of TLS's record types makes a connection not taken for
        // TLS at first: its bytes pass through to the FIX framer as they are (which finds
        // no `8=FIX` in them: skipped bytes, never a message). Such a piece is the side's
        // own wire bytes, not plaintext; anything else must be plaintext the sender sent.
        let raw = |peer: Peer| -> Vec<u8> {
            wire.iter().filter(|w| w.0 == peer).flat_map(|w| w.1.clone()).collect()
        };
        for (out, sent, peer) in [(client, c, Peer::Client), (server, s, Peer::Server)] {
            let all: Vec<u8> = sent.messages.iter().flat_map(|m| m.0.clone()).collect();
            let passed_through = raw(peer);
            if !out.bytes.is_empty() && passed_through.windows(out.bytes.len()).any(|w| w == &out.bytes[..]) {
                continue;
            }
            prop_assert!(out.bytes.len() <= all.len());
            // Every piece out is something the sender sent (a record out verified its tag;
            // a piece may begin mid-message after a dropped record).
            let text = String::from_utf8_lossy(&out.bytes).to_string();
            for piece in text.split("8=FIX.4.4").filter(|p| !p.is_empty()) {
                prop_assert!(
                    all.windows(piece.len()).any(|w| w == piece.as_bytes()),
                    "plaintext never sent: {piece:?}"
                );
            }
        }
    }
}
