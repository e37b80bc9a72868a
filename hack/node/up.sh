#!/usr/bin/env bash
# A single-node Kubernetes on this machine, to run the image under a real kubelet: etcd and
# kube-apiserver of the envtest release (hack/envtest-binaries.sh), kubelet, kube-proxy,
# kube-controller-manager and kube-scheduler built from the Go module proxy
# (hack/node/binaries.sh), and Debian's containerd, runc and CNI plugins. It imports the image
# (hack/imagebuild, as docker.io/library/switchboard:node) and runs `switchboard --version` in
# a Pod.
#
#   hack/node/up.sh                 # then keeps running (kubeconfig printed) until Ctrl-C
#   hack/node/up.sh --check         # stops after the Pod has run
#   hack/node/up.sh --then CMD      # then runs CMD (make test-e2e: hack/node/e2e.sh) and stops
#
# Root only. What this machine needs beyond the defaults is in docs/operations.md
# ("A single node here").
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
RUN="${NODE_RUN_DIR:-$CACHE_ROOT/cluster/run}"
NODE_IP="${NODE_IP:-$(hostname -I | awk '{print $1}')}"
CHECK=false
THEN=""
case "${1:-}" in
--check) CHECK=true ;;
--then) THEN="${2:?--then needs a command}" ;;
esac
log() { echo "node: $*" >&2; }

[[ $(id -u) -eq 0 ]] || { log "needs root (containerd, runc, kubelet)"; exit 1; }
[[ -n "$NODE_IP" ]] || { log "no non-loopback address for the node (NODE_IP); kubelet refuses a loopback one"; exit 1; }
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
if ((${#need[@]})); then
  log "installing ${need[*]} with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
BIN="$("$ROOT/hack/node/binaries.sh")"
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS="$("$ROOT/hack/envtest-binaries.sh")"

pids=()        # etcd, kube-apiserver, kube-proxy, kubelet: stopped last to first
controllers=() # stopped first, so that no new pod replaces a deleted one
containerd_pid=""
ctr_() { ctr --address "$RUN/containerd.sock" -n k8s.io "$@"; }
cleanup() {
  set +e
  for p in "${controllers[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  # The kubelet stops the pods (and CNI releases their addresses) while it still runs.
  if [[ -s "$RUN/kubeconfig" ]]; then
    kubectl --kubeconfig "$RUN/kubeconfig" delete pods --all -A --grace-period=5 --timeout=90s >/dev/null 2>&1
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
  if [[ -n "$containerd_pid" ]]; then
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$t"; sleep 0.2; ctr_ tasks delete "$t"; done >/dev/null 2>&1
    kill "$containerd_pid" 2>/dev/null
    wait "$containerd_pid" 2>/dev/null
  fi
  while iptables -D FORWARD -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$GUARD" -j REJECT 2>/dev/null; do :; done
  while iptables -D OUTPUT -d "$SERVICE_CIDR" -m comment --comment "$GUARD" -j REJECT 2>/dev/null; do :; done
  # kube-proxy's iptables rules outlive it.
  [[ -x "${BIN:-}/kube-proxy" ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1
  # Pods' mounts and the kubelet's bind mount of its own directory.
  grep -o " $RUN/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Nothing the node runs may leave this machine: pods' packets to anything but other pods (the
# default route and masquerading of the bridge would send them out through the VM's gateway)
# and the host's packets to a Service address kube-proxy has not translated (yet) are
# rejected. Translated ones pass: DNAT happens before these filters.
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.0.0.0/24
GUARD="switchboard-node: stays on this machine"
iptables -I FORWARD -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$GUARD" -j REJECT
iptables -I OUTPUT -d "$SERVICE_CIDR" -m comment --comment "$GUARD" -j REJECT

rm -rf "$RUN"
mkdir -p "$RUN/cni" "$RUN/kubelet" "$RUN/containerd"
cd "$ROOT"

# containerd with its own root, state and socket; what differs from Debian's defaults is why
# a pod can start here at all.
containerd config default | sed \
  -e "s#^root = .*#root = \"$RUN/containerd/root\"#" \
  -e "s#^state = .*#state = \"$RUN/containerd/state\"#" \
  -e "/^\[grpc\]/,/^\[/ s#^  address = .*#  address = \"$RUN/containerd.sock\"#" \
  -e 's#bin_dir = "/opt/cni/bin"#bin_dir = "/usr/lib/cni"#' \
  -e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$RUN/cni\"#" \
  -e 's#sandbox_image = .*#sandbox_image = "localhost/pause:node"#' \
  -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' > "$RUN/containerd.toml"
grep -q "restrict_oom_score_adj = true" "$RUN/containerd.toml" || { log "containerd's default config changed"; exit 1; }
cat > "$RUN/cni/10-node.conflist" <<'EOF'
{"cniVersion": "1.0.0", "name": "node", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
EOF
containerd --config "$RUN/containerd.toml" >"$RUN/containerd.log" 2>&1 &
containerd_pid=$!
for _ in $(seq 50); do [[ -S "$RUN/containerd.sock" ]] && break; sleep 0.2; done
log "building and importing the pause and switchboard images"
CGO_ENABLED=0 go build -o "$RUN/pause" ./hack/node/pause
"$RUN/pause" -image "$RUN/pause-layout"
tar -C "$RUN/pause-layout" -cf "$RUN/pause.tar" .
ctr_ images import "$RUN/pause.tar" >&2
go run ./hack/imagebuild -name switchboard:node -version node -o "$RUN/switchboard.tar" >&2
ctr_ images import "$RUN/switchboard.tar" >&2

# kube-apiserver and etcd of the envtest release, serving the pods: on the node's address, with
# a certificate for the kubernetes Service's address, and the ServiceAccount admission plugin
# on (envtest turns it off, and pods would get no token).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PKI="$RUN/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=node-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$PKI/apiserver.key" -out "$PKI/apiserver.csr" 2>/dev/null
printf 'subjectAltName=IP:%s,IP:127.0.0.1,IP:10.0.0.1,DNS:kubernetes.default.svc,DNS:localhost\n' "$NODE_IP" >"$PKI/san.ext"
openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
  -extfile "$PKI/san.ext" -out "$PKI/apiserver.crt" 2>/dev/null
openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
TOKEN="$(openssl rand -hex 32)"
echo "$TOKEN,node-admin,node-admin,\"system:masters\"" >"$PKI/tokens.csv"
cp "$PKI/ca.crt" "$RUN/ca.crt"
ETCD_PORT="$(free_port)"
ETCD_PEER="$(free_port)"
KAS_PORT="$(free_port)"
"$KUBEBUILDER_ASSETS/etcd" --data-dir "$RUN/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "default=http://127.0.0.1:$ETCD_PEER" \
  >"$RUN/etcd.log" 2>&1 &
pids+=($!)
"$KUBEBUILDER_ASSETS/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$KAS_PORT" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
  --token-auth-file "$PKI/tokens.csv" --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 --authorization-mode RBAC --allow-privileged=true \
  >"$RUN/kube-apiserver.log" 2>&1 &
pids+=($!)
cat >"$RUN/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: "https://$NODE_IP:$KAS_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: admin
  user: {token: "$TOKEN"}
contexts:
- name: node
  context: {cluster: node, user: admin}
current-context: node
EOF
export KUBECONFIG="$RUN/kubeconfig"
for _ in $(seq 240); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 0.5; done
kubectl get --raw /readyz >/dev/null || { log "kube-apiserver did not start:"; tail -5 "$RUN/kube-apiserver.log" >&2; exit 1; }

"$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" --authentication-kubeconfig "$KUBECONFIG" \
  --authorization-kubeconfig "$KUBECONFIG" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 \
  --root-ca-file "$RUN/ca.crt" --controllers '*,-nodeipam' >"$RUN/kube-controller-manager.log" 2>&1 &
controllers+=($!)
"$BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --authentication-kubeconfig "$KUBECONFIG" \
  --authorization-kubeconfig "$KUBECONFIG" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 \
  >"$RUN/kube-scheduler.log" 2>&1 &
controllers+=($!)
"$BIN/kube-proxy" --kubeconfig "$KUBECONFIG" --hostname-override node --proxy-mode iptables \
  --cluster-cidr 10.88.0.0/16 --conntrack-max-per-core 0 --metrics-bind-address "127.0.0.1:$(free_port)" \
  --healthz-bind-address "127.0.0.1:$(free_port)" >"$RUN/kube-proxy.log" 2>&1 &
pids+=($!)

cat > "$RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Kubernetes 1.35 and later refuse cgroup v1 unless told otherwise; this machine has only v1.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$RUN/containerd.sock
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: 11250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 11248
failSwapOn: false
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
"$BIN/kubelet" --config "$RUN/kubelet.yaml" --kubeconfig "$KUBECONFIG" --root-dir "$RUN/kubelet" \
  --hostname-override node --node-ip "$NODE_IP" >"$RUN/kubelet.log" 2>&1 &
pids+=($!)
kubectl wait --for=create node/node --timeout=120s >&2
kubectl wait --for=condition=Ready node/node --timeout=120s >&2

log "running switchboard --version in a Pod"
kubectl run switchboard-version --image=docker.io/library/switchboard:node --restart=Never -- --version >&2
kubectl wait --for=jsonpath='{.status.phase}'=Succeeded pod/switchboard-version --timeout=180s >&2
uid="$(kubectl get pod switchboard-version -o jsonpath='{.metadata.uid}')"
# kubectl logs would need the kubelet on the node address; it listens on loopback only.
out="$(cat /var/log/pods/default_switchboard-version_"$uid"/switchboard-version/0.log)"
echo "$out"
[[ "$out" == *"stdout F switchboard version node" ]] || { log "unexpected output of the Pod"; exit 1; }

if [[ -n "$THEN" ]]; then
  export RUN NODE_IP
  log "running $THEN"
  status=0
  "$THEN" || status=$?
  exit "$status"
fi
if $CHECK; then
  log "the image ran under the kubelet; stopping"
  exit 0
fi
log "node is up. KUBECONFIG=$KUBECONFIG; images: ctr --address $RUN/containerd.sock -n k8s.io images ls. Ctrl-C stops it."
wait "${pids[0]}"
