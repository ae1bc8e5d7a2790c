//! Frames of every interface (or every CPU of one) handed on in timestamp order.
//!
//! The two ports of a full-duplex tap each carry one direction, and a multi-queue NIC's
//! CPUs fill the capture ring in their own order: so frames are collected as they are read
//! (copied out of libpcap's ring into one arena), and handed on sorted once the wire has
//! been read up to a watermark — stamped before it, no frame can still be on its way. A
//! frame that comes later than the watermark is still handed on, and counted
//! (`tap_late_frames`); the source then waits longer (twice the lateness, as the live
//! source's merge does). Sorting a batch that is nearly in order already (each interface's
//! frames are) is a merge of its runs: std's stable sort finds them.

use fixscope_core::decode::LinkType;

#[derive(Clone, Copy, Debug)]
struct Frame {
    ts_ns: u64,
    link: LinkType,
    start: usize,
    len: usize,
}

#[derive(Default)]
pub(crate) struct Merge {
    frames: Vec<Frame>,
    arena: Vec<u8>,
    /// Where the next frame to hand on lies in `frames` (those before it were handed on).
    next: usize,
    /// The timestamp of the last frame handed on.
    handed_ts: u64,
    pub late_frames: u64,
    /// The most a late frame was stamped before the last frame handed on, ns.
    pub max_lateness_ns: u64,
}

impl Merge {
    pub fn push(&mut self, ts_ns: u64, link: LinkType, frame: &[u8]) {
        if ts_ns < self.handed_ts {
            self.late_frames += 1;
            self.max_lateness_ns = self.max_lateness_ns.max(self.handed_ts - ts_ns);
        }
        self.frames.push(Frame {
            ts_ns,
            link,
            start: self.arena.len(),
            len: frame.len(),
        });
        self.arena.extend_from_slice(frame);
    }

    pub fn is_empty(&self) -> bool {
        self.next == self.frames.len()
    }

    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.frames.len() - self.next
    }

    /// Sorts what is held by timestamp; call after pushing, before [`Merge::release`].
    pub fn sort(&mut self) {
        self.frames[self.next..].sort_by_key(|f| f.ts_ns);
    }

    /// Hands on the frames stamped at or before `watermark`, in order, until `on_frame`
    /// says stop (returns false); returns how many were handed on.
    pub fn release(
        &mut self,
        watermark: u64,
        on_frame: &mut dyn FnMut(u64, LinkType, &[u8]) -> bool,
    ) -> usize {
        let mut n = 0;
        while let Some(f) = self.frames.get(self.next).copied() {
            if f.ts_ns > watermark {
                break;
            }
            self.next += 1;
            n += 1;
            self.handed_ts = self.handed_ts.max(f.ts_ns);
            if !on_frame(f.ts_ns, f.link, &self.arena[f.start..f.start + f.len]) {
                break;
            }
        }
        self.compact();
        n
    }

    /// Drops what was handed on, keeping the held frames' bytes at the arena's front.
    fn compact(&mut self) {
        if self.next == 0 {
            return;
        }
        if self.next == self.frames.len() {
            self.frames.clear();
            self.arena.clear();
            self.next = 0;
            return;
        }
        let mut at = 0;
        for i in self.next..self.frames.len() {
            let f = self.frames[i];
            self.arena.copy_within(f.start..f.start + f.len, at);
            self.frames[i - self.next] = Frame { start: at, ..f };
            at += f.len;
        }
        self.frames.truncate(self.frames.len() - self.next);
        self.arena.truncate(at);
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(m: &mut Merge, watermark: u64) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        m.release(watermark, &mut |ts, _, b| {
            out.push((ts, b.to_vec()));
            true
        });
        out
    }

    #[test]
    fn hands_on_in_timestamp_order_up_to_the_watermark_and_keeps_the_rest() {
        let mut m = Merge::default();
        // Two interfaces' frames, each in order, interleaved as read.
        for (ts, b) in [
            (10, b"a"),
            (30, b"c"),
            (50, b"e"),
            (20, b"b"),
            (40, b"d"),
            (60, b"f"),
        ] {
            m.push(ts, LinkType::Ethernet, b);
        }
        m.sort();
        let got = drain(&mut m, 40);
        assert_eq!(
            got,
            vec![
                (10, b"a".to_vec()),
                (20, b"b".to_vec()),
                (30, b"c".to_vec()),
                (40, b"d".to_vec())
            ]
        );
        assert_eq!(m.held(), 2);
        // A frame stamped before the last handed on: late, still handed on.
        m.push(35, LinkType::Ethernet, b"x");
        assert_eq!((m.late_frames, m.max_lateness_ns), (1, 5));
        m.sort();
        let got = drain(&mut m, u64::MAX);
        assert_eq!(
            got,
            vec![
                (35, b"x".to_vec()),
                (50, b"e".to_vec()),
                (60, b"f".to_vec())
            ]
        );
        assert!(m.is_empty());
    }

    #[test]
    fn a_stop_keeps_the_frames_not_taken() {
        let mut m = Merge::default();
        for ts in 1..=5u64 {
            m.push(ts, LinkType::Ethernet, &[ts as u8; 3]);
        }
        m.sort();
        let mut taken = 0;
        m.release(u64::MAX, &mut |_, _, _| {
            taken += 1;
            taken < 2
        });
        assert_eq!(m.held(), 3);
        let got = drain(&mut m, u64::MAX);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(got[0].1, vec![3u8; 3]);
    }
}
