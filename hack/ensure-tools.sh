#!/usr/bin/env bash
# Makes sure the machine has what the tests and `make run` use, installing what is
# missing with apt-get (as root). Idempotent and quick when everything is there.
set -euo pipefail
log() { echo "ensure-tools: $*" >&2; }

pg_bindir() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0
  fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

apt_install() {
  if [[ $(id -u) -ne 0 ]]; then
    log "need root to install $*; install them and re-run"; exit 1
  fi
  log "installing $* with apt-get (first run only)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "$@" >&2
}

dir="$(pg_bindir || true)"
if [[ -z "$dir" || ! -x "$dir/initdb" ]]; then
  apt_install postgresql
fi

# PostgreSQL refuses to run as root; tests and `make run` start it as this user.
if [[ $(id -u) -eq 0 ]] && ! getent passwd postgres >/dev/null; then
  log "creating the unprivileged 'postgres' user to run throwaway clusters"
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

# make image puts the machine's CA bundle into the image (hack/imagebuild).
if [[ ! -s /etc/ssl/certs/ca-certificates.crt ]]; then
  apt_install ca-certificates
fi

# promtool (Debian's prometheus package) checks and unit-tests the alert rules of config/prometheus.
if ! command -v promtool >/dev/null 2>&1; then
  apt_install prometheus
fi

if ! command -v kubectl >/dev/null 2>&1; then
  log "kubectl is not installed: 'make run' will still work, but install kubectl to inspect resources"
fi

# The local speech engines (Vosk, PocketSphinx) and audio tools; their tests are skipped without them.
"$(dirname "$0")/install-speech-tools.sh" || log "speech tools not installed: the local speech engine's test is skipped"

# Headless Chromium (Debian's chromium) drives the account portal's browser tests (internal/portal).
if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi

# Node.js and npm install axe-core (hack/ensure-axe-core.sh), which checks the portal's pages
# for accessibility in the browser tests, and pusher-js for the live channel's conformance test.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
