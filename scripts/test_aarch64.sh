#!/usr/bin/env bash
# aarch64 without an aarch64 machine: cross-compiles the tree with Debian's
# gcc-aarch64-linux-gnu against a sysroot of Debian's arm64 libraries
# (scripts/aarch64_sysroot.sh: downloaded and unpacked, nothing installed on
# the host) into build-aarch64/, and runs the tests under qemu-user: every
# unit suite, and the integration tests named by HL_AARCH64_TESTS (a ctest
# regex). Multi-rank jobs work too: the host's mpiexec (Open MPI, the same
# version as the arm64 one) starts each rank through qemu-aarch64
# (cmake/emulated_mpiexec.sh); no binfmt_misc is needed. docs/AARCH64.md says
# what runs this way and what does not.
#   ./scripts/test_aarch64.sh [extra ctest options, e.g. -R unit.vmath]
# HL_AARCH64_BUILD_DIR (default build-aarch64), HL_AARCH64_SYSROOT (default
# <build dir>/sysroot; share one between trees), HL_AARCH64_TESTS,
# HL_AARCH64_EXCLUDE (a ctest regex of tests left out, ctest -E; empty: none),
# HL_AARCH64_EXTRA_PACKAGES (more arm64 packages for the sysroot; llvm-15-dev
# is added when the tree has the fusion JIT's LLVM generator).
set -euo pipefail
. "$(dirname "$0")/common.sh"

build_dir=${HL_AARCH64_BUILD_DIR:-$HL_ROOT/build-aarch64}
sysroot=${HL_AARCH64_SYSROOT:-$build_dir/sysroot}
# The unit suites, and integration tests that take well under a minute or two
# each under qemu on 2 cores (single-process ones and a few 2-4 rank jobs).
# Left out: tests whose work is sized for native speed (--profile's machine
# measurement, benchmarks, the large corpora), the clusters (Slurm, network
# namespaces) and the x86-only fixtures; docs/AARCH64.md lists them.
tests=${HL_AARCH64_TESTS:-'^unit\.|^integration\.(layouts|hostile_inputs|half_precision|fusion_jit|fusion_pass|vmath_lanes|programs|describe|stablehlo|stablehlo_chlo|int_wrap_reductions|launcher_messages|mpi_comm_ranks|custom_calls_lapack)$'}
# unit.fusion_jit_v16 is unit.fusion_jit on aarch64 (16-byte vectors are its
# default width).
exclude=${HL_AARCH64_EXCLUDE-'^unit\.fusion_jit_v16$'}

ctest_args=()
for a in "$@"; do
  case $a in
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) ctest_args+=("$a") ;;
  esac
done

# The host's side: the cross compiler, qemu-user, the host tools the build
# runs (protoc-c) and the host's Open MPI for mpiexec.
HL_PACKAGES=(cmake make pkg-config gcc-aarch64-linux-gnu qemu-user
             protobuf-c-compiler openmpi-bin python3 python3-numpy)
hl_install_deps
extra=${HL_AARCH64_EXTRA_PACKAGES:-}
# The generated loops run under qemu too: the arm64 LLVM for the generator.
[ -d "$HL_ROOT/runtime/fusion/jit/llvm" ] && extra="llvm-15-dev $extra"
# shellcheck disable=SC2086
"$HL_ROOT/scripts/aarch64_sysroot.sh" "$sysroot" $extra

# Emulated ranks talk to the host's mpiexec / orted over PMIx: the two Open
# MPIs must be the same version.
host_ompi=$(dpkg-query -W -f='${Version}' libopenmpi3 2>/dev/null || true)
arm_ompi=$(cd "$sysroot.apt/cache/archives" && ls libopenmpi3_*_arm64.deb 2>/dev/null |
           sed 's/^libopenmpi3_//; s/_arm64.deb$//; s/%3a/:/' || true)
if [ -n "$host_ompi" ] && [ -n "$arm_ompi" ] && [ "$host_ompi" != "$arm_ompi" ]; then
  hl_log "warning: host Open MPI $host_ompi, arm64 Open MPI $arm_ompi: multi-rank jobs may fail"
fi

hl_log "configuring $build_dir (aarch64, sysroot $sysroot)"
cmake -S "$HL_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$HL_ROOT/cmake/aarch64-linux-gnu.cmake" \
  -DHL_AARCH64_SYSROOT="$sysroot" >/dev/null
hl_log "building $build_dir"
cmake --build "$build_dir" -j "$(hl_jobs)"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# As .ci/run: no CMA single-copy (it needs ptrace rights; the emulated runs
# here were made without it).
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# Emulated ranks run 10-50x slower than native ones: launches get longer.
export HL_LAUNCH_TIMEOUT=${HL_LAUNCH_TIMEOUT:-300}
hl_log "ctest in $build_dir under qemu-aarch64: $tests${exclude:+ except $exclude}"
cd "$build_dir"
ctest --output-on-failure --timeout "${HL_TEST_TIMEOUT:-900}" -j "$(hl_jobs)" -R "$tests" \
  ${exclude:+-E "$exclude"} \
  ${ctest_args[@]+"${ctest_args[@]}"}
