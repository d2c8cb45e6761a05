// HL_SIMD_CLONES marks a hot array loop (a function of its own, never
// inlined) to be compiled twice, for AVX2 and for the baseline ISA, the right
// one picked when the program loads (GCC and clang function multi-versioning;
// glibc ifunc). The rest of the tree stays baseline x86-64; elsewhere the
// marker only keeps the function out of line. Both versions compute the same
// IEEE operations element by element (no reassociation, no FMA contraction:
// "avx2" does not enable FMA), so the results do not depend on the CPU.
#ifndef HL_RUNTIME_BASE_SIMD_CLONES_H_
#define HL_RUNTIME_BASE_SIMD_CLONES_H_

#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#if defined(__clang__)  // clang: multi-versioned functions are never inlined anyway
#define HL_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else  // GCC 12 -O3 left some loops scalar once inlined into a dispatcher
#define HL_SIMD_CLONES __attribute__((noinline, target_clones("avx2", "default")))
#endif
#else
#define HL_SIMD_CLONES __attribute__((noinline))
#endif

#endif  // HL_RUNTIME_BASE_SIMD_CLONES_H_
