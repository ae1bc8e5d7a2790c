//! CME iLink 3 over FIXP (`--protocol PORTS=ilink3`): its session layer's and order
//! layer's counters, counted by `fixscope-ilink3` per connection and summed over the
//! run's connections (docs/protocols.md, "CME iLink 3", has their rules). Every framed
//! message lands in exactly one of them, but for the parts of another:
//! `ilink3_recovered_messages` of `ilink3_replayed_messages`, `ilink3_resent_requests` of
//! `ilink3_requests`, `ilink3_unknown_order_responses` and
//! `ilink3_business_rejects_unpaired` of `ilink3_business_messages`.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ilink3Counters {
    /// Negotiate500 messages (client).
    pub ilink3_negotiate_requests: u64,
    /// NegotiationResponse501 messages (CME): a UUID negotiated.
    pub ilink3_negotiations: u64,
    /// NegotiationReject502 messages.
    pub ilink3_negotiation_rejects: u64,
    /// Establish503 messages (client).
    pub ilink3_establish_requests: u64,
    /// EstablishmentAck504 messages (CME): a logical session (UUID) begun or resumed on
    /// the connection.
    pub ilink3_establishments: u64,
    /// EstablishmentReject505 messages.
    pub ilink3_establish_rejects: u64,
    /// Terminate507 messages, either way.
    pub ilink3_terminates: u64,
    /// Sequence506 messages, either way (keep-alives, and CME's next sequence number).
    pub ilink3_sequences: u64,
    /// RetransmitRequest508 messages (client).
    pub ilink3_retransmit_requests: u64,
    /// Retransmission509 messages (CME): the replay of the requested range follows.
    pub ilink3_retransmissions: u64,
    /// RetransmitReject510 messages.
    pub ilink3_retransmit_rejects: u64,
    /// NotApplied513 messages (CME): client messages CME did not apply.
    pub ilink3_not_applied: u64,
    /// CME business messages numbered past the highest seen of their UUID, not marked
    /// PossRetransFlag: new.
    pub ilink3_business_messages: u64,
    /// CME business messages marked PossRetransFlag=1 or numbered at or below the
    /// highest seen of their UUID: a replay, emitting no order event (never counted
    /// twice).
    pub ilink3_replayed_messages: u64,
    /// Those of the replayed messages this run never saw sent (a number a gap skipped,
    /// or a replay of one above the highest seen): applied to the orders' state, still
    /// no event — their capture time is the replay's.
    pub ilink3_recovered_messages: u64,
    /// Gaps in CME's numbering of a UUID: a business message, an EstablishmentAck or a
    /// Sequence506 whose number skips past the highest seen + 1.
    pub ilink3_sequence_gaps: u64,
    /// The CME messages those gaps skipped (never seen by this run).
    pub ilink3_sequence_gap_messages: u64,
    /// Client order requests (NewOrderSingle514, OrderCancelReplaceRequest515,
    /// OrderCancelRequest516) with a UUID to put them in.
    pub ilink3_requests: u64,
    /// Of those, requests whose OrderRequestID was seen before on their UUID (a
    /// resend): no new order.
    pub ilink3_resent_requests: u64,
    /// Client requests on a connection no Establish / EstablishmentAck named a UUID of
    /// yet: no logical session to put them in, no event.
    pub ilink3_before_establish: u64,
    /// Frames that do not decode: truncated, a wrong length or encoding type, another
    /// schema than 8, a template the schema lacks, a required field missing.
    pub ilink3_undecodable_messages: u64,
    /// Messages of a template the order layer does not use (MassQuote517, ...).
    pub ilink3_other_messages: u64,
    /// Messages in the other side's direction than their template's: no event.
    pub ilink3_wrong_side_messages: u64,
    /// Of the new CME business messages, responses echoing an OrderRequestID (or naming
    /// an OrderID) this run never saw: emitted all the same (a report naming no order at
    /// all emits nothing).
    pub ilink3_unknown_order_responses: u64,
    /// Of the new CME business messages, BusinessReject521s whose RefSeqNum names no
    /// order request seen on their UUID (or none at all): no event.
    pub ilink3_business_rejects_unpaired: u64,
}

/// Reads [`Ilink3Counters`] flattened among others (an HdrHistogram log's counters):
/// `None` when the log has none of them (a run without iLink 3).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<Ilink3Counters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Maybe {
        ilink3_negotiate_requests: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    let Some(first) = m.ilink3_negotiate_requests else {
        return Ok(None);
    };
    let mut all = m.rest;
    all.insert("ilink3_negotiate_requests".into(), first.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
