//! Placement and ordering as users see them: topology-aware placement, queue policies,
//! and the numbers `kubectl get queues` / `kubectl get vc` print.

use std::time::{Duration, Instant};

use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// NVLink groups of a node, from its topology annotation, as sets of GPU indices.
fn nvlink_groups(s: &Scenario, node: &str) -> Vec<Vec<u32>> {
    let raw = s.cp.jsonpath(
        &["node", node],
        "{.metadata.annotations.gpu\\.kubetrain\\.io/topology}",
    );
    let topo: kubetrain::api::topology::NodeTopology =
        serde_json::from_str(&raw).expect("topology annotation");
    topo.groups
        .into_iter()
        .filter(|g| g.nvlink)
        .map(|g| g.gpus)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_nvlink_pair_whole_node_and_one_rack() {
    // 16 nodes × 8 GPUs (two 4-GPU NVLink groups each) in 2 racks of 8.
    let s = Scenario::with_topology("topo", 16, 8, 2, "two-nvlink-groups").await;
    let q = s.tenant("topo", 128, "FIFO", "");
    // A 1-GPU job first, so the cluster is not empty and choices matter.
    s.cp.apply(&s.job("small", &q, 1, 1, &[], ""));
    s.wait_phase("small", "Running", T).await;
    s.cp.apply(&s.job("pair", &q, 1, 2, &[], ""));
    s.cp.apply(&s.job("node", &q, 1, 8, &[], ""));
    s.cp.apply(&s.job("rack", &q, 8, 8, &[], ""));
    for j in ["pair", "node", "rack"] {
        s.wait_phase(j, "Running", T).await;
    }
    // The 2-GPU job's GPUs are one NVLink pair (same NVLink group).
    let node = s.job_status("pair", "{.status.placement[0].node}");
    let gpus: Vec<u32> = s
        .job_status("pair", "{.status.placement[0].gpus[*]}")
        .split_whitespace()
        .map(|g| g.parse().expect("index"))
        .collect();
    assert_eq!(gpus.len(), 2);
    let groups = nvlink_groups(&s, &node);
    assert!(
        groups.iter().any(|g| gpus.iter().all(|x| g.contains(x))),
        "GPUs {gpus:?} on {node} span NVLink groups {groups:?}"
    );
    // The 8-GPU job: one node.
    assert_eq!(
        s.job_status("node", "{.status.placement[*].node}")
            .split_whitespace()
            .count(),
        1
    );
    // The 64-GPU job: 8 whole nodes of one rack.
    let nodes: Vec<String> = s
        .job_status("rack", "{.status.placement[*].node}")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(nodes.len(), 8);
    let racks: std::collections::BTreeSet<String> = nodes
        .iter()
        .map(|n| {
            s.cp.jsonpath(
                &["node", n],
                "{.metadata.labels.topology\\.kubernetes\\.io/rack}",
            )
        })
        .collect();
    assert_eq!(racks.len(), 1, "64-GPU job spans racks {racks:?}");
    // Ranks follow the placement: rank 0..7, one per node, and MASTER_ADDR is rank 0's pod.
    let ranks = s.job_status("rack", "{.status.placement[*].rank}");
    assert_eq!(ranks, "0 1 2 3 4 5 6 7");
    // Each pod's RANK / NODE_RANK env matches the placement in status.
    let placed = s.job_status(
        "rack",
        "{range .status.placement[*]}{.task}-{.index}={.rank} {end}",
    );
    for entry in placed.split_whitespace() {
        let (replica, rank) = entry.split_once('=').expect("task-index=rank");
        let pod = format!("rack-{replica}");
        let env = s.cp.jsonpath(
            &["pod", &pod, "-n", &s.ns],
            "{range .spec.containers[0].env[*]}{.name}={.value} {end}",
        );
        assert!(env.contains(&format!("RANK={rank} ")), "{pod}: {env}");
        assert!(
            env.contains(&format!("NODE_RANK={rank} ")),
            "{pod}: one replica per node: {env}"
        );
        assert!(env.contains("WORLD_SIZE=8 "), "{pod}: {env}");
        assert!(env.contains("MASTER_ADDR=rack-worker-"), "{pod}: {env}");
    }
    s.finish().await;
}

/// Waits until `job` is Running or Succeeded and returns when it was admitted (seconds).
async fn admitted_at(s: &Scenario, job: &str) -> String {
    let deadline = Instant::now() + T;
    loop {
        let at = s.job_status(job, "{.status.admittedAt}");
        if !at.is_empty() {
            return at;
        }
        assert!(
            Instant::now() < deadline,
            "{job} never admitted: {}",
            s.job_status(job, "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// The order in which jobs were admitted, from the Admitted events' order of arrival.
async fn admission_order(s: &Scenario, jobs: &[&str]) -> Vec<String> {
    let mut seen: Vec<(String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < jobs.len() {
        for j in jobs {
            if seen.iter().any(|(n, _)| n == j) {
                continue;
            }
            if !s.job_status(j, "{.status.admittedAt}").is_empty() {
                seen.push((j.to_string(), s.job_status(j, "{.status.admittedAt}")));
            }
        }
        assert!(Instant::now() < deadline, "not all admitted: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen.into_iter().map(|(n, _)| n).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_policies_order_jobs() {
    let s = Scenario::new("policy", 1, 8, 1).await;
    // Priority: a blocker holds the node (long enough for the three applies below, even on a
    // loaded machine); three waiting jobs run by priority, not age.
    let pq = s.tenant("prio", 8, "Priority", "");
    s.cp.apply(&s.job("blocker", &pq, 1, 8, &[("run-seconds", "8")], ""));
    s.wait_phase("blocker", "Running", T).await;
    for (name, prio) in [("low", 1), ("high", 9), ("mid", 5)] {
        s.cp.apply(&s.job(
            name,
            &pq,
            1,
            8,
            &[("run-seconds", "1")],
            &format!("  priority: {prio}\n"),
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let order = admission_order(&s, &["low", "high", "mid"]).await;
    assert_eq!(order, vec!["high", "mid", "low"], "Priority order");
    for j in ["low", "high", "mid"] {
        s.wait_phase(j, "Succeeded", T).await;
    }

    // ShortestPredictedFirst: shortest prediction first (the spec's, else the learned one);
    // no prediction last.
    let sq = s.tenant("spf", 8, "ShortestPredictedFirst", "");
    s.cp.apply(&s.job("blocker2", &sq, 1, 8, &[("run-seconds", "8")], ""));
    s.wait_phase("blocker2", "Running", T).await;
    s.cp.apply(&s.job("unknown", &sq, 1, 8, &[("run-seconds", "1")], ""));
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (name, secs) in [("long", 7200), ("short", 60)] {
        s.cp.apply(&s.job(
            name,
            &sq,
            1,
            8,
            &[("run-seconds", "1")],
            &format!("  predictedDurationSeconds: {secs}\n"),
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let order = admission_order(&s, &["unknown", "long", "short"]).await;
    // `unknown` names no run time: the operator predicts it from the runs it has seen of
    // the same size (the 8-GPU jobs above, a few seconds each), else it has none and goes
    // last. Either way the queue orders by the prediction in effect, ties by age.
    let learned = s.job_status("unknown", "{.status.prediction.seconds}");
    let mut expected = vec![
        ("unknown", learned.parse::<i64>().ok()),
        ("long", Some(7200)),
        ("short", Some(60)),
    ];
    expected.sort_by_key(|(_, secs)| secs.unwrap_or(i64::MAX));
    let expected: Vec<&str> = expected.into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        order, expected,
        "ShortestPredictedFirst order (unknown's learned prediction: {learned:?} s)"
    );
    let _ = admitted_at(&s, "unknown").await;
    s.finish().await;
}

/// UserFair: the user holding fewer GPUs in the queue goes next, even when another user's job
/// has waited longer (FIFO would admit alice's job first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_fair_queue_serves_the_user_holding_fewer_gpus() {
    let s = Scenario::new("userfair", 1, 8, 1).await;
    let q = s.tenant("fair", 8, "UserFair", "");
    // A 4-GPU job of `user` that runs `secs` seconds.
    let submit = |name: &str, user: &str, secs: &str| {
        let as_user = format!("  user: {user}\n");
        s.cp.apply(&s.job(name, &q, 1, 4, &[("run-seconds", secs)], &as_user));
    };
    submit("alice-holds", "alice", "15");
    s.wait_phase("alice-holds", "Running", T).await;
    submit("bob-holds", "bob", "8");
    s.wait_phase("bob-holds", "Running", T).await;
    // Both wait for GPUs; alice's job was queued first.
    submit("alice-next", "alice", "1");
    s.wait_phase("alice-next", "Queued", T).await;
    submit("bob-next", "bob", "1");
    let order = admission_order(&s, &["alice-next", "bob-next"]).await;
    assert_eq!(
        order,
        vec!["bob-next", "alice-next"],
        "bob holds 4 GPUs fewer once bob-holds ends, so his job goes first"
    );
    s.finish().await;
}

/// A strict queue (`queueingStrategy: Strict`): a head that does not fit holds back a small
/// job behind it although GPUs are free for the small one; the small job says why, and runs
/// after the head. `kubectl get queues -o wide` shows the strategy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_queue_holds_jobs_behind_a_head_that_cannot_start() {
    let s = Scenario::new("strict", 1, 8, 1).await;
    let q = s.tenant("strict", 8, "FIFO\n  queueingStrategy: Strict", "");
    s.cp.apply(&s.job("holder", &q, 1, 4, &[("run-seconds", "8")], ""));
    s.wait_phase("holder", "Running", T).await;
    s.cp.apply(&s.job("head", &q, 1, 8, &[("run-seconds", "1")], ""));
    s.wait_phase("head", "Queued", T).await;
    s.cp.apply(&s.job("small", &q, 1, 2, &[("run-seconds", "1")], ""));
    let admitted = "{.status.conditions[?(@.type==\"Admitted\")].reason}";
    let deadline = Instant::now() + T;
    while s.job_status("small", admitted) != "BehindQueueHead" {
        assert!(
            Instant::now() < deadline,
            "small: {}",
            s.job_status("small", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let message = s.job_status(
        "small",
        "{.status.conditions[?(@.type==\"Admitted\")].message}",
    );
    assert!(message.contains("head"), "{message}");
    let wide =
        s.cp.kubectl_ok(&["get", "queue", &q, "-o", "wide"])
            .expect("get queue -o wide");
    assert!(
        wide.contains("STRATEGY") && wide.contains("Strict"),
        "{wide}"
    );
    let order = admission_order(&s, &["head", "small"]).await;
    assert_eq!(order, vec!["head", "small"]);
    s.finish().await;
}

/// Deleting a queue: it admits nothing new (its waiting job says `QueueTerminating`), its
/// running job runs on, and it goes once that job has finished. The waiting job stays,
/// `UnknownQueue` then, and runs when the queue is applied again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_queue_admits_nothing_new_and_goes_after_its_admitted_jobs() {
    let s = Scenario::new("qdel", 1, 8, 1).await;
    let q = s.tenant("qdel", 8, "FIFO", "");
    s.cp.apply(&s.job("running", &q, 1, 4, &[("run-seconds", "12")], ""));
    s.wait_phase("running", "Running", T).await;
    s.cp.apply(&s.job("waiting", &q, 1, 8, &[("run-seconds", "1")], ""));
    s.wait_phase("waiting", "Queued", T).await;
    s.cp.kubectl_ok(&["delete", "queue", &q, "--wait=false"])
        .expect("delete queue");
    let admitted = "{.status.conditions[?(@.type==\"Admitted\")].reason}";
    let valid = "{.status.conditions[?(@.type==\"Valid\")].reason}";
    let deadline = Instant::now() + T;
    while s.job_status("waiting", admitted) != "QueueTerminating" {
        assert!(
            Instant::now() < deadline,
            "waiting: {}",
            s.job_status("waiting", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let terminating = s.cp.jsonpath(
        &["queue", &q],
        "{.status.conditions[?(@.type==\"Terminating\")].message}",
    );
    assert!(terminating.contains("1 admitted"), "{terminating}");
    let ready = s.cp.jsonpath(
        &["queue", &q],
        "{.status.conditions[?(@.type==\"Ready\")].status}/{.status.conditions[?(@.type==\"Ready\")].reason}",
    );
    assert_eq!(ready, "False/Terminating", "it no longer admits jobs");
    assert_eq!(s.job_status("running", "{.status.phase}"), "Running");
    // The running job finishes; the queue then goes, and the waiting job is still there.
    s.wait_phase("running", "Succeeded", T).await;
    let deadline = Instant::now() + T;
    while s.cp.kubectl(&["get", "queue", &q]).is_ok_and(|o| o.success) {
        assert!(Instant::now() < deadline, "queue {q} is still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + T;
    while s.job_status("waiting", valid) != "UnknownQueue" {
        assert!(
            Instant::now() < deadline,
            "waiting: {}",
            s.job_status("waiting", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(s.job_status("waiting", "{.status.phase}"), "Pending");
    assert!(s.job_status("waiting", "{.status.admittedAt}").is_empty());
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: {q}\nspec:\n  virtualCluster: {q}\n"
    ));
    s.wait_phase("waiting", "Succeeded", T).await;
    let _ = s.cp.kubectl(&["delete", "queue", &q, "--wait=false"]);
    s.finish().await;
}

/// Deleting a VirtualCluster while a job of its queue runs: it stays, `Ready=False`
/// (`Terminating`), until that job has finished; meanwhile its queue admits nothing new (a
/// job that would fit waits with `VirtualClusterTerminating`) and the running job runs on.
/// Before the finalizer it went at once, and its running job held GPUs charged to no tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_virtual_cluster_admits_nothing_new_and_goes_after_its_running_jobs() {
    let s = Scenario::new("vcdel", 1, 8, 1).await;
    let q = s.tenant("vcdel", 8, "FIFO", "");
    s.cp.apply(&s.job("running", &q, 1, 4, &[("run-seconds", "20")], ""));
    s.wait_phase("running", "Running", T).await;
    s.cp.kubectl_ok(&["delete", "vc", &q, "--wait=false"])
        .expect("delete vc");
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}/{.status.conditions[?(@.type==\"Ready\")].reason}";
    let deadline = Instant::now() + T;
    while s.cp.jsonpath(&["vc", &q], ready) != "False/Terminating" {
        assert!(
            Instant::now() < deadline,
            "vc {q}: {}",
            s.cp.jsonpath(&["vc", &q], "{.metadata}/{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let message = s.cp.jsonpath(
        &["vc", &q],
        "{.status.conditions[?(@.type==\"Ready\")].message}",
    );
    assert!(
        message.contains("1 running job(s)") && message.contains("admit no new jobs"),
        "{message}"
    );
    // Four GPUs are free, but the VirtualCluster admits nothing new.
    s.cp.apply(&s.job("next", &q, 1, 2, &[("run-seconds", "1")], ""));
    let admitted = "{.status.conditions[?(@.type==\"Admitted\")].reason}";
    let deadline = Instant::now() + T;
    while s.job_status("next", admitted) != "VirtualClusterTerminating" {
        assert!(
            Instant::now() < deadline,
            "next: {}",
            s.job_status("next", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(s.job_status("running", "{.status.phase}"), "Running");
    // Still charged to the VirtualCluster (gone, it was charged to no tenant).
    assert_eq!(
        s.cp.jsonpath(&["vc", &q], "{.status.running}/{.status.inUseGpus}"),
        "1/4"
    );
    // The running job finishes undisturbed; the VirtualCluster then goes.
    s.wait_phase("running", "Succeeded", T).await;
    assert_eq!(s.job_status("running", "{.status.preemptions}"), "0");
    let deadline = Instant::now() + T;
    while s.cp.kubectl(&["get", "vc", &q]).is_ok_and(|o| o.success) {
        assert!(Instant::now() < deadline, "vc {q} is still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The waiting job stays, not admitted: its VirtualCluster is unknown now.
    let valid = "{.status.conditions[?(@.type==\"Valid\")].reason}";
    let deadline = Instant::now() + T;
    while s.job_status("next", valid) != "UnknownVirtualCluster" {
        assert!(
            Instant::now() < deadline,
            "next: {}",
            s.job_status("next", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(s.job_status("next", "{.status.admittedAt}").is_empty());
    let _ = s.cp.kubectl(&["delete", "queue", &q, "--wait=false"]);
    s.finish().await;
}

/// Two queues of one team, 50 % of its guarantee each: `dev` holds the whole node; a job of
/// `research` takes research's share back (a `QueueShare` preemption of one dev job, which
/// checkpoints and returns to its queue) and runs; the victim says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_below_its_share_takes_it_back() {
    let s = Scenario::new("qshare", 1, 8, 1).await;
    let research = s.tenant("qshare", 8, "FIFO\n  share: 50", "");
    let dev = format!("{research}-dev");
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: {dev}\nspec:\n  virtualCluster: {research}\n  share: 50\n"
    ));
    let long = [("run-seconds", "120"), ("checkpoint-delay-seconds", "1")];
    s.cp.apply(&s.job("d1", &dev, 1, 4, &long, ""));
    s.cp.apply(&s.job("d2", &dev, 1, 4, &long, ""));
    s.wait_phase("d1", "Running", T).await;
    s.wait_phase("d2", "Running", T).await;
    s.cp.apply(&s.job("r1", &research, 1, 4, &[("run-seconds", "60")], ""));
    s.wait_phase("r1", "Running", T).await;
    let reason = "{.status.lastPreemption.reason}";
    let victims: Vec<&str> = ["d1", "d2"]
        .into_iter()
        .filter(|j| s.job_status(j, reason) == "QueueShare")
        .collect();
    assert_eq!(
        victims.len(),
        1,
        "d1: {} d2: {}",
        s.job_status("d1", "{.status}"),
        s.job_status("d2", "{.status}")
    );
    let v = victims[0];
    assert_eq!(s.job_status(v, "{.status.phase}"), "Queued");
    assert_eq!(
        s.job_status(v, "{.status.lastPreemption.outcome}"),
        "CheckpointSaved"
    );
    assert_eq!(s.job_status(v, "{.status.retries}"), "0");
    let asked = s
        .events(v)
        .into_iter()
        .find(|(r, _)| r == "Preempting")
        .map(|(_, m)| m)
        .unwrap_or_default();
    assert!(
        asked.contains("QueueShare") && asked.contains("r1"),
        "{asked}"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_queues_and_vcs_show_live_numbers() {
    let s = Scenario::new("numbers", 2, 8, 1).await;
    let owner = s.tenant("numbers", 8, "FIFO", "");
    // c is applied only once a and b run: jobs applied in the same second tie on queuedAt,
    // and which of them the first cycle sees is a race.
    s.cp.apply(&s.job("a", &owner, 1, 8, &[], ""));
    s.wait_phase("a", "Running", T).await;
    s.cp.apply(&s.job("b", &owner, 1, 4, &[], ""));
    s.wait_phase("b", "Running", T).await;
    let submitted = Instant::now();
    s.cp.apply(&s.job("c", &owner, 1, 8, &[], ""));
    // 16 GPUs: a (8, guaranteed) and b (4, bonus) run; c (8) waits.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = s.cp.jsonpath(
            &["q", &owner],
            "{.status.pending} {.status.running} {.status.gpusInUse} {.status.bonusGpus}",
        );
        let vc = s.cp.jsonpath(
            &["vc", &owner],
            "{.status.guaranteedGpus} {.status.inUseGpus} {.status.bonusGpus}",
        );
        if row == "1 2 12 4" && vc == "8 12 4" {
            s.timing(&format!(
                "queue and vc status: follow a submitted job in {:.2}s",
                submitted.elapsed().as_secs_f64()
            ));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "queue status {row:?}, vc status {vc:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let table =
        s.cp.kubectl_ok(&["get", "queue", &owner])
            .expect("get queue");
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "VIRTUALCLUSTER",
            "READY",
            "POLICY",
            "STOP",
            "PENDING",
            "STARTING",
            "RUNNING",
            "GPUS",
            "BONUS",
            "OLDESTPENDING",
            "AGE"
        ]
    );
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..10],
        [
            owner.as_str(),
            owner.as_str(),
            "True",
            "FIFO",
            "None",
            "1",
            "0",
            "2",
            "12",
            "4"
        ],
        "{table}"
    );
    // c waits: the oldest pending job's age is shown (an age such as `5s`, not `<none>`).
    assert!(
        row.get(10)
            .is_some_and(|age| age.ends_with(['s', 'm', 'h', 'd'])),
        "{table}"
    );
    let reason = s.job_status("c", "{.status.conditions[?(@.type==\"Admitted\")].reason}");
    assert!(
        !reason.is_empty() && reason != "Waiting",
        "c's wait reason: {reason}"
    );
    let describe =
        s.cp.kubectl_ok(&["describe", "tj", "c", "-n", &s.ns])
            .expect("describe");
    assert!(describe.contains(&reason), "{describe}");
    s.finish().await;
}

/// A VirtualCluster's numbers add up: a quarter-share job counts as 0.25 of a GPU, and
/// bonus is what the tenant uses beyond its guarantee, whatever its jobs were admitted as.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vc_numbers_count_shares_as_fractions_and_bonus_beyond_the_guarantee() {
    let s = Scenario::new("fractions", 1, 8, 1).await;
    let owner = s.tenant("fractions", 1, "FIFO", "");
    s.cp.apply(&s.job("whole", &owner, 1, 1, &[], ""));
    s.wait_phase("whole", "Running", T).await;
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: quarter\n  namespace: {ns}\nspec:\n  queue: {owner}\n  gpuTypes: [{flavor}]\n  tasks:\n  - name: worker\n    gpuShare: 250\n    template:\n      spec:\n        containers:\n        - name: trainer\n          image: trainer:latest\n",
        ns = s.ns,
        flavor = s.flavor
    ));
    s.wait_phase("quarter", "Running", T).await;
    // 1 GPU guaranteed; 1.25 in use, so 0.25 beyond the guarantee; nothing idle to lend.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let vc = s.cp.jsonpath(
            &["vc", &owner],
            "{.status.guaranteedGpus} {.status.inUseGpus} {.status.bonusGpus} {.status.lentGpus} {.status.flavors[0].inUse} {.status.flavors[0].bonus}",
        );
        let q = s.cp.jsonpath(&["q", &owner], "{.status.gpusInUse}");
        if vc == "1 1.25 0.25 0 1.25 0.25" && q == "1.25" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "vc status {vc:?}, queue gpusInUse {q:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The simulated nodes advertise nvidia.com/gpu, so whole GPUs go to the device plugin,
    // and the share's GPU is held from it by a reservation, whose device the share gets.
    assert_eq!(
        s.job_status("whole", "{.status.placement[0].gpusAssignedBy}"),
        "device-plugin"
    );
    assert_eq!(
        s.job_status("quarter", "{.status.placement[0].gpusAssignedBy}"),
        "device-plugin"
    );
    // `kubectl get vc` prints the fractions, not whole GPUs.
    let table = s.cp.kubectl_ok(&["get", "vc", &owner]).expect("get vc");
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..6],
        [owner.as_str(), "True", "1", "1.25", "0.25", "0"],
        "{table}"
    );
    s.finish().await;
}

/// The reservation pod of the GPU a job's first share runs on: its name, node, device and
/// phase (empty when there is none).
fn reservation_of(s: &Scenario, node: &str, gpu: &str) -> Vec<(String, String, String, String)> {
    let out = s.cp.jsonpath(
        &[
            "pods",
            "-n",
            kubetrain_e2e::OPERATOR_NAMESPACE,
            "-l",
            "kubetrain.io/gpu-reservation",
        ],
        "{range .items[*]}{.metadata.name} {.metadata.annotations.kubetrain\\.io/node} {.metadata.annotations.kubetrain\\.io/gpus} {.spec.nodeName} {.metadata.annotations.kubetrain\\.io/reserved-device} {.status.phase}{\"\\n\"}{end}",
    );
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() == 6 && f[1] == node && f[2] == gpu)
                .then(|| (f[0].into(), f[3].into(), f[4].into(), f[5].into()))
        })
        .collect()
}

/// A job `half` of one replica sharing half a GPU, running `run_seconds` (else until
/// deleted).
fn half_a_gpu(s: &Scenario, queue: &str, run_seconds: Option<u32>) -> String {
    let meta = run_seconds
        .map(|t| {
            format!("      metadata:\n        annotations:\n          sim.kubetrain.io/run-seconds: \"{t}\"\n")
        })
        .unwrap_or_default();
    format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: half\n  namespace: {ns}\nspec:\n  queue: {queue}\n  gpuTypes: [{flavor}]\n  tasks:\n  - name: worker\n    gpuShare: 500\n    template:\n{meta}      spec:\n        containers:\n        - name: trainer\n          image: trainer:latest\n",
        ns = s.ns,
        flavor = s.flavor
    )
}

/// A share on a node whose device plugin hands out GPUs holds its GPU from the plugin: the
/// operator's reservation pod requests it, the share runs on the device the reservation was
/// given, kube-scheduler keeps another pod off that GPU, and the GPU goes back to the plugin
/// once the share is gone.
#[tokio::test]
async fn a_share_holds_its_gpu_from_the_device_plugin() {
    let s = Scenario::new("reserve", 1, 2, 1).await;
    let owner = s.tenant("reserve", 2, "FIFO", "");
    s.cp.apply(&half_a_gpu(&s, &owner, None));
    s.wait_phase("half", "Running", T).await;
    let node = s.job_status("half", "{.status.placement[0].node}");
    let gpu = s.job_status("half", "{.status.placement[0].gpus[0]}");
    let held = reservation_of(&s, &node, &gpu);
    assert_eq!(held.len(), 1, "one reservation for the GPU: {held:?}");
    let (name, bound, device, phase) = held[0].clone();
    assert_eq!((bound.as_str(), phase.as_str()), (node.as_str(), "Running"));
    assert!(device.starts_with("GPU-"), "reported device {device:?}");
    let pod = s.pods_of("half").pop().expect("the share's pod");
    let share = s.cp.jsonpath(
        &["pod", &pod, "-n", &s.ns],
        "{.metadata.annotations.kubetrain\\.io/visible-devices} {.spec.schedulingGates}",
    );
    assert_eq!(
        share.trim(),
        device,
        "the share runs on the reserved device, ungated"
    );
    assert_eq!(
        s.job_status("half", "{.status.placement[0].gpusAssignedBy}"),
        "device-plugin"
    );
    let requested = s.cp.jsonpath(
        &["pod", &name, "-n", kubetrain_e2e::OPERATOR_NAMESPACE],
        "{.spec.containers[0].resources.limits.nvidia\\.com/gpu}",
    );
    assert_eq!(requested, "1");
    // Its own budget keeps it from eviction (`kubectl drain` waits for kubetrain).
    let budget = s.cp.jsonpath(
        &["pdb", &name, "-n", kubetrain_e2e::OPERATOR_NAMESPACE],
        "{.spec.minAvailable}",
    );
    assert_eq!(budget, "1");

    // Deleted while the share runs on its device, the reservation no longer holds it from
    // the plugin: the job restarts, without counting a retry, on a GPU held anew.
    s.cp.kubectl_ok(&[
        "delete",
        "pod",
        &name,
        "-n",
        kubetrain_e2e::OPERATOR_NAMESPACE,
        "--wait=false",
    ])
    .expect("delete the reservation");
    ControlPlane::eventually("the share restarted", T, || async {
        let st = s.job_status(
            "half",
            "{.status.infrastructureRetries} {.status.retries} {.status.phase}",
        );
        (st == "1 0 Running").then_some(())
    })
    .await;
    let node = s.job_status("half", "{.status.placement[0].node}");
    let gpu = s.job_status("half", "{.status.placement[0].gpus[0]}");
    ControlPlane::eventually("a new reservation", T, || async {
        let held = reservation_of(&s, &node, &gpu);
        (held.len() == 1 && held[0].3 == "Running").then_some(())
    })
    .await;

    // A pod kubetrain does not schedule, asking for both GPUs of the node: kube-scheduler
    // sees one held, and keeps it pending.
    s.cp.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: other\n  namespace: {ns}\nspec:\n  tolerations: [{{operator: Exists}}]\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{{key: metadata.name, operator: In, values: [{node}]}}]\n  containers:\n  - name: c\n    image: other:latest\n    resources: {{limits: {{nvidia.com/gpu: 2}}}}\n",
        ns = s.ns
    ));
    ControlPlane::eventually("the other pod unschedulable", T, || async {
        let why = s.cp.jsonpath(
            &["pod", "other", "-n", &s.ns],
            "{.status.conditions[?(@.type==\"PodScheduled\")].reason} {.spec.nodeName}",
        );
        (why.trim() == "Unschedulable").then_some(())
    })
    .await;

    // The share gone, its reservation goes, and the plugin's GPU with it.
    s.cp.kubectl_ok(&["delete", "tj", "half", "-n", &s.ns, "--wait=false"])
        .expect("delete");
    ControlPlane::eventually("the reservation gone", T, || async {
        reservation_of(&s, &node, &gpu).is_empty().then_some(())
    })
    .await;
    ControlPlane::eventually("the other pod bound", T, || async {
        let bound =
            s.cp.jsonpath(&["pod", "other", "-n", &s.ns], "{.spec.nodeName}");
        (bound == node).then_some(())
    })
    .await;
    s.finish().await;
}

/// A whole-GPU job waiting for the GPU a share held is placed there once the share's
/// reservation pod is gone, not while it terminates: placed at once, its pod met
/// `FailedScheduling: Insufficient nvidia.com/gpu` from kube-scheduler for seconds (an
/// acceptance run), and bound directly it would be refused by a kubelet.
#[tokio::test]
async fn a_whole_gpu_job_waits_for_a_leaving_reservation() {
    let s = Scenario::new("leaving", 1, 2, 1).await;
    let owner = s.tenant("leaving", 2, "FIFO", "");
    s.cp.apply(&half_a_gpu(&s, &owner, Some(4)));
    s.wait_phase("half", "Running", T).await;
    s.cp.apply(&s.job("whole", &owner, 1, 2, &[("run-seconds", "600")], ""));
    s.wait_phase("whole", "Running", T).await;
    assert_eq!(s.job_status("half", "{.status.phase}"), "Succeeded");
    let pod = s.pods_of("whole").pop().expect("the whole job's pod");
    let refused = s.cp.jsonpath(
        &[
            "events",
            "-n",
            &s.ns,
            "--field-selector",
            &format!("involvedObject.name={pod},reason=FailedScheduling"),
        ],
        "{range .items[*]}{.message}{\"\\n\"}{end}",
    );
    assert!(refused.trim().is_empty(), "{refused}");
    s.finish().await;
}
