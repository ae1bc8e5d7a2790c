//! The documentation's references to BENCHMARKS.md sections resolve (issue #36: README's
//! "BENCHMARKS.md §4c" named a heading that did not exist): every `§X` after
//! `BENCHMARKS.md` in README.md and docs/ is a section heading `X.` of BENCHMARKS.md, and
//! every `BENCHMARKS.md#anchor` link is one of its headings' anchors (as GitHub makes them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces
/// to `-`; repeats get `-1`, `-2`, ….
fn anchor(heading: &str, seen: &mut BTreeMap<String, usize>) -> String {
    let a: String = heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect();
    let n = seen.entry(a.clone()).or_insert(0);
    *n += 1;
    if *n == 1 {
        a
    } else {
        format!("{a}-{}", *n - 1)
    }
}

/// BENCHMARKS.md's anchors and section numbers (`4c` of `### 4c. Observer effect`).
fn benchmarks() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join("BENCHMARKS.md")).expect("BENCHMARKS.md");
    let (mut anchors, mut sections, mut seen) = (BTreeSet::new(), BTreeSet::new(), BTreeMap::new());
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let heading = heading.trim_start_matches('#').trim();
        anchors.insert(anchor(heading, &mut seen));
        if let Some((number, _)) = heading.split_once(". ") {
            if number.chars().all(|c| c.is_ascii_alphanumeric()) {
                sections.insert(number.to_string());
            }
        }
    }
    (anchors, sections)
}

#[test]
fn benchmarks_references_in_the_docs_resolve() {
    let (anchors, sections) = benchmarks();
    assert!(
        sections.contains("4c") && sections.contains("2f"),
        "{sections:?}"
    );
    let mut files = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut bad = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read");
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", path.display(), i + 1);
            for (k, link) in line.match_indices("BENCHMARKS.md#") {
                let a: String = line[k + link.len()..]
                    .chars()
                    .take_while(|c| !matches!(c, ')' | ' ' | '>'))
                    .collect();
                if !anchors.contains(&a) {
                    bad.push(format!("{at}: no heading has the anchor #{a}"));
                }
            }
            // `BENCHMARKS.md §4a, [§4d]…`: every § on a line that names BENCHMARKS.md.
            if line.contains("BENCHMARKS.md") {
                for (k, _) in line.match_indices('§') {
                    let s: String = line[k + '§'.len_utf8()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric())
                        .collect();
                    if !sections.contains(&s) {
                        bad.push(format!("{at}: BENCHMARKS.md has no section {s}"));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
