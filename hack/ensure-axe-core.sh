#!/usr/bin/env bash
# Installs axe-core (Deque's accessibility rules engine, from npm) under the cache, outside the
# checkout, and prints the path of its axe.min.js. The portal's browser tests inject it into
# every page they check. Exits 3 when Node or npm is missing.
set -euo pipefail
version=4.14.1
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/node/axe-core-$version"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-axe-core: node and npm are not installed (hack/ensure-tools.sh installs them as root)" >&2; exit 3
fi
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [[ ! -f "$dir/node_modules/axe-core/axe.min.js" ]]; then
  echo "ensure-axe-core: installing axe-core $version from npm into $dir (first run only)" >&2
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "axe-core@$version" >&2
fi
echo "$dir/node_modules/axe-core/axe.min.js"
