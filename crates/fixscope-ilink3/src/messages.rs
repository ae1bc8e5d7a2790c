//! The iLink 3 messages the crate reads, decoded from a checked frame by the schema's
//! generated layouts ([`crate::schema`]): the FIXP session layer (Negotiate500 …
//! NotApplied513), the three order requests (514, 515, 516), BusinessReject521 and the
//! execution reports (522 … 536, 564, 565). Any other template of the schema decodes as
//! [`Message::Other`].

use crate::sbe::{DecodeError, Frame};
use crate::schema::{self, Field, ReportLayout, RequestLayout};

/// Which end sends a message: the client (the firm's application) or the host (CME).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Client,
    Host,
}

/// A session-layer message's fields (those of them its template has).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionFields<'a> {
    pub uuid: u64,
    /// RequestTimestamp: ns since 1970 (CME recommends).
    pub request_timestamp_ns: Option<u64>,
    /// Firm (Negotiate, Establish).
    pub firm: &'a [u8],
    /// NextSeqNo (Establish, EstablishmentAck, EstablishmentReject, Sequence).
    pub next_seq_no: Option<u32>,
    /// PreviousSeqNo, PreviousUUID (EstablishmentAck): CME's last message before.
    pub previous_seq_no: Option<u32>,
    pub previous_uuid: Option<u64>,
    /// LastUUID (RetransmitRequest, Retransmission, RetransmitReject): a previous
    /// session's UUID, when the retransmission is of one.
    pub last_uuid: Option<u64>,
    /// FromSeqNo, MsgCount (RetransmitRequest, Retransmission, NotApplied).
    pub from_seq_no: Option<u32>,
    pub msg_count: Option<u32>,
    /// ErrorCodes (the rejects, Terminate).
    pub error_codes: Option<u16>,
}

/// An order request (NewOrderSingle514, OrderCancelReplaceRequest515,
/// OrderCancelRequest516). Client messages carry no UUID: the connection's
/// Establish names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request<'a> {
    pub seq_num: u32,
    pub order_request_id: u64,
    pub cl_ord_id: &'a [u8],
    /// The order a replace or cancel names (CME's OrderID; null on a NewOrderSingle,
    /// which has none).
    pub order_id: Option<u64>,
    pub sending_time_ns: Option<u64>,
    pub security_id: Option<i64>,
    pub side: Option<u8>,
    pub order_qty: Option<u32>,
    /// Price's mantissa (exponent -9), absent on a market order and on a cancel.
    pub price: Option<i64>,
}

/// An execution report or order cancel (replace) reject: what its template has of these.
/// Its OrdStatus and ExecType are mostly schema constants: the template *is* the kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report<'a> {
    pub template_id: u16,
    pub seq_num: u32,
    pub uuid: u64,
    pub cl_ord_id: &'a [u8],
    pub order_id: Option<u64>,
    /// Absent on ExecutionReportTradeSpreadLeg527.
    pub order_request_id: Option<u64>,
    pub poss_retrans: bool,
    pub sending_time_ns: Option<u64>,
    pub transact_time_ns: Option<u64>,
    pub leaves_qty: Option<u32>,
    pub cum_qty: Option<u32>,
    pub last_qty: Option<u32>,
    /// OrdStatus where it is on the wire (the trade reports, Status532).
    pub ord_status: Option<u8>,
    /// DelayToTime (appended in schema version 4).
    pub delay_to_time_ns: Option<u64>,
}

/// BusinessReject521: answers the client message numbered RefSeqNum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusinessReject {
    pub seq_num: u32,
    pub uuid: u64,
    pub ref_seq_num: Option<u32>,
    pub poss_retrans: bool,
    pub sending_time_ns: Option<u64>,
}

/// A CME business message's SeqNum, UUID and PossRetransFlag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Numbering {
    pub seq_num: u32,
    pub uuid: u64,
    pub poss_retrans: bool,
}

/// One decoded message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    Negotiate(SessionFields<'a>),
    NegotiationResponse(SessionFields<'a>),
    NegotiationReject(SessionFields<'a>),
    Establish(SessionFields<'a>),
    EstablishmentAck(SessionFields<'a>),
    EstablishmentReject(SessionFields<'a>),
    Sequence(SessionFields<'a>),
    Terminate(SessionFields<'a>),
    RetransmitRequest(SessionFields<'a>),
    Retransmission(SessionFields<'a>),
    RetransmitReject(SessionFields<'a>),
    NotApplied(SessionFields<'a>),
    NewOrder(Request<'a>),
    Replace(Request<'a>),
    Cancel(Request<'a>),
    BusinessReject(BusinessReject),
    Report(Report<'a>),
    /// A template of the schema the crate does not read (MassQuote517, ...); `numbered`
    /// when it is a CME business message (its SeqNum, UUID, PossRetransFlag).
    Other {
        template_id: u16,
        numbered: Option<Numbering>,
    },
}

impl Message<'_> {
    /// The side that sends it; `None` for a template of either (Sequence506,
    /// Terminate507) or one not read.
    pub fn sender(&self) -> Option<Side> {
        use Message::*;
        match self {
            Negotiate(_) | Establish(_) | RetransmitRequest(_) | NewOrder(_) | Replace(_)
            | Cancel(_) => Some(Side::Client),
            NegotiationResponse(_)
            | NegotiationReject(_)
            | EstablishmentAck(_)
            | EstablishmentReject(_)
            | Retransmission(_)
            | RetransmitReject(_)
            | NotApplied(_)
            | BusinessReject(_)
            | Report(_) => Some(Side::Host),
            Other {
                numbered: Some(_), ..
            } => Some(Side::Host),
            Sequence(_) | Terminate(_) | Other { .. } => None,
        }
    }

    /// SendingTimeEpoch (ns since 1970) of a business message.
    pub fn sending_time_ns(&self) -> Option<u64> {
        match self {
            Message::NewOrder(r) | Message::Replace(r) | Message::Cancel(r) => r.sending_time_ns,
            Message::BusinessReject(b) => b.sending_time_ns,
            Message::Report(r) => r.sending_time_ns,
            _ => None,
        }
    }
}

fn u32_of(v: Option<u64>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

fn opt(frame: &Frame<'_>, f: Option<Field>) -> Option<u64> {
    f.and_then(|f| frame.uint(f))
}

fn required(frame: &Frame<'_>, f: Option<Field>, name: &'static str) -> Result<u64, DecodeError> {
    let missing = DecodeError::MissingField {
        template_id: frame.header.template_id,
        field: name,
    };
    frame.required(f.ok_or(missing)?)
}

fn request<'a>(frame: &Frame<'a>, l: &RequestLayout) -> Result<Request<'a>, DecodeError> {
    Ok(Request {
        seq_num: required(frame, l.seq_num, "SeqNum")? as u32,
        order_request_id: required(frame, l.order_request_id, "OrderRequestID")?,
        cl_ord_id: l.cl_ord_id.map_or(&[][..], |f| frame.text(f)),
        order_id: opt(frame, l.order_id),
        sending_time_ns: opt(frame, l.sending_time_epoch),
        security_id: l.security_id.and_then(|f| frame.int(f)),
        side: opt(frame, l.side).map(|s| s as u8),
        order_qty: u32_of(opt(frame, l.order_qty)),
        price: l.price.and_then(|f| frame.int(f)),
    })
}

fn report<'a>(frame: &Frame<'a>, l: &ReportLayout) -> Result<Report<'a>, DecodeError> {
    Ok(Report {
        template_id: frame.header.template_id,
        seq_num: required(frame, l.seq_num, "SeqNum")? as u32,
        uuid: required(frame, l.uuid, "UUID")?,
        cl_ord_id: l.cl_ord_id.map_or(&[][..], |f| frame.text(f)),
        order_id: opt(frame, l.order_id),
        order_request_id: opt(frame, l.order_request_id),
        poss_retrans: opt(frame, l.poss_retrans_flag) == Some(1),
        sending_time_ns: opt(frame, l.sending_time_epoch),
        transact_time_ns: opt(frame, l.transact_time),
        leaves_qty: u32_of(opt(frame, l.leaves_qty)),
        cum_qty: u32_of(opt(frame, l.cum_qty)),
        last_qty: u32_of(opt(frame, l.last_qty)),
        ord_status: opt(frame, l.ord_status).map(|s| s as u8),
        delay_to_time_ns: opt(frame, l.delay_to_time),
    })
}

/// Reads one whole frame (SOFH included).
pub fn decode(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    use schema::*;
    let frame = Frame::parse(bytes)?;
    let id = frame.header.template_id;
    let f = &frame;
    let uuid = |field: Field| f.required(field);
    let ts = |field: Field| f.uint(field);
    let n32 = |field: Field| u32_of(f.uint(field));
    let base = |u: u64| SessionFields {
        uuid: u,
        ..SessionFields::default()
    };
    Ok(match id {
        negotiate_500::ID => {
            use negotiate_500 as m;
            Message::Negotiate(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                firm: f.text(m::FIRM),
                ..base(uuid(m::UUID)?)
            })
        }
        negotiation_response_501::ID => {
            use negotiation_response_501 as m;
            Message::NegotiationResponse(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                ..base(uuid(m::UUID)?)
            })
        }
        negotiation_reject_502::ID => {
            use negotiation_reject_502 as m;
            Message::NegotiationReject(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                error_codes: f.uint(m::ERROR_CODES).map(|e| e as u16),
                ..base(uuid(m::UUID)?)
            })
        }
        establish_503::ID => {
            use establish_503 as m;
            Message::Establish(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                next_seq_no: n32(m::NEXT_SEQ_NO),
                firm: f.text(m::FIRM),
                ..base(uuid(m::UUID)?)
            })
        }
        establishment_ack_504::ID => {
            use establishment_ack_504 as m;
            Message::EstablishmentAck(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                next_seq_no: n32(m::NEXT_SEQ_NO),
                previous_seq_no: n32(m::PREVIOUS_SEQ_NO),
                previous_uuid: ts(m::PREVIOUS_UUID),
                ..base(uuid(m::UUID)?)
            })
        }
        establishment_reject_505::ID => {
            use establishment_reject_505 as m;
            Message::EstablishmentReject(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                next_seq_no: n32(m::NEXT_SEQ_NO),
                error_codes: f.uint(m::ERROR_CODES).map(|e| e as u16),
                ..base(uuid(m::UUID)?)
            })
        }
        sequence_506::ID => {
            use sequence_506 as m;
            Message::Sequence(SessionFields {
                next_seq_no: n32(m::NEXT_SEQ_NO),
                ..base(uuid(m::UUID)?)
            })
        }
        terminate_507::ID => {
            use terminate_507 as m;
            Message::Terminate(SessionFields {
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                error_codes: f.uint(m::ERROR_CODES).map(|e| e as u16),
                ..base(uuid(m::UUID)?)
            })
        }
        retransmit_request_508::ID => {
            use retransmit_request_508 as m;
            Message::RetransmitRequest(SessionFields {
                last_uuid: ts(m::LAST_UUID),
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                from_seq_no: n32(m::FROM_SEQ_NO),
                msg_count: n32(m::MSG_COUNT),
                ..base(uuid(m::UUID)?)
            })
        }
        retransmission_509::ID => {
            use retransmission_509 as m;
            Message::Retransmission(SessionFields {
                last_uuid: ts(m::LAST_UUID),
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                from_seq_no: n32(m::FROM_SEQ_NO),
                msg_count: n32(m::MSG_COUNT),
                ..base(uuid(m::UUID)?)
            })
        }
        retransmit_reject_510::ID => {
            use retransmit_reject_510 as m;
            Message::RetransmitReject(SessionFields {
                last_uuid: ts(m::LAST_UUID),
                request_timestamp_ns: ts(m::REQUEST_TIMESTAMP),
                error_codes: f.uint(m::ERROR_CODES).map(|e| e as u16),
                ..base(uuid(m::UUID)?)
            })
        }
        not_applied_513::ID => {
            use not_applied_513 as m;
            Message::NotApplied(SessionFields {
                from_seq_no: n32(m::FROM_SEQ_NO),
                msg_count: n32(m::MSG_COUNT),
                ..base(uuid(m::UUID)?)
            })
        }
        new_order_single_514::ID => Message::NewOrder(request(f, &new_order_single_514::LAYOUT)?),
        order_cancel_replace_request_515::ID => {
            Message::Replace(request(f, &order_cancel_replace_request_515::LAYOUT)?)
        }
        order_cancel_request_516::ID => {
            Message::Cancel(request(f, &order_cancel_request_516::LAYOUT)?)
        }
        business_reject_521::ID => {
            use business_reject_521 as m;
            Message::BusinessReject(BusinessReject {
                seq_num: f.required(m::SEQ_NUM)? as u32,
                uuid: f.required(m::UUID)?,
                ref_seq_num: n32(m::REF_SEQ_NUM),
                poss_retrans: f.uint(m::POSS_RETRANS_FLAG) == Some(1),
                sending_time_ns: f.uint(m::SENDING_TIME_EPOCH),
            })
        }
        _ => match report_layout(id) {
            Some(l) => Message::Report(report(f, l)?),
            None if schema::template(id).is_some() => Message::Other {
                template_id: id,
                numbered: numbering(f, id)?,
            },
            None => return Err(DecodeError::UnknownTemplate(id)),
        },
    })
}

/// A template's numbering, if it is a CME business message.
fn numbering(f: &Frame<'_>, id: u16) -> Result<Option<Numbering>, DecodeError> {
    let Some(s) = schema::sequenced(id) else {
        return Ok(None);
    };
    Ok(Some(Numbering {
        seq_num: f.required(s.seq_num)? as u32,
        uuid: f.required(s.uuid)?,
        poss_retrans: s.poss_retrans_flag.and_then(|p| f.uint(p)) == Some(1),
    }))
}

/// The layout of an execution report (or cancel / replace reject) template.
fn report_layout(id: u16) -> Option<&'static ReportLayout> {
    use schema::*;
    Some(match id {
        execution_report_new_522::ID => &execution_report_new_522::LAYOUT,
        execution_report_reject_523::ID => &execution_report_reject_523::LAYOUT,
        execution_report_elimination_524::ID => &execution_report_elimination_524::LAYOUT,
        execution_report_trade_outright_525::ID => &execution_report_trade_outright_525::LAYOUT,
        execution_report_trade_spread_526::ID => &execution_report_trade_spread_526::LAYOUT,
        execution_report_trade_spread_leg_527::ID => &execution_report_trade_spread_leg_527::LAYOUT,
        execution_report_modify_531::ID => &execution_report_modify_531::LAYOUT,
        execution_report_status_532::ID => &execution_report_status_532::LAYOUT,
        execution_report_cancel_534::ID => &execution_report_cancel_534::LAYOUT,
        order_cancel_reject_535::ID => &order_cancel_reject_535::LAYOUT,
        order_cancel_replace_reject_536::ID => &order_cancel_replace_reject_536::LAYOUT,
        execution_report_pending_cancel_564::ID => &execution_report_pending_cancel_564::LAYOUT,
        execution_report_pending_replace_565::ID => &execution_report_pending_replace_565::LAYOUT,
        _ => return None,
    })
}

/// The layout of a request template (for the encoder).
pub(crate) fn request_layout(id: u16) -> Option<&'static RequestLayout> {
    use schema::*;
    Some(match id {
        new_order_single_514::ID => &new_order_single_514::LAYOUT,
        order_cancel_replace_request_515::ID => &order_cancel_replace_request_515::LAYOUT,
        order_cancel_request_516::ID => &order_cancel_request_516::LAYOUT,
        _ => return None,
    })
}

/// The layout of a report template (for the encoder).
pub(crate) fn report_layout_of(id: u16) -> Option<&'static ReportLayout> {
    report_layout(id)
}
