//! Latency by the orders' own fields (`--by`) in reports: a table per tag in text, the
//! summary's `by` list in JSON (docs/output-json.md, "Latency by field").

use std::io::{self, Write};

use serde_json::{json, Value};

use super::json::distribution_json;
use crate::correlate::Stage;
use crate::group::GroupStats;
use crate::stats::Distribution;

/// The summary's `by` list: one object per (tag, value), busiest first per tag.
pub fn by_json(by: &GroupStats) -> Value {
    let mut list = Vec::new();
    for t in &by.tags {
        for e in t.ranked() {
            let stages: Vec<Value> = Stage::ALL
                .iter()
                .map(|&s| {
                    let d = e
                        .stage(s)
                        .map_or_else(Distribution::default, |r| r.distribution());
                    distribution_json(("stage", s.name()), &d)
                })
                .collect();
            let mut v = json!({
                "tag": t.tag.to_string(),
                "value": e.value,
                "requests": e.requests,
                "stages": stages,
            });
            if e.value == "(other)" {
                v["values"] = t.other_values.into();
            }
            list.push(v);
        }
    }
    Value::Array(list)
}

/// The text tables: per tag, per value, each stage with data.
pub fn write_by(out: &mut impl Write, by: &GroupStats) -> io::Result<()> {
    for t in &by.tags {
        writeln!(out, "\nby tag {} (--by):", t.tag)?;
        super::text::write_stage_header(out, "value/stage")?;
        for e in t.ranked() {
            for &s in &Stage::ALL {
                if let Some(r) = e.stage(s).filter(|r| r.count() > 0) {
                    let label = format!("{} {}", e.value, s.name());
                    super::text::write_stage_row(out, &label, &r.distribution())?;
                }
            }
        }
        if t.other_values > 0 {
            writeln!(
                out,
                "  (other): {} values beyond --by-limit {}",
                t.other_values, by.spec.limit
            )?;
        }
    }
    Ok(())
}
