//! Building one request: its kind from the mix (F/G aimed at a recent live order), its
//! ClOrdID, its FIX encoding, and — with `--split-clordid` — two write() calls cut in the
//! middle of the ClOrdID.

use std::io::{self, Write};

use fixscope_core::clock::monotonic_ns;
use fixscope_core::fix::encode::push_uint;
use fixscope_core::fix::tag;
use memchr::memmem;

use super::conn::{mark_sent, Link, Order, Sess};
use super::Ctx;

const SYMBOL: &[u8] = b"FXSC";
const PRICE: &[u8] = b"101.25";
const QTY: u64 = 100;

pub(super) fn kind_index(kind: u8) -> usize {
    match kind {
        b'D' => 0,
        b'F' => 1,
        _ => 2,
    }
}

/// Appends `prefix` + `num` zero-padded to `width` digits.
pub(super) fn push_clordid(out: &mut Vec<u8>, prefix: &[u8], width: usize, num: u64) {
    out.extend_from_slice(prefix);
    let digits = num.checked_ilog10().unwrap_or(0) as usize + 1;
    out.resize(out.len() + width.saturating_sub(digits), b'0');
    push_uint(out, num);
}

pub(super) fn parse_clordid(prefix: &[u8], id: &[u8]) -> Option<u64> {
    let digits = id.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Long ClOrdIDs are mostly zero padding.
    let first = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let digits = &digits[first..];
    if digits.len() > 19 {
        return None;
    }
    Some(digits.iter().fold(0u64, |n, &b| n * 10 + (b - b'0') as u64))
}

/// Value `which` of `w` (a fresh draw when `which` is None) into `scratch`; returns where
/// it is and its index.
fn pick(
    rng: &mut crate::rng::Rng,
    w: &Option<crate::args::Weighted>,
    which: Option<u16>,
    scratch: &mut Vec<u8>,
) -> (Option<std::ops::Range<usize>>, u16) {
    let Some(w) = w.as_ref() else {
        return (None, 0);
    };
    let i = which.unwrap_or_else(|| w.index(rng.below(w.total())) as u16);
    let v = w.values[i as usize % w.values.len()].0.as_bytes();
    let start = scratch.len();
    scratch.extend_from_slice(v);
    (Some(start..scratch.len()), i)
}

impl Ctx {
    /// Encodes (and in split mode sends) one request scheduled at `sched_ns`.
    pub(super) fn send_order(&mut self, s: &mut Sess, sched_ns: u64) -> io::Result<()> {
        let queue = match s.link {
            Link::Up => false,
            // Not before a hard reset: a new epoch would never resend them.
            Link::Down { reset: false, .. } if s.queued_now < s.queue_limit => true,
            // Quiescing, dropping, or the outage's queue is full: this one is skipped.
            _ => return Ok(()),
        };
        let roll = self
            .rng
            .below(100 * (self.mix[0] + self.mix[1] + self.mix[2]) as u64)
            / 100;
        let mut kind = if roll < self.mix[0] as u64 {
            b'D'
        } else if roll < (self.mix[0] + self.mix[1]) as u64 {
            b'F'
        } else {
            b'G'
        };
        let target = if kind == b'D' { None } else { s.pick_target() };
        if target.is_none() {
            kind = b'D';
        }
        let num = s.next_num;
        s.next_num += 1;
        let slot_idx = (num & s.mask) as usize;
        let old = s.ring[slot_idx];
        if old.num != 0 && !old.done {
            // The ring wrapped over a request still waiting: count it lost.
            self.c.overrun += 1;
            s.outstanding = s.outstanding.saturating_sub(1);
            self.write_truth(s, &old);
        }
        s.ring[slot_idx] = Order {
            num,
            kind,
            sched_ns,
            seq: s.session.next_out_seq(),
            ..Order::default()
        };
        s.orders_since_link += 1;
        s.outstanding += 1;
        self.c.sent[kind_index(kind)] += 1;

        self.id.clear();
        push_clordid(&mut self.id, &s.prefix, s.width, num);
        let mt: &[u8] = match kind {
            b'D' => b"D",
            b'F' => b"F",
            _ => b"G",
        };
        self.scratch.clear();
        // An F/G names its order's symbol, account and venue; a D draws its own.
        let inherited = target.and_then(|t| s.slot(t).map(|o| o.fields));
        let side = match target.and_then(|t| s.slot(t).map(|o| o.side)) {
            Some(side) if side != 0 => side,
            _ if num.is_multiple_of(2) => b'1',
            _ => b'2',
        };
        s.ring[slot_idx].side = side;
        let f = &mut self.fields;
        let at = |i: usize| inherited.map(|v| v[i]);
        let (sym, si) = pick(&mut f.rng, &f.symbols, at(0), &mut self.scratch);
        let (account, ai) = pick(&mut f.rng, &f.accounts, at(1), &mut self.scratch);
        let (venue, vi) = pick(&mut f.rng, &f.venues, at(2), &mut self.scratch);
        s.ring[slot_idx].fields = [si, ai, vi];
        let target_id = target.map(|t| {
            let start = self.scratch.len();
            push_clordid(&mut self.scratch, &s.prefix, s.width, t);
            start..self.scratch.len()
        });
        let poss_resend =
            !queue && self.poss_resend_every > 0 && num.is_multiple_of(self.poss_resend_every);
        let sending_time: [u8; 21] = self.clock.cached().try_into().unwrap_or([b'0'; 21]);
        for resend in [false, true] {
            if resend && !poss_resend {
                break;
            }
            let enc = s.session.header(&mut self.enc, &mut self.clock, mt);
            if resend {
                // A PossResend: a new MsgSeqNum, the same order, and when it was first sent.
                enc.field(97, b"Y").field(122, &sending_time);
            }
            if let Some(r) = &target_id {
                enc.field(tag::ORIG_CL_ORD_ID, &self.scratch[r.clone()]);
            }
            enc.field(tag::CL_ORD_ID, &self.id);
            if let Some(r) = &account {
                enc.field(1, &self.scratch[r.clone()]);
            }
            if kind != b'F' {
                enc.field(21, b"1");
            }
            let symbol = sym.as_ref().map_or(SYMBOL, |r| &self.scratch[r.clone()]);
            enc.field(55, symbol)
                .field(54, &[side])
                .field(60, self.clock.cached());
            if let Some(r) = &venue {
                enc.field(100, &self.scratch[r.clone()]);
            }
            match kind {
                b'F' => {
                    enc.field_uint(38, QTY);
                }
                b'G' => {
                    enc.field_uint(38, QTY * 2).field(40, b"2").field(44, PRICE);
                }
                _ => {
                    enc.field_uint(38, QTY).field(40, b"2").field(44, PRICE);
                }
            }
            if !self.pad.is_empty() {
                enc.field(58, &self.pad);
            }
            if queue {
                s.queued_now += 1;
                s.session
                    .finish_queued(&mut self.enc, &mut self.scratch, num);
                return Ok(());
            }
            if resend || !self.split || s.out.pending() > 0 {
                let now = monotonic_ns();
                s.session
                    .finish_stamped(&mut self.enc, s.out.buf(), now, num);
                s.out.stamp(num);
                continue;
            }
            return self.write_split(s, num);
        }
        Ok(())
    }

    /// Split mode: two write() calls, cut in the middle of the 11= value.
    fn write_split(&mut self, s: &mut Sess, num: u64) -> io::Result<()> {
        let now = monotonic_ns();
        // Split mode: two write() calls, cut in the middle of the 11= value.
        self.scratch.clear();
        s.session.finish(&mut self.enc, &mut self.scratch, now);
        let value = memmem::find(&self.scratch, b"\x0111=").map_or(0, |p| p + 4);
        let value_len = memchr::memchr(0x01, &self.scratch[value..]).unwrap_or(0);
        let cut = (value + value_len / 2).max(1);
        let ts = monotonic_ns();
        mark_sent(&mut self.c, &mut s.ring, s.mask, num, ts);
        let mut written = 0;
        for part in [&self.scratch[..cut], &self.scratch[cut..]] {
            if written < cut && part.len() + written > cut {
                break; // first part incomplete: the rest goes through the buffer
            }
            match s.stream.write(part) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            }
            if written < cut {
                break;
            }
        }
        s.out.buf().extend_from_slice(&self.scratch[written..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clordids_round_trip() {
        for (prefix, width) in [(&b"S1-"[..], 17usize), (b"", 1), (b"X", 63)] {
            for num in [1u64, 9, 10, 123_456_789, u64::MAX / 10] {
                let mut id = Vec::new();
                push_clordid(&mut id, prefix, width, num);
                assert!(id.len() >= prefix.len() + width);
                assert_eq!(parse_clordid(prefix, &id), Some(num));
            }
        }
        assert_eq!(parse_clordid(b"S1-", b"S2-001"), None);
        assert_eq!(parse_clordid(b"S1-", b"S1-0x1"), None);
    }
}
