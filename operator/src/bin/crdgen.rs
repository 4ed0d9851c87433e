//! Writes the CustomResourceDefinitions of kubetrain as YAML, one file per kind.
//!
//! `crdgen <dir>` writes `<dir>/<plural>.yaml`; `crdgen` alone prints all of them.

use std::path::PathBuf;

use kubetrain::api::{crd_yaml, crds};

fn main() -> anyhow::Result<()> {
    match std::env::args_os().nth(1).map(PathBuf::from) {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            for (plural, crd) in crds() {
                let path = dir.join(format!("{plural}.yaml"));
                std::fs::write(&path, crd_yaml(&crd)?)?;
                eprintln!("wrote {}", path.display());
            }
        }
        None => {
            for (_, crd) in crds() {
                print!("---\n{}", crd_yaml(&crd)?);
            }
        }
    }
    Ok(())
}
