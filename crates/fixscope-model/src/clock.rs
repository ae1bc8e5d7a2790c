//! Clocks of the host: CLOCK_MONOTONIC (what `bpf_ktime_get_ns` reads, so the timebase of
//! live timestamps and of the simulator's ground truth), CLOCK_REALTIME (UNIX time), the
//! offset between the two, and ISO-8601 UTC formatting for reports that users set beside
//! their engines' logs.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Paired reads [`unix_offset_ns`] takes; the one with the smallest gap wins.
const OFFSET_READS: usize = 5;

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds on CLOCK_REALTIME: UNIX time (UTC).
#[inline]
pub fn realtime_ns() -> u64 {
    read_clock(libc::CLOCK_REALTIME)
}

#[inline]
fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it. Both
    // clocks read here exist on every Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds: add it to a monotonic timestamp to get
/// UNIX time. Measured from a few (monotonic, realtime, monotonic) reads, keeping the one
/// whose monotonic reads lie closest together (the least disturbed by preemption), with
/// the realtime read set at their midpoint.
///
/// Measure once when a source starts and keep the value: converting every timestamp with
/// one offset keeps the order and spacing of events exact, whereas NTP's slewing of
/// CLOCK_REALTIME would only move the wall-clock labels by microseconds over hours.
pub fn unix_offset_ns() -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..OFFSET_READS {
        let before = monotonic_ns();
        let real = realtime_ns();
        let after = monotonic_ns();
        let gap = after - before;
        if gap < best.0 {
            let mid = before + gap / 2;
            best = (gap, real as i64 - mid as i64);
        }
    }
    best.1
}

/// How many fractional digits [`iso8601_utc`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

/// `unix_ns` as ISO-8601 / RFC 3339 UTC, e.g. `2024-02-29T12:34:56.789012Z` with
/// [`Precision::Micros`]; formats only when displayed (no allocation until then).
pub fn iso8601_utc(unix_ns: u64, precision: Precision) -> impl fmt::Display {
    let t = UNIX_EPOCH + Duration::from_nanos(unix_ns);
    Iso8601 { t, precision }
}

/// A source timestamp as ISO-8601 UTC with nanoseconds, as engines log; a time before 1970
/// or past 2262 (a wrong clock) is written as the raw number with `ns`.
pub fn utc(ts_ns: u64, unix_offset_ns: i64) -> String {
    match u64::try_from(i128::from(ts_ns) + i128::from(unix_offset_ns)) {
        Ok(unix_ns) => iso8601_utc(unix_ns, Precision::Nanos).to_string(),
        Err(_) => format!("{ts_ns}ns"),
    }
}

struct Iso8601 {
    t: SystemTime,
    precision: Precision,
}

impl fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.precision {
            Precision::Seconds => humantime::format_rfc3339_seconds(self.t).fmt(f),
            Precision::Millis => humantime::format_rfc3339_millis(self.t).fmt(f),
            Precision::Micros => humantime::format_rfc3339_micros(self.t).fmt(f),
            Precision::Nanos => humantime::format_rfc3339_nanos(self.t).fmt(f),
        }
    }
}

/// `unix_ns` as [`iso8601_utc`] with [`Precision::Nanos`] writes it, into `out` (30 bytes,
/// `2024-06-10T09:30:01.991000000Z`), without the formatting machinery: reports write one
/// per slow order every interval. `None` past year 9999 (the caller then uses
/// [`iso8601_utc`], which gives its own answer).
pub fn write_iso8601_utc_nanos(out: &mut Vec<u8>, unix_ns: u64) -> Option<()> {
    let secs = unix_ns / 1_000_000_000;
    let nanos = unix_ns % 1_000_000_000;
    let days = secs / 86_400;
    let sod = secs % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year > 9999 {
        return None;
    }
    let digits = |out: &mut Vec<u8>, v: u64, n: usize| {
        let mut buf = [b'0'; 9];
        let mut v = v;
        for i in (0..n).rev() {
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&buf[..n]);
    };
    digits(out, year as u64, 4);
    out.push(b'-');
    digits(out, month as u64, 2);
    out.push(b'-');
    digits(out, day as u64, 2);
    out.push(b'T');
    digits(out, sod / 3600, 2);
    out.push(b':');
    digits(out, sod / 60 % 60, 2);
    out.push(b':');
    digits(out, sod % 60, 2);
    out.push(b'.');
    digits(out, nanos, 9);
    out.push(b'Z');
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_written_iso8601_is_humantimes() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let samples = (0..20_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x // every u64 of ns is before 2555
        });
        for ns in samples.chain([0, 951_782_400_000_000_000, 1_709_208_000_123_456_789]) {
            let mut ours = Vec::new();
            write_iso8601_utc_nanos(&mut ours, ns).expect("before 10000");
            let theirs = iso8601_utc(ns, Precision::Nanos).to_string();
            assert_eq!(String::from_utf8(ours).unwrap(), theirs, "{ns}");
        }
    }

    #[test]
    fn monotonic_advances_and_realtime_is_unix_time() {
        let a = monotonic_ns();
        std::thread::sleep(Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b >= a + 2_000_000, "{a} {b}");
        let std_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let ours = realtime_ns();
        assert!(ours.abs_diff(std_now) < 1_000_000_000, "{ours} {std_now}");
    }

    #[test]
    fn offset_turns_monotonic_into_unix_time() {
        let offset = unix_offset_ns();
        let mono = monotonic_ns();
        let real = realtime_ns();
        let converted = (mono as i64 + offset) as u64;
        // The two reads are a few hundred ns apart; allow for a preempted test thread.
        assert!(
            converted.abs_diff(real) < 5_000_000,
            "{converted} vs {real}"
        );
        // Stable: two measurements agree to well under a millisecond.
        assert!(unix_offset_ns().abs_diff(offset) < 1_000_000);
    }

    #[test]
    fn formats_iso8601_utc() {
        // 2024-02-29T12:34:56.789012345Z (a leap day).
        let ns = 1_709_210_096_789_012_345u64;
        let s = |p| iso8601_utc(ns, p).to_string();
        assert_eq!(s(Precision::Seconds), "2024-02-29T12:34:56Z");
        assert_eq!(s(Precision::Millis), "2024-02-29T12:34:56.789Z");
        assert_eq!(s(Precision::Micros), "2024-02-29T12:34:56.789012Z");
        assert_eq!(s(Precision::Nanos), "2024-02-29T12:34:56.789012345Z");
        assert_eq!(
            iso8601_utc(0, Precision::Millis).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
