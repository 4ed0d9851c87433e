//! What the controllers write besides through a reconciler's own API handle: the client,
//! Events, and the record of status writes. A handle of the
//! [`Context`](super::context::Context), for code that writes and reads no cache.

use std::sync::Arc;

use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};

use super::job_key::JobKey;
use super::watches::StatusWrites;

/// The client and what records the operator's writes.
pub struct Writer {
    pub client: Client,
    pub recorder: Recorder,
    pub status_writes: Arc<StatusWrites>,
}

impl Writer {
    /// The writer of this operator (`instance`: its identity, as its Events name it).
    pub fn new(client: Client, instance: String, status_writes: Arc<StatusWrites>) -> Self {
        let reporter = Reporter {
            controller: "kubetrain".into(),
            instance: Some(instance),
        };
        Writer {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            status_writes,
        }
    }

    /// The resourceVersion the last status write for the job was computed from.
    pub fn status_written_from(&self, job: &JobKey) -> Option<String> {
        self.status_writes.written_from(job)
    }

    pub fn record_status_write(&self, job: JobKey, from: Option<String>) {
        self.status_writes.record(job, from);
    }

    /// Whether the cluster-scoped object `name` (a Queue, a VirtualCluster) exists on the API
    /// server, for a reference the cache does not show. Objects applied together (a GitOps
    /// sync) reach the operator on separate watches, and under load the referring one can
    /// come first: reporting the reference unknown then would be a Warning and a status write
    /// about an object that is there. One GET, only on that path; an error counts as "not
    /// there", so the reference is reported as before.
    pub async fn exists_on_server<K>(&self, name: &str) -> bool
    where
        K: Resource<Scope = kube::core::ClusterResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::<K>::all(self.client.clone())
            .get_opt(name)
            .await
            .is_ok_and(|o| o.is_some())
    }

    /// Publishes a Kubernetes Event about `obj`; failures are logged, never fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        self.event_with_action(obj, type_, reason, reason.to_string(), note)
            .await;
    }

    /// The same with its own `action`. The recorder folds events of one object, reason and
    /// action into a series that keeps the first note; an action per occurrence (`Retry2`)
    /// keeps each occurrence's note (its attempt and delay) visible.
    pub async fn event_with_action<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        action: String,
        note: String,
    ) {
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action,
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &obj.object_ref(&())).await {
            tracing::warn!(error = %e, reason, "could not publish event");
        }
    }
}
