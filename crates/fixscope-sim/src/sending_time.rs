//! FIX SendingTime (52) / TransactTime (60) of now, `YYYYMMDD-HH:MM:SS.sss` UTC, formatted
//! without allocating: the calendar part comes from the core's ISO-8601 formatter and is
//! redone only when the second changes.

use std::io::Write;

use fixscope_core::clock::{iso8601_utc, realtime_ns, Precision};

/// A cached UTC timestamp in FIX's format.
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
        self.format(realtime_ns());
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
            // `YYYY-MM-DDTHH:MM:SSZ`: 20 bytes, always (years 1970..2554 fit a u64 of ns).
            let mut iso = [0u8; 20];
            let mut w = &mut iso[..];
            if write!(
                w,
                "{}",
                iso8601_utc(sec * 1_000_000_000, Precision::Seconds)
            )
            .is_ok()
            {
                self.buf[0..4].copy_from_slice(&iso[0..4]);
                self.buf[4..6].copy_from_slice(&iso[5..7]);
                self.buf[6..8].copy_from_slice(&iso[8..10]);
                self.buf[9..17].copy_from_slice(&iso[11..19]);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        let mut c = UtcClock::new();
        // 2024-02-29T12:34:56.789Z
        let ns = 1_709_210_096_789_000_000u64;
        assert_eq!(c.format(ns), b"20240229-12:34:56.789");
        assert_eq!(c.format(ns + 1_000_000), b"20240229-12:34:56.790");
        assert_eq!(c.format(0), b"19700101-00:00:00.000");
        // 2023-12-31T23:59:59.999Z, then the next millisecond: a new year.
        assert_eq!(
            c.format(1_704_067_199_999_000_000),
            b"20231231-23:59:59.999"
        );
        assert_eq!(
            c.format(1_704_067_200_000_000_000),
            b"20240101-00:00:00.000"
        );
        assert_eq!(c.now().len(), 21);
    }
}
