//! The protobuf exposition (`io.prometheus.client.MetricFamily`, length-delimited): the
//! only one that carries native histograms. Messages are prometheus-client's generated
//! data model; we fill them from the snapshot ourselves because the crate's own metric
//! types would record every value a second time and cannot carry our exemplars.

use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model as pb;
use prost::Message;

use super::exemplar::Exemplar;
use super::histogram::HistogramData;
use super::model::{Family, Kind, Sample, Snapshot, Value};
use super::native;

/// The Content-Type of this encoding.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

pub fn encode(snapshot: &Snapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * 1024);
    for family in &snapshot.families {
        if family.samples.is_empty() {
            continue;
        }
        // Encoding into a Vec only fails when the buffer cannot grow.
        let _ = family_message(family, &snapshot.classic_bounds).encode_length_delimited(&mut out);
    }
    out
}

pub fn family_message(f: &Family, bounds: &[f64]) -> pb::MetricFamily {
    let kind = match f.kind {
        Kind::Counter => pb::MetricType::Counter,
        Kind::Gauge => pb::MetricType::Gauge,
        Kind::Histogram => pb::MetricType::Histogram,
    };
    pb::MetricFamily {
        name: f.sample_name(),
        help: f.help.clone(),
        r#type: kind as i32,
        metric: f
            .samples
            .iter()
            .map(|s| metric(f.kind, s, bounds))
            .collect(),
        unit: f.unit.unwrap_or_default().to_string(),
    }
}

fn metric(kind: Kind, s: &Sample, bounds: &[f64]) -> pb::Metric {
    let label = s
        .labels
        .iter()
        .map(|(k, v)| pb::LabelPair {
            name: (*k).to_string(),
            value: v.clone(),
        })
        .collect();
    let mut m = pb::Metric {
        label,
        ..Default::default()
    };
    let as_f64 = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Histogram(h) => h.count as f64,
    };
    match (&s.value, kind) {
        (Value::Histogram(h), _) => m.histogram = Some(histogram(h, bounds)),
        (v, Kind::Counter) => {
            m.counter = Some(pb::Counter {
                value: as_f64(v),
                ..Default::default()
            })
        }
        (v, _) => m.gauge = Some(pb::Gauge { value: as_f64(v) }),
    }
    m
}

fn histogram(h: &HistogramData, bounds: &[f64]) -> pb::Histogram {
    let exemplar_bucket = h
        .exemplar
        .as_ref()
        .map(|e| bounds.partition_point(|&b| b < e.value_s));
    let mut cumulative = 0u64;
    // Finite bounds only: +Inf is the count.
    let bucket = bounds
        .iter()
        .zip(&h.classic)
        .enumerate()
        .map(|(i, (&upper_bound, &n))| {
            cumulative += n;
            pb::Bucket {
                cumulative_count: cumulative,
                upper_bound,
                exemplar: h
                    .exemplar
                    .as_ref()
                    .filter(|_| exemplar_bucket == Some(i))
                    .map(exemplar),
                ..Default::default()
            }
        })
        .collect();
    let mut positive_span: Vec<pb::BucketSpan> = h
        .native
        .spans
        .iter()
        .map(|&(offset, length)| pb::BucketSpan { offset, length })
        .collect();
    if positive_span.is_empty() && h.zero_count == 0 {
        // An empty native histogram still says it is one (client_golang's no-op span), so
        // the series is native from its first scrape on.
        positive_span.push(pb::BucketSpan {
            offset: 0,
            length: 0,
        });
    }
    pb::Histogram {
        sample_count: h.count,
        sample_sum: h.sum_s,
        bucket,
        schema: native::SCHEMA,
        zero_threshold: native::ZERO_THRESHOLD,
        zero_count: h.zero_count,
        positive_span,
        positive_delta: h.native.deltas.clone(),
        exemplars: h.exemplar.iter().map(exemplar).collect(),
        ..Default::default()
    }
}

fn exemplar(e: &Exemplar) -> pb::Exemplar {
    pb::Exemplar {
        label: e
            .labels
            .iter()
            .map(|(k, v)| pb::LabelPair {
                name: (*k).to_string(),
                value: v.clone(),
            })
            .collect(),
        value: e.value_s,
        timestamp: e.timestamp_s.map(prost_types_timestamp),
    }
}

fn prost_types_timestamp(ts: f64) -> prost_types::Timestamp {
    let seconds = ts.floor();
    prost_types::Timestamp {
        seconds: seconds as i64,
        nanos: ((ts - seconds) * 1e9) as i32,
    }
}
