#!/usr/bin/env bash
# A real local Kubernetes control plane: etcd + kube-apiserver + kube-controller-manager +
# kube-scheduler, on free loopback ports, in one state directory, with token auth and RBAC.
#
#   control-plane.sh up   DIR [--owner-pid PID]   start; writes DIR/kubeconfig; waits for /readyz
#   control-plane.sh down DIR                     stop everything started in DIR
#
# Each component runs in its own session, so a terminal's Ctrl-C reaches only the script that
# started it, which then stops the components in order (the operator before the API server
# it must release its Lease through).
# With --owner-pid the control plane stops by itself when that process exits (test binaries
# use this so no process outlives them, even when a test panics or is killed).
# Binaries come from e2e/scripts/install-control-plane.sh (built once into the cache).
#
#   KUBETRAIN_CRDS  a directory of CRDs to apply (server-side) before the controller-manager
#                   starts: its garbage collector learns the kinds that exist when it starts
#                   and new ones only on its 30-s rediscovery, so the pods of a TrainingJob
#                   deleted in the first half minute would outlive it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down DIR [--owner-pid PID]" >&2; exit 2; }
owner=""
if [ "${3:-}" = "--owner-pid" ]; then owner=${4:?--owner-pid needs a pid}; fi

log() { printf '[control-plane] %s\n' "$*" >&2; }

down() {
  local d=$1
  [ -d "$d" ] || return 0
  for name in watchdog kube-scheduler kube-controller-manager kube-apiserver etcd; do
    local pf="$d/$name.pid"
    [ -f "$pf" ] || continue
    local pid; pid=$(cat "$pf")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pf"
  done
}

if [ "$cmd" = down ]; then
  down "$dir"
  exit 0
fi
[ "$cmd" = up ] || { echo "unknown command $cmd" >&2; exit 2; }

CACHE=$("$here/install-control-plane.sh")
BIN=$CACHE/bin
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
down "$dir"   # a previous run in the same directory

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
ETCD_PORT=$(free_port); PEER_PORT=$(free_port); API_PORT=$(free_port)
while [ "$PEER_PORT" = "$ETCD_PORT" ]; do PEER_PORT=$(free_port); done
while [ "$API_PORT" = "$ETCD_PORT" ] || [ "$API_PORT" = "$PEER_PORT" ]; do API_PORT=$(free_port); done

# Service-account signing key; the apiserver makes its own self-signed serving cert.
[ -f "$dir/sa.key" ] || openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,kubetrain-admin,kubetrain-admin,system:masters" > "$dir/tokens.csv"
mkdir -p "$dir/certs" "$dir/logs"

rm -rf "$dir/etcd"
setsid "$BIN/etcd" --name default --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --initial-cluster "default=http://127.0.0.1:$PEER_PORT" --log-level warn \
  >"$dir/logs/etcd.log" 2>&1 &
echo $! > "$dir/etcd.pid"

setsid "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
  --cert-dir "$dir/certs" \
  --token-auth-file "$dir/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$dir/sa.pub" \
  --service-account-signing-key-file "$dir/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 \
  --allow-privileged=true \
  --endpoint-reconciler-type=none \
  --enable-priority-and-fairness=false \
  --v=1 >"$dir/logs/kube-apiserver.log" 2>&1 &
echo $! > "$dir/kube-apiserver.pid"

cat > "$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: kubetrain-local
  cluster:
    server: https://127.0.0.1:$API_PORT
    insecure-skip-tls-verify: true
users:
- name: kubetrain-admin
  user:
    token: $TOKEN
contexts:
- name: kubetrain-local
  context: {cluster: kubetrain-local, user: kubetrain-admin}
current-context: kubetrain-local
KC

ready=0
for _ in $(seq 1 600); do
  if ! kill -0 "$(cat "$dir/kube-apiserver.pid")" 2>/dev/null; then break; fi
  if curl -sk --max-time 2 -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null | grep -qx ok; then
    ready=1; break
  fi
  sleep 0.1
done
if [ "$ready" != 1 ]; then
  log "kube-apiserver did not become ready; last lines of its log:"
  tail -20 "$dir/logs/kube-apiserver.log" >&2
  down "$dir"
  exit 1
fi

if [ -n "${KUBETRAIN_CRDS:-}" ]; then
  kc=(--kubeconfig "$dir/kubeconfig")
  "$BIN/kubectl" "${kc[@]}" apply --server-side -f "$KUBETRAIN_CRDS" >/dev/null
  # `kubectl wait` fails at once while a new CRD has no conditions yet: ask again.
  established=0
  for _ in $(seq 1 50); do
    if "$BIN/kubectl" "${kc[@]}" wait --for=condition=Established --timeout=60s crd --all >/dev/null 2>&1; then
      established=1; break
    fi
    sleep 0.2
  done
  if [ "$established" != 1 ]; then
    log "the CRDs in $KUBETRAIN_CRDS were not established"
    down "$dir"
    exit 1
  fi
fi

# The controllers a cluster runs that the tests rely on: garbage collection of owned pods,
# namespace deletion, service-account tokens, node lifecycle (NotReady taints) and taint
# eviction (as on a real cluster), podgc, endpoints, the Job controller (the stock peer of
# the benchmarks), PodDisruptionBudgets (drains), PersistentVolume binding, ReplicaSets and
# Deployments (an install's operator), the root CA ConfigMap that pods mount, and ClusterRole
# aggregation (the built-in edit/view roles gain kubetrain's rules, as the admin guide says).
controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller
controllers+=,serviceaccount-token-controller,node-lifecycle-controller,taint-eviction-controller
controllers+=,pod-garbage-collector-controller,endpoints-controller,endpointslice-controller
controllers+=,job-controller,disruption-controller,persistentvolume-binder-controller
controllers+=,replicaset-controller,deployment-controller,root-ca-certificate-publisher-controller
controllers+=,clusterrole-aggregation-controller
# Claims and volumes in use carry protection finalizers (an admission plugin adds them):
# without these controllers a deleted claim would never go.
controllers+=,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller
setsid "$BIN/kube-controller-manager" \
  --kubeconfig "$dir/kubeconfig" \
  --controllers "$controllers" \
  --service-account-private-key-file "$dir/sa.key" \
  --root-ca-file "$dir/certs/apiserver.crt" \
  --leader-elect=false --secure-port 0 \
  --kube-api-qps 1000 --kube-api-burst 2000 \
  --v=1 >"$dir/logs/kube-controller-manager.log" 2>&1 &
echo $! > "$dir/kube-controller-manager.pid"

# kube-scheduler binds every pod that arrives without a node: kubetrain's pods with
# `--binding scheduler` (pinned to the chosen node), and the benchmarks' stock Jobs.
# The controller-manager's and the scheduler's clients get no practical QPS limit, as the
# operator's has none, so the benchmarks compare the systems and not their client limits.
cat > "$dir/kube-scheduler.yaml" <<EOF_SCHED
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $dir/kubeconfig
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
# A second profile, as a cluster with a scheduler profile of its own for GPU nodes has: the
# operator's --scheduler-name is tested against it.
profiles:
- schedulerName: default-scheduler
- schedulerName: kubetrain-gpu-scheduler
EOF_SCHED
setsid "$BIN/kube-scheduler" \
  --config "$dir/kube-scheduler.yaml" --secure-port 0 \
  --v=1 >"$dir/logs/kube-scheduler.log" 2>&1 &
echo $! > "$dir/kube-scheduler.pid"

if [ -n "$owner" ]; then
  # Detached watchdog: tears everything down once the owner process is gone.
  # Its state directory goes too, unless KUBETRAIN_KEEP_STATE is set (to read the logs).
  # It drops its own pid file first: `down` would otherwise kill the watchdog (its parent)
  # before the `rm -rf`, and every test binary would leave its etcd data in the temp dir.
  keep=${KUBETRAIN_KEEP_STATE:-}
  setsid bash -c "while kill -0 $owner 2>/dev/null; do sleep 1; done; rm -f '$dir/watchdog.pid'; '$here/control-plane.sh' down '$dir'; [ -n '$keep' ] || rm -rf '$dir'" \
    >/dev/null 2>&1 < /dev/null &
  echo $! > "$dir/watchdog.pid"
fi

log "ready: https://127.0.0.1:$API_PORT (kubeconfig $dir/kubeconfig)"
