//! The contract every [`Framer`] keeps, as checks a protocol crate's tests call with a
//! stream of its own messages (a test helper in the library so that each protocol's tests
//! run the same checks; it panics with what broke).

use crate::{ByteTimes, FramedMessage, Framer, FramingCounters};

/// One delivered frame, owned: its bytes, offset in the stream and times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub bytes: Vec<u8>,
    pub offset: u32,
    pub first_byte_ts_ns: u64,
    pub last_byte_ts_ns: u64,
}

impl Delivered {
    fn of(m: FramedMessage<'_>) -> Self {
        assert_eq!(
            m.last_byte_seq.wrapping_sub(m.first_byte_seq) as usize + 1,
            m.bytes.len(),
            "a frame's sequence numbers span its bytes"
        );
        Delivered {
            bytes: m.bytes.to_vec(),
            offset: m.first_byte_seq,
            first_byte_ts_ns: m.first_byte_ts_ns,
            last_byte_ts_ns: m.last_byte_ts_ns,
        }
    }
}

/// Feeds `stream` to a new framer in pieces cut at `cuts` (increasing offsets), piece `i`
/// at time `i + 1`, and returns what it delivered with its counters.
pub fn frame_in_pieces<F: Framer>(
    stream: &[u8],
    cuts: &[usize],
) -> (Vec<Delivered>, FramingCounters) {
    let mut framer = F::default();
    let mut counters = FramingCounters::default();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &end) in cuts.iter().chain([&stream.len()]).enumerate() {
        framer.push_at(
            &stream[start..end],
            ByteTimes::at(i as u64 + 1),
            start as u32,
            &mut counters,
            |m| out.push(Delivered::of(m)),
        );
        start = end;
    }
    (out, counters)
}

/// The time of the piece that carries byte `at` when the stream is cut at `cuts`.
fn piece_time(cuts: &[usize], at: usize) -> u64 {
    cuts.iter().filter(|&&c| c <= at).count() as u64 + 1
}

/// Checks that `stream` frames into exactly `expected` messages whichever one or two
/// places it is cut at, each with the bytes and offset it has uncut and the times of the
/// pieces that carried its first and last bytes. Two cuts are tried around every frame
/// boundary and inside every frame's first 48 bytes (where headers and length prefixes
/// are), one cut at every offset.
pub fn split_anywhere<F: Framer>(stream: &[u8], expected: usize) {
    let (whole, counters) = frame_in_pieces::<F>(stream, &[]);
    assert_eq!(
        whole.len(),
        expected,
        "frames of the uncut stream: {counters:?}"
    );
    let mut end = 0u32;
    for d in &whole {
        assert_eq!(d.offset, end, "frames are contiguous in a clean stream");
        end = d.offset + d.bytes.len() as u32;
    }
    assert_eq!(end as usize, stream.len(), "the clean stream is all frames");
    let check = |cuts: &[usize]| {
        let (got, counters) = frame_in_pieces::<F>(stream, cuts);
        assert_eq!(got.len(), whole.len(), "cut at {cuts:?}: {counters:?}");
        for (g, w) in got.iter().zip(&whole) {
            assert_eq!(
                (&g.bytes, g.offset),
                (&w.bytes, w.offset),
                "cut at {cuts:?}"
            );
            let first = w.offset as usize;
            let last = first + w.bytes.len() - 1;
            assert_eq!(
                g.first_byte_ts_ns,
                piece_time(cuts, first),
                "first byte, cut at {cuts:?}"
            );
            assert_eq!(
                g.last_byte_ts_ns,
                piece_time(cuts, last),
                "last byte, cut at {cuts:?}"
            );
        }
    };
    for at in 1..stream.len() {
        check(&[at]);
    }
    for w in &whole {
        let start = w.offset as usize;
        let len = w.bytes.len();
        for a in 1..len.min(48) {
            for b in (a + 1)..(len + 2).min(a + 24) {
                let cuts = [start + a, start + b];
                if cuts[1] < stream.len() {
                    check(&cuts);
                }
            }
        }
    }
}

/// Checks that a hole inside a frame cuts that frame — counted in `gap_cut_messages`, never
/// delivered — and that the frames wholly after the hole's resync point are delivered
/// as they are: `stream` is at least three frames, the hole falls in the second's middle.
pub fn gap_cuts_the_frame_it_falls_in<F: Framer>(stream: &[u8]) {
    let (whole, _) = frame_in_pieces::<F>(stream, &[]);
    assert!(whole.len() >= 3, "the gap check needs three frames or more");
    let second = &whole[1];
    let hole_at = second.offset as usize + second.bytes.len() / 2;
    let resume_at = whole[2].offset as usize;
    let mut framer = F::default();
    let mut counters = FramingCounters::default();
    let mut got = Vec::new();
    framer.push_at(
        &stream[..hole_at],
        ByteTimes::at(1),
        0,
        &mut counters,
        |m| got.push(Delivered::of(m)),
    );
    assert_eq!(
        got.len(),
        1,
        "before the hole: only the first frame is complete"
    );
    assert!(
        framer.pending_bytes() > 0,
        "the second frame's start is held"
    );
    framer.gap(&mut counters);
    assert_eq!(
        counters.gap_cut_messages, 1,
        "the frame the hole cut is counted"
    );
    assert_eq!(
        framer.pending_bytes(),
        0,
        "nothing from before the hole is kept"
    );
    framer.push_at(
        &stream[resume_at..],
        ByteTimes::at(2),
        resume_at as u32,
        &mut counters,
        |m| got.push(Delivered::of(m)),
    );
    assert_eq!(
        got.len(),
        whole.len() - 1,
        "every frame but the cut one: {counters:?}"
    );
    assert!(got[1..]
        .iter()
        .zip(&whole[2..])
        .all(|(g, w)| g.bytes == w.bytes && g.offset == w.offset));
    assert!(got[1..]
        .iter()
        .all(|g| g.first_byte_ts_ns == 2 && g.last_byte_ts_ns == 2));
}

/// Checks the two times of bytes held behind a hole: `stream` (three frames or more) is fed
/// in two pieces cut inside the second frame, the second piece captured at 2 but readable
/// only at 5 (a hole before it filled then). The frame it completes is first-byte 1 and
/// last-byte 5; the frames wholly in it are first-byte 2 (on the wire then) and last-byte 5.
pub fn held_bytes_keep_their_capture_time<F: Framer>(stream: &[u8]) {
    let (whole, _) = frame_in_pieces::<F>(stream, &[]);
    assert!(whole.len() >= 3, "the check needs three frames or more");
    let cut = whole[1].offset as usize + whole[1].bytes.len() / 2;
    let mut framer = F::default();
    let mut counters = FramingCounters::default();
    let mut got = Vec::new();
    framer.push_at(&stream[..cut], ByteTimes::at(1), 0, &mut counters, |m| {
        got.push(Delivered::of(m))
    });
    let held = ByteTimes {
        captured_ns: 2,
        readable_ns: 5,
    };
    framer.push_at(&stream[cut..], held, cut as u32, &mut counters, |m| {
        got.push(Delivered::of(m))
    });
    assert_eq!(got.len(), whole.len(), "{counters:?}");
    let times: Vec<(u64, u64)> = got
        .iter()
        .map(|g| (g.first_byte_ts_ns, g.last_byte_ts_ns))
        .collect();
    let mut expected = vec![(1, 1), (1, 5)];
    expected.resize(whole.len(), (2, 5));
    assert_eq!(times, expected, "(first byte, last byte) of each frame");
}
