//! The trace-driven simulator: replays real traces through the very same
//! [`sched::schedule`](crate::sched::schedule) the operator runs, in simulated time, with no
//! API server.
//!
//! - [`openb`] and [`philly`] read the Alibaba openb pod/node lists and the Microsoft Philly
//!   job table (paths come from the caller; nothing is copied into the repository).
//! - [`placement`] is Setup A, the FGD protocol: pods arrive until 130 % of the GPUs are
//!   asked for, nothing leaves, each pod is placed at once or fails; GPU allocation ratio and
//!   fragmentation are recorded per 1 % of arrived demand.
//! - [`tenants`] is Setup B: a discrete-event simulation of a Philly window (arrivals,
//!   completions, checkpoint acknowledgements after a delay, preemptions whose lost work is
//!   the GPU-time since the last periodic checkpoint) under four policies, three of which are
//!   baselines expressed as honest variations of the snapshot given to `sched` or of how the
//!   simulator carries out its decisions (see [`tenants::Policy`]).
//! - [`predictions`]: Setup B with run times learned from the trace's own past, and
//!   shortest-predicted-first with them against the oracle of the true run times.
//! - [`stats`] (percentiles, CDFs) and [`report`] (JSON, CSV, markdown tables, SVG plots).
//!
//! Everything is deterministic for a given seed: the only randomness is [`rng::SplitMix64`].

pub mod fgd;
pub mod openb;
pub mod philly;
pub mod placement;
pub mod predictions;
pub mod report;
pub mod rng;
pub mod stats;
pub mod strategies;
pub mod tenants;
pub mod windows;

use std::path::{Path, PathBuf};

/// Errors reading traces or writing reports.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
}

/// Read a whole text file.
pub(crate) fn read_text(path: &Path) -> Result<String, SimError> {
    std::fs::read_to_string(path).map_err(|source| SimError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Write a whole text file, creating its folder.
pub fn write_text(path: &Path, text: &str) -> Result<(), SimError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| SimError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| SimError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// A simple comma-separated table (no quoting: the traces have none): the header's column
/// names and the rows, with 1-based line numbers for errors.
pub(crate) struct Table {
    pub path: PathBuf,
    pub columns: Vec<String>,
    pub rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    pub fn read(path: &Path) -> Result<Table, SimError> {
        let text = read_text(path)?;
        let mut lines = text.lines().enumerate();
        let Some((_, header)) = lines.next() else {
            return Err(SimError::Parse {
                path: path.to_path_buf(),
                line: 1,
                message: "empty file".into(),
            });
        };
        let columns = header
            .trim()
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        let rows = lines
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                (
                    i + 1,
                    l.trim().split(',').map(|s| s.trim().to_string()).collect(),
                )
            })
            .collect();
        Ok(Table {
            path: path.to_path_buf(),
            columns,
            rows,
        })
    }

    /// Index of a required column.
    pub fn col(&self, name: &str) -> Result<usize, SimError> {
        self.columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| SimError::Parse {
                path: self.path.clone(),
                line: 1,
                message: format!("missing column {name}"),
            })
    }

    /// A field parsed as `T` (an empty field is an error unless `T` parses it).
    pub fn get<T: std::str::FromStr>(
        &self,
        line: usize,
        row: &[String],
        col: usize,
    ) -> Result<T, SimError> {
        let raw = row.get(col).map(String::as_str).unwrap_or("");
        raw.parse().map_err(|_| SimError::Parse {
            path: self.path.clone(),
            line,
            message: format!(
                "column {} has {raw:?}",
                self.columns.get(col).map(String::as_str).unwrap_or("?")
            ),
        })
    }
}
