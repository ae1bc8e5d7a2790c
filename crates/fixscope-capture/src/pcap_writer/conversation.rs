//! A scripted TCP connection: handshake, data each way, FIN and RST, with the sequence and
//! acknowledgement numbers a real stack would use.

use super::packet::TcpPacketSpec;
use fixscope_model::segment::{Endpoint, FlowKey, TcpFlags};

/// Tracks the sequence numbers of one synthetic TCP connection, so tests can script
/// traffic. Initial sequence numbers sit just below `u32::MAX`, so a few hundred bytes of
/// traffic wrap the sequence space.
#[derive(Clone, Debug)]
pub struct SyntheticConnection {
    client: Endpoint,
    server: Endpoint,
    client_seq: u32,
    server_seq: u32,
}

impl SyntheticConnection {
    /// Client ISN `u32::MAX - 99` (wraps after 100 bytes), server ISN `u32::MAX - 299`.
    pub fn new(client: Endpoint, server: Endpoint) -> Self {
        Self::with_isns(client, server, u32::MAX - 99, u32::MAX - 299)
    }

    /// A connection with chosen initial sequence numbers.
    pub fn with_isns(client: Endpoint, server: Endpoint, client_isn: u32, server_isn: u32) -> Self {
        SyntheticConnection {
            client,
            server,
            client_seq: client_isn,
            server_seq: server_isn,
        }
    }

    /// Client → server addresses.
    pub fn client_flow(&self) -> FlowKey {
        FlowKey {
            src: self.client,
            dst: self.server,
        }
    }

    /// Server → client addresses.
    pub fn server_flow(&self) -> FlowKey {
        FlowKey {
            src: self.server,
            dst: self.client,
        }
    }

    /// SYN, SYN-ACK, ACK; each SYN takes one sequence number.
    pub fn handshake(&mut self) -> Vec<TcpPacketSpec> {
        let syn = self.client_packet(TcpFlags::SYN, 0, &[]);
        self.client_seq = self.client_seq.wrapping_add(1);
        let syn_ack = self.server_packet(TcpFlags::SYN | TcpFlags::ACK, &[]);
        self.server_seq = self.server_seq.wrapping_add(1);
        let ack = self.client_packet(TcpFlags::ACK, self.server_seq, &[]);
        vec![syn, syn_ack, ack]
    }

    /// A PSH-ACK data segment from the client; advances the client's sequence number.
    pub fn client_sends(&mut self, payload: &[u8]) -> TcpPacketSpec {
        let p = self.client_packet(TcpFlags::PSH | TcpFlags::ACK, self.server_seq, payload);
        self.client_seq = self.client_seq.wrapping_add(payload.len() as u32);
        p
    }

    /// A PSH-ACK data segment from the server; advances the server's sequence number.
    pub fn server_sends(&mut self, payload: &[u8]) -> TcpPacketSpec {
        let p = self.server_packet(TcpFlags::PSH | TcpFlags::ACK, payload);
        self.server_seq = self.server_seq.wrapping_add(payload.len() as u32);
        p
    }

    /// FIN-ACK from the client (takes one sequence number).
    pub fn client_fin(&mut self) -> TcpPacketSpec {
        let p = self.client_packet(TcpFlags::FIN | TcpFlags::ACK, self.server_seq, &[]);
        self.client_seq = self.client_seq.wrapping_add(1);
        p
    }

    /// FIN-ACK from the server (takes one sequence number).
    pub fn server_fin(&mut self) -> TcpPacketSpec {
        let p = self.server_packet(TcpFlags::FIN | TcpFlags::ACK, &[]);
        self.server_seq = self.server_seq.wrapping_add(1);
        p
    }

    /// RST-ACK from the client.
    pub fn client_rst(&mut self) -> TcpPacketSpec {
        self.client_packet(TcpFlags::RST | TcpFlags::ACK, self.server_seq, &[])
    }

    /// RST-ACK from the server.
    pub fn server_rst(&mut self) -> TcpPacketSpec {
        self.server_packet(TcpFlags::RST | TcpFlags::ACK, &[])
    }

    /// The client's next sequence number.
    pub fn client_seq(&self) -> u32 {
        self.client_seq
    }

    /// The server's next sequence number.
    pub fn server_seq(&self) -> u32 {
        self.server_seq
    }

    fn client_packet(&self, flags: u8, ack: u32, payload: &[u8]) -> TcpPacketSpec {
        TcpPacketSpec {
            flow: self.client_flow(),
            seq: self.client_seq,
            ack,
            flags: TcpFlags(flags),
            payload: payload.to_vec(),
        }
    }

    fn server_packet(&self, flags: u8, payload: &[u8]) -> TcpPacketSpec {
        TcpPacketSpec {
            flow: self.server_flow(),
            seq: self.server_seq,
            ack: self.client_seq,
            flags: TcpFlags(flags),
            payload: payload.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap_writer::test_support::conn;

    #[test]
    fn synthetic_connection_tracks_and_wraps_sequence_numbers() {
        let mut c = conn();
        let c0 = c.client_seq();
        let s0 = c.server_seq();
        let hs = c.handshake();
        assert_eq!(hs.len(), 3);
        assert!(hs[0].flags.syn() && hs[0].seq == c0 && hs[0].flow == c.client_flow());
        assert_eq!(hs[1].flags, TcpFlags(TcpFlags::SYN | TcpFlags::ACK));
        assert_eq!((hs[1].seq, hs[1].ack), (s0, c0.wrapping_add(1)));
        assert_eq!(hs[1].flow, c.server_flow());
        assert_eq!(
            (hs[2].seq, hs[2].ack),
            (c0.wrapping_add(1), s0.wrapping_add(1))
        );
        assert_eq!(hs[2].flags, TcpFlags(TcpFlags::ACK));

        let a = c.client_sends(&[1; 150]);
        assert_eq!(a.seq, c0.wrapping_add(1));
        assert_eq!(a.payload.len(), 150);
        // 1 + 150 bytes past an ISN 99 below the top: the client wrapped.
        assert_eq!(c.client_seq(), 51);
        let b = c.server_sends(&[2; 400]);
        assert_eq!(b.ack, 51);
        assert_eq!(c.server_seq(), s0.wrapping_add(401));
        assert!(c.server_seq() < s0, "server wrapped too");
        let fin = c.client_fin();
        assert!(fin.flags.fin() && fin.seq == 51 && c.client_seq() == 52);
        let sfin = c.server_fin();
        assert!(sfin.flags.fin() && sfin.ack == 52);
        let rst = c.client_rst();
        assert!(rst.flags.rst() && rst.seq == 52 && c.client_seq() == 52);
        assert!(c.server_rst().flags.rst());
    }
}
