//! The HTML pieces every section of the report page is built from: escaping, latencies as
//! microseconds, and the latency table (head and rows).
//!
//! Apart from the page so that the sections in their own files (`session_layer`) use the
//! same cells without depending on the page that includes them.

use std::fmt::Write;

use fixscope_core::stats::{Distribution, PERCENTILES};

/// `<`, `>`, `&`, `"`, `'` escaped: keys and CompIDs come from the wire.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Nanoseconds as microseconds with three decimals (exact).
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A mean (float ns) as microseconds, rounded to the nanosecond.
fn us_f(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// The header row of a latency table whose first column is `first`.
pub fn stage_table_head(h: &mut String, first: &str) {
    let _ = write!(
        h,
        "<table><tr><th class=\"l\">{first}</th><th>count</th><th>min µs</th><th>mean µs</th>"
    );
    for (_, label, _) in PERCENTILES {
        let _ = write!(h, "<th>{label} µs</th>");
    }
    h.push_str("<th>max µs</th><th>above range</th></tr>\n");
}

/// One latency table row: `d` named `name`, each figure tagged `data-k="{key}.{field}"`.
pub fn stage_row(h: &mut String, name: &str, key: &str, d: &Distribution) {
    let warn = if d.over_range > 0 {
        " class=\"warn\""
    } else {
        ""
    };
    let _ = write!(
        h,
        "<tr{warn}><td class=\"l\">{}</td><td data-k=\"{key}.count\">{}</td>",
        escape(name),
        d.count
    );
    if d.count == 0 {
        h.push_str(&"<td>–</td>".repeat(PERCENTILES.len() + 3));
    } else {
        let _ = write!(
            h,
            "<td data-k=\"{key}.min_ns\">{}</td><td data-k=\"{key}.mean_ns\">{}</td>",
            us(d.min_ns),
            us_f(d.mean_ns)
        );
        for ((_, _, field), v) in PERCENTILES.iter().zip(d.percentiles_ns) {
            let text = match v {
                Some(v) => us(v),
                None => format!("&gt; {}", us(d.range_ns)),
            };
            let _ = write!(h, "<td data-k=\"{key}.{field}\">{text}</td>");
        }
        let _ = write!(h, "<td data-k=\"{key}.max_ns\">{}</td>", us(d.max_ns));
    }
    let _ = writeln!(
        h,
        "<td data-k=\"{key}.over_range\">{}</td></tr>",
        d.over_range
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_are_exact_and_text_is_escaped() {
        assert_eq!(us(0), "0.000");
        assert_eq!(us(123_456_789), "123456.789");
        assert_eq!(us(7), "0.007");
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
