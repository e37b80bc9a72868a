#!/usr/bin/env bash
# Builds Convoy (github.com/frain-dev/convoy, the peer of the end-to-end delivery benchmark)
# from a checkout of its source, for the benchmark only: the source is copied (git archive
# of its HEAD) into a cache outside this repository and the binary is cached there as
# convoy-<commit>. Installs redis-server (Debian package) when missing. Idempotent: a second
# run with the same commit only prints the cached binary's path.
#
#   CONVOY_SRC=/path/to/convoy hack/bench/convoy.sh     # prints the binary's path
#
# Measured with commit 2b60cc652 (v26.6.6). Two of its dependencies at that commit are no
# longer served by the Go module proxy (github.com/jirevwe/gopartman v0.2.0,
# github.com/subomi/requestmigrations/v2 v2.3.0): point CONVOY_REPLACE at checkouts of them,
#   CONVOY_REPLACE="github.com/jirevwe/gopartman=/src/gopartman github.com/subomi/requestmigrations/v2=/src/requestmigrations"
# and the build copy's go.mod gets those replace directives (see docs/benchmarks.md).
set -euo pipefail

CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}/peer"
log() { echo "convoy.sh: $*" >&2; }

if ! command -v redis-server >/dev/null; then
  log "installing redis-server (Debian package)"
  sudo_=""; [[ $(id -u) -ne 0 ]] && sudo_=sudo
  $sudo_ apt-get install -y redis-server >&2 || { $sudo_ apt-get update >&2 && $sudo_ apt-get install -y redis-server >&2; }
fi

: "${CONVOY_SRC:?set CONVOY_SRC to a checkout of github.com/frain-dev/convoy}"
commit=$(git -C "$CONVOY_SRC" rev-parse --short=9 HEAD)
bin="$CACHE_ROOT/convoy-$commit"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock"
flock 9
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi
src="$CACHE_ROOT/src-$commit"
rm -rf "$src"
mkdir -p "$src"
git -C "$CONVOY_SRC" archive HEAD | tar -x -C "$src"
# The API embeds the dashboard's web build (api/ui/build); the benchmark needs no UI, so a
# placeholder is enough when the checkout has none.
if [[ ! -e "$src/api/ui/build/index.html" ]]; then
  mkdir -p "$src/api/ui/build"
  echo '<!doctype html><title>convoy</title>' >"$src/api/ui/build/index.html"
fi
for r in ${CONVOY_REPLACE:-}; do
  (cd "$src" && go mod edit -replace "$r")
done
version=$(tr -d ' \n' <"$src/VERSION" 2>/dev/null || true)
log "building convoy $version ($commit) into $bin"
(cd "$src" && go build -ldflags "-X github.com/frain-dev/convoy.Version=$version" -o "$bin.tmp" ./cmd) >&2
mv "$bin.tmp" "$bin"
rm -rf "$src"
echo "$bin"
