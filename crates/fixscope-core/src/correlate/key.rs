//! Which tags form the correlation key (`--key 11`, `--key 41`, `--key 11,1`).

use crate::fix::tag;

/// The most tags a compound key may have.
pub const MAX_KEY_TAGS: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpec {
    tags: Vec<u32>,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec {
            tags: vec![tag::CL_ORD_ID],
        }
    }
}

impl KeySpec {
    /// Parses a comma-separated list of tag numbers.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tags = crate::fix::parse_tag_list(s, MAX_KEY_TAGS).map_err(|e| format!("key: {e}"))?;
        Ok(KeySpec { tags })
    }

    pub fn tags(&self) -> &[u32] {
        &self.tags
    }

    /// Whether the key is ClOrdID alone, so OrigClOrdID (41) names an earlier key.
    pub fn is_cl_ord_id(&self) -> bool {
        self.tags == [tag::CL_ORD_ID]
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
    }
}
