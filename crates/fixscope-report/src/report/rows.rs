//! One distribution as a row: the text table's row and header, and the JSON schema's
//! object. Every table of every report (stages, per type, per session, `--by`, the session
//! layer) writes its rows through these, so they read the same everywhere.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use super::human_ns;
use fixscope_orders::recorder::{Distribution, PERCENTILES};

/// `null` for figures of an empty distribution, so nobody mistakes "no data" for 0 ns.
pub(super) fn some_if(count: u64, v: Value) -> Value {
    if count == 0 {
        Value::Null
    } else {
        v
    }
}

/// A stage's (or session's) distribution as the schema's object.
pub fn distribution_json(name_field: (&str, &str), d: &Distribution) -> Value {
    let mut m = Map::new();
    m.insert(name_field.0.into(), name_field.1.into());
    m.insert("count".into(), d.count.into());
    m.insert("min_ns".into(), some_if(d.count, d.min_ns.into()));
    m.insert("mean_ns".into(), some_if(d.count, json!(d.mean_ns)));
    for ((_, _, field), v) in PERCENTILES.iter().zip(d.percentiles_ns) {
        // None: no data, or the rank lies above the histogram's range (see over_range).
        m.insert((*field).into(), v.map_or(Value::Null, Value::from));
    }
    m.insert("max_ns".into(), some_if(d.count, d.max_ns.into()));
    m.insert("over_range".into(), d.over_range.into());
    m.insert("range_ns".into(), d.range_ns.into());
    Value::Object(m)
}

/// A percentile for people: its value, `>10.000s` when its rank is above the histogram's
/// range (`-x`), `-` without data.
pub fn percentile_text(d: &Distribution, i: usize) -> String {
    if d.count == 0 {
        return "-".into();
    }
    match d.percentiles_ns[i] {
        Some(v) => human_ns(v as f64),
        None => format!(">{}", human_ns(d.range_ns as f64)),
    }
}

pub(super) fn opt_ns(d: &Distribution, v: u64) -> String {
    if d.count == 0 {
        "-".into()
    } else {
        human_ns(v as f64)
    }
}

pub(super) fn write_stage_header(out: &mut impl Write, first: &str) -> io::Result<()> {
    write!(out, "{first:<22} {:>9} {:>9} {:>9}", "count", "min", "mean")?;
    for (_, label, _) in PERCENTILES {
        write!(out, " {label:>9}")?;
    }
    writeln!(out, " {:>9}", "max")
}

pub(super) fn write_stage_row(
    out: &mut impl Write,
    name: &str,
    d: &Distribution,
) -> io::Result<()> {
    write!(out, "{name:<22} {:>9}", d.count)?;
    if d.count == 0 {
        return writeln!(out);
    }
    write!(
        out,
        " {:>9} {:>9}",
        human_ns(d.min_ns as f64),
        human_ns(d.mean_ns)
    )?;
    for i in 0..PERCENTILES.len() {
        write!(out, " {:>9}", percentile_text(d, i))?;
    }
    write!(out, " {:>9}", human_ns(d.max_ns as f64))?;
    if d.over_range > 0 {
        write!(
            out,
            "  ({} above the histogram range of {}: raise -x)",
            d.over_range,
            human_ns(d.range_ns as f64)
        )?;
    }
    writeln!(out)
}
