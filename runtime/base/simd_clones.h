// HL_SIMD_CLONES marks a hot array loop to be compiled twice, for AVX2 and
// for the baseline ISA, the right one picked when the program loads (GCC and
// clang function multi-versioning; glibc ifunc). The rest of the tree stays
// baseline x86-64; elsewhere the marker is empty. Both versions compute the
// same IEEE operations element by element (no reassociation, no FMA
// contraction across C statements), so the results do not depend on the CPU.
#ifndef HL_RUNTIME_BASE_SIMD_CLONES_H_
#define HL_RUNTIME_BASE_SIMD_CLONES_H_

#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#define HL_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HL_SIMD_CLONES
#endif

#endif  // HL_RUNTIME_BASE_SIMD_CLONES_H_
