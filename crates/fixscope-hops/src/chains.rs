//! "Where did the time go": each linked order whose `client_rtt` is exactly
//! `hop_out + venue_rtt + hop_back` (not `local_ack`), kept as its three hops — the slowest
//! few whole, and every one added to the band of `client_rtt` it falls in, so each band's
//! mean hops add up to its mean `client_rtt` (percentiles do not add: never stack p99s).
//!
//! Bands are made of buckets of `client_rtt` 1/64 of an octave wide (1.1%): an order near
//! a band's edge may fall on the neighbouring side of it, never in no band.

use std::collections::HashMap;

use serde::Serialize;

/// The slowest chains kept.
pub const SLOWEST_CHAINS: usize = 10;
/// The bands, as fractions of the linked orders by `client_rtt`.
const BANDS: [(&str, f64, f64); 5] = [
    ("p0-p50", 0.0, 0.5),
    ("p50-p90", 0.5, 0.9),
    ("p90-p99", 0.9, 0.99),
    ("p99-p99.9", 0.99, 0.999),
    ("p99.9-max", 0.999, 1.0),
];

/// One order's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Chain {
    pub key: String,
    /// The `--link` rule that linked it (of its first child).
    pub rule: String,
    pub session: u64,
    pub request_ts_ns: u64,
    pub client_rtt_ns: u64,
    pub hop_out_ns: u64,
    pub venue_rtt_ns: u64,
    pub hop_back_ns: u64,
}

/// The mean hops of the orders in one band of `client_rtt`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Band {
    pub band: &'static str,
    pub orders: u64,
    pub client_rtt_mean_ns: f64,
    pub hop_out_mean_ns: f64,
    pub venue_rtt_mean_ns: f64,
    pub hop_back_mean_ns: f64,
}

#[derive(Clone, Copy, Default)]
struct Sums {
    orders: u64,
    client: u128,
    out: u128,
    venue: u128,
    back: u128,
}

#[derive(Default)]
pub(super) struct ChainSplit {
    buckets: HashMap<u32, Sums>,
    slowest: Vec<Chain>,
}

/// 64 buckets per octave.
fn bucket(ns: u64) -> u32 {
    if ns < 64 {
        return ns as u32;
    }
    let octave = 63 - ns.leading_zeros();
    let mantissa = (ns >> (octave - 6)) & 63;
    octave * 64 + mantissa as u32
}

impl ChainSplit {
    pub(super) fn add(&mut self, chain: Chain) {
        let s = self.buckets.entry(bucket(chain.client_rtt_ns)).or_default();
        s.orders += 1;
        s.client += u128::from(chain.client_rtt_ns);
        s.out += u128::from(chain.hop_out_ns);
        s.venue += u128::from(chain.venue_rtt_ns);
        s.back += u128::from(chain.hop_back_ns);
        let full = self.slowest.len() >= SLOWEST_CHAINS;
        if full
            && self
                .slowest
                .last()
                .is_some_and(|l| l.client_rtt_ns >= chain.client_rtt_ns)
        {
            return;
        }
        let at = self
            .slowest
            .partition_point(|c| c.client_rtt_ns >= chain.client_rtt_ns);
        self.slowest.insert(at, chain);
        self.slowest.truncate(SLOWEST_CHAINS);
    }

    pub(super) fn slowest(&self) -> Vec<Chain> {
        self.slowest.clone()
    }

    pub(super) fn bands(&self) -> Vec<Band> {
        let mut buckets: Vec<(u32, Sums)> = self.buckets.iter().map(|(&b, &s)| (b, s)).collect();
        buckets.sort_unstable_by_key(|&(b, _)| b);
        let total: u64 = buckets.iter().map(|(_, s)| s.orders).sum();
        let mut bands: Vec<Sums> = vec![Sums::default(); BANDS.len()];
        let mut below = 0u64;
        for (_, s) in buckets {
            // The band of the bucket's middle order.
            let mid = (below as f64 + s.orders as f64 / 2.0) / total as f64;
            let i = BANDS
                .iter()
                .position(|&(_, lo, hi)| mid >= lo && mid < hi)
                .unwrap_or(BANDS.len() - 1);
            let b = &mut bands[i];
            b.orders += s.orders;
            b.client += s.client;
            b.out += s.out;
            b.venue += s.venue;
            b.back += s.back;
            below += s.orders;
        }
        BANDS
            .iter()
            .zip(bands)
            .filter(|(_, s)| s.orders > 0)
            .map(|(&(name, _, _), s)| {
                let mean = |v: u128| v as f64 / s.orders as f64;
                Band {
                    band: name,
                    orders: s.orders,
                    client_rtt_mean_ns: mean(s.client),
                    hop_out_mean_ns: mean(s.out),
                    venue_rtt_mean_ns: mean(s.venue),
                    hop_back_mean_ns: mean(s.back),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(out: u64, venue: u64, back: u64) -> Chain {
        Chain {
            key: String::new(),
            rule: String::new(),
            session: 1,
            request_ts_ns: 0,
            client_rtt_ns: out + venue + back,
            hop_out_ns: out,
            venue_rtt_ns: venue,
            hop_back_ns: back,
        }
    }

    #[test]
    fn each_band_s_mean_hops_add_up_to_its_mean_client_rtt() {
        let mut split = ChainSplit::default();
        for i in 0..1000u64 {
            split.add(chain(1_000 + i, 10_000 + (i * 7919) % 5_000, 500 + i % 300));
        }
        split.add(chain(1_000, 900_000, 500));
        let bands = split.bands();
        assert_eq!(bands.iter().map(|b| b.orders).sum::<u64>(), 1001);
        for b in &bands {
            let sum = b.hop_out_mean_ns + b.venue_rtt_mean_ns + b.hop_back_mean_ns;
            assert!((sum - b.client_rtt_mean_ns).abs() < 1e-6, "{b:?}");
        }
        let top = bands.last().unwrap();
        assert_eq!(top.band, "p99.9-max");
        assert!(
            top.venue_rtt_mean_ns > 100_000.0,
            "the venue's outlier is in the top band"
        );
        let slowest = split.slowest();
        assert_eq!(slowest.len(), SLOWEST_CHAINS);
        assert_eq!(slowest[0].venue_rtt_ns, 900_000);
        assert!(slowest
            .windows(2)
            .all(|w| w[0].client_rtt_ns >= w[1].client_rtt_ns));
    }

    #[test]
    fn buckets_grow_with_the_value() {
        let mut last = 0;
        for ns in [1u64, 63, 64, 65, 127, 128, 1_000, 1_011, 1 << 40] {
            let b = bucket(ns);
            assert!(b >= last, "{ns}");
            last = b;
        }
        assert_ne!(bucket(1_000), bucket(1_020));
    }
}
