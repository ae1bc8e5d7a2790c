//! Test data kept in the repository (`testdata/` at the workspace root), so tests read
//! nothing outside the checkout and pass on a fresh clone.

use std::path::PathBuf;

/// The path of `relative` under the workspace's `testdata/` folder. A missing file fails
/// the test loudly (it is part of the repository: a broken checkout, not a reason to skip).
pub fn test_data(relative: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(relative);
    assert!(
        path.exists(),
        "test data {} is missing: it is part of the repository (testdata/)",
        path.display()
    );
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_vendored_captures() {
        let p = test_data("captures/ndpi/ndpi_fix.pcap");
        assert_eq!(std::fs::metadata(p).unwrap().len(), 135_714);
    }

    #[test]
    #[should_panic(expected = "is missing")]
    fn a_missing_file_fails_loudly() {
        test_data("captures/no-such-file.pcap");
    }
}
