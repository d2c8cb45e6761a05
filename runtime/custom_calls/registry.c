// Name -> target lookup over the built-in family tables and the targets
// plugins registered at run time.
#include "runtime/custom_calls/registry.h"

#include <string.h>

#include "runtime/base/alloc.h"

static const hl_custom_call_target_t *const kFamilies[] = {
    hl_custom_calls_core, hl_custom_calls_lapack, hl_custom_calls_blas, hl_custom_calls_cublas,
    hl_custom_calls_jax_gpu_linalg, hl_custom_calls_cudnn, hl_custom_calls_ducc_fft,
    hl_custom_calls_stablehlo_test, hl_custom_calls_cudnn_fmha, hl_custom_calls_cudnn_norm,
    hl_custom_calls_jax_gpu_solver, hl_custom_calls_jax_tridiagonal, hl_custom_calls_triton,
};

// Families whose configs are checked before launch.
static const struct {
  const hl_custom_call_target_t *family;
  hl_custom_call_check_fn_t check;
} kChecks[] = {
    {hl_custom_calls_cudnn_fmha, hl_custom_calls_cudnn_fmha_check},
    {hl_custom_calls_cudnn_norm, hl_custom_calls_cudnn_norm_check},
    {hl_custom_calls_triton, hl_custom_calls_triton_check},
};

hl_custom_call_check_fn_t hl_custom_call_lookup_check(const char *name) {
  if (!name) return NULL;
  for (size_t f = 0; f < sizeof(kChecks) / sizeof(kChecks[0]); f++)
    for (const hl_custom_call_target_t *t = kChecks[f].family; t->name; t++)
      if (strcmp(t->name, name) == 0) return kChecks[f].check;
  return NULL;
}

// Run-time registrations (plugins): loaded once at start-up, before any
// program runs, so no locking.
static hl_custom_call_target_t *g_dynamic;
static int g_dynamic_count;

const hl_custom_call_target_t *hl_custom_call_lookup(const char *name) {
  if (!name) return NULL;
  for (size_t f = 0; f < sizeof(kFamilies) / sizeof(kFamilies[0]); f++)
    for (const hl_custom_call_target_t *t = kFamilies[f]; t->name; t++)
      if (strcmp(t->name, name) == 0) return t;
  for (int i = 0; i < g_dynamic_count; i++)
    if (strcmp(g_dynamic[i].name, name) == 0) return &g_dynamic[i];
  return NULL;
}

hl_status_t hl_custom_call_register(const char *name, hl_custom_call_fn_t fn, const void *data) {
  if (hl_custom_call_lookup(name))
    return HL_INVALID("custom-call target \"%s\" is already registered", name);
  hl_custom_call_target_t *grown =
      hl_realloc(g_dynamic, (size_t)(g_dynamic_count + 1) * sizeof(*grown));
  if (!grown) return HL_OOM();
  g_dynamic = grown;
  g_dynamic[g_dynamic_count++] = (hl_custom_call_target_t){name, fn, data};
  return NULL;
}
