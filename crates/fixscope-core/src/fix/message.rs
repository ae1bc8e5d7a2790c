//! Reading the fields of one framed FIX message.

use memchr::memchr;

use super::SOH;

/// Iterates `(tag, value)` over the `tag=value<SOH>` fields of `bytes`.
///
/// Stops at the first malformed field (no `=`, a non-numeric tag, or a missing SOH), so
/// garbage never yields a made-up field.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Fields { rest: bytes }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest;
        let mut tag: u32 = 0;
        let mut i = 0;
        // Tags are short: parse digits by hand instead of searching for '=' first.
        while i < rest.len() && rest[i].is_ascii_digit() {
            tag = tag.checked_mul(10)?.checked_add((rest[i] - b'0') as u32)?;
            i += 1;
        }
        if i == 0 || i >= rest.len() || rest[i] != b'=' {
            self.rest = &[];
            return None;
        }
        let value_start = i + 1;
        let Some(len) = memchr(SOH, &rest[value_start..]) else {
            self.rest = &[];
            return None;
        };
        let value = &rest[value_start..value_start + len];
        self.rest = &rest[value_start + len + 1..];
        Some((tag, value))
    }
}

/// Returns the value of the first field with `tag`.
pub fn find_field(bytes: &[u8], tag: u32) -> Option<&[u8]> {
    Fields::new(bytes).find(|&(t, _)| t == tag).map(|(_, v)| v)
}

/// Renders a FIX message for humans, with `|` for SOH and non-printable bytes escaped.
pub fn display(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            SOH => s.push('|'),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterates_fields_and_stops_at_garbage() {
        let msg = b"8=FIX.4.4\x019=5\x0135=D\x0111=abc=def\x01xx=1\x0144=2\x01";
        let fields: Vec<_> = Fields::new(msg).collect();
        assert_eq!(
            fields,
            vec![
                (8, &b"FIX.4.4"[..]),
                (9, &b"5"[..]),
                (35, &b"D"[..]),
                (11, &b"abc=def"[..]),
            ]
        );
        assert_eq!(find_field(msg, 11), Some(&b"abc=def"[..]));
        assert_eq!(find_field(msg, 44), None);
    }

    #[test]
    fn rejects_tag_overflow_and_missing_soh() {
        assert_eq!(Fields::new(b"99999999999=1\x01").next(), None);
        assert_eq!(Fields::new(b"11=abc").next(), None);
        assert_eq!(Fields::new(b"=abc\x01").next(), None);
    }

    #[test]
    fn displays_soh_as_pipe() {
        assert_eq!(display(b"35=D\x0111=\xff\x01"), "35=D|11=\\xff|");
    }
}
