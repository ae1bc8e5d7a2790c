//! Building iLink 3 frames (SOFH + SBE header + root block) from the schema's generated
//! layouts, for the tests and the simulator: the same offsets the decoders read, so a
//! frame is only as right as the schema — which the SBE tool's decoders check
//! independently (tests/seam_contract/sbe_tool.rs). A [`Builder`] can make the root
//! block longer or shorter than the schema's, as a later or earlier version would send
//! it. Absent optional values are written as the field's null value; repeating groups
//! are written empty (their dimension headers with a count of 0), as CME sends them.

use crate::messages::{self, BusinessReject, Report, Request};
use crate::sbe::{ENCODING_TYPE, HEADERS_LEN};
use crate::schema::{self, Field};

/// One frame being built: a root block of the schema's length, its fields set.
#[derive(Clone, Debug)]
pub struct Builder {
    template_id: u16,
    version: u16,
    block: Vec<u8>,
    /// Bytes after the root block (empty group headers, var data lengths).
    tail: Vec<u8>,
}

impl Builder {
    /// A zeroed root block of the schema's length for `template_id` (0 for one the
    /// schema lacks), at the schema's version.
    pub fn new(template_id: u16) -> Self {
        let len = schema::template(template_id).map_or(0, |t| t.block_length);
        Builder {
            template_id,
            version: schema::SCHEMA_VERSION,
            block: vec![0; usize::from(len)],
            tail: empty_tail(template_id),
        }
    }

    /// Writes an unsigned value into `f` (its low bytes, little-endian).
    pub fn put(mut self, f: Field, value: u64) -> Self {
        let end = f.offset + f.size;
        if self.block.len() < end {
            self.block.resize(end, 0);
        }
        let le = value.to_le_bytes();
        let n = f.size.min(8);
        self.block[f.offset..f.offset + n].copy_from_slice(&le[..n]);
        self
    }

    /// Writes `value`, or the field's null value (0 without one) when `None`.
    pub fn put_opt(self, f: Option<Field>, value: Option<u64>) -> Self {
        match f {
            Some(f) => {
                let v = value.or(f.null).unwrap_or(0);
                self.put(f, v)
            }
            None => self,
        }
    }

    /// Writes a char array, NUL padded (cut if longer).
    pub fn put_text(mut self, f: Option<Field>, text: &[u8]) -> Self {
        let Some(f) = f else { return self };
        let end = f.offset + f.size;
        if self.block.len() < end {
            self.block.resize(end, 0);
        }
        let n = text.len().min(f.size);
        self.block[f.offset..end].fill(0);
        self.block[f.offset..f.offset + n].copy_from_slice(&text[..n]);
        self
    }

    /// The root block cut or zero-extended to `len` bytes, the header's BlockLength.
    pub fn block_length(mut self, len: usize) -> Self {
        self.block.resize(len, 0);
        self
    }

    /// The header's Version.
    pub fn version(mut self, version: u16) -> Self {
        self.version = version;
        self
    }

    /// The whole frame.
    pub fn finish(self) -> Vec<u8> {
        let len = HEADERS_LEN + self.block.len() + self.tail.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&ENCODING_TYPE.to_le_bytes());
        out.extend_from_slice(&(self.block.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.template_id.to_le_bytes());
        out.extend_from_slice(&schema::SCHEMA_ID.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.block);
        out.extend_from_slice(&self.tail);
        out
    }
}

/// What follows the root block of an empty message: each repeating group's dimension
/// header (groupSize: blockLength u16, numInGroup u8 = 0) and each var data's length
/// (u16 = 0), in the schema's order, from the generated table.
fn empty_tail(template_id: u16) -> Vec<u8> {
    let mut out = Vec::new();
    for &(id, group_block, is_group) in schema::TAILS {
        if id != template_id {
            continue;
        }
        if is_group {
            out.extend_from_slice(&group_block.to_le_bytes());
            out.push(0);
        } else {
            out.extend_from_slice(&0u16.to_le_bytes());
        }
    }
    out
}

/// Negotiate500.
pub fn negotiate(uuid: u64, firm: &[u8], request_timestamp_ns: u64) -> Vec<u8> {
    use schema::negotiate_500 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put_text(Some(m::FIRM), firm)
        .finish()
}

/// NegotiationResponse501.
pub fn negotiation_response(uuid: u64, request_timestamp_ns: u64) -> Vec<u8> {
    use schema::negotiation_response_501 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .finish()
}

/// NegotiationReject502.
pub fn negotiation_reject(uuid: u64, request_timestamp_ns: u64, error_codes: u16) -> Vec<u8> {
    use schema::negotiation_reject_502 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::ERROR_CODES, u64::from(error_codes))
        .finish()
}

/// Establish503: the client's next sequence number `next_seq`.
pub fn establish(uuid: u64, firm: &[u8], request_timestamp_ns: u64, next_seq: u32) -> Vec<u8> {
    use schema::establish_503 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::NEXT_SEQ_NO, u64::from(next_seq))
        .put_text(Some(m::FIRM), firm)
        .finish()
}

/// EstablishmentAck504: CME's next sequence number `next_seq`.
pub fn establishment_ack(uuid: u64, request_timestamp_ns: u64, next_seq: u32) -> Vec<u8> {
    use schema::establishment_ack_504 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::NEXT_SEQ_NO, u64::from(next_seq))
        .put(m::PREVIOUS_SEQ_NO, u64::from(next_seq.saturating_sub(1)))
        .put(m::PREVIOUS_UUID, uuid)
        .finish()
}

/// EstablishmentReject505.
pub fn establishment_reject(uuid: u64, request_timestamp_ns: u64, error_codes: u16) -> Vec<u8> {
    use schema::establishment_reject_505 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::ERROR_CODES, u64::from(error_codes))
        .finish()
}

/// Sequence506 (either way).
pub fn sequence(uuid: u64, next_seq: u32) -> Vec<u8> {
    use schema::sequence_506 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::NEXT_SEQ_NO, u64::from(next_seq))
        .finish()
}

/// Terminate507 (either way).
pub fn terminate(uuid: u64, request_timestamp_ns: u64, error_codes: u16) -> Vec<u8> {
    use schema::terminate_507 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::ERROR_CODES, u64::from(error_codes))
        .finish()
}

/// RetransmitRequest508 (`last_uuid`: a previous session's; `None`: the current one).
pub fn retransmit_request(
    uuid: u64,
    last_uuid: Option<u64>,
    request_timestamp_ns: u64,
    from_seq: u32,
    count: u16,
) -> Vec<u8> {
    use schema::retransmit_request_508 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put_opt(Some(m::LAST_UUID), last_uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::FROM_SEQ_NO, u64::from(from_seq))
        .put(m::MSG_COUNT, u64::from(count))
        .finish()
}

/// Retransmission509.
pub fn retransmission(
    uuid: u64,
    last_uuid: Option<u64>,
    request_timestamp_ns: u64,
    from_seq: u32,
    count: u16,
) -> Vec<u8> {
    use schema::retransmission_509 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put_opt(Some(m::LAST_UUID), last_uuid)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::FROM_SEQ_NO, u64::from(from_seq))
        .put(m::MSG_COUNT, u64::from(count))
        .finish()
}

/// RetransmitReject510.
pub fn retransmit_reject(uuid: u64, request_timestamp_ns: u64, error_codes: u16) -> Vec<u8> {
    use schema::retransmit_reject_510 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put_opt(Some(m::LAST_UUID), None)
        .put(m::REQUEST_TIMESTAMP, request_timestamp_ns)
        .put(m::ERROR_CODES, u64::from(error_codes))
        .finish()
}

/// NotApplied513.
pub fn not_applied(uuid: u64, from_seq: u32, count: u32) -> Vec<u8> {
    use schema::not_applied_513 as m;
    Builder::new(m::ID)
        .put(m::UUID, uuid)
        .put(m::FROM_SEQ_NO, u64::from(from_seq))
        .put(m::MSG_COUNT, u64::from(count))
        .finish()
}

/// A request (NewOrderSingle514, OrderCancelReplaceRequest515, OrderCancelRequest516)
/// of `template_id`, its fields set from `r`.
pub fn request_builder(template_id: u16, r: &Request<'_>) -> Builder {
    let b = Builder::new(template_id);
    let Some(l) = messages::request_layout(template_id) else {
        return b;
    };
    b.put_opt(l.price, r.price.map(|p| p as u64))
        .put_opt(l.order_qty, r.order_qty.map(u64::from))
        .put_opt(l.security_id, r.security_id.map(|s| s as u64))
        .put_opt(l.side, r.side.map(u64::from))
        .put_opt(l.seq_num, Some(u64::from(r.seq_num)))
        .put_text(l.cl_ord_id, r.cl_ord_id)
        .put_opt(l.order_id, r.order_id)
        .put_opt(l.order_request_id, Some(r.order_request_id))
        .put_opt(l.sending_time_epoch, r.sending_time_ns)
}

/// NewOrderSingle514.
pub fn new_order(r: &Request<'_>) -> Vec<u8> {
    request_builder(schema::new_order_single_514::ID, r).finish()
}

/// OrderCancelReplaceRequest515.
pub fn replace(r: &Request<'_>) -> Vec<u8> {
    request_builder(schema::order_cancel_replace_request_515::ID, r).finish()
}

/// OrderCancelRequest516.
pub fn cancel(r: &Request<'_>) -> Vec<u8> {
    request_builder(schema::order_cancel_request_516::ID, r).finish()
}

/// An execution report or cancel (replace) reject of template `r.template_id`, the
/// fields its template has set from `r`.
pub fn report_builder(r: &Report<'_>) -> Builder {
    let b = Builder::new(r.template_id);
    let Some(l) = messages::report_layout_of(r.template_id) else {
        return b;
    };
    b.put_opt(l.seq_num, Some(u64::from(r.seq_num)))
        .put_opt(l.uuid, Some(r.uuid))
        .put_text(l.cl_ord_id, r.cl_ord_id)
        .put_opt(l.order_id, r.order_id)
        .put_opt(l.order_request_id, r.order_request_id)
        .put_opt(l.poss_retrans_flag, Some(u64::from(r.poss_retrans)))
        .put_opt(l.sending_time_epoch, r.sending_time_ns)
        .put_opt(l.transact_time, r.transact_time_ns)
        .put_opt(l.leaves_qty, r.leaves_qty.map(u64::from))
        .put_opt(l.cum_qty, r.cum_qty.map(u64::from))
        .put_opt(l.last_qty, r.last_qty.map(u64::from))
        .put_opt(l.ord_status, r.ord_status.map(u64::from))
        .put_opt(l.delay_to_time, r.delay_to_time_ns)
}

/// An execution report or cancel (replace) reject.
pub fn report(r: &Report<'_>) -> Vec<u8> {
    report_builder(r).finish()
}

/// BusinessReject521.
pub fn business_reject(b: &BusinessReject) -> Vec<u8> {
    use schema::business_reject_521 as m;
    Builder::new(m::ID)
        .put(m::SEQ_NUM, u64::from(b.seq_num))
        .put(m::UUID, b.uuid)
        .put_opt(Some(m::REF_SEQ_NUM), b.ref_seq_num.map(u64::from))
        .put(m::POSS_RETRANS_FLAG, u64::from(b.poss_retrans))
        .put_opt(Some(m::SENDING_TIME_EPOCH), b.sending_time_ns)
        .finish()
}
