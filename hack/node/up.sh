#!/usr/bin/env bash
# A single-node Kubernetes on this machine, to run the image under a real kubelet: the
# tests' kube-apiserver and etcd (hack/node/controlplane), kube-controller-manager,
# kube-scheduler and kubelet built from the Go module proxy (hack/node/binaries.sh), and
# Debian's containerd 1.6, runc and CNI plugins. It imports the image (hack/imagebuild, as
# docker.io/library/switchboard:node) and runs `switchboard --version` in a Pod.
#
#   hack/node/up.sh           # then keeps running (kubeconfig printed) until Ctrl-C
#   hack/node/up.sh --check   # stops after the Pod has run
#
# Root only. What it has to work around on this machine (docs/operations.md "A kubelet here"):
# cgroup v1 (kubelet: failCgroupV1=false), no CAP_SYS_RESOURCE in the bounding set (containerd:
# restrict_oom_score_adj), no registry (a pause image of its own), a loopback kube-apiserver.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE_ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
RUN="${NODE_RUN_DIR:-$CACHE_ROOT/cluster/run}"
NODE_IP="${NODE_IP:-$(hostname -I | awk '{print $1}')}"
CHECK=false
[[ "${1:-}" == "--check" ]] && CHECK=true
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

pids=()
cleanup() {
  set +e
  if [[ -s "$RUN/kubeconfig" ]]; then
    kubectl --kubeconfig "$RUN/kubeconfig" delete pods --all -A --timeout=60s >/dev/null 2>&1
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
  # Pods' mounts and the kubelet's bind mount of its own directory.
  grep -o " $RUN/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
pids+=($!)
for _ in $(seq 50); do [[ -S "$RUN/containerd.sock" ]] && break; sleep 0.2; done
ctr_() { ctr --address "$RUN/containerd.sock" -n k8s.io "$@"; }

log "building and importing the pause and switchboard images"
CGO_ENABLED=0 go build -o "$RUN/pause" ./hack/node/pause
"$RUN/pause" -image "$RUN/pause-layout"
tar -C "$RUN/pause-layout" -cf "$RUN/pause.tar" .
ctr_ images import "$RUN/pause.tar" >&2
go run ./hack/imagebuild -name switchboard:node -version node -o "$RUN/switchboard.tar" >&2
ctr_ images import "$RUN/switchboard.tar" >&2

# Built, not `go run`: go run does not pass SIGTERM on, and kube-apiserver would outlive it.
go build -o "$RUN/controlplane" ./hack/node/controlplane
"$RUN/controlplane" "$RUN" >"$RUN/controlplane.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do [[ -s "$RUN/kubeconfig" ]] && break; sleep 0.5; done
[[ -s "$RUN/kubeconfig" ]] || { log "the control plane did not start:"; tail -5 "$RUN/controlplane.log" >&2; exit 1; }
export KUBECONFIG="$RUN/kubeconfig"

"$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" --authentication-kubeconfig "$KUBECONFIG" \
  --authorization-kubeconfig "$KUBECONFIG" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 \
  --root-ca-file "$RUN/ca.crt" --controllers '*,-nodeipam' >"$RUN/kube-controller-manager.log" 2>&1 &
pids+=($!)
"$BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --authentication-kubeconfig "$KUBECONFIG" \
  --authorization-kubeconfig "$KUBECONFIG" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 \
  >"$RUN/kube-scheduler.log" 2>&1 &
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

if $CHECK; then
  log "the image ran under the kubelet; stopping"
  exit 0
fi
log "node is up. KUBECONFIG=$KUBECONFIG; images: ctr --address $RUN/containerd.sock -n k8s.io images ls. Ctrl-C stops it."
wait "${pids[0]}"
