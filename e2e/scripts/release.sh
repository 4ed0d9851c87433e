#!/usr/bin/env bash
# The release artifacts of version VERSION into OUT (`make release`: the workspace version,
# dist/):
#
#   release.sh [--snapshot] VERSION OUT
#
#   OUT/install.yaml            everything config/default installs (kubectl's kustomize), with
#                               the operator and node-labeler images tagged VERSION
#   OUT/kubetrain-VERSION.tgz   the Helm chart (helm package charts/kubetrain)
#
# Uses the kubectl and helm on PATH (the Makefile puts the cache's first). First runs
# check-release.sh: fails when Cargo.toml, the chart, CHANGELOG.md or the docs' install
# commands disagree on VERSION, or CHANGELOG.md lists unreleased changes (--snapshot allows
# those, for artifacts that are not published: the tests').
set -euo pipefail

snapshot=()
if [ "${1:-}" = "--snapshot" ]; then snapshot=(--snapshot); shift; fi
VERSION=${1:?usage: release.sh [--snapshot] VERSION OUT}
OUT=${2:?usage: release.sh [--snapshot] VERSION OUT}
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[release] %s\n' "$*" >&2; }

chart=$root/charts/kubetrain
bash "$root/e2e/scripts/check-release.sh" "${snapshot[@]}" "$VERSION" "$root"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Exactly what `kubectl apply -k config/default` applies. Its image tags are the version
# (config/manager's kustomization and config/labeler/daemonset.yaml; bumped with Cargo.toml):
# a release whose install.yaml would run other images fails here.
kubectl kustomize "$root/config/default" > "$OUT/install.yaml.tmp"
bad=$(awk '$1=="image:" && $2 != "" && $2 !~ (":" ver "$") {print $2}' ver="$VERSION" "$OUT/install.yaml.tmp")
[ -z "$bad" ] || { rm -f "$OUT/install.yaml.tmp"; log "images not tagged $VERSION in config/default: $bad"; exit 1; }
{
  echo "# kubetrain $VERSION: CRDs, RBAC, the operator and the node labeler (config/default)."
  echo "#   kubectl apply --server-side -f install.yaml"
  cat "$OUT/install.yaml.tmp"
} > "$OUT/install.yaml"
rm -f "$OUT/install.yaml.tmp"
log "wrote $OUT/install.yaml"

helm package "$chart" --destination "$OUT" >&2
log "wrote $OUT/kubetrain-$VERSION.tgz"
