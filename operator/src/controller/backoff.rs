//! Exponential backoff of failed reconciles, per object: one that keeps failing (an API call
//! refused again and again) is retried ever less often, 1 s, 2 s, 4 s … up to 5 min, while
//! every other object keeps its own pace. A successful reconcile starts the object over, and
//! its deletion forgets it. A change of the object still reconciles it at once: the backoff
//! only spaces the retries nothing else asked for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;

/// The delay before the first retry.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest delay.
pub const MAX: Duration = Duration::from_secs(300);

/// The delay before retrying an object that failed `failures` times in a row (at least once).
pub fn delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    FIRST.saturating_mul(1 << doublings).min(MAX)
}

/// Consecutive failures by object (of any kind: an erased reference keeps its kind).
#[derive(Default)]
pub struct Failures(Mutex<HashMap<ObjectRef<DynamicObject>, u32>>);

impl Failures {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<DynamicObject>, u32>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a failure of `obj`; returns how long to wait before retrying it.
    pub fn failed(&self, obj: ObjectRef<DynamicObject>) -> Duration {
        let mut failures = self.lock();
        let n = failures.entry(obj).or_default();
        *n = n.saturating_add(1);
        delay(*n)
    }

    /// Forgets `obj`'s failures: it reconciled, or it is gone.
    pub fn forget(&self, obj: &ObjectRef<DynamicObject>) {
        self.lock().remove(obj);
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Queue, TrainingJob, VirtualCluster};

    #[test]
    fn the_delay_doubles_from_one_second_up_to_five_minutes() {
        let secs: Vec<u64> = (1..=12).map(|n| delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(delay(u32::MAX), MAX);
    }

    #[test]
    fn each_object_backs_off_on_its_own_until_it_reconciles_or_goes() {
        let failures = Failures::default();
        let job = || ObjectRef::<TrainingJob>::new("a").within("team").erase();
        let other = ObjectRef::<TrainingJob>::new("b").within("team").erase();
        let queue = ObjectRef::<Queue>::new("a").erase();
        let vc = ObjectRef::<VirtualCluster>::new("a").erase();

        assert_eq!(failures.failed(job()), Duration::from_secs(1));
        assert_eq!(failures.failed(job()), Duration::from_secs(2));
        assert_eq!(failures.failed(job()), Duration::from_secs(4));
        // Another job, and objects of other kinds with the same name, start at the bottom.
        assert_eq!(failures.failed(other.clone()), Duration::from_secs(1));
        assert_eq!(failures.failed(queue.clone()), Duration::from_secs(1));
        assert_eq!(failures.failed(vc.clone()), Duration::from_secs(1));
        assert_eq!(failures.failed(job()), Duration::from_secs(8));

        // A successful reconcile starts over.
        failures.forget(&job());
        assert_eq!(failures.failed(job()), Duration::from_secs(1));

        // Deleted objects leave nothing behind.
        for gone in [job(), other, queue, vc] {
            failures.forget(&gone);
        }
        assert!(failures.is_empty());
    }
}
