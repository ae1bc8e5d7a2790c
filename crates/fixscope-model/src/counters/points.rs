//! The two-point ledger (`--point` only): every first response at the point nearer the
//! acceptor lands in exactly one of `points_orders_joined`, `points_orders_near_only`,
//! `points_orders_ambiguous` and `points_time_reversed`; every far order answered there and
//! never joined is `points_orders_far_only` (known at the run's end). Every joined order
//! has its one-way figures, or is `points_one_way_unbounded` or `points_one_way_at_step`.

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PointCounters {
    /// Orders seen and answered at both points: `residence` and `wire_rtt` are measured.
    pub points_orders_joined: u64,
    /// First responses at the near point whose order the far point did not see answered.
    pub points_orders_near_only: u64,
    /// Orders answered at the far point that the near point never answered (at the end).
    pub points_orders_far_only: u64,
    /// Orders whose identity (CompIDs, request type, key) the far point, or the near
    /// point, saw more than once: never guessed, no two-point stage.
    pub points_orders_ambiguous: u64,
    /// Joined orders whose far round trip is shorter than the near one: the points are not
    /// where the run thinks (or a capture reordered them); no two-point stage.
    pub points_time_reversed: u64,
    /// Segments seen once at each point: the clock's samples.
    pub points_segments_matched: u64,
    /// Segments only one point saw.
    pub points_segments_unmatched: u64,
    /// Copies of a segment one point saw more than once (retransmissions, duplicate ACKs):
    /// not samples.
    pub points_segments_repeated: u64,
    /// Joined orders with no one-way figure: the clock has no consistent bound at their
    /// time (too few samples, or its samples contradict each other there).
    pub points_one_way_unbounded: u64,
    /// Joined orders with no one-way figure: the clock stepped while they were in flight
    /// (only the union of the offsets before and after is known then).
    pub points_one_way_at_step: u64,
}

/// Reads [`PointCounters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without `--point`).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<PointCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Maybe {
        points_orders_joined: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    if m.points_orders_joined.is_none() {
        return Ok(None);
    }
    let mut all = m.rest;
    all.insert("points_orders_joined".into(), m.points_orders_joined.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
