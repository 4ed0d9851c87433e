#!/usr/bin/env bash
# `make run`: a real local control plane (etcd, kube-apiserver, controller-manager, scheduler),
# simulated 8-GPU nodes, the CRDs and samples, and the operator in the foreground.
# Ctrl-C stops everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
STATE=${KUBETRAIN_STATE:-$root/.kubetrain}
CLUSTER=${KUBETRAIN_CLUSTER:-e2e/clusters/dev.yaml}

CACHE=$(bash e2e/scripts/install-control-plane.sh)
KUBECTL=$CACHE/bin/kubectl
echo "building kubetrain..." >&2
cargo build -q -p kubetrain --bin kubetrain-operator
cargo build -q -p kubetrain-e2e --bin kubetrain-simnodes

bash e2e/scripts/control-plane.sh up "$STATE"
export KUBECONFIG=$STATE/kubeconfig
agent=""
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  bash e2e/scripts/control-plane.sh down "$STATE"
}
trap cleanup EXIT INT TERM

"$KUBECTL" apply --server-side -f crds/ >/dev/null
# `kubectl wait` fails at once while a new CRD has no conditions yet: ask again.
for _ in $(seq 1 50); do
  "$KUBECTL" wait --for=condition=Established --timeout=60s crd --all >/dev/null 2>&1 && break
  sleep 0.2
done
target/debug/kubetrain-simnodes --cluster "$CLUSTER" >"$STATE/logs/simnodes.log" 2>&1 &
agent=$!
"$KUBECTL" apply -k config/samples >/dev/null
for _ in $(seq 1 100); do
  [ "$("$KUBECTL" get nodes --no-headers 2>/dev/null | wc -l)" -gt 0 ] && break
  sleep 0.1
done

cat <<MSG

kubetrain is up.
  kubeconfig:  $KUBECONFIG
  logs:        $STATE/logs/

In another terminal:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$CACHE/bin:\$PATH     # kubectl $("$KUBECTL" version --client 2>/dev/null | awk '/Client/{print $3}'), matching the server
  kubectl get nodes -L gpu.kubetrain.io/product,topology.kubernetes.io/rack
  kubectl get kubetrain -A          # VirtualClusters, Queues, TrainingJobs
  kubectl get queues
  kubectl explain trainingjob.spec
  kubectl apply -f config/samples/trainingjobs.yaml

The operator runs below; Ctrl-C stops it, the simulated nodes and the control plane.

MSG
target/debug/kubetrain-operator
