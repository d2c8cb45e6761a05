// The fusion kernel: the blocked program of the fused computation when it
// covers it and blocking is on, otherwise the computation op by op (as a
// call), which is also the reference mode (--no-fusion-blocking).
#include "runtime/fusion/fusion_program.h"
#include "runtime/kernels/kernel.h"

static bool arguments_fit(const hl_computation_t *c, hl_literal_t *const *args, int count) {
  if (count != c->parameter_count) return false;
  for (int i = 0; i < count; i++)
    if (!c->parameters[i] || !args[i] || !hl_shape_equal(&args[i]->shape, &c->parameters[i]->shape))
      return false;
  return true;
}

hl_status_t hl_kernel_fusion(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_computation_t *callee = hl_instruction_to_apply(inst);
  const hl_exec_options_t *options = hl_kernel_options(ctx);
  if (callee && options && !options->no_fusion_blocking &&
      arguments_fit(callee, operands, inst->operand_count)) {
    hl_fusion_program_t *program = NULL;
    HL_RETURN_IF_ERROR(hl_kernel_fusion_program(ctx, callee, &program));
    if (program)
      return hl_fusion_program_run(program, operands, inst->operand_count, options->pool, out);
  }
  // Argument mismatches are reported by the call path.
  return hl_kernel_call(ctx, inst, operands, out);
}
