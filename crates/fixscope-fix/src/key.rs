//! Which tags form the correlation key (`--key 11`, `--key 41`, `--key 11,1`).

use crate::tag;

/// The most tags a compound key may have.
pub const MAX_KEY_TAGS: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpec {
    tags: Vec<u32>,
    /// A key tag is a header field (`--key 49,…`): the key does not mark the header's end.
    in_header: bool,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec::of(vec![tag::CL_ORD_ID])
    }
}

impl KeySpec {
    /// Parses a comma-separated list of tag numbers.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tags = crate::parse_tag_list(s, MAX_KEY_TAGS).map_err(|e| format!("key: {e}"))?;
        Ok(KeySpec::of(tags))
    }

    fn of(tags: Vec<u32>) -> Self {
        let in_header = tags.iter().any(|&t| is_header_tag(t));
        KeySpec { tags, in_header }
    }

    /// Whether a key tag is a header field (decided once, not per message).
    #[inline]
    pub fn in_header(&self) -> bool {
        self.in_header
    }

    pub fn tags(&self) -> &[u32] {
        &self.tags
    }

    /// Whether the key is ClOrdID alone, so OrigClOrdID (41) names an earlier key.
    pub fn is_cl_ord_id(&self) -> bool {
        self.tags == [tag::CL_ORD_ID]
    }
}

/// Whether `t` is a standard-header tag (FIX 4.4 / FIXT.1.1 StandardHeader): header
/// fields come before the body, so the first body field ends the search for 115/128.
#[inline]
pub fn is_header_tag(t: u32) -> bool {
    const LOW: u64 = 1 << 8
        | 1 << 9
        | 1 << 34
        | 1 << 35
        | 1 << 43
        | 1 << 49
        | 1 << 50
        | 1 << 52
        | 1 << 56
        | 1 << 57;
    if t < 64 {
        LOW >> t & 1 != 0
    } else {
        matches!(
            t,
            90 | 91
                | 97
                | 115
                | 116
                | 122
                | 128
                | 129
                | 142..=145
                | 212
                | 213
                | 347
                | 369
                | 627..=630
                | 1128
                | 1129
                | 1156
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_bad_keys_are_refused() {
        assert_eq!(KeySpec::parse("41").unwrap().tags(), &[41]);
        assert_eq!(KeySpec::parse("11, 1").unwrap().tags(), &[11, 1]);
        assert!(KeySpec::parse("11,x").is_err());
        assert!(KeySpec::parse("11,11").is_err());
        assert!(KeySpec::parse("0").is_err());
        assert!(KeySpec::parse("1,2,3,4,5,6,7,8,9").is_err());
        assert!(KeySpec::default().is_cl_ord_id());
        assert!(!KeySpec::parse("11,1").unwrap().is_cl_ord_id());
        assert!(!KeySpec::default().in_header() && !KeySpec::parse("11,1").unwrap().in_header());
        assert!(KeySpec::parse("11,49").unwrap().in_header());
    }
}
