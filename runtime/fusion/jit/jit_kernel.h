// A compiled loop (loop_compiler.h) in executable memory, run over any
// element count: whole unrolled iterations, then single vectors, then the
// last partial vector through padded copies of its inputs and output.
//
// The JIT is used only where hl_jit_enabled(): x86-64 with AVX2 and the OS
// saving YMM state, and not turned off (HL_NO_FUSION_JIT=1 in the
// environment, or hl_jit_set_enabled(false): hlo-launch --no-fusion-jit).
#ifndef HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_
#define HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/fusion/jit/loop_compiler.h"

typedef struct hl_jit_kernel hl_jit_kernel_t;

bool hl_jit_enabled(void);
// Process-wide switch, set before any fusion is compiled (programs compiled
// earlier keep their code). Turning it on where the CPU lacks AVX2 is a no-op.
void hl_jit_set_enabled(bool on);

// *out NULL with *why set when the body is not compiled; errors only for
// out of memory or a failed mapping.
hl_status_t hl_jit_kernel_create(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                 const char **why);
void hl_jit_kernel_destroy(hl_jit_kernel_t *k);  // NULL-safe

// out[0..n) from inputs (vector inputs n elements each, scalar inputs one).
void hl_jit_kernel_run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n);
// The same with non-temporal stores for the whole vectors when out is 32-byte
// aligned (else as hl_jit_kernel_run): the same values, written around the
// caches, for outputs too large to stay in them.
void hl_jit_kernel_run_streaming(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                                 int64_t n);

#endif  // HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_
