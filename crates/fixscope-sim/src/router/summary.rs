//! What a router run did, printed at its end.

use std::fmt;
use std::net::SocketAddr;

#[derive(Clone, Debug, Default)]
pub struct RouterSummary {
    pub listen: Option<SocketAddr>,
    pub venue: Option<SocketAddr>,
    pub elapsed_s: f64,
    /// Client connections accepted, their logons and logouts.
    pub connections: u64,
    pub logons: u64,
    pub logouts: u64,
    pub protocol_errors: u64,
    /// Framed messages from clients.
    pub messages_in: u64,
    /// Parent requests by type.
    pub parents_d: u64,
    pub parents_f: u64,
    pub parents_g: u64,
    /// Child requests sent to the venue.
    pub children: u64,
    /// Parent requests the router rejected itself.
    pub rejected: u64,
    /// ExecutionReports / OrderCancelRejects from the venue, and those naming no child.
    pub venue_responses: u64,
    pub venue_unmatched: u64,
    /// Other application messages from the venue (ignored).
    pub venue_other: u64,
    /// Venue responses mapped to a parent response, and swallowed.
    pub forwarded: u64,
    pub swallowed: u64,
    pub truth_rows: u64,
    pub truth_errors: u64,
    /// Parent requests still open at the end (their rows are written anyway).
    pub open_at_end: u64,
    pub capture_packets: u64,
    pub capture_errors: u64,
    pub bad_checksum: u64,
    pub skipped_bytes: u64,
}

impl RouterSummary {
    pub fn parents(&self) -> u64 {
        self.parents_d + self.parents_f + self.parents_g
    }
}

impl fmt::Display for RouterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "router: {:.2}s, {} client connections ({} logons, {} logouts, {} protocol errors)",
            self.elapsed_s, self.connections, self.logons, self.logouts, self.protocol_errors
        )?;
        writeln!(
            f,
            "  parents: {} ({} D, {} F, {} G), {} rejected by the router; {} children sent",
            self.parents(),
            self.parents_d,
            self.parents_f,
            self.parents_g,
            self.rejected,
            self.children
        )?;
        writeln!(
            f,
            "  venue: {} responses ({} naming no child, {} other), {} forwarded to parents, {} swallowed",
            self.venue_responses, self.venue_unmatched, self.venue_other, self.forwarded, self.swallowed
        )?;
        write!(
            f,
            "  truth: {} rows ({} requests open at the end); capture: {} packets, {} errors; framing: {} bad checksums, {} bytes skipped",
            self.truth_rows,
            self.open_at_end,
            self.capture_packets,
            self.capture_errors,
            self.bad_checksum,
            self.skipped_bytes
        )
    }
}
