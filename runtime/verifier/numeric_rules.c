// The verifier's rules of numeric ops: complex, reduce-precision,
// stochastic-convert, rng, convolution, reduce-window, select-and-scatter,
// batch norm, cholesky, triangular-solve, fft, and bitcast.
#include "runtime/verifier/verifier_internal.h"

#include "runtime/base/layout.h"

// complex, reduce-precision, stochastic-convert, rng, rng-bit-generator,
// rng-get-and-update-state (runtime/kernels/complex.c, precision.c, rng.c).
void hl_verify_complex_op(check_t *k) {
  const hl_shape_t *a = operand_shape(k->inst, 0), *b = operand_shape(k->inst, 1);
  if (!hl_shape_equal(a, b) || (a->dtype != HL_F32 && a->dtype != HL_F64)) {
    report(k, "operands %s and %s must be f32 or f64 arrays of one shape", shape_str(a, 0),
           shape_str(b, 1));
    return;
  }
  hl_shape_t want = *a;
  want.dtype = a->dtype == HL_F32 ? HL_C64 : HL_C128;
  want.has_layout = false;
  if (k->inst->shape.dtype != want.dtype || !hl_shape_same_dims(&k->inst->shape, a))
    report(k, "result shape %s should be %s with the operand dimensions",
           shape_str(&k->inst->shape, 0), hl_dtype_name(want.dtype));
}

void hl_verify_reduce_precision(check_t *k) {
  hl_verify_unary(k);
  if (k->inst->attrs.exponent_bits < 1 || k->inst->attrs.mantissa_bits < 0)
    report(k, "exponent_bits=%d must be >= 1 and mantissa_bits=%d >= 0",
           k->inst->attrs.exponent_bits, k->inst->attrs.mantissa_bits);
}

void hl_verify_stochastic_convert(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = operand_shape(k->inst, 1);
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "operand 1")) return;
  if (!hl_shape_same_dims(x, r) || !hl_shape_same_dims(x, &k->inst->shape))
    report(k, "operand %s, random %s and result %s must have the same dimensions",
           shape_str(x, 0), shape_str(r, 1), shape_str(&k->inst->shape, 2));
  if (!hl_dtype_is_float(x->dtype) || !hl_dtype_is_unsigned_int(r->dtype) ||
      hl_dtype_bit_width(x->dtype) != hl_dtype_bit_width(r->dtype))
    report(k, "random element type %s must be unsigned with the bit width of %s",
           hl_dtype_name(r->dtype), hl_dtype_name(x->dtype));
}

void hl_verify_rng(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count != 2) {
    report(k, "takes 2 operands, has %d", inst->operand_count);
    return;
  }
  for (int i = 0; i < 2; i++)
    if (!is_scalar_of(operand_shape(inst, i), inst->shape.dtype))
      report(k, "operand %d %s must be a %s scalar", i, shape_str(operand_shape(inst, i), 0),
             hl_dtype_name(inst->shape.dtype));
  if (inst->attrs.distribution != 1 && inst->attrs.distribution != 2)
    report(k, "attribute distribution must be rng_uniform or rng_normal");
}

void hl_verify_rng_bit_generator(check_t *k) {
  const hl_shape_t *st = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (st->dtype != HL_U64 || st->rank != 1) {
    report(k, "state %s must be u64[n]", shape_str(st, 0));
    return;
  }
  if (r->dtype != HL_TUPLE || r->tuple_count != 2 || !hl_shape_equal(&r->tuple[0], st) ||
      !hl_shape_is_array(&r->tuple[1])) {
    report(k, "result shape %s must be (%s, array)", shape_str(r, 0), shape_str(st, 1));
    return;
  }
  int algo = k->inst->attrs.rng_algorithm;
  int64_t n = st->dims[0];
  if ((algo == 1 && n != 2) || ((algo == 0 || algo == 2) && n != 2 && n != 3))
    report(k, "state %s has the wrong size for %s", shape_str(st, 0),
           algo == 1 ? "rng_three_fry (2)" : "rng_philox (2 or 3)");
}

// Numeric ops (convolution, reduce-window, select-and-scatter, batch norm,
// cholesky, triangular-solve, fft): operand counts, ranks, attribute ranges
// and result shapes; the kernels check the full window / dimension geometry.
static void check_window_rank(check_t *k, int rank) {
  const hl_attrs_t *a = &k->inst->attrs;
  int n = a->has_window ? a->window.n : 0;
  if (n != rank) {
    report(k, "window has %d dimensions, expected %d", n, rank);
    return;
  }
  for (int d = 0; d < n; d++) {
    const hl_window_dim_t *w = &a->window.dims[d];
    if (w->size < 0 || w->stride < 1 || w->base_dilation < 1 || w->window_dilation < 1)
      report(k, "window dimension %d: size %lld, stride %lld, lhs_dilate %lld, rhs_dilate %lld "
             "out of range", d, (long long)w->size, (long long)w->stride,
             (long long)w->base_dilation, (long long)w->window_dilation);
  }
}

void hl_verify_convolution(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_attrs_t *a = &inst->attrs;
  if (inst->operand_count != 2) {
    report(k, "takes 2 operands, has %d", inst->operand_count);
    return;
  }
  const hl_shape_t *l = operand_shape(inst, 0), *r = operand_shape(inst, 1);
  if (!expect_array(k, l, "lhs") || !expect_array(k, r, "rhs")) return;
  if (l->rank < 2 || r->rank != l->rank || inst->shape.rank != l->rank) {
    report(k, "lhs %s, rhs %s and result need one rank >= 2", shape_str(l, 0), shape_str(r, 1));
    return;
  }
  const hl_conv_dims_t *dn = &a->convolution_dimension_numbers;
  int ns = l->rank - 2;
  if (!a->has_convolution_dimension_numbers || dn->input_spatial_dimensions.n != ns ||
      dn->kernel_spatial_dimensions.n != ns || dn->output_spatial_dimensions.n != ns) {
    report(k, "dim_labels must name %d spatial dimensions for rank %d", ns, l->rank);
    return;
  }
  check_window_rank(k, ns);
  if (a->feature_group_count < 1 || a->batch_group_count < 1 ||
      (a->feature_group_count > 1 && a->batch_group_count > 1)) {
    report(k, "feature_group_count=%lld and batch_group_count=%lld: both >= 1, one of them 1",
           (long long)a->feature_group_count, (long long)a->batch_group_count);
    return;
  }
  int64_t fi = dn->input_feature_dimension, ki = dn->kernel_input_feature_dimension;
  if (fi < 0 || fi >= l->rank || ki < 0 || ki >= r->rank) {
    report(k, "feature dimensions out of range");
    return;
  }
  if (l->dims[fi] != r->dims[ki] * a->feature_group_count)
    report(k, "input features %lld != kernel input features %lld * feature_group_count %lld",
           (long long)l->dims[fi], (long long)r->dims[ki], (long long)a->feature_group_count);
}

void hl_verify_reduce_window(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  int n = inst->operand_count / 2;
  if (inst->operand_count < 2 || inst->operand_count % 2) {
    report(k, "needs N inputs and N init values, has %d operands", inst->operand_count);
    return;
  }
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "input 0")) return;
  for (int i = 0; i < n; i++)
    if (!is_scalar_of(operand_shape(inst, n + i), operand_shape(inst, i)->dtype))
      report(k, "init value %d %s must be a %s scalar", i, shape_str(operand_shape(inst, n + i), 0),
             hl_dtype_name(operand_shape(inst, i)->dtype));
  check_window_rank(k, x->rank);
}

void hl_verify_select_and_scatter(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count != 3) {
    report(k, "takes operand, source and init_value, has %d operands", inst->operand_count);
    return;
  }
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "operand")) return;
  if (!is_scalar_of(operand_shape(inst, 2), x->dtype))
    report(k, "init_value %s must be a %s scalar", shape_str(operand_shape(inst, 2), 0),
           hl_dtype_name(x->dtype));
  check_window_rank(k, x->rank);
  expect_result(k, x, "operand shape");
}

// Batch norm: operand, then `nvec` per-feature vectors from operand `first`.
void hl_verify_batch_norm(check_t *k, int count, int nvec, bool tuple_result) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count != count) {
    report(k, "takes %d operands, has %d", count, inst->operand_count);
    return;
  }
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "operand")) return;
  int64_t fi = inst->attrs.feature_index;
  if (fi < 0 || fi >= x->rank) {
    report(k, "feature_index %lld out of range for %s", (long long)fi, shape_str(x, 0));
    return;
  }
  for (int i = 1; i <= nvec; i++) {
    const hl_shape_t *v = operand_shape(inst, i);
    if (v->dtype != x->dtype || v->rank != 1 || v->dims[0] != x->dims[fi])
      report(k, "operand %d %s must be %s[%lld] (the feature dimension)", i, shape_str(v, 0),
             hl_dtype_name(x->dtype), (long long)x->dims[fi]);
  }
  const hl_shape_t *r = &inst->shape;
  if (!tuple_result) {
    expect_result(k, x, "operand shape");
  } else if (r->dtype != HL_TUPLE || r->tuple_count != 3 || !hl_shape_equal(&r->tuple[0], x)) {
    report(k, "result shape %s must be a 3-tuple starting with the operand shape %s",
           shape_str(r, 0), shape_str(x, 1));
  }
}

void hl_verify_cholesky(check_t *k) {
  const hl_shape_t *a = operand_shape(k->inst, 0);
  if (!expect_array(k, a, "operand")) return;
  if (a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2])
    report(k, "operand %s must be [..., n, n]", shape_str(a, 0));
  expect_result(k, a, "operand shape");
}

void hl_verify_triangular_solve(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *a = operand_shape(inst, 0), *b = operand_shape(inst, 1);
  if (!expect_array(k, a, "a") || !expect_array(k, b, "b")) return;
  int r = a->rank;
  bool ok = r >= 2 && b->rank == r && a->dtype == b->dtype && a->dims[r - 1] == a->dims[r - 2];
  for (int d = 0; ok && d < r - 2; d++) ok = a->dims[d] == b->dims[d];
  if (ok) ok = a->dims[r - 1] == b->dims[inst->attrs.triangular_left_side ? r - 2 : r - 1];
  if (!ok)
    report(k, "a %s must be [..., m, m] and b %s [..., m, k] (left_side) or [..., k, m]",
           shape_str(a, 0), shape_str(b, 1));
  if (inst->attrs.triangular_transpose_a < HL_NO_TRANSPOSE ||
      inst->attrs.triangular_transpose_a > HL_ADJOINT)
    report(k, "transpose_a must be NO_TRANSPOSE, TRANSPOSE or ADJOINT");
  expect_result(k, b, "b's shape");
}

void hl_verify_fft(check_t *k) {
  const hl_attrs_t *a = &k->inst->attrs;
  const hl_shape_t *x = operand_shape(k->inst, 0);
  if (!expect_array(k, x, "operand")) return;
  if (a->fft_type < 0 || a->fft_type > 3)
    report(k, "fft_type must be FFT, IFFT, RFFT or IRFFT");
  if (a->fft_length.n < 1 || a->fft_length.n > 3 || a->fft_length.n > x->rank)
    report(k, "fft_length has %d entries; needs 1..3 and at most the operand rank %d",
           a->fft_length.n, x->rank);
  if (k->inst->shape.rank != x->rank)
    report(k, "result shape %s must have the rank of %s", shape_str(&k->inst->shape, 0),
           shape_str(x, 1));
}

// bitcast reinterprets physical bytes (runtime/base/layout.h): equal byte
// sizes and layouts whose physical meaning is implemented.
void hl_verify_bitcast(check_t *k) {
  hl_status_t st = hl_layout_check_bitcast(operand_shape(k->inst, 0), &k->inst->shape);
  if (st) report(k, "%s", hl_status_message(st));
  hl_status_free(st);
}
