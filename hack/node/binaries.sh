#!/usr/bin/env bash
# Builds kubelet, kube-proxy, kube-controller-manager and kube-scheduler of the envtest release from the
# Go module proxy (as hack/envtest-binaries.sh builds kube-apiserver) and caches them.
# Prints their directory.
set -euo pipefail
K8S_VERSION="${K8S_VERSION:-1.36.3}"
CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
BIN_DIR="$CACHE_ROOT/cluster/k8s-${K8S_VERSION}"
BINARIES=(kubelet kube-proxy kube-scheduler kube-controller-manager)
log() { echo "node-binaries: $*" >&2; }

built() { for b in "${BINARIES[@]}"; do [[ -x "$BIN_DIR/$b" ]] || return 1; done; }
if built; then echo "$BIN_DIR"; exit 0; fi
mkdir -p "$BIN_DIR"
command -v flock >/dev/null || { log "flock (util-linux) is needed"; exit 1; }
exec 9>"$BIN_DIR/.lock"
flock 9
if built; then echo "$BIN_DIR"; exit 0; fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
cd "$WORK"
go mod init cluster.local/k8s >/dev/null 2>&1
# k8s.io/kubernetes replaces its staging modules with ./staging/...; a consumer must
# replace each of them with the published module of the matching v0 version.
go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" > kubernetes.json
gomod="$(sed -n 's/.*"GoMod": "\(.*\)",/\1/p' kubernetes.json)"
staging="$(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod")"
[[ -n "$staging" ]] || { log "found no staging modules in $gomod"; exit 1; }
go mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
for m in $staging; do go mod edit -replace="$m=$m@v0.${K8S_VERSION#1.}"; done
cat > main.go <<'GO'
package main

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {}
GO
go mod tidy >&2
rm main.go
for b in "${BINARIES[@]}"; do
  [[ -x "$BIN_DIR/$b" ]] && continue
  log "building $b v${K8S_VERSION} from the module proxy (minutes the first time)"
  go build -trimpath -o "$BIN_DIR/$b.tmp" "k8s.io/kubernetes/cmd/$b" >&2
  mv "$BIN_DIR/$b.tmp" "$BIN_DIR/$b"
done
log "cached in $BIN_DIR"
echo "$BIN_DIR"
