//! Reading every format, link type and kind of damage, against what the writer wrote.

use std::io::Write as _;

use super::*;
use crate::pcap_writer::{
    CaptureFormat, CaptureWriter, FrameOptions, SyntheticConnection, TcpPacketSpec,
};
use fixscope_model::segment::{Direction, Endpoint, FlowKey, TcpFlags};

/// A Segment with its payload copied out of the reader's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    ts_ns: u64,
    flow: FlowKey,
    direction: Direction,
    seq: u32,
    flags: TcpFlags,
    payload: Vec<u8>,
    missing_tail: u32,
}

fn read(path: &Path, ports: &PortSet) -> (Result<(), CaptureError>, Vec<Seen>, CaptureStats) {
    let mut stats = CaptureStats::default();
    let mut seen = Vec::new();
    let r = read_capture(path, ports, &mut stats, |s| {
        seen.push(Seen {
            ts_ns: s.ts_ns,
            flow: s.flow,
            direction: s.direction,
            seq: s.seq,
            flags: s.flags,
            payload: s.payload.to_vec(),
            missing_tail: s.missing_tail,
        })
    });
    (r, seen, stats)
}

fn fix_port() -> PortSet {
    PortSet::single(9878)
}

fn endpoints(v6: bool) -> (Endpoint, Endpoint) {
    let (c, s) = if v6 {
        ("2001:db8::10", "2001:db8::20")
    } else {
        ("192.168.1.10", "192.168.1.20")
    };
    (
        Endpoint {
            addr: c.parse().unwrap(),
            port: 51000,
        },
        Endpoint {
            addr: s.parse().unwrap(),
            port: 9878,
        },
    )
}

/// A scripted session whose sequence numbers wrap in both directions.
fn script(v6: bool) -> Vec<TcpPacketSpec> {
    let (c, s) = endpoints(v6);
    let mut conn = SyntheticConnection::new(c, s);
    let mut v = conn.handshake();
    v.push(conn.client_sends(b"8=FIX.4.4\x019=12\x0135=D\x0111=1\x0110=000\x01"));
    v.push(conn.server_sends(&[b'A'; 150]));
    v.push(conn.client_sends(&[b'B'; 80]));
    v.push(conn.server_sends(&[b'C'; 200]));
    v.push(conn.client_fin());
    v.push(conn.server_fin());
    v.push(conn.client_rst());
    v
}

fn expected(spec: &TcpPacketSpec, ts_ns: u64) -> Seen {
    Seen {
        ts_ns,
        flow: spec.flow,
        direction: if spec.flow.dst.port == 9878 {
            Direction::Request
        } else {
            Direction::Response
        },
        seq: spec.seq,
        flags: spec.flags,
        payload: spec.payload.clone(),
        missing_tail: 0,
    }
}

const BASE_NS: u64 = 1_700_000_000 * NS_PER_SEC;

/// A timestamp step that the format represents exactly.
fn exact_step(format: CaptureFormat) -> u64 {
    match format {
        CaptureFormat::Pcap { nanos: false, .. } => 1_001_000,
        CaptureFormat::Pcap { nanos: true, .. } => 1_000_003,
        CaptureFormat::PcapNg { tsresol, .. } if tsresol & 0x80 == 0 => {
            10u64.pow(9u32.saturating_sub(u32::from(tsresol))) * 1001
        }
        CaptureFormat::PcapNg { tsresol, .. } => match u32::from(tsresol & 0x7F) {
            k @ 0..=9 => NS_PER_SEC >> k,
            10..=29 => 1_953_125,
            _ => 1_000_003,
        },
    }
}

fn all_formats() -> Vec<CaptureFormat> {
    let mut v = Vec::new();
    for big_endian in [false, true] {
        for nanos in [false, true] {
            v.push(CaptureFormat::Pcap { nanos, big_endian });
        }
        for tsresol in [6, 9, 3, 10, 0x80 | 10, 0x80 | 20, 0x80 | 30] {
            v.push(CaptureFormat::PcapNg {
                tsresol,
                big_endian,
            });
        }
    }
    v
}

const ALL_LINKS: [LinkType; 5] = [
    LinkType::Ethernet,
    LinkType::LinuxSll,
    LinkType::LinuxSll2,
    LinkType::RawIp,
    LinkType::Null,
];

fn frame_variants() -> Vec<FrameOptions> {
    vec![
        FrameOptions::default(),
        FrameOptions {
            vlan_tags: vec![42],
            ..FrameOptions::default()
        },
        FrameOptions {
            vlan_tags: vec![1, 2, 3],
            ip_options: true,
            tcp_options: false,
        },
        FrameOptions {
            vlan_tags: vec![],
            ip_options: true,
            tcp_options: true,
        },
    ]
}

#[test]
fn round_trips_every_format_link_type_and_header_variant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.cap");
    for format in all_formats() {
        let step = exact_step(format);
        for link in ALL_LINKS {
            for opts in frame_variants() {
                for v6 in [false, true] {
                    let mut w = CaptureWriter::new(Vec::new(), format, link).unwrap();
                    let mut want = Vec::new();
                    let mut ts = BASE_NS + 7 * step;
                    for spec in script(v6) {
                        w.write_tcp_on(0, ts, &spec, &opts).unwrap();
                        want.push(expected(&spec, ts));
                        ts += step;
                    }
                    // One segment cut by a snaplen: 10 payload bytes missing.
                    let (c, s) = endpoints(v6);
                    let mut conn = SyntheticConnection::new(c, s);
                    let spec = conn.client_sends(&[b'T'; 100]);
                    let frame = spec.frame(link, &opts);
                    let orig = frame.len() as u32;
                    w.write_packet_on(0, ts, &frame[..frame.len() - 10], Some(orig))
                        .unwrap();
                    let mut cut = expected(&spec, ts);
                    cut.payload.truncate(90);
                    cut.missing_tail = 10;
                    want.push(cut);

                    std::fs::write(&path, w.finish().unwrap()).unwrap();
                    let (r, seen, stats) = read(&path, &fix_port());
                    let ctx = format!("{format:?} {link:?} {opts:?} v6={v6}");
                    r.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert_eq!(seen, want, "{ctx}");
                    // Several files are put in time order by their first packet.
                    assert_eq!(super::first_timestamp(&path), Some(want[0].ts_ns), "{ctx}");
                    let n = want.len() as u64;
                    assert_eq!(
                        stats,
                        CaptureStats {
                            packets: n,
                            tcp_segments: n,
                            segments_in_port_range: n,
                            truncated_segments: 1,
                            ..CaptureStats::default()
                        },
                        "{ctx}"
                    );
                }
            }
        }
    }
}

#[test]
fn sub_nanosecond_resolutions_give_exact_nanoseconds() {
    // Odd nanosecond values through resolutions finer than 1 ns, with and without an
    // if_tsoffset (10^-12 and 2^-40 overflow 64 bits without one).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fine.pcapng");
    for big_endian in [false, true] {
        let format = CaptureFormat::PcapNg {
            tsresol: 0x80 | 30,
            big_endian,
        };
        let mut w = CaptureWriter::new(Vec::new(), format, LinkType::RawIp).unwrap();
        let ifaces = [
            0,
            w.add_interface(LinkType::RawIp, 10).unwrap(),
            w.add_interface_with_offset(LinkType::RawIp, 12, 1_699_999_990)
                .unwrap(),
            w.add_interface_with_offset(LinkType::RawIp, 0x80 | 40, 1_700_000_000)
                .unwrap(),
            w.add_interface_with_offset(LinkType::RawIp, 0x80 | 60, 1_700_000_000)
                .unwrap(),
            w.add_interface_with_offset(LinkType::RawIp, 9, -1_000)
                .unwrap(),
            w.add_interface_with_offset(LinkType::RawIp, 18, 1_700_000_000)
                .unwrap(),
        ];
        let specs = script(false);
        let mut want = Vec::new();
        let mut ts = BASE_NS + 123_456_789;
        for (i, spec) in specs.iter().enumerate() {
            let if_id = ifaces[i % ifaces.len()];
            w.write_tcp_on(if_id, ts, spec, &FrameOptions::default())
                .unwrap();
            want.push(expected(spec, ts));
            ts += 999_999_937;
        }
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        let (r, seen, stats) = read(&path, &fix_port());
        r.unwrap();
        assert_eq!(seen, want);
        assert_eq!(stats.packets, specs.len() as u64);
    }
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Hand-made little-endian pcapng block.
fn ng_block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    let mut body = body.to_vec();
    while body.len() & 3 != 0 {
        body.push(0);
    }
    let len = (body.len() + 12) as u32;
    b.extend_from_slice(&block_type.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

fn epb_body(if_id: u32, units: u64, frame: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [
        if_id,
        (units >> 32) as u32,
        units as u32,
        frame.len() as u32,
        frame.len() as u32,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(frame);
    b
}

#[test]
fn pcapng_interfaces_sections_simple_and_unknown_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let (c, s) = endpoints(false);
    let mut conn = SyntheticConnection::new(c, s);
    let mut want = Vec::new();
    let mut w = CaptureWriter::new(
        Vec::new(),
        CaptureFormat::pcapng_nanos(),
        LinkType::Ethernet,
    )
    .unwrap();
    let sll2 = w.add_interface(LinkType::LinuxSll2, 6).unwrap();
    let raw = w
        .add_interface_with_offset(LinkType::RawIp, 9, 1_000)
        .unwrap();
    let mut ts = BASE_NS;
    for (i, spec) in conn.handshake().into_iter().enumerate() {
        let if_id = [0, sll2, raw][i];
        w.write_tcp_on(if_id, ts, &spec, &FrameOptions::default())
            .unwrap();
        want.push(expected(&spec, ts));
        ts += 1_000;
    }
    // Blocks we do not know are skipped.
    w.write_custom_block(0x0000_0BAD, b"mystery").unwrap();
    w.write_custom_block(0x8000_0001, &[]).unwrap();
    // A simple packet block has no timestamp: it takes the previous packet's.
    let spec = conn.client_sends(b"simple");
    w.write_simple_packet(&spec.frame(LinkType::Ethernet, &FrameOptions::default()))
        .unwrap();
    want.push(expected(&spec, ts - 1_000));
    // An interface with a link type we do not decode (802.11), and a packet on it.
    let mut idb = Vec::new();
    idb.extend_from_slice(&105u16.to_le_bytes());
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&0u32.to_le_bytes());
    let mut bytes = w.finish().unwrap();
    bytes.extend_from_slice(&ng_block(1, &idb));
    bytes.extend_from_slice(&ng_block(6, &epb_body(3, 0, &[0u8; 40])));
    // A packet on an interface nobody described.
    bytes.extend_from_slice(&ng_block(6, &epb_body(9, 0, &[0u8; 40])));

    // A second section, big-endian, whose interface 0 is Linux cooked v1 at 2^-30 s:
    // the first section's interfaces are gone.
    let mut w = CaptureWriter::new(
        Vec::new(),
        CaptureFormat::PcapNg {
            tsresol: 0x80 | 30,
            big_endian: true,
        },
        LinkType::LinuxSll,
    )
    .unwrap();
    let spec = conn.server_sends(b"second section");
    w.write_tcp(ts, &spec).unwrap();
    want.push(expected(&spec, ts));
    let mut second = w.finish().unwrap();
    // An EPB for interface 2, which exists only in the first section. Big-endian.
    let mut epb = vec![0, 0, 0, 6, 0, 0, 0, 60, 0, 0, 0, 2];
    epb.extend_from_slice(&[0; 16]); // ts, caplen 0, origlen 0
    epb.resize(56, 0);
    epb.extend_from_slice(&60u32.to_be_bytes());
    second.extend_from_slice(&epb);
    bytes.extend_from_slice(&second);
    // And a third, little-endian section again.
    let mut w =
        CaptureWriter::new(Vec::new(), CaptureFormat::pcapng_nanos(), LinkType::Null).unwrap();
    let spec = conn.client_fin();
    w.write_tcp(ts + 5, &spec).unwrap();
    want.push(expected(&spec, ts + 5));
    bytes.extend_from_slice(&w.finish().unwrap());

    let path = write_file(dir.path(), "multi.pcapng", &bytes);
    let (r, seen, stats) = read(&path, &fix_port());
    r.unwrap();
    assert_eq!(seen, want);
    assert_eq!(
        stats,
        CaptureStats {
            packets: 9,
            tcp_segments: 6,
            segments_in_port_range: 6,
            unsupported_link_packets: 1,
            unknown_interface_packets: 2,
            ..CaptureStats::default()
        }
    );
}

#[test]
fn counts_out_of_range_non_tcp_fragments_and_bad_headers() {
    let dir = tempfile::tempdir().unwrap();
    let (c, s) = endpoints(false);
    let mut conn = SyntheticConnection::new(c, s);
    let mut w =
        CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    let plain = FrameOptions::default();
    let in_range = conn.client_sends(b"x");
    w.write_tcp(BASE_NS, &in_range).unwrap();
    // Another port.
    let mut other = in_range.clone();
    other.flow.dst.port = 80;
    w.write_tcp(BASE_NS, &other).unwrap();
    // ARP.
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    w.write_packet(BASE_NS, &arp).unwrap();
    // A fragment.
    let mut frag = in_range.frame(LinkType::Ethernet, &plain);
    frag[14 + 6] |= 0x20;
    w.write_packet(BASE_NS, &frag).unwrap();
    // Garbage: a frame cut inside the IP header, and one with a bad IHL.
    let f = in_range.frame(LinkType::Ethernet, &plain);
    w.write_packet_on(0, BASE_NS, &f[..20], Some(f.len() as u32))
        .unwrap();
    let mut bad = f.clone();
    bad[14] = 0x41;
    w.write_packet(BASE_NS, &bad).unwrap();
    w.write_packet(BASE_NS, &[]).unwrap();
    let path = write_file(dir.path(), "mixed.pcap", &w.finish().unwrap());
    let (r, seen, stats) = read(&path, &fix_port());
    r.unwrap();
    assert_eq!(seen, vec![expected(&in_range, BASE_NS)]);
    assert_eq!(
        stats,
        CaptureStats {
            packets: 7,
            tcp_segments: 2,
            segments_in_port_range: 1,
            not_tcp: 1,
            ip_fragments: 1,
            decode_errors: 3,
            ..CaptureStats::default()
        }
    );
}

/// A capture of `n` data packets, plus the file offset where the last record starts.
fn capture(format: CaptureFormat, n: usize) -> (Vec<u8>, usize, Vec<Seen>) {
    let (c, s) = endpoints(false);
    let mut conn = SyntheticConnection::new(c, s);
    let mut w = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet).unwrap();
    let mut want = Vec::new();
    let mut last_start = 0;
    for i in 0..n {
        let spec = conn.client_sends(format!("packet {i:06} ").repeat(4).as_bytes());
        let ts = BASE_NS + i as u64 * 1_000;
        last_start = w.get_ref().len();
        w.write_tcp(ts, &spec).unwrap();
        want.push(expected(&spec, ts));
    }
    (w.finish().unwrap(), last_start, want)
}

#[test]
fn file_cut_inside_the_last_record_is_read_up_to_it() {
    let dir = tempfile::tempdir().unwrap();
    for format in [CaptureFormat::pcap_micros(), CaptureFormat::pcapng_nanos()] {
        let (bytes, last, want) = capture(format, 5);
        for cut in last..bytes.len() {
            let path = write_file(dir.path(), "cut.cap", &bytes[..cut]);
            let (r, seen, stats) = read(&path, &fix_port());
            r.unwrap_or_else(|e| panic!("{format:?} cut at {cut}: {e}"));
            assert_eq!(seen, want[..4], "{format:?} cut at {cut}");
            assert_eq!(stats.truncated_file, cut != last, "{format:?} cut at {cut}");
            assert_eq!(stats.packets, 4);
        }
        let path = write_file(dir.path(), "whole.cap", &bytes);
        let (r, seen, stats) = read(&path, &fix_port());
        r.unwrap();
        assert_eq!(seen, want);
        assert!(!stats.truncated_file);
    }
}

#[test]
fn streams_files_larger_than_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    for format in [CaptureFormat::pcap_nanos(), CaptureFormat::pcapng_nanos()] {
        let (c, s) = endpoints(true);
        let mut conn = SyntheticConnection::new(c, s);
        let mut w = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet).unwrap();
        let n = 25_000u64;
        for i in 0..n {
            let payload = vec![b'0' + (i % 10) as u8; 50 + (i % 150) as usize];
            w.write_tcp(BASE_NS + i, &conn.client_sends(&payload))
                .unwrap();
        }
        let bytes = w.finish().unwrap();
        assert!(bytes.len() > 2 * BUFFER_SIZE);
        let path = write_file(dir.path(), "big.cap", &bytes);
        let mut stats = CaptureStats::default();
        let mut count = 0u64;
        let mut next_seq = None;
        read_capture(&path, &fix_port(), &mut stats, |s| {
            assert_eq!(s.ts_ns, BASE_NS + count);
            assert_eq!(s.payload.len(), 50 + (count % 150) as usize);
            if let Some(seq) = next_seq {
                assert_eq!(s.seq, seq);
            }
            next_seq = Some(s.seq.wrapping_add(s.payload.len() as u32));
            count += 1;
        })
        .unwrap();
        assert_eq!(count, n);
        assert_eq!(stats.packets, n);
        assert!(!stats.truncated_file);
    }
}

#[test]
fn records_larger_than_the_buffer_grow_it() {
    // A 3 MiB TSO super-packet (IPv4 total length 0) in a pcapng file.
    let dir = tempfile::tempdir().unwrap();
    let (c, s) = endpoints(false);
    let mut conn = SyntheticConnection::new(c, s);
    let mut w =
        CaptureWriter::new(Vec::new(), CaptureFormat::pcapng_nanos(), LinkType::RawIp).unwrap();
    let small = conn.client_sends(b"before");
    w.write_tcp(BASE_NS, &small).unwrap();
    let big = conn.client_sends(&vec![b'G'; 3 << 20]);
    w.write_tcp(BASE_NS + 1, &big).unwrap();
    let after = conn.client_sends(b"after");
    w.write_tcp(BASE_NS + 2, &after).unwrap();
    let path = write_file(dir.path(), "jumbo.pcapng", &w.finish().unwrap());
    let (r, seen, _) = read(&path, &fix_port());
    r.unwrap();
    assert_eq!(
        seen,
        vec![
            expected(&small, BASE_NS),
            expected(&big, BASE_NS + 1),
            expected(&after, BASE_NS + 2)
        ]
    );
    // Its time, when the big packet comes first.
    let mut w =
        CaptureWriter::new(Vec::new(), CaptureFormat::pcapng_nanos(), LinkType::RawIp).unwrap();
    w.write_tcp(BASE_NS + 1, &big).unwrap();
    let path = write_file(dir.path(), "jumbo-first.pcapng", &w.finish().unwrap());
    assert_eq!(super::first_timestamp(&path), Some(BASE_NS + 1));
}

#[test]
fn corrupt_records_before_the_end_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // Legacy pcap: the second record's captured length is absurd.
    let (mut bytes, _, _) = capture(CaptureFormat::pcap_micros(), 4);
    let first_len = 16 + u32::from_le_bytes(bytes[32..36].try_into().unwrap()) as usize;
    let second = 24 + first_len;
    bytes[second + 8..second + 12].copy_from_slice(&0x00FF_FFFFu32.to_le_bytes());
    let path = write_file(dir.path(), "bad-caplen.pcap", &bytes);
    let (r, seen, _) = read(&path, &fix_port());
    assert_eq!(seen.len(), 1);
    match r {
        Err(e @ CaptureError::Corrupt { offset, .. }) => {
            assert_eq!(offset, second as u64);
            assert!(e.to_string().contains("bad-caplen.pcap"), "{e}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }

    // pcapng: the second EPB's lengths are damaged in three ways.
    let (bytes, _, _) = capture(CaptureFormat::pcapng_nanos(), 4);
    // SHB (28) + IDB (20 + 8 for if_tsresol + 4 end) = 60.
    let shb_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let idb_len = u32::from_le_bytes(bytes[shb_len + 4..shb_len + 8].try_into().unwrap()) as usize;
    let first = shb_len + idb_len;
    let epb_len = u32::from_le_bytes(bytes[first + 4..first + 8].try_into().unwrap()) as usize;
    let second = first + epb_len;
    let damage: [(&str, usize, u32); 4] = [
        ("huge", second + 4, 0x4000_0000),
        ("tiny", second + 4, 13),
        ("trailer", second + epb_len - 4, 999),
        ("caplen", second + 20, 5000),
    ];
    for (name, at, value) in damage {
        let mut b = bytes.clone();
        b[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let path = write_file(dir.path(), &format!("{name}.pcapng"), &b);
        let (r, seen, _) = read(&path, &fix_port());
        assert_eq!(seen.len(), 1, "{name}");
        match r {
            Err(e @ CaptureError::Corrupt { offset, .. }) => {
                assert_eq!(offset, second as u64, "{name}: {e}");
                assert!(e.to_string().contains(&format!("{name}.pcapng")), "{e}");
            }
            other => panic!("{name}: expected Corrupt, got {other:?}"),
        }
    }
    // An unknown block shorter than a block header.
    let mut b = bytes[..second].to_vec();
    b.extend_from_slice(&[0xAD, 0x0B, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0]);
    b.extend_from_slice(&bytes[second..]);
    let path = write_file(dir.path(), "short-block.pcapng", &b);
    assert!(matches!(
        read(&path, &fix_port()).0,
        Err(CaptureError::Corrupt { .. })
    ));
}

#[test]
fn rejects_files_that_are_not_captures() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty", &b""[..]),
        ("tiny", &b"\xd4\xc3"[..]),
        ("text", &b"8=FIX.4.4\x019=5\x0135=0\x0110=000\x01"[..]),
    ] {
        let path = write_file(dir.path(), name, bytes);
        match read(&path, &fix_port()).0 {
            Err(e @ CaptureError::NotACapture { .. }) => {
                assert!(e.to_string().contains(name), "{e}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Compressed captures: said so, with the way in (issue #36: a .gz got "not a pcap").
    for (name, bytes, cat) in [
        ("c.pcap.gz", &b"\x1f\x8b\x08\x00\x00\x00"[..], "zcat"),
        ("c.pcap.zst", &b"\x28\xb5\x2f\xfd\x00"[..], "zstdcat"),
        ("c.pcap.xz", &b"\xfd7zXZ\x00"[..], "xzcat"),
        ("c.pcap.bz2", &b"BZh91AY"[..], "bzcat"),
    ] {
        let path = write_file(dir.path(), name, bytes);
        match read(&path, &fix_port()).0 {
            Err(e @ CaptureError::Compressed { .. }) => {
                let text = e.to_string();
                let want = format!("`{cat} {} | fixscope pcap - …`", path.display());
                assert!(text.contains(&want), "{text}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // A pcap magic with a cut header; a pcapng magic with a cut section header.
    for (name, bytes) in [
        ("cut-header.pcap", &b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00"[..]),
        ("cut-shb.pcapng", &b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00"[..]),
    ] {
        let path = write_file(dir.path(), name, bytes);
        assert!(
            matches!(
                read(&path, &fix_port()).0,
                Err(CaptureError::Corrupt { offset: 0, .. })
            ),
            "{name}"
        );
    }
    // Missing file, and a directory (opens, then fails to read).
    let missing = dir.path().join("nope.pcap");
    assert!(matches!(
        read(&missing, &fix_port()).0,
        Err(CaptureError::Open { .. })
    ));
    assert!(matches!(
        read(dir.path(), &fix_port()).0,
        Err(CaptureError::Read { .. })
    ));
}

#[test]
fn legacy_pcap_with_unsupported_link_type_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&105u32.to_le_bytes());
    let path = write_file(dir.path(), "wifi.pcap", &f);
    assert!(matches!(
        read(&path, &fix_port()).0,
        Err(CaptureError::UnsupportedLinkType { linktype: 105, .. })
    ));
}

#[test]
fn reads_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _, want) = capture(CaptureFormat::pcapng_nanos(), 20);
    let fifo = dir.path().join("fifo");
    fixscope_testkit::require_tool("reads_from_a_pipe", "mkfifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "mkfifo failed: {status:?}"
    );
    let writer_path = fifo.clone();
    let t = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .unwrap();
        // Dribble the bytes so reads come back short.
        for chunk in bytes.chunks(7) {
            f.write_all(chunk).unwrap();
        }
    });
    let (r, seen, _) = read(&fifo, &fix_port());
    t.join().unwrap();
    r.unwrap();
    assert_eq!(seen, want);
}

#[test]
fn header_only_captures_are_empty() {
    let dir = tempfile::tempdir().unwrap();
    for format in [CaptureFormat::pcap_micros(), CaptureFormat::pcapng_nanos()] {
        let bytes = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet)
            .unwrap()
            .finish()
            .unwrap();
        let path = write_file(dir.path(), "empty.cap", &bytes);
        let (r, seen, stats) = read(&path, &fix_port());
        r.unwrap();
        assert!(seen.is_empty());
        assert_eq!(stats, CaptureStats::default());
        assert_eq!(super::first_timestamp(&path), None, "no packet, no time");
    }
}

/// The public nDPI captures vendored in the repository (testdata/captures/ndpi).
fn ndpi(name: &str) -> PathBuf {
    fixscope_testkit::test_data(&format!("captures/ndpi/{name}"))
}

#[test]
fn reads_ndpi_fix_capture() {
    let path = ndpi("ndpi_fix.pcap");
    let (r, seen, stats) = read(&path, &"4000".parse().unwrap());
    r.unwrap();
    // Figures from tshark: 1261 TCP packets, all on port 4000, 37586 payload bytes.
    assert_eq!(
        stats,
        CaptureStats {
            packets: 1261,
            tcp_segments: 1261,
            segments_in_port_range: 1261,
            ..CaptureStats::default()
        }
    );
    let bytes: usize = seen.iter().map(|s| s.payload.len()).sum();
    assert_eq!(bytes, 37586);
    let first = &seen[0];
    assert_eq!(first.ts_ns, 1_493_755_109_242_949_000);
    assert_eq!(first.flow.src.to_string(), "8.17.22.31:4000");
    assert_eq!(first.direction, Direction::Response);
    assert_eq!(first.seq, 929_923_212);
    assert_eq!(first.payload.len(), 86);
    assert!(seen.iter().all(|s| s.missing_tail == 0));
}

#[test]
fn reads_ndpi_fix2_capture() {
    let path = ndpi("ndpi_fix2.pcap");
    let (r, seen, stats) = read(&path, &"1024".parse().unwrap());
    r.unwrap();
    // tshark: 3049 packets, 3 ARP, 3046 TCP to/from port 1024, 67956 payload bytes. The
    // capture saw many packets twice (before and after a router: TTL 128, then 127, same
    // IP identification and TCP checksum, tens of microseconds apart): tshark fields
    // grouped by (flow, seq, ack, flags, len, ip.id, window, checksum) within 1 ms find 784
    // second copies, 167 of them with data: those are counted here and not handed on (a
    // copied pure ACK changes nothing and goes on).
    assert_eq!(
        stats,
        CaptureStats {
            packets: 3049,
            tcp_segments: 3046,
            segments_in_port_range: 2879,
            mirror_duplicates: 167,
            not_tcp: 3,
            ..CaptureStats::default()
        }
    );
    // 67956 payload bytes in all; 51046 without the second copies (tshark, as above).
    assert_eq!(seen.iter().map(|s| s.payload.len()).sum::<usize>(), 51046);
    let (r, _, stats) = read(&path, &"4000".parse().unwrap());
    r.unwrap();
    assert_eq!(stats.segments_in_port_range, 0);
}

/// A legacy pcap file is read in place (`mapped.rs`), a stream through the buffered
/// reader: for every way a file can be whole, cut or corrupt, both must hand on the same
/// segments, counters and error (with the same offset) — and the mapped walk must hand
/// the damage over to the streaming reader rather than decide about it itself.
#[test]
fn mapped_files_read_exactly_as_streams() {
    let dir = tempfile::tempdir().unwrap();
    let via_stream = |bytes: &[u8]| {
        let mut stats = CaptureStats::default();
        let mut seen = Vec::new();
        let r = read_capture_from(bytes, Path::new("x.pcap"), &fix_port(), &mut stats, |s| {
            seen.push((s.ts_ns, s.seq, s.payload.to_vec()));
            Flow::Continue
        });
        (r.map_err(|e| e.to_string()), seen, stats)
    };
    let via_file = |bytes: &[u8]| {
        let path = write_file(dir.path(), "x.pcap", bytes);
        let mut stats = CaptureStats::default();
        let mut seen = Vec::new();
        let r = read_capture(&path, &fix_port(), &mut stats, |s| {
            seen.push((s.ts_ns, s.seq, s.payload.to_vec()));
        });
        let r = r.map_err(|e| e.to_string().replace(&path.display().to_string(), "x.pcap"));
        (r, seen, stats)
    };
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for format in [
        CaptureFormat::pcap_micros(),
        CaptureFormat::Pcap {
            nanos: true,
            big_endian: true,
        },
    ] {
        let (bytes, last, _) = capture(format, 40);
        cases.push((format!("{format:?} whole"), bytes.clone()));
        for cut in [24, 30, 40, last, last + 7, bytes.len() - 1] {
            cases.push((format!("{format:?} cut at {cut}"), bytes[..cut].to_vec()));
        }
        let first_len = 16 + read_u32_at(&bytes, 32, format) as usize;
        let third = 24 + 2 * first_len;
        for caplen in [0x00FF_FFFFu32, 0x0400_0000, 300_000, 9] {
            let mut b = bytes.clone();
            let v = match format {
                CaptureFormat::Pcap {
                    big_endian: true, ..
                } => caplen.to_be_bytes(),
                _ => caplen.to_le_bytes(),
            };
            b[third + 8..third + 12].copy_from_slice(&v);
            cases.push((format!("{format:?} third caplen {caplen}"), b.clone()));
            // The same with bytes enough after it: too long for the snaplen, though inside
            // the file.
            b.resize(b.len() + 400_000, 0);
            cases.push((format!("{format:?} third caplen {caplen}, padded"), b));
        }
    }
    for (name, bytes) in cases {
        let (a, b) = (via_stream(&bytes), via_file(&bytes));
        assert_eq!(a, b, "{name}: mapped file differs from the stream");
    }
}

fn read_u32_at(bytes: &[u8], at: usize, format: CaptureFormat) -> u32 {
    let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
    match format {
        CaptureFormat::Pcap {
            big_endian: true, ..
        } => u32::from_be_bytes(b),
        _ => u32::from_le_bytes(b),
    }
}

#[test]
fn every_capture_counter_is_in_the_json_docs() {
    // The capture source's counters, beside the pipeline's (fixscope-model checks those; the
    // live crate checks the kernel's).
    let doc = include_str!("../../../../docs/output-json.md");
    let missing: Vec<_> = fixscope_model::source::counters_of(&CaptureStats::default())
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "capture counters not documented in docs/output-json.md: {missing:?}"
    );
}
