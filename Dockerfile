# tandem-scheduler (the entrypoint) and tandem-webhook (the chart's webhook
# Deployment runs it as its command) for those who build images with Docker;
# `make image` builds the same image without a container runtime
# (hack/build-image.sh).
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     -t REGISTRY/tandem-scheduler:v0.35.4 --push .
#   docker buildx build --platform linux/amd64,linux/arm64 --target tandem-pause \
#     -t REGISTRY/tandem-pause:v0.35.4 --push .
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A static binary: the image has no libc.
RUN bash -c 'source hack/lib/version.sh && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "${TANDEM_LDFLAGS}" -o /out/tandem-scheduler ./cmd/tandem-scheduler && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "${TANDEM_LDFLAGS}" -o /out/tandem-webhook ./cmd/tandem-webhook && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "${TANDEM_LDFLAGS}" -o /out/tandem-pause ./cmd/tandem-pause'

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
