//! A key written after the handshake (live: the engine appends its line while the capture
//! already saw the hellos): the connection is held and, once the line is read, decrypted
//! exactly as if the key had been there from the start — the same plaintext, each chunk at
//! its own record's time, both directions in the order their records completed. A key that
//! never comes is `no_key` once the bound passes, never a guess.

use std::io::Write;
use std::path::{Path, PathBuf};

use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};
use fixscope_tls::connection::{KEY_WAIT_NS, MAX_HELD_AWAITING_KEY};
use fixscope_tls::{KeyLog, KeySource, KeyStore, Plain, Side, TlsConnection, TlsCounters};

/// Everything that came out, in order: (side, plaintext byte count, time) or a gap.
type Outputs = Vec<(Side, usize, u64)>;

/// Feeds each flight as one segment at `ts(flight)`; `before(flight)` runs first.
fn feed<K: KeySource>(
    wire: &[(Peer, Vec<u8>)],
    keys: &K,
    ts: impl Fn(usize) -> u64,
    mut before: impl FnMut(usize),
) -> (Outputs, TlsCounters, TlsConnection) {
    let mut conn = TlsConnection::new();
    let mut counters = TlsCounters::default();
    let mut outputs = Outputs::new();
    for (flight, (peer, bytes)) in wire.iter().enumerate() {
        before(flight);
        let side = match peer {
            Peer::Client => Side::Client,
            Peer::Server => Side::Server,
        };
        conn.push(
            side,
            bytes,
            ts(flight),
            keys,
            &mut counters,
            &mut |s, p| match p {
                Plain::Data { bytes, ts_ns } => outputs.push((s, bytes.len(), ts_ns)),
                Plain::Gap => outputs.push((s, usize::MAX, 0)),
            },
        );
    }
    (outputs, counters, conn)
}

fn exchange(pair: &mut TlsPair, n: usize) {
    for i in 0..n {
        pair.send(
            Peer::Client,
            format!("8=FIX.4.4\x0135=D\x0111=O{i}\x01").as_bytes(),
        );
        pair.send(
            Peer::Server,
            format!("8=FIX.4.4\x0135=8\x0111=O{i}\x01").as_bytes(),
        );
    }
}

fn temp_log(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fixscope-key-wait-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, "").unwrap();
    path
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    // The store re-reads its files at most once a millisecond.
    std::thread::sleep(std::time::Duration::from_millis(3));
}

#[test]
fn a_key_logged_after_the_hellos_decrypts_everything_held_at_its_own_times() {
    for suite in [TlsSuite::Tls13Aes128Gcm, TlsSuite::Tls12Aes256Gcm] {
        let ends = TlsEndpoints::new(suite);
        let mut pair = ends.connect();
        exchange(&mut pair, 6);
        let lines = ends.key_log.text();
        let ts = |flight: usize| 1_000 + flight as u64 * 1_000;

        // The truth: the key there from the start.
        let mut known = KeyLog::new();
        known.add_text(lines.as_bytes());
        let (expected, counters, _) = feed(&pair.wire, &known, ts, |_| {});
        assert_eq!(counters.tls_no_key, 0);
        assert!(expected.len() >= 12, "{suite:?}: {expected:?}");

        // Live: the line is written only before the last flight: orders and answers of both
        // directions were held.
        let path = temp_log(&format!("{suite:?}.log"));
        let store = KeyStore::follow(&[&path]).unwrap();
        let last = pair.wire.len() - 1;
        let (got, counters, conn) = feed(&pair.wire, &store, ts, |flight| {
            if flight == last {
                append(&path, &lines);
            }
        });
        assert_eq!(conn.undecryptable(), None, "{suite:?}");
        assert!(!conn.is_awaiting_key());
        assert_eq!(
            got, expected,
            "{suite:?}: the same plaintext, order and times"
        );
        assert_eq!((counters.tls_connections, counters.tls_no_key), (1, 0));
    }
}

#[test]
fn a_key_that_never_comes_is_no_key_once_the_wait_is_over() {
    let ends = TlsEndpoints::new(TlsSuite::Tls13Aes256Gcm);
    let mut pair = ends.connect();
    exchange(&mut pair, 3);
    let path = temp_log("never.log");
    let store = KeyStore::follow(&[&path]).unwrap();
    let n = pair.wire.len();

    // Within the wait: held, nothing counted, nothing out.
    let (got, counters, conn) = feed(&pair.wire, &store, |f| f as u64 * 1_000, |_| {});
    assert!(conn.is_awaiting_key());
    assert!(got.is_empty());
    assert_eq!(counters.tls_no_key, 0);

    // The last flight comes after the wait: no_key.
    let late = |f: usize| {
        if f + 1 == n {
            2 * KEY_WAIT_NS
        } else {
            f as u64
        }
    };
    let (got, counters, conn) = feed(&pair.wire, &store, late, |_| {});
    assert_eq!(
        conn.undecryptable(),
        Some(fixscope_tls::Undecryptable::NoKey)
    );
    assert!(got.is_empty());
    assert_eq!((counters.tls_connections, counters.tls_no_key), (1, 1));

    // The connection ends while held: a last look, then no_key.
    let (_, mut counters, mut conn) = feed(&pair.wire, &store, |f| f as u64, |_| {});
    conn.settle(&store, &mut counters, &mut |_, _| {
        panic!("nothing to decrypt")
    });
    assert_eq!(counters.tls_no_key, 1);
}

#[test]
fn held_bytes_are_bounded() {
    let ends = TlsEndpoints::new(TlsSuite::Tls13Chacha20);
    let mut pair = ends.connect();
    let big = vec![b'x'; 16 << 10];
    for _ in 0..(MAX_HELD_AWAITING_KEY / big.len() + 2) {
        pair.send(Peer::Client, &big);
    }
    let path = temp_log("bounded.log");
    let store = KeyStore::follow(&[&path]).unwrap();
    let (got, counters, conn) = feed(&pair.wire, &store, |f| f as u64, |_| {});
    assert_eq!(
        conn.undecryptable(),
        Some(fixscope_tls::Undecryptable::NoKey)
    );
    assert!(got.is_empty());
    assert_eq!(counters.tls_no_key, 1);
}

#[test]
fn offline_a_missing_key_is_no_key_at_once() {
    let ends = TlsEndpoints::new(TlsSuite::Tls13Aes128Gcm);
    let mut pair = ends.connect();
    exchange(&mut pair, 1);
    let store = KeyStore::from(KeyLog::new());
    let (_, counters, conn) = feed(&pair.wire, &store, |f| f as u64, |_| {});
    assert_eq!(
        conn.undecryptable(),
        Some(fixscope_tls::Undecryptable::NoKey)
    );
    assert_eq!(counters.tls_no_key, 1);
}
