# syntax=docker/dockerfile:1.7
#
# kubetrain images, amd64 and arm64, from one build of the workspace (VERSION: the workspace
# version in Cargo.toml, as `make release` uses it):
#
#   docker buildx build --platform linux/amd64,linux/arm64 --target operator \
#     -t <registry>/kubetrain/operator:$VERSION --push .
#   docker buildx build --platform linux/amd64,linux/arm64 --target node-labeler \
#     -t <registry>/kubetrain/node-labeler:$VERSION --push .
#
# A plain `docker build --target operator .` builds for the machine's own architecture.
#
# The Rust build runs on the build machine's architecture ($BUILDPLATFORM) and cross-compiles
# to the image's ($TARGETARCH) with Debian's cross gcc as linker and C compiler (for ring):
# no emulation, so an arm64 image builds as fast as an amd64 one.
#
# The operator is a static musl binary on distroless/static (no libc, no shell, uid 65532).
# The node labeler is linked against glibc and runs on distroless/cc: it loads the host
# driver's libnvidia-ml.so.1 (mounted by the NVIDIA container toolkit) with dlopen, which a
# static musl binary cannot do.

ARG RUST_VERSION=1.89

# ---- build: both binaries for $TARGETARCH ----
FROM --platform=$BUILDPLATFORM rust:${RUST_VERSION}-bookworm AS build
ARG BUILDARCH
ARG TARGETARCH
# The Rust targets and gcc of each architecture, in one place for the steps below.
RUN set -eux; \
    case "$TARGETARCH" in \
      amd64) arch=x86_64;  gcc=x86-64 ;; \
      arm64) arch=aarch64; gcc=aarch64 ;; \
      *) echo "unsupported TARGETARCH=$TARGETARCH (amd64, arm64)" >&2; exit 1 ;; \
    esac; \
    { echo "ARCH=$arch"; echo "CROSS_GCC=$arch-linux-gnu-gcc"; } > /etc/kubetrain-target; \
    pkgs="musl-tools"; \
    if [ "$TARGETARCH" != "$BUILDARCH" ]; then pkgs="$pkgs gcc-$gcc-linux-gnu libc6-dev-$TARGETARCH-cross"; fi; \
    apt-get update; \
    apt-get install -y --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/*; \
    rustup target add "$arch-unknown-linux-musl" "$arch-unknown-linux-gnu"
WORKDIR /src
COPY . .
# Cache mounts keep the registry and a target directory per architecture between builds; the
# binaries are copied out of the cached target directory.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,id=kubetrain-target-${TARGETARCH},target=/src/target \
    set -eux; . /etc/kubetrain-target; \
    musl="$ARCH-unknown-linux-musl"; gnu="$ARCH-unknown-linux-gnu"; \
    if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
      for t in "$musl" "$gnu"; do \
        export "CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_LINKER=$CROSS_GCC" \
               "CC_$(echo "$t" | tr - _)=$CROSS_GCC"; \
      done; \
    fi; \
    cargo build --release --locked --target "$musl" -p kubetrain --bin kubetrain-operator; \
    cargo build --release --locked --target "$gnu" -p kubetrain-node-labeler --bin kubetrain-node-labeler; \
    install -D "target/$musl/release/kubetrain-operator" /out/kubetrain-operator; \
    install -D "target/$gnu/release/kubetrain-node-labeler" /out/kubetrain-node-labeler

# ---- images ($TARGETPLATFORM) ----
FROM gcr.io/distroless/cc-debian12:nonroot AS node-labeler
COPY --from=build /out/kubetrain-node-labeler /usr/local/bin/kubetrain-node-labeler
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kubetrain-node-labeler"]

# Last, so that a plain `docker build .` gives the operator.
FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build /out/kubetrain-operator /usr/local/bin/kubetrain-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kubetrain-operator"]
