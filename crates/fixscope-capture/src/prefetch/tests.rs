//! The reader thread hands out exactly what reading in place gives, in order.

use std::time::Instant;

use super::*;
use crate::decode::LinkType;
use crate::pcap::read_capture;
use crate::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
use fixscope_model::segment::{Direction, FlowKey, TcpFlags};
use fixscope_model::Endpoint;

/// Every field of a segment, its payload copied.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    ts_ns: u64,
    flow: FlowKey,
    direction: Direction,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    payload: Vec<u8>,
    missing_tail: u32,
}

fn seen(s: &Segment<'_>) -> Seen {
    Seen {
        ts_ns: s.ts_ns,
        flow: s.flow,
        direction: s.direction,
        seq: s.seq,
        ack: s.ack,
        flags: s.flags,
        payload: s.payload.to_vec(),
        missing_tail: s.missing_tail,
    }
}

fn write(path: &Path, packets: u32, corrupt_tail: bool) {
    write_at(path, 1_000, packets, corrupt_tail);
}

/// [`write`] with the first packet at `t0` (one nanosecond apart): several files in time
/// order.
fn write_at(path: &Path, t0: u64, packets: u32, corrupt_tail: bool) {
    let endpoint = |a: &str, port| Endpoint {
        addr: a.parse().unwrap(),
        port,
    };
    let mut conn =
        SyntheticConnection::new(endpoint("10.0.0.2", 40000), endpoint("10.0.0.1", 9878));
    let mut w =
        CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    for i in 0..packets {
        let payload = format!("payload-{i:06}");
        let spec = if i % 2 == 0 {
            conn.client_sends(payload.as_bytes())
        } else {
            conn.server_sends(payload.as_bytes())
        };
        w.write_tcp(t0 + u64::from(i), &spec).unwrap();
    }
    let mut bytes = w.finish().unwrap();
    if corrupt_tail {
        // A record header claiming 100 MB: corruption after the good packets.
        bytes.extend_from_slice(&[0u8; 8]);
        bytes.extend_from_slice(&100_000_000u32.to_le_bytes());
        bytes.extend_from_slice(&100_000_000u32.to_le_bytes());
        bytes.extend_from_slice(&[0u8; 64]);
    }
    std::fs::write(path, bytes).unwrap();
}

/// Everything `read_capture` delivers, file by file, on one thread.
fn sequential(paths: &[PathBuf], ports: &PortSet) -> (Vec<Seen>, CaptureStats) {
    let mut all = Vec::new();
    let mut stats = CaptureStats::default();
    for p in paths {
        if read_capture(p, ports, &mut stats, |s| all.push(seen(s))).is_err() {
            break;
        }
    }
    (all, stats)
}

#[test]
fn same_segments_in_the_same_order_as_reading_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // Several batches, a partial last one, and a second file (later: one timeline in
    // file order).
    let paths = [dir.path().join("a.pcap"), dir.path().join("b.pcap")];
    write(&paths[0], 3 * BATCH_SEGMENTS as u32 + 17, false);
    write_at(&paths[1], 1_000_000, 5, false);
    let ports = PortSet::single(9878);
    let (expected, expected_stats) = sequential(&paths, &ports);
    let mut got = Vec::new();
    let mut files_done = Vec::new();
    let stats = read_captures_in_background(
        &paths,
        &ports,
        |s| {
            got.push(seen(s));
            Flow::Continue
        },
        |p, stats| files_done.push((p.to_path_buf(), stats.packets)),
    )
    .unwrap();
    assert_eq!(got.len(), 3 * BATCH_SEGMENTS + 22);
    assert_eq!(got, expected);
    assert_eq!(stats, expected_stats);
    // The fallback for when no thread can be started does the same.
    let mut in_place = Vec::new();
    let in_place_stats = read_in_place(
        &paths,
        &ports,
        &mut |s: &Segment<'_>| {
            in_place.push(seen(s));
            Flow::Continue
        },
        &mut |_: &Path, _: &CaptureStats| {},
    )
    .unwrap();
    assert_eq!(in_place, expected);
    assert_eq!(in_place_stats, expected_stats);
    assert_eq!(
        files_done,
        vec![
            (paths[0].clone(), 3 * BATCH_SEGMENTS as u64 + 17),
            (paths[1].clone(), 3 * BATCH_SEGMENTS as u64 + 22)
        ]
    );
}

#[test]
fn segments_before_a_corrupt_record_are_delivered_then_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let paths = [dir.path().join("bad.pcap"), dir.path().join("never.pcap")];
    write(&paths[0], BATCH_SEGMENTS as u32 + 3, true);
    write_at(&paths[1], 1_000_000, 5, false);
    let mut seen = 0;
    let err = read_captures_in_background(
        &paths,
        &PortSet::single(9878),
        |_| {
            seen += 1;
            Flow::Continue
        },
        |_, _| {},
    )
    .unwrap_err();
    assert!(matches!(err, CaptureError::Corrupt { .. }), "{err}");
    assert_eq!(seen, BATCH_SEGMENTS + 3);
}

#[test]
fn a_consumer_that_stops_ends_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let paths = [dir.path().join("big.pcap")];
    write(&paths[0], 20 * BATCH_SEGMENTS as u32, false);
    let mut seen = 0;
    let stats = read_captures_in_background(
        &paths,
        &PortSet::single(9878),
        |_| {
            seen += 1;
            if seen == 10 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        },
        |_, _| panic!("the file was not read to its end"),
    )
    .unwrap();
    assert_eq!(seen, 10);
    // The reader stopped within the batches in flight, well before the end.
    assert!(stats.packets < 20 * BATCH_SEGMENTS as u64);
}

/// Polls `source` until it ends, stopping the consumer after every `stop_every` segments
/// (0: never). Returns every segment, and the files finished in order.
fn drain(source: &mut dyn CaptureFiles, stop_every: usize) -> (Vec<Seen>, Vec<FinishedFile>) {
    let mut all = Vec::new();
    let mut files = Vec::new();
    loop {
        let mut handed = 0;
        let polled = source
            .poll(Duration::from_secs(10), &mut |s| {
                all.push(seen(s));
                handed += 1;
                if stop_every > 0 && all.len() % stop_every == 0 {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            })
            .unwrap();
        files.extend(source.finished_files());
        match polled {
            Polled::Segments(n) => assert_eq!(n, handed, "poll counts what it handed"),
            Polled::Ended => {
                assert_eq!(handed, 0);
                return (all, files);
            }
        }
    }
}

#[test]
fn capture_source_hands_what_reading_in_place_gives() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("c.pcap"),
    ];
    write(&paths[0], 2 * BATCH_SEGMENTS as u32 + 5, false);
    write(&paths[1], 0, false);
    write_at(&paths[2], 1_000_000, 7, false);
    let ports = PortSet::single(9878);
    let (expected, expected_stats) = sequential(&paths, &ports);
    let mut source = CaptureSource::new(paths.clone(), ports).unwrap();
    assert_eq!((source.now_ns(), source.unix_offset_ns()), (None, 0));
    let (got, files) = drain(&mut source, 0);
    assert_eq!(got.len(), 2 * BATCH_SEGMENTS + 12);
    assert_eq!(got, expected);
    assert_eq!(source.stats(), expected_stats);
    assert_eq!(source.counters(), counters_of(&expected_stats));
    assert_eq!(
        source.counters()[0],
        ("capture_packets".to_string(), 2 * 1024 + 12)
    );
    assert!(source.interval_counters().is_empty());
    let packets: Vec<(PathBuf, u64)> = files
        .iter()
        .map(|f| (f.path.clone(), f.stats.packets))
        .collect();
    // A file without a packet has no place in time: it is read last.
    assert_eq!(
        packets,
        vec![
            (paths[0].clone(), 2 * BATCH_SEGMENTS as u64 + 5),
            (paths[2].clone(), 2 * BATCH_SEGMENTS as u64 + 12),
            (paths[1].clone(), 2 * BATCH_SEGMENTS as u64 + 12),
        ]
    );
    // Ended stays ended; closing after the end is fine.
    let polled = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);
    source.close().unwrap();
}

#[test]
fn capture_source_resumes_where_the_consumer_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![dir.path().join("a.pcap"), dir.path().join("b.pcap")];
    write(&paths[0], BATCH_SEGMENTS as u32 + 300, false);
    write_at(&paths[1], 1_000_000, 40, false);
    let ports = PortSet::single(9878);
    let (expected, _) = sequential(&paths, &ports);
    // Stops inside batches, at their last segment (every 1024th) and across files.
    for stop_every in [1, 10, 1024, 1000] {
        let mut source = CaptureSource::new(paths.clone(), ports.clone()).unwrap();
        let (got, files) = drain(&mut source, stop_every);
        assert_eq!(got, expected, "stopping every {stop_every}");
        assert_eq!(files.len(), 2);
    }
}

#[test]
fn capture_source_closed_early_stops_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![dir.path().join("big.pcap")];
    write(&paths[0], 20 * BATCH_SEGMENTS as u32, false);
    let (expected, _) = sequential(&paths, &PortSet::single(9878));
    let mut source = CaptureSource::new(paths, PortSet::single(9878)).unwrap();
    let mut got = Vec::new();
    let polled = source
        .poll(Duration::from_secs(10), &mut |s| {
            got.push(seen(s));
            if got.len() == 10 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .unwrap();
    assert_eq!(polled, Polled::Segments(10));
    assert_eq!(got, expected[..10]);
    source.close().unwrap();
    // The reader stopped within the batches in flight, well before the end.
    let read = source.reader_stats.expect("the reader was joined").packets;
    assert!(read < 20 * BATCH_SEGMENTS as u64, "read {read}");
    // Counters are those of what was handed out (its first batch), not the read-ahead.
    assert_eq!(source.stats().packets, BATCH_SEGMENTS as u64);
    assert!(source.finished_files().is_empty());
    let polled = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);
}

#[test]
fn capture_source_errors_name_the_file_after_its_good_segments() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("good.pcap"),
        dir.path().join("bad.pcap"),
        dir.path().join("never.pcap"),
    ];
    write(&paths[0], 3, false);
    write_at(&paths[1], 1_000_000, BATCH_SEGMENTS as u32 + 3, true);
    write_at(&paths[2], 2_000_000, 5, false);
    let (expected, _) = sequential(&paths[..2], &PortSet::single(9878));
    let mut source = CaptureSource::new(paths.clone(), PortSet::single(9878)).unwrap();
    let mut got = Vec::new();
    let mut finished = Vec::new();
    let err = loop {
        match source.poll(Duration::from_secs(10), &mut |s| {
            got.push(seen(s));
            Flow::Continue
        }) {
            Ok(Polled::Segments(_)) => finished.extend(source.finished_files()),
            Ok(Polled::Ended) => panic!("ended without the error"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, expected);
    assert_eq!(got.len(), BATCH_SEGMENTS + 6);
    let message = err.to_string();
    assert!(
        message.contains("bad.pcap") && message.contains("corrupt"),
        "{message}"
    );
    let err = err.downcast::<CaptureError>().expect("a CaptureError");
    assert!(matches!(*err, CaptureError::Corrupt { .. }));
    assert_eq!(finished.len(), 1, "only good.pcap was read to its end");
    let polled = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);

    // A file that cannot be opened is an error too, naming it.
    let missing = dir.path().join("missing.pcap");
    let mut source = CaptureSource::new(vec![missing], PortSet::single(9878)).unwrap();
    let err = source
        .poll(Duration::from_secs(10), &mut |_| Flow::Continue)
        .unwrap_err();
    assert!(err.to_string().contains("missing.pcap"), "{err}");
}

#[test]
fn capture_source_flags_a_file_cut_short_without_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![dir.path().join("cut.pcap")];
    write(&paths[0], 50, false);
    let bytes = std::fs::read(&paths[0]).unwrap();
    std::fs::write(&paths[0], &bytes[..bytes.len() - 5]).unwrap();
    let (expected, expected_stats) = sequential(&paths, &PortSet::single(9878));
    assert!(expected_stats.truncated_file);
    let mut source = CaptureSource::new(paths, PortSet::single(9878)).unwrap();
    let (got, files) = drain(&mut source, 0);
    assert_eq!(got, expected);
    assert_eq!(got.len(), 49);
    assert!(source.stats().truncated_file);
    assert_eq!(files.len(), 1);
    // A flag (not a counter), and a count of such files.
    let counters = source.counters();
    assert!(counters.iter().all(|(name, _)| name != "truncated_file"));
    assert!(counters.contains(&("capture_truncated_files".to_string(), 1)));
}

#[test]
fn capture_source_poll_waits_at_most_wait() {
    // A FIFO nobody writes to yet: the reader blocks opening it.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let mut source = CaptureSource::new(vec![fifo.clone()], PortSet::single(9878)).unwrap();
    let started = Instant::now();
    let polled = source
        .poll(Duration::from_millis(50), &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Segments(0));
    assert!(started.elapsed() >= Duration::from_millis(50));
    // Now the capture arrives.
    let src = dir.path().join("src.pcap");
    write(&src, 3, false);
    let (expected, _) = sequential(std::slice::from_ref(&src), &PortSet::single(9878));
    std::fs::write(&fifo, std::fs::read(&src).unwrap()).unwrap();
    let (got, files) = drain(&mut source, 0);
    assert_eq!(got, expected);
    assert_eq!(files[0].path, fifo);
}

/// `--threads 1`: the same segments, files, counters and errors as the reading thread,
/// read on the calling thread.
#[test]
fn inline_source_hands_what_the_reading_thread_hands() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("c.pcap"),
    ];
    write(&paths[0], 2 * BATCH_SEGMENTS as u32 + 5, false);
    write(&paths[1], 0, false);
    write_at(&paths[2], 1_000_000, 7, false);
    let ports = PortSet::single(9878);
    let mut threaded = CaptureSource::new(paths.clone(), ports.clone()).unwrap();
    let (expected, expected_files) = drain(&mut threaded, 0);
    let mut inline =
        InlineCaptureSource::new(paths, ports, fixscope_model::shutdown::Shutdown::new());
    assert_eq!((inline.now_ns(), inline.unix_offset_ns()), (None, 0));
    let (got, files) = drain(&mut inline, 0);
    assert_eq!(got.len(), 2 * BATCH_SEGMENTS + 12);
    assert_eq!(got, expected);
    assert_eq!(
        files, expected_files,
        "every file, with its counters so far"
    );
    assert_eq!(CaptureFiles::stats(&inline), CaptureFiles::stats(&threaded));
    assert_eq!(inline.counters(), threaded.counters());
    assert!(inline.interval_counters().is_empty());
    let polled = inline
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);
    inline.close().unwrap();
}

/// A damaged file: its good segments in one poll, the error (naming it) in the next, so a
/// driver counts them delivered and prints the summary before the error.
#[test]
fn inline_source_errors_after_the_good_segments_in_a_poll_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("good.pcap"),
        dir.path().join("bad.pcap"),
        dir.path().join("never.pcap"),
    ];
    write(&paths[0], 3, false);
    write_at(&paths[1], 1_000_000, BATCH_SEGMENTS as u32 + 3, true);
    write_at(&paths[2], 2_000_000, 5, false);
    let (expected, _) = sequential(&paths[..2], &PortSet::single(9878));
    let mut source = InlineCaptureSource::new(
        paths,
        PortSet::single(9878),
        fixscope_model::shutdown::Shutdown::new(),
    );
    let mut got = Vec::new();
    let mut polls = Vec::new();
    let err = loop {
        match source.poll(Duration::ZERO, &mut |s| {
            got.push(seen(s));
            Flow::Continue
        }) {
            Ok(Polled::Segments(n)) => polls.push((n, source.finished_files().len())),
            Ok(Polled::Ended) => panic!("ended without the error"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, expected);
    assert_eq!(polls, vec![(3, 1), (BATCH_SEGMENTS + 3, 0)]);
    assert!(err.to_string().contains("bad.pcap"), "{err}");
    let polled = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);

    let missing = dir.path().join("missing.pcap");
    let mut source = InlineCaptureSource::new(
        vec![missing],
        PortSet::single(9878),
        fixscope_model::shutdown::Shutdown::new(),
    );
    let err = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap_err();
    assert!(err.to_string().contains("missing.pcap"), "{err}");
}

/// Ctrl-C (the shutdown) and a consumer's stop end the reading at that segment.
#[test]
fn inline_source_stops_at_the_segment_where_it_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![dir.path().join("big.pcap"), dir.path().join("b.pcap")];
    write(&paths[0], 3 * BATCH_SEGMENTS as u32, false);
    write_at(&paths[1], 1_000_000, 5, false);
    let (expected, _) = sequential(&paths, &PortSet::single(9878));
    let stop = fixscope_model::shutdown::Shutdown::new();
    let mut source = InlineCaptureSource::new(paths.clone(), PortSet::single(9878), stop.clone());
    let mut got = Vec::new();
    let polled = source
        .poll(Duration::ZERO, &mut |s| {
            got.push(seen(s));
            if got.len() == 100 {
                stop.trigger();
            }
            Flow::Continue
        })
        .unwrap();
    assert_eq!(polled, Polled::Segments(100));
    assert_eq!(got, expected[..100]);
    assert!(source.finished_files().is_empty());
    let polled = source
        .poll(Duration::ZERO, &mut |_| Flow::Continue)
        .unwrap();
    assert_eq!(polled, Polled::Ended);

    let mut source = InlineCaptureSource::new(
        paths,
        PortSet::single(9878),
        fixscope_model::shutdown::Shutdown::new(),
    );
    let (got, _) = drain(&mut source, 10);
    assert_eq!(got, expected[..10], "a consumer's stop ends the reading");
}

/// Every segment of `paths` merged as mergecap merges records: by time, equal times in
/// the order the files are given, a file's own order kept.
fn merged_by_time(paths: &[PathBuf], ports: &PortSet) -> Vec<Seen> {
    let mut all: Vec<(u64, usize, usize, Seen)> = Vec::new();
    for (file, p) in paths.iter().enumerate() {
        let mut stats = CaptureStats::default();
        read_capture(p, ports, &mut stats, |s| {
            all.push((s.ts_ns, file, all.len(), seen(s)))
        })
        .unwrap();
    }
    all.sort_by_key(|&(ts, file, at, _)| (ts, file, at));
    all.into_iter().map(|(.., s)| s).collect()
}

/// Issue #36: several files are one timeline, whatever order they are given in.
#[test]
fn files_given_in_any_order_are_read_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("c.pcap"),
    ];
    write(&paths[0], 2 * BATCH_SEGMENTS as u32 + 5, false);
    write_at(&paths[1], 1_000_000, 7, false);
    write_at(&paths[2], 2_000_000, BATCH_SEGMENTS as u32 + 1, false);
    let ports = PortSet::single(9878);
    let (expected, expected_stats) = sequential(&paths, &ports);
    let reverse = |v: &[usize]| v.iter().map(|&i| paths[i].clone()).collect::<Vec<_>>();
    for (order, reordered) in [
        (vec![0, 1, 2], false),
        (vec![2, 1, 0], true),
        (vec![1, 2, 0], true),
        (vec![0, 2, 1], true),
    ] {
        let given = reverse(&order);
        for stop_every in [0, 1000] {
            let mut source = CaptureSource::new(given.clone(), ports.clone()).unwrap();
            let (got, files) = drain(&mut source, stop_every);
            assert_eq!(got, expected, "{order:?}");
            let done: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
            assert_eq!(done, paths, "files end in time order");
            let stats = CaptureFiles::stats(&source);
            assert_eq!(
                (stats.reordered_files, stats.overlapping_files),
                (reordered, None),
                "{order:?}"
            );
            assert_eq!(
                CaptureStats {
                    reordered_files: false,
                    ..stats
                },
                expected_stats
            );
        }
        let mut inline = InlineCaptureSource::new(
            given.clone(),
            ports.clone(),
            fixscope_model::shutdown::Shutdown::new(),
        );
        let (got, files) = drain(&mut inline, 0);
        assert_eq!(got, expected, "--threads 1, {order:?}");
        assert_eq!(files.len(), 3);
        // Consecutive files are read one at a time.
        let mut merged = merge::MergedCaptures::new(given, ports.clone(), false);
        let mut n = 0;
        while merged
            .step(&mut |_, _| {
                n += 1;
                Flow::Continue
            })
            .unwrap()
            != merge::Step::Ended
        {}
        assert_eq!(n, expected.len());
        assert_eq!(merged.most_open, 1, "{order:?}");
    }
}

/// Captures of one time span (two taps): merged by time, equal times in the order given;
/// said in the counters' flags.
#[test]
fn files_that_overlap_in_time_are_merged_by_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.pcap");
    let y = dir.path().join("y.pcap");
    // 1_000.. and 1_000 + BATCH/2..: half of x's times are y's too.
    write(&x, BATCH_SEGMENTS as u32 + 40, false);
    write_at(
        &y,
        1_000 + BATCH_SEGMENTS as u64 / 2,
        BATCH_SEGMENTS as u32,
        false,
    );
    let ports = PortSet::single(9878);
    for given in [vec![x.clone(), y.clone()], vec![y.clone(), x.clone()]] {
        let expected = merged_by_time(&given, &ports);
        assert_eq!(expected.len(), 2 * BATCH_SEGMENTS + 40);
        for stop_every in [0, 1, 700] {
            let mut source = CaptureSource::new(given.clone(), ports.clone()).unwrap();
            let (got, files) = drain(&mut source, stop_every);
            assert_eq!(got, expected, "{given:?}, stopping every {stop_every}");
            assert_eq!(files.len(), 2);
            let stats = CaptureFiles::stats(&source);
            assert_eq!(stats.overlapping_files, Some((0, 1)));
            assert_eq!(stats.packets, 2 * BATCH_SEGMENTS as u64 + 40);
        }
        let mut got = Vec::new();
        read_captures_in_background(
            &given,
            &ports,
            |s| {
                got.push(seen(s));
                Flow::Continue
            },
            |_, _| {},
        )
        .unwrap();
        assert_eq!(got, expected);
        let mut merged = merge::MergedCaptures::new(given, ports.clone(), false);
        while merged.step(&mut |_, _| Flow::Continue).unwrap() != merge::Step::Ended {}
        assert_eq!(merged.most_open, 2);
    }
}

/// A damaged file among several: every segment before the damage (of every file, in
/// time order), then its error; the files after it in time are not read.
#[test]
fn a_damaged_file_among_several_ends_the_merge_at_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        dir.path().join("later.pcap"),
        dir.path().join("bad.pcap"),
        dir.path().join("early.pcap"),
    ];
    write_at(&paths[0], 2_000_000, 5, false);
    write_at(&paths[1], 1_000_000, BATCH_SEGMENTS as u32 + 3, true);
    write(&paths[2], 10, false);
    let ports = PortSet::single(9878);
    let (expected, _) = sequential(&[paths[2].clone(), paths[1].clone()], &ports);
    let mut source = CaptureSource::new(paths, ports).unwrap();
    let mut got = Vec::new();
    let err = loop {
        match source.poll(Duration::from_secs(10), &mut |s| {
            got.push(seen(s));
            Flow::Continue
        }) {
            Ok(Polled::Segments(_)) => {}
            Ok(Polled::Ended) => panic!("ended without the error"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, expected);
    assert!(err.to_string().contains("bad.pcap"), "{err}");
    assert_eq!(
        source
            .poll(Duration::ZERO, &mut |_| Flow::Continue)
            .unwrap(),
        Polled::Ended
    );
}
