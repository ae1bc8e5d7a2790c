//! What a scrape returns, built once per interval by the pipeline thread and encoded by the
//! HTTP thread (text or protobuf) without touching the pipeline.

use super::histogram::HistogramData;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    Histogram(Box<HistogramData>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

/// One metric family. `name` is the family name: counters' samples add `_total`.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: String,
    pub help: String,
    /// OpenMetrics unit; the name ends with it.
    pub unit: Option<&'static str>,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

/// Everything one scrape returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub families: Vec<Family>,
    /// The classic bucket bounds of every histogram, seconds (`+Inf` implied).
    pub classic_bounds: Vec<f64>,
}

impl Family {
    /// The name samples carry (`_total` added for counters).
    pub fn sample_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            _ => self.name.clone(),
        }
    }
}
