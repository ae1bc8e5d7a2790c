//! iLink 3's fields by name (the seam's [`OrderFields`]): what `--by` groups by and the
//! records keep, named as CME's schema names them, read from a framed message's SBE
//! root block by the generated layouts. Every request (NewOrderSingle514,
//! OrderCancelReplaceRequest515, OrderCancelRequest516) carries them; the execution
//! reports are not read for them (every request has its own).

use fixscope_protocol::fields::{FieldName, FieldSelection, FieldValues, OrderFields, Role};

use crate::messages::{decode, Message};
use crate::Ilink3;

/// iLink 3's fields: SecurityID (the instrument, in decimal) and Side (1 buy, 2 sell, as
/// the schema's SideReq enumeration numbers them).
const FIELDS: &[FieldName] = &[
    FieldName {
        name: "SecurityID",
        aliases: &[],
        role: Some(Role::Instrument),
    },
    FieldName {
        name: "Side",
        aliases: &[],
        role: Some(Role::Side),
    },
];

impl OrderFields for Ilink3 {
    const FIELDS: &'static [FieldName] = FIELDS;

    fn read(frame: &[u8], picked: &FieldSelection, out: &mut FieldValues) {
        out.clear();
        let request = match decode(frame) {
            Ok(Message::NewOrder(r) | Message::Replace(r) | Message::Cancel(r)) => r,
            _ => return,
        };
        for (at, f) in picked.picked() {
            let value = match f {
                0 => request.security_id,
                _ => request.side.map(i64::from),
            };
            if let Some(v) = value {
                out.set_decimal(at, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode;
    use crate::messages::Request;

    #[test]
    fn a_requests_security_id_and_side_are_read_by_name() {
        let r = Request {
            seq_num: 1,
            order_request_id: 9,
            cl_ord_id: b"CL1",
            order_id: Some(5),
            sending_time_ns: Some(1),
            security_id: Some(42_000),
            side: Some(2),
            order_qty: Some(1),
            price: Some(1),
        };
        let picked = FieldSelection::pick(Ilink3::FIELDS, ["side", "securityid"]);
        let mut out = FieldValues::default();
        for frame in [
            encode::new_order(&r),
            encode::replace(&r),
            encode::cancel(&r),
        ] {
            Ilink3::read(&frame, &picked, &mut out);
            assert_eq!(out.by_values(), [&b"2"[..], b"42000", b""]);
        }
        Ilink3::read(b"\x00\x01", &picked, &mut out);
        assert_eq!(out.by_values(), [&b""[..]; 3]);
    }
}
