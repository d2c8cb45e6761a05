#!/usr/bin/env bash
# Builds bench_collectives (Release) and runs it across simulated hosts
# (network namespaces, bench/collectives_netns.py): the shared-memory layer's
# hierarchical all-reduce (shared memory in each host, MPI across) against
# raw MPI over the same links. Usage:
#   bench/run_collectives_netns.sh [BUILD_DIR] [-- bench options]
# Without bench options: all-reduce at 1, 4 and 16 MiB, --budget 2
# --fresh-results, the layer in auto mode (hierarchical at these sizes).
# Environment: HOSTS="2" (host counts, e.g. "2 3"), RANKS_PER_HOST=2,
# BTL=self,vader,tcp (raw MPI's transports), JOBS=2 (build parallelism).
# PYTHON=/usr/bin/python3 (the tests' helpers import numpy).
# Needs root (namespaces); prints SKIP otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
[[ $# -gt 0 ]] && shift
[[ ${1:-} == "--" ]] && shift
[[ $# -eq 0 ]] && set -- --ops all-reduce --min-bytes 1048576 --max-bytes 16777216 \
  --budget 2 --fresh-results
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" --target bench_collectives -j"${JOBS:-2}" > /dev/null
for hosts in ${HOSTS:-2}; do
  "${PYTHON:-/usr/bin/python3}" "$root/bench/collectives_netns.py" --bench "$build/bench/bench_collectives" \
    --hosts "$hosts" --ranks-per-host "${RANKS_PER_HOST:-2}" --btl "${BTL:-self,vader,tcp}" \
    -- "$@"
  echo
done
