#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy and caches them.
# setup-envtest downloads prebuilt binaries from the internet, which this project
# cannot rely on, so we compile the same release from source instead.
# Prints the directory holding both binaries (suitable for KUBEBUILDER_ASSETS).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.6}"
CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
BIN_DIR="$CACHE_ROOT/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

log() { echo "envtest-binaries: $*" >&2; }

if [[ -x "$BIN_DIR/kube-apiserver" && -x "$BIN_DIR/etcd" ]]; then
  echo "$BIN_DIR"
  exit 0
fi

mkdir -p "$BIN_DIR"
# Two first runs (say make test in two worktrees) would build into the same files: the
# second waits for the first here and then finds the binaries cached.
command -v flock >/dev/null || { log "flock (util-linux) is needed to build the envtest binaries"; exit 1; }
exec 9>"$BIN_DIR/.lock"
if ! flock -n 9; then
  log "another run is building the envtest binaries; waiting for it"
  flock 9
fi
if [[ -x "$BIN_DIR/kube-apiserver" && -x "$BIN_DIR/etcd" ]]; then
  echo "$BIN_DIR"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0

if [[ ! -x "$BIN_DIR/etcd" ]]; then
  log "building etcd v${ETCD_VERSION} from the module proxy (about 20 s the first time)"
  mkdir -p "$WORK/etcd" && cd "$WORK/etcd"
  go mod init envtest.local/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >&2
  go build -trimpath -o "$BIN_DIR/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
  mv "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
fi

if [[ ! -x "$BIN_DIR/kube-apiserver" ]]; then
  log "building kube-apiserver v${K8S_VERSION} from the module proxy (about 3 minutes the first time)"
  mkdir -p "$WORK/kas" && cd "$WORK/kas"
  go mod init envtest.local/kube-apiserver >/dev/null 2>&1
  # k8s.io/kubernetes replaces its staging modules with ./staging/...; a consumer must
  # replace each of them with the published module of the matching v0 version.
  go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" > kubernetes.json
  gomod="$(sed -n 's/.*"GoMod": "\(.*\)",/\1/p' kubernetes.json)"
  staging="$(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod")"
  [[ -n "$staging" ]] || { log "found no staging modules in $gomod"; exit 1; }
  go mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
  for m in $staging; do
    go mod edit -replace="$m=$m@v0.${K8S_VERSION#1.}"
  done
  log "replaced $(echo "$staging" | wc -l) staging modules"
  cat > main.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

func main() {}
GO
  go mod tidy >&2
  rm main.go
  go build -trimpath -o "$BIN_DIR/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
  mv "$BIN_DIR/kube-apiserver.tmp" "$BIN_DIR/kube-apiserver"
fi

log "cached in $BIN_DIR"
echo "$BIN_DIR"
