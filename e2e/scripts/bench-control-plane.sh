#!/usr/bin/env bash
# Setup C: kubetrain in both binding modes and its peers (stock batch/v1 Jobs, Kueue, and
# kube-scheduler binding pre-pinned pods), one after another on the same control plane
# binaries and the same kind of simulated nodes, at each size given. Every run appends its
# record to RECORDS; the side-by-side report of them all is printed at the end, and written
# into DOCS between its markers when DOCS is set. The reclaim run goes with the first size.
#
#   bench-control-plane.sh RECORDS [NODES:JOBS:GANG ...]
#
# Without sizes: KUBETRAIN_BENCH_NODES:KUBETRAIN_BENCH_JOBS:KUBETRAIN_BENCH_GANG, each
# defaulting to the quick size, 100:1000:1.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 RECORDS [NODES:JOBS:GANG ...]" >&2; exit 2; }
mkdir -p "$(dirname "$1")"
records=$(realpath "$1")
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] ||
  sizes=("${KUBETRAIN_BENCH_NODES:-100}:${KUBETRAIN_BENCH_JOBS:-1000}:${KUBETRAIN_BENCH_GANG:-1}")
cargo=${CARGO:-cargo}
# Release: the operator runs in the test process, and a debug build costs it about three
# times the CPU. One test at a time, so the systems never share the machine.
throughput() {
  "$cargo" test --release -p kubetrain-e2e --test throughput -- --ignored --nocapture --test-threads 1 "$@"
}

bash e2e/scripts/install-control-plane.sh >/dev/null
bash e2e/scripts/install-kueue.sh >/dev/null
rm -f "$records"
export KUBETRAIN_BENCH_RECORD=$records
first=1
for size in "${sizes[@]}"; do
  IFS=: read -r nodes jobs gang <<<"$size"
  export KUBETRAIN_BENCH_NODES=$nodes KUBETRAIN_BENCH_JOBS=$jobs KUBETRAIN_BENCH_GANG=${gang:-1}
  throughput submit_to_bound
  KUBETRAIN_BINDING=direct throughput submit_to_bound
  throughput stock_jobs pinned_pods kueue_jobs
  # A process of its own, last: the tests of one process share a control plane, and the
  # teardown of reclaim's 800 jobs (their namespace's pods deleted while that operator still
  # ran) landed in the next run's writes when the two shared one.
  if [[ $first == 1 ]]; then
    throughput reclaim_latency
    first=0
  fi
done
"$cargo" run --release -q -p kubetrain-e2e --bin kubetrain-bench-report -- "$records" \
  ${DOCS:+--docs "$DOCS"}
