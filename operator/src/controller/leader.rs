//! Leader election on a `coordination.k8s.io` Lease, so two replicas can run and only one
//! schedules. The holder renews every `retry` and steps down when it could not renew for
//! `renew_deadline`; another replica takes over once it has seen the lease unchanged for
//! `duration`. Writes use the Lease's resourceVersion, so two candidates can never both win.
//!
//! Expiry is judged as client-go's leader election judges it: by when *this* replica last
//! saw the lease change, on its own monotonic clock, never by comparing the holder's
//! `renewTime` with the local wall clock. Two nodes' clocks that disagree by more than the
//! lease duration could otherwise let a standby take a lease its holder is renewing, or
//! leave a dead holder's lease standing.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use tracing::{info, warn};

#[derive(Clone, Debug)]
pub struct LeaderSettings {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a standby waits, having seen the lease unchanged, before taking it.
    pub duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Time between tries to acquire or renew.
    pub retry: Duration,
}

impl LeaderSettings {
    /// The client-go defaults kube-scheduler and kube-controller-manager use: 15 s, 10 s, 2 s.
    pub const DEFAULT_DURATION: Duration = Duration::from_secs(15);
    pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
    pub const DEFAULT_RETRY: Duration = Duration::from_secs(2);

    /// The durations make sense together: a leader steps down before a standby may take
    /// over (`renew_deadline < duration`), and tries more than once before it does
    /// (`retry < renew_deadline`).
    pub fn check(&self) -> Result<(), String> {
        if self.renew_deadline >= self.duration {
            return Err(format!(
                "--leader-elect-renew-deadline ({:?}) must be shorter than \
                 --leader-elect-lease-duration ({:?})",
                self.renew_deadline, self.duration
            ));
        }
        if self.retry >= self.renew_deadline {
            return Err(format!(
                "--leader-elect-retry-period ({:?}) must be shorter than \
                 --leader-elect-renew-deadline ({:?})",
                self.retry, self.renew_deadline
            ));
        }
        Ok(())
    }
}

/// What of a lease says it is alive: a holder that renews changes `renewTime`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    holder: Option<String>,
    renew_time: Option<Timestamp>,
    transitions: Option<i32>,
}

impl Record {
    fn of(spec: &LeaseSpec) -> Record {
        Record {
            holder: spec.holder_identity.clone().filter(|h| !h.is_empty()),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            transitions: spec.lease_transitions,
        }
    }
}

/// A lease record as this replica last saw it change, and when (its own clock).
#[derive(Clone, Debug)]
struct Observed {
    record: Record,
    at: Instant,
}

/// Whether the lease `record`, seen at `now`, is free to take: nobody holds it, or this
/// replica has seen it unchanged for `duration` (the holder stopped renewing). Updates
/// `observed` to the record as last seen changing.
fn expired(
    observed: &mut Option<Observed>,
    record: Record,
    now: Instant,
    duration: Duration,
) -> bool {
    if record.holder.is_none() {
        *observed = Some(Observed { record, at: now });
        return true;
    }
    match observed {
        Some(o) if o.record == record => now.duration_since(o.at) >= duration,
        _ => {
            *observed = Some(Observed { record, at: now });
            false
        }
    }
}

pub struct Elector {
    api: Api<Lease>,
    s: LeaderSettings,
    observed: Mutex<Option<Observed>>,
}

impl Elector {
    pub fn new(client: Client, s: LeaderSettings) -> Self {
        Elector {
            api: Api::namespaced(client, &s.namespace),
            s,
            observed: Mutex::new(None),
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
        // The holder's own word on how long its lease lasts, as client-go reads it.
        let duration = spec
            .lease_duration_seconds
            .and_then(|d| u64::try_from(d).ok())
            .map_or(self.s.duration, Duration::from_secs);
        let expired = {
            let mut observed = self.observed.lock().unwrap_or_else(|e| e.into_inner());
            expired(&mut observed, Record::of(spec), Instant::now(), duration)
        };
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
            tokio::time::sleep(self.s.retry).await;
        }
    }

    /// Renews until the lease is lost (returns) — the caller then stops leading.
    pub async fn hold(&self) {
        let mut last_ok = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.s.retry).await;
            match self.try_acquire().await {
                Ok(true) => last_ok = tokio::time::Instant::now(),
                Ok(false) => {
                    warn!("lost the leader lease to another replica");
                    return;
                }
                Err(e) => {
                    warn!(error = %e, "could not renew the leader lease");
                    // Step down before another replica may take over.
                    if last_ok.elapsed() + self.s.retry >= self.s.renew_deadline {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn held(by: &str, renewed: i64) -> Record {
        Record {
            holder: Some(by.into()),
            renew_time: Some(Timestamp::from_second(renewed).expect("time")),
            transitions: Some(0),
        }
    }

    const LEASE: Duration = Duration::from_secs(15);

    /// A lease whose holder renews is never taken, however far the holder's clock is from
    /// this replica's: only a lease seen unchanged for its whole duration is.
    #[test]
    fn a_renewed_lease_is_never_taken_whatever_the_clocks_say() {
        let t0 = Instant::now();
        let mut observed = None;
        // The holder's clock is a day behind ours: its renewTime looks long past.
        let day_ago = 1_000_000 - 86_400;
        assert!(!expired(&mut observed, held("a", day_ago), t0, LEASE));
        for n in 1..20 {
            let now = t0 + Duration::from_secs(2 * n);
            assert!(!expired(
                &mut observed,
                held("a", day_ago + 2 * n as i64),
                now,
                LEASE
            ));
        }
    }

    #[test]
    fn a_lease_seen_unchanged_for_its_duration_is_taken() {
        let t0 = Instant::now();
        let mut observed = None;
        // Its renewTime is ahead of our clock (a clock running fast): it still expires once
        // we have seen it unchanged for the lease's duration.
        let future = 4_000_000_000;
        assert!(!expired(&mut observed, held("a", future), t0, LEASE));
        let later = t0 + Duration::from_secs(14);
        assert!(!expired(&mut observed, held("a", future), later, LEASE));
        let past = t0 + Duration::from_secs(15);
        assert!(expired(&mut observed, held("a", future), past, LEASE));
    }

    #[test]
    fn a_released_lease_is_free_at_once() {
        let mut observed = None;
        let released = Record {
            holder: None,
            renew_time: None,
            transitions: Some(3),
        };
        assert!(expired(&mut observed, released, Instant::now(), LEASE));
    }

    #[test]
    fn durations_that_cannot_work_together_are_refused() {
        let s = |duration, renew_deadline, retry| LeaderSettings {
            namespace: "ns".into(),
            name: "lease".into(),
            identity: "me".into(),
            duration: Duration::from_secs(duration),
            renew_deadline: Duration::from_secs(renew_deadline),
            retry: Duration::from_secs(retry),
        };
        assert!(s(15, 10, 2).check().is_ok());
        let e = s(10, 10, 2).check().expect_err("deadline = duration");
        assert!(e.contains("--leader-elect-renew-deadline"), "{e}");
        let e = s(15, 10, 10).check().expect_err("retry = deadline");
        assert!(e.contains("--leader-elect-retry-period"), "{e}");
    }
}
