# syntax=docker/dockerfile:1.7
#
# kubetrain images, from one build of the workspace:
#
#   docker build --target operator     -t ghcr.io/kubetrain/operator:0.1.0 .
#   docker build --target node-labeler -t ghcr.io/kubetrain/node-labeler:0.1.0 .
#
# The operator is a static musl binary on distroless/static (no libc, no shell, uid 65532).
# The node labeler is linked against glibc and runs on distroless/cc: it loads the host
# driver's libnvidia-ml.so.1 (mounted by the NVIDIA container toolkit) with dlopen, which a
# static musl binary cannot do.

ARG RUST_VERSION=1.89

# ---- operator: static musl build ----
FROM rust:${RUST_VERSION}-bookworm AS build-operator
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target directory between builds; the binary is
# copied out of the cached target directory.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl \
      -p kubetrain --bin kubetrain-operator \
 && install -D target/x86_64-unknown-linux-musl/release/kubetrain-operator /out/kubetrain-operator

# ---- node labeler: glibc build ----
FROM rust:${RUST_VERSION}-bookworm AS build-labeler
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kubetrain-node-labeler --bin kubetrain-node-labeler \
 && install -D target/release/kubetrain-node-labeler /out/kubetrain-node-labeler

# ---- images ----
FROM gcr.io/distroless/cc-debian12:nonroot AS node-labeler
COPY --from=build-labeler /out/kubetrain-node-labeler /usr/local/bin/kubetrain-node-labeler
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kubetrain-node-labeler"]

# Last, so that a plain `docker build .` gives the operator.
FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build-operator /out/kubetrain-operator /usr/local/bin/kubetrain-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kubetrain-operator"]
