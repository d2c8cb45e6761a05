// The pre-launch check: every custom-call target of a module is registered.
#include "runtime/custom_calls/check.h"

#include "runtime/custom_calls/registry.h"

hl_status_t hl_custom_calls_check_module(const hl_module_t *m) {
  for (int c = 0; c < m->computation_count; c++) {
    const hl_computation_t *comp = m->computations[c];
    for (int i = 0; i < comp->instruction_count; i++) {
      const hl_instruction_t *inst = comp->instructions[i];
      if (inst->opcode != HL_OP_CUSTOM_CALL) continue;
      const char *name = inst->attrs.custom_call_target ? inst->attrs.custom_call_target : "";
      if (!hl_custom_call_lookup(name))
        return HL_UNIMPL("%s: custom-call target \"%s\" is not supported: it is not built in "
                         "(docs/CUSTOM_CALLS.md) and no --custom-call-library registered it",
                         hl_instruction_location(inst), name);
    }
  }
  return NULL;
}
