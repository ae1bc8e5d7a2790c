//! One direction of a FIX session: which MsgSeqNums were seen (to tell a replay from a first
//! sighting) and which number comes next (to see the sequence jump).

/// Ranges of MsgSeqNums seen, `[start, end)`, sorted and disjoint. Sequence numbers come
/// mostly in order, so this is one range plus one per hole: a few entries, not one per
/// message.
#[derive(Clone, Debug, Default)]
pub struct SeqRanges {
    ranges: Vec<(u64, u64)>,
}

impl SeqRanges {
    /// Holes remembered at most; beyond it the lowest ranges are forgotten (a PossDup of a
    /// message that old then counts as the first sighting it might be).
    pub const LIMIT: usize = 4096;

    pub fn contains(&self, seq: u64) -> bool {
        // The usual case: at or near the end.
        match self.ranges.last() {
            None => false,
            Some(&(start, end)) if seq >= start => seq < end,
            Some(_) => {
                let i = self.ranges.partition_point(|&(_, end)| end <= seq);
                self.ranges.get(i).is_some_and(|&(start, _)| start <= seq)
            }
        }
    }

    /// Marks `[start, end)` seen.
    #[inline]
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        if let Some(last) = self.ranges.last_mut() {
            if start >= last.0 && start <= last.1 {
                last.1 = last.1.max(end);
                return;
            }
        }
        // Ranges overlapping or touching [start, end) merge into one.
        let lo = self.ranges.partition_point(|&(_, e)| e < start);
        let hi = self.ranges.partition_point(|&(s, _)| s <= end);
        let (mut s, mut e) = (start, end);
        if lo < hi {
            s = s.min(self.ranges[lo].0);
            e = e.max(self.ranges[hi - 1].1);
        }
        self.ranges.splice(lo..hi, [(s, e)]);
        if self.ranges.len() > Self::LIMIT {
            self.ranges.remove(0);
        }
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// What one message's MsgSeqNum means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqVerdict {
    /// A PossDup (43=Y) under a number already seen: a replay of a message on the wire
    /// before.
    Replay,
    /// Seen for the first time (a PossDup of a never-seen number too: its original never
    /// reached the wire, or the capture started later).
    New,
    /// First sighting, and the sequence jumped past the expected number (no GapFill
    /// covered the skipped ones): a FIX sequence gap.
    Gap,
    /// First sighting, jumped right after a hole in the capture: the skipped numbers were
    /// on the wire, not captured.
    SkipAtCaptureHole,
}

/// The MsgSeqNums of one direction of one session, within one epoch.
#[derive(Clone, Debug, Default)]
pub struct SequenceTracker {
    seen: SeqRanges,
    next_expected: Option<u64>,
    after_capture_hole: bool,
}

impl SequenceTracker {
    /// Nothing seen since the start or the last reset.
    pub fn is_fresh(&self) -> bool {
        self.seen.is_empty() && self.next_expected.is_none()
    }

    /// Judges one message's MsgSeqNum (0: absent, judged as new and not tracked).
    #[inline]
    pub fn observe(&mut self, seq: u64, poss_dup: bool) -> SeqVerdict {
        if seq == 0 {
            return SeqVerdict::New;
        }
        if poss_dup && self.seen.contains(seq) {
            return SeqVerdict::Replay;
        }
        self.seen.insert(seq, seq + 1);
        let verdict = match self.next_expected {
            // A resend (PossDup) of a number not seen fills a hole or starts the capture's
            // view late: never a jump.
            Some(expected) if seq > expected && !poss_dup => {
                if self.after_capture_hole {
                    SeqVerdict::SkipAtCaptureHole
                } else {
                    SeqVerdict::Gap
                }
            }
            _ => SeqVerdict::New,
        };
        if !poss_dup || self.next_expected.is_none_or(|e| seq >= e) {
            self.next_expected = Some(self.next_expected.map_or(seq + 1, |e| e.max(seq + 1)));
        }
        self.after_capture_hole = false;
        verdict
    }

    /// A SequenceReset-GapFill at `seq` with NewSeqNo `new_seq_no`: the numbers in between
    /// will never be sent; the next expected is `new_seq_no`.
    pub fn gap_fill(&mut self, seq: u64, new_seq_no: u64) {
        if seq > 0 {
            self.seen.insert(seq, new_seq_no.max(seq + 1));
        }
        if new_seq_no > 0 {
            self.next_expected = Some(self.next_expected.map_or(new_seq_no, |e| e.max(new_seq_no)));
        }
    }

    /// A new epoch: numbers restart (at `next`, or unknown until the next message).
    pub fn reset(&mut self, next: Option<u64>) {
        self.seen.clear();
        self.next_expected = next;
        self.after_capture_hole = false;
    }

    /// The capture lost bytes of this direction: the next jump is no FIX gap.
    pub fn capture_hole(&mut self) {
        self.after_capture_hole = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_answer_membership() {
        let mut r = SeqRanges::default();
        for s in [1, 2, 3, 7, 8, 5, 4] {
            r.insert(s, s + 1);
        }
        assert_eq!(r.ranges, vec![(1, 6), (7, 9)]);
        assert!(r.contains(1) && r.contains(5) && !r.contains(6) && r.contains(8));
        assert!(!r.contains(0) && !r.contains(9));
        r.insert(6, 7);
        assert_eq!(r.ranges, vec![(1, 9)]);
        r.insert(20, 30);
        r.insert(12, 15);
        r.insert(10, 25);
        assert_eq!(r.ranges, vec![(1, 9), (10, 30)]);
    }

    #[test]
    fn ranges_are_bounded() {
        let mut r = SeqRanges::default();
        for s in 0..(SeqRanges::LIMIT as u64 + 10) {
            r.insert(2 * s + 1, 2 * s + 2);
        }
        assert_eq!(r.ranges.len(), SeqRanges::LIMIT);
        assert!(r.contains(2 * (SeqRanges::LIMIT as u64 + 9) + 1));
    }

    #[test]
    fn a_possdup_of_a_seen_number_is_a_replay_and_of_an_unseen_one_a_first_sighting() {
        let mut t = SequenceTracker::default();
        assert_eq!(t.observe(1, false), SeqVerdict::New);
        assert_eq!(t.observe(2, false), SeqVerdict::New);
        // 3..=4 never reach the wire; 5 jumps.
        assert_eq!(t.observe(5, false), SeqVerdict::Gap);
        // The resend: 2 was seen (a replay), 3 and 4 never were (first sightings).
        assert_eq!(t.observe(2, true), SeqVerdict::Replay);
        assert_eq!(t.observe(3, true), SeqVerdict::New);
        assert_eq!(t.observe(4, true), SeqVerdict::New);
        assert_eq!(t.observe(4, true), SeqVerdict::Replay);
        assert_eq!(t.observe(6, false), SeqVerdict::New);
        // Without the flag a seen number is never judged a replay.
        assert_eq!(t.observe(6, false), SeqVerdict::New);
    }

    #[test]
    fn gap_fills_and_capture_holes_are_no_gaps() {
        let mut t = SequenceTracker::default();
        t.observe(10, false);
        t.gap_fill(11, 15);
        assert_eq!(t.observe(15, false), SeqVerdict::New);
        assert_eq!(
            t.observe(12, true),
            SeqVerdict::Replay,
            "gap-filled numbers"
        );
        t.capture_hole();
        assert_eq!(t.observe(20, false), SeqVerdict::SkipAtCaptureHole);
        assert_eq!(t.observe(25, false), SeqVerdict::Gap);
        t.reset(Some(1));
        assert_eq!(t.observe(1, false), SeqVerdict::New);
        assert_eq!(t.observe(5, true), SeqVerdict::New, "a resend never jumps");
        assert_eq!(t.observe(6, false), SeqVerdict::New);
    }
}
