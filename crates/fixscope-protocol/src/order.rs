//! The order half of the seam: what a protocol's message means to the correlator, in no
//! protocol's words. A protocol crate turns each framed message of an order session into
//! at most one [`OrderEvent`]; the correlator pairs them by key. FIX still reaches the
//! correlator through its own facts (fixscope-fix); a binary protocol through these.

pub use fixscope_model::order::RequestType;

/// How a response relates to the life of the order it answers. Each protocol classifies
/// its own responses by its own spec's rules (docs/protocols.md says which are which).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponseKind {
    /// It acknowledges the request (accepted, replaced, cancelled, rejected).
    pub ack: bool,
    /// It reports an execution.
    pub fill: bool,
    /// The order needs no more tracking (filled, cancelled, rejected, a cancel refused).
    pub terminal: bool,
    /// The order the request named (the one it replaces or cancels) is over.
    pub ends_original: bool,
    /// A reject of the request.
    pub reject: bool,
    /// A report on an order that answers no request (a bust, a correction, a status):
    /// never a first response, an ack or a fill.
    pub unsolicited: bool,
    /// The venue ended the order on its own (an IOC's expiry): the answer of an order still
    /// waiting, else an unsolicited report of a finished one.
    pub venue_initiated: bool,
    /// A report of one leg of a multileg order (FIX), or of the whole.
    pub multileg: bool,
}

/// A message's own code, as the protocol prints it (FIX `8/0/0`: MsgType, ExecType,
/// OrdStatus; OUCH `A`, `E`; iLink 3 a template id): what the slowest orders, the trace
/// and the records show. Up to 8 bytes, zero-padded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResponseCode(pub [u8; 8]);

impl ResponseCode {
    /// The code of `text` (its first 8 bytes).
    pub fn of(text: &[u8]) -> Self {
        let mut code = [0u8; 8];
        let n = text.len().min(8);
        code[..n].copy_from_slice(&text[..n]);
        ResponseCode(code)
    }

    /// The code's bytes, without the padding.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(8);
        &self.0[..n]
    }
}

/// One order event of a session, keyed as the protocol pairs responses with requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderEvent<'a> {
    /// A request the correlator tracks under `key` on its session.
    Request {
        request_type: RequestType,
        key: &'a [u8],
        /// A request seen before, sent again (a resend after a reconnect): never a new
        /// order, never a duplicate.
        resend: bool,
        /// The request's own code, as the protocol prints it (OUCH `O`, iLink 3 `514`).
        code: ResponseCode,
    },
    /// A response to the request tracked under `key`.
    Response {
        key: &'a [u8],
        kind: ResponseKind,
        /// The order this response ends besides its own (the one a replace replaced, the
        /// order a cancel cancelled), by its key; empty when none.
        ends: &'a [u8],
        code: ResponseCode,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_code_keeps_its_bytes_without_padding() {
        assert_eq!(ResponseCode::of(b"8/0/0").as_bytes(), b"8/0/0");
        assert_eq!(ResponseCode::of(b"E").as_bytes(), b"E");
        assert_eq!(ResponseCode::of(b"").as_bytes(), b"");
        assert_eq!(ResponseCode::of(b"123456789").as_bytes(), b"12345678");
    }
}
