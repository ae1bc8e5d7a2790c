//! Legacy pcap: a file header (byte order, time unit, snaplen, link type), then records.

use std::io::Read;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError};

use super::input::{corrupt, next_after_error, read_u32, recover, Failure};
use super::{FrameSink, NS_PER_SEC};
use crate::decode::LinkType;

/// libpcap's largest snaplen; legacy records may be this long whatever the header says.
const MAX_LEGACY_CAPLEN: u32 = 262_144;

pub(super) fn read_pcap<R: Read>(
    source: R,
    mut capacity: usize,
    sink: &mut impl FrameSink,
) -> Result<(), Failure> {
    let mut reader = LegacyPcapReader::new(capacity, source).map_err(|e| match e {
        PcapError::ReadError => Failure::Read,
        PcapError::Incomplete(_) | PcapError::Eof => corrupt(0, "file header cut short"),
        e => corrupt(0, format!("bad file header ({e})")),
    })?;
    let mut link = LinkType::Ethernet;
    let mut frac_ns: u64 = 1000;
    let mut big_endian = false;
    let mut record_header = 16;
    let mut max_caplen = 0u32;
    loop {
        if sink.stopped() {
            return Ok(());
        }
        let offset = reader.consumed();
        // Legacy pcap has no checksums: a corrupt length would make us read garbage as
        // records. Like libpcap, reject lengths beyond the snaplen and the 256 KiB maximum.
        if max_caplen > 0 {
            if let Some(caplen) = read_u32(reader.data(), 8, big_endian) {
                if caplen > max_caplen {
                    return Err(corrupt(
                        offset,
                        format!("record claims {caplen} captured bytes (snaplen {max_caplen})"),
                    ));
                }
            }
        }
        let next = match reader.next() {
            Ok((len, block)) => {
                match block {
                    PcapBlockOwned::Legacy(b) => {
                        // u32 seconds * 10^9 + a 32-bit fraction always fits u64.
                        let ts_ns =
                            u64::from(b.ts_sec) * NS_PER_SEC + u64::from(b.ts_usec) * frac_ns;
                        sink.frame(link, ts_ns, b.data);
                    }
                    PcapBlockOwned::LegacyHeader(h) => {
                        let code = h.network.0 as u32;
                        link = LinkType::from_linktype(code)
                            .ok_or(Failure::UnsupportedLinkType(code & 0xFFFF))?;
                        frac_ns = if h.is_nanosecond_precision() { 1 } else { 1000 };
                        big_endian = h.is_bigendian();
                        record_header = if h.is_modified_format() { 24 } else { 16 };
                        max_caplen = h.snaplen.max(MAX_LEGACY_CAPLEN);
                    }
                    PcapBlockOwned::NG(_) => {
                        return Err(corrupt(offset, "pcapng block inside a pcap file"))
                    }
                }
                reader.consume(len);
                continue;
            }
            Err(e) => next_after_error(e, offset),
        };
        let declared =
            |d: &[u8]| read_u32(d, 8, big_endian).map(|caplen| record_header + caplen as usize);
        if !recover(&mut reader, next, declared, &mut capacity, sink.stats())? {
            return Ok(());
        }
    }
}
