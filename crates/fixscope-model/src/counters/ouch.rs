//! Nasdaq OUCH over SoupBinTCP (`--protocol PORTS=ouch42|ouch50`): its session layer's and
//! order layer's counters, counted by `fixscope-ouch` per connection and summed over the
//! run's connections (docs/protocols.md has their rules).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OuchCounters {
    /// Login Request packets (`L`).
    pub soupbin_login_requests: u64,
    /// Login Accepted packets (`A`): a logical session begun or resumed.
    pub soupbin_logins: u64,
    /// Login Rejected packets (`J`).
    pub soupbin_login_rejects: u64,
    /// Logout Request packets (`O`) from the client.
    pub soupbin_logouts: u64,
    /// End of Session packets (`Z`) from the host.
    pub soupbin_end_of_session: u64,
    /// Server (`H`) and client (`R`) heartbeats.
    pub soupbin_heartbeats: u64,
    /// Debug packets (`+`).
    pub soupbin_debug_packets: u64,
    /// Host `S` packets numbered past the highest seen of their logical session: new.
    pub soupbin_sequenced_packets: u64,
    /// Host `S` packets numbered at or below the highest seen of their logical session: a
    /// replay after a re-login, emitting no order event (never counted twice).
    pub soupbin_replayed_packets: u64,
    /// Those of the replayed packets whose numbers a gap had skipped (never seen sent):
    /// applied to the orders' state (shares, ends), still no event — their capture time
    /// is the replay's, not their sending's.
    pub soupbin_recovered_packets: u64,
    /// Login Accepted packets whose next sequence number skips past the highest seen + 1.
    pub soupbin_sequence_gaps: u64,
    /// The host packets those gaps skipped (never seen by this run).
    pub soupbin_sequence_gap_packets: u64,
    /// Requests whose key was seen before on their logical session (a resend): no new
    /// order.
    pub ouch_resent_requests: u64,
    /// Data packets (`U`, `S`) before a Login Accepted numbered the connection's session:
    /// no logical session to put them in, no event.
    pub soupbin_before_login: u64,
    /// Frames that are no SoupBinTCP packet, or a Login Accepted without a sequence number.
    pub soupbin_undecodable_packets: u64,
    /// OUCH messages in a data packet that do not decode (wrong length, truncated, a bad
    /// appendage, empty): no event.
    pub ouch_undecodable_messages: u64,
    /// OUCH messages of a type the order layer does not use (System Event, ...): no event.
    pub ouch_other_messages: u64,
    /// Packets in the other side's direction than their type's: no event.
    pub soupbin_wrong_side_packets: u64,
    /// OUCH connections recognised by their SoupBinTCP login on a port `--protocol` names
    /// for no protocol, holding data packets none of which showed the OUCH version (read
    /// by exactly one of 4.2 and 5.0), or holding more than the bound: their orders not
    /// measured (yet, while such a connection is open). The port wants
    /// `--protocol PORTS=ouch42|ouch50`.
    pub ouch_version_unread: u64,
    /// Responses about an order this run never saw entered: emitted all the same; a fill
    /// of one is never terminal.
    pub ouch_unknown_order_responses: u64,
}

/// Reads [`OuchCounters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without OUCH).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<OuchCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Maybe {
        soupbin_login_requests: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    let Some(first) = m.soupbin_login_requests else {
        return Ok(None);
    };
    let mut all = m.rest;
    all.insert("soupbin_login_requests".into(), first.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
