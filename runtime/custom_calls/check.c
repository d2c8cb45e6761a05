// The pre-launch check: every custom-call target of a module is registered,
// and targets with a check function accept their instruction's config.
#include "runtime/custom_calls/check.h"

#include <string.h>

#include "runtime/custom_calls/registry.h"

// Targets known not to be runnable here, with the reason, so the error says
// more than "unknown".
static const struct {
  const char *name;
  const char *why;
} kNotRunnable[] = {
    // xla/service/gpu: jax-triton / Pallas GPU lowering (jax/_src/pallas/triton).
    {"__gpu$xla.gpu.triton", "it carries a Triton kernel (Triton IR in its backend_config), not "
                             "HLO, and hlo-launch has no Triton interpreter"},
    // jax-triton's older form: a compressed, serialized Triton kernel.
    {"triton_kernel_call", "it carries a Triton kernel (a serialized, compiled kernel in its "
                           "opaque field), not HLO, and hlo-launch has no Triton interpreter"},
    // TPU-only targets in JAX's export data (jax/_src/internal_test_util/
    // export_back_compat_test_data/tpu_*.py): libtpu kernels with no CPU meaning.
    {"Qr", "it is a TPU (libtpu) kernel: it cannot run on a CPU"},
    {"LuDecomposition", "it is a TPU (libtpu) kernel: it cannot run on a CPU"},
    {"Eigh", "it is a TPU (libtpu) kernel: it cannot run on a CPU"},
    {"ProductOfElementaryHouseholderReflectors",
     "it is a TPU (libtpu) kernel: it cannot run on a CPU"},
    {"tpu_custom_call", "it carries a Mosaic TPU kernel (Pallas on TPU): it cannot run on a CPU"},
    {"mosaic_gpu", "it carries a Mosaic GPU kernel (Pallas on GPU): it cannot run on a CPU"},
    {"mosaic_gpu_v2", "it carries a Mosaic GPU kernel (Pallas on GPU): it cannot run on a CPU"},
    // jax.pure_callback / io_callback / debug.print: a Python function of the
    // exporting process, which does not exist here.
    {"xla_python_cpu_callback", "it calls back into the Python process that ran JAX"},
    {"xla_ffi_python_cpu_callback", "it calls back into the Python process that ran JAX"},
    {"xla_python_gpu_callback", "it calls back into the Python process that ran JAX"},
    {"xla_ffi_python_gpu_callback", "it calls back into the Python process that ran JAX"},
};

const char *hl_custom_call_not_runnable_reason(const char *name) {
  for (size_t i = 0; name && i < sizeof(kNotRunnable) / sizeof(kNotRunnable[0]); i++)
    if (strcmp(kNotRunnable[i].name, name) == 0) return kNotRunnable[i].why;
  return NULL;
}

hl_status_t hl_custom_calls_check_module(const hl_module_t *m) {
  for (int c = 0; c < m->computation_count; c++) {
    const hl_computation_t *comp = m->computations[c];
    for (int i = 0; i < comp->instruction_count; i++) {
      const hl_instruction_t *inst = comp->instructions[i];
      if (inst->opcode != HL_OP_CUSTOM_CALL) continue;
      const char *name = inst->attrs.custom_call_target ? inst->attrs.custom_call_target : "";
      const hl_custom_call_target_t *t = hl_custom_call_lookup(name);
      const char *why = hl_custom_call_not_runnable_reason(name);
      if (!t && why)
        return HL_UNIMPL("%s: custom-call target \"%s\" is not supported: %s",
                         hl_instruction_location(inst), name, why);
      if (!t)
        return HL_UNIMPL("%s: custom-call target \"%s\" is not supported: it is not built in "
                         "(docs/CUSTOM_CALLS.md) and no --custom-call-library registered it",
                         hl_instruction_location(inst), name);
      hl_custom_call_check_fn_t check = hl_custom_call_lookup_check(name);
      if (check) HL_RETURN_IF_ERROR(check(inst, name));
    }
  }
  return NULL;
}
