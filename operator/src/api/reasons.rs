//! The names kubetrain writes into statuses: a TrainingJob's condition types, the reasons of
//! those conditions and of its Events, the codes of why a job waits (`Admitted=False`, the
//! core's `WaitReason::code`), and the condition types and reasons of Queues and
//! VirtualClusters. `docs/troubleshooting.md` lists them for users; tests check the two
//! against each other, both ways.
//!
//! This module is plain Rust (no kube, no serde): the scheduling core names its wait codes
//! with it and stays pure. Reasons decided elsewhere are not here: why a job is invalid
//! (`Valid=False`) is `controller::validate::Invalid::reason`, and why a VirtualCluster's
//! guarantee is at risk (`GuaranteeAtRisk=True`) is the core's `ShortfallCause`.

macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name as the API and `kubectl describe` show it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant)),+
                }
            }

            /// The value of that name, as read back from an object (`None`: not one of
            /// ours, e.g. written by a newer operator).
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == name)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names! {
    /// The condition types of a TrainingJob's status.
    ConditionType {
        /// The job's references and templates are valid.
        Valid,
        /// The scheduler admitted the gang (`False`: why it waits).
        Admitted,
        /// Every replica runs (`False`: why it stopped).
        Running,
        /// The gang is asked to checkpoint and stop.
        Preempting,
        /// Every replica of every deciding task succeeded.
        Succeeded,
        /// The job failed for good.
        Failed,
    }
}

names! {
    /// The reasons of the lifecycle's conditions (besides the scheduler's wait reasons and the
    /// validation reasons).
    Reason {
        /// `Valid=True`.
        Valid,
        /// `Admitted=False` before the scheduler's first word on the job.
        Waiting,
        /// `Admitted=True` within the VirtualCluster's guarantee.
        AdmittedWithinGuarantee,
        /// `Admitted=True` on borrowed GPUs.
        AdmittedAsBonus,
        /// `Running=False` from the admission until every replica runs (phase `Starting`).
        Starting,
        /// `Running=False` while starting: a replica's pod reports a problem instead of
        /// progress (an image that cannot be pulled, a container that cannot be created).
        ReplicaNotStarting,
        /// `Running=True`.
        AllReplicasRunning,
        /// `Running=True`, but a node under a replica is not ready and not yet given up on
        /// (no NoExecute taint): the replicas may still run; the gang is not stopped.
        NodeNotReady,
        /// `Running=False`: a replica failed (counts as a retry).
        ReplicaFailed,
        /// `Running=False`: the platform stopped a replica (not counted).
        InfrastructureFailure,
        /// `Running=False`: the cluster's scheduler would not bind a pod where it was placed.
        SchedulerRejected,
        /// `Running=False`: a task's pod template changed before every replica ran; the gang
        /// starts again with the new one (not counted).
        TemplateChanged,
        /// `Running=False`: an `Ignore` rule of `spec.podFailurePolicy` matched a failed
        /// replica (not counted).
        FailureIgnored,
        /// `Running=False` after a preemption or suspension.
        Preempted,
        /// `Succeeded=True`; `Running=False` once it finished.
        Succeeded,
        /// `Failed=True`: a replica failed with no retries left.
        RetriesExhausted,
        /// `Failed=True`: a `FailJob` rule of `spec.podFailurePolicy` matched a failed
        /// replica (not retried).
        PodFailurePolicy,
        /// `Failed=True`, `Running=False`: the job ran past `spec.activeDeadlineSeconds` in
        /// one admission (not retried).
        DeadlineExceeded,
        /// `Preempting=True`: asked to checkpoint.
        CheckpointRequested,
        /// `Preempting=True`: asked to checkpoint because `spec.suspend` is true.
        Suspended,
        /// `Preempting=True`: the checkpoint was acknowledged.
        CheckpointSaved,
        /// `Preempting=True`: the pods exited on their own.
        PodsExited,
        /// `Preempting=True`: the grace period ended without an acknowledgement.
        CheckpointLost,
        /// `Preempting=True`: the gang had not started, so there was nothing to save.
        NotStarted,
        /// `Preempting=False`: the pods are gone and the job is back in its queue.
        Requeued,
        /// `Preempting=False`: the checkpoint request was withdrawn before it was
        /// acknowledged (the job it made room for no longer waits); the job runs on.
        PreemptionCancelled,
    }
}

names! {
    /// The reasons of a TrainingJob's Events (besides the validation reasons, which are
    /// recorded as Warnings under their own names).
    EventReason {
        /// The job entered its queue to wait (not posted for a job admitted before it
        /// waited: its `Admitted` Event names the queue).
        Queued,
        /// The scheduler admitted the gang.
        Admitted,
        /// The scheduler could not create the gang's pods.
        AdmissionFailed,
        /// Every replica runs (or runs again on nodes all Ready).
        Running,
        /// A node under a running replica is not ready, and not yet given up on: the gang is
        /// not stopped.
        NodeNotReady,
        /// A running job now runs on borrowed GPUs: its team's guarantee no longer covers it,
        /// and it may be reclaimed.
        Demoted,
        /// A running job is now within its team's guarantee: no longer reclaimable.
        Promoted,
        /// The job is valid again.
        Valid,
        /// A gang was left half-created; it was removed and queued again.
        IncompleteGang,
        /// The scheduler asked other jobs to checkpoint and leave to make room for this one
        /// (a reclaim, priority, queue-share or consolidation preemption): the note names them.
        MakingRoom,
        /// The scheduler asked the gang to checkpoint.
        Preempting,
        /// The scheduler withdrew its checkpoint request: the job it made room for no longer
        /// waits.
        PreemptionCancelled,
        /// The checkpoint was acknowledged.
        CheckpointSaved,
        /// The pods exited on their own.
        PodsExited,
        /// The grace period ended without an acknowledgement.
        CheckpointLost,
        /// The gang had not started: stopped at once, nothing to save.
        NotStarted,
        /// Back in the queue (after a preemption or a retry's backoff).
        Requeued,
        /// Suspended (`spec.suspend`).
        Suspended,
        /// Resumed (`spec.suspend` false again).
        Resumed,
        /// A replica failed (counts as a retry).
        ReplicaFailed,
        /// The platform stopped a replica (not counted).
        InfrastructureFailure,
        /// The cluster's scheduler would not bind a pod where it was placed.
        SchedulerRejected,
        /// A task's pod template changed before every replica ran: the gang starts again
        /// with the new one.
        TemplateChanged,
        /// An `Ignore` rule of `spec.podFailurePolicy` matched a failed replica (not counted).
        FailureIgnored,
        /// Every replica succeeded.
        Succeeded,
        /// The job failed for good: no retries left, or past its `activeDeadlineSeconds`.
        Failed,
        /// Deleted after `ttlSecondsAfterFinished`.
        Expired,
    }
}

names! {
    /// Why a job waits: the reason of its `Admitted=False` condition, as the scheduling core
    /// decides it (`sched::WaitReason::code`); the message carries the numbers.
    WaitCode {
        /// The lifecycle's word before the scheduler's first on the job.
        Waiting,
        /// The job's spec is not valid (its `Valid` condition says why).
        Invalid,
        /// The VirtualCluster's guarantee is in use (or smaller than the job), with too few
        /// idle GPUs to borrow.
        QuotaExhausted,
        /// The job is larger than one of its hard limits in all: no wait ends it.
        ExceedsLimit,
        /// The VirtualCluster's `spec.limit` is reached.
        OverLimit,
        /// The queue's `maxShare` is reached.
        QueueMaxShare,
        /// The queue's per-user limit is reached.
        UserLimit,
        /// No free GPUs in the shape the job needs.
        NoFit,
        /// No node or domain of the cluster can ever hold the job.
        NeverFits,
        /// Nodes it needs are cordoned or not ready.
        NodesUnavailable,
        /// Free GPUs are kept as whole cells for other teams' guarantees.
        ReservedForCells,
        /// Jobs preempted for it still hold the GPUs.
        WaitingForPreemption,
        /// Terminating pods of deleted jobs hold the GPUs.
        WaitingForTerminatingPods,
        /// The jobs it would preempt are within their minimum runtime.
        WaitingForMinRuntime,
        /// A job ahead of it in its strict queue has not started.
        BehindQueueHead,
        /// A job ahead of it in its backfill queue holds a reservation it would delay.
        BehindReservation,
        /// Stopped for a drain or a preemption, it is on its way back.
        Returning,
        /// A job ahead of it is on its way back after a drain or a preemption.
        BehindReturningJob,
        /// Its queue was deleted and admits nothing new.
        QueueTerminating,
        /// Its VirtualCluster was deleted and admits nothing new.
        VirtualClusterTerminating,
        /// Its queue (or one above it) is held (`spec.stopPolicy`) and admits nothing new.
        QueueHeld,
    }
}

impl WaitCode {
    /// Whether nothing but a change of the job or of the cluster's shape or limits ends the
    /// wait (what tools that tell waiting from stuck, Argo CD's health or alerts, read).
    pub const fn is_stuck(self) -> bool {
        matches!(self, WaitCode::NeverFits | WaitCode::ExceedsLimit)
    }
}

names! {
    /// Why a job was asked to checkpoint and leave: the value of its pods'
    /// `kubetrain.io/preemption-reason` annotation and of `status.lastPreemption.reason`.
    /// The scheduler's causes are `sched::PreemptionReason`'s; `Suspend` is the lifecycle's
    /// own, for `spec.suspend`.
    PreemptionCause {
        /// The GPUs were borrowed and their owner needs them back for its guarantee.
        Reclaim,
        /// A higher-priority job of the same queue needs them.
        Priority,
        /// A sibling queue below its share needs its share of the guarantee back.
        QueueShare,
        /// A job of the same team needs GPUs together where only scattered ones are free.
        Consolidation,
        /// A node under the job is being drained.
        Drain,
        /// A GPU under the job turned unhealthy.
        UnhealthyGpu,
        /// Its queue (or one above it) is held with `stopPolicy: HoldAndDrain`.
        QueueHold,
        /// The job's `spec.suspend` was set.
        Suspend,
    }
}

names! {
    /// The condition types of a Queue's status.
    QueueConditionType {
        /// The queue admits jobs (`False`: why it does not).
        Ready,
        /// The queue was deleted and waits for its admitted jobs.
        Terminating,
        /// The queue's subtree holds more GPUs than its `maxShare` allows.
        AboveLimit,
    }
}

names! {
    /// The reasons of a Queue's conditions.
    QueueReason {
        /// `Ready=True`.
        Ready,
        /// `Ready=False`: `spec.virtualCluster` names nothing.
        UnknownVirtualCluster,
        /// `Ready=False`: the `spec.parent` chain is unusable.
        InvalidParent,
        /// `Ready=False`: its VirtualCluster is being deleted.
        VirtualClusterTerminating,
        /// `Ready=False`: the queue itself is being deleted.
        Terminating,
        /// `Terminating=True`: deletion waits for admitted jobs.
        JobsRemain,
        /// `AboveLimit=False`.
        WithinLimit,
        /// `AboveLimit=True`: the GPUs above the maximum are held by jobs already leaving.
        JobsLeaving,
        /// `AboveLimit=True`: `maxShare` (or what it is a share of) was lowered under it.
        LimitLowered,
        /// `Ready=False`: the queue (or one above it) is held with `stopPolicy: Hold`.
        Held,
        /// `Ready=False`: the queue (or one above it) is held with `stopPolicy:
        /// HoldAndDrain`, its admitted jobs leaving.
        HeldAndDraining,
    }
}

names! {
    /// The condition types of a VirtualCluster's status.
    VirtualClusterConditionType {
        /// The spec works as written and the usage is current (`False`: why not).
        Ready,
        /// The guarantees of all VirtualClusters exceed the cluster's GPUs of a type.
        OverCommitted,
        /// Part of the guarantee cannot be obtained now, even by reclaim (`True`'s reasons
        /// are the core's `ShortfallCause`).
        GuaranteeAtRisk,
        /// The tenant holds more GPUs than `spec.limit`.
        AboveLimit,
    }
}

names! {
    /// The reasons of a VirtualCluster's conditions (but `GuaranteeAtRisk=True`'s).
    VirtualClusterReason {
        /// `Ready=True`.
        Ready,
        /// `Ready=False`: being deleted, waiting for the jobs of its queues.
        Terminating,
        /// `Ready=False`: `spec.defaultQueue` is missing or another VirtualCluster's.
        DefaultQueueInvalid,
        /// `Ready=False`: no node has a GPU type it guarantees.
        UnknownGpuType,
        /// `Ready=False`: a type's cells hold more GPUs than its `gpus`.
        CellsExceedGuarantee,
        /// `Ready=False`: another VirtualCluster owns one of its namespaces too.
        NamespaceConflict,
        /// `OverCommitted=False`.
        WithinCapacity,
        /// `OverCommitted=True`; also `GuaranteeAtRisk=True` when every GPU is usable.
        GuaranteesExceedCapacity,
        /// `GuaranteeAtRisk=False`.
        Obtainable,
        /// `AboveLimit=False`.
        WithinLimit,
        /// `AboveLimit=True`: the GPUs above the limit are held by jobs already leaving.
        JobsLeaving,
        /// `AboveLimit=True`: the limit was lowered under what the tenant holds.
        LimitLowered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const TROUBLESHOOTING: &str = include_str!("../../../docs/troubleshooting.md");

    /// The names in backquotes (`` `Name` ``) in `text`, outside code blocks' fences.
    fn quoted(text: &str) -> BTreeSet<String> {
        text.replace("```", "")
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    fn section(from: &str, to: &str) -> &'static str {
        let doc = TROUBLESHOOTING;
        let start = doc
            .find(from)
            .unwrap_or_else(|| panic!("{from:?} in the doc"));
        let end = doc[start..]
            .find(to)
            .unwrap_or_else(|| panic!("{to:?} after {from:?}"));
        &doc[start..start + end]
    }

    /// Every condition reason and Event reason the lifecycle writes is documented in
    /// `docs/troubleshooting.md`, and every reason documented there for a job's phases and
    /// Events is one the lifecycle writes (or one of the names decided elsewhere, listed
    /// below).
    #[test]
    fn troubleshooting_lists_the_reasons() {
        let lifecycle = section(
            "## The lifecycle's reasons",
            "## A queue or virtual cluster",
        );
        let documented = quoted(lifecycle);
        for name in ConditionType::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(Reason::ALL.iter().map(|r| r.as_str()))
            .chain(EventReason::ALL.iter().map(|r| r.as_str()))
        {
            assert!(
                documented.contains(name as &str),
                "{name} is missing from docs/troubleshooting.md, \"The lifecycle's reasons\""
            );
        }
        let known: BTreeSet<&str> = ConditionType::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(Reason::ALL.iter().map(|r| r.as_str()))
            .chain(EventReason::ALL.iter().map(|r| r.as_str()))
            .collect();
        // Every name in the tables' first columns is a real one.
        for line in lifecycle.lines().filter(|l| l.starts_with("| `")) {
            let first = line.split('|').nth(1).unwrap_or_default();
            for name in quoted(first) {
                assert!(
                    known.contains(name.as_str()),
                    "docs/troubleshooting.md documents {name}, which the lifecycle never writes"
                );
            }
        }
        // The phases' bullets and the Events' story name only real reasons, the phases, the
        // validation reasons and the preemption causes.
        let phases = section("Other phases:", "## The lifecycle's reasons");
        let elsewhere: BTreeSet<&str> = [
            // Phases.
            "Pending",
            "Queued",
            "Retrying",
            "Preempting",
            "Suspended",
            "Failed",
            // Validation reasons (controller::validate::Invalid::reason).
            "UnknownQueue",
            "UnknownVirtualCluster",
            "QueueOfAnotherTenant",
            "InvalidQueueParent",
            "UnknownGpuType",
            "UnknownResource",
            "DuplicateTask",
            "NameTooLong",
            "InvalidTemplate",
            "InvalidGpuRequest",
            "FractionalGpuRequest",
            "NoQueue",
            "DefaultQueueInvalid",
            "UnknownPriorityClass",
            "InvalidPodFailurePolicy",
            // The actions of `podFailurePolicy` rules.
            "FailJob",
            "Ignore",
            // Pod-level reasons of the kubelet and kube-scheduler.
            "OOMKilled",
            "Unschedulable",
            "SchedulingGated",
            "ImagePullBackOff",
            "CreateContainerConfigError",
        ]
        .into_iter()
        // Preemption causes (the `kubetrain.io/preemption-reason` annotation).
        .chain(PreemptionCause::ALL.iter().map(|c| c.as_str()))
        .collect();
        for name in quoted(phases) {
            let camel = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric());
            if camel {
                assert!(
                    known.contains(name.as_str()) || elsewhere.contains(name.as_str()),
                    "docs/troubleshooting.md names {name}, which is no reason the lifecycle writes"
                );
            }
        }
    }

    /// CamelCase names in backquotes, each side of a `=` or `,` (`` `Ready=False` `` names
    /// `Ready`).
    fn camel_names(text: &str) -> BTreeSet<String> {
        quoted(text)
            .iter()
            .flat_map(|q| q.split(['=', ',']).map(str::trim).map(str::to_string))
            .filter(|n| {
                n.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && n.chars().all(|c| c.is_ascii_alphanumeric())
            })
            .collect()
    }

    /// Every code the core gives a waiting job is a row of the wait table in
    /// `docs/troubleshooting.md`, and every row of it is a code the core gives.
    #[test]
    fn troubleshooting_lists_the_wait_codes() {
        let table = section("## Why does my job wait?", "## The lifecycle's reasons");
        let rows: BTreeSet<String> = table
            .lines()
            .filter(|l| l.starts_with("| `"))
            .flat_map(|l| quoted(l.split('|').nth(1).unwrap_or_default()))
            .collect();
        for code in WaitCode::ALL {
            // A job the core finds invalid says why in its `Valid` condition, with the
            // validation reasons of "Other phases".
            if *code != WaitCode::Invalid {
                assert!(
                    rows.contains(code.as_str()),
                    "wait code {code} has no row in docs/troubleshooting.md's wait table"
                );
            }
        }
        for row in &rows {
            assert!(
                WaitCode::from_name(row).is_some(),
                "docs/troubleshooting.md's wait table has {row}, which is no wait code"
            );
        }
    }

    /// Every condition type and reason of a Queue and a VirtualCluster is documented in
    /// `docs/troubleshooting.md`, "A queue or virtual cluster looks wrong", and every
    /// CamelCase name there is one of them or a name the section explains beside them.
    #[test]
    fn troubleshooting_lists_the_queue_and_virtual_cluster_reasons() {
        let doc = section("## A queue or virtual cluster", "## The operator");
        let documented = camel_names(doc);
        let ours: BTreeSet<&str> = QueueConditionType::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(QueueReason::ALL.iter().map(|r| r.as_str()))
            .chain(VirtualClusterConditionType::ALL.iter().map(|c| c.as_str()))
            .chain(VirtualClusterReason::ALL.iter().map(|r| r.as_str()))
            .chain(["CapacityLost", "GuaranteesExceedCapacity"]) // sched::ShortfallCause
            .collect();
        for name in &ours {
            assert!(
                documented.contains(*name),
                "{name} is missing from docs/troubleshooting.md, \"A queue or virtual cluster \
                 looks wrong\""
            );
        }
        let beside: BTreeSet<&str> = ["True", "False", "Warning", "VirtualCluster", "Valid"]
            .into_iter()
            .chain(WaitCode::ALL.iter().map(|c| c.as_str()))
            .chain(["UnknownQueue", "InvalidQueueParent"]) // validation reasons
            .collect();
        for name in &documented {
            assert!(
                ours.contains(name.as_str()) || beside.contains(name.as_str()),
                "docs/troubleshooting.md names {name} for a queue or VirtualCluster, which no \
                 status of theirs has"
            );
        }
    }

    #[test]
    fn names_read_back_as_their_variants() {
        for code in WaitCode::ALL {
            assert_eq!(WaitCode::from_name(code.as_str()), Some(*code));
        }
        assert_eq!(
            QueueReason::from_name("JobsRemain"),
            Some(QueueReason::JobsRemain)
        );
        assert_eq!(VirtualClusterReason::from_name("Unheard"), None);
    }

    #[test]
    fn names_are_their_variants() {
        assert_eq!(Reason::AdmittedAsBonus.as_str(), "AdmittedAsBonus");
        assert_eq!(EventReason::Expired.to_string(), "Expired");
        assert_eq!(ConditionType::Preempting.as_str(), "Preempting");
    }
}
