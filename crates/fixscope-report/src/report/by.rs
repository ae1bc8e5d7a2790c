//! Latency by the orders' own fields (`--by`) in reports: a table per tag in text, the
//! summary's `by` list in JSON (docs/output-json.md, "Latency by field").

use std::io::{self, Write};

use serde_json::{json, Value};

use super::rows::distribution_json;
use fixscope_figures::stats::Distribution;
use fixscope_orders::correlate::Stage;
use fixscope_orders::group::GroupStats;

/// The summary's `by` list: one object per (tag, value), busiest first per tag
/// (`--by-limit`), then `(other)` and `(none)`.
pub fn by_json(by: &GroupStats) -> Value {
    let mut list = Vec::new();
    for t in &by.tags {
        let ranked = t.ranked();
        for e in ranked.iter() {
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
                "tag": t.field.to_string(),
                "value": e.value,
                "requests": e.requests,
                "stages": stages,
            });
            if std::ptr::eq(e, &ranked.other) {
                v["values"] = ranked.other_values.into();
                v["values_overflowed"] = ranked.values_overflowed.into();
                v["busiest_exact"] = ranked.busiest_exact.into();
            }
            list.push(v);
        }
    }
    Value::Array(list)
}

/// The text tables: per tag, per value, each stage with data.
pub fn write_by(out: &mut impl Write, by: &GroupStats) -> io::Result<()> {
    for t in &by.tags {
        writeln!(out, "\nby {} (--by):", t.field.heading())?;
        super::rows::write_stage_header(out, "value/stage")?;
        let ranked = t.ranked();
        for e in ranked.iter() {
            for &s in &Stage::ALL {
                if let Some(r) = e.stage(s).filter(|r| r.count() > 0) {
                    let label = format!("{} {}", e.value, s.name());
                    super::rows::write_stage_row(out, &label, &r.distribution())?;
                }
            }
        }
        if ranked.other_values > 0 {
            writeln!(
                out,
                "  (other): {} values beyond the {} busiest (--by-limit), {} first seen after the {} tracked (--by-candidates){}",
                ranked.other_values,
                by.spec.limit,
                ranked.values_overflowed,
                by.spec.candidates,
                if ranked.busiest_exact {
                    ""
                } else {
                    "; not provably the busiest (a value first seen later had more requests, or too many values to count): raise --by-candidates"
                }
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_model::order::Latency;
    use fixscope_orders::correlate::RequestType;
    use fixscope_orders::group::{GroupSpec, NO_GROUPS};

    #[test]
    fn every_field_of_a_by_row_is_documented() {
        let doc = include_str!("../../../../docs/output-json.md");
        let section = doc
            .split("## Latency by field")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("docs/output-json.md: the --by section");
        let spec = GroupSpec::parse("55", 1)
            .unwrap()
            .with_candidates(1)
            .unwrap();
        let mut g = GroupStats::new(spec, 1_000_000_000);
        for sym in ["A", "B", ""] {
            let ids = g.request(&[sym.as_bytes(), b"", b""]);
            let latency = Latency {
                stage: Stage::FirstResponse,
                request_type: RequestType::NewOrder,
                session: 1,
                ns: 1000,
                late: false,
                request_ts_ns: 0,
                request_seq: 0,
                groups: NO_GROUPS,
            };
            g.record(&latency, &ids);
        }
        let rows = by_json(&g);
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 3, "A, (other), (none): {rows:?}");
        assert_eq!(rows[1]["values_overflowed"], 1);
        for row in rows {
            for key in row.as_object().unwrap().keys() {
                assert!(
                    section.contains(&format!("`{key}`")),
                    "`{key}` of a --by row is not in docs/output-json.md's --by section"
                );
            }
        }
    }
}
