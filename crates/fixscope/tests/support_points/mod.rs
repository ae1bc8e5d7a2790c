//! One FIX session captured at two points, each with its own clock (`--point`): a client
//! host `cli` (point A, whose clock is true time) and the gateway `gw` at the acceptor
//! (point B, whose clock runs `theta(t)` ahead of true time: an offset, a drift and steps).
//!
//! The generator knows every segment's true send and arrival time, so the tests take their
//! truth from it, never from fixscope: each order's residence at `gw`, its wire round trip,
//! its one-way delays, and the true clock offset at every instant.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fixscope_core::pcap_writer::TcpPacketSpec;
use fixscope_core::{Endpoint, FlowKey, TcpFlags};

use crate::support::{fix_message, write_pcap, TimedPacket};

/// True time of the first packet (ns since the epoch); point A's clock reads true time.
pub const T0: u64 = 1_700_000_000_000_000_000;
pub const SERVER_PORT: u16 = 9878;
const NS_PER_S: u64 = 1_000_000_000;
pub const CLIENT_PORT: u16 = 40_123;
/// 37 s: TAI − UTC since 2017.
pub const TAI_UTC_NS: i64 = 37_000_000_000;
/// Where the step of the stepping variants falls, after [`T0`]: 33.305… s, inside an
/// order slot after its exchange and before any heartbeat (nothing is in flight), and on
/// no second's boundary.
pub const STEP_AFTER_NS: u64 = 33_305_123_457;

/// How to script the session and the two clocks.
#[derive(Clone, Debug)]
pub struct PointsSpec {
    pub orders: usize,
    /// One order per slot of this length (at least 8 ms with heartbeats: they sit at 6 and
    /// 7 ms).
    pub order_every_ns: u64,
    /// The order is sent at a uniformly random time in the first `order_jitter_ns` of its slot.
    pub order_jitter_ns: u64,
    /// Client → server one-way delay: this base plus a jitter.
    pub fwd_base_ns: u64,
    /// Server → client one-way delay: this base plus a jitter.
    pub rev_base_ns: u64,
    /// Mean of the jitter's exponential part.
    pub jitter_mean_ns: u64,
    /// Share (‰) of jitters drawn in [0, 300 ns) instead: many samples near the minimum.
    pub near_zero_per_mille: u64,
    /// Residence at the gateway (request in → response out), uniform in this range (true ns).
    pub residence_ns: (u64, u64),
    /// The gateway also fills each order (150=F), this long (uniform) after its ack.
    pub fill_after_ns: Option<(u64, u64)>,
    /// The receiver sends a pure ACK 5–19 µs after each data segment (unless its own data
    /// segment would carry the ACK sooner).
    pub pure_acks: bool,
    /// A heartbeat (35=0) each way every this many order slots (0: none).
    pub heartbeat_every: usize,
    /// Point B's clock: true + theta0 + drift·(t − T0) + the steps after their time.
    pub theta0_ns: i64,
    /// Drift of B's clock relative to A's, in parts per billion (20 ppm = 20_000).
    pub drift_ppb: i64,
    /// (time after T0, size) of each step of B's clock.
    pub steps: Vec<(u64, i64)>,
    pub seed: u64,
}

impl PointsSpec {
    /// The main case: 6,000 orders over 60 s, B 250 µs ahead, drifting 20 ppm, stepping
    /// +400 µs at 33.3 s; forward 30 µs + jitter, reverse 45 µs + jitter.
    pub fn drift_and_step() -> Self {
        PointsSpec {
            orders: 6_000,
            order_every_ns: 10_000_000,
            order_jitter_ns: 2_000_000,
            fwd_base_ns: 30_000,
            rev_base_ns: 45_000,
            jitter_mean_ns: 10_500,
            near_zero_per_mille: 250,
            residence_ns: (20_000, 300_000),
            fill_after_ns: None,
            pure_acks: true,
            heartbeat_every: 300,
            theta0_ns: 250_000,
            drift_ppb: 20_000,
            steps: vec![(STEP_AFTER_NS, 400_000)],
            seed: 0x5eed_0001,
        }
    }

    /// B 250 µs ahead, no drift, no step.
    pub fn constant() -> Self {
        PointsSpec {
            drift_ppb: 0,
            steps: vec![],
            seed: 0x5eed_0002,
            ..Self::drift_and_step()
        }
    }

    /// Both clocks true (θ ≡ 0).
    pub fn synchronised() -> Self {
        PointsSpec {
            theta0_ns: 0,
            seed: 0x5eed_0003,
            ..Self::constant()
        }
    }

    /// B keeps TAI, A UTC: θ0 = 37 s exactly, plus a 1 ppm drift.
    pub fn tai() -> Self {
        PointsSpec {
            theta0_ns: TAI_UTC_NS,
            drift_ppb: 1_000,
            steps: vec![],
            seed: 0x5eed_0004,
            ..Self::drift_and_step()
        }
    }

    /// B starts 250 µs ahead (20 ppm) and steps by +37 s at 33.3 s (switched to TAI).
    pub fn tai_step() -> Self {
        PointsSpec {
            steps: vec![(STEP_AFTER_NS, TAI_UTC_NS)],
            seed: 0x5eed_0005,
            ..Self::drift_and_step()
        }
    }

    /// A very asymmetric, jittery link and few samples: 300 orders, no pure ACKs, no
    /// heartbeats, forward 30 µs + 200 µs-mean jitter, reverse 400 µs + 200 µs-mean jitter,
    /// no jitter near 0. The offset is known to ±~300 µs only.
    pub fn jittery() -> Self {
        PointsSpec {
            orders: 300,
            fwd_base_ns: 30_000,
            rev_base_ns: 400_000,
            jitter_mean_ns: 200_000,
            near_zero_per_mille: 0,
            pure_acks: false,
            heartbeat_every: 0,
            drift_ppb: 0,
            steps: vec![],
            seed: 0x5eed_0006,
            ..Self::drift_and_step()
        }
    }

    /// A capture of `seconds` (issue #47, item 12): an order every 500 µs (2,000 a second),
    /// no heartbeats, residence 20–150 µs, B 250 µs ahead drifting 20 ppm, stepping
    /// +400 µs about `step_at_s` seconds in (at an order slot's quiet end, so nothing is in
    /// flight).
    pub fn short(seconds: u64, step_at_s: Option<f64>) -> Self {
        const SLOT: u64 = 500_000;
        let steps = step_at_s
            .map(|s| {
                let slot = ((s * 1e9) as u64).saturating_sub(10_000_000) / SLOT;
                vec![(10_000_000 + slot * SLOT + 490_000, 400_000)]
            })
            .unwrap_or_default();
        PointsSpec {
            orders: (seconds * NS_PER_S / SLOT) as usize,
            order_every_ns: SLOT,
            order_jitter_ns: 100_000,
            residence_ns: (20_000, 150_000),
            heartbeat_every: 0,
            steps,
            seed: 0x5eed_0012 + seconds,
            ..Self::drift_and_step()
        }
    }

    /// Fewer orders (same rate): for the tests that need no minute-long capture.
    pub fn with_orders(self, orders: usize) -> Self {
        PointsSpec { orders, ..self }
    }

    /// The true offset clock(gw) − clock(cli) at true time `t`.
    pub fn theta(&self, t: u64) -> i64 {
        let since = t as i128 - T0 as i128;
        let drift = since * self.drift_ppb as i128 / 1_000_000_000;
        let steps: i64 = self
            .steps
            .iter()
            .filter(|&&(after, _)| t >= T0 + after)
            .map(|&(_, size)| size)
            .sum();
        self.theta0_ns + drift as i64 + steps
    }

    /// Point B's stamp of true time `t`.
    pub fn gw_stamp(&self, t: u64) -> u64 {
        (t as i64 + self.theta(t)) as u64
    }
}

/// A capture point.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Point {
    /// A, near the client; its clock is true time.
    Cli,
    /// B, at the acceptor (the gateway); its clock is `theta` ahead.
    Gw,
}

/// What a segment carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Carries {
    Handshake,
    PureAck,
    Logon,
    Heartbeat,
    /// Order i's NewOrderSingle.
    Request(usize),
    /// Order i's ExecutionReport (its ack: the first response).
    Response(usize),
    /// Order i's fill (with `fill_after_ns`).
    Fill(usize),
}

/// One TCP segment, as both points stamp it.
#[derive(Clone, Debug)]
pub struct PointPacket {
    pub spec: TcpPacketSpec,
    /// Client → server.
    pub c2s: bool,
    /// True time the sender put it on the wire (client side: at A; server side: at B).
    pub send_ns: u64,
    /// True time it reached the other point.
    pub arrive_ns: u64,
    /// Point A's stamp (true time: send for c2s, arrival for s2c).
    pub ts_cli: u64,
    /// Point B's stamp (B's clock: arrival for c2s, send for s2c).
    pub ts_gw: u64,
    pub carries: Carries,
}

impl PointPacket {
    /// The one-way delay of this segment (true ns).
    pub fn owd(&self) -> u64 {
        self.arrive_ns - self.send_ns
    }

    pub fn stamp(&self, point: Point) -> u64 {
        match point {
            Point::Cli => self.ts_cli,
            Point::Gw => self.ts_gw,
        }
    }
}

/// One order's truth. Residence and wire round trip are what the stamps give (B's clock
/// for residence, as `fixscope pcap gw.pcap` measures it; wire = A's round trip − that);
/// the one-way delays are true.
#[derive(Clone, Debug)]
pub struct OrderTruth {
    pub clordid: String,
    /// True time the request left the client (= A's stamp of it).
    pub request_ns: u64,
    pub request_packet: usize,
    pub response_packet: usize,
    /// With `fill_after_ns`: the fill's segment.
    pub fill_packet: Option<usize>,
    pub req_cli_ns: u64,
    pub req_gw_ns: u64,
    pub resp_cli_ns: u64,
    pub resp_gw_ns: u64,
    /// resp_gw − req_gw.
    pub residence_ns: u64,
    /// (resp_cli − req_cli) − residence_ns.
    pub wire_rtt_ns: u64,
    /// owd of the request's segment (true).
    pub one_way_fwd_ns: u64,
    /// owd of the response's segment (true).
    pub one_way_rev_ns: u64,
}

/// The generated session.
pub struct TwoPoints {
    pub spec: PointsSpec,
    /// In generation order (per direction: send order, which is also arrival order).
    pub packets: Vec<PointPacket>,
    pub orders: Vec<OrderTruth>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in [a, b].
    fn between(&mut self, a: u64, b: u64) -> u64 {
        a + self.below(b - a + 1)
    }
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        (self.next() as f64 + 1.0) / (1u64 << 53) as f64
    }
}

struct Send {
    c2s: bool,
    send: u64,
    arrive: u64,
    flags: u8,
    payload: Vec<u8>,
    carries: Carries,
}

struct Sim<'a> {
    spec: &'a PointsSpec,
    rng: Rng,
    sends: Vec<Send>,
    /// Last arrival per direction (0: c2s, 1: s2c): segments of one direction never overtake.
    last_arrive: [u64; 2],
    seq_num: [u64; 2],
}

impl Sim<'_> {
    fn jitter(&mut self) -> u64 {
        if self.rng.below(1000) < self.spec.near_zero_per_mille {
            self.rng.below(300)
        } else {
            (-self.rng.unit().ln() * self.spec.jitter_mean_ns as f64) as u64
        }
    }

    /// Sends a segment at true time `t`; returns its index and its true arrival.
    fn send(&mut self, c2s: bool, t: u64, flags: u8, payload: Vec<u8>, c: Carries) -> u64 {
        let base = if c2s {
            self.spec.fwd_base_ns
        } else {
            self.spec.rev_base_ns
        };
        let dir = usize::from(!c2s);
        let arrive = (t + base + self.jitter()).max(self.last_arrive[dir] + 1);
        if let Some(prev) = self.sends.iter().rev().find(|s| s.c2s == c2s) {
            assert!(t > prev.send, "a direction's segments are sent in order");
        }
        self.last_arrive[dir] = arrive;
        self.sends.push(Send {
            c2s,
            send: t,
            arrive,
            flags,
            payload,
            carries: c,
        });
        arrive
    }

    /// The receiver's pure ACK of a data segment that arrived at `arrive` (true), sent
    /// 5–19 µs later unless `before` (its own next segment) comes first.
    fn ack(&mut self, data_c2s: bool, arrive: u64, before: Option<u64>) {
        if !self.spec.pure_acks {
            return;
        }
        let at = arrive + self.rng.between(5_000, 19_000);
        if before.is_none_or(|b| at < b) {
            self.send(!data_c2s, at, TcpFlags::ACK, vec![], Carries::PureAck);
        }
    }

    fn fix(&mut self, c2s: bool, fields: &[(u32, &str)]) -> Vec<u8> {
        let (sender, target) = if c2s { ("CLI1", "GW") } else { ("GW", "CLI1") };
        let dir = usize::from(!c2s);
        self.seq_num[dir] += 1;
        let seq = self.seq_num[dir].to_string();
        let mut all: Vec<(u32, &str)> = vec![fields[0], (49, sender), (56, target), (34, &seq)];
        all.extend_from_slice(&fields[1..]);
        fix_message("FIX.4.4", &all)
    }
}

pub fn clordid(i: usize) -> String {
    format!("ORD{i:06}")
}

impl TwoPoints {
    pub fn generate(spec: &PointsSpec) -> TwoPoints {
        // Heartbeats sit at 6 and 7 ms into a slot.
        assert!(spec.heartbeat_every == 0 || spec.order_every_ns >= 8_000_000);
        assert!(spec.order_jitter_ns <= 3_000_000);
        let mut sim = Sim {
            spec,
            rng: Rng(spec.seed),
            sends: Vec::new(),
            last_arrive: [0, 0],
            seq_num: [0, 0],
        };
        let psh = TcpFlags::PSH | TcpFlags::ACK;
        // Handshake, then a Logon each way.
        let a = sim.send(true, T0, TcpFlags::SYN, vec![], Carries::Handshake);
        let a = sim.send(
            false,
            a + 10_000,
            TcpFlags::SYN | TcpFlags::ACK,
            vec![],
            Carries::Handshake,
        );
        sim.send(true, a + 5_000, TcpFlags::ACK, vec![], Carries::Handshake);
        let logon = sim.fix(true, &[(35, "A"), (98, "0"), (108, "30")]);
        let a = sim.send(true, T0 + 1_000_000, psh, logon, Carries::Logon);
        let reply_at = a + 50_000;
        sim.ack(true, a, Some(reply_at));
        let logon = sim.fix(false, &[(35, "A"), (98, "0"), (108, "30")]);
        let a = sim.send(false, reply_at, psh, logon, Carries::Logon);
        sim.ack(false, a, None);

        let mut order_sends = Vec::with_capacity(spec.orders);
        for i in 0..spec.orders {
            let slot = T0 + 10_000_000 + i as u64 * spec.order_every_ns;
            let t = slot + sim.rng.below(spec.order_jitter_ns);
            let id = clordid(i);
            let order = sim.fix(
                true,
                &[
                    (35, "D"),
                    (11, &id),
                    (55, "IBM"),
                    (54, "1"),
                    (38, "100"),
                    (40, "2"),
                    (44, "10.5"),
                ],
            );
            let req = sim.sends.len();
            let arrive_gw = sim.send(true, t, psh, order, Carries::Request(i));
            let out = arrive_gw + sim.rng.between(spec.residence_ns.0, spec.residence_ns.1);
            sim.ack(true, arrive_gw, Some(out));
            let report = sim.fix(
                false,
                &[
                    (35, "8"),
                    (11, &id),
                    (37, &format!("X{i}")),
                    (17, &format!("E{i}")),
                    (150, "0"),
                    (39, "0"),
                ],
            );
            let resp = sim.sends.len();
            let arrive_cli = sim.send(false, out, psh, report, Carries::Response(i));
            let mut fill_packet = None;
            if let Some((lo, hi)) = spec.fill_after_ns {
                let fill_at = out + sim.rng.between(lo, hi);
                sim.ack(false, arrive_cli, Some(fill_at));
                let fill = sim.fix(
                    false,
                    &[
                        (35, "8"),
                        (11, &id),
                        (37, &format!("X{i}")),
                        (17, &format!("F{i}")),
                        (150, "F"),
                        (39, "2"),
                    ],
                );
                fill_packet = Some(sim.sends.len());
                let a = sim.send(false, fill_at, psh, fill, Carries::Fill(i));
                sim.ack(false, a, None);
            } else {
                sim.ack(false, arrive_cli, None);
            }
            order_sends.push((req, resp, fill_packet));
            if spec.heartbeat_every > 0 && i % spec.heartbeat_every == spec.heartbeat_every / 2 {
                let hb = sim.fix(true, &[(35, "0")]);
                let a = sim.send(true, slot + 6_000_000, psh, hb, Carries::Heartbeat);
                sim.ack(true, a, None);
                let hb = sim.fix(false, &[(35, "0")]);
                let a = sim.send(false, slot + 7_000_000, psh, hb, Carries::Heartbeat);
                sim.ack(false, a, None);
            }
        }

        // Sequence numbers in send order per direction; each ACK acknowledges what its
        // sender had received when it sent it.
        let isn = [u32::MAX - 99, u32::MAX - 299];
        let mut next = isn;
        let mut seqs = Vec::with_capacity(sim.sends.len());
        // Per direction: (arrival, sequence number after the segment).
        let mut arrived: [Vec<(u64, u32)>; 2] = [Vec::new(), Vec::new()];
        for s in &sim.sends {
            let dir = usize::from(!s.c2s);
            seqs.push(next[dir]);
            let len = s.payload.len() as u32 + u32::from(s.flags & TcpFlags::SYN != 0);
            next[dir] = next[dir].wrapping_add(len);
            arrived[dir].push((s.arrive, next[dir]));
        }
        let client = Endpoint {
            addr: "10.0.0.2".parse().unwrap(),
            port: CLIENT_PORT,
        };
        let server = Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port: SERVER_PORT,
        };
        let packets: Vec<PointPacket> = sim
            .sends
            .iter()
            .zip(seqs)
            .map(|(s, seq)| {
                let other = usize::from(s.c2s);
                let got = arrived[other].partition_point(|&(a, _)| a <= s.send);
                let ack = if s.flags & TcpFlags::ACK == 0 {
                    0
                } else if got == 0 {
                    isn[other]
                } else {
                    arrived[other][got - 1].1
                };
                let flow = if s.c2s {
                    FlowKey {
                        src: client,
                        dst: server,
                    }
                } else {
                    FlowKey {
                        src: server,
                        dst: client,
                    }
                };
                let (ts_cli, ts_gw) = if s.c2s {
                    (s.send, spec.gw_stamp(s.arrive))
                } else {
                    (s.arrive, spec.gw_stamp(s.send))
                };
                PointPacket {
                    spec: TcpPacketSpec {
                        flow,
                        seq,
                        ack,
                        flags: TcpFlags(s.flags),
                        payload: s.payload.clone(),
                    },
                    c2s: s.c2s,
                    send_ns: s.send,
                    arrive_ns: s.arrive,
                    ts_cli,
                    ts_gw,
                    carries: s.carries,
                }
            })
            .collect();
        let orders = order_sends
            .into_iter()
            .enumerate()
            .map(|(i, (req, resp, fill))| {
                let (q, r) = (&packets[req], &packets[resp]);
                let residence = r.ts_gw - q.ts_gw;
                OrderTruth {
                    clordid: clordid(i),
                    request_ns: q.send_ns,
                    request_packet: req,
                    response_packet: resp,
                    fill_packet: fill,
                    req_cli_ns: q.ts_cli,
                    req_gw_ns: q.ts_gw,
                    resp_cli_ns: r.ts_cli,
                    resp_gw_ns: r.ts_gw,
                    residence_ns: residence,
                    wire_rtt_ns: (r.ts_cli - q.ts_cli) - residence,
                    one_way_fwd_ns: q.owd(),
                    one_way_rev_ns: r.owd(),
                }
            })
            .collect();
        TwoPoints {
            spec: spec.clone(),
            packets,
            orders,
        }
    }

    /// The packets `point` captured, `keep` of them, in the order of that point's stamps.
    pub fn capture(&self, point: Point, keep: impl Fn(&PointPacket) -> bool) -> Vec<TimedPacket> {
        let mut out: Vec<TimedPacket> = self
            .packets
            .iter()
            .filter(|p| keep(p))
            .map(|p| TimedPacket {
                ts_ns: p.stamp(point),
                spec: p.spec.clone(),
                iface: 0,
            })
            .collect();
        out.sort_by_key(|p| p.ts_ns);
        out
    }

    /// Writes `cli.pcap` and `gw.pcap` in `dir`; returns (cli, gw).
    pub fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        self.write_without(dir, &[])
    }

    /// Like [`TwoPoints::write`], but point A (cli) misses the request and the response
    /// (ack) segments of the orders `dropped` (not their fills).
    pub fn write_without(&self, dir: &Path, dropped: &[usize]) -> (PathBuf, PathBuf) {
        let cli = dir.join("cli.pcap");
        let gw = dir.join("gw.pcap");
        write_pcap(
            &cli,
            &self.capture(Point::Cli, |p| match p.carries {
                Carries::Request(i) | Carries::Response(i) => !dropped.contains(&i),
                _ => true,
            }),
        );
        write_pcap(&gw, &self.capture(Point::Gw, |_| true));
        (cli, gw)
    }

    pub fn residences(&self) -> Vec<u64> {
        self.orders.iter().map(|o| o.residence_ns).collect()
    }
    pub fn wire_rtts(&self) -> Vec<u64> {
        self.orders.iter().map(|o| o.wire_rtt_ns).collect()
    }
    pub fn one_way_fwds(&self) -> Vec<u64> {
        self.orders.iter().map(|o| o.one_way_fwd_ns).collect()
    }
    pub fn one_way_revs(&self) -> Vec<u64> {
        self.orders.iter().map(|o| o.one_way_rev_ns).collect()
    }
    /// The round trip point A sees (request out → response in, A's clock).
    pub fn cli_round_trips(&self) -> Vec<u64> {
        self.orders
            .iter()
            .map(|o| o.resp_cli_ns - o.req_cli_ns)
            .collect()
    }

    /// Smallest one-way delay of each direction among the segments point A stamps in
    /// [start, end) (A's clock = true time): (forward, reverse); `None` when a direction
    /// has no segment there.
    pub fn min_owd_between(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let min = |c2s: bool| {
            self.packets
                .iter()
                .filter(|p| p.c2s == c2s && p.ts_cli >= start && p.ts_cli < end)
                .map(PointPacket::owd)
                .min()
        };
        Some((min(true)?, min(false)?))
    }
}
