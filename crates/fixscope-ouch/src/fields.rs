//! OUCH's fields by name (the seam's [`OrderFields`]): what `--by` groups by and the
//! records keep, named as each version's spec names them, read from a framed SoupBinTCP
//! packet of either side. An Enter Order carries them all; an Accepted and a Replaced
//! (the host's) echo the order's; a Replace carries its time in force and display, a
//! Modify its side; a Cancel, an Executed and a Canceled carry none (the correlator
//! takes the response's values where the request had none, as FIX's).

use fixscope_protocol::fields::{FieldName, FieldSelection, FieldValues, OrderFields, Role};

use crate::soupbin::{self, trim_spaces};
use crate::{ouch42, ouch50, Ouch42, Ouch50};

const fn field(
    name: &'static str,
    aliases: &'static [&'static str],
    role: Option<Role>,
) -> FieldName {
    FieldName {
        name,
        aliases,
        role,
    }
}

/// OUCH 4.2's fields, in [`View`]'s order. `Buy/Sell Indicator` is `Side` (and answers
/// to its own name without the slash); `Stock` answers to 5.0's `Symbol` too.
const FIELDS_42: &[FieldName] = &[
    field("Stock", &["Symbol"], Some(Role::Instrument)),
    field("Side", &["BuySellIndicator"], Some(Role::Side)),
    field("Firm", &[], Some(Role::Account)),
    field("Capacity", &[], None),
    field("Display", &[], None),
    field("TimeInForce", &[], None),
    field("CrossType", &[], None),
    field("CustomerType", &[], None),
];

/// OUCH 5.0's fields, in [`View`]'s order (its Firm is an optional appendage: not read).
const FIELDS_50: &[FieldName] = &[
    field("Symbol", &["Stock"], Some(Role::Instrument)),
    field("Side", &["BuySellIndicator"], Some(Role::Side)),
    field("Capacity", &[], None),
    field("Display", &[], None),
    field("TimeInForce", &[], None),
    field("CrossType", &[], None),
    field("ClOrdID", &[], None),
];

/// What one message has of a version's fields, by the field's index.
#[derive(Default)]
struct View<'a> {
    text: [&'a [u8]; 8],
    number: [Option<u32>; 8],
}

impl<'a> View<'a> {
    fn text(&mut self, i: usize, v: &'a [u8]) {
        self.text[i] = trim_spaces(v);
    }

    fn letter(&mut self, i: usize, v: &'a u8) {
        if *v != b' ' && *v != 0 {
            self.text[i] = std::slice::from_ref(v);
        }
    }

    fn write(&self, picked: &FieldSelection, out: &mut FieldValues) {
        for (at, f) in picked.picked() {
            match (self.text.get(f), self.number.get(f)) {
                (_, Some(&Some(n))) => out.set_decimal(at, i64::from(n)),
                (Some(t), _) => out.set(at, t),
                _ => {}
            }
        }
    }
}

fn view42<'a>(m: &'a ouch42::Message<'a>) -> View<'a> {
    use ouch42::Message as M;
    let mut v = View::default();
    let accepted = match m {
        M::EnterOrder(o) => {
            v.text(0, o.stock);
            v.letter(1, &o.side);
            v.text(2, o.firm);
            v.letter(3, &o.capacity);
            v.letter(4, &o.display);
            v.number[5] = Some(o.time_in_force);
            v.letter(6, &o.cross_type);
            v.letter(7, &o.customer_type);
            return v;
        }
        M::ReplaceOrder(r) => {
            v.letter(4, &r.display);
            v.number[5] = Some(r.time_in_force);
            return v;
        }
        M::ModifyOrder { side, .. } | M::OrderModified { side, .. } => {
            v.letter(1, side);
            return v;
        }
        M::Accepted(a) => a,
        M::Replaced(r) => &r.accepted,
        _ => return v,
    };
    v.text(0, accepted.stock);
    v.letter(1, &accepted.side);
    v.text(2, accepted.firm);
    v.letter(3, &accepted.capacity);
    v.letter(4, &accepted.display);
    v.number[5] = Some(accepted.time_in_force);
    v.letter(6, &accepted.cross_type);
    v
}

fn view50<'a>(m: &'a ouch50::Message<'a>) -> View<'a> {
    use ouch50::Message as M;
    let mut v = View::default();
    let accepted = match m {
        M::EnterOrder(o) => {
            v.text(0, o.symbol);
            v.letter(1, &o.side);
            v.letter(2, &o.capacity);
            v.letter(3, &o.display);
            v.letter(4, &o.time_in_force);
            v.letter(5, &o.cross_type);
            v.text(6, o.cl_ord_id);
            return v;
        }
        M::ReplaceOrder(r) => {
            v.letter(3, &r.display);
            v.letter(4, &r.time_in_force);
            v.text(6, r.cl_ord_id);
            return v;
        }
        M::ModifyOrder { side, .. } | M::OrderModified { side, .. } => {
            v.letter(1, side);
            return v;
        }
        M::Accepted(a) => a,
        M::Replaced { accepted, .. } => accepted,
        _ => return v,
    };
    v.text(0, accepted.symbol);
    v.letter(1, &accepted.side);
    v.letter(2, &accepted.capacity);
    v.letter(3, &accepted.display);
    v.letter(4, &accepted.time_in_force);
    v.letter(5, &accepted.cross_type);
    v.text(6, accepted.cl_ord_id);
    v
}

impl OrderFields for Ouch42 {
    const FIELDS: &'static [FieldName] = FIELDS_42;

    fn read(frame: &[u8], picked: &FieldSelection, out: &mut FieldValues) {
        out.clear();
        let Ok(packet) = soupbin::decode(frame) else {
            return;
        };
        if let Some(Ok(m)) = ouch42::decode(&packet) {
            view42(&m).write(picked, out);
        }
    }
}

impl OrderFields for Ouch50 {
    const FIELDS: &'static [FieldName] = FIELDS_50;

    fn read(frame: &[u8], picked: &FieldSelection, out: &mut FieldValues) {
        out.clear();
        let Ok(packet) = soupbin::decode(frame) else {
            return;
        };
        if let Some(Ok(m)) = ouch50::decode(&packet) {
            view50(&m).write(picked, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{ouch42_packet, ouch50_packet};

    fn enter42(stock: &'static [u8], side: u8) -> Vec<u8> {
        ouch42_packet(&ouch42::Message::EnterOrder(ouch42::EnterOrder {
            token: b"ORD0000001    ",
            side,
            shares: 100,
            stock,
            price: 1_000,
            time_in_force: 99_999,
            firm: b"FRM1",
            display: b'Y',
            capacity: b'A',
            iso_eligibility: b'N',
            min_quantity: 0,
            cross_type: b'N',
            customer_type: b'R',
        }))
    }

    #[test]
    fn an_enter_orders_fields_are_read_by_name_and_a_cancel_has_none() {
        let picked = FieldSelection::pick(Ouch42::FIELDS, ["stock", "side", "TimeInForce"]);
        let mut out = FieldValues::default();
        Ouch42::read(&enter42(b"MSFT    ", b'S'), &picked, &mut out);
        assert_eq!(out.by_values(), [&b"MSFT"[..], b"S", b"99999"]);
        let cancel = ouch42_packet(&ouch42::Message::CancelOrder {
            token: b"ORD0000001    ",
            shares: 0,
        });
        Ouch42::read(&cancel, &picked, &mut out);
        assert_eq!(out.by_values(), [&b""[..]; 3], "a cancel names no stock");
        // A login, a heartbeat: nothing, never a panic.
        Ouch42::read(b"\x00\x01R", &picked, &mut out);
        Ouch42::read(b"", &picked, &mut out);
        assert_eq!(out.by_values(), [&b""[..]; 3]);
        let roles = FieldSelection::roles(Ouch42::FIELDS);
        Ouch42::read(&enter42(b"AAPL    ", b'B'), &roles, &mut out);
        assert_eq!(out.by_values(), [&b"AAPL"[..], b"B", b"FRM1"]);
    }

    #[test]
    fn ouch50s_symbol_answers_to_stock_and_its_accepted_echoes_it() {
        let picked = FieldSelection::pick(Ouch50::FIELDS, ["Stock", "ClOrdID"]);
        let accepted = ouch50_packet(&ouch50::Message::Accepted(ouch50::Accepted {
            timestamp_ns: 1,
            user_ref_num: 7,
            side: b'B',
            quantity: 100,
            symbol: b"QQQ     ",
            price: 1,
            time_in_force: b'0',
            display: b'Y',
            order_reference_number: 1,
            capacity: b'A',
            iso_eligibility: b'N',
            cross_type: b'N',
            order_state: b'L',
            cl_ord_id: b"CL1           ",
            appendage: ouch50::Appendage { bytes: b"" },
        }));
        let mut out = FieldValues::default();
        Ouch50::read(&accepted, &picked, &mut out);
        assert_eq!(out.by_values(), [&b"QQQ"[..], b"CL1", b""]);
        assert!(fixscope_protocol::fields::find(Ouch50::FIELDS, "firm").is_none());
    }
}
