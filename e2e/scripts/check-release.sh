#!/usr/bin/env bash
# Checks that everything naming kubetrain's version agrees on VERSION before `make release`
# (e2e/scripts/release.sh runs it) labels artifacts with it:
#
#   check-release.sh [--snapshot] VERSION [ROOT]
#
# - Cargo.toml's workspace version, charts/kubetrain/Chart.yaml's version and appVersion;
# - CHANGELOG.md has a section `## [VERSION]`, and its `## [Unreleased]` section is empty:
#   otherwise the artifacts would carry, under VERSION, changes the CHANGELOG says are in no
#   release (cut the section and move the version first); --snapshot allows that, for a
#   build that is not published (the tests' own);
# - every version the docs' install commands name (the chart package `kubetrain-X.tgz`, the
#   images `.../kubetrain/<image>:X`, the git tag `vX` in README.md, charts/kubetrain/README.md
#   and docs/) is VERSION.
#
# Fails naming each mismatch (file and what it says). ROOT defaults to the repository.
set -euo pipefail

snapshot=false
if [ "${1:-}" = "--snapshot" ]; then snapshot=true; shift; fi
VERSION=${1:?usage: check-release.sh [--snapshot] VERSION [ROOT]}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
bad=0
fail() { printf '[check-release] %s\n' "$*" >&2; bad=1; }

cargo=$(awk -F'"' '/^\[workspace.package\]/{p=1} p && $1 ~ /^version *= */{print $2; exit}' "$root/Cargo.toml")
[ "$cargo" = "$VERSION" ] || fail "Cargo.toml: workspace version is '$cargo', not $VERSION"

for field in version appVersion; do
  have=$(awk -v f="$field:" '$1==f {gsub(/"/, "", $2); print $2; exit}' "$root/charts/kubetrain/Chart.yaml")
  [ "$have" = "$VERSION" ] || fail "charts/kubetrain/Chart.yaml: $field is '$have', not $VERSION"
done

changelog=$root/CHANGELOG.md
grep -qF "## [$VERSION]" "$changelog" || fail "CHANGELOG.md: no section '## [$VERSION]'"
unreleased=$(awk '/^## \[Unreleased\]/{p=1; next} /^## /{p=0} p && /^- /{n++} END{print n+0}' "$changelog")
if [ "$unreleased" -gt 0 ] && ! $snapshot; then
  fail "CHANGELOG.md: '## [Unreleased]' lists $unreleased changes: cut them into a new version's section and move the version (Cargo.toml, Chart.yaml, docs) before releasing"
fi

# The versions the docs name, as file:line:match.
docs=("$root/README.md" "$root/charts/kubetrain/README.md")
while IFS= read -r -d '' f; do docs+=("$f"); done < <(find "$root/docs" -name '*.md' -print0)
while IFS= read -r hit; do
  file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; match=${rest#*:}
  v=$(printf '%s' "$match" | sed -E 's/^kubetrain-//; s/\.tgz$//; s/^.*://; s/^v//')
  [ "$v" = "$VERSION" ] || fail "${file#"$root"/}:$line: '$match' names version $v, not $VERSION"
done < <(grep -noE 'kubetrain-[0-9]+\.[0-9]+\.[0-9]+[^ ]*\.tgz|kubetrain/[a-z-]+:[0-9]+\.[0-9]+\.[0-9]+[^ `"]*|(targetRevision: |tag: |ref: \{tag: |the tag `)v[0-9]+\.[0-9]+\.[0-9]+' "${docs[@]}" | sed -E 's/(targetRevision: |tag: |ref: \{tag: |the tag `)//')

[ "$bad" = 0 ] || exit 1
printf '[check-release] %s: Cargo.toml, Chart.yaml, CHANGELOG.md and the docs agree\n' "$VERSION" >&2
