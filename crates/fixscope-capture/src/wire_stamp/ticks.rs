//! Tick counters mapped to UTC by keyframes (#34): the Arista 7150's 31-bit ASIC ticks and
//! the Cisco (Exablaze) ExaLINK Fusion's 32-bit counter. Each frame carries only its
//! counter's low bits, in 4 bytes after its datagram — replacing the FCS, or before it;
//! the device sends keyframes that pair a value of its free-running 64-bit counter with
//! UTC, and a frame's time is the keyframe's UTC plus the ticks between them.
//!
//! Nothing in those 4 bytes can be checked: any frame's last bytes read as some tick. That
//! is why these forms are read only when asked for (`--wire-timestamps arista-7150`,
//! `fusion`), never found by themselves.
//!
//! Which keyframe: the one read last (the capture's order is the order the host got the
//! frames in, whatever its clock did) fixes the counter's wrap — the tick difference is
//! taken signed, so a frame read after a keyframe that was sampled after it is not a wrap
//! later; a frame read long after the last keyframe (by the host's clock, forward) has
//! its wrap chosen by the host's clock instead. Its time is then taken from the keyframe nearest it in the device's own
//! counter, among the last few. Host stamps order keyframes and frames only roughly, and
//! the host's clock may step: the Arista samples have a host clock stepped back 2.9 s,
//! which a choice by host time gets wrong by a whole wrap.
//!
//! Layouts (big-endian; docs/tap.md):
//! - 7150 keyframe: an IPv4 datagram of protocol 253 whose payload is asic_time u64 ·
//!   utc_ns u64 · last_sync u64 · [skew a u64 · skew b u64, the v2 "fields skew" form] ·
//!   keyframe_ts u64 · drops u64 · device u16 · egress interface u16 · fcs_type u8 (1 tick
//!   before the FCS, 2 tick replaces it) · reserved u8: 46 bytes (v1) or 62 (v2). ns per
//!   tick = 20/7 × a / b with the skew (the samples' tick runs at 318.18 MHz = 350 MHz ×
//!   b/a); v1 keyframes carry none: their rate is measured between keyframes.
//! - 7150 tick in a frame: 32 bits whose bit 7 is not part of the tick: tick =
//!   (raw & 0xFFFFFF00) >> 1 | raw & 0x7F, the low 31 bits of asic_time.
//! - Fusion keyframe: EtherType 0x88B5 (or an IPv4 protocol 253 datagram, compat mode)
//!   whose payload is "EXKF" · version 1 · reserved 3 · utc_ns u64 · counter u64 · freq u64
//!   (Hz) · last_sync u64 (40 bytes); ns per tick = 10^9 / freq. Its tick: the counter's
//!   low 32 bits. (Fusion's compat mode with the 7150's 62-byte keyframe is the 7150 form.)

use fixscope_model::wire::be16;

/// The IP protocol of 7150 (and Fusion compat) keyframes.
pub(super) const KEYFRAME_PROTOCOL: u8 = 253;
/// The Fusion keyframe's EtherType (IEEE local experimental 1).
pub(super) const FUSION_ETHERTYPE: u16 = 0x88B5;
/// The Fusion keyframe's magic, as it is on the wire.
const FUSION_MAGIC: [u8; 4] = *b"EXKF";
/// Keyframes kept per device, the nearest of which times a frame.
const KEPT: usize = 8;
/// A frame more than this (host time) from the last keyframe is not timed.
const STALE_NS: u64 = 60_000_000_000;

/// Which device's counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Counter {
    /// Arista 7150: 31-bit ticks, nominally 350 MHz.
    Arista7150,
    /// ExaLINK Fusion: 32-bit ticks at the keyframe's frequency (350 MHz).
    Fusion,
}

impl Counter {
    fn bits(self) -> u32 {
        match self {
            Counter::Arista7150 => 31,
            Counter::Fusion => 32,
        }
    }

    /// The tick a frame's 4 bytes hold.
    fn tick(self, raw: u32) -> u64 {
        match self {
            Counter::Arista7150 => u64::from(((raw & 0xFFFF_FF00) >> 1) | (raw & 0x7F)),
            Counter::Fusion => u64::from(raw),
        }
    }

    /// 350 MHz: 20/7 ns per tick.
    const NOMINAL: Rate = Rate { ns: 20, ticks: 7 };
}

/// Nanoseconds per tick, as the fraction `ns` / `ticks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub ns: u64,
    pub ticks: u64,
}

impl Rate {
    /// `ticks` ticks in nanoseconds, rounded to the nearest.
    fn ns_of(self, ticks: i128) -> i128 {
        let (num, den) = (ticks * i128::from(self.ns), i128::from(self.ticks));
        (2 * num + den).div_euclid(2 * den)
    }

    /// `ns` nanoseconds in ticks, rounded to the nearest.
    fn ticks_of(self, ns: i128) -> i128 {
        Rate {
            ns: self.ticks,
            ticks: self.ns,
        }
        .ns_of(ns)
    }

    /// Within `ppm` of `other`.
    fn agrees(self, other: Rate, ppm: u128) -> bool {
        let a = u128::from(self.ns) * u128::from(other.ticks);
        let b = u128::from(other.ns) * u128::from(self.ticks);
        a.abs_diff(b) * 1_000_000 <= ppm * b
    }
}

/// One keyframe: a value of the device's counter and the UTC it was taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keyframe {
    /// The free-running 64-bit counter (frames carry its low 31 or 32 bits).
    pub counter: u64,
    pub utc_ns: u64,
    /// The keyframe's own rate (7150 v2 skew, Fusion frequency); `None` for a 7150 v1.
    pub rate: Option<Rate>,
    pub device: u16,
    /// 7150: 1 the tick is before the FCS, 2 it replaces it; Fusion: 0.
    pub fcs_type: u8,
    /// When the capture got it.
    pub host_ns: u64,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// The EtherType after a frame's VLAN tags and where its payload starts.
fn ether_payload(frame: &[u8]) -> Option<(u16, usize)> {
    let mut at = 12;
    loop {
        if frame.len() < at + 2 {
            return None;
        }
        match be16(frame, at) {
            0x8100 | 0x88A8 | 0x9100 => at += 4,
            t => return Some((t, at + 2)),
        }
    }
}

/// The payload of an IPv4 datagram of protocol 253 in `frame`.
fn protocol_253(frame: &[u8], ip: usize) -> Option<&[u8]> {
    let header = frame.get(ip..ip + 20)?;
    if header[0] >> 4 != 4 || header[9] != KEYFRAME_PROTOCOL {
        return None;
    }
    let ihl = usize::from(header[0] & 0x0F) * 4;
    let total = usize::from(be16(header, 2));
    frame.get(ip + ihl..ip + total)
}

/// The keyframe `frame` is for `counter`'s device, if it is one; `host_ns` is when the
/// capture got it.
pub(super) fn keyframe(counter: Counter, frame: &[u8], host_ns: u64) -> Option<Keyframe> {
    let (ether_type, at) = ether_payload(frame)?;
    match (counter, ether_type) {
        (Counter::Arista7150, 0x0800) => arista_keyframe(protocol_253(frame, at)?, host_ns),
        (Counter::Fusion, 0x0800) => fusion_keyframe(protocol_253(frame, at)?, host_ns),
        (Counter::Fusion, FUSION_ETHERTYPE) => fusion_keyframe(&frame[at..], host_ns),
        _ => None,
    }
}

/// A 7150 keyframe's payload: 46 bytes (v1) or 62 (v2, with the skew).
fn arista_keyframe(p: &[u8], host_ns: u64) -> Option<Keyframe> {
    let skewed = match p.len() {
        46 => false,
        62 => true,
        _ => return None,
    };
    let tail = p.len() - 6;
    let rate = if skewed {
        let (a, b) = (be64(p, 24), be64(p, 32));
        // ns per tick = 20/7 × a/b; a skew the rate could not be is left out (nominal).
        a.checked_mul(20)
            .zip(b.checked_mul(7))
            .map(|(ns, ticks)| Rate { ns, ticks })
            .filter(|r| a > 0 && b > 0 && r.agrees(Counter::NOMINAL, 500_000))
    } else {
        None
    };
    Some(Keyframe {
        counter: be64(p, 0),
        utc_ns: be64(p, 8),
        rate,
        device: be16(p, tail),
        fcs_type: p[tail + 4],
        host_ns,
    })
}

/// A Fusion keyframe's payload (40 bytes, more when the frame was padded).
fn fusion_keyframe(p: &[u8], host_ns: u64) -> Option<Keyframe> {
    let magic = p.get(..5)?;
    // Version 1 carries "EXKF"; Cisco's decoder also takes version 0 with magic 1.
    let known = (magic[..4] == FUSION_MAGIC && magic[4] == 1)
        || (magic[..4] == 1u32.to_le_bytes() && magic[4] == 0);
    if !known || p.len() < 40 {
        return None;
    }
    let freq = be64(p, 24);
    if !(1_000_000..=10_000_000_000).contains(&freq) {
        return None;
    }
    Some(Keyframe {
        counter: be64(p, 16),
        utc_ns: be64(p, 8),
        rate: Some(Rate {
            ns: 1_000_000_000,
            ticks: freq,
        }),
        device: 0,
        fcs_type: 0,
        host_ns,
    })
}

/// Where a frame's tick is, or why it has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TickField {
    Raw(u32),
    /// No byte for a tick after the datagram.
    Missing,
    /// Bytes after the datagram that are neither a tick nor a tick and a valid FCS.
    Mismatch,
}

/// The tick of an Ethernet `frame` whose IP datagram ends at `l3_end` (`None`: no IP
/// length to go by). The tick follows the frame as it was on the wire (padded to 60
/// bytes): 4 bytes, or 8 when the capture kept the FCS after it (its CRC must hold).
/// Without an IP length: the 4 bytes before a valid FCS, else the last 4.
pub(super) fn tick_field(frame: &[u8], l3_end: Option<usize>) -> TickField {
    let len = frame.len();
    let fcs_holds =
        || len >= 8 && crc32fast::hash(&frame[..len - 4]).to_le_bytes() == frame[len - 4..];
    let start = match l3_end {
        Some(end) => {
            let start = end.max(60);
            match len.checked_sub(start) {
                Some(4) => start,
                Some(8) if fcs_holds() => start,
                None | Some(0) => return TickField::Missing,
                _ => return TickField::Mismatch,
            }
        }
        None if len < 64 => return TickField::Missing,
        None if fcs_holds() => len - 8,
        None => len - 4,
    };
    TickField::Raw(be32(frame, start))
}

/// A device's keyframes and the time of its ticks.
#[derive(Clone, Debug)]
pub(super) struct TickClock {
    counter: Counter,
    /// The device whose keyframes are used (the first one's); other devices' are ignored.
    device: Option<u16>,
    /// The last keyframes read, oldest first.
    kept: Vec<Keyframe>,
    /// 7150 v1 keyframes: the rate measured between the last two, once two successive
    /// measurements agree (a UTC step between two keyframes gives one that does not).
    measured: Option<Rate>,
    last_pair: Option<Rate>,
}

impl TickClock {
    pub(super) fn new(counter: Counter) -> Self {
        TickClock {
            counter,
            device: None,
            kept: Vec::with_capacity(KEPT),
            measured: None,
            last_pair: None,
        }
    }

    /// Takes a keyframe: false when it is another device's.
    pub(super) fn keyframe(&mut self, kf: Keyframe) -> bool {
        if *self.device.get_or_insert(kf.device) != kf.device {
            return false;
        }
        if kf.rate.is_none() {
            self.measure(&kf);
        }
        if self.kept.len() == KEPT {
            self.kept.remove(0);
        }
        self.kept.push(kf);
        true
    }

    /// A v1 keyframe: the rate since the previous keyframe, taken once it agrees with the
    /// one before (two successive measurements within 100 ppm: no UTC step in either).
    fn measure(&mut self, kf: &Keyframe) {
        let Some(last) = self.kept.last() else {
            return;
        };
        let ticks = kf.counter.wrapping_sub(last.counter);
        let ns = kf.utc_ns.wrapping_sub(last.utc_ns);
        // At least 0.1 s apart: a rate to a few ppm.
        if !(35_000_000..=1 << 40).contains(&ticks) || ns > 1 << 40 {
            return;
        }
        let pair = Rate { ns, ticks };
        if !pair.agrees(Counter::NOMINAL, 250_000) {
            self.last_pair = None;
            return;
        }
        if self.last_pair.is_some_and(|p| p.agrees(pair, 100)) {
            self.measured = Some(pair);
        }
        self.last_pair = Some(pair);
    }

    fn rate_of(&self, kf: &Keyframe) -> Rate {
        kf.rate.or(self.measured).unwrap_or(Counter::NOMINAL)
    }

    /// The device's first keyframe was read.
    pub(super) fn device(&self) -> Option<u16> {
        self.device
    }

    /// The UTC of the frame whose tick field holds `raw`, got by the capture at `host_ns`:
    /// `None` before the first keyframe or long after the last.
    pub(super) fn time(&self, raw: u32, host_ns: u64) -> Option<u64> {
        let anchor = self.kept.last()?;
        let host_elapsed = i128::from(host_ns) - i128::from(anchor.host_ns);
        if host_elapsed.unsigned_abs() > u128::from(STALE_NS) {
            return None;
        }
        let bits = self.counter.bits();
        let modulus = 1i128 << bits;
        let rate = self.rate_of(anchor);
        // The signed difference from the anchor's counter, modulo the wrap.
        let low = i128::from(anchor.counter) & (modulus - 1);
        let mut d = (i128::from(self.counter.tick(raw)) - low).rem_euclid(modulus);
        if d >= modulus / 2 {
            d -= modulus;
        }
        // Long after the anchor (a quarter of a wrap, 1.7 s at 318 MHz: keyframes lost):
        // the host's clock says how many wraps. Not long before it: no keyframe is read
        // that late, the host's clock stepped back (the signed difference stands).
        if host_elapsed > rate.ns_of(modulus / 4) {
            let expected = rate.ticks_of(host_elapsed);
            d += (2 * (expected - d) + modulus).div_euclid(2 * modulus) * modulus;
        }
        let at = i128::from(anchor.counter) + d;
        let nearest = self
            .kept
            .iter()
            .min_by_key(|k| (at - i128::from(k.counter)).unsigned_abs())?;
        let utc = i128::from(nearest.utc_ns)
            + self
                .rate_of(nearest)
                .ns_of(at - i128::from(nearest.counter));
        u64::try_from(utc).ok()
    }
}

#[cfg(test)]
mod tests;
