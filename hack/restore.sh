#!/usr/bin/env bash
# Restores a backup made by hack/backup.sh (docs/upgrades-and-restore.md). With the service
# stopped, and etcd stopped:
#   PostgreSQL: pg_restore into DATABASE_URL, an empty database (create it first);
#   etcd:       etcdutl snapshot restore into ETCD_DATA_DIR, a directory that must not exist;
#               then start etcd on it (one member: ETCD_NAME, default "default", peer URL
#               ETCD_PEER_URL, default http://localhost:2380), then kube-apiserver, then the
#               service.
# Tools as in hack/backup.sh (pg_restore; etcdutl).
set -euo pipefail
log() { echo "restore: $(date -u +%FT%TZ) $*" >&2; }
dir="${1:?usage: hack/restore.sh DIR [etcd|postgresql]}"
only="${2:-}" # one store only; both by default
if [[ "$only" != etcd ]]; then
  : "${DATABASE_URL:?set DATABASE_URL}"
  [[ -f "$dir/postgresql.dump" ]] || { log "$dir holds no postgresql.dump"; exit 1; }
fi
if [[ "$only" != postgresql ]]; then
  : "${ETCD_DATA_DIR:?set ETCD_DATA_DIR}"
  [[ -f "$dir/etcd.snapshot" ]] || { log "$dir holds no etcd.snapshot"; exit 1; }
fi
here="$(cd "$(dirname "$0")" && pwd)"
pg_bin() {
  if [[ -n "${PG_BINDIR:-}" ]]; then echo "$PG_BINDIR/$1"; return; fi
  if command -v "$1" >/dev/null; then command -v "$1"; return; fi
  echo "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/$1"
}
etcd_tools="${ETCD_TOOLS_DIR:-}"
if [[ -z "$etcd_tools" && "$only" != postgresql ]]; then etcd_tools="$("$here/etcd-tools.sh")"; fi
name="${ETCD_NAME:-default}"
peer="${ETCD_PEER_URL:-http://localhost:2380}"

if [[ "$only" != etcd ]]; then
  log "PostgreSQL from $dir/postgresql.dump"
  "$(pg_bin pg_restore)" --exit-on-error --single-transaction --no-owner --no-privileges \
    --dbname="$DATABASE_URL" "$dir/postgresql.dump"
fi
if [[ "$only" != postgresql ]]; then
  log "etcd from $dir/etcd.snapshot into $ETCD_DATA_DIR"
  "$etcd_tools/etcdutl" snapshot restore "$dir/etcd.snapshot" --data-dir="$ETCD_DATA_DIR" \
    --name="$name" --initial-cluster="$name=$peer" --initial-advertise-peer-urls="$peer" >&2
  log "start etcd on $ETCD_DATA_DIR, then kube-apiserver"
fi
log "done: start switchboard serve"
