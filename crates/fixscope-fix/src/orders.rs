//! The orders of a NewOrderList (35=E) or a NewOrderCross (35=s): one request per entry of
//! its repeating group (NoOrders 73, whose entries begin with ClOrdID 11; NoSides 552,
//! whose entries begin with Side 54), each under its own ClOrdID. These messages are rare:
//! read whole, apart from the one-pass reader of the hot types ([`super::MessageFacts`]).

use crate::{message::Fields, tag};

/// One order of a list or a cross: the fields of its group entry (empty when absent). The
/// Symbol is the entry's, else the message's first (a cross's instrument is the message's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupOrder<'a> {
    pub cl_ord_id: &'a [u8],
    pub symbol: &'a [u8],
    pub side: &'a [u8],
    pub account: &'a [u8],
}

/// The orders of `message`, whose group entries begin with tag `first` (see
/// [`crate::order::RequestType::has_order_group`]), in the message's order, into `out`
/// (emptied first). A field repeated in one entry: its first counts. An entry without a
/// ClOrdID is an order all the same (a request with no key: `missing_key`).
pub fn group_orders<'a>(message: &'a [u8], first: u32, out: &mut Vec<GroupOrder<'a>>) {
    out.clear();
    let mut message_symbol: &[u8] = &[];
    for (t, value) in Fields::body(message) {
        if t == first {
            out.push(GroupOrder::default());
        }
        if t == tag::SYMBOL && message_symbol.is_empty() {
            message_symbol = value;
        }
        let Some(order) = out.last_mut() else {
            continue;
        };
        let field = match t {
            tag::CL_ORD_ID => &mut order.cl_ord_id,
            tag::SYMBOL => &mut order.symbol,
            tag::SIDE => &mut order.side,
            tag::ACCOUNT => &mut order.account,
            _ => continue,
        };
        if field.is_empty() {
            *field = value;
        }
    }
    for order in out.iter_mut().filter(|o| o.symbol.is_empty()) {
        order.symbol = message_symbol;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::test_message as encode;

    #[test]
    fn a_list_s_orders_and_a_cross_s_sides_are_read_from_their_group() {
        let list = encode(&[
            (35, "E"),
            (49, "C"),
            (56, "V"),
            (34, "2"),
            (66, "L1"),
            (73, "2"),
            (11, "A"),
            (67, "1"),
            (55, "IBM"),
            (54, "1"),
            (1, "X"),
            (11, "B"),
            (67, "2"),
            (55, "MSFT"),
            (54, "2"),
        ]);
        let mut out = Vec::new();
        group_orders(&list, tag::CL_ORD_ID, &mut out);
        let ids: Vec<_> = out
            .iter()
            .map(|o| (o.cl_ord_id, o.symbol, o.side, o.account))
            .collect();
        assert_eq!(
            ids,
            [
                (&b"A"[..], &b"IBM"[..], &b"1"[..], &b"X"[..]),
                (b"B", b"MSFT", b"2", b""),
            ]
        );
        let cross = encode(&[
            (35, "s"),
            (49, "C"),
            (56, "V"),
            (34, "3"),
            (548, "X1"),
            (552, "2"),
            (54, "1"),
            (11, "XB"),
            (1, "AB"),
            (54, "2"),
            (11, "XS"),
            (55, "IBM"),
        ]);
        group_orders(&cross, tag::SIDE, &mut out);
        let ids: Vec<_> = out
            .iter()
            .map(|o| (o.cl_ord_id, o.symbol, o.side))
            .collect();
        assert_eq!(
            ids,
            [(&b"XB"[..], &b"IBM"[..], &b"1"[..]), (b"XS", b"IBM", b"2"),]
        );
    }
}
