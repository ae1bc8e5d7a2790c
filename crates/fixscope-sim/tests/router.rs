//! `sim router` between `sim client` and `sim exchange`, in-process on 127.0.0.1: its truth
//! (one row per child, times in order, one parent per request the client sent) checked
//! against its own capture (the child ids and their link tags, the write stamps).

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::*;
use fixscope_core::capture_stats::CaptureStats;
use fixscope_core::fix::framing::{frame_one, Frame};
use fixscope_core::fix::message::Fields;
use fixscope_core::pcap::read_capture as read_capture_with_core;
use fixscope_core::ports::PortSet;
use fixscope_sim::router::truth::{read_router_truth, RouterTruthRecord as Row, ROUTER_HEADER};
use fixscope_sim::{run_router, RouterArgs, RouterSummary, Shutdown};
use fixscope_testkit::serial;

struct Router {
    addr: SocketAddr,
    shutdown: Shutdown,
    handle: thread::JoinHandle<anyhow::Result<RouterSummary>>,
}

impl Router {
    fn start(venue: SocketAddr, flags: &[&str]) -> Router {
        let v = venue.to_string();
        let mut all = vec!["--listen", "127.0.0.1:0", "--venue", v.as_str()];
        all.extend_from_slice(flags);
        let args = RouterArgs::from_flags(all).expect("router flags");
        let shutdown = Shutdown::new();
        let sd = shutdown.clone();
        let (tx, rx) = mpsc::channel();
        let handle = thread::spawn(move || {
            run_router(&args, &sd, |a| {
                let _ = tx.send(a);
            })
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("router ready");
        Router {
            addr,
            shutdown,
            handle,
        }
    }

    fn stop(self) -> RouterSummary {
        self.shutdown.trigger();
        self.handle
            .join()
            .expect("router thread")
            .expect("router result")
    }
}

fn read_rows(path: &Path) -> Vec<Row> {
    read_router_truth(path).expect("truth file")
}

#[test]
fn router_truth_header_is_the_documented_one() {
    assert_eq!(
        ROUTER_HEADER,
        "parent_session,parent_clordid,parent_msg_type,parent_read_ns,rejected,child_index,\
         child_clordid,child_written_ns,venue_first_ns,venue_first_exec_type,\
         parent_response_written_ns,parent_first_written_ns,parent_first_exec_type"
    );
}

/// A FIX message of the capture: its fields and the stamp of the segment with its last
/// byte.
struct Msg {
    fields: Vec<(u32, String)>,
    ts: u64,
}

impl Msg {
    fn get(&self, tag: u32) -> Option<&str> {
        self.fields
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the router's capture with the core's reader: the FIX messages of each direction,
/// keyed by (source port, destination port); checks every packet decodes.
fn read_capture(path: &Path, ports: &str, packets: u64) -> HashMap<(u16, u16), Vec<Msg>> {
    let b = std::fs::read(path).expect("capture");
    assert_eq!(&b[..4], &0xa1b2_3c4du32.to_le_bytes(), "nanosecond pcap");
    // Per direction: the payload bytes, and where each segment ended with its stamp.
    type Stream = (Vec<u8>, Vec<(usize, u64)>);
    let mut flows: HashMap<(u16, u16), Stream> = HashMap::new();
    let mut stats = CaptureStats::default();
    let ports: PortSet = ports.parse().expect("ports");
    read_capture_with_core(path, &ports, &mut stats, |seg| {
        if seg.payload.is_empty() {
            return;
        }
        let (data, ends) = flows
            .entry((seg.flow.src.port, seg.flow.dst.port))
            .or_default();
        data.extend_from_slice(seg.payload);
        ends.push((data.len(), seg.ts_ns));
    })
    .expect("the core reads the capture");
    assert_eq!(stats.packets, packets, "packets written vs read: {stats:?}");
    assert_eq!(stats.decode_errors, 0, "{stats:?}");
    assert_eq!(stats.segments_in_port_range, packets, "{stats:?}");
    flows
        .into_iter()
        .map(|(k, (data, ends))| {
            let mut msgs = Vec::new();
            let mut p = 0;
            while p < data.len() {
                let Frame::Message { len, checksum_ok } = frame_one(&data[p..]) else {
                    panic!("the capture's stream {k:?} does not frame at byte {p}");
                };
                assert!(checksum_ok);
                let end = p + len;
                let ts = ends.iter().find(|(e, _)| *e >= end).expect("segment").1;
                let fields = Fields::new(&data[p..end])
                    .map(|(t, v)| (t, String::from_utf8_lossy(v).into_owned()))
                    .collect();
                msgs.push(Msg { fields, ts });
                p = end;
            }
            (k, msgs)
        })
        .collect()
}

struct Run {
    rows: Vec<Row>,
    sent: u64,
    summary: RouterSummary,
    /// Router → venue messages by ClOrdID, and client → router requests by ClOrdID.
    to_venue: HashMap<String, Msg>,
    from_clients: HashMap<(String, String), Msg>,
    /// Router → client responses.
    to_clients: Vec<Msg>,
}

fn run(router_flags: &[&str], exchange_flags: &[&str], client_flags: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("router.csv");
    let pcap = dir.path().join("router.pcap");
    let ex = Exchange::start(exchange_flags);
    let mut flags = vec![
        "--truth",
        truth.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ];
    flags.extend_from_slice(router_flags);
    let rt = Router::start(ex.addr, &flags);
    let listen_port = rt.addr.port();
    let mut cflags = vec!["--rate", "2000", "--duration", "1", "--sessions", "2"];
    cflags.extend_from_slice(client_flags);
    let r = client(rt.addr, &cflags);
    let summary = rt.stop();
    ex.stop();
    assert_eq!(summary.capture_errors, 0, "{summary}");
    let venue_port = ex_port(&summary);
    let ports = format!("{listen_port},{venue_port}");
    let mut flows = read_capture(&pcap, &ports, summary.capture_packets);
    let mut to_venue = HashMap::new();
    let mut from_clients = HashMap::new();
    let mut to_clients = Vec::new();
    for ((sport, dport), msgs) in flows.drain() {
        for m in msgs {
            let Some(id) = m.get(11).map(str::to_string) else {
                continue;
            };
            if dport == venue_port {
                to_venue.insert(id, m);
            } else if sport == listen_port {
                to_clients.push(m);
            } else if dport == listen_port && sport != venue_port {
                let sender = m.get(49).unwrap_or("").to_string();
                from_clients.insert((sender, id), m);
            }
        }
    }
    Run {
        rows: read_rows(&truth),
        sent: r.sent,
        summary,
        to_venue,
        from_clients,
        to_clients,
    }
}

fn ex_port(s: &RouterSummary) -> u16 {
    s.venue.expect("venue address").port()
}

/// Truth rows by parent request (session, ClOrdID, MsgType, read time).
type Parents = HashMap<(String, String, String, u64), Vec<Row>>;

/// What every run must show: one row per child, times in order, the children on the wire
/// with the truth's write stamps, one parent per request sent.
fn check_common(run: &Run, slice: u64) -> Parents {
    let mut parents = Parents::new();
    for row in &run.rows {
        let key = (
            row.parent_session.clone(),
            row.parent_clordid.clone(),
            row.parent_msg_type.clone(),
            row.parent_read_ns,
        );
        parents.entry(key).or_default().push(row.clone());
    }
    assert_eq!(
        parents.len() as u64,
        run.sent,
        "parents in the truth vs requests the client sent; {}",
        run.summary
    );
    assert_eq!(run.summary.open_at_end, 0, "{}", run.summary);
    for rows in parents.values() {
        let first = &rows[0];
        let done = first.parent_first_written_ns.expect("parent answered");
        assert!(first.parent_read_ns <= done, "{first:?}");
        if first.rejected {
            assert_eq!(rows.len(), 1, "a rejected parent has one row: {rows:?}");
            assert!(first.child_index.is_none() && first.child_clordid.is_empty());
            let want = if first.parent_msg_type == "D" {
                "8"
            } else {
                "9"
            };
            assert_eq!(first.parent_first_exec_type, want, "{first:?}");
            continue;
        }
        if first.parent_msg_type == "D" {
            assert_eq!(rows.len() as u64, slice, "one row per child: {rows:?}");
        }
        let mut responses = 0;
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row.child_index, Some(k as u64), "{row:?}");
            let written = row.child_written_ns.expect("child written");
            let venue = row.venue_first_ns.expect("venue answered");
            assert!(
                row.parent_read_ns <= written && written <= venue,
                "times out of order: {row:?}"
            );
            if let Some(resp) = row.parent_response_written_ns {
                assert!(venue <= resp && done <= resp, "{row:?}");
                responses += 1;
            }
            assert!(!row.venue_first_exec_type.is_empty(), "{row:?}");
            // The child is on the wire, stamped with the truth's write time.
            let m = run
                .to_venue
                .get(&row.child_clordid)
                .unwrap_or_else(|| panic!("child {} not in the capture", row.child_clordid));
            assert_eq!(m.ts, written, "capture stamp vs truth: {row:?}");
            assert_eq!(m.get(35), Some(row.parent_msg_type.as_str()));
        }
        // Exactly one child's first venue response made the parent's first response (the
        // others' are swallowed: the exchange acks before it fills), and it is that one.
        assert_eq!(responses, 1, "{rows:?}");
        assert!(rows
            .iter()
            .any(|r| r.parent_response_written_ns == Some(done)));
        if first.parent_msg_type == "D" {
            assert_eq!(
                first.parent_first_exec_type, "0",
                "a D's first response is the ack"
            );
            assert!(
                rows.iter().all(|r| r.venue_first_exec_type == "0"),
                "{rows:?}"
            );
        }
        // And the parent request is in the capture, stamped with its read time.
        let m = run
            .from_clients
            .get(&(first.parent_session.clone(), first.parent_clordid.clone()))
            .expect("parent in the capture");
        assert_eq!(m.get(35), Some(first.parent_msg_type.as_str()));
        assert_eq!(
            m.ts, first.parent_read_ns,
            "capture stamp vs truth: {first:?}"
        );
    }
    parents
}

fn rejected_share(parents: &Parents) -> f64 {
    let n = parents.values().filter(|r| r[0].rejected).count();
    n as f64 / parents.len() as f64
}

/// `--id-map` with `--slice 2 --reject-rate 0.1`: `check` sees each child message and
/// its truth row.
fn id_map_case(map: &str, slice: u64, check: impl Fn(&Msg, &Row, &Run)) {
    let _serial = serial();
    let s = slice.to_string();
    let run = run(
        &[
            "--id-map",
            map,
            "--slice",
            &s,
            "--reject-rate",
            "0.1",
            "--route-delay",
            "uniform:10us-50us",
            "--back-delay",
            "fixed:20us",
        ],
        &["--fill-delay", "100us"],
        &[],
    );
    let parents = check_common(&run, slice);
    let share = rejected_share(&parents);
    assert!((0.05..0.16).contains(&share), "rejected share {share}");
    assert_eq!(
        run.summary.children,
        slice * parents.values().filter(|r| !r[0].rejected).count() as u64
    );
    for row in run.rows.iter().filter(|r| !r.rejected) {
        check(&run.to_venue[&row.child_clordid], row, &run);
    }
}

#[test]
fn router_id_map_same() {
    id_map_case("same", 1, |m, row, _| {
        assert_eq!(row.child_clordid, row.parent_clordid);
        assert_eq!(m.get(526), None);
        assert_eq!(m.get(627), None);
    });
}

#[test]
fn router_id_map_526() {
    id_map_case("526", 2, |m, row, _| {
        assert_ne!(row.child_clordid, row.parent_clordid);
        assert_eq!(m.get(526), Some(row.parent_clordid.as_str()), "{row:?}");
    });
}

#[test]
fn router_id_map_hops() {
    id_map_case("hops", 2, |m, row, run| {
        assert_ne!(row.child_clordid, row.parent_clordid);
        assert_eq!(m.get(115), Some(row.parent_session.as_str()));
        assert_eq!(m.get(627), Some("1"));
        assert_eq!(m.get(628), Some("ROUTER"));
        assert_eq!(
            m.get(629),
            m.get(52),
            "HopSendingTime is the child's SendingTime"
        );
        let parent = &run.from_clients[&(row.parent_session.clone(), row.parent_clordid.clone())];
        assert_eq!(
            m.get(630),
            parent.get(34),
            "HopRefID is the parent's MsgSeqNum"
        );
        assert_eq!(m.get(526), None);
    });
}

#[test]
fn router_id_map_counter() {
    id_map_case("counter", 2, |m, row, _| {
        assert_ne!(row.child_clordid, row.parent_clordid);
        assert!(
            m.fields.iter().all(|(_, v)| *v != row.parent_clordid),
            "a field carries the parent's id: {row:?}"
        );
    });
}

#[test]
fn router_forwards_cancels_and_replaces() {
    let _serial = serial();
    // A slow fill keeps orders live, so the client's F/G find them.
    let run = run(
        &["--slice", "2", "--reject-rate", "0.1"],
        &["--fill-delay", "20ms"],
        &["--mix", "D=70,F=15,G=15"],
    );
    let parents = check_common(&run, 2);
    let s = &run.summary;
    assert!(s.parents_f > 0 && s.parents_g > 0, "{s}");
    // F/G children carry 41 = the leg's id at the venue: an earlier child's.
    let mut with_children = 0;
    for rows in parents
        .values()
        .filter(|r| r[0].parent_msg_type != "D" && !r[0].rejected)
    {
        for row in rows {
            let m = &run.to_venue[&row.child_clordid];
            let orig = m.get(41).expect("41 on an F/G child");
            assert!(run.to_venue.contains_key(orig), "{row:?}");
            with_children += 1;
        }
    }
    assert!(with_children > 0, "no F/G reached the venue: {s}");
}

#[test]
fn router_speaks_fix42_to_a_fix42_client() {
    let _serial = serial();
    // The venue speaks FIX.4.4 (150=F); a FIX.4.2 parent gets 150=1 / 150=2.
    let run = run(
        &["--slice", "2"],
        &["--fill-delay", "100us"],
        &["--begin-string", "FIX.4.2"],
    );
    check_common(&run, 2);
    let fills: Vec<(&str, &str)> = run
        .to_clients
        .iter()
        .filter(|m| m.get(35) == Some("8") && matches!(m.get(39), Some("1" | "2")))
        .map(|m| (m.get(150).unwrap_or(""), m.get(39).unwrap_or("")))
        .collect();
    assert_eq!(fills.len() as u64, 2 * run.sent, "two fills per parent");
    assert!(
        fills.iter().all(|&(e, s)| e == s),
        "150 = 39 on FIX.4.2: {fills:?}"
    );
    assert!(run.to_clients.iter().all(|m| m.get(8) == Some("FIX.4.2")));
}

#[test]
fn router_stops_when_the_venue_goes() {
    let _serial = serial();
    let ex = Exchange::start(&[]);
    let rt = Router::start(ex.addr, &[]);
    ex.stop();
    let start = std::time::Instant::now();
    while !rt.handle.is_finished() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the router outlived its venue"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let s = rt
        .handle
        .join()
        .expect("router thread")
        .expect("router result");
    assert_eq!(s.parents(), 0);
}

#[test]
fn router_refuses_same_with_slices() {
    let args =
        RouterArgs::from_flags(["--venue", "127.0.0.1:9", "--id-map", "same", "--slice", "2"])
            .unwrap();
    let err = run_router(&args, &Shutdown::new(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("--id-map same"), "{err}");
}
