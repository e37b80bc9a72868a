#!/usr/bin/env bash
# Builds Hookdeck Outpost (github.com/hookdeck/outpost, a peer of the end-to-end delivery
# benchmark) from a checkout of its source, for the benchmark only: the source is copied (git
# archive of its HEAD's Go module; a bare clone works too) into a cache outside this
# repository and its two binaries, `outpost` (the CLI: migrations) and `outpost-server` (the
# services), are cached there in outpost-<commit>/, as Outpost's release image ships them. Installs
# redis-server and rabbitmq-server (Debian packages) when missing. Idempotent: a second run
# with the same commit only prints the cached CLI's path.
#
#   OUTPOST_SRC=/path/to/outpost hack/bench/outpost.sh     # prints .../outpost-<commit>/outpost
#
# OUTPOST_REPLACE="module=/path ..." adds replace directives to the build copy's go.mod, for a
# dependency the Go module proxy no longer serves (none was needed at commit f67ae011).
set -euo pipefail

CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}/peer"
log() { echo "outpost.sh: $*" >&2; }

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v rabbitmq-server >/dev/null || [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] || missing+=(rabbitmq-server)
if ((${#missing[@]})); then
  log "installing ${missing[*]} (Debian packages)"
  sudo_=""; [[ $(id -u) -ne 0 ]] && sudo_=sudo
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2 ||
    { $sudo_ apt-get update >&2 && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2; }
fi

: "${OUTPOST_SRC:?set OUTPOST_SRC to a checkout of github.com/hookdeck/outpost}"
commit=$(git -c gc.auto=0 -C "$OUTPOST_SRC" rev-parse --short=8 HEAD)
full=$(git -c gc.auto=0 -C "$OUTPOST_SRC" rev-parse HEAD)
dir="$CACHE_ROOT/outpost-$commit"
if [[ -x "$dir/outpost" && -x "$dir/outpost-server" ]]; then
  echo "$dir/outpost"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock"
flock 9
if [[ -x "$dir/outpost" && -x "$dir/outpost-server" ]]; then
  echo "$dir/outpost"
  exit 0
fi
src="$CACHE_ROOT/src-outpost-$commit"
rm -rf "$src"
mkdir -p "$src"
# The Go module only: the servers need nothing else of the tree (docs, SDKs, examples, the
# portal's web sources), and a partial clone may lack some of those blobs.
git -c gc.auto=0 -C "$OUTPOST_SRC" archive HEAD go.mod go.sum cmd internal | tar -x -C "$src"
for r in ${OUTPOST_REPLACE:-}; do
  (cd "$src" && go mod edit -replace "$r")
done
version=$(git -c gc.auto=0 -C "$OUTPOST_SRC" describe --tags --match 'v*' HEAD 2>/dev/null || echo "$commit")
log "building outpost $version ($commit) into $dir"
# An earlier layout cached a lone outpost-server binary under this name.
[[ -d "$dir" ]] || rm -f "$dir"
mkdir -p "$dir.tmp"
ldflags="-X github.com/hookdeck/outpost/internal/version.version=$version -X github.com/hookdeck/outpost/internal/version.commit=$full"
for cmd in outpost outpost-server; do
  (cd "$src" && CGO_ENABLED=0 go build -tags nomsgpack -ldflags "$ldflags" -o "$dir.tmp/$cmd" "./cmd/$cmd") >&2
done
rm -rf "$dir"
mv "$dir.tmp" "$dir"
rm -rf "$src"
echo "$dir/outpost"
