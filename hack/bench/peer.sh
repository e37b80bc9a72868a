#!/usr/bin/env bash
# Switchboard and Convoy side by side, one after the other in one session, same harness
# (internal/benchkit) and same cases: BenchmarkWebhookEndToEnd (controllers), then
# BenchmarkConvoyEndToEnd (internal/benchpeer), at the same BENCH_EVENTS (default 2000).
# Prints both runs, the load average around each, and a table with the ratio per case.
#
#   CONVOY_SRC=/path/to/convoy make bench-peer        # builds Convoy once (hack/bench/convoy.sh)
#   CONVOY_BIN=/path/to/convoy make bench-peer        # a binary built before
#
# Run it under the shared benchmark lock: flock /tmp/switchboard-bench.lock make bench-peer.
# BENCH_OUT=dir keeps the raw outputs (default: a temporary directory, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."

export BENCH_EVENTS="${BENCH_EVENTS:-2000}"
if [[ -z "${CONVOY_BIN:-}" ]]; then
  [[ -n "${CONVOY_SRC:-}" ]] || { echo "bench-peer: set CONVOY_SRC (a checkout of github.com/frain-dev/convoy) or CONVOY_BIN" >&2; exit 2; }
  CONVOY_BIN=$(hack/bench/convoy.sh)
fi
export CONVOY_BIN
# With CONVOY_BIN only, convoy.sh still installs redis-server (before it needs CONVOY_SRC).
command -v redis-server >/dev/null || hack/bench/convoy.sh >/dev/null 2>&1 || true
out="${BENCH_OUT:-$(mktemp -d /tmp/bench-peer.XXXXXX)}"
mkdir -p "$out"
assets="$(hack/envtest-binaries.sh)"

echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); BENCH_EVENTS=$BENCH_EVENTS"
echo "convoy: $CONVOY_BIN"
echo "load before Switchboard: $(uptime)"
KUBEBUILDER_ASSETS="$assets" go test ./controllers/ -run '^$' -bench '^BenchmarkWebhookEndToEnd$' -benchtime 1x -timeout 30m \
  | tee "$out/switchboard.txt"
echo "load after Switchboard, before Convoy: $(uptime)"
go test ./internal/benchpeer/ -run '^$' -bench '^BenchmarkConvoyEndToEnd$' -benchtime 1x -timeout 30m | tee "$out/convoy.txt"
echo "load after Convoy: $(uptime)"

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

echo
echo "| Case (BENCH_EVENTS=$BENCH_EVENTS) | Switchboard | Convoy | Switchboard ÷ Convoy (deliveries/s) |"
echo "|---|---|---|---|"
# In the cases' order; the ratio is of deliveries/s.
awk 'NR == FNR { c[$1] = $0; next } $1 in c { split(c[$1], x, " ")
  printf "| %s | %.0f deliveries/s, p50 %s ms, p99 %s ms, CPU %.2f ms/delivery | %.0f deliveries/s, p50 %s ms, p99 %s ms, CPU %.2f ms/delivery | %.2f× |\n",
    $1, $2, $3, $4, $5, x[2], x[3], x[4], x[5], (x[2] > 0 ? $2 / x[2] : 0)
}' <(metrics "$out/convoy.txt") <(metrics "$out/switchboard.txt")
echo
echo "CPU per delivery by process, Switchboard:"
cpu "$out/switchboard.txt" | sed 's/^/  /'
echo "CPU per delivery by process, Convoy:"
cpu "$out/convoy.txt" | sed 's/^/  /'
echo "raw outputs: $out"
