//! Reading the fields of one framed FIX message.

use super::SOH;

/// Position of the first SOH in `bytes`.
///
/// Hand-written because FIX values are short (typically 1–20 bytes): memchr's SIMD search
/// costs more in call and setup overhead than it saves (it was a quarter of the pipeline's
/// time in profiles). This reads 8 bytes at a time and finds a 0x01 byte with the classic
/// "has zero byte" bit trick, whose lowest flagged byte is always exact.
#[inline]
pub(crate) fn find_soh(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        let x = u64::from_le_bytes(word) ^ ONES;
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    bytes[i..].iter().position(|&b| b == SOH).map(|p| i + p)
}

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

    /// The fields after BeginString (8) and BodyLength (9) of a message that framing has
    /// already validated — the two are skipped without being parsed.
    pub fn body(message: &'a [u8]) -> Self {
        let mut rest = message;
        for _ in 0..2 {
            rest = match find_soh(rest) {
                Some(p) => &rest[p + 1..],
                None => &[],
            };
        }
        Fields { rest }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest;
        let mut tag: u32 = 0;
        let mut i = 0;
        // Most tags have 2 or 3 digits: read those without a loop.
        if rest.len() >= 4 {
            let d = |b: u8| b.wrapping_sub(b'0') as u32;
            let (d0, d1, d2) = (d(rest[0]), d(rest[1]), d(rest[2]));
            if rest[2] == b'=' && d0 < 10 && d1 < 10 {
                (tag, i) = (d0 * 10 + d1, 2);
            } else if rest[3] == b'=' && d0 < 10 && d1 < 10 && d2 < 10 {
                (tag, i) = (d0 * 100 + d1 * 10 + d2, 3);
            }
        }
        // Other lengths: parse digits by hand. At most 9 digits, so the u32 cannot
        // overflow; a longer "tag" is garbage.
        while i < rest.len() && rest[i].is_ascii_digit() {
            if i == 9 {
                self.rest = &[];
                return None;
            }
            tag = tag * 10 + (rest[i] - b'0') as u32;
            i += 1;
        }
        if i == 0 || i >= rest.len() || rest[i] != b'=' {
            self.rest = &[];
            return None;
        }
        let value_start = i + 1;
        let Some(len) = find_soh(&rest[value_start..]) else {
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
    fn tags_of_every_length_and_body_skips_the_header() {
        let msg = b"8=FIX.4.4\x019=5\x011=a\x0135=D\x01150=F\x011137=9\x0112345=x\x01";
        let tags: Vec<u32> = Fields::new(msg).map(|(t, _)| t).collect();
        assert_eq!(tags, [8, 9, 1, 35, 150, 1137, 12345]);
        let tags: Vec<u32> = Fields::body(msg).map(|(t, _)| t).collect();
        assert_eq!(tags, [1, 35, 150, 1137, 12345]);
        // "3=" with a non-digit before '=' and "1x=" are garbage, not tags.
        assert_eq!(Fields::new(b"1x=2\x01").next(), None);
        assert_eq!(Fields::new(b"x1=2\x01").next(), None);
        assert_eq!(Fields::new(b"12a=2\x01").next(), None);
    }

    #[test]
    fn rejects_tag_overflow_and_missing_soh() {
        assert_eq!(Fields::new(b"99999999999=1\x01").next(), None);
        assert_eq!(Fields::new(b"11=abc").next(), None);
        assert_eq!(Fields::new(b"=abc\x01").next(), None);
    }

    #[test]
    fn find_soh_agrees_with_a_plain_search() {
        let mut bytes: Vec<u8> = (0..64u8).map(|i| b'a' + i % 26).collect();
        assert_eq!(find_soh(&bytes), None);
        for pos in 0..bytes.len() {
            let saved = bytes[pos];
            bytes[pos] = SOH;
            for start in 0..=pos {
                assert_eq!(find_soh(&bytes[start..]), Some(pos - start));
            }
            // A byte that differs from SOH only in the high bit, just before it.
            if pos > 0 {
                bytes[pos - 1] = 0x81;
                assert_eq!(find_soh(&bytes), Some(pos));
                bytes[pos - 1] = b'a';
            }
            bytes[pos] = saved;
        }
    }

    #[test]
    fn displays_soh_as_pipe() {
        assert_eq!(display(b"35=D\x0111=\xff\x01"), "35=D|11=\\xff|");
    }
}
