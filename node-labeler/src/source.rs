//! Where a node's GPU facts come from: NVML, or a file standing in for it.
//!
//! `--topology-file` makes the labeler publish a described node instead of reading NVML:
//! simulated nodes in tests and machines without drivers. The file may hold
//! - a [`NodeTopology`] document (JSON or YAML with a `version`), published as it is,
//! - an [`Inventory`] (JSON or YAML without `version`), interpreted like an NVML reading,
//! - an `nvidia-smi topo -m` capture, which gives GPUs and their links but no products,
//! - an `nvidia-smi -L` capture, which gives GPUs, products and MIG devices but no links.

use std::path::Path;

use kubetrain::api::NodeTopology;
use kubetrain::api::topology::TopologyError;

use crate::inventory::Inventory;
use crate::smi_list::{self, SmiListError};
use crate::topo_matrix::{TopoMatrix, TopoMatrixError};
use crate::topology;

/// What the labeler knows about the node's GPUs this time round.
#[derive(Clone, Debug, PartialEq)]
pub enum Observation {
    /// Readings to interpret (from NVML, an inventory file or a `topo -m` capture).
    Inventory(Inventory),
    /// A complete topology document from a file.
    Topology(NodeTopology),
    /// No GPU information, and why (no driver, no GPU, NVML failed).
    Absent(String),
}

impl Observation {
    /// The topology to publish, with the rack from the Node's labels (a document from a file
    /// keeps its own rack when the Node has none). `None` when there is nothing true to say.
    pub fn topology(&self, rack: Option<String>) -> Option<NodeTopology> {
        let topology = match self {
            Observation::Inventory(inventory) => topology::build(inventory, rack),
            Observation::Topology(t) => {
                let mut t = t.clone();
                if rack.is_some() {
                    t.rack = rack;
                }
                t
            }
            Observation::Absent(_) => return None,
        };
        (!topology.gpus.is_empty()).then_some(topology)
    }
}

/// Why a topology file could not be used: a misconfiguration.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Could not be read.
    #[error("cannot read topology file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// JSON/YAML that is neither a topology nor an inventory.
    #[error("topology file {path} is not a topology or inventory document: {message}")]
    Document {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A topology document that breaks its rules.
    #[error("topology file {path}: {source}")]
    Topology {
        /// The file.
        path: String,
        /// The error.
        source: TopologyError,
    },
    /// A `topo -m` capture that could not be parsed.
    #[error("topology file {path}: {source}")]
    Matrix {
        /// The file.
        path: String,
        /// The error.
        source: TopoMatrixError,
    },
    /// An `nvidia-smi -L` capture that could not be parsed.
    #[error("topology file {path}: {source}")]
    List {
        /// The file.
        path: String,
        /// The error.
        source: SmiListError,
    },
}

/// Reads a `--topology-file`.
pub fn read_file(path: &Path) -> Result<Observation, FileError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
        path: name.clone(),
        source,
    })?;
    parse_description(&text).map_err(|e| match e {
        Described::Document(message) => FileError::Document {
            path: name,
            message,
        },
        Described::Topology(source) => FileError::Topology { path: name, source },
        Described::Matrix(source) => FileError::Matrix { path: name, source },
        Described::List(source) => FileError::List { path: name, source },
    })
}

/// Error of [`parse_description`], without the file name.
#[derive(Debug)]
pub enum Described {
    /// Not a topology or inventory document.
    Document(String),
    /// A topology document that breaks its rules.
    Topology(TopologyError),
    /// A `topo -m` capture that could not be parsed.
    Matrix(TopoMatrixError),
    /// An `nvidia-smi -L` capture that could not be parsed.
    List(SmiListError),
}

/// Reads a node description in any of the accepted forms (see the module docs).
pub fn parse_description(text: &str) -> Result<Observation, Described> {
    let looks_like_matrix = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.split_whitespace().any(|t| t.contains("GPU0")));
    if looks_like_matrix {
        let matrix = TopoMatrix::parse(text).map_err(Described::Matrix)?;
        return Ok(Observation::Inventory(matrix.to_inventory()));
    }
    if smi_list::looks_like_list(text) {
        let inventory = smi_list::parse(text).map_err(Described::List)?;
        return Ok(Observation::Inventory(inventory));
    }
    // YAML is a superset of JSON, so one parser reads both.
    let value: serde_json::Value =
        serde_norway::from_str(text).map_err(|e| Described::Document(e.to_string()))?;
    if !value.is_object() {
        return Err(Described::Document("expected a mapping".into()));
    }
    if value.get("version").is_some() {
        // Through the annotation reader, so the same version and consistency rules apply.
        let topology = NodeTopology::parse(&value.to_string()).map_err(Described::Topology)?;
        Ok(Observation::Topology(topology))
    } else {
        let inventory: Inventory =
            serde_json::from_value(value).map_err(|e| Described::Document(e.to_string()))?;
        Ok(Observation::Inventory(inventory))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_form() {
        let doc = r#"{"version":1,"product":"X","gpus":[{"index":0}],"groups":[{"gpus":[0]}]}"#;
        assert!(matches!(
            parse_description(doc),
            Ok(Observation::Topology(_))
        ));
        let inv = "gpus:\n  - index: 0\n    product: Tesla T4\n    memoryMib: 15360\n";
        let Ok(Observation::Inventory(i)) = parse_description(inv) else {
            panic!()
        };
        assert_eq!(i.gpus[0].product, "Tesla T4");
        let matrix = "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\t X \n";
        let Ok(Observation::Inventory(i)) = parse_description(matrix) else {
            panic!()
        };
        assert_eq!(i.gpus.len(), 2);
    }

    #[test]
    fn rejects_unknown_versions_and_junk() {
        let v2 = r#"{"version":2,"gpus":[]}"#;
        assert!(matches!(
            parse_description(v2),
            Err(Described::Topology(
                TopologyError::UnsupportedVersion { .. }
            ))
        ));
        assert!(matches!(
            parse_description("- a\n- b\n"),
            Err(Described::Document(_))
        ));
        assert!(matches!(
            parse_description(r#"{"gpus": 3}"#),
            Err(Described::Document(_))
        ));
    }

    #[test]
    fn absent_and_empty_publish_no_topology() {
        assert_eq!(Observation::Absent("no driver".into()).topology(None), None);
        assert_eq!(
            Observation::Inventory(Inventory::default()).topology(None),
            None
        );
    }
}
