# Build the switchboard binary.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Cache module downloads in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

# Copy the sources (see .dockerignore for what is left out).
COPY . .

# CGO is off so the binary runs on distroless/static. GOARCH has no default so the binary
# is built for the platform the image is built for (docker buildx --platform ...).
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o switchboard .

# Distroless static image with a non-root user; see https://github.com/GoogleContainerTools/distroless
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/switchboard /switchboard
USER 65532:65532

ENTRYPOINT ["/switchboard"]
