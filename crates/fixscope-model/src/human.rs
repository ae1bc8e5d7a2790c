//! Numbers for people, shared by every layer that prints one.

/// Formats nanoseconds for people: `850ns`, `12.3us`, `4.56ms`, `1.234s`.
pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}
