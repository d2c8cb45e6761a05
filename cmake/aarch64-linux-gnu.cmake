# Cross-compiling for aarch64 (arm64) Linux with Debian's gcc-aarch64-linux-gnu
# against a sysroot of Debian's arm64 libraries (scripts/aarch64_sysroot.sh
# assembles one without installing anything on the host). The built programs
# run under qemu-user: ctest runs every test command through
# CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 -L SYSROOT).
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DHL_AARCH64_SYSROOT=/path/to/sysroot
# scripts/test_aarch64.sh does all of it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(HL_AARCH64_SYSROOT "$ENV{HL_AARCH64_SYSROOT}" CACHE PATH "arm64 sysroot (scripts/aarch64_sysroot.sh)")
if(NOT HL_AARCH64_SYSROOT OR NOT EXISTS "${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "HL_AARCH64_SYSROOT='${HL_AARCH64_SYSROOT}' is not an arm64 sysroot; "
                      "make one with scripts/aarch64_sysroot.sh DIR")
endif()
# try_compile projects see the toolchain file again: pass the sysroot on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HL_AARCH64_SYSROOT)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT "${HL_AARCH64_SYSROOT}")
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries and headers from the sysroot only; programs (protoc-c, python3)
# from the host.
set(CMAKE_FIND_ROOT_PATH "${HL_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the sysroot's arm64 .pc files and prefixes their paths.
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR} "${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${HL_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${HL_AARCH64_SYSROOT}")

# MPI: the host's mpicc wrapper would name the host's amd64 Open MPI, and the
# sysroot's is an arm64 program; FindMPI takes Open MPI's arm64 header and
# library directly instead.
set(MPI_SKIP_COMPILER_WRAPPER TRUE)
set(MPI_C_COMPILER "${CMAKE_C_COMPILER}" CACHE FILEPATH "")
set(MPI_C_HEADER_DIR "${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/openmpi/include" CACHE PATH "")
set(MPI_C_LIB_NAMES mpi CACHE STRING "")
set(MPI_mpi_LIBRARY "${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/openmpi/lib/libmpi.so" CACHE FILEPATH "")
# The arm64 shared libraries' own dependencies (libopen-rte, libgfortran, ...)
# are resolved in the sysroot at link time.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${HL_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/openmpi/lib")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")

find_program(HL_QEMU_AARCH64 qemu-aarch64)
if(HL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${HL_QEMU_AARCH64};-L;${HL_AARCH64_SYSROOT}")
endif()
