#!/usr/bin/env bash
# Builds helm once into the same cache as the control plane's kubectl, from the Helm module
# pinned in e2e/helm/go.mod (its `tool helm.sh/helm/v4/cmd/helm` line; nothing prebuilt is
# downloaded). Re-running is cheap: the build is skipped while the cached binary was built
# from the same go.mod, go.sum and build flags (its own stamp, bin/.stamp-helm, apart from the
# control plane's bin/.stamp).
#
#   KUBETRAIN_CACHE  cache directory (default: $HOME/.cache/kubetrain)
#
# Prints nothing on the fast path but the cache location.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
MOD=$(cd "$here/../helm" && pwd)
CACHE=${KUBETRAIN_CACHE:-$HOME/.cache/kubetrain}
BIN=$CACHE/bin
mkdir -p "$BIN"
log() { printf '[install-helm] %s\n' "$*" >&2; }

# The one place the release is named: the helm.sh/helm/v4 requirement of e2e/helm/go.mod.
HELM_VERSION=$(awk '$1=="helm.sh/helm/v4" && $2 ~ /^v4\./ {print $2; exit}' "$MOD/go.mod")
[ -n "$HELM_VERSION" ] || { log "no 'helm.sh/helm/v4 v4.N.P' requirement in $MOD/go.mod"; exit 1; }

# Stamped into the binary the way Helm's own Makefile does, so `helm version` names the release.
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v4/internal/version.metadata= -X helm.sh/helm/v4/internal/version.gitTreeState=clean"

stamp=$( (cat "$MOD/go.mod" "$MOD/go.sum"; echo "$ldflags") | sha256sum | cut -c1-16)
if [ "$(cat "$BIN/.stamp-helm" 2>/dev/null)" = "$stamp" ] && [ -x "$BIN/helm" ]; then
  echo "$CACHE"
  exit 0
fi

# shellcheck source=lib-go.sh
. "$here/lib-go.sh"
ensure_go

log "building helm $HELM_VERSION from its Go module into $BIN (once; a few minutes on 2 cores)"
start=$(date +%s)
tmp=$(mktemp -d "$CACHE/build-helm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(
  cd "$MOD"
  go build -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm >&2
)
mv -f "$tmp/helm" "$BIN/helm"
echo "$stamp" > "$BIN/.stamp-helm"
log "built in $(($(date +%s) - start)) s: $("$BIN/helm" version --short 2>/dev/null)"
echo "$CACHE"
