# Ballast images for users who build with a container engine. `make images` builds the
# same images without one (hack/imagebuild); both give static binaries on an empty,
# distroless base running as a non-root user.
#
#   docker build --target ballast-control -t ballastk8s/ballast-control:0.1.0 .
#   docker build --target ballast-node    -t ballastk8s/ballast-node:0.1.0 .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o /out/ \
      ./cmd/ballast-control ./cmd/ballast-node

FROM gcr.io/distroless/static-debian12:nonroot AS ballast-node
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="ballast-node" \
      org.opencontainers.image.description="Ballast node agent: samples cgroups and the kubelet, writes histograms to Valkey" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/ballastk8s/ballast"
COPY --from=build /out/ballast-node /ballast-node
USER 65532:65532
ENTRYPOINT ["/ballast-node"]

# The last stage is the default target.
FROM gcr.io/distroless/static-debian12:nonroot AS ballast-control
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="ballast-control" \
      org.opencontainers.image.description="Ballast control plane: policies, profiles, the admission webhook and in-place resizes" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/ballastk8s/ballast"
COPY --from=build /out/ballast-control /ballast-control
USER 65532:65532
ENTRYPOINT ["/ballast-control"]
