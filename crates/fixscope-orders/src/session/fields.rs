//! The session-layer fields of an administrative message (or a reject), read in one pass.
//! Only those messages are read in full: they are few next to orders and their reports.

use fixscope_fix::{parse_u32, tag};

/// What the session layer reads from a message beyond [`crate::correlate::MessageFacts`].
#[derive(Debug, Default, Clone, Copy)]
pub struct AdminFields<'a> {
    /// HeartBtInt (108), seconds.
    pub heart_bt_int: Option<u32>,
    /// ResetSeqNumFlag (141=Y).
    pub reset_seq_num: bool,
    /// GapFillFlag (123=Y); `false` is the Reset form.
    pub gap_fill: bool,
    /// NewSeqNo (36).
    pub new_seq_no: Option<u32>,
    /// TestReqID (112) of a TestRequest or of the Heartbeat answering it (empty: absent;
    /// FIX has no empty values).
    pub test_req_id: &'a [u8],
    /// RefSeqNum (45).
    pub ref_seq_num: Option<u32>,
    /// SessionRejectReason (373) or BusinessRejectReason (380).
    pub reject_reason: Option<u32>,
    /// BusinessRejectRefID (379): the rejected message's business ID (a ClOrdID for orders).
    pub business_reject_ref_id: &'a [u8],
    /// RefMsgType (372): the rejected message's type (required in 35=j, optional in 35=3).
    pub ref_msg_type: &'a [u8],
}

impl<'a> AdminFields<'a> {
    pub fn read(message: &'a [u8]) -> Self {
        let mut f = AdminFields::default();
        for (t, value) in fixscope_fix::message::Fields::body(message) {
            match t {
                tag::HEART_BT_INT => f.heart_bt_int = parse_u32(value),
                tag::RESET_SEQ_NUM_FLAG => f.reset_seq_num = value == b"Y",
                tag::GAP_FILL_FLAG => f.gap_fill = value == b"Y",
                tag::NEW_SEQ_NO => f.new_seq_no = parse_u32(value),
                tag::TEST_REQ_ID => f.test_req_id = value,
                tag::REF_SEQ_NUM => f.ref_seq_num = parse_u32(value),
                tag::SESSION_REJECT_REASON | tag::BUSINESS_REJECT_REASON => {
                    f.reject_reason = parse_u32(value)
                }
                tag::BUSINESS_REJECT_REF_ID => f.business_reject_ref_id = value,
                tag::REF_MSG_TYPE => f.ref_msg_type = value,
                _ => {}
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_fix::encode::test_message as fix;

    #[test]
    fn reads_the_session_fields() {
        let m = fix(&[(35, "4"), (34, "7"), (43, "Y"), (123, "Y"), (36, "12")]);
        let f = AdminFields::read(&m);
        assert!(f.gap_fill && !f.reset_seq_num);
        assert_eq!(f.new_seq_no, Some(12));
        let m = fix(&[(35, "j"), (45, "3"), (379, "ORD9"), (380, "4")]);
        let f = AdminFields::read(&m);
        assert_eq!((f.ref_seq_num, f.reject_reason), (Some(3), Some(4)));
        assert_eq!(f.business_reject_ref_id, b"ORD9");
        let m = fix(&[(35, "0"), (112, "T-7")]);
        assert_eq!(AdminFields::read(&m).test_req_id, b"T-7");
        let m = fix(&[(35, "A"), (98, "0"), (108, "30"), (141, "Y")]);
        let f = AdminFields::read(&m);
        assert_eq!(f.heart_bt_int, Some(30));
        assert!(f.reset_seq_num);
    }
}
