#!/usr/bin/env bash
# Builds (once) the switchboard binary of the previous release from this repository's own
# history and prints its path. The release is the commit PREVIOUS_RELEASE, by default the
# one pinned in the Makefile. The binary is cached under $SWITCHBOARD_CACHE by commit.
# PREVIOUS_RELEASE_BIN, when set, is used as is (a binary built elsewhere).
set -euo pipefail
log() { echo "previous-release: $*" >&2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -n "${PREVIOUS_RELEASE_BIN:-}" ]]; then
  [[ -x "$PREVIOUS_RELEASE_BIN" ]] || { log "PREVIOUS_RELEASE_BIN=$PREVIOUS_RELEASE_BIN is not an executable"; exit 1; }
  echo "$PREVIOUS_RELEASE_BIN"
  exit 0
fi
commit="${PREVIOUS_RELEASE:-$(sed -n 's/^PREVIOUS_RELEASE ?= *//p' "$root/Makefile")}"
[[ "$commit" =~ ^[0-9a-f]{40}$ ]] || { log "PREVIOUS_RELEASE must be a full commit hash (got '$commit')"; exit 1; }

CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
dir="$CACHE_ROOT/previous-release/$commit"
bin="$dir/switchboard"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
command -v flock >/dev/null || { log "flock (util-linux) is needed"; exit 1; }
exec 9>"$dir/.lock"
if ! flock -n 9; then
  log "another run is building the previous release; waiting for it"
  flock 9
fi
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

# A shallow clone (CI's default checkout) may not hold the commit: fetch just that commit
# from origin (GitHub serves any reachable commit by hash); fail with what to do otherwise.
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  log "commit $commit is not in this clone; fetching it from origin"
  if ! git -C "$root" fetch --quiet --no-tags --depth=1 origin "$commit" >&2; then
    log "cannot get the previous release $commit: this clone lacks it and 'git fetch origin $commit' failed."
    log "Fetch the full history (git fetch --unshallow; in GitHub Actions, actions/checkout with fetch-depth: 0)"
    log "or point PREVIOUS_RELEASE_BIN at a switchboard binary built from $commit."
    exit 1
  fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log "building switchboard at ${commit:0:12} (first run only)"
git -C "$root" archive "$commit" | tar -x -C "$work"
(cd "$work" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$bin.tmp" .) >&2
mv "$bin.tmp" "$bin"
echo "$bin"
