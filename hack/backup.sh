#!/usr/bin/env bash
# Backs up both stores of Switchboard into DIR (docs/upgrades-and-restore.md):
#   DIR/etcd.snapshot        etcdctl snapshot save (webhook endpoints, their signing
#                            Secrets, live deliveries, transcription jobs; all of etcd)
#   DIR/postgresql.dump      pg_dump --format=custom (accounts, calls, outbox, history, ledger)
# etcd first, then PostgreSQL: every live delivery in the snapshot then names an event the
# dump holds, and the dump's recovery point is the later one.
#
# Environment: DATABASE_URL (the service's database); ETCDCTL_ENDPOINTS (etcd's client URLs)
# and, for a TLS etcd, ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY (read by etcdctl itself).
# Tools: pg_dump from PG_BINDIR, PATH or /usr/lib/postgresql/*/bin; etcdctl from ETCD_TOOLS_DIR,
# else built once by hack/etcd-tools.sh.
set -euo pipefail
log() { echo "backup: $(date -u +%FT%TZ) $*" >&2; }
dir="${1:?usage: hack/backup.sh DIR [etcd|postgresql]}"
only="${2:-}" # one store only (a drill of backups taken apart); both by default
: "${DATABASE_URL:?set DATABASE_URL}"
[[ "$only" == postgresql ]] || : "${ETCDCTL_ENDPOINTS:?set ETCDCTL_ENDPOINTS}"
here="$(cd "$(dirname "$0")" && pwd)"
pg_bin() {
  if [[ -n "${PG_BINDIR:-}" ]]; then echo "$PG_BINDIR/$1"; return; fi
  if command -v "$1" >/dev/null; then command -v "$1"; return; fi
  echo "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/$1"
}
etcd_tools="${ETCD_TOOLS_DIR:-}"
if [[ -z "$etcd_tools" && "$only" != postgresql ]]; then etcd_tools="$("$here/etcd-tools.sh")"; fi
mkdir -p "$dir"

if [[ "$only" != postgresql ]]; then
  log "etcd snapshot from $ETCDCTL_ENDPOINTS"
  "$etcd_tools/etcdctl" snapshot save "$dir/etcd.snapshot.part" >&2
  mv "$dir/etcd.snapshot.part" "$dir/etcd.snapshot"
fi
if [[ "$only" != etcd ]]; then
  log "PostgreSQL dump"
  "$(pg_bin pg_dump)" --format=custom --no-owner --no-privileges --file="$dir/postgresql.dump.part" "$DATABASE_URL"
  mv "$dir/postgresql.dump.part" "$dir/postgresql.dump"
fi
log "done: $dir"
