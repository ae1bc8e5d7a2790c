//! HELP text of every counter, taken from the one place counters are explained
//! (docs/output-json.md's tables), so the metrics and the JSON never describe a counter
//! differently.

const DOC: &str = include_str!("../../../../docs/output-json.md");

/// Counters whose docs row only makes sense beside its neighbours.
const OWN_WORDS: [(&str, &str); 1] = [(
    "kernel_ring_drops",
    "records lost because the ring was full, both directions (the pipeline then sees a TCP gap)",
)];

/// The docs' description of counter `name` (its table row; else the row that mentions
/// it), or a pointer to the docs.
pub fn help_of(name: &str) -> String {
    if let Some((_, help)) = OWN_WORDS.iter().find(|(n, _)| *n == name) {
        return (*help).to_string();
    }
    let quoted = format!("`{name}`");
    let row_meaning = |line: &str| -> Option<String> {
        let meaning = line.strip_prefix('|')?.split('|').nth(1)?.trim();
        (!meaning.is_empty() && !meaning.starts_with("---")).then(|| meaning.replace('`', ""))
    };
    let own_row = DOC.lines().filter_map(|line| {
        let names = line.strip_prefix('|')?.split('|').next()?;
        if names.split(',').any(|n| n.trim() == quoted) {
            row_meaning(line)
        } else {
            None
        }
    });
    let mentioned = DOC
        .lines()
        .filter(|line| line.contains(&quoted))
        .filter_map(row_meaning);
    own_row
        .chain(mentioned)
        .next()
        .unwrap_or_else(|| format!("fixscope counter {name} (docs/output-json.md)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_counters_have_the_docs_meaning() {
        assert!(help_of("timed_out").starts_with("requests with no response within -t"));
        assert!(help_of("tcp_gap_bytes").starts_with("holes in a TCP stream"));
        assert_eq!(
            help_of("no_such_counter"),
            "fixscope counter no_such_counter (docs/output-json.md)"
        );
        for (name, _) in fixscope_core::report::Counters::default().list() {
            assert!(
                !help_of(&name).contains("docs/output-json.md"),
                "{name} has no docs row"
            );
        }
    }
}
