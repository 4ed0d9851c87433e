# Shared by the scripts that build Go tools from their modules (install-control-plane.sh,
# install-helm.sh); source it, it defines functions only.

# The machine's go when it is there, else Debian's. A go.mod names the Go it needs; an older
# go fetches that toolchain through the module proxy by itself. Static binaries, and go.sum
# is the truth (no module is added or upgraded while building).
ensure_go() {
  if ! command -v go >/dev/null; then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    log "apt-get install golang-go"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends golang-go >&2
  fi
  export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0 GOFLAGS=-mod=readonly
  [ "$GOTOOLCHAIN" != local ] || export GOTOOLCHAIN=auto
}
