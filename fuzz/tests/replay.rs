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
