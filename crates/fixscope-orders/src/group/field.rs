//! What one `--by` position groups by: a FIX tag by its number (`--by 55`), or a binary
//! protocol's field by its spec's name (`--by Stock`, `--by SecurityID`; the seam's
//! `fixscope_protocol::fields`). Reports show a tag as its number, as they always did,
//! and a field by its name.

use std::fmt;

/// One `--by` position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ByField {
    /// A FIX tag number.
    Tag(u32),
    /// A binary protocol's field, by the name its spec gives it.
    Named(String),
}

impl ByField {
    /// The FIX tag, if it is one.
    pub fn tag(&self) -> Option<u32> {
        match self {
            ByField::Tag(t) => Some(*t),
            ByField::Named(_) => None,
        }
    }

    /// The field's name, if it is a protocol's field.
    pub fn name(&self) -> Option<&str> {
        match self {
            ByField::Tag(_) => None,
            ByField::Named(n) => Some(n),
        }
    }

    /// What the text report's heading calls it: `tag 55`, `field Stock`.
    pub fn heading(&self) -> String {
        match self {
            ByField::Tag(t) => format!("tag {t}"),
            ByField::Named(n) => format!("field {n}"),
        }
    }

    /// Reads one item of a log or a list: digits are a tag, a word (a letter, then
    /// letters, digits or `_`) a name; anything else is neither.
    pub fn parse(s: &str) -> Option<ByField> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().ok().filter(|&t| t > 0).map(ByField::Tag);
        }
        let word = s.as_bytes()[0].is_ascii_alphabetic()
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        word.then(|| ByField::Named(s.to_string()))
    }
}

/// A tag as its number, a field as its name (the JSON's `tag`, Prometheus's label, the
/// HdrHistogram log's tag).
impl fmt::Display for ByField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ByField::Tag(t) => write!(f, "{t}"),
            ByField::Named(n) => f.write_str(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_prints_as_its_number_and_a_field_as_its_name() {
        assert_eq!(ByField::Tag(55).to_string(), "55");
        assert_eq!(ByField::Named("Stock".into()).to_string(), "Stock");
        assert_eq!(ByField::Tag(55).heading(), "tag 55");
        assert_eq!(
            ByField::Named("SecurityID".into()).heading(),
            "field SecurityID"
        );
        assert_eq!(ByField::parse(" 55 "), Some(ByField::Tag(55)));
        assert_eq!(
            ByField::parse("Stock"),
            Some(ByField::Named("Stock".into()))
        );
        for bad in ["", "0", "a b", "a=b", "a,b", "5x"] {
            assert_eq!(ByField::parse(bad), None, "{bad:?}");
        }
    }
}
