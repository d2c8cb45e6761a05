// The custom-call subsystem: targets by name, one file per family.
//
// custom-call's kernel (custom_call_kernel.c) looks the instruction's
// custom_call_target up here and hands the call to the target's function.
// Families: core.c (annotations, TopK, Threefry), lapack.c (jaxlib's CPU
// LAPACK targets), blas.c (trsm), stablehlo_test.c (check.* and
// interpreter.probe of StableHLO test files), ffi_plugin.c (handlers loaded with
// --custom-call-library). docs/CUSTOM_CALLS.md lists every target with its source.
#ifndef HL_CUSTOM_CALLS_REGISTRY_H_
#define HL_CUSTOM_CALLS_REGISTRY_H_

#include <stdbool.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/kernels/kernel.h"

typedef struct hl_custom_call_target hl_custom_call_target_t;

// One custom-call being run.
typedef struct hl_custom_call {
  hl_kernel_context_t *ctx;
  const hl_instruction_t *inst;
  hl_literal_t *const *operands;  // borrowed, inst->operand_count of them
  const char *name;               // the target name
  const hl_custom_call_target_t *target;
} hl_custom_call_t;

// Creates the call's result (shape inst->shape) in *out.
typedef hl_status_t (*hl_custom_call_fn_t)(const hl_custom_call_t *call, hl_literal_t **out);

// Optional pre-launch check of one instruction (its config and shapes, no
// values), one per family: an unsupported config field fails before any rank
// starts.
typedef hl_status_t (*hl_custom_call_check_fn_t)(const hl_instruction_t *inst, const char *name);

struct hl_custom_call_target {
  const char *name;
  hl_custom_call_fn_t fn;
  const void *data;  // the family's per-target data (routine, element type, handler)
};

// The one lookup: the target registered under `name`, or NULL. Pre-launch
// checks use it to tell whether a program's targets can run.
const hl_custom_call_target_t *hl_custom_call_lookup(const char *name);

// The pre-launch check of the family that holds `name`, or NULL (none, or
// not built in).
hl_custom_call_check_fn_t hl_custom_call_lookup_check(const char *name);

// Adds a target at run time (plugins). The name and data must outlive the
// registry; a name already registered is an error naming it.
hl_status_t hl_custom_call_register(const char *name, hl_custom_call_fn_t fn, const void *data);

// Family tables, each ended by an entry whose name is NULL.
extern const hl_custom_call_target_t hl_custom_calls_core[];
extern const hl_custom_call_target_t hl_custom_calls_lapack[];
extern const hl_custom_call_target_t hl_custom_calls_blas[];
extern const hl_custom_call_target_t hl_custom_calls_cublas[];
extern const hl_custom_call_target_t hl_custom_calls_cudnn[];
extern const hl_custom_call_target_t hl_custom_calls_cudnn_fmha[];
hl_status_t hl_custom_calls_cudnn_fmha_check(const hl_instruction_t *inst, const char *name);
extern const hl_custom_call_target_t hl_custom_calls_cudnn_norm[];
extern const hl_custom_call_target_t hl_custom_calls_jax_gpu_solver[];
extern const hl_custom_call_target_t hl_custom_calls_jax_tridiagonal[];
extern const hl_custom_call_target_t hl_custom_calls_triton[];
hl_status_t hl_custom_calls_triton_check(const hl_instruction_t *inst, const char *name);
hl_status_t hl_custom_calls_cudnn_norm_check(const hl_instruction_t *inst, const char *name);
extern const hl_custom_call_target_t hl_custom_calls_ducc_fft[];
extern const hl_custom_call_target_t hl_custom_calls_jax_gpu_linalg[];
extern const hl_custom_call_target_t hl_custom_calls_stablehlo_test[];

#endif  // HL_CUSTOM_CALLS_REGISTRY_H_
