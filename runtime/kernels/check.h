// The StableHLO test dialect's checks and interpreter.probe (check.c),
// lowered by runtime/stablehlo/ to custom-calls "check.<name>" and
// "interpreter.probe"; registered as targets in
// runtime/custom_calls/stablehlo_test.c.
#ifndef HL_RUNTIME_KERNELS_CHECK_H_
#define HL_RUNTIME_KERNELS_CHECK_H_

#include "runtime/kernels/kernel.h"

hl_status_t hl_kernel_check(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out);
hl_status_t hl_kernel_probe(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out);
// interpreter.infeed_enqueue (infeed_enqueue.c): run_parallel's infeed
// functions' results appended to the infeed queue.
hl_status_t hl_kernel_infeed_enqueue(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                     hl_literal_t *const *operands, hl_literal_t **out);

#endif  // HL_RUNTIME_KERNELS_CHECK_H_
