//! Every fuzz target over its seeds (generated here and committed under `seeds/`) and over
//! every input that ever crashed it (`regressions/<target>/`): the fuzzers' findings stay
//! fixed, in seconds, in `make test`.

use std::path::Path;

use fixscope_fuzz::TARGETS;

fn target(name: &str) -> fn(&[u8]) {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, f)| f)
        .unwrap_or_else(|| panic!("no fuzz target {name}"))
}

/// Runs `name` over every file in `dir` (a missing directory holds nothing); returns how many.
fn replay_dir(name: &str, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("a readable directory").path();
        let bytes = std::fs::read(&path).expect("a readable input");
        let result = std::panic::catch_unwind(|| target(name)(&bytes));
        assert!(
            result.is_ok(),
            "fuzz target {name} fails on {}",
            path.display()
        );
        n += 1;
    }
    n
}

#[test]
fn generated_seeds_pass_every_target() {
    let seeds = fixscope_fuzz::seeds::seeds().expect("seeds build");
    for (name, _) in TARGETS {
        assert!(
            seeds.iter().any(|(t, _, _)| *t == name),
            "target {name} has no seed"
        );
    }
    for (name, seed, bytes) in &seeds {
        let result = std::panic::catch_unwind(|| target(name)(bytes));
        assert!(result.is_ok(), "fuzz target {name} fails on seed {seed}");
    }
}

#[test]
fn committed_seeds_and_regressions_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = 0;
    for (name, _) in TARGETS {
        seeds += replay_dir(name, &root.join("seeds").join(name));
        replay_dir(name, &root.join("regressions").join(name));
    }
    assert!(
        seeds >= TARGETS.len(),
        "the committed seeds are missing (run `make fuzz-seeds`)"
    );
}

/// Every target also survives the inputs a fuzzer starts from: nothing, and short runs of
/// each byte value.
#[test]
fn trivial_inputs_pass_every_target() {
    for (_, f) in TARGETS {
        f(&[]);
        for b in [0u8, 1, 0xff, b'8'] {
            for len in [1, 7, 64, 300] {
                f(&vec![b; len]);
            }
        }
    }
}

/// Every target has its libFuzzer binary and is in `scripts/fuzz.sh`'s default list, so
/// `make fuzz` runs what `make test` replays.
#[test]
fn every_target_is_built_and_run_by_make_fuzz() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the manifest");
    let script = std::fs::read_to_string(root.join("../scripts/fuzz.sh")).expect("the script");
    let defaults = script
        .split("TARGETS=(")
        .nth(2)
        .and_then(|rest| rest.split(')').next())
        .expect("fuzz.sh's default list");
    let defaults: Vec<&str> = defaults.split_whitespace().collect();
    for (name, _) in TARGETS {
        assert!(
            manifest.contains(&format!("fuzz_targets/fuzz_{name}.rs")),
            "no libFuzzer binary for {name}"
        );
        assert!(root.join(format!("fuzz_targets/fuzz_{name}.rs")).exists());
        assert!(
            defaults.contains(&name),
            "{name} missing from fuzz.sh's defaults"
        );
    }
    assert_eq!(
        defaults.len(),
        TARGETS.len(),
        "fuzz.sh runs a target that is not one"
    );
}
