//! What each counter means, read from the one place it is written: the tables of
//! docs/output-json.md (embedded at build time), so the HTML report and the docs never
//! disagree.

/// The docs the meanings come from.
const DOC: &str = include_str!("../../../../docs/output-json.md");

/// The meaning of counter `name` from a `| \`name\` | meaning |` row of the docs (a row may
/// name several counters: `` `tcp_gaps`, `tcp_gap_bytes` ``).
pub fn meaning(name: &str) -> Option<&'static str> {
    let quoted = format!("`{name}`");
    DOC.lines().find_map(|line| {
        let rest = line.strip_prefix("| ")?;
        let (first, second) = rest.split_once(" | ")?;
        let names_only = first
            .split(',')
            .all(|n| n.trim().starts_with('`') && n.trim().ends_with('`'));
        if !names_only || !first.split(',').any(|n| n.trim() == quoted) {
            return None;
        }
        Some(second.trim_end().trim_end_matches('|').trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::report::Counters;

    /// Every pipeline counter has its meaning in the docs' table, which the report shows.
    #[test]
    fn every_pipeline_counter_has_a_meaning() {
        let missing: Vec<String> = Counters::default()
            .list()
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| meaning(n).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "no meaning in docs/output-json.md: {missing:?}"
        );
        assert!(meaning("late").unwrap().contains("after `-t`"));
        assert!(meaning("tcp_gap_bytes").unwrap().contains("holes"));
        assert_eq!(meaning("no_such_counter"), None);
    }
}
