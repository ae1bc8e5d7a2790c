//! The text expositions: OpenMetrics 1.0 (with exemplars; what Prometheus asks for first
//! when it does not ask for protobuf) and Prometheus text 0.0.4 (what node_exporter's
//! textfile collector and `promtool check metrics` read). Native buckets exist only in
//! protobuf: text carries the classic buckets.

use std::fmt::Write;

use super::exemplar::Exemplar;
use super::histogram::HistogramData;
use super::model::{Family, Kind, Sample, Snapshot, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Prometheus,
}

pub fn encode(snapshot: &Snapshot, flavour: Flavour) -> String {
    let mut out = String::with_capacity(16 * 1024);
    for family in &snapshot.families {
        // `write!` to a String cannot fail.
        let _ = family_text(&mut out, family, &snapshot.classic_bounds, flavour);
    }
    if flavour == Flavour::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn family_text(out: &mut String, f: &Family, bounds: &[f64], flavour: Flavour) -> std::fmt::Result {
    if f.samples.is_empty() {
        return Ok(());
    }
    let kind = match f.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
        Kind::Histogram => "histogram",
    };
    let (meta_name, help) = match flavour {
        // OpenMetrics names the family without `_total`; 0.0.4 names the samples.
        Flavour::OpenMetrics => (f.name.clone(), escape(&f.help, true)),
        Flavour::Prometheus => (f.sample_name(), escape(&f.help, false)),
    };
    writeln!(out, "# HELP {meta_name} {help}")?;
    writeln!(out, "# TYPE {meta_name} {kind}")?;
    if let (Flavour::OpenMetrics, Some(unit)) = (flavour, f.unit) {
        writeln!(out, "# UNIT {meta_name} {unit}")?;
    }
    let name = f.sample_name();
    for s in &f.samples {
        match &s.value {
            Value::Int(v) => writeln!(out, "{name}{} {v}", labels(s, None))?,
            Value::Float(v) => writeln!(out, "{name}{} {}", labels(s, None), float(*v))?,
            Value::Histogram(h) => histogram_text(out, &name, s, h, bounds, flavour)?,
        }
    }
    Ok(())
}

fn histogram_text(
    out: &mut String,
    name: &str,
    s: &Sample,
    h: &HistogramData,
    bounds: &[f64],
    flavour: Flavour,
) -> std::fmt::Result {
    // The exemplar goes on the bucket holding its value.
    let exemplar_at = match (&h.exemplar, flavour) {
        (Some(e), Flavour::OpenMetrics) => Some((bounds.partition_point(|&b| b < e.value_s), e)),
        _ => None,
    };
    let mut cumulative = 0u64;
    for (i, n) in h.classic.iter().enumerate() {
        cumulative += n;
        let le = bounds
            .get(i)
            .map_or_else(|| "+Inf".to_string(), |b| float(*b));
        write!(out, "{name}_bucket{} {cumulative}", labels(s, Some(&le)))?;
        if let Some((_, e)) = exemplar_at.filter(|(at, _)| *at == i) {
            exemplar_text(out, e)?;
        }
        out.push('\n');
    }
    writeln!(out, "{name}_count{} {}", labels(s, None), h.count)?;
    writeln!(out, "{name}_sum{} {}", labels(s, None), float(h.sum_s))
}

fn exemplar_text(out: &mut String, e: &Exemplar) -> std::fmt::Result {
    out.push_str(" # {");
    for (i, (k, v)) in e.labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write!(out, "{k}=\"{}\"", escape(v, true))?;
    }
    write!(out, "}} {}", float(e.value_s))?;
    if let Some(ts) = e.timestamp_s {
        write!(out, " {}", float(ts))?;
    }
    Ok(())
}

fn labels(s: &Sample, le: Option<&str>) -> String {
    if s.labels.is_empty() && le.is_none() {
        return String::new();
    }
    let mut out = String::from("{");
    let all = s
        .labels
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(le.map(|le| ("le", le)));
    for (i, (k, v)) in all.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        out.push_str(&escape(v, true));
        out.push('"');
    }
    out.push('}');
    out
}

/// Backslash and newline always; double quotes in label values and OpenMetrics HELP.
fn escape(s: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quotes => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Shortest exact decimal (Rust's `Display` for f64 round-trips).
fn float(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::exemplar::order_exemplar;

    fn snapshot() -> Snapshot {
        let h = HistogramData {
            count: 3,
            sum_s: 0.0035,
            classic: vec![1, 2, 0],
            exemplar: Some(order_exemplar(
                2_000_000,
                "ORD\"7",
                2,
                Some(1_700_000_000_000_000_000),
            )),
            ..HistogramData::default()
        };
        Snapshot {
            families: vec![
                Family {
                    name: "fixscope_latency_seconds".into(),
                    help: "latency".into(),
                    unit: Some("seconds"),
                    kind: Kind::Histogram,
                    samples: vec![Sample {
                        labels: vec![("stage", "ack".into())],
                        value: Value::Histogram(Box::new(h)),
                    }],
                },
                Family {
                    name: "fixscope_requests".into(),
                    help: "requests (35=D)\\".into(),
                    unit: None,
                    kind: Kind::Counter,
                    samples: vec![Sample {
                        labels: vec![],
                        value: Value::Int(5),
                    }],
                },
            ],
            classic_bounds: vec![0.001, 0.005],
        }
    }

    #[test]
    fn openmetrics_has_exemplar_unit_and_eof() {
        let text = encode(&snapshot(), Flavour::OpenMetrics);
        assert!(text.contains("# UNIT fixscope_latency_seconds seconds\n"));
        assert!(text.contains(
            "fixscope_latency_seconds_bucket{stage=\"ack\",le=\"0.005\"} 3 # {cl_ord_id=\"ORD\\\"7\",session=\"2\"} 0.002 1700000000\n"
        ), "{text}");
        assert!(text.contains("fixscope_latency_seconds_bucket{stage=\"ack\",le=\"+Inf\"} 3\n"));
        assert!(text.contains("# TYPE fixscope_requests counter\nfixscope_requests_total 5\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn prometheus_text_names_counters_with_total_and_has_no_exemplars() {
        let text = encode(&snapshot(), Flavour::Prometheus);
        assert!(text.contains("# TYPE fixscope_requests_total counter\n"));
        assert!(text.contains("# HELP fixscope_requests_total requests (35=D)\\\\\n"));
        assert!(!text.contains(" # {") && !text.contains("# EOF") && !text.contains("# UNIT"));
        assert!(text.contains("fixscope_latency_seconds_count{stage=\"ack\"} 3\n"));
        assert!(text.contains("fixscope_latency_seconds_sum{stage=\"ack\"} 0.0035\n"));
    }
}
