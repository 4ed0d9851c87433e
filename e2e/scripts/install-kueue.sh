#!/usr/bin/env bash
# Builds Kueue's manager once into the same cache as the control plane, from the Kueue module
# pinned in e2e/kueue/go.mod (its `tool sigs.k8s.io/kueue/cmd/kueue` line; nothing prebuilt is
# downloaded), and copies the release's CRDs beside it (bin/kueue-crds/, from the same module).
# Only `make bench` needs it: Kueue is the peer of the control-plane benchmark. Re-running is
# cheap: the build is skipped while the cached binary was built from the same go.mod, go.sum
# and build flags (its own stamp, bin/.stamp-kueue).
#
#   KUBETRAIN_CACHE  cache directory (default: $HOME/.cache/kubetrain)
#
# Prints nothing on the fast path but the cache location.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
MOD=$(cd "$here/../kueue" && pwd)
CACHE=${KUBETRAIN_CACHE:-$HOME/.cache/kubetrain}
BIN=$CACHE/bin
mkdir -p "$BIN"
log() { printf '[install-kueue] %s\n' "$*" >&2; }

# The one place the release is named: the sigs.k8s.io/kueue requirement of e2e/kueue/go.mod.
KUEUE_VERSION=$(awk '$1=="sigs.k8s.io/kueue" && $2 ~ /^v0\./ {print $2; exit}' "$MOD/go.mod")
[ -n "$KUEUE_VERSION" ] || { log "no 'sigs.k8s.io/kueue v0.N.P' requirement in $MOD/go.mod"; exit 1; }

# Stamped the way Kueue's Makefile does, so the manager logs its release.
ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"

stamp=$( (cat "$MOD/go.mod" "$MOD/go.sum"; echo "$ldflags") | sha256sum | cut -c1-16)
if [ "$(cat "$BIN/.stamp-kueue" 2>/dev/null)" = "$stamp" ] && [ -x "$BIN/kueue" ] \
  && [ -d "$BIN/kueue-crds" ]; then
  echo "$CACHE"
  exit 0
fi

# shellcheck source=lib-go.sh
. "$here/lib-go.sh"
ensure_go

log "building kueue $KUEUE_VERSION from its Go module into $BIN (once; a few minutes on 2 cores)"
start=$(date +%s)
tmp=$(mktemp -d "$CACHE/build-kueue.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(
  cd "$MOD"
  go build -trimpath -ldflags "$ldflags" -o "$tmp/kueue" sigs.k8s.io/kueue/cmd/kueue >&2
  # The CRDs ship inside the module, as its config/ directory.
  src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
  mkdir -p "$tmp/kueue-crds"
  cp "$src"/config/components/crd/bases/*.yaml "$tmp/kueue-crds/"
  chmod u+w "$tmp"/kueue-crds/*.yaml
)
rm -rf "$BIN/kueue-crds"
mv -f "$tmp/kueue-crds" "$BIN/kueue-crds"
mv -f "$tmp/kueue" "$BIN/kueue"
echo "$stamp" > "$BIN/.stamp-kueue"
log "built in $(($(date +%s) - start)) s"
echo "$CACHE"
