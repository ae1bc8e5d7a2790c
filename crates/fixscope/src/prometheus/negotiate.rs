//! Content negotiation: which exposition a scraper's `Accept` header asks for.
//!
//! Prometheus with `--enable-feature=native-histograms` puts the delimited protobuf first
//! (`application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;
//! encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2` or similar); without it,
//! OpenMetrics text. We pick the acceptable format with the highest `q` (ties: the order
//! protobuf, OpenMetrics, text 0.0.4); no `Accept`, `*/*` or nothing we know: OpenMetrics.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    OpenMetrics,
    /// Prometheus text 0.0.4.
    Text,
}

pub fn choose(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::OpenMetrics;
    };
    let mut best: Option<(f64, u8, Format)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut q = 1.0f64;
        let mut proto_ok = false;
        let mut delimited = false;
        for p in parts {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => q = v.parse().unwrap_or(0.0),
                "proto" => proto_ok = v == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = v == "delimited",
                _ => {}
            }
        }
        let format = match media.as_str() {
            "application/vnd.google.protobuf" if proto_ok && delimited => {
                Some((0, Format::Protobuf))
            }
            "application/openmetrics-text" => Some((1, Format::OpenMetrics)),
            "text/plain" => Some((2, Format::Text)),
            "*/*" | "text/*" | "application/*" => Some((3, Format::OpenMetrics)),
            _ => None,
        };
        if let Some((rank, format)) = format {
            if q <= 0.0 {
                continue;
            }
            let better = best.is_none_or(|(bq, br, _)| q > bq || (q == bq && rank < br));
            if better {
                best = Some((q, rank, format));
            }
        }
    }
    best.map_or(Format::OpenMetrics, |(_, _, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_with_native_histograms_gets_protobuf() {
        // Prometheus 2.42's header with --enable-feature=native-histograms.
        let a = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.8,application/openmetrics-text;version=1.0.0;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=0.0.4;q=0.5,*/*;q=0.4";
        assert_eq!(choose(Some(a)), Format::Protobuf);
    }

    #[test]
    fn prometheus_without_them_gets_openmetrics() {
        let a = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(choose(Some(a)), Format::OpenMetrics);
    }

    #[test]
    fn q_values_decide_and_protobuf_must_name_the_message() {
        assert_eq!(choose(Some("text/plain;version=0.0.4")), Format::Text);
        assert_eq!(
            choose(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(
            choose(Some("application/vnd.google.protobuf;encoding=delimited")),
            Format::OpenMetrics
        );
        assert_eq!(
            choose(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text")),
            Format::OpenMetrics
        );
        assert_eq!(
            choose(Some("application/openmetrics-text;q=0, text/plain;q=0.1")),
            Format::Text
        );
        assert_eq!(choose(None), Format::OpenMetrics);
        assert_eq!(choose(Some("*/*")), Format::OpenMetrics);
        assert_eq!(choose(Some("image/png")), Format::OpenMetrics);
    }
}
