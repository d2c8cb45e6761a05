#!/usr/bin/env bash
# Builds bench_collectives (Release) and runs it on 2 and 8 MPI processes:
# our collectives (communicator interface and a one-op module run by the executor)
# vs the raw MPI call on the same buffers. Usage:
#   bench/run_collectives.sh [BUILD_DIR] [-- bench options, e.g. --max-bytes 1048576]
# Without bench options it runs the settings of collectives/README.md's table
# (--budget 2 --fresh-results).
# The shm columns time the node shared-memory layer (collectives/shm/) in its
# auto mode; add "--shm-mode shm" to force it at every size.
# Environment: NPS="2 8" (process counts), JOBS=2 (build parallelism).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
[[ $# -gt 0 ]] && shift
[[ ${1:-} == "--" ]] && shift
[[ $# -eq 0 ]] && set -- --budget 2 --fresh-results
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" --target bench_collectives -j"${JOBS:-2}" > /dev/null
mpi_args=(--oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi_args+=(--allow-run-as-root)
for np in ${NPS:-2 8}; do
  echo "## mpiexec -n $np ($(nproc) cores)"
  timeout 900 mpiexec "${mpi_args[@]}" -n "$np" "$build/bench/bench_collectives" "$@"
  echo
done
