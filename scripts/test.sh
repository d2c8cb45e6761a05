#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds (Release, into build/) and runs
# every test with ctest. With --sanitize, also builds with ASan + UBSan (into
# build-asan/) and runs the suite again there (only the tests matching the
# regex HL_SANITIZE_TESTS when that is set). With --clang, also builds with
# clang (into build-clang/, warnings are errors there) and runs the unit tests,
# the fuzz harness smoke runs and a few end-to-end integration tests with it.
# With --mpich, also builds against MPICH (into build-mpich/) and runs the
# whole integration suite and the conformance corpora there; with
# --mpich-subset only the MPI-facing integration tests (HL_MPICH_TESTS, a
# ctest regex, overrides both).
# With --aarch64, also cross-compiles for aarch64 (into build-aarch64/) and
# runs the unit suites and HL_AARCH64_TESTS under qemu-user
# (scripts/test_aarch64.sh, docs/AARCH64.md).
#   ./scripts/test.sh [--sanitize] [--clang] [--mpich|--mpich-subset] [--aarch64] [extra ctest options]
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
    --mpich-subset) mpich=2 ;;
    --aarch64) aarch64=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
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
if [ "$mpich" != 0 ]; then
  # The same code against MPICH (Hydra, its PMI, UCX, its collectives): the
  # whole integration suite, the network-namespace clusters included (the
  # launcher's watchdog stands in for the keepalive Hydra lacks), and the
  # conformance corpora. --mpich-subset keeps the tests where the MPI
  # implementation shows (launching and its flags, collectives through MPI
  # and shared memory, channels, MPMD, hangs, failures, binding, Slurm,
  # traces), for a quick check. Measured: the 82 entries (69 integration, 13
  # conformance) in 30 min at -j2 on a 2-core VM that other jobs held at load
  # average 15-35 (3100 s of test time; Open MPI's same entries: about 900 s).
  # MPICH 4.0.2 (ch4:ucx) polls without ever yielding, which costs most where
  # ranks outnumber cores (collectives/shm/README.md); the runtime's own
  # blocking MPI calls wait politely then (collectives/mpi_polite.h), MPICH's
  # MPI_Init and Hydra's wire-up still poll.
  mpich_cc=$(command -v mpicc.mpich || true)
  if [ -z "$mpich_cc" ]; then
    hl_log "--mpich: mpicc.mpich not found (Debian: apt install mpich libmpich-dev)"
    exit 1
  fi
  hl_build "$HL_MPICH_BUILD_DIR" Release -DMPI_C_COMPILER="$mpich_cc"
  mpich_subset='^integration\.(mpi_families|launcher|launcher_messages|collectives|collectives_backend|collectives_shm|collectives_tune|collective_reduce|collective_broadcast_root|int_wrap_reductions|shm_backend|mpi_comm_ranks|permute_forms|channels|stablehlo|stablehlo_jax|stablehlo_channels|debug_checks|debug_hangs|trace|global_shardings|checked_results|training_step|examples|cluster_local|cluster_slurm|cluster_netns|cluster_shm_netns)$'
  if [ "$mpich" = 2 ]; then
    mpich_tests=${HL_MPICH_TESTS:-$mpich_subset}
  else
    mpich_tests=${HL_MPICH_TESTS:-'^(integration|conformance)\.'}
  fi
  hl_log "ctest in $HL_MPICH_BUILD_DIR (MPICH): $mpich_tests"
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
