//! Timestamps from the wire (#34): the stamp a tap or an aggregation switch puts in each
//! Ethernet frame, in hardware, to the nanosecond — read instead of the capture host's own
//! later, jittery time.
//!
//! Found by themselves (`--wire-timestamps auto`): the Arista 7130 MetaWatch and Cisco Nexus
//! 3550 HPT trailers, which begin with the frame's original FCS, so one is taken only when
//! the CRC-32 of the frame up to it equals its first four bytes (a chance match is ~2^-32;
//! Wireshark's time-window heuristic, ~3e-4, is why it is off there by default); the Ixia
//! and Gigamon trailers, by their signature and checksum ([`signed`]); and the Arista 7280
//! header after the source MAC, by its registered EtherType. A trailer can only start where
//! the IP datagram ends (or at 60/64 bytes, the minimum frame with or without its FCS, for
//! frames that carry no IP), and the capture NIC may have kept the trailer's own new FCS
//! after it. A frame with no byte past its datagram costs two comparisons.
//!
//! A tapped frame mirrored through a tunnel (GRETAP, ERSPAN, VXLAN) carries its trailer at
//! the end of the inner Ethernet frame, inside the outer datagram: that frame is looked at
//! first, as a frame of its own (the FCS check over it alone, the 60/64-byte starts from its
//! first byte), then the outer frame's own trailer after the outer datagram
//! ([`crate::decode::TcpPacket::inner_ethernet`] says where the inner frame lies).
//!
//! Once one kind is found it is locked for the run: later frames are read as that kind
//! only, and frames without it are counted (`trailer_missing`, host time used), as are
//! frames whose bytes after the datagram fail the check (`trailer_fcs_mismatch`: counted,
//! not used). Layouts: docs/tap.md.
//!
//! Read only when asked for by name, never by `auto` (nothing in them rules out a chance
//! match): the tick counters mapped to UTC by keyframes, Arista 7150 and ExaLINK Fusion
//! ([`ticks`]), and the VSS/APCON trailer and the Arista 7280's source-MAC stamp
//! ([`weak`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;

use crate::decode::{decode, Decoded, LinkType};
use fixscope_model::wire::{be16, offsets_in, IPPROTO_TCP};

/// `--wire-timestamps` of this run ([`choose`]).
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// Sets `--wire-timestamps` for the run: the command line calls it once, before any
/// capture is read, and every frame classifier built afterwards (pcap readers, shard
/// workers, the tap) starts from it. A process-wide choice, so the flag does not travel
/// through every reader's signature; it is never changed during a run.
pub fn choose(mode: WireStampMode) {
    CHOSEN.store(mode as u8, Ordering::Relaxed);
}

/// The run's `--wire-timestamps` ([`WireStampMode::Auto`] unless [`choose`]n).
pub fn chosen() -> WireStampMode {
    WireStampMode::from_repr(CHOSEN.load(Ordering::Relaxed))
}

/// Which trailers to look for (`--wire-timestamps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum WireStampMode {
    /// MetaWatch and HPT, found by their FCS check; the first found is locked.
    #[default]
    Auto = 0,
    /// The capture's own timestamps only.
    Off = 1,
    MetaWatch = 2,
    Hpt = 3,
    AristaHeader = 4,
    Ixia = 5,
    Gigamon = 6,
    // The weak forms, only by name (never `auto`): from here on.
    /// Arista 7150 ticks and keyframes.
    Arista7150 = 7,
    /// ExaLINK Fusion ticks and keyframes.
    Fusion = 8,
    /// VSS Monitoring / APCON trailer.
    Vss = 9,
    /// Arista 7280 stamp in the source MAC.
    Arista7280Mac = 10,
}

impl WireStampMode {
    /// Every mode, in `--wire-timestamps`'s order.
    pub const ALL: [WireStampMode; 11] = [
        WireStampMode::Auto,
        WireStampMode::Off,
        WireStampMode::MetaWatch,
        WireStampMode::Hpt,
        WireStampMode::AristaHeader,
        WireStampMode::Ixia,
        WireStampMode::Gigamon,
        WireStampMode::Arista7150,
        WireStampMode::Fusion,
        WireStampMode::Vss,
        WireStampMode::Arista7280Mac,
    ];

    /// The mode's `--wire-timestamps` value.
    pub fn name(self) -> &'static str {
        match self {
            WireStampMode::Auto => "auto",
            WireStampMode::Off => "off",
            WireStampMode::MetaWatch => "metawatch",
            WireStampMode::Hpt => "hpt",
            WireStampMode::AristaHeader => "arista-header",
            WireStampMode::Ixia => "ixia",
            WireStampMode::Gigamon => "gigamon",
            WireStampMode::Arista7150 => "arista-7150",
            WireStampMode::Fusion => "fusion",
            WireStampMode::Vss => "vss",
            WireStampMode::Arista7280Mac => "arista-7280-mac",
        }
    }

    /// The mode stored as `n` ([`choose`]).
    fn from_repr(n: u8) -> Self {
        match n {
            1 => WireStampMode::Off,
            2 => WireStampMode::MetaWatch,
            3 => WireStampMode::Hpt,
            4 => WireStampMode::AristaHeader,
            5 => WireStampMode::Ixia,
            6 => WireStampMode::Gigamon,
            7 => WireStampMode::Arista7150,
            8 => WireStampMode::Fusion,
            9 => WireStampMode::Vss,
            10 => WireStampMode::Arista7280Mac,
            _ => WireStampMode::Auto,
        }
    }

    /// One of the forms nothing can check, read only when asked for.
    #[inline(always)]
    fn is_weak(self) -> bool {
        self as u8 >= WireStampMode::Arista7150 as u8
    }

    /// A tick form: its keyframes (not TCP) must reach [`WireStamps::keyframe`].
    pub fn needs_keyframes(self) -> bool {
        matches!(self, WireStampMode::Arista7150 | WireStampMode::Fusion)
    }
}

impl std::str::FromStr for WireStampMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        WireStampMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = WireStampMode::ALL.iter().map(|m| m.name()).collect();
                format!("--wire-timestamps {s}: one of {}", names.join(", "))
            })
    }
}

/// A trailer kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrailerKind {
    /// Arista 7130 MetaWatch (ex-Metamako): stamps the start of the frame; UTC.
    MetaWatch,
    /// Cisco Nexus 3550 HPT (ex-Exablaze): TAI unless a UTC offset is configured.
    Hpt,
    /// Arista 7280R/R3: a header after the source MAC (EtherType 0xD28B), TAI or UTC as
    /// its version says (TAI is read back to UTC).
    AristaHeader,
    /// Ixia (Keysight) network visibility: a trailer with signature 0xAF12 and a checksum.
    Ixia,
    /// Gigamon: a TLV trailer ending in EtherType 0x22E5 and a checksum.
    Gigamon,
    /// Arista 7150: 31-bit ASIC ticks after the datagram, mapped to UTC by keyframes
    /// (IPv4 protocol 253) of the device.
    Arista7150,
    /// Cisco (Exablaze) ExaLINK Fusion: 32-bit ticks mapped to UTC by keyframes
    /// (EtherType 0x88B5).
    Fusion,
    /// VSS Monitoring / APCON: seconds and nanoseconds after the datagram.
    Vss,
    /// Arista 7280 `mac timestamp replace source-mac`: 48-bit time in the source MAC.
    Arista7280Mac,
}

impl TrailerKind {
    pub fn name(self) -> &'static str {
        match self {
            TrailerKind::MetaWatch => "metawatch",
            TrailerKind::Hpt => "hpt",
            TrailerKind::AristaHeader => "arista-header",
            TrailerKind::Ixia => "ixia",
            TrailerKind::Gigamon => "gigamon",
            TrailerKind::Arista7150 => "arista-7150",
            TrailerKind::Fusion => "fusion",
            TrailerKind::Vss => "vss",
            TrailerKind::Arista7280Mac => "arista-7280-mac",
        }
    }
}

/// One frame's hardware stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireStamp {
    pub kind: TrailerKind,
    pub device: u16,
    pub port: u8,
    /// Nanoseconds since the UNIX epoch, in the device's clock.
    pub unix_ns: u64,
}

/// What the trailers did, as source counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TrailerCounters {
    /// Frames timed by their trailer's stamp.
    pub trailer_timestamps: u64,
    /// Frames without the locked trailer (timed by the capture's own time).
    pub trailer_missing: u64,
    /// Frames with bytes after their datagram whose FCS check failed (not used).
    pub trailer_fcs_mismatch: u64,
    /// The first stamp's kind and device (what the run's clock is called); not a counter.
    #[serde(skip)]
    pub first: Option<(TrailerKind, u16)>,
    /// The first stamp's time minus the capture's time of its frame: how far the tap's
    /// clock runs ahead of the capture host's (37 s: TAI against UTC); not a counter.
    #[serde(skip)]
    pub first_offset_ns: Option<i64>,
    /// Keyframes read (`arista-7150`, `fusion`): none says the capture (or its filter)
    /// left them out; not a counter.
    #[serde(skip)]
    pub keyframes: u64,
}

impl TrailerCounters {
    /// One frame, which the capture stamped at `host_ns`, timed by `stamp`.
    fn stamped(&mut self, stamp: &WireStamp, host_ns: u64) {
        self.trailer_timestamps += 1;
        if self.first.is_none() {
            self.first = Some((stamp.kind, stamp.device));
            self.first_offset_ns = Some(stamp.unix_ns as i64 - host_ns as i64);
        }
    }

    /// The tap's clock is TAI and the host's UTC: the first stamp runs 37 s (± 1 s)
    /// ahead of the capture's time.
    pub fn tai_against_utc(&self) -> bool {
        self.first_offset_ns
            .is_some_and(|d| (d - TAI_MINUS_UTC_NS as i64).abs() < 1_000_000_000)
    }
}

/// What a run's clock is called in its reports when the frames carry hardware stamps:
/// `metawatch (device 7)`, `hpt (device 2)`, `arista-7150 (device 888)`, `arista-header`,
/// `ixia`, `gigamon`, `fusion`, `vss`, `arista-7280-mac`.
pub fn clock_name(kind: TrailerKind, device: u16) -> String {
    match kind {
        TrailerKind::MetaWatch | TrailerKind::Hpt | TrailerKind::Arista7150 => {
            format!("{} (device {device})", kind.name())
        }
        _ => kind.name().to_string(),
    }
}

/// The smallest trailer: original FCS 4, time 8, flags and ids 4.
const MIN_TRAILER: usize = 16;
/// Ethernet's minimum frame without and with its FCS.
const MIN_FRAME: [usize; 2] = [60, 64];

/// Finds and reads trailers, locking the first kind found.
#[derive(Clone, Debug, Default)]
pub struct WireStamps {
    mode: WireStampMode,
    /// `off` or a weak form: the trailer search is not for this run (one test per frame,
    /// as `off` alone was).
    bypass: bool,
    locked: Option<TrailerKind>,
    /// The keyframes of a tick form (`arista-7150`, `fusion`).
    ticks: Option<Box<ticks::TickClock>>,
}

impl WireStamps {
    pub fn new(mode: WireStampMode) -> Self {
        WireStamps {
            mode,
            bypass: mode == WireStampMode::Off || mode.is_weak(),
            locked: match mode {
                WireStampMode::MetaWatch => Some(TrailerKind::MetaWatch),
                WireStampMode::Hpt => Some(TrailerKind::Hpt),
                WireStampMode::AristaHeader => Some(TrailerKind::AristaHeader),
                WireStampMode::Ixia => Some(TrailerKind::Ixia),
                WireStampMode::Gigamon => Some(TrailerKind::Gigamon),
                WireStampMode::Arista7150 => Some(TrailerKind::Arista7150),
                WireStampMode::Fusion => Some(TrailerKind::Fusion),
                WireStampMode::Vss => Some(TrailerKind::Vss),
                WireStampMode::Arista7280Mac => Some(TrailerKind::Arista7280Mac),
                WireStampMode::Auto | WireStampMode::Off => None,
            },
            ticks: match mode {
                WireStampMode::Arista7150 => Some(ticks::Counter::Arista7150),
                WireStampMode::Fusion => Some(ticks::Counter::Fusion),
                _ => None,
            }
            .map(|c| Box::new(ticks::TickClock::new(c))),
        }
    }

    /// Keyframes must reach [`WireStamps::keyframe`] (frames that carry no TCP too).
    #[inline]
    pub fn needs_keyframes(&self) -> bool {
        self.ticks.is_some()
    }

    /// Takes `frame` (Ethernet, got at `host_ns`) when it is a keyframe of the tick form
    /// asked for (`arista-7150`, `fusion`): true then (it carries no stamp of its own).
    pub fn keyframe(&mut self, frame: &[u8], host_ns: u64, counters: &mut TrailerCounters) -> bool {
        let Some(clock) = self.ticks.as_deref_mut() else {
            return false;
        };
        let Some(kf) = read_keyframe(self.mode, frame, host_ns) else {
            return false;
        };
        if clock.keyframe(kf) {
            counters.keyframes += 1;
        }
        true
    }

    /// The kind in use (found or asked for).
    pub fn kind(&self) -> Option<TrailerKind> {
        self.locked
    }

    /// The hardware stamp of an Ethernet `frame` the capture stamped at `host_ns`, when it
    /// carries one (inside a tunnel too); counts what it found in `counters`.
    #[inline]
    pub fn stamp(
        &mut self,
        frame: &[u8],
        host_ns: u64,
        counters: &mut TrailerCounters,
    ) -> Option<WireStamp> {
        if self.ticks.is_some() && self.keyframe(frame, host_ns, counters) {
            return None;
        }
        let datagram = datagram(frame);
        // A tunnel (an IP protocol other than TCP) may carry a segment in an Ethernet frame:
        // the decoder says where that frame and the segment's datagram lie.
        if matches!(datagram, Some((_, Some(proto))) if proto != IPPROTO_TCP) {
            if let Ok(Decoded::Tcp(t)) = decode(LinkType::Ethernet, frame) {
                if let (Some(inner), 0) = (t.inner_ethernet, t.missing_tail) {
                    let end =
                        t.payload.as_ptr() as usize - frame.as_ptr() as usize + t.payload.len();
                    return self.stamp_after(frame, Some(end), Some(inner), host_ns, counters);
                }
            }
        }
        let l3_end = datagram.map(|(end, _)| end);
        self.stamp_after(frame, l3_end, None, host_ns, counters)
    }

    /// [`WireStamps::stamp`] for a frame whose IP datagram is known to end at
    /// `l3_end` (the decoder found it): the common case, no byte after the datagram, is
    /// two comparisons. `inner` is the innermost Ethernet frame of a tunnel, a part of
    /// `frame`, when the datagram came out of one
    /// ([`crate::decode::TcpPacket::inner_ethernet`]): a trailer is looked for at that
    /// frame's end first (its FCS checked over that frame alone), then after the outer
    /// datagram, which ends where `inner` does. (A part of `frame` rather than its offsets,
    /// so a plain frame's path does not work them out.)
    #[inline(always)]
    pub fn stamp_after(
        &mut self,
        frame: &[u8],
        l3_end: Option<usize>,
        inner: Option<&[u8]>,
        host_ns: u64,
        counters: &mut TrailerCounters,
    ) -> Option<WireStamp> {
        if self.bypass {
            return self.weak(frame, l3_end, host_ns, counters);
        }
        if frame.get(12..14) == Some(&ARISTA_ETHERTYPE.to_be_bytes()[..]) {
            return self.arista(frame, host_ns, counters);
        }
        // Inside a tunnel the inner datagram ends before the outer one, so no room after it
        // is no room for either frame's trailer.
        if !room_for_trailer(frame, l3_end) {
            // The common case of a capture without trailers.
            if self.locked.is_some() {
                counters.trailer_missing += 1;
            }
            return None;
        }
        self.find(frame, l3_end, inner, host_ns, counters)
    }

    /// A stamp of the weak forms, read where the asked-for form puts it (none with `off`).
    #[inline(never)]
    fn weak(
        &mut self,
        frame: &[u8],
        l3_end: Option<usize>,
        host_ns: u64,
        counters: &mut TrailerCounters,
    ) -> Option<WireStamp> {
        let kind = self.locked?;
        let found = match (self.mode, self.ticks.as_deref()) {
            (WireStampMode::Vss, _) => weak::vss(frame, l3_end),
            (WireStampMode::Arista7280Mac, _) => weak::arista_mac(frame, host_ns),
            (WireStampMode::Arista7150 | WireStampMode::Fusion, Some(clock)) => {
                match ticks::tick_field(frame, l3_end) {
                    ticks::TickField::Raw(raw) => match clock.time(raw, host_ns) {
                        Some(unix_ns) => weak::Found::Time { unix_ns, port: 0 },
                        // Before the first keyframe, or long after the last.
                        None => weak::Found::Missing,
                    },
                    ticks::TickField::Missing => weak::Found::Missing,
                    ticks::TickField::Mismatch => weak::Found::Mismatch,
                }
            }
            // `off`.
            _ => return None,
        };
        match found {
            weak::Found::Time { unix_ns, port } => {
                let device = self.ticks.as_deref().and_then(|c| c.device()).unwrap_or(0);
                let stamp = WireStamp {
                    kind,
                    device,
                    port,
                    unix_ns,
                };
                counters.stamped(&stamp, host_ns);
                Some(stamp)
            }
            weak::Found::Missing => {
                counters.trailer_missing += 1;
                None
            }
            weak::Found::Mismatch => {
                counters.trailer_fcs_mismatch += 1;
                None
            }
        }
    }

    /// A frame with Arista's timestamp header (a 7280 in tap-aggregation mode).
    #[cold]
    fn arista(
        &mut self,
        frame: &[u8],
        host_ns: u64,
        counters: &mut TrailerCounters,
    ) -> Option<WireStamp> {
        if self.locked.is_some_and(|k| k != TrailerKind::AristaHeader) {
            return None;
        }
        match arista_header(frame, host_ns) {
            Some((stamp, _)) => {
                self.locked = Some(TrailerKind::AristaHeader);
                counters.stamped(&stamp, host_ns);
                Some(stamp)
            }
            None => {
                counters.trailer_fcs_mismatch += 1;
                None
            }
        }
    }

    /// A frame with room for a trailer after its datagram: the stamp found (the kind then
    /// locked) and counted, or a failed check or no trailer counted once the kind is.
    #[cold]
    fn find(
        &mut self,
        frame: &[u8],
        l3_end: Option<usize>,
        inner: Option<&[u8]>,
        host_ns: u64,
        counters: &mut TrailerCounters,
    ) -> Option<WireStamp> {
        let found = match inner.and_then(|inner| offsets_in(frame, inner)) {
            None => self.search(frame, l3_end, host_ns),
            Some(inner) => self.search_tunnelled(frame, l3_end, inner, host_ns),
        };
        match found {
            Search::Found(s) => {
                self.locked = Some(s.kind);
                counters.stamped(&s, host_ns);
                Some(s)
            }
            Search::Failed if self.locked.is_some() => {
                counters.trailer_fcs_mismatch += 1;
                None
            }
            Search::NoRoom if self.locked.is_some() => {
                counters.trailer_missing += 1;
                None
            }
            Search::Failed | Search::NoRoom => None,
        }
    }

    /// A tunnelled frame (`inner`: its innermost Ethernet frame, `l3_end`: where the
    /// datagram inside that ends): the trailer at the inner frame's end first — its FCS
    /// covers the inner frame alone, its 60/64-byte starts count from that frame's first
    /// byte —, then the outer frame's own, after the outer datagram (where `inner` ends).
    fn search_tunnelled(
        &self,
        frame: &[u8],
        l3_end: Option<usize>,
        inner: Range<usize>,
        host_ns: u64,
    ) -> Search {
        let inner_end = l3_end.and_then(|end| end.checked_sub(inner.start));
        let outer_end = Some(inner.end);
        let in_inner = match frame.get(inner) {
            Some(inner) if room_for_trailer(inner, inner_end) => {
                self.search(inner, inner_end, host_ns)
            }
            _ => Search::NoRoom,
        };
        match in_inner {
            Search::Found(s) => Search::Found(s),
            _ if room_for_trailer(frame, outer_end) => match self.search(frame, outer_end, host_ns)
            {
                Search::Found(s) => Search::Found(s),
                _ => Search::Failed,
            },
            // Nothing after the outer datagram: what the inner frame had says.
            other => other,
        }
    }

    /// The trailer after the datagram of `frame` (which ends at `l3_end`), which has room
    /// for one: [`Search::Failed`] when no check passes. (Inlined, with what it calls: a
    /// trailed capture reads every frame here, and the calls were 1% of its instructions.)
    #[inline(always)]
    fn search(&self, frame: &[u8], l3_end: Option<usize>, host_ns: u64) -> Search {
        if let Some(s) = self.find_signed(frame, l3_end) {
            return Search::Found(s);
        }
        let mut starts = [l3_end, Some(MIN_FRAME[0]), Some(MIN_FRAME[1])];
        if let Some(end) = l3_end {
            // A trailer never starts inside the datagram.
            for s in starts.iter_mut().skip(1) {
                *s = s.filter(|&s| s > end);
            }
        }
        for start in starts.into_iter().flatten() {
            if frame.len() < start + MIN_TRAILER {
                continue;
            }
            let fcs = u32::from_le_bytes([
                frame[start],
                frame[start + 1],
                frame[start + 2],
                frame[start + 3],
            ]);
            if crc32fast::hash(&frame[..start]) != fcs {
                continue;
            }
            // The trailer runs to the frame's end, or to 4 bytes before it when those are
            // the new FCS of everything before them (the CRC says which: a MetaWatch
            // trailer with one TLV word is as long as one without and an FCS kept).
            let len = frame.len();
            let new_fcs = len >= start + MIN_TRAILER + 4
                && crc32fast::hash(&frame[..len - 4]).to_le_bytes() == frame[len - 4..];
            let end = if new_fcs { len - 4 } else { len };
            if let Some(s) = self.read(&frame[start..end], host_ns) {
                return Search::Found(s);
            }
        }
        Search::Failed
    }

    /// An Ixia or Gigamon trailer at the frame's end (or before a kept FCS), after the
    /// datagram: found by its signature and checksum.
    #[inline(always)]
    fn find_signed(&self, frame: &[u8], l3_end: Option<usize>) -> Option<WireStamp> {
        let wanted = |k: TrailerKind| self.locked.is_none_or(|l| l == k);
        let (want_ixia, want_gigamon) = (wanted(TrailerKind::Ixia), wanted(TrailerKind::Gigamon));
        if !want_ixia && !want_gigamon {
            return None;
        }
        let first = l3_end.unwrap_or(0).min(frame.len());
        let len = frame.len();
        for end in [len, len.saturating_sub(4)] {
            let Some(tail) = frame.get(first..end) else {
                continue;
            };
            let found = match (
                want_ixia.then(|| signed::ixia(tail)).flatten(),
                want_gigamon,
            ) {
                (Some(t), _) => Some((TrailerKind::Ixia, t)),
                (None, true) => signed::gigamon(tail).map(|t| (TrailerKind::Gigamon, t)),
                (None, false) => None,
            };
            if let Some((kind, (seconds, nanos))) = found {
                return Some(WireStamp {
                    kind,
                    device: 0,
                    port: 0,
                    unix_ns: seconds * 1_000_000_000 + nanos,
                });
            }
        }
        None
    }

    /// Reads `t` (a trailer whose FCS check passed) as the locked kind, or as the one whose
    /// time lies nearer the capture's when both layouts fit (a 16-byte trailer).
    #[inline(always)]
    fn read(&self, t: &[u8], host_ns: u64) -> Option<WireStamp> {
        let candidates = [metawatch(t), hpt(t)];
        match self.locked {
            Some(kind) => candidates.into_iter().flatten().find(|s| s.kind == kind),
            None => candidates
                .into_iter()
                .flatten()
                .min_by_key(|s| s.unix_ns.abs_diff(host_ns)),
        }
    }
}

/// What the bytes after a datagram turned out to be.
enum Search {
    /// A trailer whose check passed.
    Found(WireStamp),
    /// Too few bytes after the datagram for any trailer.
    NoRoom,
    /// Bytes enough, but no check passed.
    Failed,
}

/// Whether `frame` has bytes enough after its datagram (ending at `l3_end`, or no IP) for
/// the shortest trailer.
#[inline(always)]
fn room_for_trailer(frame: &[u8], l3_end: Option<usize>) -> bool {
    let first = l3_end.map_or(MIN_FRAME[0], |end| end.max(MIN_FRAME[0]));
    frame.len() >= first + signed::IXIA_LEN
}

/// Where the IP datagram of an Ethernet frame ends (VLAN tags skipped), and its protocol
/// (IPv6: its first next header) when captured; `None` when the frame carries no IP.
fn datagram(frame: &[u8]) -> Option<(usize, Option<u8>)> {
    let mut at = 12;
    loop {
        if frame.len() < at + 2 {
            return None;
        }
        match be16(frame, at) {
            0x8100 | 0x88A8 | 0x9100 => at += 4,
            ARISTA_ETHERTYPE => at += arista_header(frame, 0)?.1,
            0x0800 => {
                let ip = at + 2;
                if frame.len() < ip + 4 {
                    return None;
                }
                let total = usize::from(be16(frame, ip + 2));
                return (total > 0).then_some((ip + total, frame.get(ip + 9).copied()));
            }
            0x86DD => {
                let ip = at + 2;
                if frame.len() < ip + 6 {
                    return None;
                }
                let payload = usize::from(be16(frame, ip + 4));
                return (payload > 0).then_some((ip + 40 + payload, frame.get(ip + 6).copied()));
            }
            _ => return None,
        }
    }
}

pub use fixscope_model::wire::ARISTA_ETHERTYPE;
/// TAI − UTC since 2017-01-01 (no leap second since).
const TAI_MINUS_UTC_NS: u64 = 37_000_000_000;

/// Arista's timestamp header at a frame's byte 12: EtherType 0xD28B · subtype 1 · version
/// (0x0010 64-bit TAI, 0x0110 64-bit UTC, 0x0020 48-bit TAI, 0x0120 48-bit UTC) · time
/// (64-bit: seconds 4, ns 4; 48-bit: the low 16 bits of the seconds, ns 4) · the original
/// EtherType. The stamp, and the header's length before the original EtherType.
pub fn arista_header(frame: &[u8], host_ns: u64) -> Option<(WireStamp, usize)> {
    if frame.len() < 12 + 6 || be16(frame, 12) != ARISTA_ETHERTYPE || be16(frame, 14) != 1 {
        return None;
    }
    let version = be16(frame, 16);
    let (wide, tai) = match version {
        0x0010 => (true, true),
        0x0110 => (true, false),
        0x0020 => (false, true),
        0x0120 => (false, false),
        _ => return None,
    };
    let time_len = if wide { 8 } else { 6 };
    if frame.len() < 18 + time_len + 2 {
        return None;
    }
    let (seconds, nanos) = if wide {
        (u64::from(be32(frame, 18)), u64::from(be32(frame, 22)))
    } else {
        // 16 bits of seconds: the rest from the capture's clock, the nearest match.
        let host_s = host_ns / 1_000_000_000 + if tai { 37 } else { 0 };
        let s = weak::nearest_seconds(u64::from(be16(frame, 18)), host_s);
        (s, u64::from(be32(frame, 20)))
    };
    if nanos >= 1_000_000_000 {
        return None;
    }
    let mut unix_ns = seconds * 1_000_000_000 + nanos;
    if tai {
        unix_ns = unix_ns.checked_sub(TAI_MINUS_UTC_NS)?;
    }
    Some((
        WireStamp {
            kind: TrailerKind::AristaHeader,
            device: 0,
            port: 0,
            unix_ns,
        },
        6 + time_len,
    ))
}

/// A frame with Arista's 64-bit UTC timestamp header inserted after its source MAC (test
/// fixtures and examples).
pub fn with_arista_header(frame: &[u8], unix_ns: u64) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&ARISTA_ETHERTYPE.to_be_bytes());
    f.extend_from_slice(&1u16.to_be_bytes());
    f.extend_from_slice(&0x0110u16.to_be_bytes());
    f.extend_from_slice(&((unix_ns / 1_000_000_000) as u32).to_be_bytes());
    f.extend_from_slice(&((unix_ns % 1_000_000_000) as u32).to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

/// A frame with its source MAC replaced by an Arista 7280's 48-bit stamp of `unix_ns`
/// (`mac timestamp replace source-mac`; test fixtures).
pub fn with_mac_stamp(frame: &[u8], unix_ns: u64) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[6..8].copy_from_slice(&((unix_ns / 1_000_000_000) as u16).to_be_bytes());
    f[8..12].copy_from_slice(&((unix_ns % 1_000_000_000) as u32).to_be_bytes());
    f
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// MetaWatch: FCS 4 · TLV words 4×n · seconds 4 · nanoseconds 4 · flags 1 · device 2 ·
/// port 1, big-endian.
fn metawatch(t: &[u8]) -> Option<WireStamp> {
    let n = t.len();
    if n < MIN_TRAILER || !(n - MIN_TRAILER).is_multiple_of(4) {
        return None;
    }
    let flags = t[n - 4];
    let has_tlvs = n > MIN_TRAILER;
    // Flag 0x02 says TLVs follow the FCS; unknown flag bits are zero.
    if has_tlvs != (flags & 0x02 != 0) || flags & 0xE8 != 0 {
        return None;
    }
    let seconds = u64::from(be32(t, n - 12));
    let nanos = u64::from(be32(t, n - 8));
    if nanos >= 1_000_000_000 {
        return None;
    }
    Some(WireStamp {
        kind: TrailerKind::MetaWatch,
        device: be16(t, n - 3),
        port: t[n - 1],
        unix_ns: seconds * 1_000_000_000 + nanos,
    })
}

/// HPT: FCS 4 · device 1 · port 1 · seconds 4 · fraction of a second 5 (2^-40 s) · flags 1.
fn hpt(t: &[u8]) -> Option<WireStamp> {
    if t.len() != MIN_TRAILER {
        return None;
    }
    let seconds = u64::from(be32(t, 6));
    let fraction = t[10..15]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    // fraction < 2^40, so fraction × 10^9 < 2^70: in u128.
    let nanos = ((u128::from(fraction) * 1_000_000_000) >> 40) as u64;
    Some(WireStamp {
        kind: TrailerKind::Hpt,
        device: u16::from(t[4]),
        port: t[5],
        unix_ns: seconds * 1_000_000_000 + nanos,
    })
}

/// The trailer bytes a device appends to `frame` for `stamp` (test fixtures and the
/// benchmarks' captures): the original FCS, the stamp, and a new FCS when `new_fcs`.
pub fn trailer_for(frame: &[u8], stamp: &WireStamp, new_fcs: bool) -> Vec<u8> {
    let mut t = crc32fast::hash(frame).to_le_bytes().to_vec();
    let seconds = stamp.unix_ns / 1_000_000_000;
    let nanos = stamp.unix_ns % 1_000_000_000;
    match stamp.kind {
        // These two carry no original FCS: their own signature and checksum.
        TrailerKind::Ixia => t = signed::ixia_trailer(seconds, nanos),
        TrailerKind::Gigamon => t = signed::gigamon_trailer(seconds, nanos),
        // VSS: seconds · ns after the frame (no original FCS), a port stamp of 1 byte.
        TrailerKind::Vss => {
            t = (seconds as u32).to_be_bytes().to_vec();
            t.extend_from_slice(&(nanos as u32).to_be_bytes());
            t.push(stamp.port);
        }
        TrailerKind::Arista7150 | TrailerKind::Fusion => {
            panic!("a tick needs its device's keyframes: built by the tests")
        }
        TrailerKind::Arista7280Mac => panic!("a source-MAC stamp is no trailer: with_mac_stamp"),
        TrailerKind::MetaWatch => {
            t.extend_from_slice(&(seconds as u32).to_be_bytes());
            t.extend_from_slice(&(nanos as u32).to_be_bytes());
            t.push(0x01);
            t.extend_from_slice(&stamp.device.to_be_bytes());
            t.push(stamp.port);
        }
        TrailerKind::AristaHeader => panic!("an Arista header is no trailer: with_arista_header"),
        TrailerKind::Hpt => {
            t.push(stamp.device as u8);
            t.push(stamp.port);
            t.extend_from_slice(&(seconds as u32).to_be_bytes());
            // The smallest fraction that reads back as `nanos`: ceil(nanos × 2^40 / 10^9).
            let fraction = ((u128::from(nanos) << 40).div_ceil(1_000_000_000)) as u64;
            t.extend_from_slice(&fraction.to_be_bytes()[3..]);
            t.push(0);
        }
    }
    if new_fcs {
        let mut whole = frame.to_vec();
        whole.extend_from_slice(&t);
        t.extend_from_slice(&crc32fast::hash(&whole).to_le_bytes());
    }
    t
}

pub use ticks::{Keyframe, Rate};

/// The keyframe `frame` (Ethernet, got at `host_ns`) is for `mode`'s tick form, if it is
/// one (`arista-7150`, `fusion`; tests and tools reading keyframes themselves).
pub fn read_keyframe(mode: WireStampMode, frame: &[u8], host_ns: u64) -> Option<Keyframe> {
    let counter = match mode {
        WireStampMode::Arista7150 => ticks::Counter::Arista7150,
        WireStampMode::Fusion => ticks::Counter::Fusion,
        _ => return None,
    };
    ticks::keyframe(counter, frame, host_ns)
}

mod signed;
#[cfg(test)]
pub(crate) mod tests;
mod ticks;
mod weak;
