//! Which libraries the TLS uprobes go on: `--tls-lib` paths as given, else the system's
//! libssl (3.x and 1.1, whichever are installed). A uprobe is set on the file, so every
//! process that maps it — already running or started later — is seen.

use std::path::{Path, PathBuf};

/// The system's libssl sonames, newest first.
const SONAMES: [&str; 2] = ["libssl.so.3", "libssl.so.1.1"];

/// Where distributions keep them (Debian/Ubuntu multiarch, RHEL/Amazon Linux lib64, the
/// rest).
fn library_dirs() -> Vec<PathBuf> {
    let multiarch = match std::env::consts::ARCH {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        other => other,
    };
    [
        format!("/usr/lib/{multiarch}"),
        format!("/lib/{multiarch}"),
        "/usr/lib64".to_string(),
        "/lib64".to_string(),
        "/usr/lib".to_string(),
        "/lib".to_string(),
        "/usr/local/lib64".to_string(),
        "/usr/local/lib".to_string(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The libraries to hook: `explicit` if any (each must exist), else every system libssl
/// found in `dirs` (one file once, however many links reach it). Errors name what was
/// looked for and where.
pub(crate) fn libraries(explicit: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    if !explicit.is_empty() {
        return explicit
            .iter()
            .map(|p| {
                p.canonicalize()
                    .map_err(|e| format!("--tls-lib {}: {e}", p.display()))
            })
            .collect();
    }
    let found = system_libraries(&library_dirs());
    if found.is_empty() {
        return Err(format!(
            "--tls-uprobes: no system libssl ({}) in {}; name the library the engine uses \
             with --tls-lib PATH",
            SONAMES.join(", "),
            library_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(found)
}

fn system_libraries(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for soname in SONAMES {
        for dir in dirs {
            if let Ok(real) = Path::new(dir).join(soname).canonicalize() {
                if !found.contains(&real) {
                    found.push(real);
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_libraries_are_found_once_through_links_and_explicit_ones_must_exist() {
        let dir = std::env::temp_dir().join(format!("fixscope-libs-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("libssl.so.3.0.11"), b"elf").unwrap();
        std::os::unix::fs::symlink(a.join("libssl.so.3.0.11"), a.join("libssl.so.3")).unwrap();
        std::os::unix::fs::symlink(a.join("libssl.so.3.0.11"), b.join("libssl.so.3")).unwrap();
        std::fs::write(b.join("libssl.so.1.1"), b"elf").unwrap();
        let found = system_libraries(&[a.clone(), b.clone()]);
        assert_eq!(
            found,
            vec![
                a.join("libssl.so.3.0.11").canonicalize().unwrap(),
                b.join("libssl.so.1.1").canonicalize().unwrap()
            ]
        );
        assert!(libraries(&[dir.join("missing.so")])
            .unwrap_err()
            .contains("--tls-lib"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
