//! Building FIX messages with correct BodyLength (9) and CheckSum (10).
//!
//! Used by the simulator and by tests; allocation-free once its buffers have grown.

use super::{checksum, SOH};

/// Builds one message at a time: `start`, then `field`s, then `finish` into an output buffer.
#[derive(Debug, Default)]
pub struct FixEncoder {
    body: Vec<u8>,
}

impl FixEncoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a message of type `msg_type` (35 is always the first body field).
    pub fn start(&mut self, msg_type: &[u8]) -> &mut Self {
        self.body.clear();
        self.field(super::tag::MSG_TYPE, msg_type)
    }

    pub fn field(&mut self, tag: u32, value: &[u8]) -> &mut Self {
        push_uint(&mut self.body, tag as u64);
        self.body.push(b'=');
        self.body.extend_from_slice(value);
        self.body.push(SOH);
        self
    }

    pub fn field_str(&mut self, tag: u32, value: &str) -> &mut Self {
        self.field(tag, value.as_bytes())
    }

    pub fn field_uint(&mut self, tag: u32, value: u64) -> &mut Self {
        push_uint(&mut self.body, tag as u64);
        self.body.push(b'=');
        push_uint(&mut self.body, value);
        self.body.push(SOH);
        self
    }

    /// Appends the complete message (`8=…|9=…|body|10=…|`) to `out`; returns its length.
    pub fn finish(&mut self, begin_string: &[u8], out: &mut Vec<u8>) -> usize {
        let start = out.len();
        out.extend_from_slice(b"8=");
        out.extend_from_slice(begin_string);
        out.push(SOH);
        out.extend_from_slice(b"9=");
        push_uint(out, self.body.len() as u64);
        out.push(SOH);
        out.extend_from_slice(&self.body);
        let sum = checksum(&out[start..]);
        out.extend_from_slice(b"10=");
        out.push(b'0' + sum / 100);
        out.push(b'0' + (sum / 10) % 10);
        out.push(b'0' + sum % 10);
        out.push(SOH);
        out.len() - start
    }
}

/// Appends the decimal digits of `v`.
///
/// Tags and most values are below 1000: those take a short path without the digit buffer
/// (the simulator encodes ~40 numbers per order, so this shows in its profile).
#[inline]
pub fn push_uint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=9 => out.push(b'0' + v as u8),
        10..=99 => out.extend_from_slice(&[b'0' + (v / 10) as u8, b'0' + (v % 10) as u8]),
        100..=999 => out.extend_from_slice(&[
            b'0' + (v / 100) as u8,
            b'0' + (v / 10 % 10) as u8,
            b'0' + (v % 10) as u8,
        ]),
        _ => push_uint_long(out, v),
    }
}

fn push_uint_long(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// A FIX 4.4 message from `(tag, value)` fields, MsgType first — for tests (the layers
/// above build theirs with it too).
pub fn test_message(fields: &[(u32, &str)]) -> Vec<u8> {
    let mut enc = FixEncoder::new();
    enc.start(fields[0].1.as_bytes());
    for &(t, v) in &fields[1..] {
        enc.field_str(t, v);
    }
    let mut out = Vec::new();
    enc.finish(b"FIX.4.4", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_uint_matches_to_string() {
        for v in (0..2000u64).chain([9999, 10000, 123_456_789, u64::MAX]) {
            let mut out = Vec::new();
            push_uint(&mut out, v);
            assert_eq!(out, v.to_string().into_bytes());
        }
    }

    #[test]
    fn builds_valid_heartbeat() {
        let mut enc = FixEncoder::new();
        let mut out = Vec::new();
        enc.start(b"0")
            .field_str(49, "A")
            .field_str(56, "B")
            .field_uint(34, 12);
        enc.finish(b"FIX.4.4", &mut out);
        let text = String::from_utf8(out.clone()).unwrap().replace('\x01', "|");
        assert_eq!(text, "8=FIX.4.4|9=21|35=0|49=A|56=B|34=12|10=176|");
        // The checksum covers everything before "10=".
        let cut = out.len() - 7;
        assert_eq!(checksum(&out[..cut]), 176);
    }
}
