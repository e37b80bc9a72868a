# Build the switchboard binary.
#
# `make image` builds the same image without Docker and without pulling a base image
# (hack/imagebuild): the same `go build` flags, and on an empty base the files this image
# takes from distroless/static:nonroot (/etc/passwd and /etc/group with user 65532, the CA
# bundle, /tmp); time-zone data is in the binary (time/tzdata) in both. Keep the two in step:
# a test (hack/imagebuild) compares the flags. See docs/operations.md "The image".
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev

WORKDIR /workspace
# Cache module downloads in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

# Copy the sources (see .dockerignore for what is left out).
COPY . .

# CGO is off so the binary runs on distroless/static. GOARCH has no default so the binary
# is built for the platform the image is built for (docker buildx --platform ...).
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags="-s -w -X github.com/switchboard-dev/switchboard/internal/cli.Version=${VERSION}" -o switchboard .

# Distroless static image with a non-root user; see https://github.com/GoogleContainerTools/distroless
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/switchboard /switchboard
USER 65532:65532

ENTRYPOINT ["/switchboard"]
