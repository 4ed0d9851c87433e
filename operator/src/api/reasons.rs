//! The names a TrainingJob's lifecycle writes: its condition types, the reasons of those
//! conditions, and the reasons of its Events. `docs/troubleshooting.md` lists them for users;
//! a test checks the two against each other.
//!
//! Reasons decided elsewhere are not here: why a job waits (`Admitted=False`) is the core
//! scheduler's `WaitReason::code`, and why a job is invalid (`Valid=False`) is
//! `controller::validate::Invalid::reason`.

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
        /// Every replica runs.
        Running,
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
            // Preemption causes (the `kubetrain.io/preemption-reason` annotation).
            "Reclaim",
            "Priority",
            "QueueShare",
            "Consolidation",
            "Drain",
            "UnhealthyGpu",
            "Suspend",
            // Pod-level reasons of the kubelet and kube-scheduler.
            "OOMKilled",
            "Unschedulable",
            "SchedulingGated",
            "ImagePullBackOff",
            "CreateContainerConfigError",
        ]
        .into_iter()
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

    #[test]
    fn names_are_their_variants() {
        assert_eq!(Reason::AdmittedAsBonus.as_str(), "AdmittedAsBonus");
        assert_eq!(EventReason::Expired.to_string(), "Expired");
        assert_eq!(ConditionType::Preempting.as_str(), "Preempting");
    }
}
