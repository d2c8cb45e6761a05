// scaled-dot (lhs, rhs, lhs_scale, rhs_scale): a dot whose operands are
// block-scaled (MX / NVFP4 formats: f8 / f4 data with e8m0 or e4m3 scales),
// computed as XLA's generic lowering does (ScaledDotRewriter,
// xla/backends/gpu/transforms/scaled_dot_rewriter.cc): dequantize each
// operand, then an ordinary dot with the instruction's dot dimension numbers.
//
// Dequantizing: a scale has the operand's rank and each of its dimensions
// divides the operand's; along dimension i one scale element covers a block
// of operand_dim / scale_dim consecutive operand elements, so
//   x_deq[j_0, .., j_r] = x[j_0, .., j_r] * scale[j_0 / b_0, .., j_r / b_r].
// (Typically the blocks run along the contracting dimension, 16 or 32 wide,
// and the other scale dimensions equal the operand's.) A rank-0 scale leaves
// its operand unscaled, as that rewriter does.
//
// The products are formed in f32 (f64 when the result or an input is f64)
// and the dot then runs through hl_kernel_dot, so accumulation and rounding
// are the dot kernel's. XLA forms them in bf16 when both the operand and the
// scale are narrower than 16 bits; for f8 / f4 data with power-of-two (e8m0)
// or e4m3 scales both are exact, barring under- or overflow.
//
// The newest XLA also has a six-operand form with NVFP4 global scales; the
// opcode table gives scaled-dot arity 4, so it is not accepted here.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"

// *out = operand * broadcast blocks of scale, as an array of type ct.
static hl_status_t dequantize(const char *loc, const char *side, const hl_literal_t *x,
                              const hl_literal_t *scale, hl_dtype_t ct, hl_literal_t **out) {
  const hl_shape_t *xs = &x->shape, *ss = &scale->shape;
  *out = NULL;
  if (!hl_shape_is_array(xs) || !hl_elem_is_real_or_int(xs->dtype))
    return HL_INVALID("%s: %s is %s, expected a real or integer array", loc, side,
                      HL_SHAPE_STR(xs));
  if (!hl_shape_is_array(ss) || !hl_elem_is_real_or_int(ss->dtype))
    return HL_INVALID("%s: %s_scale is %s, expected a real or integer array", loc, side,
                      HL_SHAPE_STR(ss));
  bool unscaled = ss->rank == 0;
  int64_t block[HL_MAX_RANK], sstride[HL_MAX_RANK];
  if (!unscaled) {
    if (ss->rank != xs->rank)
      return HL_INVALID("%s: %s_scale %s must have the rank of %s %s", loc, side,
                        HL_SHAPE_STR(ss), side, HL_SHAPE_STR(xs));
    for (int i = 0; i < xs->rank; i++) {
      int64_t o = xs->dims[i], s = ss->dims[i];
      if (s == 0 ? o != 0 : o % s != 0)
        return HL_INVALID("%s: %s_scale dimension %d (%lld) does not divide %s dimension %d "
                          "(%lld)",
                          loc, side, i, (long long)s, side, i, (long long)o);
      block[i] = s ? o / s : 1;
    }
    hl_shape_strides(ss, sstride);
  }
  hl_shape_t ds = hl_shape_array(ct, xs->rank, xs->dims);
  hl_literal_t *y = NULL;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&ds, &y));
  int64_t n = hl_literal_element_count(y);
  if (n == 0) {
    *out = y;
    return NULL;
  }
  double *sv = NULL;
  if (!unscaled) {
    int64_t sn = hl_literal_element_count(scale);
    sv = hl_malloc((size_t)sn * sizeof(double));
    if (!sv) {
      hl_literal_release(y);
      return HL_OOM();
    }
    hl_elem_load_f64(ss->dtype, scale->data, 0, sn, sv);
  }
  int r = xs->rank;
  int64_t idx[HL_MAX_RANK] = {0};
  double v[HL_ELEM_BLOCK];
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    hl_elem_load_f64(xs->dtype, x->data, base, m, v);
    if (!unscaled) {
      for (int64_t j = 0; j < m; j++) {
        int64_t at = 0;
        for (int i = 0; i < r; i++) at += idx[i] / block[i] * sstride[i];
        v[j] *= sv[at];
        for (int i = r - 1; i >= 0; i--) {  // row-major successor of idx
          if (++idx[i] < xs->dims[i]) break;
          idx[i] = 0;
        }
      }
    }
    hl_elem_store_f64(ct, y->data, base, m, v);
  }
  hl_free(sv);
  *out = y;
  return NULL;
}

hl_status_t hl_kernel_scaled_dot(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  if (inst->operand_count != 4)
    return HL_UNIMPL("%s: scaled-dot with %d operands (the form with global scales) is not "
                     "supported; expected (lhs, rhs, lhs_scale, rhs_scale)",
                     loc, inst->operand_count);
  if (!inst->attrs.has_dot_dimension_numbers)
    return HL_INVALID("%s: scaled-dot needs dot dimension numbers (lhs_contracting_dims=...)",
                      loc);
  hl_dtype_t ot = inst->shape.dtype;
  if (!hl_shape_is_array(&inst->shape) || !hl_dtype_is_float(ot))
    return HL_UNIMPL("%s: scaled-dot into %s is not supported (floating-point results only)",
                     loc, HL_SHAPE_STR(&inst->shape));
  hl_dtype_t ct = ot == HL_F64 ? HL_F64 : HL_F32;
  for (int i = 0; i < 4; i++)
    if (operands[i]->shape.dtype == HL_F64) ct = HL_F64;
  hl_literal_t *deq[2] = {NULL, NULL};
  hl_status_t st = dequantize(loc, "lhs", operands[0], operands[2], ct, &deq[0]);
  if (!st) st = dequantize(loc, "rhs", operands[1], operands[3], ct, &deq[1]);
  if (!st) {
    // The dot kernel reads only the attributes, the result shape and the
    // operand count of its instruction: give it a two-operand view.
    hl_instruction_t as_dot = *inst;
    as_dot.operand_count = 2;
    st = hl_kernel_dot(ctx, &as_dot, deq, out);
  }
  hl_literal_release(deq[0]);
  hl_literal_release(deq[1]);
  return st;
}
