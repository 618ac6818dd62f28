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
# 1.37: hack/lib/version.sh); tag the image <tandem version>-k8s<minor>, the
# tag the chart picks for a cluster of that minor.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG KUBE_MINOR=1.37
WORKDIR /src
COPY . .
# Static binaries (the image has no libc), built from the module of the minor.
RUN bash -c 'source hack/lib/version.sh && \
    v="$(tandem::version::of_minor ${KUBE_MINOR})" && cd "$(tandem::version::module_dir "$v")" && \
    for cmd in tandem-scheduler tandem-webhook tandem-pause; do \
      CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOWORK=off go build -trimpath -tags "$(tandem::version::tags "$v")" \
        -ldflags "$(tandem::version::ldflags "$v")" -o /out/$cmd github.com/tandem-scheduler/tandem/cmd/$cmd || exit 1; \
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
