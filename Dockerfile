# tandem-scheduler (the entrypoint) and tandem-webhook (the chart's webhook
# Deployment runs it as its command) for those who build images with Docker;
# `make image` builds the same image without a container runtime
# (hack/build-image.sh).
#
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg KUBE_MINOR=1.37 \
#     -t REGISTRY/tandem-scheduler:v0.40.0-k8s1.37 --push .
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg KUBE_MINOR=1.37 \
#     --target tandem-pause -t REGISTRY/tandem-pause:v0.40.0-k8s1.37 --push .
#
# KUBE_MINOR picks the kube-scheduler tandem is built against (1.34 to
# 1.37: hack/lib/version.sh; default the newest); tag the image
# <tandem version>-k8s<minor>, the tag the chart picks for a cluster of that minor.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
# Empty: the newest minor hack/lib/version.sh lists.
ARG KUBE_MINOR=
WORKDIR /src
# The minor's module and what it replaces (this tree's go.mod, kubectl-tandem's, the contract's),
# then its modules: a layer that changes only with the dependencies.
COPY go.mod go.sum ./
COPY cmd/kubectl-tandem/go.mod cmd/kubectl-tandem/go.sum cmd/kubectl-tandem/
COPY contract/go.mod contract/go.sum contract/
COPY hack/lib/ hack/lib/
COPY hack/compat/ hack/compat/
RUN bash -c 'set -o errexit -o pipefail && source hack/lib/version.sh && \
    v="$(tandem::version::of_minor "${KUBE_MINOR:-$(tandem::version::minor "${TANDEM_KUBE_VERSIONS[-1]}")}")" && \
    dir="$(tandem::version::checked_module_dir "$v")" && cd "${dir}" && GOWORK=off go mod download'
COPY . .
# Static binaries (the image has no libc), built from the module of the minor.
RUN bash -c 'set -o errexit -o pipefail && source hack/lib/version.sh && \
    v="$(tandem::version::of_minor "${KUBE_MINOR:-$(tandem::version::minor "${TANDEM_KUBE_VERSIONS[-1]}")}")" && \
    dir="$(tandem::version::checked_module_dir "$v")" && cd "${dir}" && \
    for cmd in tandem-scheduler tandem-webhook tandem-pause; do \
      CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOWORK=off go build -trimpath -tags "$(tandem::version::tags "$v")" \
        -ldflags "$(tandem::version::ldflags "$v")" -o /out/$cmd github.com/tandem-scheduler/tandem/cmd/$cmd; \
    done'

# The placeholders' image (--target tandem-pause): tandem-pause alone.
FROM scratch AS tandem-pause
COPY hack/image/rootfs/ /
COPY --from=build /out/tandem-pause /usr/local/bin/tandem-pause
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tandem-pause"]

# No base image, no shell: the binaries, and passwd/group for the non-root user.
FROM scratch
COPY hack/image/rootfs/ /
COPY --from=build /out/tandem-scheduler /usr/local/bin/tandem-scheduler
COPY --from=build /out/tandem-webhook /usr/local/bin/tandem-webhook
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tandem-scheduler"]
