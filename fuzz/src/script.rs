//! The input shapes the binary protocol targets share, and their writers for the seeds:
//! a TCP conversation as segments of either direction (with holes between them), and a
//! multicast capture as datagrams of feed A or B (with capture-time steps).
//!
//! Both read any bytes: a short op or a length past the end takes what is left, so every
//! input is a script and the fuzzer never hits a parse wall before the code under test.

/// One TCP segment's readable bytes in one direction.
pub(crate) struct Segment<'a> {
    /// 0: the client's direction, 1: the host's.
    pub(crate) direction: usize,
    /// A hole in that direction just before this segment.
    pub(crate) gap_before: bool,
    pub(crate) bytes: &'a [u8],
}

/// `[flags, len]` then `len` bytes, again and again: flags bit 0 picks the direction, bit
/// 1 puts a hole before the segment.
pub(crate) fn segments(data: &[u8]) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        out.push(Segment {
            direction: usize::from(flags & 1),
            gap_before: flags & 2 != 0,
            bytes: &tail[..n],
        });
        rest = &tail[n..];
    }
    out
}

/// The script [`segments`] reads back as `segs` (direction, hole before, bytes); a segment
/// longer than 255 bytes is written as several.
pub fn segments_script(segs: &[(usize, bool, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(direction, gap, bytes) in segs {
        let mut first = true;
        for piece in bytes.chunks(255) {
            out.push(direction as u8 | (u8::from(gap && first) << 1));
            out.push(piece.len() as u8);
            out.extend_from_slice(piece);
            first = false;
        }
    }
    out
}

/// Capture-time step of one unit of a datagram's op (50 µs: 20 units a millisecond, so
/// the 1 ms microburst windows are crossed and shared).
pub(crate) const STEP_NS: u64 = 50_000;

/// One UDP payload of one feed.
pub(crate) struct Datagram<'a> {
    /// 0: feed A, 1: feed B.
    pub(crate) feed: usize,
    pub(crate) capture_ns: u64,
    pub(crate) bytes: &'a [u8],
}

/// Largest datagram a script writes (an Ethernet MTU's worth and some).
const MAX_DATAGRAM: usize = 2047;

/// `[flags, len_hi, len_lo]` then `len % 2048` bytes, again and again: flags bit 0 picks
/// the feed, the other bits advance the capture time by that many [`STEP_NS`].
pub(crate) fn datagrams(data: &[u8]) -> Vec<Datagram<'_>> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut now = 1_700_000_000_000_000_000u64;
    while let [flags, hi, lo, tail @ ..] = rest {
        let n = (usize::from(u16::from_be_bytes([*hi, *lo])) & MAX_DATAGRAM).min(tail.len());
        now += u64::from(flags >> 1) * STEP_NS;
        out.push(Datagram {
            feed: usize::from(flags & 1),
            capture_ns: now,
            bytes: &tail[..n],
        });
        rest = &tail[n..];
    }
    out
}

/// The script [`datagrams`] reads back as `grams` (feed, time steps of [`STEP_NS`] before
/// it, up to 127, and the payload, up to 2047 bytes).
pub fn datagrams_script(grams: &[(usize, u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(feed, steps, bytes) in grams {
        assert!(bytes.len() <= MAX_DATAGRAM && steps < 128, "a seed too big");
        out.push(feed as u8 | (steps << 1));
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_read_back_as_written() {
        let long = vec![7u8; 600];
        let s = segments_script(&[(1, true, &long), (0, false, b"abc")]);
        let segs = segments(&s);
        assert_eq!(segs.len(), 4);
        assert!(segs[0].gap_before && !segs[1].gap_before);
        assert_eq!(segs.iter().map(|s| s.bytes.len()).sum::<usize>(), 603);
        assert_eq!((segs[3].direction, segs[3].bytes), (0, &b"abc"[..]));
        let d = datagrams_script(&[(1, 3, b"xy"), (0, 0, b"")]);
        let grams = datagrams(&d);
        assert_eq!(grams.len(), 2);
        assert_eq!((grams[0].feed, grams[0].bytes), (1, &b"xy"[..]));
        assert_eq!(grams[1].capture_ns, grams[0].capture_ns);
    }
}
