//! Writes every target's seeds to `fuzz/seeds/<target>/` (run by `make fuzz-seeds`; the
//! output is committed).

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    for (target, name, bytes) in fixscope_fuzz::seeds::seeds()? {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), bytes)?;
    }
    println!("seeds written to {}", root.display());
    Ok(())
}
