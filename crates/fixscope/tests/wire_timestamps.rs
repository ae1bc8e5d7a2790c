//! Timestamps from the wire (#34): captures whose frames carry a tap's hardware trailer
//! (Arista MetaWatch, Cisco HPT) with the true time, while the capture host stamped each
//! frame later — by a different delay per direction, as two tap ports or two host queues
//! do. The true times come from the scripted scenario, never from fixscope.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{
    wrap_in_tunnel, CaptureFormat, CaptureWriter, FrameOptions, Tunnel,
};
use fixscope_core::wire_stamp::{
    clock_name, trailer_for, with_arista_header, with_mac_stamp, TrailerKind, WireStamp,
};
use support::*;

/// The capture host's delays: requests `request_delay_ns` after the wire, responses
/// `response_delay_ns` after it (constant per direction: each direction's frames keep
/// their order, as one tap port's do).
struct HostDelays {
    request_delay_ns: u64,
    response_delay_ns: u64,
}

fn is_response(p: &TimedPacket) -> bool {
    p.spec.flow.src.port == SERVER_PORT
}

/// Writes the scenario as a capture: every frame with `kind`'s trailer holding its true
/// time (none when `kind` is `None`), recorded at the host's later time, in the host's order.
fn write_tapped(
    path: &std::path::Path,
    packets: &[TimedPacket],
    kind: Option<TrailerKind>,
    delays: &HostDelays,
) {
    write_tapped_with(path, packets, kind, delays, 0, |_| true)
}

/// [`write_tapped`] with the tap's clock `device_ahead_ns` ahead of the wire's truth, and
/// a trailer only on the frames `stamped` says.
fn write_tapped_with(
    path: &std::path::Path,
    packets: &[TimedPacket],
    kind: Option<TrailerKind>,
    delays: &HostDelays,
    device_ahead_ns: u64,
    stamped: impl Fn(usize) -> bool,
) {
    let mut frames: Vec<(u64, Vec<u8>)> = packets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut frame = p.spec.frame(LinkType::Ethernet, &FrameOptions::default());
            if frame.len() < 60 {
                frame.resize(60, 0);
            }
            match kind.filter(|_| stamped(i)) {
                Some(TrailerKind::AristaHeader) => frame = with_arista_header(&frame, p.ts_ns),
                Some(TrailerKind::Arista7280Mac) => frame = with_mac_stamp(&frame, p.ts_ns),
                Some(kind) => {
                    let stamp = WireStamp {
                        kind,
                        device: 7,
                        port: u8::from(is_response(p)),
                        unix_ns: p.ts_ns + device_ahead_ns,
                    };
                    let trailer = trailer_for(&frame, &stamp, i % 2 == 0);
                    frame.extend_from_slice(&trailer);
                }
                None => {}
            }
            let delay = if is_response(p) {
                delays.response_delay_ns
            } else {
                delays.request_delay_ns
            };
            (p.ts_ns + delay, frame)
        })
        .collect();
    frames.sort_by_key(|(host_ns, _)| *host_ns);
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    for (host_ns, frame) in &frames {
        w.write_packet(*host_ns, frame).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn trailer_times_give_the_true_latencies_where_host_times_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let frames = packets.len() as u64;
    // Responses reach the capture host 3 µs sooner after the wire than requests do.
    let delays = HostDelays {
        request_delay_ns: 20_000,
        response_delay_ns: 17_000,
    };
    for kind in [
        TrailerKind::MetaWatch,
        TrailerKind::Hpt,
        TrailerKind::AristaHeader,
        TrailerKind::Ixia,
        TrailerKind::Gigamon,
    ] {
        let path = dir.path().join(format!("{}.pcap", kind.name()));
        write_tapped(&path, &packets, Some(kind), &delays);
        let (_, summary) = analyse(&[&path], &[]);
        assert_truth(&summary, &truth);
        assert_eq!(summary["source"]["trailer_timestamps"], frames, "{kind:?}");
        assert_eq!(summary["source"]["trailer_missing"], 0);
        assert_eq!(summary["source"]["trailer_fcs_mismatch"], 0);
        for c in [
            "timed_out",
            "unmatched_responses",
            "response_before_request",
        ] {
            assert_eq!(counter(&summary, c), 0, "{kind:?} {c}");
        }
        let text = String::from_utf8(
            fixscope(&["pcap", path.to_str().unwrap(), "-p", "9878", "-r", "0"]).stdout,
        )
        .unwrap();
        // The clock is named in every output: JSON's `timestamp_source`, the text summary.
        let clock = clock_name(kind, 7);
        assert_eq!(summary["timestamp_source"], clock.as_str());
        assert!(
            text.contains(&format!(
                "timestamps: {clock}, the tap's hardware stamps on {frames} frames\n"
            )),
            "{text}"
        );
    }
    // The same capture without trailers, or with them ignored: the host's times, 3 µs
    // short on every order.
    let short: Vec<u64> = truth.first_response.iter().map(|ns| ns - 3_000).collect();
    let host = dir.path().join("host.pcap");
    write_tapped(&host, &packets, None, &delays);
    let tapped = dir.path().join("hpt.pcap");
    for (path, flags) in [
        (&host, &[][..]),
        (&tapped, &["--wire-timestamps", "off"][..]),
    ] {
        let (_, summary) = analyse(&[path], flags);
        assert_stage(&summary, "first_response", &short);
        assert_eq!(summary["source"]["trailer_timestamps"], 0);
        assert!(
            summary.get("timestamp_source").is_none(),
            "the capture's own clock"
        );
    }
    // Asked for the kind the capture carries, or read on one thread or by three workers:
    // the same as found by itself.
    for flags in [
        &["--wire-timestamps", "hpt"][..],
        &["--threads", "1"][..],
        &["--threads", "3"][..],
    ] {
        let (_, summary) = analyse(&[&tapped], flags);
        assert_truth(&summary, &truth);
        assert_eq!(summary["timestamp_source"], "hpt (device 7)", "{flags:?}");
        assert_eq!(summary["source"]["trailer_timestamps"], frames, "{flags:?}");
    }
}

/// The forms nothing can check (#34): a VSS trailer, an Arista 7280 stamp in the source
/// MAC. Asked for by name they give the true latencies and name the clock; `auto` never
/// reads them (the host's times, 3 µs short).
#[test]
fn vss_and_source_mac_stamps_are_read_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let delays = HostDelays {
        request_delay_ns: 20_000,
        response_delay_ns: 17_000,
    };
    let short: Vec<u64> = truth.first_response.iter().map(|ns| ns - 3_000).collect();
    for kind in [TrailerKind::Vss, TrailerKind::Arista7280Mac] {
        let path = dir.path().join(format!("{}.pcap", kind.name()));
        write_tapped(&path, &packets, Some(kind), &delays);
        let (_, summary) = analyse(&[&path], &["--wire-timestamps", kind.name()]);
        assert_truth(&summary, &truth);
        assert_eq!(summary["timestamp_source"], kind.name());
        assert_eq!(
            summary["source"]["trailer_timestamps"],
            packets.len() as u64,
            "{kind:?}"
        );
        let (_, summary) = analyse(&[&path], &[]);
        assert_stage(&summary, "first_response", &short);
        assert_eq!(summary["source"]["trailer_timestamps"], 0, "{kind:?}");
        assert!(summary.get("timestamp_source").is_none());
    }
}

#[test]
fn hardware_stamps_read_out_of_order_still_give_the_wire_s_latencies() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    // Requests reach the host 30 µs after the wire, responses 5 µs: every order acked in
    // under 25 µs has its ack (and maybe its fill) recorded before its request.
    let delays = HostDelays {
        request_delay_ns: 30_000,
        response_delay_ns: 5_000,
    };
    let read_first = |ack: u64| ack + delays.response_delay_ns < delays.request_delay_ns;
    let reordered = truth.ack.iter().filter(|&&ack| read_first(ack)).count() as u64;
    assert!(reordered > 0 && reordered < truth.requests, "{reordered}");

    // With the tap's stamps every order is exact: the responses read first wait for their
    // request (`correlate/early.rs`) and answer it with their own times.
    let tapped = dir.path().join("tapped.pcap");
    write_tapped(&tapped, &packets, Some(TrailerKind::Hpt), &delays);
    for flags in [&[][..], &["--threads", "1"][..], &["--threads", "3"][..]] {
        let (_, summary) = analyse(&[&tapped], flags);
        assert_truth(&summary, &truth);
        assert_eq!(summary["timestamp_source"], "hpt (device 7)", "{flags:?}");
        for c in [
            "response_before_request",
            "timed_out",
            "unmatched_responses",
            "unanswered",
            "time_reversed",
        ] {
            assert_eq!(counter(&summary, c), 0, "{flags:?} {c}");
        }
    }

    // With the host's stamps alone those orders' responses come before their requests:
    // counted `response_before_request`, no latency, no false alarm; the others are the
    // host's figures, 25 µs short.
    let host = dir.path().join("host.pcap");
    write_tapped(&host, &packets, None, &delays);
    let (_, summary) = analyse(&[&host], &[]);
    assert_eq!(counter(&summary, "response_before_request"), reordered);
    assert_eq!(counter(&summary, "matched"), truth.requests - reordered);
    for c in ["timed_out", "unmatched_responses", "unanswered"] {
        assert_eq!(counter(&summary, c), 0, "{c}");
    }
    let in_order: Vec<u64> = truth
        .first_response
        .iter()
        .filter(|&&ack| !read_first(ack))
        .map(|ack| ack - 25_000)
        .collect();
    assert_stage(&summary, "first_response", &in_order);
}

/// A tap that stamps TAI (37 s ahead of the host's UTC) is named so; frames it did not
/// stamp are timed by the host's clock, and the run says what that does to the orders
/// timed by both.
#[test]
fn a_tai_clock_is_named_and_frames_without_a_stamp_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let delays = HostDelays {
        request_delay_ns: 20_000,
        response_delay_ns: 17_000,
    };
    let tai = dir.path().join("tai.pcap");
    write_tapped_with(
        &tai,
        &packets,
        Some(TrailerKind::Hpt),
        &delays,
        37_000_000_000,
        |_| true,
    );
    let out = fixscope(&["pcap", tai.to_str().unwrap(), "-p", "9878", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("runs 37 s ahead of the capture host's: it stamps TAI"),
        "{stderr}"
    );
    let (_, summary) = analyse(&[&tai], &[]);
    assert_truth(&summary, &truth);

    // Every 50th frame without a trailer: counted, warned about, never silent.
    let mixed = dir.path().join("mixed.pcap");
    write_tapped_with(&mixed, &packets, Some(TrailerKind::Hpt), &delays, 0, |i| {
        i % 50 != 7
    });
    let out = fixscope(&["pcap", mixed.to_str().unwrap(), "-p", "9878", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (_, summary) = analyse(&[&mixed], &[]);
    let missing = summary["source"]["trailer_missing"].as_u64().unwrap();
    assert_eq!(
        missing,
        (0..packets.len()).filter(|i| i % 50 == 7).count() as u64
    );
    assert!(
        stderr.contains(&format!("{missing} frames carried no hpt stamp")),
        "{stderr}"
    );
    assert!(!stderr.contains("TAI"), "{stderr}");
}

/// An Arista 7150 v2 keyframe, byte by byte from the layout (docs/tap.md): an IPv4
/// datagram of protocol 253 holding asic_time · utc_ns · last_sync · skew a · skew b ·
/// keyframe_ts · drops · device · egress interface · fcs_type (1: tick before the FCS) ·
/// reserved; its own tick 0 and an FCS after it.
fn keyframe_7150(counter: u64, utc_ns: u64, skew: (u64, u64), device: u16) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [
        counter,
        utc_ns,
        counter - 1_000,
        skew.0,
        skew.1,
        counter + 9,
        0,
    ] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    p.extend_from_slice(&device.to_be_bytes());
    p.extend_from_slice(&37u16.to_be_bytes());
    p.extend_from_slice(&[1, 0]);
    let mut f = vec![0xFF; 6];
    f.extend_from_slice(&[0x00, 0x1c, 0x73, 0xc5, 0xb7, 0xaa, 0x08, 0x00]);
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 253, 0, 0]);
    f[16..18].copy_from_slice(&(20 + p.len() as u16).to_be_bytes());
    f.extend_from_slice(&[1, 2, 3, 4, 111, 111, 111, 111]);
    f.extend_from_slice(&p);
    f.extend_from_slice(&[0; 4]);
    let fcs = crc32fast::hash(&f);
    f.extend_from_slice(&fcs.to_le_bytes());
    f
}

/// The 7150's 4 tick bytes for a counter: its low 31 bits, a zero bit 7 inserted.
fn tick_7150(counter: u64) -> [u8; 4] {
    let t = counter as u32 & 0x7FFF_FFFF;
    (((t << 1) & 0xFFFF_FF00) | (t & 0x7F)).to_be_bytes()
}

/// Arista 7150 ticks (#34, asked for by name): every frame carries its counter's 31 low
/// bits — before a new FCS on even frames, in its place on odd ones — and a keyframe every
/// 100 ms pairs the counter with UTC, sent 0.55 s after it was sampled (as the vendor's
/// samples are). The counter runs at 318.18 MHz (skew a/b = 1.1: 22/7 ns per tick, so
/// every true time here, a multiple of 22 ns from the first, is a whole tick) and its low
/// 31 bits wrap mid-run. The capture host stamps each frame 5–100 µs late, in each
/// direction's order. `--wire-timestamps arista-7150` gives the true latencies; `auto`
/// never reads a tick (nothing could tell it from a frame's last bytes).
#[test]
fn arista_7150_ticks_and_keyframes_give_the_true_latencies_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ScenarioSpec {
        granularity_ns: 22,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    let utc0 = packets.iter().map(|p| p.ts_ns).min().unwrap();
    let last = packets.iter().map(|p| p.ts_ns).max().unwrap();
    let skew = (1_100_000_000, 1_000_000_000);
    // The counter's low 31 bits wrap 35M ticks (110 ms) after the first packet.
    let counter0: i128 = (0x55 << 32) | (0x8000_0000 - 35_000_000);
    let ticks_at = |t: u64| {
        let ns = i128::from(t) - i128::from(utc0);
        assert_eq!(ns % 22, 0, "a true time off the tick grid");
        (counter0 + ns / 22 * 7) as u64
    };
    assert!(ticks_at(last) as u32 & 0x7FFF_FFFF < ticks_at(utc0) as u32 & 0x7FFF_FFFF);

    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let period = 22 * 4_545_455; // ~100 ms, on the grid
    let lag = 550_000_000;
    let mut k = -10i64;
    loop {
        let t = (i128::from(utc0) + i128::from(k) * period) as u64;
        if t > last + period as u64 {
            break;
        }
        frames.push((t + lag, keyframe_7150(ticks_at(t), t, skew, 888)));
        k += 1;
    }
    let keyframes = frames.len();
    let mut host_after = [0u64; 2];
    for (i, p) in packets.iter().enumerate() {
        let mut frame = p.spec.frame(LinkType::Ethernet, &FrameOptions::default());
        if frame.len() < 60 {
            frame.resize(60, 0);
        }
        frame.extend_from_slice(&tick_7150(ticks_at(p.ts_ns)));
        if i % 2 == 0 {
            let fcs = crc32fast::hash(&frame);
            frame.extend_from_slice(&fcs.to_le_bytes());
        }
        // 5 to 100 µs late, each direction's frames in their order.
        let dir_ = usize::from(is_response(p));
        let host = (p.ts_ns + 5_000 + (i as u64 * 7_919) % 95_001).max(host_after[dir_] + 1);
        host_after[dir_] = host;
        frames.push((host, frame));
    }
    frames.sort_by_key(|(host, _)| *host);
    let write = |name: &str, keep: &dyn Fn(&[u8]) -> bool| {
        let path = dir.path().join(name);
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w =
            CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
        for (host, frame) in frames.iter().filter(|(_, f)| keep(f)) {
            w.write_packet(*host, frame).unwrap();
        }
        w.finish().unwrap();
        path
    };
    let path = write("arista-7150.pcap", &|_| true);

    for flags in [
        &["--wire-timestamps", "arista-7150"][..],
        &["--wire-timestamps", "arista-7150", "--threads", "1"][..],
        &["--wire-timestamps", "arista-7150", "--threads", "3"][..],
    ] {
        let (_, summary) = analyse(&[&path], flags);
        assert_truth(&summary, &truth);
        assert_eq!(
            summary["timestamp_source"], "arista-7150 (device 888)",
            "{flags:?}"
        );
        assert_eq!(
            summary["source"]["trailer_timestamps"],
            packets.len() as u64
        );
        assert_eq!(summary["source"]["trailer_missing"], 0);
        assert_eq!(summary["source"]["trailer_fcs_mismatch"], 0);
        assert_eq!(summary["source"]["capture_not_tcp"], keyframes as u64);
        for c in [
            "timed_out",
            "unmatched_responses",
            "response_before_request",
        ] {
            assert_eq!(counter(&summary, c), 0, "{flags:?} {c}");
        }
    }
    // Not asked for: the host's times, never the ticks.
    let (_, summary) = analyse(&[&path], &[]);
    assert_eq!(summary["source"]["trailer_timestamps"], 0);
    assert_eq!(summary["source"]["trailer_fcs_mismatch"], 0);
    assert!(summary.get("timestamp_source").is_none());
    let first = &summary["stages"][0];
    assert_eq!(first["stage"], "first_response");
    let truth_max = truth.first_response.iter().max().unwrap();
    assert_ne!(
        first["max_ns"].as_u64().unwrap(),
        *truth_max,
        "the host's late stamps"
    );

    // Keyframes filtered out of the capture: no tick can be read, and the run says why.
    let bare = write("no-keyframes.pcap", &|f| f[23] != 253);
    let out = fixscope(&[
        "pcap",
        bare.to_str().unwrap(),
        "-p",
        "9878",
        "--wire-timestamps",
        "arista-7150",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--wire-timestamps arista-7150: no keyframe in the captures"),
        "{stderr}"
    );
    let (_, summary) = analyse(&[&bare], &["--wire-timestamps", "arista-7150"]);
    assert_eq!(summary["source"]["trailer_timestamps"], 0);
    assert_eq!(summary["source"]["trailer_missing"], packets.len() as u64);
}

/// The capture host's time of each packet: 5 to 100 µs after the wire, each direction's
/// frames in their order (as one tap port's are).
fn late_5_to_100_us(packets: &[TimedPacket]) -> Vec<u64> {
    let mut after = [0u64; 2];
    packets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let d = usize::from(is_response(p));
            let host = (p.ts_ns + 5_000 + (i as u64 * 7_919) % 95_001).max(after[d] + 1);
            after[d] = host;
            host
        })
        .collect()
}

/// Writes the scenario as a remote mirror delivers it through `tunnel`: each frame as the
/// tap put it on the wire (padded to 60 bytes) with `kind`'s trailer of its true time
/// (none when `kind` is `None`; the trailer's original FCS one bit off on the frames
/// `broken` says), carried whole inside the tunnel, recorded at `host[i]`, in the host's
/// order.
fn write_tunnelled(
    path: &std::path::Path,
    packets: &[TimedPacket],
    kind: Option<TrailerKind>,
    tunnel: Tunnel,
    broken: impl Fn(usize) -> bool,
    host: &[u64],
) {
    let mut frames: Vec<(u64, Vec<u8>)> = packets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut frame = p.spec.frame(LinkType::Ethernet, &FrameOptions::default());
            assert!(frame.len() >= 60, "padded as on the wire");
            if let Some(kind) = kind {
                let stamp = WireStamp {
                    kind,
                    device: 7,
                    port: u8::from(is_response(p)),
                    unix_ns: p.ts_ns,
                };
                let mut trailer = trailer_for(&frame, &stamp, i % 2 == 0);
                if broken(i) {
                    trailer[0] ^= 0x01;
                }
                frame.extend_from_slice(&trailer);
            }
            (host[i], wrap_in_tunnel(&frame, tunnel))
        })
        .collect();
    frames.sort_by_key(|(host_ns, _)| *host_ns);
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    for (host_ns, frame) in &frames {
        w.write_packet(*host_ns, frame).unwrap();
    }
    w.finish().unwrap();
}

/// Trailers inside tunnels (#34): a tap's MetaWatch (or HPT) trailer stays at the end of
/// the frame a remote mirror carries in ERSPAN II/III, GRETAP or VXLAN, its FCS over that
/// inner frame. Recorded by a host 5–100 µs late, the run's latencies are the wire's; a
/// trailer that fails its check is counted and not used; without trailers the tunnelled
/// capture is timed by the host, with no trailer counter moved.
#[test]
fn trailers_inside_tunnels_give_the_true_latencies() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let frames = packets.len() as u64;
    let late = late_5_to_100_us(&packets);
    for (tunnel, kind, name) in [
        (Tunnel::ErspanII, TrailerKind::MetaWatch, "erspan2"),
        (
            Tunnel::ErspanIII { subheader: false },
            TrailerKind::MetaWatch,
            "erspan3",
        ),
        (
            Tunnel::ErspanIII { subheader: true },
            TrailerKind::MetaWatch,
            "erspan3-subheader",
        ),
        (Tunnel::GreTap, TrailerKind::MetaWatch, "gretap"),
        (Tunnel::Vxlan, TrailerKind::MetaWatch, "vxlan"),
        (Tunnel::Vxlan, TrailerKind::Hpt, "vxlan-hpt"),
    ] {
        let path = dir.path().join(format!("{name}.pcap"));
        write_tunnelled(&path, &packets, Some(kind), tunnel, |_| false, &late);
        let threads: &[&[&str]] = if name == "vxlan" {
            &[&[], &["--threads", "1"], &["--threads", "3"]]
        } else {
            &[&[]]
        };
        for flags in threads {
            let (_, summary) = analyse(&[&path], flags);
            assert_truth(&summary, &truth);
            assert_eq!(
                summary["timestamp_source"],
                clock_name(kind, 7).as_str(),
                "{name} {flags:?}"
            );
            let source = &summary["source"];
            assert_eq!(source["trailer_timestamps"], frames, "{name} {flags:?}");
            assert_eq!(source["trailer_missing"], 0, "{name}");
            assert_eq!(source["trailer_fcs_mismatch"], 0, "{name}");
            assert_eq!(source["capture_decode_errors"], 0, "{name}");
            for c in [
                "timed_out",
                "unmatched_responses",
                "response_before_request",
            ] {
                assert_eq!(counter(&summary, c), 0, "{name} {c}");
            }
        }
    }

    // Every 50th frame's trailer fails its check: counted, its host time used, the others
    // still read.
    let broken = |i: usize| i % 50 == 7;
    let n_broken = (0..packets.len()).filter(|&i| broken(i)).count() as u64;
    let path = dir.path().join("erspan2-broken.pcap");
    write_tunnelled(
        &path,
        &packets,
        Some(TrailerKind::MetaWatch),
        Tunnel::ErspanII,
        broken,
        &late,
    );
    let (_, summary) = analyse(&[&path], &[]);
    assert_eq!(summary["timestamp_source"], "metawatch (device 7)");
    assert_eq!(summary["source"]["trailer_fcs_mismatch"], n_broken);
    assert_eq!(summary["source"]["trailer_timestamps"], frames - n_broken);
    assert_eq!(summary["source"]["trailer_missing"], 0);
    assert_eq!(counter(&summary, "requests"), truth.requests);

    // No trailer: the host's times (responses 3 µs sooner after the wire than requests,
    // so every order 3 µs short), no clock named, no trailer counter moved.
    let delays = HostDelays {
        request_delay_ns: 20_000,
        response_delay_ns: 17_000,
    };
    let constant: Vec<u64> = packets
        .iter()
        .map(|p| {
            p.ts_ns
                + if is_response(p) {
                    delays.response_delay_ns
                } else {
                    delays.request_delay_ns
                }
        })
        .collect();
    let short: Vec<u64> = truth.first_response.iter().map(|ns| ns - 3_000).collect();
    for tunnel in [Tunnel::ErspanII, Tunnel::GreTap, Tunnel::Vxlan] {
        let path = dir.path().join(format!("{tunnel:?}-host.pcap"));
        write_tunnelled(&path, &packets, None, tunnel, |_| false, &constant);
        let (_, summary) = analyse(&[&path], &[]);
        assert_stage(&summary, "first_response", &short);
        assert!(summary.get("timestamp_source").is_none(), "{tunnel:?}");
        for c in [
            "trailer_timestamps",
            "trailer_missing",
            "trailer_fcs_mismatch",
            "capture_decode_errors",
        ] {
            assert_eq!(summary["source"][c], 0, "{tunnel:?} {c}");
        }
    }
}
