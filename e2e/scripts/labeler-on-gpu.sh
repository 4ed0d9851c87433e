#!/usr/bin/env bash
# The node labeler on a real GPU machine, against a real (throwaway) API server.
#
#   labeler-on-gpu.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds etcd, kube-apiserver, kubectl and kubetrain-node-labeler (each may be
# xz-compressed as NAME.xz). Run from the repository root: the labeler's RBAC comes from
# config/labeler, exactly as a cluster admin installs it. What it does:
#   1. the labeler's dry run (what NVML answers, what would be published);
#   2. etcd + kube-apiserver on loopback, a Node named after this machine, the labeler's
#      ServiceAccount, ClusterRole and binding from config/labeler;
#   3. the labeler with that ServiceAccount's token: --once, then its long-running loop
#      (NVML event watcher included) for a few refreshes, stopped by SIGTERM;
#   4. checks that the Node's labels and topology annotation equal the dry run's, and
#      that the labeler may not do more than its role says.
# Everything it read or wrote lands in OUT_DIR. Needs openssl, curl and python3.
set -uo pipefail

bin_in=${1:?usage: $0 BIN_DIR OUT_DIR}
out=${2:?usage: $0 BIN_DIR OUT_DIR}
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
  # No graceful shutdown: the API server's would take a minute, and its state is thrown away.
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
log() { printf '[labeler-on-gpu] %s\n' "$*" | tee -a "$out/summary.txt" >&2; }
fail=0
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then log "ok: $what"; else log "FAILED: $what"; fail=1; fi
}

mkdir -p "$work/bin"
for b in etcd kube-apiserver kubectl kubetrain-node-labeler; do
  if [ -x "$bin_in/$b" ]; then cp "$bin_in/$b" "$work/bin/$b"
  elif [ -f "$bin_in/$b.xz" ]; then xz -dc "$bin_in/$b.xz" > "$work/bin/$b"
  else log "missing $b in $bin_in"; exit 2; fi
  chmod +x "$work/bin/$b"
done
B=$work/bin

{ uname -a; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,ecc.mode.current --format=csv; } \
  > "$out/machine.txt" 2>&1
"$B/kubetrain-node-labeler" --version > "$out/version.txt" 2>&1

# 1. Dry run.
"$B/kubetrain-node-labeler" --dry-run --output json > "$out/dry-run.json" 2> "$out/dry-run.log"
check "dry run exits 0" test -s "$out/dry-run.json"

# 2. A real API server.
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,admin,admin,system:masters" > "$work/tokens.csv"
"$B/etcd" --data-dir "$work/etcd" --listen-client-urls http://127.0.0.1:23790 \
  --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
  --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster default=http://127.0.0.1:23800 \
  --log-level warn > "$out/etcd.log" 2>&1 &
pids+=($!)
"$B/kube-apiserver" --etcd-servers http://127.0.0.1:23790 --bind-address 127.0.0.1 \
  --advertise-address 127.0.0.1 --secure-port 16443 --cert-dir "$work/certs" \
  --token-auth-file "$work/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$work/sa.pub" --service-account-signing-key-file "$work/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type=none --v=1 \
  > "$out/kube-apiserver.log" 2>&1 &
pids+=($!)
kubeconfig() { # kubeconfig TOKEN FILE
  cat > "$2" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:16443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: "$1"}}]
contexts: [{name: local, context: {cluster: local, user: u}}]
current-context: local
KC
}
kubeconfig "$token" "$work/admin.kubeconfig"
export KUBECONFIG=$work/admin.kubeconfig
ready=0
for _ in $(seq 1 300); do
  if curl -sk --max-time 2 -H "Authorization: Bearer $token" https://127.0.0.1:16443/readyz | grep -qx ok; then
    ready=1; break
  fi
  sleep 0.2
done
if [ $ready != 1 ]; then log "kube-apiserver did not become ready"; tail -20 "$out/kube-apiserver.log" >&2; exit 1; fi
"$B/kubectl" version > "$out/kubectl-version.txt" 2>&1

node=$(hostname | tr '[:upper:]_' '[:lower:]-')
"$B/kubectl" apply -f - > /dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $node
  labels: {topology.kubernetes.io/rack: rack-a}
NODE
"$B/kubectl" create namespace kubetrain-system > /dev/null
"$B/kubectl" apply -k config/labeler > "$out/apply-labeler.txt" 2>&1
# The DaemonSet has no kubelet here to run it; its binary runs below with the same identity.
"$B/kubectl" -n kubetrain-system delete daemonset --all > /dev/null
sa_token=$("$B/kubectl" -n kubetrain-system create token kubetrain-node-labeler)
kubeconfig "$sa_token" "$work/labeler.kubeconfig"

# 3. The labeler as its ServiceAccount.
export NODE_NAME=$node
KUBECONFIG=$work/labeler.kubeconfig "$B/kubetrain-node-labeler" --once > "$out/once.log" 2>&1
check "--once publishes (exit 0)" test $? -eq 0
KUBECONFIG=$work/labeler.kubeconfig "$B/kubetrain-node-labeler" --interval 5s \
  --load-sample-interval 2s --metrics-addr 127.0.0.1:19402 > "$out/loop.log" 2>&1 &
loop=$!
sleep 17
curl -s http://127.0.0.1:19402/metrics > "$out/metrics.txt" || true
kill -TERM $loop
wait $loop
check "the loop stops cleanly on SIGTERM (exit 0)" test $? -eq 0
"$B/kubectl" get node "$node" -o json --show-managed-fields > "$out/node.json"
for verb in "patch nodes" "get nodes" "delete nodes" "list pods" "create pods" "get secrets"; do
  printf '%s: %s\n' "$verb" "$(KUBECONFIG=$work/labeler.kubeconfig "$B/kubectl" auth can-i $verb 2>/dev/null)"
done > "$out/can-i.txt"

# 4. Checks.
check "the Node carries the dry run's labels and topology" python3 - "$out/dry-run.json" "$out/node.json" <<'PY'
import json, sys
dry = json.load(open(sys.argv[1])); node = json.load(open(sys.argv[2]))
labels = node["metadata"].get("labels", {}); ann = node["metadata"].get("annotations", {})
missing = {k: v for k, v in dry["labels"].items() if labels.get(k) != v}
if missing:
    sys.exit(f"labels differ from the dry run: {missing} vs {labels}")
topo = json.loads(ann.get("gpu.kubetrain.io/topology", "null"))
want = dict(dry.get("topology") or {}); got = dict(topo or {})
got.pop("rack", None); want.pop("rack", None)
if got != want:
    sys.exit(f"topology differs:\n{json.dumps(got, indent=1)}\nvs dry run\n{json.dumps(want, indent=1)}")
if topo and topo.get("rack") != "rack-a":
    print(f"note: rack in topology: {(topo or {}).get('rack')!r}")
PY
check "the labels are the labeler's own (server-side apply field manager)" \
  grep -q '"manager": "kubetrain-node-labeler"' "$out/node.json"
if grep -q '"gpu.kubetrain.io/present": "true"' "$out/dry-run.json"; then
  check "the NVML event watcher started or said why not" \
    grep -q -E 'watching NVML|NVML event|XID/ECC events' "$out/loop.log"
fi
if grep -q '"gpu.kubetrain.io/present": "true"' "$out/dry-run.json"; then
  check "the GPUs' load is published in its own annotation, by its own field manager" python3 - "$out/node.json" <<'PY'
import json, sys
node = json.load(open(sys.argv[1]))
load = json.loads(node["metadata"].get("annotations", {}).get("gpu.kubetrain.io/load", "null"))
if not load or load.get("version") != 1 or not load.get("gpus"):
    sys.exit(f"no load annotation with GPUs: {load!r}")
managers = [e["manager"] for e in node["metadata"].get("managedFields", [])]
if "kubetrain-node-labeler-load" not in managers:
    sys.exit(f"load not written by its own field manager: {managers}")
PY
  check "/metrics serves each GPU's load under DCGM's names" \
    grep -q '^DCGM_FI_DEV_GPU_UTIL{gpu="0"' "$out/metrics.txt"
fi
check "the labeler may patch nodes but not delete them nor read secrets" \
  grep -qx 'delete nodes: no' "$out/can-i.txt"
grep -qx 'get secrets: no' "$out/can-i.txt" || { log "FAILED: labeler may read secrets"; fail=1; }
log "done, fail=$fail"
exit $fail
