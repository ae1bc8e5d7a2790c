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
///
/// Values are found with a bitmap of the SOH positions of 64 bytes at a time
/// ([`super::scan`]): each block is scanned once, and each field's end is then a
/// `trailing_zeros` instead of a byte search.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    bytes: &'a [u8],
    /// Start of the next field in `bytes`.
    pos: usize,
    /// SOH bitmap of `bytes[block..block + 64]`; the SOHs before `pos` are cleared as
    /// consumed, so the lowest bit left ends the next field.
    block: usize,
    mask: u64,
}

impl<'a> Fields<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Fields::starting_at(bytes, 0)
    }

    fn starting_at(bytes: &'a [u8], pos: usize) -> Self {
        let pos = pos.min(bytes.len());
        Fields {
            bytes,
            pos,
            block: pos,
            mask: super::scan::soh_mask_upto64(&bytes[pos..bytes.len().min(pos + 64)]),
        }
    }

    /// The fields after BeginString (8) and BodyLength (9) of a message that framing has
    /// already validated — the two are skipped without being parsed.
    pub fn body(message: &'a [u8]) -> Self {
        // The first block's bitmap holds the two SOHs ending 8= and 9= (a framed header is
        // at most 29 bytes): skip them with two bit operations, keeping the bitmap.
        let mask = super::scan::soh_mask_upto64(&message[..message.len().min(64)]);
        let rest = mask & mask.wrapping_sub(1);
        if rest != 0 {
            let pos = rest.trailing_zeros() as usize + 1;
            return Fields {
                bytes: message,
                pos,
                block: 0,
                mask: rest & rest.wrapping_sub(1),
            };
        }
        let mut pos = 0;
        for _ in 0..2 {
            pos = match find_soh(&message[pos..]) {
                Some(p) => pos + p + 1,
                None => message.len(),
            };
        }
        Fields::starting_at(message, pos)
    }

    /// The next SOH: the lowest bit left in the bitmap (SOHs before the current field were
    /// consumed, and a tag and its `=` hold none), advancing block by block.
    #[inline(always)]
    fn next_soh(&mut self) -> Option<usize> {
        loop {
            if self.mask != 0 {
                let at = self.block + self.mask.trailing_zeros() as usize;
                self.mask &= self.mask - 1;
                return Some(at);
            }
            let next = self.block + 64;
            if next >= self.bytes.len() {
                return None;
            }
            self.block = next;
            self.mask =
                super::scan::soh_mask_upto64(&self.bytes[next..self.bytes.len().min(next + 64)]);
        }
    }

    fn stop(&mut self) -> Option<(u32, &'a [u8])> {
        self.pos = self.bytes.len();
        self.block = self.bytes.len();
        self.mask = 0;
        None
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, &'a [u8]);

    // Always inlined: the field loops of the hot path (correlation's extraction) keep the
    // cursor in registers instead of a call and a struct in memory per field.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        // The field runs to the first SOH from its start (a tag and '=' hold none), so its
        // end comes from the bitmap first and the tag is parsed within known bounds.
        let start = self.pos;
        let Some(end) = self.next_soh() else {
            return self.stop();
        };
        let field = &self.bytes[start..end];
        let Some(eq) = tag_end(field) else {
            return self.stop();
        };
        self.pos = end + 1;
        Some((parse_tag(&field[..eq]), &field[eq + 1..]))
    }
}

/// Where the `=` after a field's tag is: the tag is 1 to 9 digits (so it fits a u32) and
/// must be followed by `=`; `None` for anything else (garbage).
#[inline(always)]
fn tag_end(field: &[u8]) -> Option<usize> {
    // Most tags have 2 or 3 digits: check those without a loop.
    if field.len() >= 3
        && field[2] == b'='
        && field[0].is_ascii_digit()
        && field[1].is_ascii_digit()
    {
        return Some(2);
    }
    let digits = field.iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0 && digits <= 9 && field.get(digits) == Some(&b'=')).then_some(digits)
}

/// The value of a tag that [`tag_end`] accepted (1 to 9 ASCII digits).
#[inline(always)]
fn parse_tag(digits: &[u8]) -> u32 {
    match *digits {
        [a, b] => (a - b'0') as u32 * 10 + (b - b'0') as u32,
        [a, b, c] => (a - b'0') as u32 * 100 + (b - b'0') as u32 * 10 + (c - b'0') as u32,
        _ => digits
            .iter()
            .fold(0u32, |tag, &d| tag * 10 + (d - b'0') as u32),
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

    /// The plain definition of [`Fields`], byte by byte: what the bitmap scan must equal.
    fn plain_fields(mut rest: &[u8]) -> Vec<(u32, &[u8])> {
        let mut out = Vec::new();
        loop {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || digits > 9 || rest.get(digits) != Some(&b'=') {
                return out;
            }
            let tag = std::str::from_utf8(&rest[..digits])
                .unwrap()
                .parse()
                .unwrap();
            let value = &rest[digits + 1..];
            let Some(len) = value.iter().position(|&b| b == SOH) else {
                return out;
            };
            out.push((tag, &value[..len]));
            rest = &value[len + 1..];
        }
    }

    #[test]
    fn fields_agree_with_a_plain_parse_across_blocks() {
        // Values of 0 to 150 bytes (fields cross the scan's 64-byte blocks anywhere), with
        // '=' and high-bit bytes inside; some inputs end in garbage or a missing SOH.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..3000 {
            let mut msg = Vec::new();
            for _ in 0..rand(12) {
                msg.extend_from_slice(rand(100_000).to_string().as_bytes());
                msg.push(b'=');
                let len = if rand(4) == 0 { rand(150) } else { rand(12) };
                for _ in 0..len {
                    msg.push([b'a', b'=', b'7', 0x81, 0x80][rand(5) as usize]);
                }
                msg.push(SOH);
            }
            match rand(4) {
                0 => msg.extend_from_slice(b"12=no soh"),
                1 => msg.extend_from_slice(b"x=1\x0112=2\x01"),
                _ => {}
            }
            assert_eq!(
                Fields::new(&msg).collect::<Vec<_>>(),
                plain_fields(&msg),
                "{}",
                display(&msg)
            );
            // `body` skips whatever the first two SOHs end, wherever they are.
            let mut after_two = &msg[..];
            for _ in 0..2 {
                after_two = match after_two.iter().position(|&b| b == SOH) {
                    Some(p) => &after_two[p + 1..],
                    None => &[],
                };
            }
            assert_eq!(
                Fields::body(&msg).collect::<Vec<_>>(),
                plain_fields(after_two),
                "body of {}",
                display(&msg)
            );
        }
    }

    #[test]
    fn displays_soh_as_pipe() {
        assert_eq!(display(b"35=D\x0111=\xff\x01"), "35=D|11=\\xff|");
    }
}
