#!/usr/bin/env bash
# Runs `go test` with the given arguments (a benchmark run), shows its output, keeps it in
# $SWITCHBOARD_CACHE/bench/, and turns it into a results file in BENCH_RESULTS_DIR (default
# docs/bench-results) with hack/benchresults: commit, dates, machine, load average before and
# after, and every figure with the command that produced it. `make bench` runs all benchmarks
# through it; a few run through it the same way:
#
#   BENCH_PARTIAL="what the run covers" hack/bench/go-bench.sh -p 1 -run '^$' \
#     -bench 'BenchmarkAuthenticateAndCount' -benchtime 1x ./internal/store
#
# Exits with go test's status, after writing the figures of the benchmarks that passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
raw_dir="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}/bench"
results="${BENCH_RESULTS_DIR:-docs/bench-results}"
[[ "$results" = /* ]] || results="$root/$results"
mkdir -p "$raw_dir"

# The command as typed: the benchmark knobs that are set, then go test and its arguments.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then printf '%s' "$1"; else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
command=""
[[ -n "${KUBEBUILDER_ASSETS:-}" ]] && command+='KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)" '
while IFS='=' read -r name value; do
  [[ -n "$value" ]] && command+="$name=$(quote "$value") "
done < <(env | grep -E '^(BENCH_[A-Z_]*|SWITCHBOARD_BENCH_[A-Z_]*|CHAOS_[A-Z_]*|PGCLUSTER_OPTIONS|GOMAXPROCS)=' | grep -v '^BENCH_\(PARTIAL\|RESULTS_DIR\)=' | sort)
command+="go test"
for a in "$@"; do command+=" $(quote "$a")"; done

commit="$(git rev-parse HEAD)"
dirty=false
git diff --quiet HEAD -- || dirty=true
started="$(date -u +%FT%TZ)"
load_before="$(cat /proc/loadavg)"
raw="$raw_dir/go-test-$(date -u +%Y%m%dT%H%M%SZ).txt"
echo "$command" >"$raw"
set +e
go test "$@" 2>&1 | tee -a "$raw"
status=${PIPESTATUS[0]}
set -e
finished="$(date -u +%FT%TZ)"
load_after="$(cat /proc/loadavg)"
(cd hack/benchresults && go run . convert -out "$results" -commit "$commit" -dirty="$dirty" \
  -started "$started" -finished "$finished" -load-before "$load_before" -load-after "$load_after" \
  -command "$command" -partial "${BENCH_PARTIAL:-}" -exit "$status" "$raw")
echo "go test output kept in $raw"
exit "$status"
