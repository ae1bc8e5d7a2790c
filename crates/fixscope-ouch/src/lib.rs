//! Nasdaq OUCH 4.2 and OUCH 5.0 over SoupBinTCP 3.00 on the protocol seam
//! (fixscope-protocol): `soupbin` frames a direction's stream into SoupBinTCP logical
//! packets (the seam's `Framer`) and reads them; `ouch42` and `ouch50` read the OUCH
//! message inside a `U` (client → host) or `S` (host → client) packet; `encode` builds
//! both, for the tests. [`Ouch42`] and [`Ouch50`] are the seam's `Protocol`s.
//!
//! `orders` is the order layer: an [`orders::OuchConnection`] per TCP connection, fed the
//! framed packets of both directions in capture order, says what each means to the
//! correlator (at most one seam `OrderEvent`) and to the session table (a
//! [`session::SessionFact`]); what outlives a connection — the logical session's highest
//! host sequence number, its keys and open orders — is in the run's
//! [`orders::SessionBook`], so a re-login's replay counts nothing twice.
//!
//! Nothing consumes the crate yet: the correlator still takes FIX's facts
//! (docs/architecture.md, "Adding a protocol"; docs/protocols.md, "Session and pairing
//! rules", says how OUCH's responses pair with their requests).

pub mod detect;
pub mod encode;
pub mod fields;
pub mod orders;
pub mod ouch42;
pub mod ouch50;
mod read;
pub mod session;
pub mod soupbin;

use fixscope_protocol::Recognition;
use soupbin::{packet_type, LOGIN_ACCEPTED_LEN, LOGIN_REJECTED_LEN, LOGIN_REQUEST_LEN};

pub use read::DecodeError;

/// OUCH 4.2 over SoupBinTCP.
pub struct Ouch42;

/// OUCH 5.0 over SoupBinTCP.
pub struct Ouch50;

impl fixscope_protocol::Protocol for Ouch42 {
    const NAME: &'static str = "ouch42";
    type Framer = soupbin::SoupBinFramer;

    fn recognise(first_bytes: &[u8]) -> Recognition {
        recognise_soupbin(first_bytes)
    }
}

impl fixscope_protocol::Protocol for Ouch50 {
    const NAME: &'static str = "ouch50";
    type Framer = soupbin::SoupBinFramer;

    fn recognise(first_bytes: &[u8]) -> Recognition {
        recognise_soupbin(first_bytes)
    }
}

/// A SoupBinTCP session's first bytes: the client's Login Request (length 0x002F, `L`,
/// then printable username, password, session and a sequence number of digits and
/// spaces), or the host's answer, Login Accepted (0x001F, `A`, session, sequence number)
/// or Login Rejected (0x0002, `J`, a reason). Both OUCH versions log in alike, so this
/// does not tell 4.2 from 5.0: the version is what the ports are configured with.
fn recognise_soupbin(b: &[u8]) -> Recognition {
    let shapes: [(usize, u8); 3] = [
        (LOGIN_REQUEST_LEN, packet_type::LOGIN_REQUEST),
        (LOGIN_ACCEPTED_LEN, packet_type::LOGIN_ACCEPTED),
        (LOGIN_REJECTED_LEN, packet_type::LOGIN_REJECTED),
    ];
    let mut need_more = false;
    for (len, t) in shapes {
        let mut head = [0u8; 3];
        head[..2].copy_from_slice(&(len as u16).to_be_bytes());
        head[2] = t;
        let n = b.len().min(3);
        if b[..n] != head[..n] {
            continue;
        }
        let have = &b[n..b.len().min(2 + len)];
        if !login_fields_plausible(t, have) {
            continue;
        }
        if b.len() < 2 + len {
            need_more = true;
        } else {
            return Recognition::Yes;
        }
    }
    if need_more {
        Recognition::NeedMore
    } else {
        Recognition::No
    }
}

/// Whether the payload bytes seen so far of a login packet of type `t` can be one:
/// printable ASCII, and the sequence-number field (the last 20 bytes) digits or spaces.
fn login_fields_plausible(t: u8, payload: &[u8]) -> bool {
    let seq_from = match t {
        packet_type::LOGIN_REQUEST => 26,
        packet_type::LOGIN_ACCEPTED => 10,
        _ => usize::MAX,
    };
    payload.iter().enumerate().all(|(i, &c)| {
        if i >= seq_from {
            c == b' ' || c.is_ascii_digit()
        } else {
            (0x20..=0x7e).contains(&c)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_protocol::Protocol;

    #[test]
    fn a_login_request_or_its_answer_is_soupbintcp_and_fix_is_not() {
        let login = encode::login_request(b"USER01", b"secret", b"", Some(1));
        assert_eq!(&login[..3], b"\x00\x2fL");
        assert_eq!(Ouch42::recognise(&login), Recognition::Yes);
        assert_eq!(Ouch50::recognise(&login), Recognition::Yes);
        for n in 0..login.len() {
            assert_eq!(Ouch42::recognise(&login[..n]), Recognition::NeedMore, "{n}");
        }
        let accepted = encode::login_accepted(b"SESSION001", 17);
        assert_eq!(Ouch50::recognise(&accepted), Recognition::Yes);
        assert_eq!(
            Ouch42::recognise(&encode::login_rejected(b'A')),
            Recognition::Yes
        );
        assert_eq!(Ouch42::recognise(b"8=FIX.4.2\x019=5\x01"), Recognition::No);
        assert_eq!(Ouch42::recognise(b"8=FIX"), Recognition::No);
        // A sequenced packet, a heartbeat: a session picked up midway is not recognised.
        assert_eq!(Ouch42::recognise(b"\x00\x01H"), Recognition::No);
        assert_eq!(
            Ouch42::recognise(&encode::packet(b'S', b"S12345678S")),
            Recognition::No
        );
        // Letters where the sequence number's digits go.
        let mut bad = login.clone();
        bad[40] = b'x';
        assert_eq!(Ouch42::recognise(&bad), Recognition::No);
        assert_eq!((Ouch42::NAME, Ouch50::NAME), ("ouch42", "ouch50"));
    }
}
