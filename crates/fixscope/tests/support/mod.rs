//! Test support: scripted FIX traffic with exact known latencies, written as real capture
//! files, and a runner for the `fixscope` binary.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureWriter, FrameOptions, SyntheticConnection, TcpPacketSpec,
};
use fixscope_core::Endpoint;
pub use fixscope_testkit::fix::fix_message;
use serde_json::Value;

pub const SERVER_PORT: u16 = 9878;

/// What the capture holds, and what fixscope must report for it.
#[derive(Default, Debug)]
pub struct Truth {
    pub first_response: Vec<u64>,
    pub ack: Vec<u64>,
    pub fill: Vec<u64>,
    pub ack_to_fill: Vec<u64>,
    pub requests: u64,
}

/// How to script the traffic.
#[derive(Clone, Debug)]
pub struct ScenarioSpec {
    pub sessions: usize,
    pub orders_per_session: usize,
    /// Latencies are multiples of this (1000 for µs captures).
    pub granularity_ns: u64,
    /// Split every order in two segments at this offset inside the ClOrdID value.
    pub split_in_clordid: bool,
    /// Every session uses the same ClOrdIDs.
    pub colliding_clordids: bool,
    pub clordid_len: usize,
    pub ipv6: bool,
    pub begin_string: &'static str,
}

impl Default for ScenarioSpec {
    fn default() -> Self {
        ScenarioSpec {
            sessions: 3,
            orders_per_session: 200,
            granularity_ns: 1,
            split_in_clordid: false,
            colliding_clordids: false,
            clordid_len: 12,
            ipv6: false,
            begin_string: "FIX.4.4",
        }
    }
}

/// One packet of the scenario, on interface `iface`.
#[derive(Clone)]
pub struct TimedPacket {
    pub ts_ns: u64,
    pub spec: TcpPacketSpec,
    pub iface: u32,
}

pub fn endpoint(ipv6: bool, host: u8, port: u16) -> Endpoint {
    let addr = if ipv6 {
        format!("fd00::{host}").parse().unwrap()
    } else {
        format!("10.9.0.{host}").parse().unwrap()
    };
    Endpoint { addr, port }
}

pub fn clordid(spec: &ScenarioSpec, session: usize, i: usize) -> String {
    let base = if spec.colliding_clordids {
        format!("ORD{i}-")
    } else {
        format!("S{session}-ORD{i}-")
    };
    let mut id = base;
    while id.len() < spec.clordid_len {
        id.push('x');
    }
    id
}

/// Scripts the traffic: every order is acked after a varying delay and filled after
/// another; packets are returned in time order with the exact expected latencies.
pub fn build_scenario(spec: &ScenarioSpec) -> (Vec<TimedPacket>, Truth) {
    let g = spec.granularity_ns;
    let server = endpoint(spec.ipv6, 1, SERVER_PORT);
    let mut packets = Vec::new();
    let mut truth = Truth::default();
    for s in 0..spec.sessions {
        let client = endpoint(spec.ipv6, 2 + s as u8, 40000 + s as u16);
        let mut conn = SyntheticConnection::new(client, server);
        let t0 = 1_700_000_000_000_000_000u64 + s as u64 * 1_000 * g;
        for p in conn.handshake() {
            packets.push(TimedPacket {
                ts_ns: t0,
                spec: p,
                iface: 0,
            });
        }
        let sender = format!("CLIENT{s}");
        let logon = fix_message(
            spec.begin_string,
            &[
                (35, "A"),
                (49, &sender),
                (56, "EXCH"),
                (98, "0"),
                (108, "30"),
            ],
        );
        packets.push(TimedPacket {
            ts_ns: t0 + g,
            spec: conn.client_sends(&logon),
            iface: 0,
        });
        for i in 0..spec.orders_per_session {
            let t = t0 + (10 + i as u64 * 50) * 1000 * g;
            let id = clordid(spec, s, i);
            let order = fix_message(
                spec.begin_string,
                &[
                    (35, "D"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, &id),
                    (55, "IBM"),
                    (54, "1"),
                    (38, "100"),
                    (40, "2"),
                    (44, "10.5"),
                ],
            );
            let ack_ns = (5_000 + (i as u64 * 7919 % 1000) * 37) * g;
            let fill_ns = (1_000 + (i as u64 * 104_729 % 700) * 53) * g;
            if spec.split_in_clordid {
                let cut = find(&order, b"\x0111=").unwrap() + 4 + id.len() / 2;
                packets.push(TimedPacket {
                    ts_ns: t - 3 * g,
                    spec: conn.client_sends(&order[..cut]),
                    iface: 0,
                });
            }
            let rest_start = if spec.split_in_clordid {
                find(&order, b"\x0111=").unwrap() + 4 + id.len() / 2
            } else {
                0
            };
            packets.push(TimedPacket {
                ts_ns: t,
                spec: conn.client_sends(&order[rest_start..]),
                iface: 0,
            });
            let ack = fix_message(
                spec.begin_string,
                &[
                    (35, "8"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, &id),
                    (37, "X"),
                    (17, "E1"),
                    (150, "0"),
                    (39, "0"),
                ],
            );
            let fill = fix_message(
                spec.begin_string,
                &[
                    (35, "8"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, &id),
                    (37, "X"),
                    (17, "E2"),
                    (150, "F"),
                    (39, "2"),
                ],
            );
            packets.push(TimedPacket {
                ts_ns: t + ack_ns,
                spec: conn.server_sends(&ack),
                iface: 1,
            });
            packets.push(TimedPacket {
                ts_ns: t + ack_ns + fill_ns,
                spec: conn.server_sends(&fill),
                iface: 1,
            });
            truth.first_response.push(ack_ns);
            truth.ack.push(ack_ns);
            truth.fill.push(ack_ns + fill_ns);
            truth.ack_to_fill.push(fill_ns);
            truth.requests += 1;
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    (packets, truth)
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Writes packets as a capture file. With pcapng, interface 1 (responses) gets its own
/// interface block with `second_tsresol`.
pub fn write_capture(
    path: &Path,
    packets: &[TimedPacket],
    format: CaptureFormat,
    link: LinkType,
    opts: &FrameOptions,
    second_tsresol: Option<u8>,
) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = CaptureWriter::new(file, format, link).unwrap();
    let second = second_tsresol.map(|r| w.add_interface(link, r).unwrap());
    for p in packets {
        let frame = p.spec.frame(link, opts);
        match (second, p.iface) {
            (Some(if_id), 1) => w.write_packet_on(if_id, p.ts_ns, &frame, None).unwrap(),
            _ => w.write_packet(p.ts_ns, &frame).unwrap(),
        }
    }
    w.finish().unwrap();
}

/// Writes packets as a plain capture: little-endian pcap, ns timestamps, Ethernet frames.
pub fn write_pcap(path: &Path, packets: &[TimedPacket]) {
    write_capture(
        path,
        packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &FrameOptions::default(),
        None,
    );
}

/// A packet on interface 0 at `ts_ns`.
pub fn at(ts_ns: u64, spec: TcpPacketSpec) -> TimedPacket {
    TimedPacket {
        ts_ns,
        spec,
        iface: 0,
    }
}

/// Writes `packets` as a nanosecond Ethernet pcap named `name` in `dir`, runs
/// `fixscope pcap --json` on it with `extra` flags and returns the summary.
pub fn analyse_packets(
    dir: &Path,
    name: impl AsRef<Path>,
    packets: &[TimedPacket],
    extra: &[&str],
) -> Value {
    let path = dir.join(name);
    write_capture(
        &path,
        packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &FrameOptions::default(),
        None,
    );
    analyse(&[&path], extra).1
}

pub fn fixscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .args(args)
        .output()
        .expect("run fixscope")
}

/// Runs `fixscope pcap --json` and returns (interval objects, summary object).
pub fn analyse(paths: &[&Path], extra: &[&str]) -> (Vec<Value>, Value) {
    let mut args = vec!["pcap", "--json"];
    let path_strs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(path_strs.iter().map(String::as_str));
    if !extra.contains(&"-p") {
        args.extend(["-p", "9878"]);
    }
    args.extend(extra);
    let out = fixscope(&args);
    assert!(
        out.status.success(),
        "fixscope failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let (summary, intervals) = lines.split_last().expect("a summary line");
    assert_eq!(summary["type"], "summary");
    assert!(intervals.iter().all(|l| l["type"] == "interval"));
    (intervals.to_vec(), summary.clone())
}

pub fn stage<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("stage {name} missing"))
}

/// The value at quantile `q` as HDR histograms define it.
pub fn exact_percentile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Asserts one stage of the summary against the exact expected latencies: count, min,
/// max and mean exact; percentiles within the histogram's 0.1%.
pub fn assert_stage(summary: &Value, name: &str, expected: &[u64]) {
    let s = stage(summary, name);
    let mut sorted = expected.to_vec();
    sorted.sort_unstable();
    assert_eq!(
        s["count"].as_u64().unwrap(),
        sorted.len() as u64,
        "{name} count"
    );
    assert_eq!(s["min_ns"].as_u64().unwrap(), sorted[0], "{name} min");
    assert_eq!(
        s["max_ns"].as_u64().unwrap(),
        *sorted.last().unwrap(),
        "{name} max"
    );
    let mean = sorted.iter().sum::<u64>() as f64 / sorted.len() as f64;
    let got_mean = s["mean_ns"].as_f64().unwrap();
    assert!(
        (got_mean - mean).abs() <= mean * 1e-9 + 1e-6,
        "{name} mean {got_mean} vs {mean}"
    );
    for (q, field) in [
        (0.5, "p50_ns"),
        (0.9, "p90_ns"),
        (0.99, "p99_ns"),
        (0.999, "p99_9_ns"),
    ] {
        let want = exact_percentile(&sorted, q) as f64;
        let got = s[field].as_u64().unwrap() as f64;
        assert!(
            (got - want).abs() <= want * 0.001 + 1.0,
            "{name} {field}: {got} vs exact {want}"
        );
    }
}

pub fn counter(summary: &Value, name: &str) -> u64 {
    summary["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("counter {name} missing"))
}

pub fn assert_truth(summary: &Value, truth: &Truth) {
    assert_stage(summary, "first_response", &truth.first_response);
    assert_stage(summary, "ack", &truth.ack);
    assert_stage(summary, "fill", &truth.fill);
    assert_stage(summary, "ack_to_fill", &truth.ack_to_fill);
    assert_eq!(counter(summary, "requests"), truth.requests);
    assert_eq!(counter(summary, "matched"), truth.requests);
    assert_eq!(counter(summary, "unmatched_responses"), 0);
    assert_eq!(counter(summary, "duplicate_requests"), 0);
    assert_eq!(counter(summary, "bad_checksum"), 0);
}

// FIX as venues send it: scripted sessions read on every plan (venue_cases, session_identity).

pub const US: u64 = 1_000;

/// One FIX session on one TCP connection, scripted message by message: the client sends
/// requests, the venue answers; each side numbers its messages (34) as FIX does.
pub struct Script {
    pub begin: &'static str,
    pub conn: SyntheticConnection,
    pub packets: Vec<TimedPacket>,
    pub seq: [u64; 2],
    pub t: u64,
}

impl Script {
    pub fn new(begin: &'static str, client_port: u16) -> Script {
        Script::logged_on(begin, client_port, 1_000_000_000, false)
    }

    /// A connection opened at `t` whose Logons (34=1) carry ResetSeqNumFlag when `reset`.
    pub fn logged_on(begin: &'static str, client_port: u16, t: u64, reset: bool) -> Script {
        let mut conn = SyntheticConnection::new(
            endpoint(false, 2, client_port),
            endpoint(false, 1, SERVER_PORT),
        );
        let packets = conn.handshake().into_iter().map(|p| at(t, p)).collect();
        let mut s = Script {
            begin,
            conn,
            packets,
            seq: [1, 1],
            t,
        };
        let mut logon = vec![(35, "A"), (98, "0"), (108, "30")];
        if reset {
            logon.push((141, "Y"));
        }
        s.client(100 * US, &logon);
        s.venue(100 * US, &logon);
        s
    }

    /// The message's bytes: the header (35, 34, `extra`, 49, 52, 56, then `routing` —
    /// OnBehalfOfCompID, DeliverToCompID — as QuickFIX orders it), then the body in the
    /// order given (engines differ in where they put a field).
    pub fn encode(
        &self,
        side: usize,
        seq: u64,
        fields: &[(u32, &str)],
        extra: &[(u32, &str)],
        routing: &[(u32, &str)],
    ) -> Vec<u8> {
        let (sender, target) = if side == 0 {
            ("CLIENT", "VENUE")
        } else {
            ("VENUE", "CLIENT")
        };
        let seq = seq.to_string();
        let mut all: Vec<(u32, &str)> = vec![fields[0], (34, &seq)];
        all.extend_from_slice(extra);
        all.extend([(49, sender), (52, "20261128-12:00:00.000"), (56, target)]);
        all.extend_from_slice(routing);
        all.extend_from_slice(&fields[1..]);
        fix_message(self.begin, &all)
    }

    /// The client sends `fields` `after` the previous message; returns its MsgSeqNum.
    pub fn client(&mut self, after: u64, fields: &[(u32, &str)]) -> u64 {
        self.client_routed(after, &[], fields)
    }

    /// [`Script::client`] with the header's `routing` fields (a hub's 115/128).
    pub fn client_routed(
        &mut self,
        after: u64,
        routing: &[(u32, &str)],
        fields: &[(u32, &str)],
    ) -> u64 {
        self.t += after;
        let seq = self.seq[0];
        self.seq[0] += 1;
        let m = self.encode(0, seq, fields, &[], routing);
        let p = self.conn.client_sends(&m);
        self.packets.push(at(self.t, p));
        seq
    }

    /// The venue sends `fields` `after` the previous message.
    pub fn venue(&mut self, after: u64, fields: &[(u32, &str)]) {
        self.venue_routed(after, &[], fields)
    }

    /// [`Script::venue`] with the header's `routing` fields (a hub's 115/128).
    pub fn venue_routed(&mut self, after: u64, routing: &[(u32, &str)], fields: &[(u32, &str)]) {
        self.t += after;
        let seq = self.seq[1];
        self.seq[1] += 1;
        let m = self.encode(1, seq, fields, &[], routing);
        let p = self.conn.server_sends(&m);
        self.packets.push(at(self.t, p));
    }

    /// The client resends its message `seq` (PossDupFlag, OrigSendingTime) `after`.
    pub fn client_replays(&mut self, after: u64, seq: u64, fields: &[(u32, &str)]) {
        self.t += after;
        let m = self.encode(
            0,
            seq,
            fields,
            &[(43, "Y"), (122, "20261128-12:00:00.000")],
            &[],
        );
        let p = self.conn.client_sends(&m);
        self.packets.push(at(self.t, p));
    }
}

/// What fixscope must report: each stage's latencies and the counters named.
#[derive(Default)]
pub struct Expected {
    pub stages: BTreeMap<&'static str, Vec<u64>>,
    pub counters: BTreeMap<&'static str, u64>,
}

impl Expected {
    pub fn stage(&mut self, name: &'static str, ns: u64) {
        self.stages.entry(name).or_default().push(ns);
    }
}

/// Reads the capture on every plan: every counter and stage the same on each; returns
/// the one-pipeline summary.
pub fn every_plan(dir: &std::path::Path, name: &str, packets: &[TimedPacket]) -> Value {
    every_plan_of_files(dir, &[(name, packets)])
}

/// [`every_plan`] for captures read as one timeline (`fixscope pcap day1.pcap day2.pcap`).
pub fn every_plan_of_files(dir: &std::path::Path, files: &[(&str, &[TimedPacket])]) -> Value {
    let paths: Vec<std::path::PathBuf> = files
        .iter()
        .map(|(name, packets)| {
            let path = dir.join(name);
            write_pcap(&path, packets);
            path
        })
        .collect();
    let paths: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    every_plan_of_paths(&paths)
}

/// Reads captures already written on every plan (`--threads 1`, the default, `--threads
/// 4`): every counter and stage the same on each; returns the one-pipeline summary.
pub fn every_plan_of_paths(paths: &[&std::path::Path]) -> Value {
    every_plan_with_flags(paths, &[])
}

/// [`every_plan_of_paths`] with `extra` flags on every plan (`--tls-keylog keys.log`).
pub fn every_plan_with_flags(paths: &[&std::path::Path], extra: &[&str]) -> Value {
    let with = |plan: &[&'static str]| -> Vec<&str> {
        plan.iter().copied().chain(extra.iter().copied()).collect()
    };
    let (_, one) = analyse(paths, &with(&["--threads", "1"]));
    for plan in [&[][..], &["--threads", "4"][..]] {
        let (_, other) = analyse(paths, &with(plan));
        assert_eq!(
            one["counters"], other["counters"],
            "{paths:?}: counters on {plan:?}"
        );
        assert_eq!(
            one["stages"], other["stages"],
            "{paths:?}: stages on {plan:?}"
        );
    }
    one
}

pub fn check(summary: &Value, expected: &Expected) {
    for name in ["first_response", "ack", "fill", "ack_to_fill"] {
        match expected.stages.get(name) {
            Some(ns) => assert_stage(summary, name, ns),
            None => assert_eq!(stage(summary, name)["count"], 0, "{name}"),
        }
    }
    for (name, want) in &expected.counters {
        assert_eq!(counter(summary, name), *want, "{name}");
    }
    // The alarms none of these cases may raise.
    for name in [
        "unmatched_responses",
        "timed_out",
        "late",
        "duplicate_requests",
    ] {
        if !expected.counters.contains_key(name) {
            assert_eq!(counter(summary, name), 0, "{name}");
        }
    }
}

/// An Ethernet II / IPv4 / UDP frame from 10.0.0.1:40000 to `dst`:`port` (UDP checksum 0:
/// none, allowed over IPv4; the capture writer builds TCP only): market data.
pub fn udp_frame(dst: [u8; 4], port: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x01,
        0x00,
        0x5e,
        dst[1] & 0x7f,
        dst[2],
        dst[3],
        2,
        0,
        0,
        0,
        0,
        1,
    ];
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1]);
    ip.extend_from_slice(&dst);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40_000u16.to_be_bytes());
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A pcap (ns) of Ethernet `frames` at their times.
pub fn write_frames(path: &Path, frames: &[(u64, Vec<u8>)]) {
    use fixscope_core::pcap_writer::CaptureWriter;
    let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)
        .expect("a writer");
    for (ts, frame) in frames {
        w.write_packet(*ts, frame).expect("written");
    }
    std::fs::write(path, w.finish().expect("finished")).expect("capture written");
}

/// A binary order protocol's capture on `port`, read with `--protocol port=name` and with
/// nothing named (recognised by its login): every summary figure and counter the same, on
/// the default plan, one thread and four; and with the port named `fix`, the sessions
/// counted `unnamed_protocol_connections` (`connections` of them), never measured as FIX.
/// Returns the recognised default-plan summary.
pub fn assert_recognised_as_named(
    dir: &Path,
    packets: &[TimedPacket],
    port: u16,
    name: &str,
    connections: u64,
) -> Value {
    let p = port.to_string();
    let named = format!("{port}={name}");
    let mut default_plan = Value::Null;
    for threads in [None, Some("1"), Some("4")] {
        let mut flags = vec!["-p", &p, "-t", "5"];
        if let Some(n) = threads {
            flags.extend(["--threads", n]);
        }
        let plan = threads.unwrap_or("default");
        let auto = analyse_packets(dir, format!("auto-{plan}.pcap"), packets, &flags);
        flags.extend(["--protocol", &named]);
        let given = analyse_packets(dir, format!("named-{plan}.pcap"), packets, &flags);
        assert!(counter(&given, "requests") > 0, "{}", given["counters"]);
        assert_eq!(counter(&auto, "unnamed_protocol_connections"), 0);
        assert_eq!(auto, given, "{plan}: recognised vs named");
        if threads.is_none() {
            default_plan = auto;
        }
    }
    let as_fix = format!("{port}=fix");
    let s = analyse_packets(
        dir,
        "as-fix.pcap",
        packets,
        &["-p", &p, "--protocol", &as_fix],
    );
    assert_eq!(
        counter(&s, "unnamed_protocol_connections"),
        connections,
        "{}",
        s["counters"]
    );
    assert_eq!(counter(&s, "requests"), 0);
    default_plan
}
