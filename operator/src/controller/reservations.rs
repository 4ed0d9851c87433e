//! GPU reservations: holding a shared GPU from a node's device plugin.
//!
//! A `gpuShare` replica requests no `nvidia.com/gpu` (a device plugin cannot split a GPU), so
//! on a node whose device plugin hands out GPUs neither the plugin nor kube-scheduler would
//! count the GPU the shares use: a whole-GPU pod could get it. So, as KAI does, the operator
//! keeps one *reservation pod* per shared GPU on such a node, in its own namespace: it
//! requests `nvidia.com/gpu: 1`, the plugin gives it a device, and its container
//! (`kubetrain-operator reserve-gpu`) writes that device on its own pod
//! (`kubetrain.io/reserved-device`). The share pods wait behind a scheduling gate
//! (`pods::GpuPath::Reserved`) until the operator copies the device into their
//! `kubetrain.io/visible-devices` annotation, their `NVIDIA_VISIBLE_DEVICES`, and lifts the
//! gate. The plugin then sees the GPU as taken for as long as a share uses it.
//!
//! This module is pure, a reader and planner of pods: [`plan`] decides from the pods which
//! reservations to create, which to delete, which share pods to release;
//! `reservation_writes::carry_out` carries it out once a scheduling cycle. A
//! reservation is made only for a share pod the cache shows, and removed once no share pod
//! that holds resources uses its GPU, so a lagging cache can delay a share, never strand one
//! without its reservation. The names are fixed per GPU, so a cache that lags behind the
//! operator's own create cannot make a second one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, Pod, PodSecurityContext, PodSpec, ResourceRequirements,
    SeccompProfile, SecurityContext, Toleration,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::gang::holds_resources;
use super::pods::{env_from_field, pin_to_node};
use super::resources::GPU_RESOURCE;
use crate::api::annotations::{
    ATTEMPT_ANNOTATION, GANG_SIZE_ANNOTATION, GPU_ASSIGNMENT_ANNOTATION, GPU_SHARE_ANNOTATION,
    GPUS_ANNOTATION, JOB_LABEL, MANAGER, NODE_ANNOTATION, RESERVATION_GATE, RESERVATION_ID_LABEL,
    RESERVATION_LABEL, RESERVATION_UID_ANNOTATION, RESERVED_DEVICE_ANNOTATION,
    VISIBLE_DEVICES_ANNOTATION,
};
use crate::api::trainingjob::GpuAssignment;

// The reservation pods' settings are part of the pod settings (`pods::PodSettings`).
pub use super::pods::ReservationSettings;

/// One of kubetrain's GPUs that shares use on a node with a device plugin.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedGpu {
    pub node: String,
    /// kubetrain's index of the GPU on the node (its plan; the plugin picks the device).
    pub gpu: u32,
}

impl SharedGpu {
    /// A digest of its pod's name: a label value (63 characters at most) naming it.
    pub fn id(&self) -> String {
        super::pods::template_digest(&serde_json::Value::String(self.pod_name()))
    }

    /// The name of its reservation pod: fixed, so a second create of it fails. A node name
    /// leaves no room for the prefix when it is very long; then a digest of it stands in.
    pub fn pod_name(&self) -> String {
        let name = format!("kubetrain-gpu-{}-{}", self.node, self.gpu);
        if name.len() <= 253 {
            return name;
        }
        let digest = super::pods::template_digest(&serde_json::Value::String(self.node.clone()));
        format!("kubetrain-gpu-{digest}-{}", self.gpu)
    }
}

/// A share pod that waits for, or holds, a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SharePod {
    namespace: String,
    name: String,
    gpu: SharedGpu,
    /// Still behind [`RESERVATION_GATE`].
    gated: bool,
    /// Holds its node's resources (not finished).
    active: bool,
    /// Released: the uid of the reservation whose device it runs on.
    held_by: Option<String>,
    /// Its job's name.
    job: String,
    /// Its gang: the job's pods of this attempt, and how many there are to be.
    gang: GangOf,
    gang_size: Option<u32>,
}

/// A gang's pods: namespace, job, attempt (`kubetrain.io/attempt`).
type GangOf = (String, String, String);

fn gang_of(pod: &Pod) -> Option<GangOf> {
    Some((
        pod.namespace().unwrap_or_default(),
        pod.labels().get(JOB_LABEL)?.clone(),
        annotation(pod, ATTEMPT_ANNOTATION)
            .unwrap_or_default()
            .to_string(),
    ))
}

/// A reservation pod, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub name: String,
    pub uid: Option<String>,
    pub gpu: SharedGpu,
    /// What its container reported, once it runs.
    pub device: Option<String>,
    /// Being deleted.
    pub deleting: bool,
    /// Holds its node's resources: not Failed or Succeeded.
    pub active: bool,
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The single GPU index in a `kubetrain.io/gpus` value; a share has exactly one.
fn single_gpu(value: &str) -> Option<u32> {
    value.trim().parse().ok()
}

impl Reservation {
    /// Whether it holds its device: not being deleted, not failed.
    fn live(&self) -> bool {
        self.active && !self.deleting
    }

    /// Whether it is the reservation of uid `uid`, and still holds its device.
    pub fn holds(&self, uid: &str) -> bool {
        self.live() && self.uid.as_deref() == Some(uid)
    }
}

/// The reservation a pod is, if it is one.
pub fn read_reservation(pod: &Pod) -> Option<Reservation> {
    if !pod.labels().contains_key(RESERVATION_LABEL) {
        return None;
    }
    let node = annotation(pod, NODE_ANNOTATION)?;
    let gpu = single_gpu(annotation(pod, GPUS_ANNOTATION)?)?;
    Some(Reservation {
        name: pod.name_any(),
        uid: pod.uid(),
        gpu: SharedGpu {
            node: node.to_string(),
            gpu,
        },
        device: annotation(pod, RESERVED_DEVICE_ANNOTATION)
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        active: holds_resources(pod),
    })
}

/// A TrainingJob's share pod whose GPU comes through a reservation: a share
/// (`kubetrain.io/gpu-share`) whose devices the plugin assigns.
fn read_share(pod: &Pod) -> Option<SharePod> {
    if !pod.labels().contains_key(JOB_LABEL) {
        return None;
    }
    annotation(pod, GPU_SHARE_ANNOTATION)?;
    let by = annotation(pod, GPU_ASSIGNMENT_ANNOTATION).and_then(GpuAssignment::parse);
    if by != Some(GpuAssignment::DevicePlugin) {
        return None;
    }
    let gpu = SharedGpu {
        node: annotation(pod, NODE_ANNOTATION)?.to_string(),
        gpu: single_gpu(annotation(pod, GPUS_ANNOTATION)?)?,
    };
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.name == RESERVATION_GATE));
    Some(SharePod {
        namespace: pod.namespace().unwrap_or_default(),
        name: pod.name_any(),
        gpu,
        gated,
        active: holds_resources(pod),
        held_by: annotation(pod, RESERVATION_UID_ANNOTATION).map(str::to_string),
        job: pod.labels().get(JOB_LABEL).cloned().unwrap_or_default(),
        gang: gang_of(pod)?,
        gang_size: annotation(pod, GANG_SIZE_ANNOTATION).and_then(|n| n.trim().parse().ok()),
    })
}

/// The GPU whose reservation a share pod waits for behind its gate, if it does.
pub fn waits_for(pod: &Pod) -> Option<SharedGpu> {
    read_share(pod).filter(|s| s.gated).map(|s| s.gpu)
}

/// The GPU a share pod holds through a reservation, gated or released.
pub fn held_through(pod: &Pod) -> Option<SharedGpu> {
    read_share(pod).map(|s| s.gpu)
}

/// Why a released share pod's GPU is no longer held from the device plugin: the
/// reservation whose device it runs on (`reservation`, the pod of that GPU's fixed name, as
/// the cache shows it) is gone, going, or another pod. `None` while it holds, and for a pod
/// not released through a reservation.
pub fn lost(share: &Pod, reservation: Option<&Pod>) -> Option<String> {
    let s = read_share(share)?;
    let uid = s.held_by?;
    let name = s.gpu.pod_name();
    match reservation.and_then(read_reservation) {
        Some(r) if r.holds(&uid) => None,
        None => Some(format!("its GPU's reservation {name} is gone")),
        Some(r) if r.uid.as_deref() != Some(uid.as_str()) => Some(format!(
            "its GPU's reservation {name} was replaced; the device plugin may give the new one \
             another device"
        )),
        Some(r) if r.deleting => Some(format!(
            "its GPU's reservation {name} is being deleted (preempted, or deleted by hand)"
        )),
        Some(_) => Some(format!("its GPU's reservation {name} failed")),
    }
}

/// A share pod to release: its reservation reported `device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub namespace: String,
    pub name: String,
    pub device: String,
    /// The reservation's uid.
    pub reservation: String,
}

/// What [`carry_out`] does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// GPUs that need a reservation and have none.
    pub create: Vec<SharedGpu>,
    /// Reservation pods to delete: no share uses their GPU, or they failed (made again once
    /// gone, if a share still waits for the GPU; the running ones are rechecked).
    pub delete: Vec<String>,
    /// Gated share pods whose reservation reported its device.
    pub release: Vec<Release>,
    /// Jobs (namespace, name) with a released share whose reservation is gone, going or
    /// replaced: their reconciler stops and retries them (`lost`); reservation pods carry no
    /// job label, so no watch event of theirs reaches it.
    pub recheck: BTreeSet<(String, String)>,
}

/// The GPUs that active share pods hold, or wait behind their gate to hold.
fn needed(shares: &[SharePod]) -> BTreeSet<&SharedGpu> {
    shares.iter().filter(|s| s.active).map(|s| &s.gpu).collect()
}

/// The reservation pods of `namespace`, read.
fn reservations_in<'a>(
    pods: &'a [Arc<Pod>],
    namespace: &'a str,
) -> impl Iterator<Item = (&'a Arc<Pod>, Reservation)> + 'a {
    pods.iter()
        .filter(move |p| p.namespace().as_deref() == Some(namespace))
        .filter_map(|p| Some((p, read_reservation(p)?)))
}

/// Whether a reservation no share needs any more, or already being deleted, still holds its
/// GPU: until its pod is gone, kube-scheduler and the kubelet count its `nvidia.com/gpu`.
fn on_its_way_out(r: &Reservation, needed: &BTreeSet<&SharedGpu>) -> bool {
    r.active && (r.deleting || !needed.contains(&r.gpu))
}

/// The reservation pods on their way out ([`plan`] deletes those no share needs), with what
/// they hold. The snapshot holds their GPUs as a terminating pod's: placed there at once, a
/// whole-GPU replica met `Insufficient nvidia.com/gpu` from kube-scheduler for seconds (an
/// acceptance run), and a pod bound directly would be refused by the kubelet.
pub fn outgoing<'a>(pods: &'a [Arc<Pod>], namespace: &'a str) -> Vec<(&'a Arc<Pod>, Reservation)> {
    let shares: Vec<SharePod> = pods.iter().filter_map(|p| read_share(p)).collect();
    let needed = needed(&shares);
    reservations_in(pods, namespace)
        .filter(|(_, r)| on_its_way_out(r, &needed))
        .collect()
}

/// Decides from the pods (all of them; reservations are looked for in `namespace`).
pub fn plan(pods: &[Arc<Pod>], namespace: &str) -> Plan {
    let shares: Vec<SharePod> = pods.iter().filter_map(|p| read_share(p)).collect();
    let needed = needed(&shares);
    let reservations: BTreeMap<SharedGpu, Reservation> = reservations_in(pods, namespace)
        .map(|(_, r)| (r.gpu.clone(), r))
        .collect();
    let mut out = Plan::default();
    // Made only for a share that waits: a released share whose reservation went runs on a
    // device the plugin may give away, and is retried (`lost`), not handed a new one.
    let waiting: BTreeSet<&SharedGpu> = shares
        .iter()
        .filter(|s| s.active && s.gated)
        .map(|s| &s.gpu)
        .collect();
    for gpu in waiting {
        if !reservations.contains_key(gpu) {
            out.create.push(gpu.clone());
        }
    }
    for r in reservations.values() {
        if !r.deleting && (!r.active || !needed.contains(&r.gpu)) {
            out.delete.push(r.name.clone());
        }
    }
    // A gang's shares are released together, once the whole gang exists and every one of
    // them has its device: released one by one, the first ranks ran while the others were
    // not yet created (an operator killed mid-admission left two of three running for
    // 30 s, until the incomplete gang was torn down), or waited in rendezvous for a device.
    let mut present: BTreeMap<GangOf, u32> = BTreeMap::new();
    for p in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        if let Some(g) = gang_of(p) {
            *present.entry(g).or_default() += 1;
        }
    }
    let mut gangs: BTreeMap<&GangOf, Option<Vec<Release>>> = BTreeMap::new();
    for s in shares.iter().filter(|s| s.gated && s.active) {
        let whole = s
            .gang_size
            .is_none_or(|n| present.get(&s.gang).copied().unwrap_or(0) >= n);
        let ready = reservations
            .get(&s.gpu)
            .filter(|r| r.live())
            .and_then(|r| Some((r.device.clone()?, r.uid.clone()?)))
            .filter(|_| whole);
        let gang = gangs.entry(&s.gang).or_insert_with(|| Some(Vec::new()));
        match (gang.as_mut(), ready) {
            (Some(releases), Some((device, reservation))) => releases.push(Release {
                namespace: s.namespace.clone(),
                name: s.name.clone(),
                device,
                reservation,
            }),
            _ => *gang = None,
        }
    }
    out.release = gangs.into_values().flatten().flatten().collect();
    for s in shares.iter().filter(|s| s.active) {
        let Some(uid) = &s.held_by else { continue };
        let holds = reservations.get(&s.gpu).is_some_and(|r| r.holds(uid));
        if !holds {
            out.recheck.insert((s.namespace.clone(), s.job.clone()));
        }
    }
    out
}

/// The reservation pod of `gpu`. `node_uid` makes the Node its owner, so the garbage
/// collector removes it with the node; as its controller, so that `kubectl drain` evicts it
/// as any managed pod instead of refusing a pod that "declares no controller" (and its
/// [`disruption_budget`] then makes the drain wait until kubetrain has moved the shares off).
pub fn reservation_pod(gpu: &SharedGpu, node_uid: Option<&str>, s: &ReservationSettings) -> Pod {
    let mut spec = PodSpec {
        containers: vec![reserve_container(s)],
        service_account_name: Some(s.service_account.clone()),
        // The restricted Pod Security level, which the operator's namespace may enforce.
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        // The shares it stands for passed the node's taints already; the reservation must
        // land beside them whatever the node's taints.
        tolerations: Some(vec![Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }]),
        termination_grace_period_seconds: Some(1),
        priority_class_name: s.priority_class.clone(),
        ..Default::default()
    };
    // Bound by the scheduler in either binding mode: it waits there while the plugin has no
    // device free, where a kubelet handed it by `nodeName` would fail it at once.
    pin_to_node(&mut spec, &gpu.node);
    Pod {
        metadata: reservation_meta(gpu, node_uid, s),
        spec: Some(spec),
        status: None,
    }
}

/// The reservation's one container: `reserve-gpu` holding one GPU, at the least CPU and
/// memory, with no privileges.
fn reserve_container(s: &ReservationSettings) -> Container {
    let quantity = |q: &str| Quantity(q.into());
    Container {
        name: "reserve".into(),
        image: Some(s.image.clone()),
        args: Some(vec!["reserve-gpu".into()]),
        env: Some(vec![
            env_from_field("POD_NAME", "metadata.name"),
            env_from_field("POD_NAMESPACE", "metadata.namespace"),
        ]),
        resources: Some(ResourceRequirements {
            requests: Some(
                [
                    ("cpu".to_string(), quantity("1m")),
                    ("memory".to_string(), quantity("16Mi")),
                ]
                .into(),
            ),
            limits: Some(
                [
                    ("memory".to_string(), quantity("64Mi")),
                    (GPU_RESOURCE.to_string(), quantity("1")),
                ]
                .into(),
            ),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The reservation's name, labels, placement annotations and owner (its node, so that it
/// goes with the node).
fn reservation_meta(
    gpu: &SharedGpu,
    node_uid: Option<&str>,
    s: &ReservationSettings,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(gpu.pod_name()),
        namespace: Some(s.namespace.clone()),
        labels: Some(
            [
                (RESERVATION_LABEL.to_string(), "true".to_string()),
                (RESERVATION_ID_LABEL.to_string(), gpu.id()),
                (
                    "app.kubernetes.io/managed-by".to_string(),
                    MANAGER.to_string(),
                ),
            ]
            .into(),
        ),
        annotations: Some(
            [
                (NODE_ANNOTATION.to_string(), gpu.node.clone()),
                (GPUS_ANNOTATION.to_string(), gpu.gpu.to_string()),
            ]
            .into(),
        ),
        owner_references: node_uid.map(|uid| {
            vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: gpu.node.clone(),
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]
        }),
        ..Default::default()
    }
}

/// The budget of a reservation pod: it may not be evicted while it exists. `kubectl drain`
/// waits on it, as on the shares' own budgets, while kubetrain checkpoints the shares and
/// moves them off; then it deletes the reservation itself. An integer `minAvailable`, the
/// only form the disruption controller takes for a pod whose controller has no scale. Owned
/// by the pod, it goes with it.
pub fn disruption_budget(pod: &Pod) -> PodDisruptionBudget {
    let id = pod
        .labels()
        .get(RESERVATION_ID_LABEL)
        .cloned()
        .unwrap_or_default();
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(pod.name_any()),
            namespace: pod.namespace(),
            labels: Some([(RESERVATION_LABEL.to_string(), "true".to_string())].into()),
            owner_references: pod.uid().map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: pod.name_any(),
                    uid,
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some([(RESERVATION_ID_LABEL.to_string(), id)].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The patch that releases a gated share pod: its device, and the gate gone (a strategic
/// merge on the gate's name, so another controller's gates stay).
pub fn release_patch(device: &str, reservation: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"annotations": {
            VISIBLE_DEVICES_ANNOTATION: device,
            RESERVATION_UID_ANNOTATION: reservation,
        }},
        "spec": {"schedulingGates": [{"name": RESERVATION_GATE, "$patch": "delete"}]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the operator's own image cannot be read, the reservation pods run the image the
    /// installs ship (`kubetrain/operator` alone named an image nobody publishes).
    #[test]
    fn the_fallback_image_is_the_one_the_installs_ship() {
        let manifest = include_str!("../../../config/manager/deployment.yaml");
        let shipped = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("image: "))
            .expect("the operator's image");
        let repository = |image: &str| image.rsplit_once(':').map(|(r, _)| r.to_string());
        assert_eq!(
            repository(&ReservationSettings::default().image),
            repository(shipped)
        );
    }

    const NS: &str = "kubetrain-system";
    const UID: &str = "r-uid";

    fn share(name: &str, node: &str, gpu: u32, gated: bool, phase: &str) -> Arc<Pod> {
        let gates = if gated {
            serde_json::json!([{"name": RESERVATION_GATE}])
        } else {
            serde_json::json!(null)
        };
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "team",
                "labels": {JOB_LABEL: "j"},
                "annotations": {NODE_ANNOTATION: node, GPUS_ANNOTATION: gpu.to_string(),
                    GPU_SHARE_ANNOTATION: "500", GPU_ASSIGNMENT_ANNOTATION: "device-plugin"}},
            "spec": {"containers": [], "schedulingGates": gates},
            "status": {"phase": phase},
        }))
        .expect("pod");
        if !gated {
            // Released from the reservation of [`reservation`]'s uid.
            pod.annotations_mut()
                .insert(RESERVATION_UID_ANNOTATION.into(), UID.into());
        }
        Arc::new(pod)
    }

    fn reservation(node: &str, gpu: u32, device: Option<&str>, deleting: bool) -> Arc<Pod> {
        let mut pod = reservation_pod(
            &SharedGpu {
                node: node.into(),
                gpu,
            },
            Some("uid"),
            &ReservationSettings {
                namespace: NS.into(),
                ..Default::default()
            },
        );
        pod.metadata.uid = Some(UID.into());
        if let Some(d) = device {
            pod.annotations_mut()
                .insert(RESERVED_DEVICE_ANNOTATION.into(), d.into());
        }
        if deleting {
            pod.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        Arc::new(pod)
    }

    fn gpu(node: &str, gpu: u32) -> SharedGpu {
        SharedGpu {
            node: node.into(),
            gpu,
        }
    }

    #[test]
    fn a_share_gets_a_reservation_then_its_device() {
        let waiting = share("s-0", "n1", 3, true, "Pending");
        let p = plan(std::slice::from_ref(&waiting), NS);
        assert_eq!(p.create, vec![gpu("n1", 3)]);
        assert!(p.delete.is_empty() && p.release.is_empty());
        // Created, not yet running: nothing more to do.
        let r = reservation("n1", 3, None, false);
        assert_eq!(plan(&[waiting.clone(), r], NS), Plan::default());
        // Reported: the share is released with that device.
        let r = reservation("n1", 3, Some("GPU-abc"), false);
        let p = plan(&[waiting, r.clone()], NS);
        assert_eq!(
            p.release,
            vec![Release {
                namespace: "team".into(),
                name: "s-0".into(),
                device: "GPU-abc".into(),
                reservation: UID.into(),
            }]
        );
        assert!(p.create.is_empty() && p.delete.is_empty());
        // Released and running: kept.
        let running = share("s-0", "n1", 3, false, "Running");
        assert_eq!(plan(&[running, r], NS), Plan::default());
    }

    /// A gang's shares are released together: not before every pod of the gang exists (an
    /// operator stopped mid-admission left part of a gang running), nor before each of them
    /// has its device.
    #[test]
    fn a_gangs_shares_are_released_together_once_the_gang_is_whole() {
        let member = |name: &str, gpu: u32| {
            let mut p = (*share(name, "n1", gpu, true, "Pending")).clone();
            p.annotations_mut().extend([
                (GANG_SIZE_ANNOTATION.to_string(), "3".to_string()),
                (ATTEMPT_ANNOTATION.to_string(), "0".to_string()),
            ]);
            Arc::new(p)
        };
        let ready = |g: u32| reservation("n1", g, Some(&format!("GPU-{g}")), false);
        let released = |pods: &[Arc<Pod>]| {
            let mut names: Vec<String> =
                plan(pods, NS).release.into_iter().map(|r| r.name).collect();
            names.sort();
            names
        };
        let (a, b, c) = (member("s-0", 0), member("s-1", 1), member("s-2", 2));
        // two of three created, both with their devices: not yet
        assert!(released(&[a.clone(), b.clone(), ready(0), ready(1)]).is_empty());
        // all three, one device still to come: not yet
        let all = [a.clone(), b.clone(), c.clone(), ready(0), ready(1)];
        assert!(released(&all).is_empty());
        assert_eq!(plan(&all, NS).create, vec![gpu("n1", 2)]);
        // the whole gang with every device
        assert_eq!(
            released(&[a.clone(), b.clone(), c, ready(0), ready(1), ready(2)]),
            ["s-0", "s-1", "s-2"]
        );
        // a pod of an earlier attempt does not make the gang whole
        let mut old = (*member("s-2", 2)).clone();
        old.annotations_mut()
            .insert(ATTEMPT_ANNOTATION.into(), "-1".into());
        assert!(released(&[a, b, Arc::new(old), ready(0), ready(1), ready(2)]).is_empty());
    }

    #[test]
    fn a_reservation_goes_when_no_share_holds_its_gpu() {
        let r = reservation("n1", 3, Some("GPU-abc"), false);
        let done = share("s-0", "n1", 3, false, "Succeeded");
        let p = plan(&[done, r.clone()], NS);
        assert_eq!(p.delete, vec![gpu("n1", 3).pod_name()]);
        // Another share on another GPU does not keep it.
        let other = share("t-0", "n1", 4, true, "Pending");
        let p = plan(&[other, r], NS);
        assert_eq!(p.delete, vec![gpu("n1", 3).pod_name()]);
        assert_eq!(p.create, vec![gpu("n1", 4)]);
    }

    /// A running share's device is held only while the reservation it was released from
    /// lives: gone, going, failed or replaced, the share's job is looked at again (and stopped,
    /// `lost`), and no new reservation is made for it.
    #[test]
    fn a_running_share_whose_reservation_is_lost_is_rechecked() {
        let running = share("s-0", "n1", 3, false, "Running");
        let holding = reservation("n1", 3, Some("GPU-abc"), false);
        assert_eq!(lost(&running, Some(&holding)), None);
        assert_eq!(
            plan(&[running.clone(), holding.clone()], NS),
            Plan::default()
        );
        let mut replaced = (*holding).clone();
        replaced.metadata.uid = Some("other".into());
        let going = reservation("n1", 3, Some("GPU-abc"), true);
        for (r, why) in [
            (None, "is gone"),
            (Some(Arc::new(replaced)), "was replaced"),
            (Some(going), "is being deleted"),
        ] {
            let said = lost(&running, r.as_deref()).expect("lost");
            assert!(said.contains(why), "{said}");
            let mut pods = vec![running.clone()];
            pods.extend(r);
            let p = plan(&pods, NS);
            assert_eq!(p.recheck, [("team".to_string(), "j".to_string())].into());
            assert!(p.create.is_empty());
        }
        // A waiting share has nothing to lose.
        let waiting = share("s-1", "n1", 3, true, "Pending");
        assert_eq!(lost(&waiting, None), None);
    }

    #[test]
    fn a_reservation_being_deleted_releases_nobody_and_is_made_again_once_gone() {
        let waiting = share("s-0", "n1", 3, true, "Pending");
        let leaving = reservation("n1", 3, Some("GPU-old"), true);
        // Not released onto a device about to be handed back; not created again while the
        // old one holds the name.
        assert_eq!(plan(&[waiting.clone(), leaving], NS), Plan::default());
        assert_eq!(plan(&[waiting], NS).create, vec![gpu("n1", 3)]);
    }

    #[test]
    fn a_failed_reservation_is_replaced() {
        let running = share("s-0", "n1", 3, false, "Running");
        let mut failed = (*reservation("n1", 3, None, false)).clone();
        failed.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Failed".into()),
            ..Default::default()
        });
        let p = plan(&[running, Arc::new(failed)], NS);
        assert_eq!(p.delete, vec![gpu("n1", 3).pod_name()]);
        assert!(p.create.is_empty(), "not made again for a running share");
        assert_eq!(p.recheck, [("team".to_string(), "j".to_string())].into());
    }

    #[test]
    fn only_shares_the_plugin_serves_need_a_reservation() {
        let mut by_kubetrain = (*share("s-0", "n1", 3, false, "Running")).clone();
        by_kubetrain
            .annotations_mut()
            .insert(GPU_ASSIGNMENT_ANNOTATION.into(), "kubetrain".into());
        let mut whole = (*share("w-0", "n1", 2, false, "Running")).clone();
        whole.annotations_mut().remove(GPU_SHARE_ANNOTATION);
        let pods = [Arc::new(by_kubetrain), Arc::new(whole)];
        assert_eq!(plan(&pods, NS), Plan::default());
        assert!(pods.iter().all(|p| held_through(p).is_none()));
        // A reservation elsewhere than the operator's namespace is not one of its own.
        let mut foreign = (*reservation("n1", 3, None, false)).clone();
        foreign.metadata.namespace = Some("other".into());
        assert_eq!(plan(&[Arc::new(foreign)], NS), Plan::default());
    }

    #[test]
    fn the_reservation_pod_asks_the_plugin_for_one_gpu_on_its_node() {
        let pod = reservation_pod(&gpu("n1", 3), Some("u"), &ReservationSettings::default());
        assert_eq!(pod.name_any(), "kubetrain-gpu-n1-3");
        let r = read_reservation(&pod).expect("reads back");
        assert_eq!((r.gpu, r.device, r.active), (gpu("n1", 3), None, true));
        let spec = pod.spec.as_ref().expect("spec");
        let limits = spec.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .expect("limits");
        assert_eq!(limits[GPU_RESOURCE].0, "1");
        let terms = &spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .expect("pinned")
            .node_selector_terms;
        assert_eq!(
            terms[0].match_fields.as_ref().expect("fields")[0].values,
            Some(vec!["n1".to_string()])
        );
        assert!(spec.node_name.is_none());
        let owner = &pod.owner_references()[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Node", "n1"));
        let long = gpu(&"n".repeat(250), 7).pod_name();
        assert!(long.len() <= 253 && long.ends_with("-7"), "{long}");
    }

    #[test]
    fn the_release_patch_lifts_only_its_own_gate() {
        let patch = release_patch("GPU-abc", UID);
        assert_eq!(
            patch["metadata"]["annotations"][VISIBLE_DEVICES_ANNOTATION],
            "GPU-abc"
        );
        assert_eq!(
            patch["spec"]["schedulingGates"],
            serde_json::json!([{"name": RESERVATION_GATE, "$patch": "delete"}])
        );
    }
}
