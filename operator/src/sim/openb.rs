//! The Alibaba openb GPU cluster trace (2023): node list `sn,cpu_milli,memory_mib,gpu,model`
//! and pod lists `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`. A pod with
//! `gpu_milli` < 1000 asks for a fraction of one GPU; `gpu_spec` (`V100M16|V100M32`) lists
//! the GPU models it accepts.

use std::path::Path;

use super::{SimError, Table};
use crate::sched::{Flavor, GpuDemand, MilliGpu, Node, Resources, Task};

/// One machine of the openb cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenbNode {
    pub name: String,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub gpus: u32,
    pub model: String,
}

impl OpenbNode {
    /// The node as the scheduling core sees it (no rack, default PCIe topology).
    pub fn to_node(&self) -> Node {
        Node {
            name: self.name.clone(),
            flavor: Flavor::new(self.model.clone()),
            allocatable: Resources {
                cpu_milli: self.cpu_milli,
                memory_bytes: self.memory_mib << 20,
                gpus: self.gpus,
            },
            rack: None,
            topology: Default::default(),
            unhealthy_gpus: vec![],
            schedulable: true,
            foreign: Resources::default(),
            ..Default::default()
        }
    }
}

/// One pod of an openb pod list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenbPod {
    pub name: String,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub num_gpu: u32,
    /// Milli-GPUs per GPU (1000 for whole GPUs).
    pub gpu_milli: u32,
    /// Accepted GPU models; empty means any.
    pub gpu_spec: Vec<String>,
}

impl OpenbPod {
    /// GPU demand of the pod: none, a share of one GPU, or whole GPUs.
    pub fn demand(&self) -> GpuDemand {
        match (self.num_gpu, self.gpu_milli) {
            (0, _) | (_, 0) => GpuDemand::None,
            (1, m) if m < 1000 => GpuDemand::Share(MilliGpu(m)),
            (n, _) => GpuDemand::Whole(n),
        }
    }

    /// GPU milli the pod asks for in total.
    pub fn gpu_milli_total(&self) -> u64 {
        self.demand().milli()
    }

    /// The pod as a one-task, one-replica job's task.
    pub fn task(&self) -> Task {
        Task {
            name: "pod".into(),
            replicas: 1,
            cpu_milli: self.cpu_milli,
            memory_bytes: self.memory_mib << 20,
            gpus: self.demand(),
            ..Default::default()
        }
    }

    pub fn gpu_types(&self) -> Vec<Flavor> {
        self.gpu_spec
            .iter()
            .map(|s| Flavor::new(s.clone()))
            .collect()
    }
}

/// Read `openb_node_list_gpu_node.csv` (nodes without GPUs are skipped).
pub fn read_nodes(path: &Path) -> Result<Vec<OpenbNode>, SimError> {
    let t = Table::read(path)?;
    let (sn, cpu, mem, gpu, model) = (
        t.col("sn")?,
        t.col("cpu_milli")?,
        t.col("memory_mib")?,
        t.col("gpu")?,
        t.col("model")?,
    );
    let mut out = Vec::with_capacity(t.rows.len());
    for (line, row) in &t.rows {
        let gpus: u32 = t.get(*line, row, gpu)?;
        if gpus == 0 {
            continue;
        }
        out.push(OpenbNode {
            name: row.get(sn).cloned().unwrap_or_default(),
            cpu_milli: t.get(*line, row, cpu)?,
            memory_mib: t.get(*line, row, mem)?,
            gpus,
            model: row.get(model).cloned().unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Read an `openb_pod_list_*.csv` (the `gpu_spec` column is optional).
pub fn read_pods(path: &Path) -> Result<Vec<OpenbPod>, SimError> {
    let t = Table::read(path)?;
    let (name, cpu, mem, ng, gm) = (
        t.col("name")?,
        t.col("cpu_milli")?,
        t.col("memory_mib")?,
        t.col("num_gpu")?,
        t.col("gpu_milli")?,
    );
    let spec = t.col("gpu_spec").ok();
    let mut out = Vec::with_capacity(t.rows.len());
    for (line, row) in &t.rows {
        let mut gpu_spec: Vec<String> = spec
            .and_then(|c| row.get(c))
            .map(|s| {
                s.split('|')
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut seen = std::collections::BTreeSet::new();
        gpu_spec.retain(|s| seen.insert(s.clone()));
        let pod = OpenbPod {
            name: row.get(name).cloned().unwrap_or_default(),
            cpu_milli: t.get(*line, row, cpu)?,
            memory_mib: t.get(*line, row, mem)?,
            num_gpu: t.get(*line, row, ng)?,
            gpu_milli: t.get(*line, row, gm)?,
            gpu_spec,
        };
        if pod.num_gpu > 1 && pod.gpu_milli < 1000 {
            return Err(SimError::Parse {
                path: path.to_path_buf(),
                line: *line,
                message: format!(
                    "{} GPUs of {} milli each: a share is of one GPU only",
                    pod.num_gpu, pod.gpu_milli
                ),
            });
        }
        out.push(pod);
    }
    Ok(out)
}
