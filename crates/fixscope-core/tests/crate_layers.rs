//! The workspace's crates, in layers that cargo's own metadata must show: every crate's
//! dependencies point down, and no crate below the protocol seam — nor the seam, nor any
//! other protocol — depends on a protocol crate, in any kind of dependency. A crate added
//! without a layer, or an arrow up, fails with its name (docs/architecture.md, "The crates",
//! has the same table).

use std::collections::BTreeMap;

/// The layers, bottom first.
const CRATE_LAYERS: &[(&str, &[&str])] = &[
    // Leaves: TLS decryption and the tests' kit depend on no fixscope crate.
    ("leaves", &["fixscope-tls", "fixscope-testkit"]),
    ("vocabulary", &["fixscope-model"]),
    ("capture", &["fixscope-capture"]),
    ("streams", &["fixscope-streams"]),
    ("seam", &["fixscope-protocol"]),
    (
        "protocols",
        &[
            "fixscope-fix",
            "fixscope-ouch",
            "fixscope-ilink3",
            "fixscope-itch",
            "fixscope-mdp3",
        ],
    ),
    // Correlation, the session layer, consumers and joins: FIX through fixscope-fix today.
    ("orders", &["fixscope-orders"]),
    ("hops", &["fixscope-hops"]),
    ("figures", &["fixscope-figures"]),
    ("reporters", &["fixscope-report"]),
    // The plans (one pipeline, two stages, shards) and the facade of the crates below.
    ("core", &["fixscope-core"]),
    (
        "uses",
        &[
            "fixscope-compare",
            "fixscope-records",
            "fixscope-tap",
            "fixscope-live",
            "fixscope-sim",
        ],
    ),
    ("binaries", &["fixscope", "fixscope-fuzz"]),
];

/// The layer whose crates are protocols on the seam.
const PROTOCOLS: &str = "protocols";

/// One dependency of one crate: (crate, dependency, kind: `normal`, `dev`, `build`).
type Arrow = (String, String, String);

/// The workspace's crates and their fixscope dependencies, as `cargo metadata` says.
fn workspace() -> (Vec<String>, Vec<Arrow>) {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut crates = Vec::new();
    let mut arrows = Vec::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name").to_string();
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let to = dep["name"].as_str().expect("dependency name");
            if to.starts_with("fixscope") && to != name {
                let kind = dep["kind"].as_str().unwrap_or("normal").to_string();
                arrows.push((name.clone(), to.to_string(), kind));
            }
        }
        crates.push(name);
    }
    (crates, arrows)
}

/// What is wrong with `crates` and their `arrows` against `layers` (nothing: empty).
fn problems(layers: &[(&str, &[&str])], crates: &[String], arrows: &[Arrow]) -> Vec<String> {
    let mut layer_of = BTreeMap::new();
    for (i, (layer, members)) in layers.iter().enumerate() {
        for m in *members {
            layer_of.insert(m.to_string(), (i, *layer));
        }
    }
    let mut out = Vec::new();
    for c in crates {
        if !layer_of.contains_key(c) {
            out.push(format!("{c} has no layer in CRATE_LAYERS"));
        }
    }
    for c in layer_of.keys() {
        if !crates.contains(c) {
            out.push(format!(
                "CRATE_LAYERS lists {c}, which the workspace does not have"
            ));
        }
    }
    for (from, to, kind) in arrows {
        let (Some(&(a, la)), Some(&(b, lb))) = (layer_of.get(from), layer_of.get(to)) else {
            continue;
        };
        if lb == PROTOCOLS && la != "binaries" && a <= b {
            out.push(format!(
                "{from} ({la}) depends on the protocol {to} ({kind}): only the layers above \
                 the protocols may name one"
            ));
        } else if kind != "dev" && b >= a {
            out.push(format!(
                "{from} ({la}) depends on {to} ({lb}, not below it)"
            ));
        }
    }
    out
}

#[test]
fn the_workspace_crates_depend_only_downwards_and_no_neutral_crate_on_a_protocol() {
    let (crates, arrows) = workspace();
    assert!(crates.len() >= 10, "{crates:?}");
    let found = problems(CRATE_LAYERS, &crates, &arrows);
    assert!(found.is_empty(), "crate layers:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_a_neutral_crate_naming_a_protocol_and_an_arrow_up() {
    let crates: Vec<String> = CRATE_LAYERS
        .iter()
        .flat_map(|(_, m)| m.iter().map(|c| c.to_string()))
        .collect();
    let arrow = |a: &str, b: &str, k: &str| (a.to_string(), b.to_string(), k.to_string());
    // Even a test's dependency: the streams layer must not lean on FIX.
    let found = problems(
        CRATE_LAYERS,
        &crates,
        &[arrow("fixscope-streams", "fixscope-fix", "dev")],
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("protocol fixscope-fix"), "{found:?}");
    let found = problems(
        CRATE_LAYERS,
        &crates,
        &[arrow("fixscope-model", "fixscope-capture", "normal")],
    );
    assert!(found[0].contains("not below it"), "{found:?}");
    let mut more = crates.clone();
    more.push("fixscope-eti".into());
    let found = problems(CRATE_LAYERS, &more, &[]);
    assert_eq!(found, ["fixscope-eti has no layer in CRATE_LAYERS"]);
    // Every protocol is one: a neutral crate naming OUCH fails as one naming FIX, and
    // so does a protocol naming another.
    for (from, to) in [
        ("fixscope-streams", "fixscope-ouch"),
        ("fixscope-protocol", "fixscope-ouch"),
        ("fixscope-ouch", "fixscope-fix"),
    ] {
        let found = problems(CRATE_LAYERS, &crates, &[arrow(from, to, "normal")]);
        assert_eq!(found.len(), 1, "{from} -> {to}: {found:?}");
        assert!(found[0].contains(&format!("protocol {to}")), "{found:?}");
    }
    // Arrows down are fine, and a protocol named from above is what the seam is for.
    let found = problems(
        CRATE_LAYERS,
        &crates,
        &[
            arrow("fixscope-fix", "fixscope-protocol", "normal"),
            arrow("fixscope-core", "fixscope-fix", "normal"),
            arrow("fixscope", "fixscope-fix", "dev"),
            // A protocol's tests writing captures with the layer below the seam.
            arrow("fixscope-ouch", "fixscope-capture", "dev"),
        ],
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn the_architecture_doc_maps_every_crate_in_its_layer() {
    let doc = include_str!("../../../docs/architecture.md");
    let table = doc
        .split("<!-- crate-layers -->")
        .nth(1)
        .expect("docs/architecture.md has the crate map between <!-- crate-layers --> marks");
    for (layer, crates) in CRATE_LAYERS {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| {layer} |")))
            .unwrap_or_else(|| panic!("the crate map has no row for {layer}"));
        for c in *crates {
            assert!(
                row.contains(&format!("`{c}`")),
                "the {layer} row does not name `{c}`"
            );
        }
    }
}
