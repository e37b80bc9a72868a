#!/usr/bin/env bash
# Deploys config/default (the image imported by hack/node/up.sh) to the single node and checks
# the public API through the switchboard-api Service, a rollout restart under load, a drain
# under the PodDisruptionBudget and the failover of a killed leader. Run by `hack/node/up.sh --then
# hack/node/e2e.sh` (make test-e2e), which sets KUBECONFIG, RUN and NODE_IP.
set -euo pipefail
: "${KUBECONFIG:?}" "${RUN:?}" "${NODE_IP:?}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KUSTOMIZE="${KUSTOMIZE:?the kustomize binary (make test-e2e sets it)}"
NS=switchboard-system
log() { echo "e2e: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
# The Deployment's pods, terminating ones included.
pods() { kubectl -n "$NS" get pods -l control-plane=controller-manager -o name; }
# Waits until the pods a rollout replaced are gone and five GET /v1/me in a row answer 200
# through the Service: `rollout status` reports done while the old pods still run their
# preStop sleep and stop grace, and they keep claiming and delivering webhook events with the
# old flags meanwhile; kube-proxy drops their addresses a moment later.
settle() {
  local ok
  for _ in $(seq 120); do
    [[ "$(pods | wc -l)" == 2 ]] && break
    sleep 0.5
  done
  [[ "$(pods | wc -l)" == 2 ]] || fail "the pods the rollout replaced did not stop: $(kubectl -n "$NS" get pods -o wide)"
  for _ in $(seq 60); do
    ok=0
    for _ in 1 2 3 4 5; do
      [[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$API/v1/me")" == 200 ]] && ok=$((ok + 1))
    done
    [[ $ok == 5 ]] && return 0
    sleep 0.5
  done
  fail "GET /v1/me through the Service did not settle after the rollout"
}

# PostgreSQL on the node's address, where the pods reach it (a throwaway cluster; its own
# directory outside $RUN, which the postgres user cannot enter).
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
PGDIR="$(mktemp -d /tmp/switchboard-e2e-pg.XXXXXX)"
chown postgres "$PGDIR"
PGPORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
pg() { runuser -u postgres -- "$@"; }
pg "$PG_BIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust >/dev/null
echo "host all all 10.88.0.0/16 trust" >>"$PGDIR/data/pg_hba.conf"
echo "host all all $NODE_IP/32 trust" >>"$PGDIR/data/pg_hba.conf"
pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w \
  -o "-c listen_addresses=$NODE_IP -p $PGPORT -k $PGDIR" start >/dev/null
trap 'pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null 2>&1; rm -rf "$PGDIR"' EXIT
psql -h "$NODE_IP" -p "$PGPORT" -U postgres -qc "create database switchboard"
DB="postgres://postgres@$NODE_IP:$PGPORT/switchboard?sslmode=disable"

# The Secrets and the recordings volume the operator provides (docs/operations.md "Deploy").
kubectl create namespace "$NS" >/dev/null
kubectl -n "$NS" create secret generic switchboard-database --from-literal=url="$DB" >/dev/null
kubectl -n "$NS" create secret generic switchboard-link-signing --from-literal=key="$(openssl rand -base64 48)" >/dev/null
PLATFORM_TOKEN="$(openssl rand -hex 16)"
kubectl -n "$NS" create secret generic switchboard-platform --from-literal=token="$PLATFORM_TOKEN" >/dev/null
kubectl -n "$NS" create secret generic switchboard-realtime --from-literal=secret="$(openssl rand -base64 32)" >/dev/null
mkdir -p "$RUN/recordings"
chmod 0777 "$RUN/recordings"
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: switchboard-recordings}
spec:
  capacity: {storage: 20Gi}
  accessModes: [ReadWriteMany]
  hostPath: {path: "$RUN/recordings"}
YAML

# config/default as shipped, with the image set as `make deploy` sets it.
cp -r "$ROOT/config" "$RUN/config"
(cd "$RUN/config/manager" && "$KUSTOMIZE" edit set image controller=docker.io/library/switchboard:node)
"$KUSTOMIZE" build "$RUN/config/default" >"$RUN/deploy.yaml"
kubectl apply --server-side -f "$RUN/deploy.yaml" >/dev/null
log "deployed config/default; waiting for the rollout"
if ! kubectl -n "$NS" rollout status deployment/switchboard-controller-manager --timeout=240s >&2; then
  kubectl -n "$NS" get pods -o wide >&2
  tail -n 5 /var/log/pods/${NS}_switchboard-controller-manager-*/manager/*.log >&2 || true
  fail "the Deployment did not become available"
fi

# Through the Service's cluster IP (kube-proxy's rules), as a client in the cluster reaches it.
API="http://$(kubectl -n "$NS" get service switchboard-api -o jsonpath='{.spec.clusterIP}'):80"
code="$(curl -s -o /dev/null -w '%{http_code}' "$API/v1/me")"
[[ "$code" == 401 ]] || fail "GET /v1/me without a key through the Service: $code, want 401"
(cd "$ROOT" && go build -o "$RUN/switchboard" .)
SB="$RUN/switchboard"
created="$(DATABASE_URL="$DB" "$SB" admin create-account --name "E2E Plumbing Ltd" --addon integrations \
  --owner-email owner@e2e.example --owner-name "E2E Owner")"
key="$(awk '$1 == "key" { print $2 }' <<<"$created")"
acct="$(awk '$1 == "account" { print $2 }' <<<"$created")"
[[ -n "$key" ]] || fail "admin create-account printed no key"
body="$(curl -s -H "Authorization: Bearer $key" -w '\n%{http_code}' "$API/v1/me")"
[[ "$(tail -n 1 <<<"$body")" == 200 ]] || fail "GET /v1/me with the owner's key: $body"
grep -q '"E2E Plumbing Ltd"' <<<"$body" || fail "GET /v1/me does not name the account: $body"
enabled="$(sed '$d' <<<"$body" | jq -r '.realtime.enabled')"
[[ "$enabled" == true ]] || fail "GET /v1/me realtime.enabled: $enabled, want true: $body"
# Both replicas serve: each pod's API answers on its own address too.
for ip in $(kubectl -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[*].status.podIP}'); do
  code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "http://$ip:8080/v1/me")"
  [[ "$code" == 200 ]] || fail "pod $ip: GET /v1/me $code"
done
log "PASS: config/default serves the public API through the switchboard-api Service"

# The live channel through the Service: clients reach it at public-base-url, so point that
# at the Service (a changed setting rolls the pods), subscribe with `switchboard listen` and
# report a call on the platform Service.
sed -i "s|- public-base-url=.*|- public-base-url=$API|" "$RUN/config/default/kustomization.yaml"
"$KUSTOMIZE" build "$RUN/config/default" | kubectl apply --server-side -f - >/dev/null
kubectl -n "$NS" rollout status deployment/switchboard-controller-manager --timeout=240s >&2 ||
  fail "the Deployment did not roll out with public-base-url=$API"
settle
# Every answer through the Service comes from the new pods: five in a row name the Service as
# the live channel's host (a pod still draining names the placeholder).
api_host="${API#http://}"
api_host="${api_host%%:*}"
for _ in $(seq 60); do
  ok=0
  for _ in 1 2 3 4 5; do
    curl -s -m 2 -H "Authorization: Bearer $key" "$API/v1/me" | grep -Eq "\"host\": ?\"$api_host\"" && ok=$((ok + 1))
  done
  [[ $ok == 5 ]] && break
  sleep 1
done
[[ $ok == 5 ]] || fail "GET /v1/me through the Service still names another live channel host"
DATABASE_URL="$DB" "$SB" admin add-number --account "$acct" --number "020 7946 0555" >/dev/null
RECV_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 - "$RECV_PORT" "$RUN/received" <<'PY' &
import http.server, sys
port, out = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(out, "ab") as f:
            f.write(body + b"\n")
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
RECV_PID=$!
"$SB" listen --api-base "$API/v1" --key "$key" --config-dir "$RUN/listen" \
  --forward-to "http://127.0.0.1:$RECV_PORT/hooks" >"$RUN/listen.log" 2>&1 &
LISTEN_PID=$!
trap 'kill $LISTEN_PID $RECV_PID 2>/dev/null; pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null 2>&1; rm -rf "$PGDIR"' EXIT
for _ in $(seq 120); do grep -q '^Ready' "$RUN/listen.log" && break; sleep 0.5; done
grep -q '^Ready' "$RUN/listen.log" || fail "switchboard listen did not subscribe: $(cat "$RUN/listen.log")"
PLATFORM="http://$(kubectl -n "$NS" get service switchboard-platform -o jsonpath='{.spec.clusterIP}'):8081"
receipt="$(curl -s -H "Authorization: Bearer $PLATFORM_TOKEN" -H 'Content-Type: application/json' -w '\n%{http_code}' \
  "$PLATFORM/platform/v1/calls" -d "{\"platform_ref\":\"e2e-live-1\",\"to\":\"020 7946 0555\",
  \"from\":\"+44 7700 900123\",\"disposition\":\"answered\",\"started_at\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",
  \"duration_seconds\":95,\"talk_seconds\":80}")"
[[ "$(tail -n 1 <<<"$receipt")" == 2* ]] || fail "POST /platform/v1/calls: $receipt"
call="$(sed '$d' <<<"$receipt" | jq -r '.call_public_id')"
for _ in $(seq 60); do grep -q "$call" "$RUN/received" 2>/dev/null && break; sleep 0.5; done
grep -q "$call" "$RUN/received" 2>/dev/null ||
  fail "no live event for call $call reached the receiver; listen: $(cat "$RUN/listen.log")"
grep -q '"call.ended"' "$RUN/received" || fail "the live event is not call.ended: $(cat "$RUN/received")"
log "PASS: realtime.enabled, and call.ended for $call arrived live through the Service"

# A rolling update under load: calls reported 20 a second and GET /v1/me once a second, through the
# Services for the whole `rollout restart`, each call's call.ended delivered over HTTPS to a
# receiver on the node. The receiver is on a private address with its own CA, which the
# deployed copy (only) is told to trust.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=e2e-receiver \
  -addext "subjectAltName=IP:$NODE_IP" -keyout "$RUN/receiver.key" -out "$RUN/receiver.pem" 2>/dev/null
kubectl -n "$NS" create configmap e2e-webhook-ca --from-file=ca.pem="$RUN/receiver.pem" >/dev/null
kubectl -n "$NS" patch deployment switchboard-controller-manager --type=json -p '[
  {"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--webhook-allow-private-targets"},
  {"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--webhook-ca-file=/etc/e2e-webhook-ca/ca.pem"},
  {"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"e2e-webhook-ca","configMap":{"name":"e2e-webhook-ca"}}},
  {"op":"add","path":"/spec/template/spec/containers/0/volumeMounts/-","value":{"name":"e2e-webhook-ca","mountPath":"/etc/e2e-webhook-ca"}}]' >/dev/null
kubectl -n "$NS" rollout status deployment/switchboard-controller-manager --timeout=240s >&2 ||
  fail "the Deployment did not roll out with the receiver's CA"
settle
HOOK_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# kube-proxy may route to a replaced pod's address a moment longer: ask again.
for _ in $(seq 60); do
  endpoint="$(curl -s -m 10 -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -w '\n%{http_code}' "$API/v1/webhooks" \
    -d "{\"name\":\"rollout\",\"url\":\"https://$NODE_IP:$HOOK_PORT/hooks\",\"events\":[\"call.ended\"]}" || true)"
  [[ "$(tail -n 1 <<<"$endpoint")" == 201 ]] && break
  sleep 0.5
done
[[ "$(tail -n 1 <<<"$endpoint")" == 201 ]] || fail "POST /v1/webhooks: $endpoint"
rm -f "$RUN/load.stop"
python3 "$ROOT/hack/node/rollout_load.py" "$NODE_IP" "$HOOK_PORT" "$RUN/receiver.pem" "$RUN/receiver.key" \
  "$PLATFORM" "$PLATFORM_TOKEN" "$API" "$key" "020 7946 0555" "$RUN/load.stop" "$RUN/load.json" &
LOAD_PID=$!
sleep 5
t0="$(date +%s.%N)"
kubectl -n "$NS" rollout restart deployment/switchboard-controller-manager >/dev/null
kubectl -n "$NS" rollout status deployment/switchboard-controller-manager --timeout=300s >/dev/null ||
  fail "the rollout restart did not complete"
t1="$(date +%s.%N)"
sleep 5
touch "$RUN/load.stop"
wait "$LOAD_PID" || fail "the load generator failed"
log "rollout under load: $(cat "$RUN/load.json")"
# What explains a slow delivery, kept in $RUN after the node stops: the pods' logs, and the
# attempts and history of the deliveries that took more than one attempt.
mkdir -p "$RUN/rollout"
cp -r /var/log/pods/${NS}_switchboard-controller-manager-* "$RUN/rollout/" 2>/dev/null || true
psql -h "$NODE_IP" -p "$PGPORT" -U postgres -d switchboard -qAF $'\t' -c \
  "select a.created_at, a.attempt, a.response_code, a.error, a.duration_ms, a.next_attempt_at, a.delivery_name, e.body::text
   from webhook_delivery_attempts a join events e on e.id = a.event_id order by a.created_at" >"$RUN/rollout/attempts.tsv" || true
psql -h "$NODE_IP" -p "$PGPORT" -U postgres -d switchboard -qAF $'\t' -c \
  "select h.created_at, h.finished_at, h.status, h.attempts, h.response_code, h.last_error, h.delivery_name, e.claims, e.dispatched_at
   from webhook_delivery_history h join events e on e.id = h.event_id
   where h.attempts > 1 or h.finished_at - h.created_at > interval '2 seconds' or e.claims > 1 order by h.created_at" >"$RUN/rollout/history.tsv" || true
rollout_s="$(python3 -c "print(round($t1 - $t0, 1))")"
log "rollout restart to all pods ready: ${rollout_s}s"
jq -e '.reported > 0 and .lost == 0 and .duplicates == 0' "$RUN/load.json" >/dev/null ||
  fail "events lost or delivered twice in the rollout"
jq -e '[.answers[] | to_entries[] | select((.key | test("^(2..|503)$")) | not)] | length == 0' "$RUN/load.json" >/dev/null ||
  fail "answers other than 2xx and 503 in the rollout"
jq -e '.p99_delay_s <= 2' "$RUN/load.json" >/dev/null ||
  fail "p99 delivery delay in the rollout over 2 s (slow deliveries and their attempts: $RUN/rollout)"
log "PASS: a rollout restart under load lost no event, delivered none twice, answered only 2xx/503, p99 delay $(jq .p99_delay_s "$RUN/load.json")s"

# A drain of the node (eviction API) under the PodDisruptionBudget (minAvailable: 1): the
# first pod is evicted, its replacement cannot be scheduled on the cordoned node, and the
# second pod's eviction is refused while it is the only one available, so the drain times
# out and the API keeps serving through the Service.
settle
t0="$(date +%s.%N)"
drain_status=0
kubectl drain node --ignore-daemonsets --delete-emptydir-data --timeout=45s >"$RUN/drain.log" 2>&1 || drain_status=$?
[[ $drain_status != 0 ]] || fail "kubectl drain evicted both pods despite the PodDisruptionBudget: $(cat "$RUN/drain.log")"
grep -q "violate the pod's disruption budget" "$RUN/drain.log" ||
  fail "kubectl drain failed, but not on the PodDisruptionBudget: $(cat "$RUN/drain.log")"
running="$(kubectl -n "$NS" get pods -l control-plane=controller-manager -o json |
  jq '[.items[] | select(.metadata.deletionTimestamp == null and .status.phase == "Running")] | length')"
pending="$(kubectl -n "$NS" get pods -l control-plane=controller-manager --field-selector=status.phase=Pending -o name)"
[[ "$running" == 1 && -n "$pending" ]] || fail "during the drain: $running pods running, pending: '$pending', want 1 and the replacement"
last="$(kubectl -n "$NS" get pods -l control-plane=controller-manager --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')"
# The eviction API itself answers 429 for the last available pod.
evict_out="$(kubectl create --raw "/api/v1/namespaces/$NS/pods/$last/eviction" -f - 2>&1 <<JSON || true
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "$last", "namespace": "$NS"}}
JSON
)"
grep -q "TooManyRequests" <<<"$evict_out" || fail "evicting the last available pod $last: $evict_out, want 429 TooManyRequests"
code="$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$API/v1/me")"
[[ "$code" == 200 ]] || fail "GET /v1/me through the Service during the drain: $code"
t1="$(date +%s.%N)"
kubectl uncordon node >/dev/null
kubectl -n "$NS" rollout status deployment/switchboard-controller-manager --timeout=180s >/dev/null ||
  fail "both pods were not ready again after uncordon"
t2="$(date +%s.%N)"
log "PASS: kubectl drain refused the second eviction (429, PodDisruptionBudget) and timed out after $(python3 -c "print(round($t1 - $t0, 1))")s; the API served; both pods ready $(python3 -c "print(round($t2 - $t1, 1))")s after uncordon"

# Leader failover: the leader's container is killed with SIGKILL (no Lease release); the
# other pod takes the Lease once it expires. client-go tries every retry period with a
# jitter of up to 1.2 of it (2-4.4 s), and counts a Lease expired a lease duration after it
# saw the last renewal, so takeover takes at most 4.4 + 15 + 4.4 s with the defaults.
settle
LEASE=switchboard-controller-manager.switchboard.dev
holder() { kubectl -n "$NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}'; }
for _ in $(seq 60); do [[ -n "$(holder)" ]] && break; sleep 0.5; done
old_holder="$(holder)"
leader_pod="${old_holder%%_*}"
[[ -n "$leader_pod" ]] || fail "no pod holds the Lease $LEASE"
cid="$(kubectl -n "$NS" get pod "$leader_pod" -o jsonpath='{.status.containerStatuses[0].containerID}')"
cid="${cid#containerd://}"
t0="$(date +%s.%N)"
ctr --address "$RUN/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$cid" >/dev/null
new_holder=""
for _ in $(seq 300); do
  h="$(holder)"
  if [[ -n "$h" && "$h" != "$old_holder" ]]; then
    new_holder="$h"
    break
  fi
  sleep 0.1
done
t1="$(date +%s.%N)"
[[ -n "$new_holder" ]] || fail "no other holder took the Lease after the leader $leader_pod was killed"
failover_s="$(python3 -c "print(round($t1 - $t0, 1))")"
log "leader $leader_pod killed (SIGKILL); ${new_holder%%_*} took the Lease after ${failover_s}s"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 <= 23.8 else 1)" ||
  fail "leader failover took ${failover_s}s, over lease duration + two jittered retry periods (23.8 s)"
for _ in $(seq 120); do
  [[ "$(kubectl -n "$NS" get pod "$leader_pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')" -ge 1 ]] && break
  sleep 0.5
done
kubectl -n "$NS" wait --for=condition=Ready "pod/$leader_pod" --timeout=120s >/dev/null ||
  fail "the killed leader's container was not restarted and ready again"
log "PASS: leader failover after SIGKILL in ${failover_s}s"
