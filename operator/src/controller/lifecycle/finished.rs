//! Succeeded or Failed: what still runs is stopped, and the job deleted once its
//! `ttlSecondsAfterFinished` has passed.

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;
use kube::runtime::events::EventType;

use super::{Effects, Step, Stop};
use crate::api::TrainingJobStatus;
use crate::api::reasons::EventReason;

impl Step<'_> {
    /// Succeeded or Failed: stop what still runs; delete the job once its TTL has passed.
    pub(super) fn finished(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if self.gang.active().next().is_some() {
            fx.stop = Stop::Live;
        }
        if let (Some(ttl), Some(done)) = (
            self.job.spec.ttl_seconds_after_finished,
            status.finished_at.as_ref(),
        ) {
            let expires = done.0 + SignedDuration::from_secs(i64::from(ttl));
            if self.t.0 >= expires {
                fx.event(
                    EventType::Normal,
                    EventReason::Expired,
                    format!("Deleted {ttl} s after it finished (ttlSecondsAfterFinished)."),
                );
                fx.delete_job = true;
            } else {
                fx.requeue(Duration::from_secs(
                    (expires.as_second() - self.t.0.as_second()).max(1) as u64,
                ));
            }
        }
    }
}
