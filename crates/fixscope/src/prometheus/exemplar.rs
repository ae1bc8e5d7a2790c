//! The exemplar of a latency histogram: the slowest order of the latest interval, so a slow
//! bucket in Grafana leads to an order (its ClOrdID, or the `--key` value, and session).

/// OpenMetrics allows at most 128 UTF-8 characters of exemplar label names and values.
pub const MAX_LABEL_CHARS: usize = 128;

#[derive(Clone, Debug, PartialEq)]
pub struct Exemplar {
    /// (name, value); the values fit [`MAX_LABEL_CHARS`] together with the names.
    pub labels: Vec<(&'static str, String)>,
    /// The latency in seconds.
    pub value_s: f64,
    /// When the request was seen, UNIX seconds.
    pub timestamp_s: Option<f64>,
}

/// The exemplar for one order: `cl_ord_id` (the correlation key's value as the slowest
/// orders list has it — a compound key's values joined by `|` — cut to fit the label limit)
/// and `session` (fixscope's session id, as in JSON, `--trace` and the session series).
pub fn order_exemplar(
    latency_ns: u64,
    key: &str,
    session: u64,
    request_unix_ns: Option<u64>,
) -> Exemplar {
    let session = session.to_string();
    let budget = MAX_LABEL_CHARS - "cl_ord_id".len() - "session".len() - session.chars().count();
    let key: String = key
        .chars()
        .map(|c| if c == '\x01' { '|' } else { c })
        .take(budget)
        .collect();
    Exemplar {
        labels: vec![("cl_ord_id", key), ("session", session)],
        value_s: latency_ns as f64 * 1e-9,
        timestamp_s: request_unix_ns.map(|ns| ns as f64 * 1e-9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_fit_the_openmetrics_limit() {
        let long = "A".repeat(500);
        let e = order_exemplar(1_500_000, &long, 12, Some(1_700_000_000_000_000_000));
        let chars: usize = e
            .labels
            .iter()
            .map(|(n, v)| n.len() + v.chars().count())
            .sum();
        assert_eq!(chars, MAX_LABEL_CHARS);
        assert_eq!(e.value_s, 0.0015);
        let e = order_exemplar(1, "ORD1\x0155", 3, None);
        assert_eq!(e.labels[0].1, "ORD1|55");
        assert_eq!(e.labels[1], ("session", "3".to_string()));
    }
}
