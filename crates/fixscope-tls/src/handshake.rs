//! The few handshake fields decryption needs, read by hand: the client random (the key
//! log's index), the server random (TLS 1.2's key block), the version (`supported_versions`
//! in TLS 1.3) and the cipher suite, HelloRetryRequest, and whether 0-RTT data was offered.
//! By hand because these are five fixed-position fields of two messages: `tls-parser`
//! would bring nom and parse (and allocate) every extension of every message to give them.

use crate::suite::Version;

pub const CLIENT_HELLO: u8 = 1;
pub const SERVER_HELLO: u8 = 2;
pub const NEW_SESSION_TICKET: u8 = 4;
pub const FINISHED: u8 = 20;
pub const KEY_UPDATE: u8 = 24;

/// RFC 8446 §4.1.3: a ServerHello with this random is a HelloRetryRequest.
pub const HELLO_RETRY_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

const EXT_EARLY_DATA: u16 = 42;
const EXT_SUPPORTED_VERSIONS: u16 = 43;

/// What a ClientHello tells us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHello {
    pub random: [u8; 32],
    /// The client offered 0-RTT data (the `early_data` extension).
    pub early_data: bool,
}

/// What a ServerHello (or HelloRetryRequest) tells us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerHello {
    pub random: [u8; 32],
    pub cipher_suite: u16,
    /// `None`: a version we do not decrypt (TLS 1.1 and earlier).
    pub version: Option<Version>,
    pub hello_retry: bool,
    /// The ServerHello's own version field (0x0303 in TLS 1.3, which names itself in
    /// `supported_versions`).
    pub legacy_version: u16,
}

/// A cursor over a message body; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }
    fn random(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }
}

/// Each extension as (type, body), until the list ends or is malformed.
fn extensions(list: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut r = Reader(list);
    std::iter::from_fn(move || {
        let t = r.u16()?;
        let body = r.vec16()?;
        Some((t, body))
    })
}

/// A ClientHello's body (after the 4-byte handshake header).
pub fn client_hello(body: &[u8]) -> Option<ClientHello> {
    let mut r = Reader(body);
    r.u16()?; // legacy_version
    let random = r.random()?;
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    let exts = r.vec16().unwrap_or(&[]);
    let early_data = extensions(exts).any(|(t, _)| t == EXT_EARLY_DATA);
    Some(ClientHello { random, early_data })
}

/// A ServerHello's body (after the 4-byte handshake header).
pub fn server_hello(body: &[u8]) -> Option<ServerHello> {
    let mut r = Reader(body);
    let legacy_version = r.u16()?;
    let random = r.random()?;
    r.vec8()?; // legacy_session_id_echo
    let cipher_suite = r.u16()?;
    r.u8()?; // legacy_compression_method
    let exts = r.vec16().unwrap_or(&[]);
    let selected = extensions(exts)
        .find(|&(t, b)| t == EXT_SUPPORTED_VERSIONS && b.len() == 2)
        .map(|(_, b)| u16::from_be_bytes([b[0], b[1]]));
    let version = match selected.unwrap_or(legacy_version) {
        0x0304 => Some(Version::Tls13),
        0x0303 => Some(Version::Tls12),
        _ => None,
    };
    Some(ServerHello {
        random,
        cipher_suite,
        version,
        hello_retry: random == HELLO_RETRY_RANDOM,
        legacy_version,
    })
}

/// Handshake messages of one direction framed across records (a message may span
/// records, a record may hold several messages). Bounded: a message claiming more than
/// [`HandshakeFramer::MAX_MESSAGE`] ends framing (`None` from `next`).
#[derive(Debug, Default)]
pub struct HandshakeFramer {
    buf: Vec<u8>,
    broken: bool,
}

impl HandshakeFramer {
    /// Certificate chains are the largest messages; 256 KiB is far beyond any.
    pub const MAX_MESSAGE: usize = 256 << 10;

    pub fn push(&mut self, bytes: &[u8]) {
        if !self.broken {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// Forgets a partial message (the epoch changed, or a hole).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.broken = false;
    }

    /// The next complete message as (type, body), owned (the caller acts on it while
    /// pushing more).
    pub fn next_message(&mut self) -> Option<(u8, Vec<u8>)> {
        if self.broken || self.buf.len() < 4 {
            return None;
        }
        let len = u32::from_be_bytes([0, self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len > Self::MAX_MESSAGE {
            self.broken = true;
            self.buf.clear();
            return None;
        }
        if self.buf.len() < 4 + len {
            return None;
        }
        let kind = self.buf[0];
        let body = self.buf[4..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Some((kind, body))
    }
}
