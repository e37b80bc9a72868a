#!/usr/bin/env bash
# Installs the reference Pusher client (pusher-js, from npm) under the cache, outside the
# checkout, and prints its node_modules directory. Used by the live channel's conformance
# test and the `make run` snippet. Exits 3 when Node or npm is missing.
set -euo pipefail
version=8.6.0
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/node/pusher-js-$version"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-pusher-js: node and npm are not installed" >&2; exit 3
fi
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [[ ! -f "$dir/node_modules/pusher-js/package.json" ]]; then
  echo "ensure-pusher-js: installing pusher-js $version from npm into $dir (first run only)" >&2
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "pusher-js@$version" >&2
fi
echo "$dir/node_modules"
