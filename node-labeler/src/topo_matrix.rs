//! Parser of `nvidia-smi topo -m` (and `topo -mp`) output.
//!
//! The matrix is how people share a machine's GPU topology, so captures of real machines
//! (DGX A100, DGX-1, PCIe boxes) become test fixtures through this parser, and
//! `--topology-file` accepts one for simulated nodes. Only the GPU×GPU cells and the CPU/NUMA
//! affinity columns are read; NIC columns and rows are skipped. The format varies between
//! driver versions (tabs or spaces, with or without `NUMA Affinity` and `GPU NUMA ID`,
//! underline escapes in the header), so columns are found by name, not position.

use kubetrain::api::topology::PcieLevel;

use crate::inventory::{GpuReading, Inventory, PairReading};

/// Why a matrix could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopoMatrixError {
    /// No header line naming `GPU0`.
    #[error("no `nvidia-smi topo -m` header (a line naming GPU0) found")]
    NoHeader,
    /// A GPU row that does not fit the header.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One cell of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    /// `X`: the device itself.
    SelfLink,
    /// `NV#`: a bonded set of # NVLinks.
    NvLink(u32),
    /// A PCIe path (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`/`SOC`).
    Pcie(PcieLevel),
}

impl Connection {
    /// Reads one cell.
    pub fn parse(cell: &str) -> Option<Connection> {
        Some(match cell {
            "X" => Connection::SelfLink,
            "PIX" => Connection::Pcie(PcieLevel::Switch),
            "PXB" => Connection::Pcie(PcieLevel::MultiSwitch),
            "PHB" => Connection::Pcie(PcieLevel::HostBridge),
            "NODE" => Connection::Pcie(PcieLevel::Numa),
            // `SOC` is what drivers before 384 printed for `SYS`.
            "SYS" | "SOC" => Connection::Pcie(PcieLevel::System),
            nv => Connection::NvLink(nv.strip_prefix("NV")?.parse().ok()?),
        })
    }
}

/// One GPU row of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRow {
    /// Index from the row name (`GPU3` → 3).
    pub index: u32,
    /// Connection to each GPU column, in column order.
    pub to_gpus: Vec<Connection>,
    /// `CPU Affinity` column, when present and not `N/A`.
    pub cpu_affinity: Option<String>,
    /// `NUMA Affinity` column, when present and not `N/A`.
    pub numa_affinity: Option<u32>,
}

/// The GPU part of a `topo -m` matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoMatrix {
    /// GPU column indices, in column order.
    pub gpu_columns: Vec<u32>,
    /// GPU rows, in row order.
    pub rows: Vec<GpuRow>,
}

/// Affinity columns in the order `nvidia-smi` prints them.
const AFFINITY_COLUMNS: [&str; 3] = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"];

fn gpu_name_index(token: &str) -> Option<u32> {
    token.strip_prefix("GPU")?.parse().ok()
}

/// Removes ANSI escape sequences (newer drivers underline the header).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl TopoMatrix {
    /// Parses the output of `nvidia-smi topo -m`.
    pub fn parse(text: &str) -> Result<TopoMatrix, TopoMatrixError> {
        let lines: Vec<String> = text.lines().map(strip_ansi).collect();
        let (header_at, header) = lines
            .iter()
            .enumerate()
            .find(|(_, l)| l.split_whitespace().any(|t| t == "GPU0"))
            .ok_or(TopoMatrixError::NoHeader)?;

        // Device columns are the header tokens before the affinity columns.
        let tokens: Vec<&str> = header.split_whitespace().collect();
        let first_affinity = tokens
            .iter()
            .position(|t| matches!(*t, "CPU" | "NUMA" | "GPU"))
            .unwrap_or(tokens.len());
        let devices = &tokens[..first_affinity];
        let rest = tokens[first_affinity..].join(" ");
        let affinity: Vec<&str> = AFFINITY_COLUMNS
            .iter()
            .copied()
            .filter(|c| rest.contains(c))
            .collect();
        let gpu_columns: Vec<(usize, u32)> = devices
            .iter()
            .enumerate()
            .filter_map(|(i, t)| gpu_name_index(t).map(|g| (i, g)))
            .collect();

        let mut rows = Vec::new();
        for (n, line) in lines.iter().enumerate().skip(header_at + 1) {
            let line_no = n + 1;
            let cells: Vec<&str> = line.split_whitespace().collect();
            let Some(first) = cells.first() else {
                if rows.is_empty() {
                    continue;
                }
                break;
            };
            if first.starts_with("Legend") {
                break;
            }
            let Some(index) = gpu_name_index(first) else {
                continue; // a NIC row
            };
            let err = |message: String| TopoMatrixError::Line {
                line: line_no,
                message,
            };
            if cells.len() < 1 + devices.len() {
                return Err(err(format!(
                    "GPU{index} has {} cells, the header names {} devices",
                    cells.len() - 1,
                    devices.len()
                )));
            }
            let to_gpus = gpu_columns
                .iter()
                .map(|(col, _)| {
                    let cell = cells[1 + col];
                    Connection::parse(cell).ok_or_else(|| err(format!("unknown cell {cell:?}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let extra = &cells[1 + devices.len()..];
            let column = |name: &str| {
                affinity
                    .iter()
                    .position(|c| *c == name)
                    .and_then(|i| extra.get(i))
                    .filter(|v| **v != "N/A")
                    .map(|v| v.to_string())
            };
            let numa_affinity = match column("NUMA Affinity") {
                Some(v) => Some(
                    v.parse()
                        .map_err(|_| err(format!("NUMA affinity {v:?} is not a number")))?,
                ),
                None => None,
            };
            rows.push(GpuRow {
                index,
                to_gpus,
                cpu_affinity: column("CPU Affinity"),
                numa_affinity,
            });
        }
        if rows.is_empty() {
            return Err(TopoMatrixError::Line {
                line: header_at + 1,
                message: "header found but no GPU rows".into(),
            });
        }
        Ok(TopoMatrix {
            gpu_columns: gpu_columns.into_iter().map(|(_, g)| g).collect(),
            rows,
        })
    }

    /// The connection between GPUs `a` and `b`, as row `a` reports it.
    pub fn connection(&self, a: u32, b: u32) -> Option<Connection> {
        let row = self.rows.iter().find(|r| r.index == a)?;
        let col = self.gpu_columns.iter().position(|g| *g == b)?;
        row.to_gpus.get(col).copied()
    }

    /// An inventory with what the matrix says: GPU indices, CPU/NUMA affinity and, per pair,
    /// NVLink count or PCIe level (`topo -m` shows one or the other). Products, memory and
    /// UUIDs are not in a matrix and stay empty.
    pub fn to_inventory(&self) -> Inventory {
        let gpus = self
            .rows
            .iter()
            .map(|r| GpuReading {
                index: r.index,
                numa_node: r.numa_affinity,
                cpu_affinity: r.cpu_affinity.clone(),
                ..Default::default()
            })
            .collect();
        let mut pairs = Vec::new();
        for ra in &self.rows {
            for rb in &self.rows {
                if ra.index >= rb.index {
                    continue;
                }
                let pair = match self.connection(ra.index, rb.index) {
                    Some(Connection::NvLink(n)) => PairReading {
                        a: ra.index,
                        b: rb.index,
                        nvlinks: n,
                        pcie: None,
                    },
                    Some(Connection::Pcie(level)) => PairReading {
                        a: ra.index,
                        b: rb.index,
                        nvlinks: 0,
                        pcie: Some(level),
                    },
                    Some(Connection::SelfLink) | None => continue,
                };
                pairs.push(pair);
            }
        }
        Inventory {
            gpus,
            pairs,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cells() {
        assert_eq!(Connection::parse("NV12"), Some(Connection::NvLink(12)));
        assert_eq!(
            Connection::parse("SOC"),
            Some(Connection::Pcie(PcieLevel::System))
        );
        assert_eq!(Connection::parse("NVx"), None);
        assert_eq!(Connection::parse("FOO"), None);
    }

    #[test]
    fn reads_a_space_separated_matrix_with_trailing_columns() {
        let text = "        GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID\n\
                    GPU0     X      NV4     0-23    0               N/A\n\
                    GPU1    NV4      X      0-23    0               N/A\n";
        let m = TopoMatrix::parse(text).unwrap();
        assert_eq!(m.connection(0, 1), Some(Connection::NvLink(4)));
        assert_eq!(m.rows[1].cpu_affinity.as_deref(), Some("0-23"));
        assert_eq!(m.rows[1].numa_affinity, Some(0));
    }

    #[test]
    fn rejects_rows_shorter_than_the_header_and_unknown_cells() {
        let short = "\tGPU0\tGPU1\nGPU0\t X \nGPU1\tPHB\t X \n";
        assert!(matches!(
            TopoMatrix::parse(short),
            Err(TopoMatrixError::Line { line: 2, .. })
        ));
        let odd = "\tGPU0\tGPU1\nGPU0\t X \tWAT\nGPU1\tPHB\t X \n";
        assert!(matches!(
            TopoMatrix::parse(odd),
            Err(TopoMatrixError::Line { .. })
        ));
        assert_eq!(TopoMatrix::parse("hello"), Err(TopoMatrixError::NoHeader));
    }

    #[test]
    fn strips_the_underline_escape_of_newer_drivers() {
        let text = "\t\u{1b}[4mGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u{1b}[0m\n\
                    GPU0\t X \t0-15\t0\t\tN/A\n";
        let m = TopoMatrix::parse(text).unwrap();
        assert_eq!(m.rows.len(), 1);
        assert_eq!(m.rows[0].numa_affinity, Some(0));
        assert_eq!(m.rows[0].cpu_affinity.as_deref(), Some("0-15"));
    }
}
