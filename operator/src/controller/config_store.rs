//! The leader's own learned state, kept in a ConfigMap of the operator's namespace so that a
//! restart or a failover resumes it: the workload's shape history (`workload.rs`) and the
//! history of run times (`duration_history.rs`). Each is JSON under one data key, written by
//! server-side apply at most once a save interval when it changed, read back when a replica
//! becomes leader. Losing the last interval of it only makes what it tunes a little less
//! informed, so nothing here ever stops the operator.

use std::sync::{Mutex, MutexGuard};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use tracing::{debug, info, warn};

use crate::api::annotations::MANAGER;

/// State the leader keeps in a [`ConfigStore`].
pub trait Kept {
    /// Whether it changed since the last call.
    fn take_changed(&mut self) -> bool;
    /// Marks it changed (a save that failed is retried).
    fn mark_changed(&mut self);
    /// Its stored form.
    fn to_json(&self) -> String;
}

/// One ConfigMap and the data key its JSON is kept under.
#[derive(Clone)]
pub struct ConfigStore {
    api: Api<ConfigMap>,
    name: &'static str,
    key: &'static str,
}

impl ConfigStore {
    pub fn new(client: Client, namespace: &str, name: &'static str, key: &'static str) -> Self {
        ConfigStore {
            api: Api::namespaced(client, namespace),
            name,
            key,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The stored JSON; `None` when there is no ConfigMap or no key.
    pub async fn load_text(&self) -> Result<Option<String>, kube::Error> {
        Ok(self
            .api
            .get_opt(self.name)
            .await?
            .and_then(|cm| cm.data)
            .and_then(|mut d| d.remove(self.key)))
    }

    /// Writes `json` by server-side apply.
    pub async fn save(&self, json: String) -> Result<(), kube::Error> {
        let cm = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "labels": { "app.kubernetes.io/part-of": "kubetrain" },
            },
            "data": { self.key: json },
        });
        self.api
            .patch(
                self.name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&cm),
            )
            .await
            .map(|_| ())
    }

    /// Saves the state behind `lock` when it changed; a failed save is retried at the next.
    pub async fn save_if_changed<T: Kept>(&self, lock: &Mutex<T>) {
        let json = {
            let mut kept = locked(lock);
            if !kept.take_changed() {
                return;
            }
            kept.to_json()
        };
        match self.save(json).await {
            Ok(()) => debug!(configmap = self.name, "saved"),
            Err(e) => {
                warn!(configmap = self.name, error = %e, "could not save; retrying");
                locked(lock).mark_changed();
            }
        }
    }
}

/// The state `read` makes of the stored JSON, or `empty` when there is none or it cannot be
/// read (logged): learned state never stops the operator.
pub async fn load_or<T, E: std::fmt::Display>(
    store: &ConfigStore,
    read: impl FnOnce(&str) -> Result<T, E>,
    empty: impl FnOnce() -> T,
) -> T {
    let text = match store.load_text().await {
        Ok(Some(text)) => text,
        Ok(None) => {
            info!(configmap = store.name, "nothing stored; starting empty");
            return empty();
        }
        Err(e) => {
            warn!(configmap = store.name, error = %e, "could not read; starting empty");
            return empty();
        }
    };
    match read(&text) {
        Ok(t) => {
            info!(configmap = store.name, "loaded");
            t
        }
        Err(e) => {
            warn!(configmap = store.name, error = %e, "ignoring what is stored; starting empty");
            empty()
        }
    }
}

/// Locks `m`; a panic elsewhere must not wedge the operator.
pub fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
