#!/usr/bin/env bash
# `make run`: a real local control plane (etcd, kube-apiserver, controller-manager, scheduler),
# simulated 8-GPU nodes, the CRDs and samples, and the operator in the foreground. The
# operator is restarted when it exits on its own (as its Deployment would be); Ctrl-C stops
# everything.
#
#   KUBETRAIN_STATE    state directory (default .kubetrain)
#   KUBETRAIN_CLUSTER  simulated cluster description (default e2e/clusters/dev.yaml)
#   KUBETRAIN_BIN_DIR  use the operator and simnodes binaries there instead of building them
#   KUBETRAIN_HTTP_ADDR the operator's /metrics and probes (default: a free loopback port)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
STATE=${KUBETRAIN_STATE:-$root/.kubetrain}
CLUSTER=${KUBETRAIN_CLUSTER:-e2e/clusters/dev.yaml}

CACHE=$(bash e2e/scripts/install-control-plane.sh)
KUBECTL=$CACHE/bin/kubectl
BIN=${KUBETRAIN_BIN_DIR:-}
if [ -z "$BIN" ]; then
  echo "building kubetrain..." >&2
  cargo build -q -p kubetrain --bin kubetrain-operator
  cargo build -q -p kubetrain-e2e --bin kubetrain-simnodes
  BIN=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug
fi

KUBETRAIN_CRDS="$root/crds" bash e2e/scripts/control-plane.sh up "$STATE"
export KUBECONFIG=$STATE/kubeconfig
agent=""
# Stops a child: SIGTERM, up to 10 s for a clean exit (the operator releases its Lease),
# then SIGKILL.
stop() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  # A second Ctrl-C while stopping must not cut the teardown short: it once left etcd,
  # kube-apiserver and the controller-manager running, with stale pid files. From here on
  # INT and TERM are ignored, by this shell and by the commands it runs below.
  trap '' INT TERM
  echo "[run] stopping the operator, the simulated nodes and the control plane..." >&2
  local operator
  operator=$(cat "$STATE/operator.pid" 2>/dev/null || true)
  [ -n "$operator" ] && stop "$operator"
  [ -n "$agent" ] && stop "$agent"
  bash e2e/scripts/control-plane.sh down "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The operator's namespace and identities, as an install makes them: the GPU reservation
# pods of shares on device-plugin nodes (all simulated nodes advertise nvidia.com/gpu) run
# there under their own ServiceAccount and PriorityClass. The operator itself runs with the
# admin's kubeconfig.
"$KUBECTL" create namespace kubetrain-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
"$KUBECTL" apply -k config/rbac >/dev/null
"$KUBECTL" apply -f config/manager/priority_class.yaml >/dev/null
export POD_NAMESPACE=kubetrain-system KUBETRAIN_RESERVATION_PRIORITY_CLASS=kubetrain-gpu-reservation
"$BIN/kubetrain-simnodes" --cluster "$CLUSTER" >"$STATE/logs/simnodes.log" 2>&1 &
agent=$!
"$KUBECTL" apply -k config/samples >/dev/null
for _ in $(seq 1 100); do
  [ "$("$KUBECTL" get nodes --no-headers 2>/dev/null | wc -l)" -gt 0 ] && break
  sleep 0.1
done

# The operator's /metrics and probes: a free loopback port unless set, so that two runs on
# one machine do not collide (the operator exits when its address is taken).
if [ -z "${KUBETRAIN_HTTP_ADDR:-}" ]; then
  KUBETRAIN_HTTP_ADDR=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
fi
export KUBETRAIN_HTTP_ADDR

cat <<MSG

kubetrain is up.
  kubeconfig:  $KUBECONFIG
  logs:        $STATE/logs/
  metrics:     http://$KUBETRAIN_HTTP_ADDR/metrics (KUBETRAIN_HTTP_ADDR)

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
# As a Deployment would: an operator that exits on its own (a crash, a lost Lease) is started
# again after a short pause, and the control plane, the nodes and the jobs stay. The script
# waits on it rather than running it in the foreground: bash runs a trap only once the
# foreground command ends, so a SIGTERM to this script (`kill <run.pid>`) stopped nothing.
# Ctrl-C or SIGTERM now stop the operator (SIGTERM: it releases its Lease), the nodes and
# the control plane.
echo $$ > "$STATE/run.pid"
while true; do
  status=0
  bash -c 'echo $$ > "$1"; exec "$2"' operator "$STATE/operator.pid" "$BIN/kubetrain-operator" &
  wait $! || status=$?
  echo "[run] the operator exited with status $status; restarting it in 2 s (Ctrl-C stops everything)" >&2
  sleep 2
done
