//! The OUCH version read from a session's own messages (`detect::version_of`): every
//! data packet of each version's sample sessions is read as that version or as neither,
//! never as the other; the orders and their answers decide.

use fixscope_ouch::detect::version_of;
use fixscope_ouch::encode::{self, ouch42_packet, ouch50_packet};
use fixscope_ouch::orders::Version;
use fixscope_ouch::ouch42;
use fixscope_ouch::ouch50::{self as o50, Appendage};

use super::samples;

#[test]
fn no_packet_of_one_version_reads_as_the_other() {
    for (version, packets) in [
        (
            Version::Ouch42,
            [samples::client42(), samples::host42()].concat(),
        ),
        (
            Version::Ouch50,
            [samples::client50(), samples::host50()].concat(),
        ),
    ] {
        let mut decided = 0;
        for p in &packets {
            if let Some(v) = version_of(p) {
                assert_eq!(v, version, "{p:?}");
                decided += 1;
            }
        }
        // Every order and answer decides; logins, heartbeats and System Events do not.
        assert!(decided >= packets.len() / 2, "{version:?}: {decided}");
    }
}

#[test]
fn orders_decide_and_session_packets_do_not() {
    let enter42 = ouch42_packet(&samples::enter42(b"ORD00000000001"));
    assert_eq!(version_of(&enter42), Some(Version::Ouch42));
    for appendage in [&b""[..], samples::APPENDAGE] {
        let enter50 = ouch50_packet(&samples::enter50(7, appendage));
        assert_eq!(version_of(&enter50), Some(Version::Ouch50), "{appendage:?}");
    }
    let system_event = ouch42_packet(&ouch42::Message::SystemEvent {
        timestamp_ns: 1,
        event_code: b'S',
    });
    assert_eq!(version_of(&system_event), None, "10 bytes in both versions");
    assert_eq!(
        version_of(&encode::login_request(b"U", b"p", b"", Some(1))),
        None
    );
    assert_eq!(version_of(&encode::packet(b'H', b"")), None);
}

#[test]
fn a_message_neither_version_reads_decides_nothing() {
    // A 4.2 Enter Order one byte short.
    let mut short = ouch42_packet(&samples::enter42(b"ORD00000000001"));
    short.pop();
    short[1] -= 1;
    assert_eq!(version_of(&short), None);
    // A 5.0 Enter Order whose appendage length declares more than it carries.
    let mut lying = ouch50_packet(&samples::enter50(7, b""));
    let n = lying.len();
    lying[n - 1] = 4;
    assert_eq!(version_of(&lying), None);
}

#[test]
fn a_50_order_as_long_as_a_42_one_is_read_by_its_binary_fields() {
    // 47 bytes + a 2-byte appendage = 4.2's Enter Order length (49): 4.2 would read the
    // binary UserRefNum and quantity as its token, which is not printable.
    let mut m = match samples::enter50(7, b"") {
        o50::Message::EnterOrder(o) => o,
        _ => unreachable!(),
    };
    m.appendage = Appendage { bytes: b"\x01\x0b" };
    let p = ouch50_packet(&o50::Message::EnterOrder(m));
    assert_eq!(p.len() - 3, ouch42::size::ENTER_ORDER);
    assert_eq!(version_of(&p), Some(Version::Ouch50));
}

proptest::proptest! {
    /// Any bytes, framed as a SoupBinTCP data packet of either direction or not: an
    /// answer, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
        let _ = version_of(&bytes);
        let _ = version_of(&encode::packet(b'U', &bytes));
        let _ = version_of(&encode::packet(b'S', &bytes));
    }
}
