//! Writes a realistic FIX order-flow capture for benchmarks (BENCHMARKS.md,
//! scripts/bench-pcap-vs-tshark.sh).
//!
//! ```text
//! cargo run --release -p fixscope-core --example gen_capture -- OUT.pcap --orders N \
//!     [--sessions S] [--port P] [--rate ORDERS_PER_S] [--seed X] [--micros] [--pcapng]
//! ```
//!
//! What the capture holds (Ethernet / IPv4 / TCP, nanosecond pcap unless `--micros` or
//! `--pcapng`):
//! - `S` sessions (default 8): client 10.1.0.(1+i):(40000+i) -> server 10.2.0.1:P (default
//!   9878), each with a three-way handshake, a Logon exchange, and FIN at the end;
//! - `N` orders in total (35=D, 200–300 bytes each, padded with 58=Text), Poisson arrivals
//!   at `--rate` (default 50 000/s over all sessions) spread randomly over the sessions;
//! - per order an ack ExecutionReport (35=8 150=0 39=0) 15–80 µs later and a fill
//!   (35=8 150=F 39=2) 20–400 µs after the ack;
//! - some segments carry two messages: ~5% of orders are sent together with the next order
//!   of the same session in one segment, ~10% of fills leave in the same segment as their ack;
//! - the client ACKs every second server data segment with a pure ACK a few µs later;
//! - a Heartbeat (35=0) per session and direction every 30 s of capture time.
//!
//! Payload bytes are ~3/4 of the file; at the default mix one order costs ~930 bytes of
//! capture, so `--orders 540000` gives ~500 MB. The last line on stdout summarises what was
//! written (packets, FIX messages, bytes) for scripts to parse.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use fixscope_core::decode::LinkType;
use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
use fixscope_core::Endpoint;

const BEGIN: &[u8] = b"FIX.4.4";
/// 2024-06-10 09:30:00 UTC, a Monday at the open.
const START_NS: u64 = 1_718_011_800_000_000_000;
const HEARTBEAT_NS: u64 = 30_000_000_000;

struct Args {
    out: PathBuf,
    orders: u64,
    sessions: usize,
    port: u16,
    rate: f64,
    seed: u64,
    format: CaptureFormat,
}

fn usage() -> ! {
    eprintln!(
        "usage: gen_capture OUT.pcap --orders N [--sessions S] [--port P] [--rate R] [--seed X] [--micros|--pcapng]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut out = None;
    let mut a = Args {
        out: PathBuf::new(),
        orders: 540_000,
        sessions: 8,
        port: 9878,
        rate: 50_000.0,
        seed: 1,
        format: CaptureFormat::pcap_nanos(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| -> String {
            it.next().unwrap_or_else(|| {
                eprintln!("{name} needs a value");
                usage()
            })
        };
        fn num<T: std::str::FromStr>(name: &str, s: String) -> T {
            s.parse().unwrap_or_else(|_| {
                eprintln!("bad value for {name}: {s}");
                usage()
            })
        }
        match arg.as_str() {
            "--orders" => a.orders = num("--orders", val("--orders")),
            "--sessions" => a.sessions = num("--sessions", val("--sessions")),
            "--port" => a.port = num("--port", val("--port")),
            "--rate" => a.rate = num("--rate", val("--rate")),
            "--seed" => a.seed = num("--seed", val("--seed")),
            "--micros" => a.format = CaptureFormat::pcap_micros(),
            "--pcapng" => a.format = CaptureFormat::pcapng_nanos(),
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => {
                eprintln!("unknown flag {s}");
                usage()
            }
            s => out = Some(PathBuf::from(s)),
        }
    }
    a.out = out.unwrap_or_else(|| usage());
    if a.sessions == 0 || a.sessions > 250 || a.rate.is_nan() || a.rate <= 0.0 {
        eprintln!("--sessions must be 1..=250 and --rate positive");
        usage()
    }
    a
}

/// splitmix64: small, seedable, good enough for traffic shapes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn exp_ns(&mut self, mean_ns: f64) -> u64 {
        (-(1.0 - self.unit()).ln() * mean_ns) as u64
    }
}

/// FIX UTCTimestamp with milliseconds: YYYYMMDD-HH:MM:SS.sss
fn utc_timestamp(ns: u64, out: &mut Vec<u8>) {
    let secs = ns / 1_000_000_000;
    let ms = (ns / 1_000_000) % 1000;
    let days = (secs / 86_400) as i64;
    let sod = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let s = format!(
        "{y:04}{m:02}{d:02}-{:02}:{:02}:{:02}.{ms:03}",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    );
    out.extend_from_slice(s.as_bytes());
}

const SYMBOLS: &[&str] = &[
    "AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA", "JPM", "V", "XOM", "ESU4", "NQU4",
];

struct Session {
    conn: SyntheticConnection,
    sender: Vec<u8>,
    client_seq: u64,
    server_seq: u64,
    server_segments: u64,
    next_heartbeat_ns: u64,
    /// An order held back to share a segment with the session's next order.
    held: Option<(Vec<u8>, Event)>,
}

/// What the generator has scheduled for later.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Ack ER (and the fill in the same segment when `coalesce`).
    Ack {
        coalesce: bool,
    },
    Fill,
    ClientAck,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    ts: u64,
    tie: u64,
    session: usize,
    kind: Kind,
    order_no: u64,
    qty: u64,
    px_cents: u64,
    side: u8,
    sym: usize,
}

struct Gen {
    enc: FixEncoder,
    buf: Vec<u8>,
    stamp: Vec<u8>,
    packets: u64,
    messages: u64,
    orders: u64,
}

impl Gen {
    fn header(&mut self, s: &mut Session, msg_type: &[u8], from_client: bool, ts: u64) {
        self.stamp.clear();
        utc_timestamp(ts, &mut self.stamp);
        let seq = if from_client {
            s.client_seq += 1;
            s.client_seq
        } else {
            s.server_seq += 1;
            s.server_seq
        };
        let (snd, tgt): (&[u8], &[u8]) = if from_client {
            (&s.sender, b"EXCH")
        } else {
            (b"EXCH", &s.sender)
        };
        self.enc
            .start(msg_type)
            .field(49, snd)
            .field(56, tgt)
            .field_uint(34, seq)
            .field(52, &self.stamp);
    }

    fn clordid(order_no: u64, session: usize) -> String {
        format!("S{}-{:016}", session + 1, order_no)
    }

    /// Appends one NewOrderSingle of 200–300 bytes to `out`.
    fn order(
        &mut self,
        s: &mut Session,
        session: usize,
        ev: &Event,
        rng: &mut Rng,
        out: &mut Vec<u8>,
    ) {
        let target = rng.range(200, 300) as usize;
        self.header(s, b"D", true, ev.ts);
        let id = Self::clordid(ev.order_no, session);
        self.enc
            .field_str(11, &id)
            .field_str(1, "ACCT-0042")
            .field(21, b"1")
            .field_str(55, SYMBOLS[ev.sym])
            .field(54, &[ev.side])
            .field(60, &self.stamp.clone())
            .field_uint(38, ev.qty)
            .field(40, b"2")
            .field_str(
                44,
                &format!("{}.{:02}", ev.px_cents / 100, ev.px_cents % 100),
            )
            .field(59, b"0");
        // Measure, then pad with 58=Text to the target length.
        let mut probe = Vec::with_capacity(320);
        let len = self.enc.finish(BEGIN, &mut probe);
        // 58= + SOH is 4 bytes; a longer body may also grow 9=NNN by one digit (never here).
        if len + 4 < target {
            let pad = target - len - 4;
            let text: Vec<u8> = (0..pad).map(|i| b'a' + (i % 26) as u8).collect();
            self.enc.field(58, &text);
        }
        self.enc.finish(BEGIN, out);
        self.messages += 1;
    }

    fn exec_report(
        &mut self,
        s: &mut Session,
        session: usize,
        ev: &Event,
        fill: bool,
        ts: u64,
        out: &mut Vec<u8>,
    ) {
        self.header(s, b"8", false, ts);
        let id = Self::clordid(ev.order_no, session);
        let px = format!("{}.{:02}", ev.px_cents / 100, ev.px_cents % 100);
        self.enc
            .field_uint(37, 9_000_000_000 + ev.order_no)
            .field_str(11, &id)
            .field_uint(17, ev.order_no * 2 + u64::from(fill))
            .field(150, if fill { b"F" } else { b"0" })
            .field(39, if fill { b"2" } else { b"0" })
            .field_str(55, SYMBOLS[ev.sym])
            .field(54, &[ev.side])
            .field_uint(38, ev.qty)
            .field_str(44, &px);
        if fill {
            self.enc
                .field_uint(32, ev.qty)
                .field_str(31, &px)
                .field_uint(14, ev.qty)
                .field(151, b"0")
                .field_str(6, &px);
        } else {
            self.enc
                .field(14, b"0")
                .field_uint(151, ev.qty)
                .field(6, b"0");
        }
        let stamp = self.stamp.clone();
        self.enc.field(60, &stamp);
        self.enc.finish(BEGIN, out);
        self.messages += 1;
    }

    fn simple(
        &mut self,
        s: &mut Session,
        msg_type: &[u8],
        from_client: bool,
        ts: u64,
        out: &mut Vec<u8>,
    ) {
        self.header(s, msg_type, from_client, ts);
        if msg_type == b"A" {
            self.enc.field(98, b"0").field(108, b"30");
        }
        self.enc.finish(BEGIN, out);
        self.messages += 1;
    }
}

fn main() -> std::io::Result<()> {
    let args = parse_args();
    let mut rng = Rng(args.seed);
    let file = File::create(&args.out)?;
    let mut w = CaptureWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        args.format,
        LinkType::Ethernet,
    )?;
    let server = Endpoint {
        addr: "10.2.0.1".parse().unwrap(),
        port: args.port,
    };
    let mut sessions: Vec<Session> = (0..args.sessions)
        .map(|i| {
            let client = Endpoint {
                addr: format!("10.1.0.{}", 1 + i).parse().unwrap(),
                port: 40000 + i as u16,
            };
            let isn_c = rng.next() as u32;
            let isn_s = rng.next() as u32;
            Session {
                conn: SyntheticConnection::with_isns(client, server, isn_c, isn_s),
                sender: format!("CLIENT{}", i + 1).into_bytes(),
                client_seq: 0,
                server_seq: 0,
                server_segments: 0,
                next_heartbeat_ns: 0,
                held: None,
            }
        })
        .collect();
    let mut g = Gen {
        enc: FixEncoder::new(),
        buf: Vec::with_capacity(1024),
        stamp: Vec::with_capacity(32),
        packets: 0,
        messages: 0,
        orders: 0,
    };

    // Handshakes and logons, 1 ms apart per session.
    let mut ts = START_NS - 1_000_000 * (args.sessions as u64 + 1);
    for (i, s) in sessions.iter_mut().enumerate() {
        for spec in s.conn.handshake() {
            w.write_tcp(ts, &spec)?;
            g.packets += 1;
            ts += 30_000;
        }
        g.buf.clear();
        let mut out = std::mem::take(&mut g.buf);
        g.simple(s, b"A", true, ts, &mut out);
        w.write_tcp(ts, &s.conn.client_sends(&out))?;
        ts += 40_000;
        out.clear();
        g.simple(s, b"A", false, ts, &mut out);
        w.write_tcp(ts, &s.conn.server_sends(&out))?;
        g.packets += 2;
        g.buf = out;
        s.next_heartbeat_ns = START_NS + HEARTBEAT_NS + i as u64 * 1_000_000;
        ts = START_NS - 1_000_000 * (args.sessions as u64 - i as u64);
    }

    let mean_gap = 1e9 / args.rate;
    let mut heap: BinaryHeap<Reverse<Event>> = BinaryHeap::new();
    let mut tie = 0u64;
    let mut next_order_ts = START_NS;
    let mut last_ts = START_NS;
    let mut out = Vec::with_capacity(1024);
    let mut order_no = 0u64;
    let mut flushed = false;
    loop {
        let have_orders = order_no < args.orders;
        if !have_orders && !flushed {
            // Orders still held for a next order that never came leave on their own.
            flushed = true;
            for (i, s) in sessions.iter_mut().enumerate() {
                if let Some((payload, h)) = s.held.take() {
                    w.write_tcp(next_order_ts, &s.conn.client_sends(&payload))?;
                    g.packets += 1;
                    tie += 1;
                    heap.push(Reverse(Event {
                        ts: next_order_ts + rng.range(15_000, 80_000),
                        tie,
                        session: i,
                        kind: Kind::Ack { coalesce: false },
                        ..h
                    }));
                }
            }
        }
        // Next thing to happen: a scheduled response/ACK, or the next order.
        let take_event = match heap.peek() {
            Some(Reverse(e)) => !have_orders || e.ts <= next_order_ts,
            None => false,
        };
        if !take_event && !have_orders {
            break;
        }
        if take_event {
            let Reverse(ev) = heap.pop().unwrap();
            let s = &mut sessions[ev.session];
            out.clear();
            match ev.kind {
                Kind::ClientAck => {
                    w.write_tcp(ev.ts, &s.conn.client_sends(&[]))?;
                    g.packets += 1;
                    last_ts = last_ts.max(ev.ts);
                    continue;
                }
                Kind::Ack { coalesce } => {
                    g.exec_report(s, ev.session, &ev, false, ev.ts, &mut out);
                    if coalesce {
                        g.exec_report(s, ev.session, &ev, true, ev.ts, &mut out);
                    } else {
                        let fill_ts = ev.ts + rng.range(20_000, 400_000);
                        tie += 1;
                        heap.push(Reverse(Event {
                            ts: fill_ts,
                            tie,
                            kind: Kind::Fill,
                            ..ev
                        }));
                    }
                }
                Kind::Fill => g.exec_report(s, ev.session, &ev, true, ev.ts, &mut out),
            }
            w.write_tcp(ev.ts, &s.conn.server_sends(&out))?;
            g.packets += 1;
            last_ts = last_ts.max(ev.ts);
            s.server_segments += 1;
            if s.server_segments.is_multiple_of(2) {
                tie += 1;
                heap.push(Reverse(Event {
                    ts: ev.ts + rng.range(3_000, 12_000),
                    tie,
                    kind: Kind::ClientAck,
                    ..ev
                }));
            }
            continue;
        }

        // The next order.
        let ts = next_order_ts;
        next_order_ts += rng.exp_ns(mean_gap).max(200);
        let session = rng.below(args.sessions as u64) as usize;
        let s = &mut sessions[session];
        // Heartbeats both ways when due.
        if ts >= s.next_heartbeat_ns {
            out.clear();
            g.simple(s, b"0", true, ts, &mut out);
            w.write_tcp(ts, &s.conn.client_sends(&out))?;
            out.clear();
            g.simple(s, b"0", false, ts + 25_000, &mut out);
            // Stamped 25 µs later inside, but written 1 ns after the client's so the file
            // stays sorted by time without another queue.
            w.write_tcp(ts + 1, &s.conn.server_sends(&out))?;
            g.packets += 2;
            s.next_heartbeat_ns += HEARTBEAT_NS;
        }
        let ev = Event {
            ts,
            tie: 0,
            session,
            kind: Kind::Ack { coalesce: false },
            order_no,
            qty: rng.range(1, 50) * 100,
            px_cents: rng.range(10_000, 60_000),
            side: if rng.chance(0.5) { b'1' } else { b'2' },
            sym: rng.below(SYMBOLS.len() as u64) as usize,
        };
        order_no += 1;
        g.orders += 1;
        let (mut payload, held_ev) = match s.held.take() {
            Some((p, e)) => (p, Some(e)),
            None => (Vec::with_capacity(640), None),
        };
        let had_held = held_ev.is_some();
        g.order(s, session, &ev, &mut rng, &mut payload);
        // ~5% of orders wait to share a segment with the session's next order (never a
        // third in the same segment).
        if !had_held && rng.chance(0.05) {
            s.held = Some((payload, ev));
            continue;
        } else {
            w.write_tcp(ts, &s.conn.client_sends(&payload))?;
            g.packets += 1;
            last_ts = last_ts.max(ts);
        }
        // Responses, scheduled from the time the segment leaves.
        let ack_ts = ts + rng.range(15_000, 80_000);
        let coalesce = rng.chance(0.10);
        if let Some(h) = held_ev {
            // The held order's responses, now that it has left (it was first in the segment).
            tie += 1;
            heap.push(Reverse(Event {
                ts: ack_ts,
                tie,
                kind: Kind::Ack { coalesce: false },
                ..h
            }));
        }
        tie += 1;
        heap.push(Reverse(Event {
            ts: ack_ts + if had_held { rng.range(1_000, 5_000) } else { 0 },
            tie,
            kind: Kind::Ack { coalesce },
            ..ev
        }));
    }
    // FINs.
    let mut ts = last_ts + 1_000_000;
    for s in sessions.iter_mut() {
        w.write_tcp(ts, &s.conn.client_fin())?;
        ts += 20_000;
        w.write_tcp(ts, &s.conn.server_fin())?;
        ts += 20_000;
        g.packets += 2;
    }
    let bw = w.finish()?;
    let file = bw.into_inner().map_err(|e| e.into_error())?;
    let bytes = file.metadata()?.len();
    println!(
        "gen_capture: {} orders, {} sessions, {} packets, {} FIX messages, {} bytes, {:.3} s of capture time -> {}",
        g.orders,
        args.sessions,
        g.packets,
        g.messages,
        bytes,
        (last_ts - START_NS) as f64 / 1e9,
        args.out.display()
    );
    Ok(())
}
