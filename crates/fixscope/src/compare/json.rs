//! The comparison as one JSON object (docs/output-json.md, "compare"):
//! `{"type":"compare","verdict":…,"stages":[{"stage":…,"percentiles":[{"p":50,
//! "baseline_ns":…,"candidate_ns":…,"ratio":…,"ci_low":…,"ci_high":…,"verdict":…}]}]}`
//! plus the settings, each side's context and the warnings.

use fixscope_compare::{Comparison, Group, SideNotes};
use serde_json::{json, Value};

use super::text::percent;

fn side(s: &SideNotes) -> Value {
    let c = &s.context;
    json!({
        "runs": s.labels,
        "orders": c.requests,
        "duration_s": c.duration_s,
        "order_rate": c.order_rate(),
        "blocks": s.blocks,
        "block_s": s.block_s,
        "variance_growth_doubled_blocks": s.block_check.as_ref().map(|b| b.variance_growth),
        "blocks_doubled": s.block_check.as_ref().is_some_and(|b| b.doubled),
        "timed_out": c.timed_out,
        "late": c.late,
        "unanswered": c.unanswered,
        "range_ns": c.range_ns,
    })
}

fn group(g: &Group) -> (Value, Value) {
    match g {
        Group::All => (Value::Null, Value::Null),
        Group::Type(t) => (json!("type"), json!(t.msg_type())),
        Group::Session(s) => (json!("session"), json!(s)),
        Group::Tag { tag, value } => (json!(tag.to_string()), json!(value)),
    }
}

pub fn render(c: &Comparison) -> Value {
    let t = &c.table;
    let stages: Vec<Value> = t
        .cells
        .iter()
        .map(|cell| {
            let (by, value) = group(&cell.key.group);
            let percentiles: Vec<Value> = cell
                .percentiles
                .iter()
                .map(|p| {
                    let pct: f64 = percent(p.q).parse().unwrap_or(p.q * 100.0);
                    // `50`, not `50.0`; `99.9` stays a fraction.
                    let p_value = if pct.fract() == 0.0 {
                        json!(pct as u64)
                    } else {
                        json!(pct)
                    };
                    json!({
                        "p": p_value,
                        "baseline_ns": p.baseline_ns,
                        "candidate_ns": p.candidate_ns,
                        "ratio": p.ratio,
                        "ci_low": p.ci_low,
                        "ci_high": p.ci_high,
                        "verdict": p.verdict.name(),
                        "orders_needed": p.orders_needed,
                        "note": p.note,
                    })
                })
                .collect();
            json!({
                "stage": cell.key.stage.name(),
                "by": by,
                "group": value,
                "baseline_count": cell.baseline_count,
                "candidate_count": cell.candidate_count,
                "percentiles": percentiles,
            })
        })
        .collect();
    let s = &c.settings;
    json!({
        "type": "compare",
        "verdict": c.verdict().name(),
        "confidence": s.confidence,
        "threshold": s.threshold,
        "resamples": s.resamples,
        "seed": s.seed,
        "rng": "ChaCha8",
        "critical": t.critical,
        "t_df": t.t_df,
        "judged": t.judged,
        "baseline": side(&c.sides[0]),
        "candidate": side(&c.sides[1]),
        "warnings": c.warnings,
        "stages": stages,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fixscope_compare::{compare, BlockHist, CellKey, Group, Run, Settings};
    use fixscope_core::correlate::Stage;

    use super::*;

    /// Every field the object can carry is listed in docs/output-json.md's compare table.
    #[test]
    fn every_field_is_documented() {
        let mut run = Run::new("r");
        for b in 0..20u64 {
            let values: Vec<u64> = (1..=50).map(|i| 1000 + i * 10 + b).collect();
            run.push_block([(
                CellKey {
                    group: Group::All,
                    stage: Stage::Ack,
                },
                BlockHist::from_values(&values),
            )]);
        }
        let s = Settings {
            resamples: 100,
            ..Settings::default()
        };
        let c = compare(std::slice::from_ref(&run), std::slice::from_ref(&run), &s);
        let v = render(&c);
        assert_eq!(v["stages"][0]["percentiles"][0]["p"].to_string(), "50");
        assert_eq!(v["stages"][0]["percentiles"][3]["p"].to_string(), "99.9");
        let mut keys = BTreeSet::new();
        fn walk(v: &Value, keys: &mut BTreeSet<String>) {
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        keys.insert(k.clone());
                        walk(x, keys);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, keys)),
                _ => {}
            }
        }
        walk(&v, &mut keys);
        let doc = include_str!("../../../../docs/output-json.md");
        let section = &doc[doc.find("## Compare object").expect("the compare section")..];
        let missing: Vec<&String> = keys
            .iter()
            .filter(|k| !section.contains(&format!("`{k}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/output-json.md: {missing:?}"
        );
    }
}
