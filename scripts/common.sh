# Shared helpers for scripts/*.sh: install what is missing, configure, build.
# Sourced, not run. Callers set -euo pipefail.

HL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Build directories (override to keep several builds side by side).
HL_BUILD_DIR=${HL_BUILD_DIR:-$HL_ROOT/build}
HL_ASAN_BUILD_DIR=${HL_ASAN_BUILD_DIR:-$HL_ROOT/build-asan}
HL_CLANG_BUILD_DIR=${HL_CLANG_BUILD_DIR:-$HL_ROOT/build-clang}
HL_MPICH_BUILD_DIR=${HL_MPICH_BUILD_DIR:-$HL_ROOT/build-mpich}

# Debian 12 packages the build and the tests need.
HL_PACKAGES=(
  cmake gcc make pkg-config
  libopenmpi-dev openmpi-bin libhwloc-dev
  mpich libmpich-dev
  libprotobuf-c-dev protobuf-c-compiler
  libcunit1-dev libopenblas-dev zlib1g-dev
  libfftw3-dev liblapacke-dev libsleef-dev
  gfortran g++
  slurm-wlm munge hwloc iproute2
  python3 python3-numpy
  flatbuffers-compiler
  clang libclang-rt-14-dev
  chromium
  llvm-15-dev
)

hl_log() { printf '==> %s\n' "$*" >&2; }

# Prints the packages of HL_PACKAGES that are not installed.
hl_missing_packages() {
  local p status
  for p in "${HL_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || printf '%s\n' "$p"
  done
}

# Installs the missing packages (apt-get update first, only when some are missing).
hl_install_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    hl_log "not a Debian system: install ${HL_PACKAGES[*]} (or equivalents) yourself"
    return 0
  fi
  local missing
  missing=$(hl_missing_packages | tr '\n' ' ')
  if [ -z "${missing// /}" ]; then
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      hl_log "missing packages: $missing; run as root or install them first"
      return 1
    fi
  fi
  hl_log "installing: $missing"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  # shellcheck disable=SC2086
  "${sudo[@]}" apt-get install -y --no-install-recommends $missing
}

hl_jobs() { nproc 2>/dev/null || echo 2; }

# hl_build BUILD_DIR BUILD_TYPE [extra cmake args...]
hl_build() {
  local dir=$1 type=$2
  shift 2
  hl_log "configuring $dir ($type)"
  cmake -S "$HL_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
  hl_log "building $dir"
  cmake --build "$dir" -j "$(hl_jobs)"
}
