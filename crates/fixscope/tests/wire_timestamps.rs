//! Timestamps from the wire (#34): captures whose frames carry a tap's hardware trailer
//! (Arista MetaWatch, Cisco HPT) with the true time, while the capture host stamped each
//! frame later — by a different delay per direction, as two tap ports or two host queues
//! do. The true times come from the scripted scenario, never from fixscope.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, FrameOptions};
use fixscope_core::wire_stamp::{
    clock_name, trailer_for, with_arista_header, TrailerKind, WireStamp,
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
