#!/usr/bin/env bash
# Switchboard and its peers side by side, one after the other in one session, same harness
# (test/support/benchkit) and same cases: BenchmarkWebhookEndToEnd (controllers), then
# BenchmarkConvoyEndToEnd, BenchmarkOutpostEndToEnd and BenchmarkSvixEndToEnd
# (test/bench/peers), all at the same
# BENCH_EVENTS (default 2000). Prints every run, the load average around each, and per peer a
# table with the ratios per case. A peer whose variables are unset is skipped (said so).
#
#   CONVOY_BIN=/path/to/convoy OUTPOST_BIN=/path/to/outpost SVIX_BIN=/path/to/svix-server make bench-peer
#
# Each peer is a binary built beforehand from its own source, outside this repository: its
# code, and any recipe that builds it, stay out of it (docs/benchmarks.md, "Peers side by
# side", names the commit each figure used). OUTPOST_BIN is the `outpost` CLI, with
# `outpost-server` next to it. The script installs what the peers need to run from Debian's
# packages (redis-server; rabbitmq-server for Outpost) when missing.
#
# Run it under the shared benchmark lock: flock /tmp/switchboard-bench.lock make bench-peer.
# BENCH_OUT=dir keeps the raw outputs (default: a temporary directory, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."

export BENCH_EVENTS="${BENCH_EVENTS:-2000}"

# peer name, its binary's variable, its benchmark, where its source is, the Debian packages it
# runs on (comma-separated)
peers=(
  "Convoy CONVOY_BIN BenchmarkConvoyEndToEnd github.com/frain-dev/convoy redis-server"
  "Outpost OUTPOST_BIN BenchmarkOutpostEndToEnd github.com/hookdeck/outpost redis-server,rabbitmq-server"
  "Svix SVIX_BIN BenchmarkSvixEndToEnd github.com/svix/svix-webhooks redis-server"
)

# install PACKAGE...: the Debian packages among them that are missing.
install() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  echo "installing ${missing[*]} (Debian packages)" >&2
  local sudo_=""
  [[ $(id -u) -ne 0 ]] && sudo_=sudo
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2 ||
    { $sudo_ apt-get update >&2 && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2; }
}

run=()
for p in "${peers[@]}"; do
  read -r name bin _ repo packages <<<"$p"
  if [[ -z "${!bin:-}" ]]; then
    echo "$name skipped: set $bin (built from $repo)"
    continue
  fi
  install ${packages//,/ }
  export "${bin?}"
  run+=("$p")
done
if ((${#run[@]} == 0)); then
  echo "bench-peer: no peer to measure: set CONVOY_BIN, OUTPOST_BIN or SVIX_BIN" >&2
  exit 2
fi
out="${BENCH_OUT:-$(mktemp -d /tmp/bench-peer.XXXXXX)}"
mkdir -p "$out"
assets="$(hack/envtest-binaries.sh)"

echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); BENCH_EVENTS=$BENCH_EVENTS"
for p in "${run[@]}"; do
  read -r name bin _ <<<"$p"
  echo "$name: ${!bin}"
done
echo "load before Switchboard: $(uptime)"
KUBEBUILDER_ASSETS="$assets" go test ./controllers/ -run '^$' -bench '^BenchmarkWebhookEndToEnd$' -benchtime 1x -timeout 30m \
  | tee "$out/switchboard.txt"
prev=Switchboard
for p in "${run[@]}"; do
  read -r name _ bench _ <<<"$p"
  echo "load after $prev, before $name: $(uptime)"
  go test ./test/bench/peers/ -run '^$' -bench "^$bench\$" -benchtime 1x -timeout 30m | tee "$out/${name,,}.txt" ||
    echo "$name: the benchmark failed (its output is above); its cases show no result"
  prev=$name
done
echo "load after $prev: $(uptime)"

# metrics FILE: one line per case: name deliveries/s p50-ms p99-ms cpu-ms/delivery
metrics() {
  awk '/^Benchmark[A-Za-z]+EndToEnd\// {
    name = $1; sub(/^[^\/]*\//, "", name); sub(/-[0-9]+$/, "", name)
    for (i = 2; i < NF; i++) v[$(i+1)] = $i
    printf "%s %s %s %s %s\n", name, v["deliveries/s"], v["p50-ms"], v["p99-ms"], v["cpu-ms/delivery"]
  }' "$1"
}
# cpu FILE: one line per case: name and the CPU per delivery of every process
cpu() {
  awk '/^  CPU per delivery:/ { line = $0; sub(/^  CPU per delivery: /, "", line) }
    /^Benchmark[A-Za-z]+EndToEnd\// { name = $1; sub(/^[^\/]*\//, "", name); sub(/-[0-9]+$/, "", name); print name ": " line }' "$1"
}

for p in "${run[@]}"; do
  read -r name _ <<<"$p"
  echo
  echo "| Case (BENCH_EVENTS=$BENCH_EVENTS) | Switchboard | $name | Switchboard ÷ $name (deliveries/s) | $name p99 ÷ Switchboard p99 |"
  echo "|---|---|---|---|---|"
  # In the cases' order. A case missing from the peer's run (it failed) shows as such.
  awk 'FILENAME == ARGV[1] { c[$1] = $0; next } {
    if (!($1 in c)) { printf "| %s | %.0f deliveries/s, p99 %s ms | no result | | |\n", $1, $2, $4; next }
    split(c[$1], x, " ")
    printf "| %s | %.0f deliveries/s, p50 %s ms, p99 %s ms, CPU %.2f ms/delivery | %.0f deliveries/s, p50 %s ms, p99 %s ms, CPU %.2f ms/delivery | %.2f× | %.1f× |\n",
      $1, $2, $3, $4, $5, x[2], x[3], x[4], x[5], (x[2] > 0 ? $2 / x[2] : 0), ($4 > 0 ? x[4] / $4 : 0)
  }' <(metrics "$out/${name,,}.txt") <(metrics "$out/switchboard.txt")
done
echo
echo "CPU per delivery by process, Switchboard:"
cpu "$out/switchboard.txt" | sed 's/^/  /'
for p in "${run[@]}"; do
  read -r name _ <<<"$p"
  echo "CPU per delivery by process, $name:"
  cpu "$out/${name,,}.txt" | sed 's/^/  /'
done
echo "raw outputs: $out"
