//! ITCH timestamps are nanoseconds since midnight, exchange time: New York, which keeps
//! daylight saving time. To compare one with a capture time (UTC, ns since 1970) — the
//! feed's latency — the sender's day and UTC offset must be known: the day is taken from
//! the capture (the message was sent moments before it was captured), the offset from the
//! US rules in force since 2007, hand-written here to keep the crate free of a time-zone
//! database:
//!
//! - daylight time (UTC−4) from the second Sunday of March, 02:00 local standard time
//!   (07:00 UTC), to the first Sunday of November, 02:00 local daylight time (06:00 UTC);
//!   standard time (UTC−5) otherwise.
//!
//! **Only unambiguous answers.** On the two transition days "nanoseconds since midnight"
//! and the wall clock disagree after the transition by an hour (elapsed time or clock
//! time? the spec's words allow either), and in November the hour 01:00–02:00 happens
//! twice; in March 02:00–03:00 never does. So on a transition day a timestamp at or after
//! 01:00 (November) or 02:00 (March) gives `None`, as do years before 2007 (other rules)
//! and a timestamp of a day or more. Both transitions fall on Sundays at night, when
//! Nasdaq sends no market data, so a real feed never meets them.

/// Nanoseconds in a day.
pub const NS_PER_DAY: u64 = 86_400 * NS_PER_S;
const NS_PER_S: u64 = 1_000_000_000;
const NS_PER_HOUR: u64 = 3_600 * NS_PER_S;
const DAY: i64 = NS_PER_DAY as i64;
const HOUR: i64 = NS_PER_HOUR as i64;
/// The first year of the rules above (the Energy Policy Act of 2005's).
const FIRST_YEAR: i64 = 2007;
/// A capture this far from its message's time on the candidate day is not that day's.
const SAME_DAY_SLACK: i64 = 6 * HOUR;

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// 0 = Sunday (1970-01-01 was a Thursday).
fn weekday(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

/// The day count of the `n`th Sunday of `month` in `year`.
fn nth_sunday(year: i64, month: u32, n: i64) -> i64 {
    let first = days_from_civil(year, month, 1);
    first + (7 - weekday(first)) % 7 + 7 * (n - 1)
}

/// The days DST starts and ends in `year`.
fn transitions(year: i64) -> (i64, i64) {
    (nth_sunday(year, 3, 2), nth_sunday(year, 11, 1))
}

/// New York's offset from UTC at a UTC instant, in ns (−5 h or −4 h); `None` before
/// 2007.
pub fn new_york_offset_ns(utc_ns: i64) -> Option<i64> {
    let (year, _, _) = civil_from_days(utc_ns.div_euclid(DAY));
    if year < FIRST_YEAR {
        return None;
    }
    let (start, end) = transitions(year);
    // In i128: November of 2262, the last year an i64 of ns reaches, is past its range.
    let at = |day: i64, hour: i64| i128::from(day) * i128::from(DAY) + i128::from(hour * HOUR);
    Some(
        if (at(start, 7)..at(end, 6)).contains(&i128::from(utc_ns)) {
            -4 * HOUR
        } else {
            -5 * HOUR
        },
    )
}

/// The UTC instant of `since_midnight_ns` on New York's local day `day` (module doc for
/// the `None`s).
fn local_to_utc(day: i64, since_midnight_ns: i64) -> Option<i64> {
    let (year, _, _) = civil_from_days(day);
    if year < FIRST_YEAR {
        return None;
    }
    let (start, end) = transitions(year);
    let offset = if day == start {
        (since_midnight_ns < 2 * HOUR).then_some(-5 * HOUR)?
    } else if day == end {
        (since_midnight_ns < HOUR).then_some(-4 * HOUR)?
    } else if start < day && day < end {
        -4 * HOUR
    } else {
        -5 * HOUR
    };
    day.checked_mul(DAY)?
        .checked_add(since_midnight_ns - offset)
}

/// The UTC time (ns since 1970) an ITCH timestamp stands for, given the capture time of
/// its packet (UTC ns since 1970): the New York day is the one that puts the message
/// nearest its capture (so a message sent just before midnight and captured just after
/// is the day before's). `None` when the offset is ambiguous (module doc).
pub fn sender_utc_ns(capture_utc_ns: u64, itch_since_midnight_ns: u64) -> Option<u64> {
    if itch_since_midnight_ns >= NS_PER_DAY {
        return None;
    }
    let capture = i64::try_from(capture_utc_ns).ok()?;
    let since = itch_since_midnight_ns as i64;
    let local_day = (capture + new_york_offset_ns(capture)?).div_euclid(DAY);
    (local_day - 1..=local_day + 1).find_map(|day| {
        let utc = local_to_utc(day, since)?;
        ((utc - capture).abs() < SAME_DAY_SLACK).then(|| u64::try_from(utc).ok())?
    })
}

/// Capture time minus sending time: the feed's latency from the exchange's clock to the
/// capture point (negative when the clocks disagree by more than the latency).
pub fn feed_latency_ns(capture_utc_ns: u64, itch_since_midnight_ns: u64) -> Option<i64> {
    let sent = sender_utc_ns(capture_utc_ns, itch_since_midnight_ns)?;
    Some(capture_utc_ns as i64 - sent as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UTC ns of a date and time.
    fn utc(y: i64, mo: u32, d: u32, h: i64, mi: i64, s: i64) -> i64 {
        days_from_civil(y, mo, d) * DAY + h * HOUR + mi * 60 * NS_PER_S as i64 + s * 1_000_000_000
    }

    fn hms(h: u64, m: u64, s: u64) -> u64 {
        h * NS_PER_HOUR + m * 60 * NS_PER_S + s * NS_PER_S
    }

    #[test]
    fn dates_round_trip_and_weekdays_are_right() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for days in (-800_000..800_000).step_by(97) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        // 2024-03-10 and 2024-11-03 were Sundays.
        assert_eq!(weekday(days_from_civil(2024, 3, 10)), 0);
        assert_eq!(
            transitions(2024),
            (days_from_civil(2024, 3, 10), days_from_civil(2024, 11, 3))
        );
        assert_eq!(
            transitions(2007),
            (days_from_civil(2007, 3, 11), days_from_civil(2007, 11, 4))
        );
        assert_eq!(
            transitions(2026),
            (days_from_civil(2026, 3, 8), days_from_civil(2026, 11, 1))
        );
    }

    #[test]
    fn the_offset_changes_at_two_in_the_morning_local_time() {
        let off = |t| new_york_offset_ns(t).map(|o| o / HOUR);
        assert_eq!(off(utc(2024, 3, 10, 6, 59, 59)), Some(-5));
        assert_eq!(off(utc(2024, 3, 10, 7, 0, 0)), Some(-4));
        assert_eq!(off(utc(2024, 11, 3, 5, 59, 59)), Some(-4));
        assert_eq!(off(utc(2024, 11, 3, 6, 0, 0)), Some(-5));
        assert_eq!(off(utc(2024, 1, 15, 12, 0, 0)), Some(-5));
        assert_eq!(off(utc(2024, 7, 15, 12, 0, 0)), Some(-4));
        assert_eq!(off(utc(2006, 7, 15, 12, 0, 0)), None);
    }

    #[test]
    fn the_open_is_half_past_nine_new_york_time_summer_and_winter() {
        let summer = utc(2024, 7, 1, 13, 30, 0) as u64;
        assert_eq!(sender_utc_ns(summer + 1_500, hms(9, 30, 0)), Some(summer));
        assert_eq!(feed_latency_ns(summer + 1_500, hms(9, 30, 0)), Some(1_500));
        let winter = utc(2024, 1, 2, 14, 30, 0) as u64;
        assert_eq!(sender_utc_ns(winter + 7, hms(9, 30, 0)), Some(winter));
        // A capture clock behind the exchange's: negative latency, still the same day.
        assert_eq!(feed_latency_ns(winter - 40, hms(9, 30, 0)), Some(-40));
    }

    #[test]
    fn a_message_sent_before_midnight_and_captured_after_is_the_day_befores() {
        // 2024-07-02 00:00:00.000001 EDT.
        let capture = utc(2024, 7, 2, 4, 0, 0) as u64 + 1_000;
        let just_before = NS_PER_DAY - 1_000;
        assert_eq!(sender_utc_ns(capture, just_before), Some(capture - 2_000));
    }

    #[test]
    fn on_a_transition_day_only_the_hours_before_it_are_converted() {
        // 2024-03-10, 01:30 EST = 06:30 UTC.
        let c = utc(2024, 3, 10, 6, 30, 0) as u64;
        assert_eq!(sender_utc_ns(c, hms(1, 30, 0)), Some(c));
        assert_eq!(sender_utc_ns(c, hms(2, 30, 0)), None, "never happened");
        let later = utc(2024, 3, 10, 14, 0, 0) as u64;
        assert_eq!(
            sender_utc_ns(later, hms(10, 0, 0)),
            None,
            "clock or elapsed time?"
        );
        // 2024-11-03, 00:30 EDT = 04:30 UTC; 01:30 happened twice.
        let c = utc(2024, 11, 3, 4, 30, 0) as u64;
        assert_eq!(sender_utc_ns(c, hms(0, 30, 0)), Some(c));
        assert_eq!(sender_utc_ns(c + HOUR as u64, hms(1, 30, 0)), None);
        // The days around are whole.
        let monday = utc(2024, 11, 4, 14, 30, 0) as u64;
        assert_eq!(sender_utc_ns(monday, hms(9, 30, 0)), Some(monday));
        assert_eq!(sender_utc_ns(monday, NS_PER_DAY), None);
    }

    #[test]
    fn the_ends_of_the_range_give_none_not_a_panic() {
        for capture in [0, 1, i64::MAX as u64 - 1, i64::MAX as u64, u64::MAX] {
            for itch in [0, NS_PER_DAY - 1, u64::MAX] {
                let _ = sender_utc_ns(capture, itch);
                let _ = feed_latency_ns(capture, itch);
            }
        }
        // 2262-04-11: daylight time.
        assert_eq!(new_york_offset_ns(i64::MAX), Some(-4 * HOUR));
        assert_eq!(new_york_offset_ns(i64::MIN), None);
    }
}
