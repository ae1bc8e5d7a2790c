//! A tap's two ports written by the capture host in its own order (#47, item 11): the
//! request port reaches the host 30 µs after the wire, the response port 5 µs, and now and
//! then a request is later still (another queue, another CPU), so the host writes the
//! venue's ACK of the next request — and, with a tap's trailers, even the responses —
//! before the request they acknowledge. No byte is missing: not one TCP gap, no order
//! answered after a capture hole, no unmatched response, every order measured exactly —
//! with trailers the wire's latencies, with host stamps the host's own (a request held
//! behind a late one is readable when the late one came). A request truly missing is still
//! one gap, once the reorder window has passed, and the orders behind it are exact.
//!
//! Truth comes from the script below, never from fixscope; every counter and stage is the
//! same on one thread, the default plan and four workers.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureWriter, FrameOptions, SyntheticConnection, TcpPacketSpec,
};
use fixscope_core::wire_stamp::{trailer_for, TrailerKind, WireStamp};
use serde_json::Value;
use support::*;

const US: u64 = 1_000;
const SESSIONS: usize = 4;
const ORDERS: usize = 240;
/// Every 10th order's request reaches the host late (`late_by_ns`).
const LATE_EVERY: usize = 10;
const REQUEST_PORT_NS: u64 = 30 * US;
const RESPONSE_PORT_NS: u64 = 5 * US;

struct Frame {
    /// When it was on the wire (a trailer's time).
    wire_ns: u64,
    /// When the capture host stamped it.
    host_ns: u64,
    spec: TcpPacketSpec,
    /// (session, from the server): the half-stream it belongs to.
    stream: (usize, bool),
    /// Left out of the capture (a real drop).
    dropped: bool,
}

/// An order: its request, ack and fill frames.
struct Order {
    request: usize,
    ack: usize,
    fill: usize,
}

struct Scenario {
    frames: Vec<Frame>,
    orders: Vec<Order>,
}

/// The traffic: `SESSIONS` connections, `ORDERS` orders each, 50 µs apart; each request
/// is acknowledged by the venue's TCP (a pure ACK 27 µs later), acked by an
/// execution report 40–59 µs later (100 µs for a late order) and filled after that.
/// `late_by_ns`: how much later than its port a late request reaches the host; `drop`:
/// (session, order) whose request the capture misses.
fn scenario(late_by_ns: u64, drop: Option<(usize, usize)>) -> Scenario {
    /// What one end sends when: sent in wire-time order, so each stream's sequence numbers
    /// follow the wire.
    struct Send {
        wire_ns: u64,
        from_server: bool,
        payload: Vec<u8>,
        late: bool,
        /// (order, 0 request / 1 ack / 2 fill), for the truth.
        role: Option<(usize, usize)>,
    }
    let server = endpoint(false, 1, SERVER_PORT);
    let mut frames = Vec::new();
    let mut orders = Vec::new();
    let t0 = 1_700_000_000_000_000_000u64;
    for s in 0..SESSIONS {
        let client = endpoint(false, 2 + s as u8, 40_000 + s as u16);
        let mut conn = SyntheticConnection::new(client, server);
        let start = t0 + s as u64 * 7 * US;
        let sender = format!("CLIENT{s}");
        let logon = fix_message(
            "FIX.4.4",
            &[
                (35, "A"),
                (49, &sender),
                (56, "EXCH"),
                (98, "0"),
                (108, "30"),
            ],
        );
        let mut sends = vec![Send {
            wire_ns: start + US,
            from_server: false,
            payload: logon,
            late: false,
            role: None,
        }];
        for i in 0..ORDERS {
            let t = start + 100 * US + i as u64 * 50 * US;
            let id = format!("S{s}-ORD{i:05}");
            let late = i % LATE_EVERY == 5;
            let order = fix_message(
                "FIX.4.4",
                &[
                    (35, "D"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, &id),
                    (55, "IBM"),
                    (54, "1"),
                    (38, "100"),
                    (40, "2"),
                    (44, "10.5"),
                ],
            );
            let report = |exec: &str, status: &str| {
                fix_message(
                    "FIX.4.4",
                    &[
                        (35, "8"),
                        (49, "EXCH"),
                        (56, &sender),
                        (11, &id),
                        (37, "X"),
                        (17, exec),
                        (150, exec),
                        (39, status),
                    ],
                )
            };
            let ack_ns = if late {
                100 * US
            } else {
                40 * US + (i as u64 * 7919 % 20) * US
            };
            let fill_ns = ack_ns + 10 * US + (i as u64 * 104_729 % 30) * US;
            let mut send = |wire_ns, from_server, payload, late, role| {
                sends.push(Send {
                    wire_ns,
                    from_server,
                    payload,
                    late,
                    role,
                })
            };
            send(t, false, order, late, Some((i, 0)));
            // The venue's TCP acknowledges the request on its own: read by the host between
            // the next request and a late one before it.
            send(t + 27 * US, true, Vec::new(), false, None);
            send(t + ack_ns, true, report("0", "0"), false, Some((i, 1)));
            send(t + fill_ns, true, report("F", "2"), false, Some((i, 2)));
        }
        sends.sort_by_key(|x| x.wire_ns);
        let push = |frames: &mut Vec<Frame>,
                    wire_ns: u64,
                    spec: TcpPacketSpec,
                    from_server: bool,
                    late: bool| {
            let port = if from_server {
                RESPONSE_PORT_NS
            } else {
                REQUEST_PORT_NS
            };
            frames.push(Frame {
                wire_ns,
                host_ns: wire_ns + port + if late { late_by_ns } else { 0 },
                spec,
                stream: (s, from_server),
                dropped: false,
            });
            frames.len() - 1
        };
        for p in conn.handshake() {
            let from_server = p.flow.src.port == SERVER_PORT;
            push(&mut frames, start, p, from_server, false);
        }
        let mut roles = vec![[0usize; 3]; ORDERS];
        for x in sends {
            let spec = if x.from_server {
                conn.server_sends(&x.payload)
            } else {
                conn.client_sends(&x.payload)
            };
            let index = push(&mut frames, x.wire_ns, spec, x.from_server, x.late);
            if let Some((i, role)) = x.role {
                roles[i][role] = index;
                if role == 0 && drop == Some((s, i)) {
                    frames[index].dropped = true;
                }
            }
        }
        orders.extend(
            roles
                .iter()
                .map(|&[request, ack, fill]| Order { request, ack, fill }),
        );
    }
    Scenario { frames, orders }
}

impl Scenario {
    /// When each captured frame's bytes became readable by the host's stamps: a frame
    /// behind a later one in its own stream (by sequence, which is the wire's order) is
    /// readable when that one came; a dropped frame delays nothing.
    fn host_readable(&self) -> Vec<u64> {
        let mut readable = vec![0; self.frames.len()];
        let mut latest = std::collections::HashMap::new();
        // Frames were pushed in each stream's wire (and sequence) order.
        for (i, f) in self.frames.iter().enumerate() {
            if f.dropped {
                continue;
            }
            let until: &mut u64 = latest.entry(f.stream).or_default();
            *until = (*until).max(f.host_ns);
            readable[i] = *until;
        }
        readable
    }

    /// The latencies of every order whose request was captured, by `time` of each frame.
    fn truth(&self, time: &[u64]) -> Truth {
        let mut truth = Truth::default();
        for o in &self.orders {
            if self.frames[o.request].dropped {
                continue;
            }
            let (req, ack, fill) = (time[o.request], time[o.ack], time[o.fill]);
            assert!(
                ack > req,
                "the script keeps every response after its request"
            );

            truth.first_response.push(ack - req);
            truth.ack.push(ack - req);
            truth.fill.push(fill - req);
            truth.ack_to_fill.push(fill - ack);
            truth.requests += 1;
        }
        truth
    }

    /// Writes the capture in the host's order at the host's times; with `kind`, every
    /// frame carries a trailer with its wire time.
    fn write(&self, path: &std::path::Path, kind: Option<TrailerKind>) {
        let mut order: Vec<usize> = (0..self.frames.len())
            .filter(|&i| !self.frames[i].dropped)
            .collect();
        order.sort_by_key(|&i| self.frames[i].host_ns);
        let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        let mut w =
            CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
        for i in order {
            let f = &self.frames[i];
            let mut frame = f.spec.frame(LinkType::Ethernet, &FrameOptions::default());
            if frame.len() < 60 {
                frame.resize(60, 0);
            }
            if let Some(kind) = kind {
                let stamp = WireStamp {
                    kind,
                    device: 7,
                    port: u8::from(f.stream.1),
                    unix_ns: f.wire_ns,
                };
                let trailer = trailer_for(&frame, &stamp, i % 2 == 0);
                frame.extend_from_slice(&trailer);
            }
            w.write_packet(f.host_ns, &frame).unwrap();
        }
        w.finish().unwrap();
    }
}

fn assert_nothing_lost(s: &Value) {
    for c in [
        "tcp_gaps",
        "tcp_gap_bytes",
        "retransmitted_bytes",
        "gap_cut_messages",
        "answered_after_capture_hole",
        "unmatched_responses",
        "response_before_request",
        "timed_out",
        "sequence_skips_at_capture_holes",
    ] {
        assert_eq!(counter(s, c), 0, "{c}: {}", s["counters"]);
    }
}

#[test]
fn trailer_times_through_ports_written_out_of_order_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // 300 µs late: the next five requests, their ACKs and responses are written first.
    let sc = scenario(300 * US, None);
    let wire: Vec<u64> = sc.frames.iter().map(|f| f.wire_ns).collect();
    let truth = sc.truth(&wire);
    for kind in [TrailerKind::MetaWatch, TrailerKind::Hpt] {
        let path = dir.path().join(format!("{}.pcap", kind.name()));
        sc.write(&path, Some(kind));
        let s = every_plan_of_paths(&[&path]);
        assert_eq!(
            s["source"]["trailer_timestamps"],
            sc.frames.len() as u64,
            "{kind:?}"
        );
        assert_nothing_lost(&s);
        assert_truth(&s, &truth);
    }
}

#[test]
fn host_stamps_through_ports_written_out_of_order_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // 55 µs late: after the next request and the venue's ACK of it (a hole the peer
    // acknowledged), before their responses.
    let sc = scenario(55 * US, None);
    let truth = sc.truth(&sc.host_readable());
    let path = dir.path().join("host.pcap");
    sc.write(&path, None);
    let s = every_plan_of_paths(&[&path]);
    assert_nothing_lost(&s);
    assert_truth(&s, &truth);
}

#[test]
fn a_request_truly_missing_is_one_gap_once_the_window_passed() {
    let dir = tempfile::tempdir().unwrap();
    // Session 1's order 33 never reached the capture; the reordering goes on around it.
    for (late_by_ns, kind) in [(55 * US, None), (300 * US, Some(TrailerKind::MetaWatch))] {
        let sc = scenario(late_by_ns, Some((1, 33)));
        let missing = sc.frames.iter().find(|f| f.dropped).unwrap();
        let missing_bytes = missing.spec.payload.len() as u64;
        let time: Vec<u64> = match kind {
            Some(_) => sc.frames.iter().map(|f| f.wire_ns).collect(),
            None => sc.host_readable(),
        };
        let truth = sc.truth(&time);
        let path = dir.path().join(format!("drop-{late_by_ns}.pcap"));
        sc.write(&path, kind);
        let s = every_plan_of_paths(&[&path]);
        let c = |name: &str| counter(&s, name);
        assert_eq!(
            (c("tcp_gaps"), c("tcp_gap_bytes")),
            (1, missing_bytes),
            "{}",
            s["counters"]
        );
        assert_eq!(c("retransmitted_bytes"), 0, "{}", s["counters"]);
        // The missing order's ack and fill answer nothing; every other order is exact.
        assert_eq!(c("unmatched_responses"), 2, "{}", s["counters"]);
        assert_eq!(c("answered_after_capture_hole"), 0, "{}", s["counters"]);
        assert_eq!(c("timed_out"), 0);
        assert_stage(&s, "first_response", &truth.first_response);
        assert_stage(&s, "ack", &truth.ack);
        assert_stage(&s, "fill", &truth.fill);
        assert_stage(&s, "ack_to_fill", &truth.ack_to_fill);
        assert_eq!(c("requests"), truth.requests);
        assert_eq!(c("matched"), truth.requests);
    }
}
