#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds (Release, into build/) and runs
# every test with ctest. With --sanitize, also builds with ASan + UBSan (into
# build-asan/) and runs the suite again there (only the tests matching the
# regex HL_SANITIZE_TESTS when that is set). With --clang, also builds with
# clang (into build-clang/, warnings are errors there) and runs the unit tests,
# the fuzz harness smoke runs and a few end-to-end integration tests with it.
# With --mpich, also builds against MPICH (into build-mpich/) and runs the
# MPI-facing integration tests there (HL_MPICH_TESTS, a ctest regex).
# With --aarch64, also cross-compiles for aarch64 (into build-aarch64/) and
# runs the unit suites and HL_AARCH64_TESTS under qemu-user
# (scripts/test_aarch64.sh, docs/AARCH64.md).
#   ./scripts/test.sh [--sanitize] [--clang] [--mpich] [--aarch64] [extra ctest options, e.g. -R integration]
set -euo pipefail
. "$(dirname "$0")/common.sh"

sanitize=0
clang=0
mpich=0
aarch64=0
ctest_args=()
for a in "$@"; do
  case $a in
    --sanitize) sanitize=1 ;;
    --clang) clang=1 ;;
    --mpich) mpich=1 ;;
    --aarch64) aarch64=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) ctest_args+=("$a") ;;
  esac
done

# One test may run at most this long (the slowest integration test takes
# well under a minute on 2 cores).
timeout_s=${HL_TEST_TIMEOUT:-600}

run_suite() {
  local dir=$1
  (cd "$dir" && ctest --output-on-failure --timeout "$timeout_s" -j "$(hl_jobs)" \
     ${ctest_args[@]+"${ctest_args[@]}"})
}

hl_install_deps
hl_build "$HL_BUILD_DIR" Release
rc=0
hl_log "ctest in $HL_BUILD_DIR"
run_suite "$HL_BUILD_DIR" || rc=1

if [ "$sanitize" = 1 ]; then
  hl_build "$HL_ASAN_BUILD_DIR" Debug -DHL_SANITIZE=ON
  # Open MPI and the libraries under it keep allocations until exit; only
  # this project's leaks count. Their frames lack frame pointers, so LSan
  # needs the slow unwinder to see them and apply the suppressions, and MCA
  # components stay loaded so their frames keep names.
  export LSAN_OPTIONS="suppressions=$HL_ROOT/scripts/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  export OMPI_MCA_mca_base_component_disable_dlclose=1
  hl_log "ctest in $HL_ASAN_BUILD_DIR (AddressSanitizer + UndefinedBehaviorSanitizer)"
  if [ -n "${HL_SANITIZE_TESTS:-}" ]; then
    (cd "$HL_ASAN_BUILD_DIR" && ctest --output-on-failure --timeout "$timeout_s" \
       -j "$(hl_jobs)" -R "$HL_SANITIZE_TESTS") || rc=1
  else
    run_suite "$HL_ASAN_BUILD_DIR" || rc=1
  fi
fi
if [ "$clang" = 1 ]; then
  # The gcc run above covers every test; with clang the point is the compiler:
  # every target must build warning-free, and the unit suites (every source
  # file's own tests), the fuzz smoke runs and a few whole-launcher tests
  # must pass. The rest of the integration suite would double CI time for
  # code paths the unit suites already run.
  CC=clang hl_build "$HL_CLANG_BUILD_DIR" Release -DHL_WERROR=ON
  hl_log "ctest in $HL_CLANG_BUILD_DIR (clang): unit, fuzz smoke, selected integration"
  (cd "$HL_CLANG_BUILD_DIR" && ctest --output-on-failure --timeout "$timeout_s" -j "$(hl_jobs)" \
     -R '^(unit|fuzz)\.|^integration\.(hostile_inputs|launcher|examples)$') || rc=1
fi
if [ "$mpich" = 1 ]; then
  # The same code against MPICH (Hydra, its PMI, its collectives): every test
  # where the MPI implementation shows (launching and its flags, collectives
  # through MPI and shared memory, channels, MPMD, hangs, failures, binding,
  # Slurm, traces); the kernel corpora run the same code whichever MPI moves
  # the data, and the gcc run above covers them. The network-namespace
  # clusters (cluster_netns, cluster_shm_netns) are left out: they pass under
  # Hydra on a quiet machine, but MPICH polls without yielding (Open MPI's
  # runs there set mpi_yield_when_idle) and starves the bridge's softirq on 2
  # busy cores, and Hydra has no keepalive for the cut-link case (Open MPI's
  # oob_tcp_keepalive). Only the binaries those tests run are built.
  mpich_cc=$(command -v mpicc.mpich || true)
  if [ -z "$mpich_cc" ]; then
    hl_log "--mpich: mpicc.mpich not found (Debian: apt install mpich libmpich-dev)"
    exit 1
  fi
  hl_log "configuring $HL_MPICH_BUILD_DIR (MPICH: $mpich_cc)"
  cmake -S "$HL_ROOT" -B "$HL_MPICH_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER="$mpich_cc" >/dev/null
  hl_log "building $HL_MPICH_BUILD_DIR"
  cmake --build "$HL_MPICH_BUILD_DIR" -j "$(hl_jobs)" --target hlo-launch hlo-convert \
    test_mpi_collectives test_mpi_comm test_mpi_reduce test_shm_collectives
  mpich_tests=${HL_MPICH_TESTS:-'^integration\.(mpi_families|launcher|launcher_messages|collectives|collectives_backend|collectives_shm|collectives_tune|collective_reduce|collective_broadcast_root|int_wrap_reductions|shm_backend|mpi_comm_ranks|permute_forms|channels|stablehlo|stablehlo_jax|stablehlo_channels|debug_checks|debug_hangs|trace|global_shardings|checked_results|training_step|examples|cluster_local|cluster_slurm)$'}
  hl_log "ctest in $HL_MPICH_BUILD_DIR (MPICH): MPI-facing integration tests"
  # A failed entry is run once more (and both runs are shown): MPICH's ranks
  # busy-poll, and 8 of them on 2 cores beside another test lost a rank's
  # error line once in about ten runs of integration.launcher (Hydra ending
  # the job first); a real failure fails twice.
  (cd "$HL_MPICH_BUILD_DIR" && ctest --output-on-failure --timeout "$timeout_s" -j "$(hl_jobs)" \
     --repeat until-pass:2 -R "$mpich_tests") || rc=1
fi
if [ "$aarch64" = 1 ]; then
  "$HL_ROOT/scripts/test_aarch64.sh" || rc=1
fi
exit $rc
