#!/usr/bin/env bash
# Installs what the local control plane needs and builds kube-apiserver and
# kube-controller-manager (Kubernetes 1.20.2 from Debian's source package) once
# into a cache outside the repo. Re-running is cheap: every step is skipped when
# its result is already there.
#
#   KUBETRAIN_CACHE  cache directory (default: $HOME/.cache/kubetrain)
#
# Prints nothing on the fast path but the cache location.
set -euo pipefail

CACHE=${KUBETRAIN_CACHE:-$HOME/.cache/kubetrain}
BIN=$CACHE/bin
mkdir -p "$BIN"
log() { printf '[install] %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

apt_updated=0
apt_update() {
  if [ "$apt_updated" = 0 ]; then
    $SUDO apt-get update -qq >&2
    apt_updated=1
  fi
}
# Install Debian packages that are not yet installed (one apt-get call for all).
need_pkgs() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    apt_update
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

# --- etcd -------------------------------------------------------------------
if ! command -v etcd >/dev/null && [ ! -x "$BIN/etcd" ]; then
  need_pkgs etcd-server
fi
if [ ! -x "$BIN/etcd" ]; then ln -sf "$(command -v etcd)" "$BIN/etcd"; fi

# --- kubectl ----------------------------------------------------------------
# Use the kubectl on PATH when there is one; installing kubernetes-client over
# another package's kubectl fails with a file conflict, so unpack it instead.
if [ ! -x "$BIN/kubectl" ]; then
  if command -v kubectl >/dev/null; then
    ln -sf "$(command -v kubectl)" "$BIN/kubectl"
  else
    apt_update
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq kubernetes-client >&2)
    dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$tmp/x"
    cp "$tmp/x/usr/bin/kubectl" "$BIN/kubectl"
    rm -rf "$tmp"
  fi
fi

# --- kube-apiserver + kube-controller-manager from source --------------------
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ]; then
  echo "$CACHE"
  exit 0
fi

need_pkgs golang-go rsync golang-github-modern-go-reflect2-dev dpkg-dev make

# Source packages need a deb-src entry; derive it from the system's own bookworm
# entry so no mirror is named here.
SRC_LIST=/etc/apt/sources.list.d/kubetrain-deb-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/{u=$2} /^Suites:/ && / bookworm( |$)/{print u; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || { log "no Debian bookworm apt entry found to derive a deb-src entry from"; exit 1; }
  printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" \
    | $SUDO tee "$SRC_LIST" >/dev/null
  apt_updated=0
fi
apt_update

BUILD=$CACHE/build
mkdir -p "$BUILD"
src=$(find "$BUILD" -maxdepth 1 -type d -name 'kubernetes-1.20*' | head -1)
if [ -z "$src" ]; then
  log "fetching the kubernetes source package"
  (cd "$BUILD" && apt-get source -qq kubernetes >&2)
  src=$(find "$BUILD" -maxdepth 1 -type d -name 'kubernetes-1.20*' | head -1)
fi
[ -n "$src" ] || { log "kubernetes source package not found"; exit 1; }

# The vendored reflect2 1.0.1 crashes the apiserver under Go >= 1.18; Debian's 1.0.2 works.
r2=/usr/share/gocode/src/github.com/modern-go/reflect2
if [ ! -f "$src/vendor/github.com/modern-go/reflect2/.kubetrain-replaced" ]; then
  log "replacing vendored reflect2 with Debian's 1.0.2"
  rm -rf "$src/vendor/github.com/modern-go/reflect2"
  mkdir -p "$src/vendor/github.com/modern-go/reflect2"
  find "$r2" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' \
    -exec cp {} "$src/vendor/github.com/modern-go/reflect2/" \;
  touch "$src/vendor/github.com/modern-go/reflect2/.kubetrain-replaced"
fi

log "building kube-apiserver and kube-controller-manager (about 6 minutes on 2 cores)"
mkdir -p "$BUILD/.go/src/k8s.io"
ln -sfn "$src" "$BUILD/.go/src/k8s.io/kubernetes"
(
  cd "$BUILD/.go/src/k8s.io/kubernetes"
  export GOPATH=$BUILD/.go GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >&2
)
out="$src/_output/bin"
[ -x "$out/kube-apiserver" ] || out=$(dirname "$(find "$src/_output" -type f -name kube-apiserver | head -1)")
cp "$out/kube-apiserver" "$out/kube-controller-manager" "$BIN/"
log "installed into $BIN"
echo "$CACHE"
