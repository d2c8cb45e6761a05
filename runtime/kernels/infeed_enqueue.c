// interpreter.infeed_enqueue: the custom-call runtime/stablehlo/ lowers
// interpreter.run_parallel's infeed = [@f, ...] to (lower_channels.c). Its
// operands, the infeed functions' results in order, are appended to this
// process's infeed queue (runtime/comm/channels.h), which the infeed ops of
// the programs then consume; the queue's owner (channels/host_feeds.c)
// releases them. Result: a token.
#include "runtime/base/alloc.h"
#include "runtime/comm/channels.h"
#include "runtime/kernels/check.h"

hl_status_t hl_kernel_infeed_enqueue(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                     hl_literal_t *const *operands, hl_literal_t **out) {
  hl_channel_env_t *env = hl_kernel_options(ctx)->channels;
  int n = inst->operand_count;
  if (!env)
    return HL_INVALID("%s: no infeed queue to append to (no channel environment)",
                      hl_instruction_location(inst));
  hl_literal_t **grown =
      hl_realloc(env->infeed, (size_t)(env->infeed_count + n + 1) * sizeof(*grown));
  if (!grown) return HL_OOM();
  env->infeed = grown;
  for (int i = 0; i < n; i++) env->infeed[env->infeed_count++] = hl_literal_retain(operands[i]);
  return hl_literal_create_token(out);
}
