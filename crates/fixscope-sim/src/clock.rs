//! Clocks: CLOCK_MONOTONIC nanoseconds (the clock `bpf_ktime_get_ns` reads) and a cached
//! UTC SendingTime (52) formatter.

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

#[inline]
fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it. The
    // clocks used here always exist on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spins until CLOCK_MONOTONIC reaches `due_ns` (used for the last few microseconds before
/// a scheduled event, where sleeping would overshoot).
#[inline]
pub fn spin_until(due_ns: u64) -> u64 {
    loop {
        let now = monotonic_ns();
        if now >= due_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// Formats `YYYYMMDD-HH:MM:SS.sss` (UTC) without allocating; the date part is recomputed
/// only when the second changes.
#[derive(Debug)]
pub struct UtcClock {
    sec: u64,
    buf: [u8; 21],
}

impl Default for UtcClock {
    fn default() -> Self {
        Self::new()
    }
}

impl UtcClock {
    pub fn new() -> Self {
        let mut c = UtcClock {
            sec: u64::MAX,
            buf: *b"19700101-00:00:00.000",
        };
        c.now();
        c
    }

    /// The current time as SendingTime bytes.
    pub fn now(&mut self) -> &[u8] {
        self.refresh();
        &self.buf
    }

    /// Re-reads the clock; the loops call this once per turn and encode with [`cached`].
    ///
    /// [`cached`]: UtcClock::cached
    pub fn refresh(&mut self) {
        let ns = read_clock(libc::CLOCK_REALTIME);
        self.format(ns);
    }

    /// The time of the last [`refresh`](UtcClock::refresh) (millisecond resolution anyway).
    pub fn cached(&self) -> &[u8] {
        &self.buf
    }

    /// Formats a CLOCK_REALTIME nanosecond value.
    pub fn format(&mut self, ns: u64) -> &[u8] {
        let sec = ns / 1_000_000_000;
        if sec != self.sec {
            self.sec = sec;
            let (y, m, d) = civil_from_days((sec / 86_400) as i64);
            let tod = sec % 86_400;
            put_digits(&mut self.buf[0..4], y as u64);
            put_digits(&mut self.buf[4..6], m as u64);
            put_digits(&mut self.buf[6..8], d as u64);
            put_digits(&mut self.buf[9..11], tod / 3600);
            put_digits(&mut self.buf[12..14], (tod / 60) % 60);
            put_digits(&mut self.buf[15..17], tod % 60);
        }
        put_digits(&mut self.buf[18..21], (ns / 1_000_000) % 1000);
        &self.buf
    }
}

fn put_digits(dst: &mut [u8], mut v: u64) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Days since 1970-01-01 to (year, month, day) — Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        let mut c = UtcClock::new();
        // 2024-02-29T12:34:56.789Z
        let ns = 1_709_210_096_789_000_000u64;
        assert_eq!(c.format(ns), b"20240229-12:34:56.789");
        assert_eq!(c.format(0), b"19700101-00:00:00.000");
        assert_eq!(c.now().len(), 21);
    }

    #[test]
    fn monotonic_advances() {
        let a = monotonic_ns();
        let b = spin_until(a + 1000);
        assert!(b >= a + 1000);
    }
}
