// Kernels' own scratch, declared ahead of the run (issue 24).
//
// Some kernels allocate working buffers next to their result: convolution's
// packed kernel, im2col columns and f32 result, dot's operands widened from
// bf16 / f16 and its f32 sums, sort's keys and permutations, the c2r FFT's
// input copy, a bitcast's physical-order copy of its operand. They come from
// hl_malloc like any value, are freed before the kernel returns, and so are
// served by the allocator's cache of freed large mappings (base/alloc.c:
// resident pages, reused across instructions and runs) -- but a first run
// maps them fresh, a page fault per 4 KiB, and a program dominated by them
// (a grouped convolution) ran its first time at 10x the later ones.
//
// hl_kernel_scratch_of names those buffers for one instruction from its
// shapes and attributes alone, in the order the kernel allocates them, so
// that the memory plan (exec/memory_plan.h) walks them with the values and
// the executable's warm start makes them resident ahead; --profile reports
// the most scratch one instruction holds next to the live-set bound. Each
// declaring kernel sizes its buffers with the same function it declares
// them with, so the two cannot drift apart. Sizes that depend on the thread
// count (one panel per thread) take `threads`, the pool's size.
#ifndef HL_RUNTIME_KERNELS_KERNEL_SCRATCH_H_
#define HL_RUNTIME_KERNELS_KERNEL_SCRATCH_H_

#include <stdint.h>

#include "runtime/ir/module.h"

enum { HL_KERNEL_SCRATCH_MAX = 8 };

// The buffers one call of the instruction's kernel holds at once besides its
// result (bytes each; all alive until the kernel returns). count 0: none, or
// none declared (nested computations, collectives, the convolution's
// lhs-dilation phases).
typedef struct hl_kernel_scratch {
  int count;
  int64_t bytes[HL_KERNEL_SCRATCH_MAX];
} hl_kernel_scratch_t;

void hl_kernel_scratch_of(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out);

// The kernels' own declarations (kernel_scratch.c dispatches on the opcode).
void hl_dot_scratch(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out);
void hl_convolution_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out);
void hl_sort_scratch(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out);
void hl_fft_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out);
void hl_bitcast_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out);

// Appends `bytes` to `s` (a no-op once HL_KERNEL_SCRATCH_MAX are listed).
static inline void hl_kernel_scratch_add(hl_kernel_scratch_t *s, int64_t bytes) {
  if (s->count < HL_KERNEL_SCRATCH_MAX) s->bytes[s->count++] = bytes;
}

#endif  // HL_RUNTIME_KERNELS_KERNEL_SCRATCH_H_
