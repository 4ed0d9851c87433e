//! kubetrain: a Kubernetes operator that queues, places, runs, retries and preempts
//! deep-learning training jobs on GPU clusters shared by many teams.
//!
//! - [`api`]: the custom resources (`TrainingJob`, `Queue`, `VirtualCluster`) and the node
//!   topology annotation shared with the node labeler.
//! - [`sched`]: the scheduling core, a pure library (snapshot in, decisions out).
//! - [`controller`]: the reconcilers and the scheduling loop that drive `sched` from the API.

pub mod api;
pub mod controller;
pub mod sched;
pub mod sim;
