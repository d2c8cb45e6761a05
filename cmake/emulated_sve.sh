#!/bin/bash
# Runs an aarch64 test program under qemu-user as on an SVE machine (Fujitsu
# A64FX: 512-bit SVE), for the fusion JIT's generated loops:
#   emulated_sve.sh QEMU SYSROOT PROGRAM [args...]
# qemu-aarch64 -cpu a64fx executes SVE, but LLVM takes the host's CPU and its
# features (LLVMGetHostCPUName / LLVMGetHostCPUFeatures) from /proc/cpuinfo,
# which qemu-user 7.2 passes through from the x86-64 host: no "Features" or
# "CPU part" line there, so LLVM sees a "generic" CPU, NEON only, whatever
# -cpu says. Here the program sees, in a private mount namespace, the
# /proc/cpuinfo A64FX's Linux kernel writes, so LLVM picks "a64fx" with +sve
# as on the real machine, and the generated loops use SVE where LLVM does for
# our 16-byte vectors (integer divide / remainder and 64-bit multiplies,
# which NEON lacks). The run fails unless the JIT's log names that target.
# Needs a mount namespace (root, or unprivileged user namespaces): without
# one it says so and exits 77 (ctest: skipped), as the netns tests do.
set -euo pipefail
qemu=${1:?usage: emulated_sve.sh QEMU SYSROOT PROGRAM [args...]}
sysroot=${2:?usage: emulated_sve.sh QEMU SYSROOT PROGRAM [args...]}
shift 2

if [ "${HL_SVE_INSIDE:-}" != 1 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # One block per host CPU, as the kernel writes it (threads count CPUs
  # elsewhere, /sys, but keep the two consistent).
  for ((i = 0; i < $(nproc); i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 200.00\n' "$i"
    printf 'Features\t: fp asimd evtstrm sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm fcma dcpop sve\n'
    printf 'CPU implementer\t: 0x46\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0x001\nCPU revision\t: 0\n\n'
  done > "$tmp/cpuinfo"
  ns=()
  if unshare -m true 2>/dev/null; then
    ns=(unshare -m)
  elif unshare -r -m true 2>/dev/null; then
    ns=(unshare -r -m)
  else
    echo "SKIP: no mount namespace here (needs root or unprivileged user namespaces)" >&2
    exit 77
  fi
  rc=0
  HL_SVE_INSIDE=1 HL_SVE_CPUINFO=$tmp/cpuinfo HL_FUSION_JIT_LOG=1 \
    "${ns[@]}" "$0" "$qemu" "$sysroot" "$@" 2> "$tmp/log" || rc=$?
  cat "$tmp/log" >&2
  # The JIT must have compiled for the SVE CPU, or the run proved nothing.
  if ! grep -q 'fusion jit: generator LLVM .* a64fx' "$tmp/log"; then
    echo "FAIL: the fusion JIT did not target a64fx (see its log above)" >&2
    exit 1
  fi
  exit $rc
fi

mount --bind "$HL_SVE_CPUINFO" /proc/cpuinfo
exec "$qemu" -cpu a64fx -L "$sysroot" "$@"
