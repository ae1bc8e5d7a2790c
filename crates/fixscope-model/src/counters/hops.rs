//! The hop ledger (`--leg`): every parent and every child lands in exactly one count.
//!
//! `parents = linked + unlinked_parent + ambiguous + parents_pending` and
//! `children = linked_children + unlinked_child + ambiguous_child + late_link +
//! children_pending` (docs/output-json.md has each one's meaning).

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HopCounters {
    /// Requests on up legs (orders coming in).
    pub parents: u64,
    /// Requests on down legs (orders going out).
    pub children: u64,
    /// Parents linked to one child or more.
    pub linked: u64,
    /// Children linked to a parent.
    pub linked_children: u64,
    /// Parents no child linked to within `--link-window`: the router rejected or
    /// answered them itself, or no child came.
    pub unlinked_parent: u64,
    /// Children no parent named: orders the host originated.
    pub unlinked_child: u64,
    /// Parents that could link to two children (two candidate children with one id, or a
    /// child naming two parents): never guessed, no hop stage.
    pub ambiguous: u64,
    /// Children that named two parents, or a parent that another child with the same id
    /// named.
    pub ambiguous_child: u64,
    /// Children naming a parent more than `--link-window` older: not linked.
    pub late_link: u64,
    /// Linked parents whose first response was not the router's answer to the venue's
    /// first response (a router that acks before it routes): `client_rtt` is not
    /// `hop_out + venue_rtt + hop_back` for them.
    pub local_ack: u64,
    /// Linked parents with more than one child (fan-out; `links.children_per_parent` in
    /// the summary has the distribution).
    pub fanout_parents: u64,
    /// Linked parents whose `hop_back` is not measured: a hole in the capture lay where
    /// the venue's or the parent's answer may have been.
    pub hops_after_capture_hole: u64,
    /// Linked parents whose answer (the venue's or the router's) is stamped before what it
    /// answers — a capture that reordered them: no `hop_back`, never a negative hop.
    pub hops_time_reversed: u64,
    /// Children the host originated with no market-data update for their symbol within
    /// `--link-window` before them (`--leg md` only): no `tick_to_order`.
    pub tick_missing: u64,
    /// Parents still inside their `--link-window` (their children may still come).
    pub parents_pending: u64,
    /// Children linked to a pending parent.
    pub children_pending: u64,
}

/// Reads [`HopCounters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without `--leg`).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<HopCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Maybe {
        parents: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    if m.parents.is_none() {
        return Ok(None);
    }
    let mut all = m.rest;
    all.insert("parents".into(), m.parents.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
