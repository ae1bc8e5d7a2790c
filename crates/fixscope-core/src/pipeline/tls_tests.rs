//! TLS through a whole pipeline (`--tls-keylog`, #49), from rustls flights as segments:
//! live, a connection held for its key ends its wait on the pipeline's clock — a quiet
//! peer's connection is `no_key` once the clock passes the wait, by other traffic or by the
//! live clock's tick alone — and a key written meanwhile decrypts what was held at its
//! records' own times; the session table shows the version and suite of a decrypted session.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};

use crate::fix::encode::test_message as fix;
use crate::report::{IntervalReport, Reporter, SummaryReport};
use crate::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};
use crate::tls::{KeyStore, UndecryptedConnections, KEY_WAIT_NS};
use crate::{Pipeline, PipelineConfig};

const MS: u64 = 1_000_000;
const T0: u64 = 1_000 * MS;

/// What the summary said.
#[derive(Default)]
struct Summary {
    first_response: Vec<u64>,
    tls: Vec<Option<(&'static str, &'static str)>>,
    undecrypted: Option<Vec<(String, &'static str)>>,
}

#[derive(Default)]
struct Collect(Option<Summary>);

impl Reporter for Collect {
    fn interval(&mut self, _: &IntervalReport<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, r: &SummaryReport<'_>) -> std::io::Result<()> {
        let d = r.stages[0].dist;
        self.0 = Some(Summary {
            first_response: vec![d.count, d.min_ns, d.max_ns],
            tls: r
                .sessions
                .iter()
                .map(|s| s.tls.map(|t| (t.version, t.cipher_suite)))
                .collect(),
            undecrypted: r.tls_undecrypted.clone(),
        });
        Ok(())
    }
}

fn ep(port: u16) -> Endpoint {
    Endpoint {
        addr: std::net::IpAddr::from([10, 0, 0, 1]),
        port,
    }
}

/// One TCP connection's sequence numbers, flights in, segments out.
struct Tcp {
    client: Endpoint,
    seq: [u32; 2],
}

impl Tcp {
    fn new(client_port: u16) -> Self {
        Tcp {
            client: ep(client_port),
            seq: [1, 1],
        }
    }

    fn seg<'a>(&mut self, direction: Direction, payload: &'a [u8], ts_ns: u64) -> Segment<'a> {
        let (flow, seq) = match direction {
            Direction::Request => (
                FlowKey {
                    src: self.client,
                    dst: ep(9878),
                },
                &mut self.seq[0],
            ),
            Direction::Response => (
                FlowKey {
                    src: ep(9878),
                    dst: self.client,
                },
                &mut self.seq[1],
            ),
        };
        let s = Segment {
            ts_ns,
            flow,
            direction,
            seq: *seq,
            ack: 0,
            flags: TcpFlags(TcpFlags::PSH),
            payload,
            missing_tail: 0,
        };
        *seq = seq.wrapping_add(payload.len() as u32);
        s
    }
}

fn direction(peer: Peer) -> Direction {
    match peer {
        Peer::Client => Direction::Request,
        Peer::Server => Direction::Response,
    }
}

/// A logon both ways, then `orders` orders each answered `answer_ns` later: the flights
/// after the handshake.
fn fix_exchange(pair: &mut TlsPair, orders: usize) -> usize {
    let handshake = pair.wire.len();
    pair.send(
        Peer::Client,
        &fix(&[(35, "A"), (49, "CLIENT"), (56, "VENUE"), (34, "1")]),
    );
    pair.send(
        Peer::Server,
        &fix(&[(35, "A"), (49, "VENUE"), (56, "CLIENT"), (34, "1")]),
    );
    for i in 0..orders {
        let id = format!("O{i}");
        let seq = (i + 2).to_string();
        pair.send(
            Peer::Client,
            &fix(&[
                (35, "D"),
                (49, "CLIENT"),
                (56, "VENUE"),
                (34, &seq),
                (11, &id),
            ]),
        );
        pair.send(
            Peer::Server,
            &fix(&[
                (35, "8"),
                (49, "VENUE"),
                (56, "CLIENT"),
                (34, &seq),
                (11, &id),
                (150, "0"),
                (39, "0"),
            ]),
        );
    }
    handshake
}

/// Flight `i`'s time: 1 ms apart, an answer `ANSWER_NS` after its order.
const ANSWER_NS: u64 = 250_000;
fn flight_ts(i: usize) -> u64 {
    T0 + (i as u64 / 2) * MS + (i as u64 % 2) * ANSWER_NS
}

struct Live {
    pipeline: Pipeline,
    undecrypted: Arc<UndecryptedConnections>,
    keys: PathBuf,
    _dir: tempfile::TempDir,
}

/// A pipeline as `live --tls-keylog` runs one: the key log (empty for now) followed.
fn live() -> Live {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.log");
    std::fs::write(&keys, "").unwrap();
    let undecrypted = Arc::new(UndecryptedConnections::default());
    let config = PipelineConfig {
        tls_keys: Some(Arc::new(KeyStore::follow(&[&keys]).unwrap())),
        tls_undecrypted: Some(undecrypted.clone()),
        ..PipelineConfig::default()
    };
    Live {
        pipeline: Pipeline::new(config),
        undecrypted,
        keys,
        _dir: dir,
    }
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    // The store re-reads a followed file at most once a millisecond.
    std::thread::sleep(std::time::Duration::from_millis(3));
}

fn feed(p: &mut Pipeline, tcp: &mut Tcp, wire: &[(Peer, Vec<u8>)], ts: impl Fn(usize) -> u64) {
    for (i, (peer, bytes)) in wire.iter().enumerate() {
        p.on_segment(&tcp.seg(direction(*peer), bytes, ts(i)));
    }
}

fn tls(p: &Pipeline) -> crate::counters::TlsCounters {
    p.counters().tls.expect("--tls-keylog: TLS counters")
}

fn finish(mut p: Pipeline) -> Summary {
    let mut out = Collect::default();
    p.finish(&[], &mut out).unwrap();
    out.0.expect("a summary")
}

#[test]
fn a_held_connection_whose_peers_went_quiet_is_no_key_on_the_clock_tick() {
    let ends = TlsEndpoints::new(TlsSuite::Tls13Aes128Gcm);
    let mut pair = ends.connect();
    fix_exchange(&mut pair, 3);
    let mut l = live();
    let mut tcp = Tcp::new(40_001);
    // Every flight at T0 + its index µs: the ServerHello is flight 1.
    let ts = |i: usize| T0 + i as u64 * 1_000;
    feed(&mut l.pipeline, &mut tcp, &pair.wire, ts);
    let hello_ns = ts(1);
    assert_eq!(
        (
            tls(&l.pipeline).tls_connections,
            tls(&l.pipeline).tls_no_key
        ),
        (1, 0)
    );

    // The live clock ticks on a quiet wire: still waiting at the wait's end…
    l.pipeline
        .advance_to(hello_ns + KEY_WAIT_NS, &[], &mut Collect::default())
        .unwrap();
    assert_eq!(tls(&l.pipeline).tls_no_key, 0, "within the wait");
    assert!(l.undecrypted.sorted().is_empty());
    // …and no_key once past it, with no segment of the connection.
    l.pipeline
        .advance_to(hello_ns + KEY_WAIT_NS + 1, &[], &mut Collect::default())
        .unwrap();
    assert_eq!(tls(&l.pipeline).tls_no_key, 1, "past the wait, on the tick");
    let named = l.undecrypted.sorted();
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].0.to_string().contains(":40001"), "{named:?}");
    assert_eq!(named[0].1.name(), "no_key");
    // A key written now changes nothing: the connection was given up.
    append(&l.keys, &ends.key_log.text());
    let s = finish(l.pipeline);
    assert_eq!(s.first_response[0], 0, "nothing measured");
    assert_eq!(s.undecrypted.unwrap().len(), 1);
}

#[test]
fn other_traffic_moving_the_clock_ends_a_quiet_connection_s_wait() {
    let ends = TlsEndpoints::new(TlsSuite::Tls12Aes256Gcm);
    let mut pair = ends.connect();
    fix_exchange(&mut pair, 2);
    let mut l = live();
    let mut quiet = Tcp::new(40_001);
    feed(&mut l.pipeline, &mut quiet, &pair.wire, |i| {
        T0 + i as u64 * 1_000
    });
    // Plain FIX on another connection, each heartbeat 1 s after the last.
    let mut plain = Tcp::new(40_002);
    let heartbeat = fix(&[(35, "0"), (49, "C2"), (56, "VENUE"), (34, "1")]);
    let mut no_key_at = None;
    for s in 1..=7u64 {
        l.pipeline
            .on_segment(&plain.seg(Direction::Request, &heartbeat, T0 + s * 1_000 * MS));
        if no_key_at.is_none() && tls(&l.pipeline).tls_no_key == 1 {
            no_key_at = Some(s);
        }
    }
    // The ServerHello at T0 + 1 µs: waiting at 5 s, given up at the first segment past
    // 5 s + 1 µs — the heartbeat at 6 s.
    assert_eq!(no_key_at, Some(6));
    assert_eq!(l.undecrypted.sorted().len(), 1);
}

#[test]
fn a_key_written_while_the_peers_are_quiet_decrypts_at_the_records_own_times() {
    for suite in [TlsSuite::Tls13Chacha20, TlsSuite::Tls12Aes128Gcm] {
        let ends = TlsEndpoints::new(suite);
        let mut pair = ends.connect();
        let orders = 4;
        fix_exchange(&mut pair, orders);
        let mut l = live();
        let mut tcp = Tcp::new(40_001);
        feed(&mut l.pipeline, &mut tcp, &pair.wire, flight_ts);
        assert!(
            tls(&l.pipeline).tls_records_decrypted == 0,
            "{suite:?}: held"
        );
        // The engine writes its key line late; nothing more of the connection comes.
        append(&l.keys, &ends.key_log.text());
        let last = flight_ts(pair.wire.len() - 1);
        l.pipeline
            .advance_to(last + KEY_WAIT_NS, &[], &mut Collect::default())
            .unwrap();
        let c = tls(&l.pipeline);
        assert_eq!(c.tls_no_key, 0, "{suite:?}");
        assert!(
            c.tls_records_decrypted as usize >= 2 * orders,
            "{suite:?}: {c:?}"
        );
        let s = finish(l.pipeline);
        // Every order, at its own records' times: the answer 250 µs after each.
        assert_eq!(
            s.first_response,
            vec![orders as u64, ANSWER_NS, ANSWER_NS],
            "{suite:?}"
        );
        assert_eq!(s.undecrypted, Some(Vec::new()));
        let want = match suite {
            TlsSuite::Tls13Chacha20 => ("TLS1.3", "TLS_CHACHA20_POLY1305_SHA256"),
            _ => ("TLS1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        };
        assert_eq!(s.tls, vec![Some(want)], "{suite:?}: the session table");
    }
}
