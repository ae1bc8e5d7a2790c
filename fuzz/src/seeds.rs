//! The seed inputs of every target: small captures of a FIX conversation in every format
//! and link type the reader knows, the start of each vendored capture (`testdata/`), FIX
//! streams, reassembly scripts and ring records; the binary protocols' sessions and feeds
//! (`order_seeds`, `feed_seeds`). `fuzz-seeds` writes them to `seeds/`;
//! the replay test also runs them straight from here, so a stale `seeds/` misses nothing.

use std::io;
use std::net::IpAddr;

use fixscope_core::decode::LinkType;
use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureWriter, FrameOptions, SyntheticConnection, TcpPacketSpec,
};
use fixscope_core::Endpoint;

/// Bytes of each vendored capture kept as a seed (a cut-off file is a good seed too).
const VENDORED_PREFIX: usize = 4096;

/// `(target, seed name, bytes)` for every seed.
pub fn seeds() -> io::Result<Vec<(&'static str, String, Vec<u8>)>> {
    let mut out = Vec::new();
    let packets = conversation("10.0.0.1", "10.0.0.2");
    let packets6 = conversation("2001:db8::1", "2001:db8::2");
    // pcap and pcapng, every link type, with and without VLANs/options.
    let formats = [
        ("pcap-us", CaptureFormat::pcap_micros()),
        ("pcap-ns", CaptureFormat::pcap_nanos()),
        ("pcapng-ns", CaptureFormat::pcapng_nanos()),
    ];
    let links = [
        ("eth", LinkType::Ethernet),
        ("sll", LinkType::LinuxSll),
        ("sll2", LinkType::LinuxSll2),
        ("raw", LinkType::RawIp),
        ("null", LinkType::Null),
    ];
    for (fname, format) in &formats {
        for (lname, link) in links {
            let mut w = CaptureWriter::new(Vec::new(), *format, link)?;
            for (i, p) in packets.iter().enumerate() {
                w.write_tcp(1_700_000_000_000_000_000 + i as u64 * 1_000, p)?;
            }
            out.push(("pcap", format!("{fname}-{lname}"), w.finish()?));
        }
    }
    let mut w = CaptureWriter::new(
        Vec::new(),
        CaptureFormat::pcapng_nanos(),
        LinkType::Ethernet,
    )?;
    for (i, p) in packets6.iter().enumerate() {
        w.write_tcp(1_700_000_000_000_000_000 + i as u64 * 1_000, p)?;
    }
    out.push(("pcap", "pcapng-ns-eth-v6".into(), w.finish()?));
    for name in ["ndpi_fix.pcap", "ndpi_fix2.pcap"] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/captures/ndpi/");
        let bytes = std::fs::read(format!("{path}{name}"))?;
        let cut = bytes.len().min(VENDORED_PREFIX);
        out.push((
            "pcap",
            format!("testdata-{name}-head"),
            bytes[..cut].to_vec(),
        ));
    }
    // Single frames of every link type, IPv4 and IPv6, plain and with every option.
    let fancy = FrameOptions {
        vlan_tags: vec![10, 20],
        ip_options: true,
        tcp_options: true,
    };
    for (li, (lname, link)) in links.iter().enumerate() {
        for (vname, p) in [("v4", &packets[4]), ("v6", &packets6[4])] {
            for (oname, opts) in [("plain", FrameOptions::default()), ("opts", fancy.clone())] {
                let mut seed = vec![li as u8];
                seed.extend(p.frame(*link, &opts));
                out.push(("decode", format!("{lname}-{vname}-{oname}"), seed));
            }
        }
    }
    // Reassembly scripts: isn, then 7-byte ops (kind, start, len, ts step, cut).
    let op = |kind: u8, start: u16, len: u16, dt: u8, cut: u8| {
        let mut v = vec![kind];
        v.extend(start.to_le_bytes());
        v.extend(len.to_le_bytes());
        v.extend([dt, cut]);
        v
    };
    let scripts: [(&str, u32, Vec<Vec<u8>>); 4] = [
        (
            "in-order",
            1000,
            vec![
                op(0x10, 0, 0, 1, 0),
                op(0, 0, 100, 1, 0),
                op(0, 100, 100, 1, 0),
            ],
        ),
        (
            "reordered-wrap",
            u32::MAX - 150,
            vec![
                op(0, 0, 100, 1, 0),
                op(0, 200, 100, 1, 0),
                op(0, 100, 100, 1, 0),
                op(0, 150, 100, 1, 0),
            ],
        ),
        (
            "acked-hole",
            7,
            vec![
                op(0, 0, 50, 1, 0),
                op(0, 100, 50, 1, 0),
                op(0x80, 0, 150, 1, 0),
                op(0x40, 150, 0, 1, 0),
            ],
        ),
        (
            "snaplen-timeout",
            99,
            vec![
                op(0x20, 0, 300, 1, 200),
                op(0, 400, 10, 1, 0),
                op(0, 410, 10, 200, 0),
            ],
        ),
    ];
    for (name, isn, ops) in scripts {
        let mut seed = isn.to_le_bytes().to_vec();
        seed.extend(ops.concat());
        out.push(("reassembly", name.into(), seed));
    }
    // FIX streams: whole, with garbage, a bad checksum and a lying BodyLength between.
    let stream: Vec<u8> = packets.iter().flat_map(|p| p.payload.clone()).collect();
    for cut_seed in [0u8, 6, 255] {
        let mut seed = vec![cut_seed];
        seed.extend(&stream);
        out.push(("fix", format!("conversation-cut{cut_seed}"), seed));
    }
    let mut dirty = vec![13u8];
    dirty.extend(b"\x00garbage 8=FIX.4.4\x019=5\x0135=0\x0110=000\x01");
    dirty.extend(b"8=FIX.4.4\x019=999\x0135=D\x0110=000\x01");
    dirty.extend(&stream);
    dirty.extend(b"8=FIX.4.4\x019=12");
    out.push(("fix", "dirty".into(), dirty));
    // Ring records of the conversation, each behind its 2-byte length.
    let mut records = Vec::new();
    for (i, p) in packets.iter().chain(&packets6).enumerate() {
        let rec = ring_record(i as u64 * 1_000, p);
        records.extend((rec.len() as u16).to_le_bytes());
        records.extend(rec);
    }
    out.push(("record", "conversation".into(), records));
    out.push(("socket_record", "reads-and-writes".into(), socket_records()));
    out.push(("tls", "tls12-hellos".into(), crate::tls::seed()));
    // The binary protocols' sessions and feeds, from each crate's encoder.
    let binary = [
        ("soupbin_ouch", crate::order_seeds::soupbin_ouch()),
        ("sofh_ilink3", crate::order_seeds::sofh_ilink3()),
        ("moldudp64_itch", crate::feed_seeds::moldudp64_itch()),
        ("mdp3", crate::feed_seeds::mdp3()),
    ];
    for (target, seeds) in binary {
        out.extend(seeds.into_iter().map(|(name, bytes)| (target, name, bytes)));
    }
    Ok(out)
}

/// A handshake, two orders answered by an ack and a fill, and a clean close.
fn conversation(client: &str, server: &str) -> Vec<TcpPacketSpec> {
    let ep = |addr: &str, port| Endpoint {
        addr: addr.parse::<IpAddr>().expect("a literal address"),
        port,
    };
    let mut c = SyntheticConnection::new(ep(client, 40_000), ep(server, 9878));
    let mut packets = c.handshake();
    let mut enc = FixEncoder::new();
    for id in ["A1", "A2"] {
        let mut msg = |t: &[u8], fields: &[(u32, &str)]| {
            enc.start(t).field_str(49, "CLIENT").field_str(56, "EXCH");
            for &(tag, v) in fields {
                enc.field_str(tag, v);
            }
            let mut out = Vec::new();
            enc.finish(b"FIX.4.4", &mut out);
            out
        };
        let order = msg(b"D", &[(11, id), (55, "AAPL"), (54, "1"), (38, "100")]);
        let ack = msg(b"8", &[(11, id), (150, "0"), (39, "0")]);
        let fill = msg(b"8", &[(11, id), (150, "F"), (39, "2")]);
        packets.push(c.client_sends(&order));
        packets.push(c.server_sends(&ack));
        packets.push(c.server_sends(&fill));
    }
    packets.push(c.client_fin());
    packets.push(c.server_fin());
    packets
}

/// The ring record (`struct fxs_rec`, fixscope.h, then the payload) the kernel would
/// write for `p`, seen at the request or response hook by its destination port.
fn ring_record(ts_ns: u64, p: &TcpPacketSpec) -> Vec<u8> {
    let mut h = vec![0u8; fixscope_live::RECORD_HEADER_BYTES];
    let addr = |a: IpAddr| match a {
        IpAddr::V4(v4) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v4.octets());
            b
        }
        IpAddr::V6(v6) => v6.octets(),
    };
    h[0..8].copy_from_slice(&ts_ns.to_ne_bytes());
    h[8..24].copy_from_slice(&addr(p.flow.src.addr));
    h[24..40].copy_from_slice(&addr(p.flow.dst.addr));
    h[40..44].copy_from_slice(&p.seq.to_ne_bytes());
    h[44..48].copy_from_slice(&p.ack.to_ne_bytes());
    h[48..52].copy_from_slice(&(p.payload.len() as u32).to_ne_bytes());
    h[60..64].copy_from_slice(&(p.payload.len() as u32).to_ne_bytes());
    h[68..70].copy_from_slice(&p.flow.src.port.to_ne_bytes());
    h[70..72].copy_from_slice(&p.flow.dst.port.to_ne_bytes());
    h[72] = if p.flow.src.addr.is_ipv4() { 4 } else { 6 };
    h[73] = u8::from(p.flow.src.port == 9878); // FXS_DIR_RESPONSE from the server
    h[74] = p.flags.0;
    h.extend(&p.payload);
    h
}

/// `--breakdown` records (`struct fxb_rec`, breakdown.h: 80 bytes): a read with a wakeup, a
/// write, an IPv6 read, each behind its 2-byte length.
fn socket_records() -> Vec<u8> {
    let rec = |ts: u64, woken: u64, on_cpu: u64, family: u8, dir: u8, call: u8, seq: u32| {
        let mut r = vec![0u8; 80];
        r[0..8].copy_from_slice(&ts.to_ne_bytes());
        r[8..16].copy_from_slice(&woken.to_ne_bytes());
        r[16..24].copy_from_slice(&on_cpu.to_ne_bytes());
        r[24..28].copy_from_slice(&[10, 0, 0, 2]);
        r[40..44].copy_from_slice(&[10, 0, 0, 1]);
        if family == 6 {
            r[24..40].copy_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
            r[40..56].copy_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        }
        r[56..60].copy_from_slice(&seq.to_ne_bytes());
        r[60..64].copy_from_slice(&120u32.to_ne_bytes());
        r[64..68].copy_from_slice(&4242u32.to_ne_bytes());
        r[68..70].copy_from_slice(&50_000u16.to_ne_bytes());
        r[70..72].copy_from_slice(&9878u16.to_ne_bytes());
        r[72] = family;
        r[73] = dir;
        r[74] = call;
        r
    };
    let mut out = Vec::new();
    for r in [
        rec(1_000, 700, 900, 4, 0, 0, 1),
        rec(2_000, 0, 0, 4, 1, 1, 7),
        rec(3_000, 2_500, 2_600, 6, 0, 0, 121),
    ] {
        out.extend((r.len() as u16).to_le_bytes());
        out.extend(r);
    }
    out
}

/// The seed called `name` of a target's `seeds` (its unit tests read their own seeds).
#[cfg(test)]
pub(crate) fn named(seeds: Vec<(String, Vec<u8>)>, name: &str) -> Vec<u8> {
    seeds
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no seed {name}"))
        .1
}
