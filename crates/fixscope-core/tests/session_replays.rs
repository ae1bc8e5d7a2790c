//! The FIX session layer through the whole pipeline (#21), against the truth of a scripted
//! conversation: a session that reconnects and recovers (ResendRequest, GapFill, PossDup
//! replays of messages seen and never seen, PossResend), TestRequests answered at known
//! delays, session/business/order/cancel rejects, a hard reset (Logon 141=Y) with a
//! reused ClOrdID. The script counts what it sends; fixscope must count the same, measure
//! the same latencies, and raise no alarm for a recovery.

use std::collections::BTreeMap;

use fixscope_core::report::{Counters, IntervalReport, Reporter, SummaryReport};
use fixscope_core::session::SessionCounters;
use fixscope_core::{Direction, Endpoint, FlowKey, Pipeline, PipelineConfig, Segment, TcpFlags};
use fixscope_testkit::fix::fix_message;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// What the script sent, counted as it went: the truth.
#[derive(Default, Debug)]
struct Truth {
    counters: SessionCounters,
    /// Distinct requests (orders), and those answered.
    requests: u64,
    matched: u64,
    /// Every first-response latency, ns.
    first_response: Vec<u64>,
    test_request_rtt: Vec<u64>,
    session_reject_reasons: BTreeMap<u32, u64>,
    business_reject_reasons: BTreeMap<u32, u64>,
    connections: u64,
    /// First-response latencies by symbol (55).
    by_symbol: BTreeMap<String, Vec<u64>>,
    /// TestRequests of the connection still unanswered: (sent by the server, TestReqID,
    /// time). FIX pairs a Heartbeat with the TestRequest of its TestReqID on its connection.
    test_requests_pending: Vec<(bool, String, u64)>,
}

/// One side of the session: its CompIDs and MsgSeqNum, and what it sent (by seq) for
/// resends.
struct Side {
    sender: &'static str,
    target: &'static str,
    next_seq: u64,
    sent: BTreeMap<u64, Vec<(u32, String)>>,
}

impl Side {
    fn new(sender: &'static str, target: &'static str) -> Side {
        Side {
            sender,
            target,
            next_seq: 1,
            sent: BTreeMap::new(),
        }
    }

    /// A message under the next MsgSeqNum (the number is used even if it never reaches the
    /// wire).
    fn message(&mut self, fields: &[(u32, &str)]) -> (u64, Vec<u8>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let body: Vec<(u32, String)> = fields.iter().map(|(t, v)| (*t, v.to_string())).collect();
        self.sent.insert(seq, body.clone());
        (seq, self.encode(seq, &body, &[]))
    }

    /// The message once sent under `seq`, again with PossDupFlag (and OrigSendingTime).
    fn resend(&self, seq: u64) -> Vec<u8> {
        let body = &self.sent[&seq];
        self.encode(seq, body, &[(43, "Y"), (122, "20261125-12:00:00.000")])
    }

    fn encode(&self, seq: u64, body: &[(u32, String)], extra_header: &[(u32, &str)]) -> Vec<u8> {
        let seq = seq.to_string();
        let mut fields: Vec<(u32, &str)> = vec![(35, body[0].1.as_str()), (34, &seq)];
        fields.extend_from_slice(extra_header);
        fields.extend([
            (49, self.sender),
            (52, "20261125-12:00:00.000"),
            (56, self.target),
        ]);
        fields.extend(body[1..].iter().map(|(t, v)| (*t, v.as_str())));
        fix_message("FIX.4.4", &fields)
    }
}

#[derive(Default)]
struct Summary {
    counters: Option<Counters>,
    first_response: Option<(u64, u64, u64)>,
    test_request_rtt: Option<(u64, u64, u64)>,
    /// Sum of the `test_request_rtt` samples.
    test_request_rtt_sum: f64,
    /// Each session's alarms at the summary's end.
    alarms: Vec<Vec<&'static str>>,
    reasons: (BTreeMap<u32, u64>, BTreeMap<u32, u64>),
    sessions: Vec<(String, SessionCounters, u64)>,
    /// Symbol → (requests, first_response count, min, max, sum).
    by_symbol: BTreeMap<String, (u64, u64, u64, u64, f64)>,
}

impl Reporter for Summary {
    fn interval(&mut self, _: &IntervalReport<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, r: &SummaryReport<'_>) -> std::io::Result<()> {
        self.counters = Some(r.counters);
        let d = r.stages[0].dist;
        self.first_response = Some((d.count, d.min_ns, d.max_ns));
        let t = r.figures.layer().test_request_rtt.distribution();
        self.test_request_rtt = Some((t.count, t.min_ns, t.max_ns));
        self.test_request_rtt_sum = t.mean_ns * t.count as f64;
        self.alarms = r
            .figures
            .session_layer_figures(r.span.end_ns)
            .expect("measured")
            .sessions
            .iter()
            .map(|s| s.alarm_names())
            .collect();
        self.reasons = (
            r.figures.layer().session_reject_reasons.clone(),
            r.figures.layer().business_reject_reasons.clone(),
        );
        let by = r.figures.by().expect("--by 55");
        self.by_symbol = by.tags[0]
            .ranked()
            .iter()
            .map(|e| {
                let d = e
                    .stage(fixscope_core::correlate::Stage::FirstResponse)
                    .unwrap()
                    .distribution();
                (
                    e.value.clone(),
                    (
                        e.requests,
                        d.count,
                        d.min_ns,
                        d.max_ns,
                        d.mean_ns * d.count as f64,
                    ),
                )
            })
            .collect();
        self.sessions = r
            .figures
            .sessions()
            .iter()
            .map(|s| {
                (
                    format!("{}->{}", s.sender_comp_id, s.target_comp_id),
                    s.health.counters,
                    s.health.connections,
                )
            })
            .collect();
        Ok(())
    }
}

/// The wire: TCP connections one after the other between the client and the exchange.
struct Wire {
    pipeline: Pipeline,
    client_port: u16,
    cseq: u32,
    sseq: u32,
    now: u64,
    client: Side,
    server: Side,
    truth: Truth,
    /// Pending orders: ClOrdID → (request time, symbol).
    pending: BTreeMap<String, (u64, String)>,
}

impl Wire {
    fn new() -> Wire {
        Wire {
            pipeline: Pipeline::new(PipelineConfig {
                interval_ns: 0,
                by: Some(fixscope_core::group::GroupSpec::parse("55", 100).unwrap()),
                ..PipelineConfig::default()
            }),
            client_port: 40_000,
            cseq: 0,
            sseq: 0,
            now: 1_000 * MS,
            client: Side::new("CLIENT1", "EXCH"),
            server: Side::new("EXCH", "CLIENT1"),
            truth: Truth::default(),
            pending: BTreeMap::new(),
        }
    }

    fn segment(&mut self, dir: Direction, payload: &[u8], flags: u8) {
        let client = Endpoint {
            addr: "10.0.0.2".parse().unwrap(),
            port: self.client_port,
        };
        let server = Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port: 9878,
        };
        let (flow, seq, ack) = match dir {
            Direction::Request => (
                FlowKey {
                    src: client,
                    dst: server,
                },
                &mut self.cseq,
                self.sseq,
            ),
            Direction::Response => (
                FlowKey {
                    src: server,
                    dst: client,
                },
                &mut self.sseq,
                self.cseq,
            ),
        };
        let seg = Segment {
            ts_ns: self.now,
            flow,
            direction: dir,
            seq: *seq,
            ack,
            flags: TcpFlags(flags),
            payload,
            missing_tail: 0,
        };
        let advance =
            payload.len() as u32 + u32::from(flags & (TcpFlags::SYN | TcpFlags::FIN) != 0);
        *seq = seq.wrapping_add(advance);
        self.pipeline.on_segment(&seg);
    }

    fn connect(&mut self) {
        self.client_port += 1;
        self.cseq = 1_000 * u32::from(self.client_port);
        self.sseq = 7_000_000;
        self.truth.connections += 1;
        self.segment(Direction::Request, &[], TcpFlags::SYN);
        self.segment(Direction::Response, &[], TcpFlags::SYN | TcpFlags::ACK);
        self.segment(Direction::Request, &[], TcpFlags::ACK);
    }

    fn close(&mut self) {
        self.connection_ends();
        self.segment(Direction::Request, &[], TcpFlags::FIN | TcpFlags::ACK);
        self.segment(Direction::Response, &[], TcpFlags::FIN | TcpFlags::ACK);
        // The trailing ACK: never a new connection or session.
        self.segment(Direction::Request, &[], TcpFlags::ACK);
    }

    /// The truth of a connection's end: its TestRequests can no longer be answered.
    fn connection_ends(&mut self) {
        let pending = std::mem::take(&mut self.truth.test_requests_pending);
        self.truth.counters.test_requests_unanswered += pending.len() as u64;
    }

    fn tick(&mut self, ns: u64) {
        self.now += ns;
    }

    fn send(&mut self, dir: Direction, bytes: &[u8]) {
        self.segment(dir, bytes, TcpFlags::ACK | TcpFlags::PSH);
    }

    fn client_sends(&mut self, fields: &[(u32, &str)]) -> u64 {
        let (seq, bytes) = self.client.message(fields);
        self.send(Direction::Request, &bytes);
        seq
    }

    fn server_sends(&mut self, fields: &[(u32, &str)]) -> u64 {
        let (seq, bytes) = self.server.message(fields);
        self.send(Direction::Response, &bytes);
        seq
    }

    fn logon(&mut self, reset: bool) {
        let mut f = vec![(35, "A"), (98, "0"), (108, "30")];
        if reset {
            f.push((141, "Y"));
            self.client.next_seq = 1;
            self.server.next_seq = 1;
            self.client.sent.clear();
            self.server.sent.clear();
        }
        self.client_sends(&f);
        self.tick(50 * US);
        self.server_sends(&f);
        self.truth.counters.logons += 2;
        self.tick(100 * US);
    }

    fn logout(&mut self) {
        self.client_sends(&[(35, "5")]);
        self.tick(20 * US);
        self.server_sends(&[(35, "5")]);
        self.truth.counters.logouts += 2;
        self.tick(20 * US);
    }

    /// A NewOrderSingle; returns its MsgSeqNum.
    fn order(&mut self, id: &str, symbol: &str) -> u64 {
        let seq = self.client_sends(&[
            (35, "D"),
            (11, id),
            (55, symbol),
            (54, "1"),
            (38, "100"),
            (40, "2"),
            (44, "10"),
        ]);
        self.pending
            .insert(id.to_string(), (self.now, symbol.to_string()));
        self.truth.requests += 1;
        seq
    }

    /// The exchange answers `id` with `fields` (an ExecutionReport or a reject), the
    /// order's first response.
    fn answer(&mut self, id: &str, fields: &[(u32, &str)]) -> u64 {
        let (sent, symbol) = self.pending.remove(id).expect("a pending order");
        self.truth.first_response.push(self.now - sent);
        self.truth
            .by_symbol
            .entry(symbol)
            .or_default()
            .push(self.now - sent);
        self.truth.matched += 1;
        self.server_sends(fields)
    }

    fn ack(&mut self, id: &str) -> u64 {
        self.answer(
            id,
            &[
                (35, "8"),
                (11, id),
                (17, &format!("E-{id}")),
                (150, "0"),
                (39, "0"),
            ],
        )
    }

    fn test_request(&mut self, from_server: bool, answer_after: u64) {
        let tr = [(35, "1"), (112, "TEST")];
        let hb = [(35, "0"), (112, "TEST")];
        if from_server {
            self.server_sends(&tr);
            self.tick(answer_after);
            self.client_sends(&hb);
        } else {
            self.client_sends(&tr);
            self.tick(answer_after);
            self.server_sends(&hb);
        }
        self.truth.counters.test_requests += 1;
        self.truth.counters.heartbeats += 1;
        self.truth.test_request_rtt.push(answer_after);
        self.tick(10 * US);
    }

    /// A TestRequest with TestReqID `id`, answered or not later ([`Wire::heartbeat_for`]).
    fn test_request_id(&mut self, from_server: bool, id: &str) {
        let tr = [(35, "1"), (112, id)];
        if from_server {
            self.server_sends(&tr);
        } else {
            self.client_sends(&tr);
        }
        self.truth.counters.test_requests += 1;
        self.truth
            .test_requests_pending
            .push((from_server, id.to_string(), self.now));
    }

    /// A Heartbeat carrying TestReqID `id`: it answers the other side's TestRequest of that
    /// id on this connection, if there is one (else it is no round trip).
    fn heartbeat_for(&mut self, from_server: bool, id: &str) {
        let hb = [(35, "0"), (112, id)];
        if from_server {
            self.server_sends(&hb);
        } else {
            self.client_sends(&hb);
        }
        self.truth.counters.heartbeats += 1;
        let pending = &mut self.truth.test_requests_pending;
        if let Some(i) = pending
            .iter()
            .position(|(by_server, tid, _)| *by_server != from_server && tid == id)
        {
            let (_, _, sent) = pending.remove(i);
            self.truth.test_request_rtt.push(self.now - sent);
        }
    }

    fn heartbeats(&mut self) {
        self.client_sends(&[(35, "0")]);
        self.tick(5 * US);
        self.server_sends(&[(35, "0")]);
        self.truth.counters.heartbeats += 2;
        self.tick(5 * US);
    }

    fn finish(mut self) -> (Summary, Truth) {
        let mut s = Summary::default();
        self.pipeline.finish(&[], &mut s).unwrap();
        (s, self.truth)
    }
}

/// The conversation; `with_reset` adds the hard reset at the end.
fn conversation(with_reset: bool) -> (Summary, Truth) {
    let mut w = Wire::new();
    w.connect();
    w.logon(false);
    // 20 orders, each acked 40 + i µs later (and some filled).
    for i in 0..20u64 {
        let id = format!("ORD-{i}");
        w.order(&id, ["AAPL", "MSFT", "IBM"][i as usize % 3]);
        w.tick(40 * US + i * US);
        w.ack(&id);
        if i % 2 == 0 {
            w.tick(10 * US);
            w.server_sends(&[(35, "8"), (11, &id), (150, "F"), (39, "2")]);
        }
        w.tick(200 * US);
    }
    // TestRequests both ways, answered at known delays (QuickFIX's 112=TEST every time).
    w.test_request(true, 700 * US);
    w.test_request(false, 1_300 * US);
    w.test_request(true, 250 * US);
    w.heartbeats();
    // Rejects: a session Reject naming the order by RefSeqNum, a BusinessMessageReject,
    // an order reject (150=8), a cancel reject.
    let seq = w.order("BAD-1", "AAPL");
    w.tick(30 * US);
    let s = seq.to_string();
    w.answer(
        "BAD-1",
        &[(35, "3"), (45, &s), (371, "38"), (372, "D"), (373, "1")],
    );
    w.truth.counters.session_rejects += 1;
    *w.truth.session_reject_reasons.entry(1).or_default() += 1;
    w.tick(100 * US);
    let seq = w.order("BAD-2", "MSFT");
    w.tick(35 * US);
    let s = seq.to_string();
    w.answer(
        "BAD-2",
        &[(35, "j"), (45, &s), (372, "D"), (379, "BAD-2"), (380, "4")],
    );
    w.truth.counters.business_rejects += 1;
    *w.truth.business_reject_reasons.entry(4).or_default() += 1;
    w.tick(100 * US);
    w.order("BAD-3", "IBM");
    w.tick(45 * US);
    w.answer(
        "BAD-3",
        &[(35, "8"), (11, "BAD-3"), (150, "8"), (39, "8"), (103, "0")],
    );
    w.truth.counters.order_rejects += 1;
    w.tick(100 * US);
    w.client_sends(&[(35, "F"), (11, "CXL-1"), (41, "ORD-1"), (55, "MSFT")]);
    w.pending.insert("CXL-1".into(), (w.now, "MSFT".into()));
    w.truth.requests += 1;
    w.tick(33 * US);
    w.answer(
        "CXL-1",
        &[
            (35, "9"),
            (11, "CXL-1"),
            (41, "ORD-1"),
            (39, "2"),
            (434, "1"),
        ],
    );
    w.truth.counters.cancel_rejects += 1;
    w.tick(100 * US);

    // The connection dies: the client's engine has a heartbeat (seq h), orders and
    // R-3 on the wire (captured; R-3 never answered before the drop), then
    // stored but never written.
    let h = w.client_sends(&[(35, "0")]);
    w.truth.counters.heartbeats += 1;
    w.tick(10 * US);
    for id in ["R-1", "R-2"] {
        w.order(id, "AAPL");
        w.tick(60 * US);
        w.ack(id);
        w.tick(50 * US);
    }
    let r3 = w.order("R-3", "IBM");
    w.tick(20 * US);
    let mut lost = Vec::new();
    for id in ["R-4", "R-5"] {
        let (seq, _) = w.client.message(&[
            (35, "D"),
            (11, id),
            (55, "MSFT"),
            (54, "1"),
            (38, "5"),
            (40, "1"),
        ]);
        lost.push((id, seq));
    }
    let rst_at = w.now;
    w.connection_ends();
    w.segment(Direction::Request, &[], TcpFlags::RST);
    w.tick(5 * MS);

    // Reconnect: same CompIDs, same epoch. The client's Logon jumps past: the
    // exchange saw a gap (this is one).
    w.connect();
    w.client_sends(&[(35, "A"), (98, "0"), (108, "30")]);
    w.truth.counters.sequence_gaps += 1;
    w.tick(50 * US);
    w.server_sends(&[(35, "A"), (98, "0"), (108, "30")]);
    w.truth.counters.logons += 2;
    w.tick(50 * US);
    let begin = h.to_string();
    w.server_sends(&[(35, "2"), (7, &begin), (16, "0")]);
    w.truth.counters.resend_requests += 1;
    w.tick(30 * US);
    // The resend: the heartbeat gap-filled, R-1..R-3 replayed (seen: replays), R-4 and R-5
    // PossDup but never seen: first sightings, real orders from now.
    let gap_fill = w.client.encode(
        h,
        &[
            (35, "4".into()),
            (123, "Y".into()),
            (36, (h + 1).to_string()),
        ],
        &[(43, "Y"), (122, "20261125-12:00:00.000")],
    );
    w.send(Direction::Request, &gap_fill);
    w.truth.counters.gap_fills += 1;
    for seq in h + 1..=r3 {
        let bytes = w.client.resend(seq);
        w.send(Direction::Request, &bytes);
        w.truth.counters.possdup_requests += 1;
        w.tick(5 * US);
    }
    for (id, seq) in &lost {
        let bytes = w.client.resend(*seq);
        w.send(Direction::Request, &bytes);
        w.pending.insert(id.to_string(), (w.now, "MSFT".into()));
        w.truth.requests += 1;
        w.tick(5 * US);
    }
    // The exchange answers R-3 (pending since before the drop: its latency runs from then)
    // and; it also replays its own ack of R-2, which the client asked for.
    assert!(w.now - rst_at < 100 * MS, "well within -t");
    w.tick(70 * US);
    for id in ["R-3", "R-4", "R-5"] {
        w.ack(id);
        w.tick(15 * US);
    }
    let r2_ack = *w
        .server
        .sent
        .iter()
        .rev()
        .find(|(_, f)| f.iter().any(|(t, v)| *t == 11 && v == "R-2"))
        .unwrap()
        .0;
    let bytes = w.server.resend(r2_ack);
    w.send(Direction::Response, &bytes);
    w.truth.counters.possdup_responses += 1;
    w.tick(100 * US);
    // PossResend (97=Y, a new MsgSeqNum): of ORD-4 (done long ago) a replay; of a ClOrdID
    // never seen, the order it is.
    w.client_sends(&[
        (35, "D"),
        (97, "Y"),
        (11, "ORD-4"),
        (55, "IBM"),
        (54, "1"),
        (38, "100"),
        (40, "1"),
    ]);
    w.truth.counters.possdup_requests += 1;
    w.tick(100 * US);
    let (_, bytes) = w.client.message(&[
        (35, "D"),
        (97, "Y"),
        (11, "PR-1"),
        (55, "IBM"),
        (54, "1"),
        (38, "1"),
        (40, "1"),
    ]);
    w.send(Direction::Request, &bytes);
    w.pending.insert("PR-1".into(), (w.now, "IBM".into()));
    w.truth.requests += 1;
    w.tick(80 * US);
    w.ack("PR-1");
    w.tick(100 * US);
    w.heartbeats();
    w.logout();
    w.close();
    w.tick(10 * MS);

    if with_reset {
        // Next day: a hard reset. ClOrdIDs restart too: ORD-1 (a working order of the old
        // epoch, acked and never filled) again is a new order, no duplicate.
        w.connect();
        w.logon(true);
        w.order("ORD-1", "AAPL");
        w.tick(90 * US);
        w.ack("ORD-1");
        w.tick(100 * US);
        w.logout();
        w.close();
    }
    w.finish()
}

fn check(with_reset: bool) {
    let (s, truth) = conversation(with_reset);
    let c = s.counters.expect("a summary");
    assert_eq!(c.session, truth.counters, "every session-layer counter");
    let k = &c.correlation;
    assert_eq!(k.requests, truth.requests, "replays are not requests");
    assert_eq!(k.matched, truth.matched);
    // No alarm for a recovery.
    assert_eq!((k.timed_out, k.late), (0, 0));
    assert_eq!(c.unanswered, 0, "{c:?}");
    assert_eq!(k.unanswered_closed, 0);
    assert_eq!((k.duplicate_requests, k.unmatched_responses), (0, 0));
    assert_eq!(k.requests, k.matched + c.unanswered);
    let (count, min, max) = s.first_response.unwrap();
    assert_eq!(count, truth.first_response.len() as u64);
    assert_eq!(min, *truth.first_response.iter().min().unwrap());
    assert_eq!(max, *truth.first_response.iter().max().unwrap());
    let (count, min, max) = s.test_request_rtt.unwrap();
    assert_eq!(count, truth.test_request_rtt.len() as u64);
    assert_eq!(min, *truth.test_request_rtt.iter().min().unwrap());
    assert_eq!(max, *truth.test_request_rtt.iter().max().unwrap());
    assert_eq!(s.reasons.0, truth.session_reject_reasons);
    assert_eq!(s.reasons.1, truth.business_reject_reasons);
    // One session, on every connection; its own counters are the totals.
    assert_eq!(c.connections, truth.connections);
    assert_eq!(s.sessions.len(), 1, "{:?}", s.sessions);
    assert_eq!(s.sessions[0].0, "CLIENT1->EXCH");
    assert_eq!(s.sessions[0].1, truth.counters);
    assert_eq!(s.sessions[0].2, truth.connections);
    // --by 55: per symbol, the latencies the script measured.
    let expected: BTreeMap<String, (u64, u64, u64, u64, f64)> = truth
        .by_symbol
        .iter()
        .map(|(sym, v)| {
            let n = v.len() as u64;
            let sum: u64 = v.iter().sum();
            (
                sym.clone(),
                (
                    n,
                    n,
                    *v.iter().min().unwrap(),
                    *v.iter().max().unwrap(),
                    sum as f64,
                ),
            )
        })
        .collect();
    assert_eq!(s.by_symbol.len(), expected.len(), "{:?}", s.by_symbol);
    for (sym, (requests, count, min, max, sum)) in &expected {
        let got = s.by_symbol[sym];
        assert_eq!(
            (got.0, got.1, got.2, got.3),
            (*requests, *count, *min, *max),
            "{sym}"
        );
        assert!((got.4 - sum).abs() < 1.0, "{sym}: sum {} vs {sum}", got.4);
    }
}

#[test]
fn a_recovering_session_raises_no_alarm_and_counts_what_was_sent() {
    check(false);
}

#[test]
fn a_hard_reset_starts_an_epoch_and_reused_clordids_are_new_orders() {
    check(true);
}

/// The session layer's TestRequest figures against the truth: `test_request_rtt` sample by
/// sample (count, min, max, sum), the unanswered ones, and no alarm at the end.
fn check_test_requests(s: &Summary, truth: &Truth) {
    let c = s.counters.expect("a summary");
    assert_eq!(c.session, truth.counters, "every session-layer counter");
    let rtt = &truth.test_request_rtt;
    let (count, min, max) = s.test_request_rtt.unwrap();
    assert_eq!(
        (count, min, max),
        (
            rtt.len() as u64,
            *rtt.iter().min().unwrap(),
            *rtt.iter().max().unwrap()
        ),
        "test_request_rtt: count, min, max"
    );
    let sum: u64 = rtt.iter().sum();
    assert!(
        (s.test_request_rtt_sum - sum as f64).abs() < 1.0,
        "test_request_rtt sum {} vs {sum}",
        s.test_request_rtt_sum
    );
    assert_eq!(s.alarms, vec![Vec::<&str>::new()], "no alarm at the end");
}

/// #47 item 6: a TestRequest (112=A) the exchange never answers before the client drops the
/// connection, then 35 s later the next connection of the session, whose TestRequest 112=B
/// is answered after 60 µs. The next connection's Heartbeat is no answer to A: one round
/// trip of 60 µs, A unanswered, and no alarm (B was answered).
#[test]
fn a_test_request_unanswered_before_a_disconnect_is_not_paired_with_the_next_connection() {
    let mut w = Wire::new();
    w.connect();
    w.logon(false);
    w.test_request_id(false, "A");
    w.tick(10 * MS);
    w.logout();
    w.close();
    w.tick(35_000 * MS);
    w.connect();
    w.logon(false);
    w.test_request_id(false, "B");
    w.tick(60 * US);
    w.heartbeat_for(true, "B");
    // The session lives on (past the 30 s patience) with plain heartbeats.
    for _ in 0..2 {
        w.tick(20_000 * MS);
        w.heartbeats();
    }
    let (s, truth) = w.finish();
    assert_eq!(truth.test_request_rtt, vec![60 * US]);
    assert_eq!(truth.counters.test_requests_unanswered, 1);
    check_test_requests(&s, &truth);
}

/// Two TestRequests outstanding at once, answered in the other order, and a Heartbeat with
/// a TestReqID nobody asked for (no round trip): each pairs by its own 112.
#[test]
fn outstanding_test_requests_pair_by_their_test_req_id() {
    let mut w = Wire::new();
    w.connect();
    w.logon(false);
    w.test_request_id(false, "X");
    w.tick(10 * US);
    w.test_request_id(false, "Y");
    w.tick(10 * US);
    w.heartbeat_for(true, "NOBODY");
    w.tick(20 * US);
    w.heartbeat_for(true, "Y");
    w.tick(50 * US);
    w.heartbeat_for(true, "X");
    w.tick(100 * US);
    // The exchange asks too, with QuickFIX's 112=TEST twice: first in, first out.
    w.test_request_id(true, "TEST");
    w.tick(30 * US);
    w.test_request_id(true, "TEST");
    w.tick(70 * US);
    w.heartbeat_for(false, "TEST");
    w.tick(5 * US);
    w.heartbeat_for(false, "TEST");
    w.tick(100 * US);
    w.logout();
    w.close();
    let (s, truth) = w.finish();
    assert_eq!(
        truth.test_request_rtt,
        vec![30 * US, 90 * US, 100 * US, 75 * US]
    );
    assert_eq!(truth.counters.test_requests_unanswered, 0);
    check_test_requests(&s, &truth);
}

/// The other ends of a connection: an RST, and a new Logon of the session on a new
/// connection while the capture never saw the old one close. Each TestRequest waiting then
/// is unanswered once; only the last connection's is answered.
#[test]
fn a_reset_or_the_sessions_next_logon_ends_the_connections_test_requests() {
    let mut w = Wire::new();
    w.connect();
    w.logon(false);
    w.test_request_id(true, "R1");
    w.tick(1_000 * MS);
    w.connection_ends();
    w.segment(Direction::Request, &[], TcpFlags::RST);
    w.tick(2_000 * MS);
    w.connect();
    w.logon(false);
    w.test_request_id(false, "L1");
    w.tick(1_000 * MS);
    // Its FIN never captured: the next connection's Logon ends it.
    w.connection_ends();
    w.connect();
    w.logon(false);
    w.test_request_id(false, "L1");
    w.tick(45 * US);
    w.heartbeat_for(true, "L1");
    w.tick(100 * US);
    w.logout();
    w.close();
    let (s, truth) = w.finish();
    assert_eq!(truth.test_request_rtt, vec![45 * US]);
    assert_eq!(truth.counters.test_requests_unanswered, 2);
    check_test_requests(&s, &truth);
}
