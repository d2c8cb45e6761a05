// custom-call: looks the target up in the custom-call registry
// (runtime/custom_calls/registry.h) and runs it. An unknown target is an
// error naming it and the instruction; docs/CUSTOM_CALLS.md lists the targets.
#include "runtime/custom_calls/check.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/kernel.h"

hl_status_t hl_kernel_custom_call(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                  hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *name = inst->attrs.custom_call_target ? inst->attrs.custom_call_target : "";
  const hl_custom_call_target_t *target = hl_custom_call_lookup(name);
  const char *why = target ? NULL : hl_custom_call_not_runnable_reason(name);
  if (why)
    return HL_UNIMPL("%s: custom-call target \"%s\" is not supported: %s",
                     hl_instruction_location(inst), name, why);
  if (!target)
    return HL_UNIMPL("%s: custom-call target \"%s\" is not supported (docs/CUSTOM_CALLS.md "
                     "lists the supported targets; --custom-call-library loads more)",
                     hl_instruction_location(inst), name);
  hl_custom_call_t call = {ctx, inst, operands, name, target};
  return target->fn(&call, out);
}
