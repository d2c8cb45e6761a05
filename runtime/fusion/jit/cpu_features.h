// Whether this processor and OS run the fusion JIT's code: x86-64 with AVX2,
// and the OS saving the YMM state (CPUID OSXSAVE + XGETBV), since AVX
// instructions fault where the OS has not enabled them.
#ifndef HL_RUNTIME_FUSION_JIT_CPU_FEATURES_H_
#define HL_RUNTIME_FUSION_JIT_CPU_FEATURES_H_

#include <stdbool.h>

bool hl_jit_cpu_has_avx2(void);

#endif  // HL_RUNTIME_FUSION_JIT_CPU_FEATURES_H_
