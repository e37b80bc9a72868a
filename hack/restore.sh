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
dir="${1:?usage: hack/restore.sh DIR}"
: "${DATABASE_URL:?set DATABASE_URL}" "${ETCD_DATA_DIR:?set ETCD_DATA_DIR}"
[[ -f "$dir/etcd.snapshot" && -f "$dir/postgresql.dump" ]] || { log "$dir holds no complete backup"; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
pg_bin() {
  if [[ -n "${PG_BINDIR:-}" ]]; then echo "$PG_BINDIR/$1"; return; fi
  if command -v "$1" >/dev/null; then command -v "$1"; return; fi
  echo "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/$1"
}
etcd_tools="${ETCD_TOOLS_DIR:-$("$here/etcd-tools.sh")}"
name="${ETCD_NAME:-default}"
peer="${ETCD_PEER_URL:-http://localhost:2380}"

log "PostgreSQL from $dir/postgresql.dump"
"$(pg_bin pg_restore)" --exit-on-error --single-transaction --no-owner --no-privileges \
  --dbname="$DATABASE_URL" "$dir/postgresql.dump"
log "etcd from $dir/etcd.snapshot into $ETCD_DATA_DIR"
"$etcd_tools/etcdutl" snapshot restore "$dir/etcd.snapshot" --data-dir="$ETCD_DATA_DIR" \
  --name="$name" --initial-cluster="$name=$peer" --initial-advertise-peer-urls="$peer" >&2
log "done: start etcd on $ETCD_DATA_DIR, then kube-apiserver, then switchboard serve"
