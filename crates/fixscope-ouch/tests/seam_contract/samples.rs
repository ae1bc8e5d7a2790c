//! Sample OUCH 4.2 and 5.0 messages with values set here, and each direction of a session
//! carrying them as SoupBinTCP packets.

use fixscope_ouch::encode::{self, ouch42_packet, ouch50_packet};
use fixscope_ouch::ouch42::{self as o42};
use fixscope_ouch::ouch50::{self as o50, Appendage};

/// An Optional Appendage: Firm (tag 2) `FRM1`, MinQty (tag 3) 100.
pub const APPENDAGE: &[u8] = &[5, 2, b'F', b'R', b'M', b'1', 5, 3, 0, 0, 0, 100];

pub fn enter42(token: &'static [u8]) -> o42::Message<'static> {
    o42::Message::EnterOrder(o42::EnterOrder {
        token,
        side: b'B',
        shares: 300,
        stock: b"AAPL",
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        customer_type: b'R',
    })
}

pub fn accepted42(token: &'static [u8], ts: u64) -> o42::Accepted<'static> {
    o42::Accepted {
        timestamp_ns: ts,
        token,
        side: b'B',
        shares: 300,
        stock: b"AAPL",
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        order_reference_number: 77_000_001,
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        order_state: b'L',
        bbo_weight_indicator: b'2',
    }
}

pub fn replace42(existing: &'static [u8], replacement: &'static [u8]) -> o42::Message<'static> {
    o42::Message::ReplaceOrder(o42::ReplaceOrder {
        existing_token: existing,
        replacement_token: replacement,
        shares: 200,
        price: 1_894_900,
        time_in_force: 99_999,
        display: b'Y',
        iso_eligibility: b'N',
        min_quantity: 0,
    })
}

pub fn enter50(user_ref_num: u32, appendage: &'static [u8]) -> o50::Message<'static> {
    o50::Message::EnterOrder(o50::EnterOrder {
        user_ref_num,
        side: b'S',
        quantity: 500,
        symbol: b"MSFT",
        price: 4_123_400,
        time_in_force: b'0',
        display: b'Y',
        capacity: b'P',
        iso_eligibility: b'N',
        cross_type: b'N',
        cl_ord_id: b"CL-0001",
        appendage: Appendage { bytes: appendage },
    })
}

pub fn accepted50(user_ref_num: u32, appendage: &'static [u8]) -> o50::Accepted<'static> {
    o50::Accepted {
        timestamp_ns: 34_200_000_000_123,
        user_ref_num,
        side: b'S',
        quantity: 500,
        symbol: b"MSFT",
        price: 4_123_400,
        time_in_force: b'0',
        display: b'Y',
        order_reference_number: 88_000_002,
        capacity: b'P',
        iso_eligibility: b'N',
        cross_type: b'N',
        order_state: b'L',
        cl_ord_id: b"CL-0001",
        appendage: Appendage { bytes: appendage },
    }
}

/// The client's side of an OUCH 4.2 session: login, enter, replace, cancel, modify,
/// heartbeat, logout.
pub fn client42() -> Vec<Vec<u8>> {
    vec![
        encode::login_request(b"USER01", b"pw", b"", Some(1)),
        ouch42_packet(&enter42(b"ORD00000000001")),
        ouch42_packet(&replace42(b"ORD00000000001", b"ORD00000000002")),
        ouch42_packet(&o42::Message::CancelOrder {
            token: b"ORD00000000002",
            shares: 0,
        }),
        ouch42_packet(&o42::Message::ModifyOrder {
            token: b"ORD3",
            side: b'S',
            shares: 50,
        }),
        encode::packet(b'R', b""),
        encode::packet(b'O', b""),
    ]
}

/// The host's side of an OUCH 4.2 session.
pub fn host42() -> Vec<Vec<u8>> {
    let ts = 34_200_000_000_001;
    vec![
        encode::login_accepted(b"SESSION042", 1),
        ouch42_packet(&o42::Message::SystemEvent {
            timestamp_ns: ts,
            event_code: b'S',
        }),
        ouch42_packet(&o42::Message::Accepted(accepted42(b"ORD00000000001", ts))),
        ouch42_packet(&o42::Message::Replaced(o42::Replaced {
            accepted: accepted42(b"ORD00000000002", ts + 5),
            previous_token: b"ORD00000000001",
        })),
        ouch42_packet(&o42::Message::Executed {
            timestamp_ns: ts + 9,
            token: b"ORD00000000002",
            executed_shares: 100,
            execution_price: 1_894_900,
            liquidity_flag: b'A',
            match_number: 5_550_001,
        }),
        encode::packet(b'H', b""),
        ouch42_packet(&o42::Message::Canceled {
            timestamp_ns: ts + 20,
            token: b"ORD00000000002",
            decrement_shares: 100,
            reason: b'U',
        }),
        encode::packet(b'+', b"debug text"),
        ouch42_packet(&o42::Message::Rejected {
            timestamp_ns: ts + 30,
            token: b"ORD9",
            reason: b'S',
        }),
        encode::packet(b'Z', b""),
    ]
}

/// The client's side of an OUCH 5.0 session.
pub fn client50() -> Vec<Vec<u8>> {
    vec![
        encode::login_request(b"USER05", b"pw", b"SESSION050", Some(12)),
        ouch50_packet(&enter50(1001, APPENDAGE)),
        ouch50_packet(&enter50(1002, b"")),
        ouch50_packet(&o50::Message::ReplaceOrder(o50::ReplaceOrder {
            orig_user_ref_num: 1001,
            user_ref_num: 1003,
            quantity: 400,
            price: 4_123_300,
            time_in_force: b'0',
            display: b'Y',
            iso_eligibility: b'N',
            cl_ord_id: b"CL-0003",
            appendage: Appendage { bytes: APPENDAGE },
        })),
        ouch50_packet(&o50::Message::CancelOrder {
            user_ref_num: 1003,
            quantity: 0,
        }),
        encode::packet(b'R', b""),
    ]
}

/// The host's side of an OUCH 5.0 session.
pub fn host50() -> Vec<Vec<u8>> {
    vec![
        encode::login_accepted(b"SESSION050", 12),
        ouch50_packet(&o50::Message::Accepted(accepted50(1001, APPENDAGE))),
        ouch50_packet(&o50::Message::Accepted(accepted50(1002, b""))),
        ouch50_packet(&o50::Message::Replaced {
            orig_user_ref_num: 1001,
            accepted: accepted50(1003, APPENDAGE),
        }),
        ouch50_packet(&o50::Message::Executed {
            timestamp_ns: 34_200_000_000_500,
            user_ref_num: 1003,
            quantity: 100,
            price: 4_123_300,
            liquidity_flag: b'R',
            match_number: 6_660_001,
            appendage: Appendage { bytes: b"" },
        }),
        encode::packet(b'H', b""),
        ouch50_packet(&o50::Message::Rejected {
            timestamp_ns: 34_200_000_000_900,
            user_ref_num: 1004,
            reason: 0x0102,
            cl_ord_id: b"CL-0004",
        }),
    ]
}

/// Each direction's stream with its packet count.
pub fn streams() -> Vec<(&'static str, (Vec<u8>, usize))> {
    [
        ("client 4.2", client42()),
        ("host 4.2", host42()),
        ("client 5.0", client50()),
        ("host 5.0", host50()),
    ]
    .into_iter()
    .map(|(name, packets)| (name, (packets.concat(), packets.len())))
    .collect()
}
