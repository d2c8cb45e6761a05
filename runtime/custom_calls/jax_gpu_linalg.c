// jaxlib's GPU linear-algebra helper kernels (jaxlib/gpu/linalg_kernels.cc),
// replayed on the CPU: `cu_lu_pivots_to_permutation` / `hip_lu_pivots_to_permutation`.
//
// pivots s32[batch..., k] (0-based row swaps: jax subtracts 1 from getrf's)
// -> permutation s32[batch..., m]: the identity with swap(perm[i],
// perm[pivots[i]]) applied for i = 0..k-1 in order, out-of-range pivots
// skipped, as jaxlib's ComputePermutation does.
#include <string.h>

#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

static hl_status_t pivots_to_permutation(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  hl_cc_frame_t f;
  HL_RETURN_IF_ERROR(hl_cc_frame_init(call, &f));
  hl_status_t st = NULL;
  const hl_cc_buffer_t *p = f.args;
  hl_cc_buffer_t *perm = f.rets;
  bool ok = f.arg_count == 1 && f.ret_count == 1 && p->dtype == HL_S32 &&
            perm->dtype == HL_S32 && p->rank >= 1 && perm->rank == p->rank;
  for (int i = 0; ok && i + 1 < p->rank; i++) ok = p->dims[i] == perm->dims[i];
  if (!ok || perm->dims[perm->rank - 1] < p->dims[p->rank - 1]) {
    st = HL_INVALID("%s: custom-call \"%s\" takes s32 pivots [batch..., k] and returns an s32 "
                    "permutation [batch..., m] with m >= k", hl_instruction_location(call->inst),
                    call->name);
  } else {
    int64_t k = p->dims[p->rank - 1], m = perm->dims[perm->rank - 1];
    int64_t batch = hl_cc_dims_product(p, 0, p->rank - 1);
    for (int64_t b = 0; b < batch; b++) {
      const int32_t *piv = (const int32_t *)p->data + b * k;
      int32_t *out_perm = (int32_t *)perm->data + b * m;
      for (int64_t i = 0; i < m; i++) out_perm[i] = (int32_t)i;
      for (int64_t i = 0; i < k; i++) {
        if (piv[i] < 0 || piv[i] >= m) continue;
        int32_t t = out_perm[i];
        out_perm[i] = out_perm[piv[i]];
        out_perm[piv[i]] = t;
      }
    }
    st = hl_cc_frame_finish(call, &f, out);
  }
  hl_cc_frame_deinit(&f);
  return st;
}

const hl_custom_call_target_t hl_custom_calls_jax_gpu_linalg[] = {
    {"cu_lu_pivots_to_permutation", pivots_to_permutation, NULL},
    {"hip_lu_pivots_to_permutation", pivots_to_permutation, NULL},
    {NULL, NULL, NULL},
};
