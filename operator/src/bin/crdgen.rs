//! Writes the CustomResourceDefinitions of kubetrain as YAML, one file per kind.
//!
//! `crdgen <dir>...` writes `<dir>/<plural>.yaml` into each directory named (`make crds`: crds/,
//! config/crds/ and the Helm chart's charts/kubetrain/files/crds/, which its templates/crds.yaml
//! renders); `crdgen` alone prints all of them.

use std::path::PathBuf;

use kubetrain::api::{crd_yaml, crds};

fn main() -> anyhow::Result<()> {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        for (_, crd) in crds() {
            print!("---\n{}", crd_yaml(&crd)?);
        }
    }
    for dir in dirs {
        std::fs::create_dir_all(&dir)?;
        for (plural, crd) in crds() {
            let path = dir.join(format!("{plural}.yaml"));
            std::fs::write(&path, crd_yaml(&crd)?)?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}
