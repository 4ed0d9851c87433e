//! Status writes: every controller writes its object's status the same way, as a forced
//! server-side apply of the status subresource under the operator's field manager, so the
//! operator owns exactly the status fields it sets and nothing else; and the Events that
//! follow a condition turning bad.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::conditions;
use super::context::MANAGER;
use super::writer::Writer;

/// Applies `status` to the object `name`. The patch names only `apiVersion`, `kind` and
/// `status`: a status apply that carried spec or metadata fields would take ownership of
/// them away from the user.
pub async fn apply<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
}

/// Posts an Event about `obj` for each condition of `new` that entered the status its type
/// is watched for, or changed its reason there (`conditions::entered`), with the
/// condition's reason and message: a Warning, or a Normal Event where `expected` says the
/// state is news rather than trouble (a deletion under way). Called after a status write,
/// so `kubectl get events` and alerts on Warnings see what the conditions say.
pub async fn announce<K>(
    writer: &Writer,
    obj: &K,
    old: &[Condition],
    new: &[Condition],
    watched: &[(&str, &str)],
    expected: fn(&Condition) -> bool,
) where
    K: Resource<DynamicType = ()>,
{
    for c in conditions::entered(old, new, watched) {
        let type_ = if expected(c) {
            EventType::Normal
        } else {
            EventType::Warning
        };
        writer.event(obj, type_, &c.reason, c.message.clone()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Queue, TrainingJob, VirtualCluster};

    #[test]
    fn patch_names_the_served_group_version_and_kind() {
        // The server rejects an apply whose apiVersion/kind do not match the URL.
        assert_eq!(TrainingJob::api_version(&()), "kubetrain.io/v1alpha1");
        assert_eq!(TrainingJob::kind(&()), "TrainingJob");
        assert_eq!(Queue::kind(&()), "Queue");
        assert_eq!(VirtualCluster::kind(&()), "VirtualCluster");
    }
}
