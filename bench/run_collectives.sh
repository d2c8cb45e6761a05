#!/usr/bin/env bash
# Builds bench_collectives (Release) and runs it on 2 and 8 MPI processes, under
# Open MPI and under MPICH: our collectives (communicator interface and a one-op
# module run by the executor) vs that MPI's raw call on the same buffers. Usage:
#   bench/run_collectives.sh [BUILD_DIR] [-- bench options, e.g. --max-bytes 1048576]
# Without bench options it runs the settings of collectives/README.md's table
# (--budget 2 --fresh-results).
# The shm columns time the node shared-memory layer (collectives/shm/) in its
# auto mode; add "--shm-mode shm" to force it at every size.
# Environment: NPS="2 8" (process counts), JOBS=2 (build parallelism),
# MPIS="openmpi mpich" (the MPI implementations; default: Open MPI, and MPICH
# where mpicc.mpich is installed). Each gets its own build (BUILD_DIR, and
# BUILD_DIR-mpich for MPICH) and its own starter; within a process count the
# sections follow each other, so raw Open MPI, raw MPICH and ours on each come
# from the same run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
[[ $# -gt 0 ]] && shift
[[ ${1:-} == "--" ]] && shift
[[ $# -eq 0 ]] && set -- --budget 2 --fresh-results
if [[ -z ${MPIS:-} ]]; then
  MPIS=openmpi
  command -v mpicc.mpich > /dev/null && MPIS="openmpi mpich"
fi
for mpi in $MPIS; do
  case $mpi in
    openmpi) dir=$build; cc=$(command -v mpicc.openmpi || command -v mpicc) ;;
    mpich) dir=$build-mpich; cc=$(command -v mpicc.mpich) ;;
    *) echo "MPIS: openmpi or mpich, got '$mpi'" >&2; exit 2 ;;
  esac
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMPI_C_COMPILER="$cc" > /dev/null
  cmake --build "$dir" --target bench_collectives -j"${JOBS:-2}" > /dev/null
done
ompi_args=(--oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && ompi_args+=(--allow-run-as-root)
for np in ${NPS:-2 8}; do
  for mpi in $MPIS; do
    if [[ $mpi == mpich ]]; then
      starter=(mpiexec.hydra -bind-to none) dir=$build-mpich name="MPICH ($(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p'))"
    else
      starter=(mpiexec "${ompi_args[@]}") dir=$build name="Open MPI ($(mpiexec --version 2>/dev/null | head -1))"
    fi
    echo "## $name: ${starter[0]} -n $np ($(nproc) cores)"
    timeout 900 "${starter[@]}" -n "$np" "$dir/bench/bench_collectives" "$@"
    echo
  done
done
