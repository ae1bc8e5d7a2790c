//! Each protocol's session and order messages, built with the protocol crates' encoders and
//! read with their decoders: the exchange's side in [`HostSession`], the client's in
//! [`ClientSession`]. Orders are keyed as fixscope keys them: OUCH 4.2 by Order Token,
//! OUCH 5.0 by UserRefNum, iLink 3 by OrderRequestID; [`OrderKey::text`] is the key as
//! fixscope prints it (the truth files' `clordid`).

use fixscope_core::clock::realtime_ns;
use fixscope_ilink3::messages::{self as ilink, Report, Request};
use fixscope_ilink3::{encode as ilink_encode, schema};
use fixscope_ouch::encode as ouch_encode;
use fixscope_ouch::soupbin::{self, packet_type, trim_spaces, SoupPacket};
use fixscope_ouch::{ouch42, ouch50};

use super::BinaryProtocol;

/// Shares (contracts) of every order the client sends.
pub const ORDER_QTY: u32 = 100;
/// The SoupBinTCP session the exchange logs clients into.
pub const SOUP_SESSION: &[u8] = b"SIMSESS001";
/// The iLink 3 firm of the client's sessions (Firm is 5 characters).
pub const FIRM: &[u8] = b"SIMFM";
/// Client sessions a SoupBinTCP run can name apart (usernames are 6 characters: SIM001..).
pub const MAX_SOUP_SESSIONS: usize = 999;
const SYMBOL: &[u8] = b"FXSC";
const OUCH42_PRICE: u32 = 1_895_000;
const OUCH50_PRICE: u64 = 1_895_000;
const ILINK_PRICE: i64 = 4_512_250_000_000;
const SECURITY_ID: i64 = 42_000;
const NS_PER_DAY: u64 = 86_400_000_000_000;

/// An order's key on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderKey {
    /// OUCH 4.2's Order Token, space padded.
    Token([u8; 14]),
    /// OUCH 5.0's UserRefNum.
    UserRef(u32),
    /// iLink 3's OrderRequestID.
    Request(u64),
}

impl OrderKey {
    /// The key as fixscope prints it: the token without its padding, or the number.
    pub fn text(&self) -> String {
        match self {
            OrderKey::Token(t) => String::from_utf8_lossy(trim_spaces(t)).into_owned(),
            OrderKey::UserRef(n) => n.to_string(),
            OrderKey::Request(n) => n.to_string(),
        }
    }

    /// The key of order `n` (from 0) of client session `session` (from 0): unique across
    /// sessions but for OUCH 5.0's, whose UserRefNums count from 1 per login as the spec
    /// asks.
    pub fn of(protocol: BinaryProtocol, session: usize, n: u64) -> OrderKey {
        match protocol {
            BinaryProtocol::Ouch42 => {
                let mut t = [b' '; 14];
                let s = format!("S{}-{:08}", session + 1, n + 1);
                let len = s.len().min(14);
                t[..len].copy_from_slice(&s.as_bytes()[..len]);
                OrderKey::Token(t)
            }
            BinaryProtocol::Ouch50 => OrderKey::UserRef(n as u32 + 1),
            BinaryProtocol::Ilink3 => {
                OrderKey::Request((session as u64 + 1) * 1_000_000_000 + n + 1)
            }
        }
    }
}

/// OUCH's timestamps: nanoseconds since midnight (UTC here).
fn ns_since_midnight() -> u64 {
    realtime_ns() % NS_PER_DAY
}

/// What a client sent, as the exchange reads it.
#[derive(Debug)]
pub enum FromClient {
    /// iLink 3 Negotiate: answered, the login's first step.
    Negotiate,
    /// SoupBinTCP Login Request, iLink 3 Establish: answered, the session is logged in.
    Login,
    Order(OrderIn),
    /// SoupBinTCP Logout Request, iLink 3 Terminate: the session ends.
    Logout,
    /// Heartbeats, Sequence, anything the simulator does not act on.
    Other,
}

/// An order the exchange took.
#[derive(Clone, Debug)]
pub struct OrderIn {
    pub key: OrderKey,
    pub qty: u32,
    /// The exchange's id of it (OUCH's Order Reference Number, iLink 3's OrderID).
    pub order_id: u64,
    side: u8,
    cl_ord_id: Vec<u8>,
}

/// The exchange's side of one connection: its numbering and ids.
pub struct HostSession {
    protocol: BinaryProtocol,
    /// iLink 3: the UUID the client negotiated.
    uuid: u64,
    /// iLink 3: SeqNum of CME's next business message.
    next_seq: u32,
    next_order_id: u64,
    next_match: u64,
}

impl HostSession {
    pub fn new(protocol: BinaryProtocol, first_order_id: u64) -> Self {
        HostSession {
            protocol,
            uuid: 0,
            next_seq: 1,
            next_order_id: first_order_id,
            next_match: first_order_id,
        }
    }

    /// Reads one message of the client; for a login, `answer` gets what to write back.
    pub fn read(&mut self, frame: &[u8], answer: &mut Vec<u8>) -> FromClient {
        match self.protocol {
            BinaryProtocol::Ouch42 | BinaryProtocol::Ouch50 => self.read_soup(frame, answer),
            BinaryProtocol::Ilink3 => self.read_ilink(frame, answer),
        }
    }

    fn take_order_id(&mut self) -> u64 {
        self.next_order_id += 1;
        self.next_order_id - 1
    }

    fn read_soup(&mut self, frame: &[u8], answer: &mut Vec<u8>) -> FromClient {
        let message = match soupbin::decode(frame) {
            Ok(SoupPacket::LoginRequest { .. }) => {
                answer.extend_from_slice(&ouch_encode::login_accepted(SOUP_SESSION, 1));
                return FromClient::Login;
            }
            Ok(SoupPacket::LogoutRequest) => return FromClient::Logout,
            Ok(SoupPacket::UnsequencedData { message }) => message,
            _ => return FromClient::Other,
        };
        let (key, qty, side, cl_ord_id) = match self.protocol {
            BinaryProtocol::Ouch42 => match ouch42::decode_request(message) {
                Ok(ouch42::Message::EnterOrder(o)) => {
                    let Ok(token) = <[u8; 14]>::try_from(o.token) else {
                        return FromClient::Other;
                    };
                    (OrderKey::Token(token), o.shares, o.side, Vec::new())
                }
                _ => return FromClient::Other,
            },
            _ => match ouch50::decode_request(message) {
                Ok(ouch50::Message::EnterOrder(o)) => (
                    OrderKey::UserRef(o.user_ref_num),
                    o.quantity,
                    o.side,
                    o.cl_ord_id.to_vec(),
                ),
                _ => return FromClient::Other,
            },
        };
        FromClient::Order(OrderIn {
            key,
            qty,
            order_id: self.take_order_id(),
            side,
            cl_ord_id,
        })
    }

    fn read_ilink(&mut self, frame: &[u8], answer: &mut Vec<u8>) -> FromClient {
        match ilink::decode(frame) {
            Ok(ilink::Message::Negotiate(s)) => {
                self.uuid = s.uuid;
                let ts = s.request_timestamp_ns.unwrap_or(0);
                answer.extend_from_slice(&ilink_encode::negotiation_response(s.uuid, ts));
                FromClient::Negotiate
            }
            Ok(ilink::Message::Establish(s)) => {
                self.uuid = s.uuid;
                let ts = s.request_timestamp_ns.unwrap_or(0);
                answer.extend_from_slice(&ilink_encode::establishment_ack(
                    s.uuid,
                    ts,
                    self.next_seq,
                ));
                FromClient::Login
            }
            Ok(ilink::Message::Terminate(_)) => FromClient::Logout,
            Ok(ilink::Message::NewOrder(r)) => FromClient::Order(OrderIn {
                key: OrderKey::Request(r.order_request_id),
                qty: r.order_qty.unwrap_or(0),
                order_id: self.take_order_id(),
                side: r.side.unwrap_or(1),
                cl_ord_id: r.cl_ord_id.to_vec(),
            }),
            _ => FromClient::Other,
        }
    }

    fn report(&mut self, template_id: u16, o: &OrderIn, leaves: u32, last: Option<u32>) -> Vec<u8> {
        let seq_num = self.next_seq;
        self.next_seq += 1;
        let now = realtime_ns();
        let OrderKey::Request(id) = o.key else {
            unreachable!("iLink 3 orders are keyed by OrderRequestID")
        };
        ilink_encode::report(&Report {
            template_id,
            seq_num,
            uuid: self.uuid,
            cl_ord_id: &o.cl_ord_id,
            order_id: Some(o.order_id),
            order_request_id: Some(id),
            poss_retrans: false,
            sending_time_ns: Some(now),
            transact_time_ns: Some(now),
            leaves_qty: Some(leaves),
            cum_qty: Some(o.qty - leaves),
            last_qty: last,
            ord_status: last.map(|_| if leaves == 0 { 2 } else { 1 }),
            delay_to_time_ns: None,
        })
    }

    /// The order's acknowledgement: OUCH's Accepted, iLink 3's ExecutionReportNew522.
    pub fn ack(&mut self, o: &OrderIn) -> Vec<u8> {
        match (self.protocol, o.key) {
            (BinaryProtocol::Ouch42, OrderKey::Token(token)) => {
                ouch_encode::ouch42_packet(&ouch42::Message::Accepted(ouch42::Accepted {
                    timestamp_ns: ns_since_midnight(),
                    token: &token,
                    side: o.side,
                    shares: o.qty,
                    stock: SYMBOL,
                    price: OUCH42_PRICE,
                    time_in_force: 99_999,
                    firm: b"SIMF",
                    display: b'Y',
                    order_reference_number: o.order_id,
                    capacity: b'A',
                    iso_eligibility: b'N',
                    min_quantity: 0,
                    cross_type: b'N',
                    order_state: b'L',
                    bbo_weight_indicator: b' ',
                }))
            }
            (BinaryProtocol::Ouch50, OrderKey::UserRef(user_ref_num)) => {
                ouch_encode::ouch50_packet(&ouch50::Message::Accepted(ouch50::Accepted {
                    timestamp_ns: ns_since_midnight(),
                    user_ref_num,
                    side: o.side,
                    quantity: o.qty,
                    symbol: SYMBOL,
                    price: OUCH50_PRICE,
                    time_in_force: b'0',
                    display: b'Y',
                    order_reference_number: o.order_id,
                    capacity: b'A',
                    iso_eligibility: b'N',
                    cross_type: b'N',
                    order_state: b'L',
                    cl_ord_id: &o.cl_ord_id,
                    appendage: ouch50::Appendage { bytes: &[] },
                }))
            }
            _ => self.report(schema::execution_report_new_522::ID, o, o.qty, None),
        }
    }

    /// A fill of `qty` leaving `leaves`: OUCH's Executed, iLink 3's
    /// ExecutionReportTradeOutright525.
    pub fn fill(&mut self, o: &OrderIn, qty: u32, leaves: u32) -> Vec<u8> {
        let match_number = self.next_match;
        self.next_match += 1;
        match (self.protocol, o.key) {
            (BinaryProtocol::Ouch42, OrderKey::Token(token)) => {
                ouch_encode::ouch42_packet(&ouch42::Message::Executed {
                    timestamp_ns: ns_since_midnight(),
                    token: &token,
                    executed_shares: qty,
                    execution_price: OUCH42_PRICE,
                    liquidity_flag: b'A',
                    match_number,
                })
            }
            (BinaryProtocol::Ouch50, OrderKey::UserRef(user_ref_num)) => {
                ouch_encode::ouch50_packet(&ouch50::Message::Executed {
                    timestamp_ns: ns_since_midnight(),
                    user_ref_num,
                    quantity: qty,
                    price: OUCH50_PRICE,
                    liquidity_flag: b'A',
                    match_number,
                    appendage: ouch50::Appendage { bytes: &[] },
                })
            }
            _ => self.report(
                schema::execution_report_trade_outright_525::ID,
                o,
                leaves,
                Some(qty),
            ),
        }
    }
}

/// What the exchange sent, as the client reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum FromHost {
    /// SoupBinTCP Login Accepted, iLink 3 NegotiationResponse or EstablishmentAck.
    LoggedIn,
    /// SoupBinTCP Login Rejected, iLink 3 NegotiationReject, EstablishmentReject or
    /// Terminate.
    Refused(String),
    Ack(OrderKey),
    /// A fill of `qty`; `leaves` where the protocol says (iLink 3).
    Fill {
        key: OrderKey,
        qty: u32,
        leaves: Option<u32>,
    },
    /// An order refused (OUCH Rejected, an iLink 3 reject report).
    Rejected(OrderKey),
    Other,
}

/// The client's side of one session.
pub struct ClientSession {
    protocol: BinaryProtocol,
    /// OUCH: the Login Request's username.
    username: Vec<u8>,
    /// iLink 3: this session's UUID.
    uuid: u64,
    /// iLink 3: SeqNum of the client's next business message.
    next_seq: u32,
}

impl ClientSession {
    /// Session `index` (from 0): OUCH username SIM001, SIM002, ..., iLink 3 a UUID of its own
    /// (µs since 1970 at `base_us`, plus the index).
    pub fn new(protocol: BinaryProtocol, index: usize, base_us: u64) -> Self {
        ClientSession {
            protocol,
            username: format!("SIM{:03}", index + 1).into_bytes(),
            uuid: base_us + index as u64,
            next_seq: 1,
        }
    }

    /// The login's steps: each message is written, then its answer awaited (OUCH: Login
    /// Request; iLink 3: Negotiate, then Establish).
    pub fn login_steps(&self) -> Vec<Vec<u8>> {
        match self.protocol {
            BinaryProtocol::Ilink3 => vec![
                ilink_encode::negotiate(self.uuid, FIRM, realtime_ns()),
                ilink_encode::establish(self.uuid, FIRM, realtime_ns(), self.next_seq),
            ],
            _ => vec![ouch_encode::login_request(
                &self.username,
                b"",
                b"",
                Some(1),
            )],
        }
    }

    /// The end of the session: SoupBinTCP Logout Request, iLink 3 Terminate.
    pub fn logout(&self) -> Vec<u8> {
        match self.protocol {
            BinaryProtocol::Ilink3 => ilink_encode::terminate(self.uuid, realtime_ns(), 0),
            _ => ouch_encode::packet(packet_type::LOGOUT_REQUEST, &[]),
        }
    }

    /// A new order of [`ORDER_QTY`] under `key`.
    pub fn order(&mut self, key: OrderKey) -> Vec<u8> {
        match key {
            OrderKey::Token(token) => {
                ouch_encode::ouch42_packet(&ouch42::Message::EnterOrder(ouch42::EnterOrder {
                    token: &token,
                    side: b'B',
                    shares: ORDER_QTY,
                    stock: SYMBOL,
                    price: OUCH42_PRICE,
                    time_in_force: 99_999,
                    firm: b"SIMF",
                    display: b'Y',
                    capacity: b'A',
                    iso_eligibility: b'N',
                    min_quantity: 0,
                    cross_type: b'N',
                    customer_type: b'R',
                }))
            }
            OrderKey::UserRef(user_ref_num) => {
                ouch_encode::ouch50_packet(&ouch50::Message::EnterOrder(ouch50::EnterOrder {
                    user_ref_num,
                    side: b'B',
                    quantity: ORDER_QTY,
                    symbol: SYMBOL,
                    price: OUCH50_PRICE,
                    time_in_force: b'0',
                    display: b'Y',
                    capacity: b'A',
                    iso_eligibility: b'N',
                    cross_type: b'N',
                    cl_ord_id: b"SIMCL",
                    appendage: ouch50::Appendage { bytes: &[] },
                }))
            }
            OrderKey::Request(order_request_id) => {
                let seq_num = self.next_seq;
                self.next_seq += 1;
                ilink_encode::new_order(&Request {
                    seq_num,
                    order_request_id,
                    cl_ord_id: b"SIMCL",
                    order_id: None,
                    sending_time_ns: Some(realtime_ns()),
                    security_id: Some(SECURITY_ID),
                    side: Some(1),
                    order_qty: Some(ORDER_QTY),
                    price: Some(ILINK_PRICE),
                })
            }
        }
    }

    /// Reads one message of the exchange.
    pub fn read(&self, frame: &[u8]) -> FromHost {
        match self.protocol {
            BinaryProtocol::Ilink3 => read_ilink_host(frame),
            p => read_soup_host(p, frame),
        }
    }
}

fn read_soup_host(protocol: BinaryProtocol, frame: &[u8]) -> FromHost {
    let message = match soupbin::decode(frame) {
        Ok(SoupPacket::LoginAccepted { .. }) => return FromHost::LoggedIn,
        Ok(SoupPacket::LoginRejected { reason }) => {
            return FromHost::Refused(format!("Login Rejected ({})", reason as char))
        }
        Ok(SoupPacket::SequencedData { message }) => message,
        _ => return FromHost::Other,
    };
    let token = |t: &[u8]| <[u8; 14]>::try_from(t).map(OrderKey::Token).ok();
    if protocol == BinaryProtocol::Ouch42 {
        return match ouch42::decode_response(message) {
            Ok(ouch42::Message::Accepted(a)) => {
                token(a.token).map_or(FromHost::Other, FromHost::Ack)
            }
            Ok(ouch42::Message::Executed {
                token: t,
                executed_shares,
                ..
            }) => token(t).map_or(FromHost::Other, |key| FromHost::Fill {
                key,
                qty: executed_shares,
                leaves: None,
            }),
            Ok(ouch42::Message::Rejected { token: t, .. }) => {
                token(t).map_or(FromHost::Other, FromHost::Rejected)
            }
            _ => FromHost::Other,
        };
    }
    match ouch50::decode_response(message) {
        Ok(ouch50::Message::Accepted(a)) => FromHost::Ack(OrderKey::UserRef(a.user_ref_num)),
        Ok(ouch50::Message::Executed {
            user_ref_num,
            quantity,
            ..
        }) => FromHost::Fill {
            key: OrderKey::UserRef(user_ref_num),
            qty: quantity,
            leaves: None,
        },
        Ok(ouch50::Message::Rejected { user_ref_num, .. }) => {
            FromHost::Rejected(OrderKey::UserRef(user_ref_num))
        }
        _ => FromHost::Other,
    }
}

fn read_ilink_host(frame: &[u8]) -> FromHost {
    use schema::{
        execution_report_new_522 as new, execution_report_reject_523 as reject,
        execution_report_trade_outright_525 as trade,
    };
    match ilink::decode(frame) {
        Ok(ilink::Message::NegotiationResponse(_) | ilink::Message::EstablishmentAck(_)) => {
            FromHost::LoggedIn
        }
        Ok(ilink::Message::NegotiationReject(s) | ilink::Message::EstablishmentReject(s)) => {
            FromHost::Refused(format!("rejected, error codes {:?}", s.error_codes))
        }
        Ok(ilink::Message::Terminate(s)) => {
            FromHost::Refused(format!("Terminate, error codes {:?}", s.error_codes))
        }
        Ok(ilink::Message::Report(r)) => {
            let Some(id) = r.order_request_id else {
                return FromHost::Other;
            };
            let key = OrderKey::Request(id);
            match r.template_id {
                new::ID => FromHost::Ack(key),
                trade::ID => FromHost::Fill {
                    key,
                    qty: r.last_qty.unwrap_or(0),
                    leaves: r.leaves_qty,
                },
                reject::ID => FromHost::Rejected(key),
                _ => FromHost::Other,
            }
        }
        _ => FromHost::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every protocol's order, ack and fills as the other side reads them.
    #[test]
    fn orders_and_answers_round_trip() {
        for p in [
            BinaryProtocol::Ouch42,
            BinaryProtocol::Ouch50,
            BinaryProtocol::Ilink3,
        ] {
            let mut client = ClientSession::new(p, 1, 1_700_000_000_000_000);
            let mut host = HostSession::new(p, 1);
            let mut answer = Vec::new();
            for step in client.login_steps() {
                answer.clear();
                assert!(matches!(
                    host.read(&step, &mut answer),
                    FromClient::Login | FromClient::Negotiate
                ));
                assert_eq!(client.read(&answer), FromHost::LoggedIn, "{p}");
            }
            let key = OrderKey::of(p, 1, 6);
            let FromClient::Order(o) = host.read(&client.order(key), &mut answer) else {
                panic!("{p}: not an order");
            };
            assert_eq!((o.key, o.qty), (key, ORDER_QTY), "{p}");
            assert_eq!(client.read(&host.ack(&o)), FromHost::Ack(key), "{p}");
            let leaves = (p == BinaryProtocol::Ilink3).then_some(0);
            assert_eq!(
                client.read(&host.fill(&o, ORDER_QTY, 0)),
                FromHost::Fill {
                    key,
                    qty: ORDER_QTY,
                    leaves
                },
                "{p}"
            );
            assert!(matches!(
                host.read(&client.logout(), &mut answer),
                FromClient::Logout
            ));
        }
        assert_eq!(
            OrderKey::of(BinaryProtocol::Ouch42, 1, 6).text(),
            "S2-00000007"
        );
        assert_eq!(OrderKey::of(BinaryProtocol::Ouch50, 1, 6).text(), "7");
        assert_eq!(
            OrderKey::of(BinaryProtocol::Ilink3, 1, 6).text(),
            "2000000007"
        );
    }
}
