//! The ExecutionReports (35=8) the exchange answers with: what one says, and its body.
//!
//! Apart from the engine, which numbers them (ExecID), frames them through the session and
//! counts them; this file only knows the fields.

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::tag;

use super::tags::{
    AVG_PX, CUM_QTY, EXEC_ID, EXEC_TRANS_TYPE, LAST_PX, LAST_QTY, LEAVES_QTY, ORDER_ID, ORDER_QTY,
    ORD_REJ_REASON, PRICE, SIDE, SYMBOL, TEXT, TRANSACT_TIME,
};

/// An ExecutionReport to encode.
pub struct Er<'a> {
    pub clordid: &'a [u8],
    pub orig: &'a [u8],
    pub order_id: u64,
    pub exec_type: &'a [u8],
    pub ord_status: &'a [u8],
    pub symbol: &'a [u8],
    pub side: u8,
    pub qty: u64,
    pub cum: u64,
    pub price: &'a [u8],
    pub last_qty: u64,
    pub text: &'a str,
}

impl Er<'_> {
    /// Encodes the report's fields after the session header `enc` holds: FIX 4.2 adds
    /// ExecTransType, a rejected order gets OrdRejReason, and `leaves` is given because a
    /// cancel overrides it.
    pub fn encode_body(
        &self,
        enc: &mut FixEncoder,
        fix42: bool,
        exec_id: u64,
        leaves: u64,
        rejected: bool,
        transact_time: &[u8],
    ) {
        if self.order_id == 0 {
            enc.field(ORDER_ID, b"NONE");
        } else {
            enc.field_uint(ORDER_ID, self.order_id);
        }
        enc.field(tag::CL_ORD_ID, self.clordid);
        if !self.orig.is_empty() {
            enc.field(tag::ORIG_CL_ORD_ID, self.orig);
        }
        enc.field_uint(EXEC_ID, exec_id);
        if fix42 {
            enc.field(EXEC_TRANS_TYPE, b"0");
        }
        enc.field(tag::EXEC_TYPE, self.exec_type)
            .field(tag::ORD_STATUS, self.ord_status)
            .field(SYMBOL, self.symbol)
            .field(SIDE, &[self.side])
            .field_uint(ORDER_QTY, self.qty)
            .field(PRICE, self.price);
        if self.last_qty > 0 {
            enc.field_uint(LAST_QTY, self.last_qty)
                .field(LAST_PX, self.price);
        }
        enc.field_uint(LEAVES_QTY, leaves)
            .field_uint(CUM_QTY, self.cum)
            .field(AVG_PX, if self.cum > 0 { self.price } else { b"0" })
            .field(TRANSACT_TIME, transact_time);
        if rejected {
            // 103=99: other.
            enc.field(ORD_REJ_REASON, b"99");
        }
        if !self.text.is_empty() {
            enc.field_str(TEXT, self.text);
        }
    }
}
