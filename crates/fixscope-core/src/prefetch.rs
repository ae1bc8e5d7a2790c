//! Reading captures on a second thread while the pipeline runs on the calling one.
//!
//! Offline analysis is one sequential stream (the pipeline must see segments in file
//! order), but reading and decoding the file is a quarter of the work: done by a reader
//! thread into batches of owned segments, it overlaps with reassembly, framing and
//! correlation, and `fixscope pcap` finishes in roughly the pipeline's time alone. Batches
//! are recycled through a return channel, so the steady state allocates nothing; the queue
//! between the threads is bounded, so memory stays flat however large the capture.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};

pub use crate::pcap::Flow;
use crate::pcap::{read_capture_until, CaptureError, CaptureStats};
use crate::ports::PortSet;
use crate::segment::{Direction, FlowKey, Segment, TcpFlags};

/// Segments per batch: big enough that the channel hand-off is noise (~1 µs per batch),
/// small enough that the pipeline starts at once.
const BATCH_SEGMENTS: usize = 1024;
/// Batches in flight (queued plus being filled/drained): bounds memory to a few MB.
const BATCHES_IN_FLIGHT: usize = 8;

/// A segment's fields with its payload as a range of the batch's arena.
#[derive(Clone, Copy)]
struct SegmentMeta {
    ts_ns: u64,
    flow: FlowKey,
    direction: Direction,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    missing_tail: u32,
    payload_start: usize,
    payload_end: usize,
}

/// Owned segments: metadata plus one byte arena for every payload.
#[derive(Default)]
struct SegmentBatch {
    metas: Vec<SegmentMeta>,
    payloads: Vec<u8>,
}

impl SegmentBatch {
    fn push(&mut self, s: &Segment<'_>) {
        let payload_start = self.payloads.len();
        self.payloads.extend_from_slice(s.payload);
        self.metas.push(SegmentMeta {
            ts_ns: s.ts_ns,
            flow: s.flow,
            direction: s.direction,
            seq: s.seq,
            ack: s.ack,
            flags: s.flags,
            missing_tail: s.missing_tail,
            payload_start,
            payload_end: self.payloads.len(),
        });
    }

    fn segments(&self) -> impl Iterator<Item = Segment<'_>> {
        self.metas.iter().map(|m| Segment {
            ts_ns: m.ts_ns,
            flow: m.flow,
            direction: m.direction,
            seq: m.seq,
            ack: m.ack,
            flags: m.flags,
            payload: &self.payloads[m.payload_start..m.payload_end],
            missing_tail: m.missing_tail,
        })
    }

    fn clear(&mut self) {
        self.metas.clear();
        self.payloads.clear();
    }
}

/// What the reader thread sends, in file order.
enum Event {
    Batch(SegmentBatch),
    /// Every segment of `captures[index]` has been sent; `stats` so far (all files).
    FileDone {
        index: usize,
        stats: CaptureStats,
    },
}

/// Reads `captures` in order on a reader thread and calls `on_segment` for every segment
/// in range, in file order, on the calling thread; `on_file_done` after the last segment
/// of each file, with the capture counters so far. Returns the counters of everything
/// read, or the first file's error after every segment before the error was delivered —
/// exactly what [`crate::pcap::read_capture`] called file by file would do.
pub fn read_captures_in_background(
    captures: &[PathBuf],
    ports: &PortSet,
    mut on_segment: impl FnMut(&Segment<'_>) -> Flow,
    mut on_file_done: impl FnMut(&Path, &CaptureStats),
) -> Result<CaptureStats, CaptureError> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Event>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::sync_channel::<SegmentBatch>(BATCHES_IN_FLIGHT);
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("fixscope-reader".into())
            .spawn_scoped(scope, || read_all(captures, ports, full_tx, empty_rx));
        let Ok(reader) = spawned else {
            // No thread to be had (resource limits): the same work, on this thread.
            return read_in_place(captures, ports, &mut on_segment, &mut on_file_done);
        };
        for event in &full_rx {
            match event {
                Event::Batch(mut batch) => {
                    let stop = batch
                        .segments()
                        .any(|segment| on_segment(&segment) == Flow::Stop);
                    if stop {
                        // Dropping the receivers makes the reader's next send fail: it stops.
                        break;
                    }
                    batch.clear();
                    // The reader may have finished already; then nobody needs the batch.
                    let _ = empty_tx.try_send(batch);
                }
                Event::FileDone { index, stats } => on_file_done(&captures[index], &stats),
            }
        }
        drop(full_rx);
        drop(empty_tx);
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The single-threaded equivalent of [`read_captures_in_background`].
fn read_in_place(
    captures: &[PathBuf],
    ports: &PortSet,
    on_segment: &mut impl FnMut(&Segment<'_>) -> Flow,
    on_file_done: &mut impl FnMut(&Path, &CaptureStats),
) -> Result<CaptureStats, CaptureError> {
    let mut stats = CaptureStats::default();
    let mut stopped = false;
    for path in captures {
        read_capture_until(path, ports, &mut stats, |segment| {
            stopped = on_segment(segment) == Flow::Stop;
            if stopped {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })?;
        if stopped {
            break;
        }
        on_file_done(path, &stats);
    }
    Ok(stats)
}

/// The reader thread: fills batches and sends them; stops early when the consumer is gone.
fn read_all(
    captures: &[PathBuf],
    ports: &PortSet,
    full_tx: SyncSender<Event>,
    empty_rx: Receiver<SegmentBatch>,
) -> Result<CaptureStats, CaptureError> {
    let mut stats = CaptureStats::default();
    let mut spare_batches = 0;
    let mut next_batch = || match empty_rx.try_recv() {
        Ok(batch) => batch,
        // Allocate only until BATCHES_IN_FLIGHT exist; then wait for one to come back.
        Err(_) if spare_batches < BATCHES_IN_FLIGHT => {
            spare_batches += 1;
            SegmentBatch {
                metas: Vec::with_capacity(BATCH_SEGMENTS),
                payloads: Vec::with_capacity(BATCH_SEGMENTS * 512),
            }
        }
        Err(_) => empty_rx.recv().unwrap_or_default(),
    };
    let mut batch = next_batch();
    let mut consumer_gone = false;
    for (index, path) in captures.iter().enumerate() {
        let result = read_capture_until(path, ports, &mut stats, |segment| {
            batch.push(segment);
            if batch.metas.len() == BATCH_SEGMENTS {
                let full = std::mem::replace(&mut batch, next_batch());
                consumer_gone = full_tx.send(Event::Batch(full)).is_err();
            }
            if consumer_gone {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        // Deliver what was read before an error (or the end of the file) first.
        if !batch.metas.is_empty() && !consumer_gone {
            let full = std::mem::replace(&mut batch, next_batch());
            consumer_gone = full_tx.send(Event::Batch(full)).is_err();
        }
        result?;
        if consumer_gone {
            break;
        }
        if full_tx.send(Event::FileDone { index, stats }).is_err() {
            break;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::LinkType;
    use crate::pcap::read_capture;
    use crate::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
    use crate::Endpoint;

    fn write(path: &Path, packets: u32, corrupt_tail: bool) {
        let endpoint = |a: &str, port| Endpoint {
            addr: a.parse().unwrap(),
            port,
        };
        let mut conn =
            SyntheticConnection::new(endpoint("10.0.0.2", 40000), endpoint("10.0.0.1", 9878));
        let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)
            .unwrap();
        for i in 0..packets {
            let payload = format!("payload-{i:06}");
            let spec = if i % 2 == 0 {
                conn.client_sends(payload.as_bytes())
            } else {
                conn.server_sends(payload.as_bytes())
            };
            w.write_tcp(1_000 + u64::from(i), &spec).unwrap();
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
    fn sequential(paths: &[PathBuf], ports: &PortSet) -> (Vec<(u64, Vec<u8>)>, CaptureStats) {
        let mut seen = Vec::new();
        let mut stats = CaptureStats::default();
        for p in paths {
            if read_capture(p, ports, &mut stats, |s| {
                seen.push((s.ts_ns, s.payload.to_vec()))
            })
            .is_err()
            {
                break;
            }
        }
        (seen, stats)
    }

    #[test]
    fn same_segments_in_the_same_order_as_reading_in_place() {
        let dir = tempfile::tempdir().unwrap();
        // Several batches, a partial last one, and a second file.
        let paths = [dir.path().join("a.pcap"), dir.path().join("b.pcap")];
        write(&paths[0], 3 * BATCH_SEGMENTS as u32 + 17, false);
        write(&paths[1], 5, false);
        let ports = PortSet::single(9878);
        let (expected, expected_stats) = sequential(&paths, &ports);
        let mut seen = Vec::new();
        let mut files_done = Vec::new();
        let stats = read_captures_in_background(
            &paths,
            &ports,
            |s| {
                seen.push((s.ts_ns, s.payload.to_vec()));
                Flow::Continue
            },
            |p, stats| files_done.push((p.to_path_buf(), stats.packets)),
        )
        .unwrap();
        assert_eq!(seen.len(), 3 * BATCH_SEGMENTS + 22);
        assert_eq!(seen, expected);
        assert_eq!(stats, expected_stats);
        // The fallback for when no thread can be started does the same.
        let mut in_place = Vec::new();
        let in_place_stats = read_in_place(
            &paths,
            &ports,
            &mut |s: &Segment<'_>| {
                in_place.push((s.ts_ns, s.payload.to_vec()));
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
        write(&paths[1], 5, false);
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
}
