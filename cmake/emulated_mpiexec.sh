#!/bin/bash
# mpiexec for a cross-compiled build whose programs run under an emulator
# (qemu-user) on a host without binfmt_misc: runs the host's mpiexec, and
# every argument that is a program of another architecture (an ELF file
# whose machine differs from the host's) is started through $HL_EMULATOR
# ("qemu-aarch64 -L SYSROOT"). The emulated ranks' MPI library talks to the
# host's mpiexec / orted, so both must be the same MPI and version (Debian 12:
# Open MPI 4.1.4 on amd64 and arm64). cmake/aarch64-linux-gnu.cmake and
# tests/integration/CMakeLists.txt set it up; HL_HOST_MPIEXEC names the
# host's mpiexec (default: /usr/bin/mpiexec).
set -euo pipefail
read -r -a emulator <<< "${HL_EMULATOR:?HL_EMULATOR (e.g. qemu-aarch64 -L SYSROOT) is not set}"
elf_machine() { od -An -tx1 -j18 -N2 "$1" 2>/dev/null | tr -d ' \n'; }
is_elf() { [ "$(od -An -c -N4 "$1" 2>/dev/null | tr -d ' \n')" = '177ELF' ]; }
host_machine=$(elf_machine /bin/sh)
args=()
for a in "$@"; do
  if [ -f "$a" ] && is_elf "$a" && [ "$(elf_machine "$a")" != "$host_machine" ]; then
    args+=("${emulator[@]}" "$a")
  else
    args+=("$a")
  fi
done
exec "${HL_HOST_MPIEXEC:-/usr/bin/mpiexec}" "${args[@]}"
