//! `kubetrain-bench-report`: Setup C's runs side by side, from the records the throughput
//! tests appended to `KUBETRAIN_BENCH_RECORD` (see `kubetrain_e2e::bench`).
//!
//! ```text
//! kubetrain-bench-report RECORDS              # print the report
//! kubetrain-bench-report RECORDS --docs FILE  # and write it into FILE between its markers
//! ```

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use kubetrain_e2e::bench::{self, Provenance};

#[derive(Parser, Debug)]
#[command(
    name = "kubetrain-bench-report",
    about = "Setup C's benchmark runs side by side, from their records"
)]
struct Cli {
    /// The records file the throughput tests appended to.
    records: PathBuf,
    /// A Markdown file to write the report into, between its generated-part markers.
    #[arg(long)]
    docs: Option<PathBuf>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let records = bench::read(&cli.records)?;
    let from = Provenance {
        date: k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%d %H:%M UTC")
            .to_string(),
        commit: commit(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
    };
    let text = bench::report(&records, &from);
    println!("{text}");
    if let Some(path) = cli.docs {
        let doc = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let new = bench::splice(&doc, &text, &path.display().to_string())?;
        std::fs::write(&path, new).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote the report into {}", path.display());
    }
    Ok(())
}

/// The checked-out commit, marked when the tree has changes, if git can tell.
fn commit() -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(kubetrain_e2e::repo_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{head}, with changes")
    } else {
        head
    })
}
