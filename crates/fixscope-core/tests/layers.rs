//! The core's layers, enforced: every top-level module of `src/` belongs to exactly one
//! layer, and a module names only modules of its own layer or the layers below it (within a
//! layer, no two modules use each other, even through a third). What cargo would enforce
//! between crates, checked here in one crate (docs/architecture.md, "The layers", says why
//! the core is one crate). A module added without a layer, or an arrow pointing up, fails
//! with the file and the name that points up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. docs/architecture.md's table lists the same modules.
const LAYERS: &[(&str, &[&str])] = &[
    // fixscope-model's crate: every module below may name them.
    (
        "vocabulary",
        &[
            "wire",
            "segment",
            "order",
            "clock",
            "human",
            "shutdown",
            "socket_event",
            "sparse_hist",
            "ports",
            "source",
            "counters",
        ],
    ),
    (
        "capture",
        &[
            "encap",
            "decode",
            "pcap_writer",
            "pcap",
            "mirror_dup",
            "wire_stamp",
            "capture_stats",
            "acceptor",
            "classify",
            "prefetch",
        ],
    ),
    ("streams", &["reassembly", "tls", "fix"]),
    (
        "producers",
        &[
            "recorder",
            "group",
            "consumer",
            "correlate",
            "microburst",
            "session",
            "breakdown",
            "hops",
            "slowest",
            "consumers",
            "sink",
            "points",
        ],
    ),
    ("figures", &["figures", "stats"]),
    ("reporters", &["report", "hlog"]),
    ("plans", &["pipeline", "shard", "twostage", "feeds"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path below the crate: `pipeline/routing.rs` → [pipeline, routing],
/// `order/mod.rs` → [order], `lib.rs` → [].
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text less every `#[cfg(test)]` item — `mod tests;` declarations and `mod tests { … }`
/// blocks alike: a declaration near the top must not hide the rest of the file (it once hid a
/// module circle, as the team's module-cycles tool now reads files too).
fn without_test_items(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => {
                    end = i + 1;
                    break;
                }
                '}' => depth = depth.saturating_sub(1),
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The code a file's readers see: comments and the unit tests left out (a test module may
/// use what it tests from above).
fn code_of(text: &str) -> String {
    let code = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    without_test_items(&code)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first path segment after each `crate::` (braced groups expanded one level), and
/// each `super::` resolved from `here`.
fn named_modules(
    code: &str,
    here: &[String],
    root_names: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let text: String = bytes.iter().collect();
    let mut at = 0;
    while let Some(i) = text[at..].find("crate::").map(|i| i + at) {
        at = i + "crate::".len();
        if i > 0 && is_ident(text[..i].chars().last().unwrap_or(' ')) {
            continue; // e.g. `fixscope_core::` is another crate's path
        }
        let rest = &text[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let name: String = item.trim().chars().take_while(|&c| is_ident(c)).collect();
                out.push(name);
            }
        } else {
            out.push(rest.chars().take_while(|&c| is_ident(c)).collect());
        }
    }
    // `super::` climbs from the file's module; reaching the root names a top-level module.
    let mut at = 0;
    while let Some(i) = text[at..].find("super::").map(|i| i + at) {
        if i > 0 && is_ident(text[..i].chars().last().unwrap_or(' ')) {
            at = i + 1;
            continue;
        }
        let mut depth = 0;
        let mut j = i;
        while text[j..].starts_with("super::") {
            depth += 1;
            j += "super::".len();
        }
        at = j;
        if depth == here.len() {
            out.push(text[j..].chars().take_while(|&c| is_ident(c)).collect());
        }
    }
    out.into_iter()
        .filter(|n| !n.is_empty() && n != "self")
        .map(|n| root_names.get(&n).cloned().unwrap_or(n))
        .collect()
}

/// The crate root's re-exports (`pub use pipeline::{Pipeline, …}`): name → module.
fn root_reexports() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        if module.starts_with("fixscope_") {
            continue; // a crate below: its modules keep their own names here
        }
        let names = rest[module.len()..].trim_start_matches("::");
        for name in names.trim_matches(|c| "{};".contains(c)).split(',') {
            out.insert(name.trim().to_string(), module.clone());
        }
    }
    out
}

/// The modules the crate root re-exports from the layers' own crates below it
/// (`pub use fixscope_model::{clock, counters, …};`, `pub use fixscope_capture::pcap_writer;`, `pub use fixscope_fix as fix;`): they keep their `crate::` paths here.
fn modules_from_crates_below() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut out = BTreeSet::new();
    for block in lib.split("pub use fixscope_").skip(1) {
        let path = &block[..block.find(';').unwrap_or(block.len())];
        // `pub use fixscope_fix as fix;`: a whole crate under a module's name.
        if let Some((_, name)) = path.split_once(" as ") {
            out.insert(name.trim().to_string());
            continue;
        }
        let Some((_, names)) = path.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        out.extend(
            names
                .split(',')
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty()),
        );
    }
    out
}

/// Module → (layer index, layer name).
fn layer_of() -> BTreeMap<&'static str, (usize, &'static str)> {
    let mut out = BTreeMap::new();
    for (i, (layer, modules)) in LAYERS.iter().enumerate() {
        for m in *modules {
            assert!(
                out.insert(*m, (i, *layer)).is_none(),
                "{m} is in two layers"
            );
        }
    }
    out
}

/// Every file with the top-level modules it names (itself left out).
fn arrows() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let roots = root_reexports();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let here = module_path(&file);
        let Some(top) = here.first().cloned() else {
            continue; // lib.rs: the crate's face
        };
        let code = code_of(&std::fs::read_to_string(&file).expect("readable"));
        let named: BTreeSet<String> = named_modules(&code, &here, &roots)
            .into_iter()
            .filter(|m| *m != top)
            .collect();
        out.push((file, top, named));
    }
    out
}

#[test]
fn every_module_has_a_layer_and_names_only_its_own_layer_or_below() {
    let layers = layer_of();
    let mut problems = Vec::new();
    let mut modules = BTreeSet::new();
    for (file, top, named) in arrows() {
        modules.insert(top.clone());
        let Some(&(mine, my_layer)) = layers.get(top.as_str()) else {
            problems.push(format!("{top} ({}) has no layer in LAYERS", file.display()));
            continue;
        };
        for m in named {
            // Names that are not modules (a macro, a root re-export missed) are not arrows.
            let Some(&(theirs, their_layer)) = layers.get(m.as_str()) else {
                continue;
            };
            if theirs > mine {
                problems.push(format!(
                    "{} ({top}, layer {my_layer}) names {m} (layer {their_layer}, above it)",
                    file.display()
                ));
            }
        }
    }
    let below = modules_from_crates_below();
    for m in layers.keys() {
        if !modules.contains(*m) && !below.contains(*m) {
            problems.push(format!(
                "LAYERS lists {m}, which src/ does not have nor lib.rs re-export from a crate below"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "layer violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_two_modules_of_a_layer_use_each_other() {
    let layers = layer_of();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, top, named) in arrows() {
        let same = |m: &String| {
            layers.get(m.as_str()).map(|l| l.0) == layers.get(top.as_str()).map(|l| l.0)
        };
        edges
            .entry(top.clone())
            .or_default()
            .extend(named.iter().filter(|m| same(m)).cloned());
    }
    // A module reaching itself through others is a circle.
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((m, path)) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                assert!(
                    next != start,
                    "modules in a circle: {} → {start}",
                    path.join(" → ")
                );
                if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
}

#[test]
fn the_architecture_doc_lists_every_module_in_its_layer() {
    let doc = include_str!("../../../docs/architecture.md");
    let table = doc
        .split("<!-- layers -->")
        .nth(1)
        .expect("docs/architecture.md has the layer table between <!-- layers --> marks");
    for (layer, modules) in LAYERS {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| {layer} |")))
            .unwrap_or_else(|| panic!("the layer table has no row for {layer}"));
        for m in *modules {
            assert!(
                row.contains(&format!("`{m}`")),
                "the {layer} row does not name `{m}`"
            );
        }
    }
}

#[test]
fn the_checker_sees_an_arrow_up() {
    // The checker itself: a producer naming the pipeline, a `super::` from a folder's root
    // and a braced group are all read as arrows.
    let roots = root_reexports();
    let here = vec!["correlate".to_string()];
    let named = named_modules("use crate::pipeline::Pipeline;", &here, &roots);
    assert_eq!(named, ["pipeline"]);
    let named = named_modules("use super::report::Reporter;", &here, &roots);
    assert_eq!(named, ["report"]);
    let named = named_modules("use crate::{stats::Stats, Pipeline};", &here, &roots);
    assert_eq!(named, ["stats", "pipeline"]);
    let nested = vec!["pipeline".to_string(), "routing".to_string()];
    assert!(named_modules("use super::forward::Forwarder;", &nested, &roots).is_empty());
    assert!(named_modules("fixscope_core::crate_x", &here, &roots).is_empty());
}

#[test]
fn a_test_module_declared_at_the_top_hides_nothing_below_it() {
    let text = "#[cfg(test)]\nmod tests;\nuse crate::report::utc;\n#[cfg(test)]\nmod more {\n    use crate::pipeline::x;\n    fn f() { {} }\n}\nuse crate::clock::y;\n";
    let code = code_of(text);
    assert!(code.contains("crate::report::utc"), "{code}");
    assert!(code.contains("crate::clock::y"), "{code}");
    assert!(!code.contains("crate::pipeline"), "{code}");
    assert!(!code.contains("mod tests"), "{code}");
}
