//! kubetrain: a Kubernetes operator that queues, places, runs, retries and preempts
//! deep-learning training jobs on GPU clusters shared by many teams.
//!
//! - [`api`]: the custom resources (`TrainingJob`, `Queue`, `VirtualCluster`) and the node
//!   topology annotation shared with the node labeler.
//! - [`sched`]: the scheduling core, a pure library (snapshot in, decisions out).
//! - [`controller`]: the reconcilers and the scheduling loop that drive `sched` from the API.
//! - [`predict`]: predicted run times, learned from the runs the cluster has seen.
//! - [`duration_flag`]: the syntax of duration flags, the operator's and the labeler's.
//! - [`reservation_agent`]: the container of a GPU reservation pod
//!   (`kubetrain-operator reserve-gpu`), which reports the device the device plugin gave it.

pub mod api;
pub mod controller;
pub mod duration_flag;
pub mod predict;
pub mod reservation_agent;
pub mod sched;
pub mod sim;
