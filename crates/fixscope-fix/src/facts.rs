//! The fields correlation reads from a message, extracted in one pass.

use crate::key::{KeySpec, MAX_KEY_TAGS};
use crate::{tag, SOH};

/// What correlation needs to know about one FIX message.
#[derive(Clone, Debug, Default)]
pub struct MessageFacts<'a> {
    /// The whole message, for what is read only on a rare path (a list's or a cross's
    /// orders, a multileg order's report that found no order).
    pub message: &'a [u8],
    pub msg_type: &'a [u8],
    pub exec_type: Option<u8>,
    pub ord_status: Option<u8>,
    pub sender_comp_id: &'a [u8],
    pub target_comp_id: &'a [u8],
    /// OrigClOrdID (41); empty when absent. Read wherever it stands in a report that ends
    /// the order it names (ExecType 4/5): engines write it before or after 150 and 39.
    pub orig_cl_ord_id: &'a [u8],
    /// ExecTransType (20) of a FIX 4.0-4.2 ExecutionReport: only `0` (New) is an
    /// execution; `1` (Cancel: a bust), `2` (Correct) and `3` (Status) report on earlier
    /// ones. Not read for later versions, which dropped the tag.
    pub exec_trans_type: Option<u8>,
    /// MsgSeqNum (34); 0 when absent or not a number (always read: the stop waits for it,
    /// wherever the engine puts it in the header).
    pub msg_seq_num: u32,
    /// PossDupFlag (43=Y): a resend under the original MsgSeqNum.
    pub poss_dup: bool,
    /// PossResend (97=Y): a resend under a new MsgSeqNum.
    pub poss_resend: bool,
    /// A request's own fields for its record (read only when asked, see
    /// [`MessageFacts::extract_with`]; empty otherwise or when absent): ClOrdID (11),
    /// Symbol (55), Side (54), Account (1).
    pub cl_ord_id: &'a [u8],
    pub symbol: &'a [u8],
    pub side: &'a [u8],
    pub account: &'a [u8],
    /// The originating firm on a hub session: OnBehalfOfCompID (115) of a request,
    /// DeliverToCompID (128) of a report or reject (the hub swaps them); empty when absent.
    /// ClOrdIDs are unique per firm, so it joins the key ([`MessageFacts::key`]).
    pub firm: &'a [u8],
    /// Values of the key tags, in key order (empty when absent).
    key_parts: [&'a [u8]; MAX_KEY_TAGS],
    key_found: u8,
}

/// Whether a message's BeginString is FIX.4.0, 4.1 or 4.2 (the versions with
/// ExecTransType); FIXT.1.1 and FIX.4.3+ are not. One 8-byte compare and one byte: every
/// ExecutionReport asks (three 7-byte slice compares cost ~20 instructions a report).
#[inline(always)]
fn before_fix43(message: &[u8]) -> bool {
    match message.get(..10) {
        // "8=FIX.4.N" then SOH: the bytes 2..8 are "FIX.4." and N is 0, 1 or 2.
        Some(b) => {
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                == u64::from_le_bytes(*b"8=FIX.4.")
                && matches!(b[8], b'0' | b'1' | b'2')
                && b[9] == SOH
        }
        None => false,
    }
}

impl<'a> MessageFacts<'a> {
    /// Reads the fields correlation needs from a framed message, stopping as soon as it
    /// has them (ExecutionReports carry 20+ fields; we need four). What is needed depends on
    /// the MsgType, which FIX puts third, so the check is a bitmask compare per field.
    #[inline]
    pub fn extract(message: &'a [u8], key: &KeySpec) -> Self {
        Self::extract_with::<false>(message, key)
    }

    /// [`MessageFacts::extract`], and with `ORDER_FIELDS` a request's ClOrdID, Symbol,
    /// Side and Account too (`--records`), in the same pass: a second pass over every
    /// request for them cost a third of what records add to the pipeline's thread. A
    /// constant, so the pass without them is the one it always was.
    #[inline]
    pub fn extract_with<const ORDER_FIELDS: bool>(message: &'a [u8], key: &KeySpec) -> Self {
        const TYPE: u16 = 1;
        const KEY: u16 = 2;
        const EXEC: u16 = 4;
        const STATUS: u16 = 8;
        const SENDER: u16 = 16;
        const TARGET: u16 = 32;
        const SEQ: u16 = 64;
        // Never found: session-level messages are read whole (they are few and short, and
        // their PossDupFlag may follow MsgSeqNum, which may follow the CompIDs).
        const WHOLE: u16 = 128;
        const CL_ORD_ID: u16 = 256;
        const SYMBOL: u16 = 512;
        const SIDE: u16 = 1024;
        const ACCOUNT: u16 = 2048;
        const ORIG: u16 = 4096;
        const TRANS: u16 = 8192;
        // The firm (115/128), or the header's end without it: marked with the key, a body
        // field (a key in the header reads the message whole), so no message reads further
        // for it and no field pays a header check.
        const FIRM: u16 = 16384;
        let request_fields = if ORDER_FIELDS {
            CL_ORD_ID | SYMBOL | SIDE | ACCOUNT
        } else {
            0
        };
        let mut facts = MessageFacts {
            message,
            ..MessageFacts::default()
        };
        let key_tags = key.tags();
        let key_len = key_tags.len() as u8;
        let mut found = 0u16;
        let mut needed = TYPE;
        // The tag naming the firm, known from the MsgType (FIX puts it third, before 115
        // and 128): 115 on requests, 128 on what answers them; 0 (no tag) otherwise.
        let mut firm_tag = 0;
        // Most fields are none of these: one bit test skips them (tags below 64 as bits;
        // above, only ExecType and key tags matter).
        let mut wanted_low: u64 = [
            tag::MSG_TYPE,
            tag::ORD_STATUS,
            tag::SENDER_COMP_ID,
            tag::TARGET_COMP_ID,
            tag::ORIG_CL_ORD_ID,
            tag::EXEC_TRANS_TYPE,
            tag::MSG_SEQ_NUM,
            tag::POSS_DUP_FLAG,
        ]
        .iter()
        .fold(0, |bits, &t| bits | 1 << t);
        if ORDER_FIELDS {
            wanted_low |= [tag::CL_ORD_ID, tag::SYMBOL, tag::SIDE, tag::ACCOUNT]
                .iter()
                .fold(0, |bits, &t| bits | 1 << t);
        }
        // FIX puts the header first: with every key tag in the body (ClOrdID, Account…),
        // the key found means the firm's header tags (115/128) were passed, so no field
        // needs a header check of its own.
        let key_ends_header = if key.in_header() { 0 } else { FIRM };
        let mut key_high = false;
        for &k in key_tags {
            if k < 64 {
                wanted_low |= 1 << k;
            } else {
                key_high = true;
            }
        }
        for (t, value) in crate::message::Fields::body(message) {
            let wanted = if t < 64 {
                wanted_low >> t & 1 != 0
            } else {
                t == tag::EXEC_TYPE || t == tag::POSS_RESEND || t == firm_tag || key_high
            };
            if !wanted {
                // Changes nothing below, so the stop test would not change either.
                continue;
            }
            match t {
                tag::MSG_TYPE => {
                    facts.msg_type = value;
                    found |= TYPE;
                    firm_tag = match value {
                        b"D" | b"F" | b"G" | b"AB" | b"E" | b"s" => tag::ON_BEHALF_OF_COMP_ID,
                        b"8" | b"9" | b"3" | b"j" => tag::DELIVER_TO_COMP_ID,
                        _ => 0,
                    };
                    const ORDER: u16 = TYPE | KEY | SEQ | FIRM;
                    needed = match value {
                        // A list's or a cross's other orders are read apart (`orders`).
                        b"D" | b"F" | b"G" | b"AB" | b"E" | b"s" => {
                            ORDER | SENDER | TARGET | request_fields
                        }
                        // FIX 4.2 and older carry ExecTransType on every report.
                        b"8" if before_fix43(message) => ORDER | EXEC | STATUS | TRANS,
                        b"8" => ORDER | EXEC | STATUS,
                        b"9" => ORDER | STATUS,
                        b"0" | b"1" | b"2" | b"3" | b"4" | b"5" | b"A" | b"j" => WHOLE,
                        // Other messages: the session's names and the sequence.
                        _ => TYPE | SENDER | TARGET | SEQ,
                    };
                    // A key in the header (`--key 49,…`, rare) does not end it: read the
                    // whole message rather than check every field for the header's end.
                    if key_ends_header == 0 && needed & FIRM != 0 {
                        needed |= WHOLE;
                    }
                }
                tag::EXEC_TYPE => {
                    facts.exec_type = value.first().copied();
                    found |= EXEC;
                    // A cancel or replace confirmed ends the order in OrigClOrdID: read it
                    // wherever it is (rare reports: the rest of the message is cheap).
                    if matches!(facts.exec_type, Some(b'4' | b'5')) && found & ORIG == 0 {
                        needed |= ORIG;
                    }
                }
                tag::EXEC_TRANS_TYPE => {
                    facts.exec_trans_type = value.first().copied();
                    found |= TRANS;
                }
                tag::ORD_STATUS => {
                    facts.ord_status = value.first().copied();
                    found |= STATUS;
                }
                tag::SENDER_COMP_ID => {
                    facts.sender_comp_id = value;
                    found |= SENDER;
                }
                tag::TARGET_COMP_ID => {
                    facts.target_comp_id = value;
                    found |= TARGET;
                }
                tag::ORIG_CL_ORD_ID => {
                    facts.orig_cl_ord_id = value;
                    found |= ORIG;
                }
                tag::MSG_SEQ_NUM => {
                    facts.msg_seq_num = crate::parse_u32(value).unwrap_or(0);
                    found |= SEQ;
                }
                tag::POSS_DUP_FLAG => facts.poss_dup = value == b"Y",
                tag::POSS_RESEND => facts.poss_resend = value == b"Y",
                // The first of a repeated tag counts.
                tag::CL_ORD_ID if ORDER_FIELDS && found & CL_ORD_ID == 0 => {
                    facts.cl_ord_id = value;
                    found |= CL_ORD_ID;
                }
                tag::SYMBOL if ORDER_FIELDS && found & SYMBOL == 0 => {
                    facts.symbol = value;
                    found |= SYMBOL;
                }
                tag::SIDE if ORDER_FIELDS && found & SIDE == 0 => {
                    facts.side = value;
                    found |= SIDE;
                }
                tag::ACCOUNT if ORDER_FIELDS && found & ACCOUNT == 0 => {
                    facts.account = value;
                    found |= ACCOUNT;
                }
                // The first counts (a hub's hub would be a second one). Last, after the
                // constant arms: a guard among them costs every field a compare chain.
                t if t == firm_tag && found & FIRM == 0 => {
                    facts.firm = value;
                    found |= FIRM;
                }
                _ => {}
            }
            if let Some(i) = key_tags.iter().position(|&k| k == t) {
                if facts.key_parts[i].is_empty() && !value.is_empty() {
                    facts.key_parts[i] = value;
                    facts.key_found += 1;
                    if facts.key_found == key_len {
                        // A body key ends the header, and with it the firm's tags.
                        found |= KEY | key_ends_header;
                    }
                }
            }
            if found & needed == needed && found & TYPE != 0 {
                break;
            }
        }
        facts
    }

    /// Whether the message is a report of a multileg order, as a whole or of one of its
    /// legs: MultiLegReportingType (442) `3` or `2`. Read whole, only for a report that
    /// found no order (rare).
    #[cold]
    pub fn multileg_report(&self) -> bool {
        crate::message::Fields::body(self.message)
            .any(|(t, v)| t == tag::MULTI_LEG_REPORTING_TYPE && matches!(v, b"2" | b"3"))
    }

    /// These facts for one order of a list or a cross: its ClOrdID is the key (the key is
    /// ClOrdID alone), its own fields those of the request's record.
    pub fn for_order(&self, order: &crate::orders::GroupOrder<'a>) -> Self {
        let mut facts = self.clone();
        facts.key_parts[0] = order.cl_ord_id;
        facts.key_found = u8::from(!order.cl_ord_id.is_empty());
        facts.cl_ord_id = order.cl_ord_id;
        facts.symbol = order.symbol;
        facts.side = order.side;
        facts.account = order.account;
        facts
    }

    /// The correlation key: borrowed from the message for a one-tag key (the usual
    /// ClOrdID: no copy per message), else joined in `buf`; `None` when a key tag is
    /// missing. The firm (115/128), when present, is one more part: ClOrdIDs are unique
    /// per originating firm, and a hub carries several.
    #[inline]
    pub fn key<'b>(&'b self, key: &KeySpec, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
        match key.tags().len() {
            1 if self.key_found == 1 && self.firm.is_empty() => Some(self.key_parts[0]),
            _ => self.key_into(key, buf).then_some(buf.as_slice()),
        }
    }

    /// Writes the correlation key into `buf`; false when a key tag is missing.
    pub fn key_into(&self, key: &KeySpec, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        let n = key.tags().len();
        if self.key_found as usize != n {
            return false;
        }
        for (i, part) in self.key_parts[..n].iter().enumerate() {
            if i > 0 {
                buf.push(SOH);
            }
            buf.extend_from_slice(part);
        }
        with_firm(buf, self.firm);
        true
    }

    /// The key of the order this message names by `id` (OrigClOrdID 41, a reject's
    /// BusinessRejectRefID 379): `id` and the message's firm, as [`MessageFacts::key`]
    /// joins them.
    pub fn key_of<'b>(&self, id: &'b [u8], buf: &'b mut Vec<u8>) -> &'b [u8] {
        if self.firm.is_empty() {
            return id;
        }
        buf.clear();
        buf.extend_from_slice(id);
        with_firm(buf, self.firm);
        buf.as_slice()
    }
}

/// Appends the firm as the key's last part (SOH-separated: no FIX value holds SOH, so a
/// key with a firm never equals one without).
#[inline]
fn with_firm(buf: &mut Vec<u8>, firm: &[u8]) {
    if !firm.is_empty() {
        buf.push(SOH);
        buf.extend_from_slice(firm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_trans_type_versions_are_told_by_the_begin_string() {
        for (begin, old) in [
            ("FIX.4.0", true),
            ("FIX.4.1", true),
            ("FIX.4.2", true),
            ("FIX.4.3", false),
            ("FIX.4.4", false),
            ("FIXT.1.1", false),
        ] {
            let m = message_of(begin);
            assert_eq!(before_fix43(&m), old, "{begin}");
        }
        assert!(!before_fix43(b"8=FIX.4.2"), "too short to hold its SOH");
        assert!(
            !before_fix43(b"8=FIX.4.21\x01"),
            "not a version FIX defines"
        );
    }

    fn message_of(begin: &str) -> Vec<u8> {
        format!("8={begin}\x019=5\x0135=8\x0110=000\x01").into_bytes()
    }
    use crate::encode::test_message as encode;

    /// The standard header order puts MsgSeqNum (and PossDupFlag) after the CompIDs: a
    /// session-level message must not stop at the CompIDs (#21: every TestRequest and
    /// Heartbeat read as MsgSeqNum 0 made the next message a sequence gap).
    #[test]
    fn sequence_and_poss_dup_are_read_after_the_comp_ids() {
        let key = KeySpec::default();
        for mt in ["0", "1", "3", "4", "A", "j", "D", "8", "W"] {
            let m = encode(&[
                (35, mt),
                (49, "S"),
                (56, "T"),
                (34, "42"),
                (43, "Y"),
                (52, "20260101-00:00:00.000"),
                (11, "X"),
                (150, "0"),
                (39, "0"),
            ]);
            let f = MessageFacts::extract(&m, &key);
            assert_eq!(f.msg_seq_num, 42, "35={mt}");
            // Other application messages stop at the sequence (PossDup matters for the
            // session's own messages and the orders').
            assert_eq!(f.poss_dup, mt != "W", "35={mt}");
        }
    }

    /// A hub's firm joins the key: 115 on a request, 128 on a report or reject (never the
    /// other tag: a client's 128 names the destination, not itself). It is a header field:
    /// the search ends at the first body field, so a message without one reads no further.
    #[test]
    fn the_firm_joins_the_key_and_is_read_in_the_header_only() {
        let key = KeySpec::default();
        let mut buf = Vec::new();
        let header = |mt, firm: &[(u32, &'static str)]| {
            let mut f = vec![(35, mt), (49, "HUB"), (56, "VENUE"), (34, "2")];
            f.extend_from_slice(firm);
            f.extend([
                (11, "7"),
                (150, "0"),
                (39, "0"),
                (115, "LATE"),
                (128, "LATE"),
            ]);
            encode(&f)
        };
        let d = header("D", &[(115, "A"), (128, "VENUE2")]);
        let f = MessageFacts::extract(&d, &key);
        assert_eq!(f.firm, b"A");
        assert_eq!(f.key(&key, &mut buf).unwrap(), b"7\x01A");
        let r = header("8", &[(115, "VENUE2"), (128, "A")]);
        let f = MessageFacts::extract(&r, &key);
        assert_eq!(f.firm, b"A");
        assert_eq!(f.key(&key, &mut buf).unwrap(), b"7\x01A");
        assert_eq!(f.key_of(b"6", &mut buf), b"6\x01A");
        // Absent from the header: none, and the key is the ClOrdID alone.
        for mt in ["D", "8"] {
            let m = header(mt, &[]);
            let f = MessageFacts::extract(&m, &key);
            assert!(f.firm.is_empty(), "35={mt}");
            assert_eq!(f.key(&key, &mut buf).unwrap(), b"7");
            assert_eq!(f.key_of(b"6", &mut buf), b"6");
        }
        let two = KeySpec::parse("11,55").unwrap();
        let m = encode(&[(35, "D"), (115, "B"), (11, "7"), (55, "IBM")]);
        let f = MessageFacts::extract(&m, &two);
        assert_eq!(f.key(&two, &mut buf).unwrap(), b"7\x01IBM\x01B");
    }
}
