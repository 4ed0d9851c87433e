#!/usr/bin/env python3
"""What one write costs the API server, without the operator: N creates (or TrainingJob
status applies), 32 at a time, against a control plane started by control-plane.sh, with
the CPU seconds kube-apiserver and etcd spent on them (from /proc).

    bash e2e/scripts/control-plane.sh up /tmp/cp
    kubectl --kubeconfig /tmp/cp/kubeconfig apply --server-side -f crds/
    kubectl --kubeconfig /tmp/cp/kubeconfig create namespace bench
    python3 e2e/scripts/create-cost.py /tmp/cp trainingjob 1000 a   # creates a0 … a999
    python3 e2e/scripts/create-cost.py /tmp/cp status 1000 a        # their status applies
    python3 e2e/scripts/create-cost.py /tmp/cp job 1000 a           # batch/v1 Jobs

The objects are the throughput benchmark's: a TrainingJob of one 1-GPU replica, a
suspended batch/v1 Job of one 1-GPU pod, and a status as the operator writes it once the
job runs. Take kube-apiserver's CPU profile meanwhile with
`kubectl get --raw '/debug/pprof/profile?seconds=20' > cpu.pprof` and read it with
`go tool pprof -top -cum ~/.cache/kubetrain/bin/kube-apiserver cpu.pprof`.
Standard library only.
"""

import http.client
import json
import os
import re
import ssl
import sys
import threading
import time

NS = "bench"
CONCURRENCY = 32


def kubeconfig(path):
    text = open(path).read()
    server = re.search(r"server: https://([^\s]+)", text).group(1)
    token = re.search(r"token: (\S+)", text).group(1)
    return server, token


def trainingjob(name):
    return {
        "apiVersion": "kubetrain.io/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"queue": "q", "tasks": [{"name": "worker", "replicas": 1, "template": {
            "metadata": {"labels": {"app": "test"}},
            "spec": {"containers": [{"name": "trainer", "image": "trainer:latest",
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}]},
    }


def job(name):
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"backoffLimit": 0, "suspend": True, "template": {
            "metadata": {"labels": {"bench/job": name}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "trainer", "image": "trainer:latest",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}},
    }


def status():
    t = "2026-11-24T15:00:01Z"
    conditions = [{"type": c, "status": "True", "reason": c, "message": c,
                   "lastTransitionTime": t, "observedGeneration": 1}
                  for c in ("Valid", "Admitted", "Running")]
    return {
        "apiVersion": "kubetrain.io/v1alpha1",
        "kind": "TrainingJob",
        "status": {"phase": "Running", "queue": "q", "priority": 0, "gpus": 1.0,
                   "placement": [{"task": "worker", "index": 0, "node": "n1", "gpus": [0]}],
                   "queuedAt": t, "admittedAt": t, "startedAt": t, "observedGeneration": 1,
                   "conditions": conditions},
    }


def request(kind, name):
    """Method, path, body and content type of one write."""
    tj = f"/apis/kubetrain.io/v1alpha1/namespaces/{NS}/trainingjobs"
    if kind == "trainingjob":
        return "POST", tj, trainingjob(name), "application/json"
    if kind == "job":
        return "POST", f"/apis/batch/v1/namespaces/{NS}/jobs", job(name), "application/json"
    if kind == "status":
        path = f"{tj}/{name}/status?fieldManager=kubetrain&force=true"
        return "PATCH", path, status(), "application/apply-patch+yaml"
    sys.exit(f"unknown kind {kind}: trainingjob, status or job")


def cpu_seconds(pid_file):
    with open(pid_file) as f:
        pid = f.read().strip()
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cp_dir, kind, n, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    server, token = kubeconfig(os.path.join(cp_dir, "kubeconfig"))
    host, port = server.split(":")
    names = iter(f"{prefix}{i}" for i in range(n))
    lock = threading.Lock()
    errors = []

    def worker():
        ctx = ssl._create_unverified_context()  # the control plane's self-signed cert
        conn = http.client.HTTPSConnection(host, int(port), context=ctx)
        while True:
            with lock:
                name = next(names, None)
            if name is None:
                return
            method, path, body, ctype = request(kind, name)
            conn.request(method, path, json.dumps(body),
                         {"Authorization": f"Bearer {token}", "Content-Type": ctype})
            resp = conn.getresponse()
            text = resp.read()
            if resp.status not in (200, 201):
                errors.append(text[:300])

    pids = {p: os.path.join(cp_dir, f"{p}.pid") for p in ("kube-apiserver", "etcd")}
    before = {p: cpu_seconds(f) for p, f in pids.items()}
    start = time.time()
    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - start
    used = {p: cpu_seconds(f) - before[p] for p, f in pids.items()}
    print(f"{kind} x{n}: {wall:.1f} s, {n / wall:.0f}/s; kube-apiserver "
          f"{used['kube-apiserver']:.1f} CPU-s ({used['kube-apiserver'] / n * 1000:.1f} ms each), "
          f"etcd {used['etcd']:.1f} CPU-s; {len(errors)} errors {errors[:1]}")


if __name__ == "__main__":
    main()
