// StableHLO test-dialect targets: the check.* ops, interpreter.probe and
// interpreter.infeed_enqueue (run_parallel's infeed functions) that
// runtime/stablehlo/ lowers to custom-calls (semantics in kernels/check.c,
// docs/STABLEHLO.md).
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/check.h"

static hl_status_t run_check(const hl_custom_call_t *call, hl_literal_t **out) {
  return hl_kernel_check(call->ctx, call->inst, call->operands, out);
}

static hl_status_t run_infeed_enqueue(const hl_custom_call_t *call, hl_literal_t **out) {
  return hl_kernel_infeed_enqueue(call->ctx, call->inst, call->operands, out);
}

static hl_status_t run_probe(const hl_custom_call_t *call, hl_literal_t **out) {
  return hl_kernel_probe(call->ctx, call->inst, call->operands, out);
}

const hl_custom_call_target_t hl_custom_calls_stablehlo_test[] = {
    {"check.expect_eq", run_check, NULL},
    {"check.expect_almost_eq", run_check, NULL},
    {"check.expect_close", run_check, NULL},
    {"check.expect_serialized_eq", run_check, NULL},
    {"interpreter.probe", run_probe, NULL},
    {"interpreter.infeed_enqueue", run_infeed_enqueue, NULL},
    {NULL, NULL, NULL},
};
