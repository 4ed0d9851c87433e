#!/usr/bin/env bash
# Builds the local control plane once into a cache outside the repo: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl of the Kubernetes release pinned in
# e2e/k8s/go.mod, compiled from their Go modules (nothing prebuilt is downloaded). Re-running
# is cheap: the build is skipped while the cached binaries were built from the same go.mod,
# go.sum and build flags.
#
#   KUBETRAIN_CACHE  cache directory (default: $HOME/.cache/kubetrain)
#
# Prints nothing on the fast path but the cache location.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
MOD=$(cd "$here/../k8s" && pwd)
CACHE=${KUBETRAIN_CACHE:-$HOME/.cache/kubetrain}
BIN=$CACHE/bin
mkdir -p "$BIN"
log() { printf '[install] %s\n' "$*" >&2; }

# The one place the release is named: the k8s.io/kubernetes requirement of e2e/k8s/go.mod.
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v1\./ {print $2; exit}' "$MOD/go.mod")
[ -n "$K8S_VERSION" ] || { log "no 'k8s.io/kubernetes v1.N.P' requirement in $MOD/go.mod"; exit 1; }
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}

# The version is stamped into the binaries the way Kubernetes' own build does, so that
# `kubectl version` and /version report the release (and the apiserver's compatibility
# version is the release's, not v0.0.0).
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
stamp=$( (cat "$MOD/go.mod" "$MOD/go.sum" "$MOD/etcd/main.go"; echo "$ldflags") | sha256sum | cut -c1-16)
if [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ]; then
  ok=1
  for t in "${tools[@]}"; do [ -x "$BIN/$t" ] || ok=0; done
  if [ "$ok" = 1 ]; then echo "$CACHE"; exit 0; fi
fi

# shellcheck source=lib-go.sh
. "$here/lib-go.sh"
ensure_go

log "building Kubernetes $K8S_VERSION and etcd from their Go modules into $BIN (once; about 15 minutes on 2 cores)"
start=$(date +%s)
tmp=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(
  cd "$MOD"
  go build -trimpath -ldflags "$ldflags" -o "$tmp/" ./etcd \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl >&2
)
for t in "${tools[@]}"; do mv -f "$tmp/$t" "$BIN/$t"; done
echo "$stamp" > "$BIN/.stamp"
log "built in $(($(date +%s) - start)) s: $("$BIN/kubectl" version --client 2>/dev/null | head -1)"
echo "$CACHE"
