//! Leader election on a `coordination.k8s.io` Lease, so two replicas can run and only one
//! schedules. The holder renews every `renew`; another replica takes over once the lease
//! has not been renewed for `duration`. Writes use the Lease's resourceVersion, so two
//! candidates can never both win.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, PostParams};
use tracing::{info, warn};

#[derive(Clone, Debug)]
pub struct LeaderSettings {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub duration: Duration,
    pub renew: Duration,
}

pub struct Elector {
    api: Api<Lease>,
    s: LeaderSettings,
}

impl Elector {
    pub fn new(client: Client, s: LeaderSettings) -> Self {
        Elector {
            api: Api::namespaced(client, &s.namespace),
            s,
        }
    }

    /// Tries once to acquire or renew; returns whether we hold the lease now.
    pub async fn try_acquire(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let secs = i32::try_from(self.s.duration.as_secs()).unwrap_or(15);
        let Some(mut lease) = self.api.get_opt(&self.s.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.s.name.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.s.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let ours = spec.holder_identity.as_deref() == Some(self.s.identity.as_str());
        let expired = spec.renew_time.as_ref().is_none_or(|r| {
            let d =
                SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(secs)));
            r.0 + d < now
        });
        if !ours && !expired {
            return Ok(false);
        }
        if !ours {
            spec.holder_identity = Some(self.s.identity.clone());
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(secs);
        match self
            .api
            .replace(&self.s.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits until this replica holds the lease.
    pub async fn acquire(&self) {
        let mut waiting_logged = false;
        loop {
            match self.try_acquire().await {
                Ok(true) => {
                    info!(identity = %self.s.identity, lease = %self.s.name, "became the leader");
                    return;
                }
                Ok(false) if !waiting_logged => {
                    info!(lease = %self.s.name, "another replica leads; standing by");
                    waiting_logged = true;
                }
                Ok(false) => {}
                Err(e) => warn!(error = %e, "leader election failed; retrying"),
            }
            tokio::time::sleep(self.s.renew).await;
        }
    }

    /// Renews until the lease is lost (returns) — the caller then stops leading.
    pub async fn hold(&self) {
        let mut last_ok = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.s.renew).await;
            match self.try_acquire().await {
                Ok(true) => last_ok = tokio::time::Instant::now(),
                Ok(false) => {
                    warn!("lost the leader lease to another replica");
                    return;
                }
                Err(e) => {
                    warn!(error = %e, "could not renew the leader lease");
                    // Step down before another replica may take over.
                    if last_ok.elapsed() + self.s.renew >= self.s.duration {
                        return;
                    }
                }
            }
        }
    }

    /// Gives the lease up on shutdown so a standby takes over at once.
    pub async fn release(&self) {
        if let Ok(Some(mut lease)) = self.api.get_opt(&self.s.name).await
            && let Some(spec) = lease.spec.as_mut()
            && spec.holder_identity.as_deref() == Some(self.s.identity.as_str())
        {
            spec.holder_identity = None;
            spec.renew_time = None;
            let _ = self
                .api
                .replace(&self.s.name, &PostParams::default(), &lease)
                .await;
        }
    }
}
