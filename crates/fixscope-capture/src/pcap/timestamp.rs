//! pcapng timestamps: units of 10^-k or 2^-k seconds (`if_tsresol`) plus an offset in
//! seconds (`if_tsoffset`), turned into nanoseconds since the epoch with integer
//! arithmetic only.

use super::NS_PER_SEC;

/// How a pcapng interface's timestamps become nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(super) enum TsScale {
    /// Units of 10^-k s with k <= 9: multiply.
    Mul(u64),
    /// Units of 10^-k s with k > 9: divide.
    Div(u64),
    /// Units of 2^-k s.
    Pow2(u32),
}

impl TsScale {
    /// From a raw `if_tsresol` byte; None for resolutions beyond what 64 bits can count.
    pub(super) fn from_tsresol(r: u8) -> Option<Self> {
        if r & 0x80 == 0 {
            match u32::from(r) {
                k @ 0..=9 => Some(TsScale::Mul(10u64.pow(9 - k))),
                k @ 10..=19 => Some(TsScale::Div(10u64.pow(k - 9))),
                _ => None,
            }
        } else {
            let k = u32::from(r & 0x7F);
            (k <= 63).then_some(TsScale::Pow2(k))
        }
    }

    /// Nanoseconds since the epoch (rounded down), or None if out of u64 range.
    #[inline]
    pub(super) fn to_ns(self, units: u64, offset_ns: i128) -> Option<u64> {
        let ns: u128 = match self {
            TsScale::Mul(m) => u128::from(units) * u128::from(m),
            TsScale::Div(d) => u128::from(units / d),
            TsScale::Pow2(k) => (u128::from(units) * u128::from(NS_PER_SEC)) >> k,
        };
        u64::try_from(ns as i128 + offset_ns).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_scaling_is_exact_integer_math() {
        let s = |r| TsScale::from_tsresol(r).unwrap();
        assert_eq!(
            s(6).to_ns(1_700_000_000_123_456, 0),
            Some(1_700_000_000_123_456_000)
        );
        assert_eq!(s(9).to_ns(u64::MAX, 0), Some(u64::MAX));
        assert_eq!(s(0).to_ns(3, 0), Some(3_000_000_000));
        assert_eq!(s(12).to_ns(1_999, 0), Some(1));
        // 2^-30: one unit is 0.931... ns; 2^30 units is exactly one second.
        assert_eq!(s(0x80 | 30).to_ns(1 << 30, 0), Some(NS_PER_SEC));
        assert_eq!(s(0x80 | 30).to_ns((1 << 30) + 1, 0), Some(NS_PER_SEC));
        assert_eq!(s(0x80 | 30).to_ns((1 << 30) + 2, 0), Some(NS_PER_SEC + 1));
        assert_eq!(s(0x80).to_ns(5, 0), Some(5 * NS_PER_SEC));
        assert_eq!(s(0x80 | 63).to_ns(1 << 63, 0), Some(NS_PER_SEC));
        // Offsets move the epoch; results outside u64 are refused, not wrapped.
        assert_eq!(s(9).to_ns(5, 1_000_000_000), Some(1_000_000_005));
        assert_eq!(s(9).to_ns(5, -6), None);
        assert_eq!(s(0).to_ns(u64::MAX, 0), None);
        assert!(TsScale::from_tsresol(20).is_none());
        assert!(TsScale::from_tsresol(0x80 | 64).is_none());
    }
}
