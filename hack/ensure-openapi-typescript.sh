#!/usr/bin/env bash
# Installs openapi-typescript and TypeScript at the versions hack/clientcheck/package-lock.json
# pins (npm ci) under the cache, outside the checkout, and prints the node_modules/.bin
# directory. Used by the generated-clients test. Exits 3 when Node or npm is missing.
set -euo pipefail
cd "$(dirname "$0")/clientcheck"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-openapi-typescript: node and npm are not installed" >&2; exit 3
fi
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
# A new lockfile gets a new directory, so a changed pin is installed afresh.
dir="$cache/node/clientcheck-$(sha256sum package-lock.json | cut -c1-12)"
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [[ ! -x "$dir/node_modules/.bin/openapi-typescript" || ! -x "$dir/node_modules/.bin/tsc" ]]; then
  echo "ensure-openapi-typescript: installing from npm into $dir (first run only)" >&2
  cp package.json package-lock.json "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
echo "$dir/node_modules/.bin"
