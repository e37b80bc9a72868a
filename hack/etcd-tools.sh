#!/usr/bin/env bash
# Builds etcdctl and etcdutl (the etcd release envtest's etcd is built from) from the Go
# module proxy and caches them; prints the directory holding both. The backup and restore
# scripts (hack/backup.sh, hack/restore.sh) use them.
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-3.6.6}"
CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
BIN_DIR="$CACHE_ROOT/etcd-tools/etcd-${ETCD_VERSION}"
log() { echo "etcd-tools: $*" >&2; }

if [[ -x "$BIN_DIR/etcdctl" && -x "$BIN_DIR/etcdutl" ]]; then
  echo "$BIN_DIR"
  exit 0
fi
mkdir -p "$BIN_DIR"
command -v flock >/dev/null || { log "flock (util-linux) is needed"; exit 1; }
exec 9>"$BIN_DIR/.lock"
if ! flock -n 9; then
  log "another run is building etcdctl and etcdutl; waiting for it"
  flock 9
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
cd "$WORK"
for tool in etcdctl etcdutl; do
  [[ -x "$BIN_DIR/$tool" ]] && continue
  log "building $tool v${ETCD_VERSION} from the module proxy (first run only)"
  mkdir -p "$WORK/$tool" && cd "$WORK/$tool"
  go mod init "tools.local/$tool" >/dev/null 2>&1
  go get "go.etcd.io/etcd/$tool/v3@v${ETCD_VERSION}" >&2
  go build -trimpath -o "$BIN_DIR/$tool.tmp" "go.etcd.io/etcd/$tool/v3" >&2
  mv "$BIN_DIR/$tool.tmp" "$BIN_DIR/$tool"
done
log "cached in $BIN_DIR"
echo "$BIN_DIR"
