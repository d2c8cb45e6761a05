// The verifier's op rules: hl_verify_op dispatches on the opcode (to the
// family files for data movement, collectives and numeric ops), and the
// rules of element-wise, shape, reduce, dot, scan, control-flow and tuple
// ops (XLA's ShapeVerifier / ShapeInference for these ops).
#include "runtime/verifier/verifier_internal.h"

//===----------------------------------------------------------------------===//
// Op-specific checks
//===----------------------------------------------------------------------===//

static hl_dtype_t complex_component(hl_dtype_t t) {
  return t == HL_C64 ? HL_F32 : t == HL_C128 ? HL_F64 : t;
}

void hl_verify_unary(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (!hl_shape_same_dims(x, r)) {
    report(k, "result shape %s does not have the dimensions of operand %s", shape_str(r, 0),
           shape_str(x, 1));
    return;
  }
  hl_dtype_t want = x->dtype;
  switch (k->inst->opcode) {
    case HL_OP_IS_FINITE: want = HL_PRED; break;
    case HL_OP_ABS: case HL_OP_REAL: case HL_OP_IMAG: want = complex_component(x->dtype); break;
    default: break;
  }
  if (r->dtype != want)
    report(k, "result element type %s should be %s", hl_dtype_name(r->dtype), hl_dtype_name(want));
}

static void check_binary(check_t *k, bool is_compare) {
  const hl_shape_t *a = operand_shape(k->inst, 0), *b = operand_shape(k->inst, 1);
  const hl_shape_t *r = &k->inst->shape;
  if (!expect_array(k, a, "operand 0") || !expect_array(k, b, "operand 1") ||
      !expect_array(k, r, "result"))
    return;
  if (!hl_shape_equal(a, b)) {
    report(k, "operand shapes %s and %s differ", shape_str(a, 0), shape_str(b, 1));
    return;
  }
  if (!hl_shape_same_dims(a, r)) {
    report(k, "result shape %s does not have the operand dimensions %s", shape_str(r, 0),
           shape_str(a, 1));
    return;
  }
  hl_dtype_t want = is_compare ? HL_PRED : a->dtype;
  if (r->dtype != want)
    report(k, "result element type %s should be %s", hl_dtype_name(r->dtype), hl_dtype_name(want));
  if (is_compare && k->inst->attrs.comparison_direction == HL_CMP_NONE)
    report(k, "attribute direction is missing");
}

static void check_select(check_t *k) {
  const hl_shape_t *p = operand_shape(k->inst, 0), *t = operand_shape(k->inst, 1),
                   *f = operand_shape(k->inst, 2);
  if (!hl_shape_equal(t, f)) {
    report(k, "on_true %s and on_false %s shapes differ", shape_str(t, 0), shape_str(f, 1));
    return;
  }
  if (p->dtype != HL_PRED)
    report(k, "predicate element type is %s, must be pred", hl_dtype_name(p->dtype));
  else if (p->rank != 0 && !hl_shape_same_dims(p, t))
    report(k, "predicate shape %s must be scalar or match %s", shape_str(p, 0), shape_str(t, 1));
  expect_result(k, t, "on_true shape");
}

static void check_clamp(check_t *k) {
  const hl_shape_t *lo = operand_shape(k->inst, 0), *x = operand_shape(k->inst, 1),
                   *hi = operand_shape(k->inst, 2);
  const hl_shape_t *bounds[2] = {lo, hi};
  for (int i = 0; i < 2; i++) {
    const hl_shape_t *b = bounds[i];
    if (b->dtype != x->dtype || (b->rank != 0 && !hl_shape_same_dims(b, x)))
      report(k, "%s shape %s must be a scalar or the shape of operand %s", i ? "max" : "min",
             shape_str(b, 0), shape_str(x, 1));
  }
  expect_result(k, x, "operand shape");
}

static void check_convert(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (!hl_shape_same_dims(x, r))
    report(k, "result shape %s does not have the dimensions of operand %s", shape_str(r, 0),
           shape_str(x, 1));
}

static void check_bitcast_convert(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  int wx = hl_dtype_bit_width(x->dtype), wr = hl_dtype_bit_width(r->dtype);
  if (wx == wr) {
    if (!hl_shape_same_dims(x, r))
      report(k, "result shape %s does not have the dimensions of operand %s", shape_str(r, 0),
             shape_str(x, 1));
    return;
  }
  // A width change adds (narrowing) or drops (widening) a minor dimension
  // holding the width ratio.
  const hl_shape_t *wide = wx > wr ? x : r, *narrow = wx > wr ? r : x;
  int ratio = wx > wr ? wx / wr : wr / wx;
  bool ok = narrow->rank == wide->rank + 1 && (wx > wr ? wx % wr : wr % wx) == 0 &&
            narrow->dims[narrow->rank - 1] == ratio;
  for (int i = 0; ok && i < wide->rank; i++) ok = narrow->dims[i] == wide->dims[i];
  if (!ok)
    report(k, "cannot bitcast-convert %s (%d bits) to %s (%d bits)", shape_str(x, 0), wx,
           shape_str(r, 1), wr);
}

static void check_broadcast(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  const hl_i64_list_t *d = &k->inst->attrs.dimensions;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (x->dtype != r->dtype)
    report(k, "result element type %s differs from operand %s", hl_dtype_name(r->dtype),
           hl_dtype_name(x->dtype));
  if (d->n != x->rank) {
    report(k, "attribute dimensions has %d entries, operand rank is %d", d->n, x->rank);
    return;
  }
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= r->rank) {
      report(k, "attribute dimensions[%d] = %lld out of range for rank %d", i, (long long)d->v[i],
             r->rank);
      continue;
    }
    if (i > 0 && d->v[i] <= d->v[i - 1])
      report(k, "attribute dimensions must be strictly increasing (dimensions[%d] = %lld)", i,
             (long long)d->v[i]);
    if (r->dims[d->v[i]] != x->dims[i])
      report(k, "operand dimension %d has size %lld but result dimension %lld has size %lld", i,
             (long long)x->dims[i], (long long)d->v[i], (long long)r->dims[d->v[i]]);
  }
}

static void check_reshape(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (x->dtype != r->dtype)
    report(k, "result element type %s differs from operand %s", hl_dtype_name(r->dtype),
           hl_dtype_name(x->dtype));
  if (hl_shape_element_count(x) != hl_shape_element_count(r))
    report(k, "element count changes from %lld (%s) to %lld (%s)",
           (long long)hl_shape_element_count(x), shape_str(x, 0),
           (long long)hl_shape_element_count(r), shape_str(r, 1));
}

// dynamic-reshape: as reshape on the bounds (XLA's ShapeVerifier), plus one
// s32 scalar size operand per result dimension.
static void check_dynamic_reshape(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (!expect_array(k, &inst->shape, "result")) return;
  if (inst->operand_count != inst->shape.rank + 1) {
    report(k, "has %d operands, expected data plus %d sizes (one per result dimension)",
           inst->operand_count, inst->shape.rank);
    return;
  }
  check_reshape(k);
  for (int i = 1; i < inst->operand_count; i++)
    if (!is_scalar_of(operand_shape(inst, i), HL_S32))
      report(k, "operand %d (size of dimension %d) must be s32[], is %s", i, i - 1,
             shape_str(operand_shape(inst, i), 0));
}

// ragged-dot: the dimension numbers' shape rules are checked by the kernel
// (runtime/kernels/ragged_dot.c), which needs the same plan to run; here the
// attribute's presence and the operand kinds.
static void check_ragged_dot(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *l = operand_shape(inst, 0), *r = operand_shape(inst, 1);
  const hl_shape_t *g = operand_shape(inst, 2);
  if (!expect_array(k, l, "operand 0 (lhs)") || !expect_array(k, r, "operand 1 (rhs)") ||
      !expect_array(k, &inst->shape, "result"))
    return;
  if (!hl_shape_is_array(g) || !hl_dtype_is_integer(g->dtype))
    report(k, "operand 2 (group_sizes) must be an integer array, is %s", shape_str(g, 0));
  if (!inst->attrs.has_ragged_dot_dimension_numbers || inst->attrs.lhs_ragged_dimensions.n != 1)
    report(k, "attribute lhs_ragged_dims must have exactly one entry");
  else if (inst->attrs.lhs_ragged_dimensions.v[0] < 0 ||
           inst->attrs.lhs_ragged_dimensions.v[0] >= l->rank)
    report(k, "attribute lhs_ragged_dims[0] = %lld out of range for lhs rank %d",
           (long long)inst->attrs.lhs_ragged_dimensions.v[0], l->rank);
  if (inst->attrs.rhs_group_dimensions.n > 1)
    report(k, "attribute rhs_group_dims has %d entries, at most 1 allowed",
           inst->attrs.rhs_group_dimensions.n);
}

static void check_transpose(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  const hl_i64_list_t *d = &k->inst->attrs.dimensions;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (d->n != x->rank || r->rank != x->rank) {
    report(k, "attribute dimensions has %d entries; operand rank %d, result rank %d", d->n,
           x->rank, r->rank);
    return;
  }
  bool seen[HL_MAX_RANK] = {false};
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= x->rank) {
      report(k, "attribute dimensions[%d] = %lld out of range for rank %d", i, (long long)d->v[i],
             x->rank);
      return;
    }
    if (seen[d->v[i]]) {
      report(k, "attribute dimensions is not a permutation (%lld repeats)", (long long)d->v[i]);
      return;
    }
    seen[d->v[i]] = true;
  }
  for (int i = 0; i < d->n; i++)
    if (r->dims[i] != x->dims[d->v[i]]) {
      report(k, "result dimension %d has size %lld, operand dimension %lld has size %lld", i,
             (long long)r->dims[i], (long long)d->v[i], (long long)x->dims[d->v[i]]);
      return;
    }
  if (r->dtype != x->dtype)
    report(k, "result element type %s differs from operand %s", hl_dtype_name(r->dtype),
           hl_dtype_name(x->dtype));
}

static void check_slice(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  const hl_attrs_t *a = &k->inst->attrs;
  if (!expect_array(k, x, "operand 0") || !expect_array(k, r, "result")) return;
  if (a->slice_count != x->rank || r->rank != x->rank) {
    report(k, "attribute slice has %d dimensions; operand rank %d, result rank %d", a->slice_count,
           x->rank, r->rank);
    return;
  }
  for (int i = 0; i < a->slice_count; i++) {
    const hl_slice_dim_t *s = &a->slice_dimensions[i];
    if (s->stride < 1) {
      report(k, "attribute slice[%d] stride %lld must be positive", i, (long long)s->stride);
      continue;
    }
    if (s->start < 0 || s->start > s->limit || s->limit > x->dims[i]) {
      report(k, "attribute slice[%d] = [%lld:%lld] out of bounds for dimension size %lld", i,
             (long long)s->start, (long long)s->limit, (long long)x->dims[i]);
      continue;
    }
    int64_t want = (s->limit - s->start + s->stride - 1) / s->stride;
    if (r->dims[i] != want)
      report(k, "result dimension %d has size %lld, slice gives %lld", i, (long long)r->dims[i],
             (long long)want);
  }
  if (r->dtype != x->dtype)
    report(k, "result element type %s differs from operand %s", hl_dtype_name(r->dtype),
           hl_dtype_name(x->dtype));
}

static void check_concatenate(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *r = &inst->shape;
  const hl_i64_list_t *d = &inst->attrs.dimensions;
  if (inst->operand_count < 1) {
    report(k, "needs at least one operand");
    return;
  }
  const hl_shape_t *x0 = operand_shape(inst, 0);
  if (!expect_array(k, x0, "operand 0") || !expect_array(k, r, "result")) return;
  if (d->n != 1) {
    report(k, "attribute dimensions must have exactly one entry, has %d", d->n);
    return;
  }
  int64_t dim = d->v[0];
  if (dim < 0 || dim >= x0->rank) {
    report(k, "attribute dimensions[0] = %lld out of range for rank %d", (long long)dim, x0->rank);
    return;
  }
  int64_t total = 0;
  for (int i = 0; i < inst->operand_count; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    bool ok = x->rank == x0->rank && x->dtype == x0->dtype;
    for (int j = 0; ok && j < x->rank; j++) ok = j == dim || x->dims[j] == x0->dims[j];
    if (!ok) {
      report(k, "operand %d shape %s is not compatible with operand 0 shape %s", i,
             shape_str(x, 0), shape_str(x0, 1));
      return;
    }
    total += x->dims[dim];
  }
  hl_shape_t want = *x0;
  want.tuple = NULL;
  want.tuple_count = 0;
  want.dims[dim] = total;
  expect_result(k, &want, "concatenated shape");
}

static void check_iota(check_t *k) {
  const hl_shape_t *r = &k->inst->shape;
  const hl_i64_list_t *d = &k->inst->attrs.dimensions;
  if (!expect_array(k, r, "result")) return;
  if (d->n != 1) {
    report(k, "attribute iota_dimension is missing");
    return;
  }
  if (d->v[0] < 0 || d->v[0] >= r->rank)
    report(k, "attribute iota_dimension = %lld out of range for rank %d", (long long)d->v[0],
           r->rank);
}

static int parameter_count_of(const hl_computation_t *c) {
  int n = 0;
  for (int i = 0; i < c->instruction_count; i++)
    if (c->instructions[i] && c->instructions[i]->opcode == HL_OP_PARAMETER) n++;
  return n;
}

static const hl_instruction_t *parameter_of(const hl_computation_t *c, int64_t number) {
  for (int i = 0; i < c->instruction_count; i++) {
    const hl_instruction_t *p = c->instructions[i];
    if (p && p->opcode == HL_OP_PARAMETER && p->attrs.parameter_number == number) return p;
  }
  return NULL;
}

// Called computation `c` (named `role`) takes `count` parameters of `shapes`.
bool hl_verify_callee_parameters(check_t *k, const hl_computation_t *c, const char *role,
                                 const hl_shape_t *const *shapes, int count) {
  int n = parameter_count_of(c);
  if (n != count) {
    report(k, "%s computation '%s' takes %d parameter%s, expected %d", role, c->name, n,
           n == 1 ? "" : "s", count);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < count; i++) {
    const hl_instruction_t *p = parameter_of(c, i);
    if (p && !hl_shape_equal(&p->shape, shapes[i])) {
      report(k, "%s computation '%s' parameter %d has shape %s, expected %s", role, c->name, i,
             shape_str(&p->shape, 0), shape_str(shapes[i], 1));
      ok = false;
    }
  }
  return ok;
}

static void check_reduce(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count < 2 || inst->operand_count % 2 != 0) {
    report(k, "expects inputs then as many init values (an even operand count), has %d",
           inst->operand_count);
    return;
  }
  int n = inst->operand_count / 2;
  const hl_shape_t *x0 = operand_shape(inst, 0);
  for (int i = 0; i < n; i++) {
    const hl_shape_t *x = operand_shape(inst, i), *init = operand_shape(inst, n + i);
    if (!expect_array(k, x, "input")) return;
    if (!hl_shape_same_dims(x, x0)) {
      report(k, "input %d shape %s differs in dimensions from input 0 %s", i, shape_str(x, 0),
             shape_str(x0, 1));
      return;
    }
    if (!hl_shape_is_array(init) || init->rank != 0) {
      report(k, "init value %d must be a scalar, is %s", i, shape_str(init, 0));
      return;
    }
  }
  const hl_i64_list_t *d = &inst->attrs.dimensions;
  bool reduced[HL_MAX_RANK] = {false};
  if (!hl_verify_dim_set(k, "dimensions", d, x0->rank, reduced)) return;
  // Reducer: (acc_0..acc_{n-1}, x_0..x_{n-1}) scalars of the init types.
  hl_shape_t scalars[2 * 8];
  const hl_shape_t *ptrs[2 * 8];
  if (n <= 8 && inst->called_count == 1) {
    for (int i = 0; i < n; i++) {
      scalars[i] = scalars[n + i] = hl_shape_scalar(operand_shape(inst, n + i)->dtype);
      ptrs[i] = &scalars[i];
      ptrs[n + i] = &scalars[n + i];
    }
    const hl_computation_t *reducer = inst->called_computations[0];
    if (hl_verify_callee_parameters(k, reducer, "reducer", ptrs, 2 * n) && n == 1 &&
        !hl_shape_equal(&reducer->root->shape, &scalars[0]))
      report(k, "reducer computation '%s' returns %s, expected %s", reducer->name,
             shape_str(&reducer->root->shape, 0), shape_str(&scalars[0], 1));
  }
  // Result: the input dimensions that are kept, in the init types.
  const hl_shape_t *r = &inst->shape;
  if (n == 1) {
    hl_shape_t want = hl_shape_scalar(operand_shape(inst, 1)->dtype);
    for (int j = 0; j < x0->rank; j++)
      if (!reduced[j]) want.dims[want.rank++] = x0->dims[j];
    expect_result(k, &want, "reduced shape");
  } else if (r->dtype != HL_TUPLE || r->tuple_count != n) {
    report(k, "result shape %s must be a tuple of %d arrays", shape_str(r, 0), n);
  }
}

static void check_dims_in_range(check_t *k, const char *field, const hl_i64_list_t *l, int rank,
                                bool *used) {
  for (int i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || l->v[i] >= rank) {
      report(k, "attribute %s[%d] = %lld out of range for rank %d", field, i, (long long)l->v[i],
             rank);
    } else if (used[l->v[i]]) {
      report(k, "attribute %s[%d] = %lld uses a dimension twice", field, i, (long long)l->v[i]);
    } else {
      used[l->v[i]] = true;
    }
  }
}

static void check_dot(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  int want_operands = inst->opcode == HL_OP_SCALED_DOT ? 4 : 2;  // scaled-dot: + 2 scales
  if (inst->operand_count != want_operands) {
    report(k, "expects %d operands, has %d", want_operands, inst->operand_count);
    return;
  }
  const hl_shape_t *a = operand_shape(inst, 0), *b = operand_shape(inst, 1);
  if (!expect_array(k, a, "lhs") || !expect_array(k, b, "rhs")) return;
  if (!inst->attrs.has_dot_dimension_numbers) {
    report(k, "attribute dot dimension numbers are missing");
    return;
  }
  const hl_dot_dims_t *d = &inst->attrs.dot_dimension_numbers;
  int before = k->v->count;
  bool used_a[HL_MAX_RANK] = {false}, used_b[HL_MAX_RANK] = {false};
  check_dims_in_range(k, "lhs_batch_dims", &d->lhs_batch_dimensions, a->rank, used_a);
  check_dims_in_range(k, "lhs_contracting_dims", &d->lhs_contracting_dimensions, a->rank, used_a);
  check_dims_in_range(k, "rhs_batch_dims", &d->rhs_batch_dimensions, b->rank, used_b);
  check_dims_in_range(k, "rhs_contracting_dims", &d->rhs_contracting_dimensions, b->rank, used_b);
  if (d->lhs_batch_dimensions.n != d->rhs_batch_dimensions.n)
    report(k, "lhs_batch_dims has %d entries, rhs_batch_dims %d", d->lhs_batch_dimensions.n,
           d->rhs_batch_dimensions.n);
  if (d->lhs_contracting_dimensions.n != d->rhs_contracting_dimensions.n)
    report(k, "lhs_contracting_dims has %d entries, rhs_contracting_dims %d",
           d->lhs_contracting_dimensions.n, d->rhs_contracting_dimensions.n);
  if (k->v->count != before) return;
  for (int i = 0; i < d->lhs_batch_dimensions.n; i++) {
    int64_t la = d->lhs_batch_dimensions.v[i], rb = d->rhs_batch_dimensions.v[i];
    if (a->dims[la] != b->dims[rb])
      report(k, "batch dimension %d: lhs size %lld != rhs size %lld", i, (long long)a->dims[la],
             (long long)b->dims[rb]);
  }
  for (int i = 0; i < d->lhs_contracting_dimensions.n; i++) {
    int64_t la = d->lhs_contracting_dimensions.v[i], rb = d->rhs_contracting_dimensions.v[i];
    if (a->dims[la] != b->dims[rb])
      report(k, "contracting dimension %d: lhs size %lld != rhs size %lld", i,
             (long long)a->dims[la], (long long)b->dims[rb]);
  }
  if (k->v->count != before) return;
  // Result: batch dims, then lhs free dims, then rhs free dims.
  const hl_shape_t *r = &inst->shape;
  if (!expect_array(k, r, "result")) return;
  hl_shape_t want = hl_shape_scalar(r->dtype);
  for (int i = 0; i < d->lhs_batch_dimensions.n; i++)
    want.dims[want.rank++] = a->dims[d->lhs_batch_dimensions.v[i]];
  for (int j = 0; j < a->rank; j++)
    if (!used_a[j]) want.dims[want.rank++] = a->dims[j];
  for (int j = 0; j < b->rank; j++)
    if (!used_b[j]) want.dims[want.rank++] = b->dims[j];
  if (!hl_shape_same_dims(r, &want))
    report(k, "result shape %s does not match dot shape %s", shape_str(r, 0),
           shape_str(&want, 1));
}

// scaled-dot (lhs, rhs, lhs_scale, rhs_scale): each scale has its operand's
// rank and dimensions that divide the operand's (one scale per block), or is
// rank 0 (XLA's ScaledDotRewriter leaves that operand unscaled). The dot
// itself is checked as a dot of lhs and rhs.
static void check_scaled_dot(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count == 4) {
    static const char *const side[2] = {"lhs", "rhs"};
    for (int i = 0; i < 2; i++) {
      const hl_shape_t *x = operand_shape(inst, i), *s = operand_shape(inst, i + 2);
      if (!hl_shape_is_array(x) || !expect_array(k, s, i ? "rhs_scale" : "lhs_scale")) return;
      if (s->rank == 0) continue;
      if (s->rank != x->rank) {
        report(k, "%s_scale %s must have the rank of %s %s", side[i], shape_str(s, 0), side[i],
               shape_str(x, 1));
        return;
      }
      for (int d = 0; d < x->rank; d++)
        if (s->dims[d] == 0 ? x->dims[d] != 0 : x->dims[d] % s->dims[d] != 0) {
          report(k, "%s_scale dimension %d (%lld) does not divide %s dimension %d (%lld)",
                 side[i], d, (long long)s->dims[d], side[i], d, (long long)x->dims[d]);
          return;
        }
    }
  }
  check_dot(k);
}

// scan (inputs..., inits...): see runtime/kernels/scan.c for the semantics.
static void check_scan(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  int n = inst->operand_count;
  int64_t c = inst->attrs.num_carries;
  if (inst->called_count != 1) {
    report(k, "expects one to_apply computation, has %d", inst->called_count);
    return;
  }
  if (c < 0 || c > n) {
    report(k, "attribute num_carries=%lld must be between 0 and the operand count %d",
           (long long)c, n);
    return;
  }
  int ni = n - (int)c;
  if (ni < 1) {
    report(k, "scan needs at least one input before its %lld carries", (long long)c);
    return;
  }
  if (n > 64) {
    report(k, "expects at most 64 operands, has %d", n);
    return;
  }
  const hl_i64_list_t *dl = &inst->attrs.dimensions;
  const hl_shape_t *x0 = operand_shape(inst, 0);
  if (!expect_array(k, x0, "input 0")) return;
  if (dl->n != 1 || dl->v[0] < 0 || dl->v[0] >= x0->rank) {
    report(k, "attribute dimensions must name one dimension below rank %d", x0->rank);
    return;
  }
  int d = (int)dl->v[0];
  int64_t len = x0->dims[d];
  hl_shape_t slices[64];
  const hl_shape_t *params[64];
  for (int i = 0; i < n; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    params[i] = x;
    if (i >= ni) continue;
    if (!expect_array(k, x, "input")) return;
    if (x->rank <= d || x->dims[d] != len) {
      report(k, "input %d %s does not have %lld elements along dimension %d like input 0 %s", i,
             shape_str(x, 0), (long long)len, d, shape_str(x0, 1));
      return;
    }
    slices[i] = hl_shape_scalar(x->dtype);
    for (int j = 0; j < x->rank; j++)
      if (j != d) slices[i].dims[slices[i].rank++] = x->dims[j];
    params[i] = &slices[i];
  }
  const hl_computation_t *body = inst->called_computations[0];
  if (!hl_verify_callee_parameters(k, body, "to_apply", params, n)) return;
  const hl_shape_t *r = &inst->shape, *root = &body->root->shape;
  int results = hl_shape_is_tuple(r) ? r->tuple_count : 1;
  int roots = hl_shape_is_tuple(root) ? root->tuple_count : 1;
  if (results < c || roots != results) {
    report(k, "result %s and to_apply '%s' root %s must both hold the outputs and %lld carries",
           shape_str(r, 0), body->name, shape_str(root, 1), (long long)c);
    return;
  }
  for (int j = 0; j < results; j++) {
    const hl_shape_t *rj = hl_shape_is_tuple(r) ? &r->tuple[j] : r;
    const hl_shape_t *bj = hl_shape_is_tuple(root) ? &root->tuple[j] : root;
    if (j >= results - c) {  // a carry: the init's shape throughout
      int carry = j - (results - (int)c);
      const hl_shape_t *init = operand_shape(inst, ni + carry);
      if (!hl_shape_equal(rj, init)) {
        report(k, "carry %d of the result is %s, its init is %s", carry, shape_str(rj, 0),
               shape_str(init, 1));
        return;
      }
      if (!hl_shape_equal(bj, init)) {
        report(k, "to_apply carry %d is %s, expected %s (its init's shape)", carry,
               shape_str(bj, 0), shape_str(init, 1));
        return;
      }
      continue;
    }
    bool ok = hl_shape_is_array(rj) && hl_shape_is_array(bj) && rj->dtype == bj->dtype &&
              rj->rank == bj->rank + 1 && d < rj->rank && rj->dims[d] == len;
    for (int a = 0, b = 0; ok && a < rj->rank; a++)
      if (a != d) ok = rj->dims[a] == bj->dims[b++];
    if (!ok) {
      report(k, "output %d %s must be to_apply's output %s with %lld inserted at dimension %d", j,
             shape_str(rj, 0), shape_str(bj, 1), (long long)len, d);
      return;
    }
  }
}

static void check_call_like(check_t *k, const char *role) {
  const hl_instruction_t *inst = k->inst;
  const hl_computation_t *c = inst->called_computations[0];
  const hl_shape_t *shapes[64];
  if (inst->operand_count > 64) return;
  for (int i = 0; i < inst->operand_count; i++) shapes[i] = operand_shape(inst, i);
  hl_verify_callee_parameters(k, c, role, shapes, inst->operand_count);
  if (!hl_shape_equal(&inst->shape, &c->root->shape))
    report(k, "result shape %s does not match %s computation '%s' root shape %s",
           shape_str(&inst->shape, 0), role, c->name, shape_str(&c->root->shape, 1));
}

static void check_while(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_computation_t *body = inst->called_computations[0];
  const hl_computation_t *cond = inst->called_computations[1];
  const hl_shape_t *init = operand_shape(inst, 0);
  hl_verify_callee_parameters(k, cond, "condition", &init, 1);
  hl_verify_callee_parameters(k, body, "body", &init, 1);
  if (!is_scalar_of(&cond->root->shape, HL_PRED))
    report(k, "condition computation '%s' returns %s, must return pred[]", cond->name,
           shape_str(&cond->root->shape, 0));
  if (!hl_shape_equal(&body->root->shape, init))
    report(k, "body computation '%s' returns %s, must return its parameter shape %s", body->name,
           shape_str(&body->root->shape, 0), shape_str(init, 1));
  expect_result(k, init, "init shape");
}

static void check_conditional(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count != inst->called_count + 1) {
    report(k, "has %d operands for %d branches; expects the selector plus one per branch",
           inst->operand_count, inst->called_count);
    return;
  }
  const hl_shape_t *sel = operand_shape(inst, 0);
  if (is_scalar_of(sel, HL_PRED)) {
    if (inst->called_count != 2)
      report(k, "a pred selector needs 2 branches, has %d", inst->called_count);
  } else if (!is_scalar_of(sel, HL_S32)) {
    report(k, "selector shape %s must be pred[] or s32[]", shape_str(sel, 0));
  }
  for (int i = 0; i < inst->called_count; i++) {
    const hl_computation_t *b = inst->called_computations[i];
    const hl_shape_t *arg = operand_shape(inst, i + 1);
    char role[32];
    snprintf(role, sizeof(role), "branch %d", i);
    hl_verify_callee_parameters(k, b, role, &arg, 1);
    if (!hl_shape_equal(&b->root->shape, &inst->shape))
      report(k, "branch %d computation '%s' returns %s, conditional result is %s", i, b->name,
             shape_str(&b->root->shape, 0), shape_str(&inst->shape, 1));
  }
}

static void check_tuple(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *r = &inst->shape;
  if (r->dtype != HL_TUPLE || r->tuple_count != inst->operand_count) {
    report(k, "result shape %s must be a tuple of the %d operand shapes", shape_str(r, 0),
           inst->operand_count);
    return;
  }
  for (int i = 0; i < inst->operand_count; i++)
    if (!hl_shape_equal(&r->tuple[i], operand_shape(inst, i)))
      report(k, "tuple element %d shape %s differs from operand shape %s", i,
             shape_str(&r->tuple[i], 0), shape_str(operand_shape(inst, i), 1));
}

static void check_get_tuple_element(check_t *k) {
  const hl_shape_t *t = operand_shape(k->inst, 0);
  int64_t index = k->inst->attrs.tuple_index;
  if (t->dtype != HL_TUPLE) {
    report(k, "operand shape %s is not a tuple", shape_str(t, 0));
    return;
  }
  if (index < 0 || index >= t->tuple_count) {
    report(k, "attribute index = %lld out of range for a tuple of %d elements", (long long)index,
           t->tuple_count);
    return;
  }
  expect_result(k, &t->tuple[index], "tuple element shape");
}

static void check_parameter(check_t *k) {
  const hl_computation_t *c = k->inst->parent;
  int64_t n = k->inst->attrs.parameter_number;
  int count = parameter_count_of(c);
  if (n < 0 || n >= count) {
    report(k, "parameter number %lld out of range: computation '%s' has %d parameters",
           (long long)n, c->name, count);
    return;
  }
  if (parameter_of(c, n) != k->inst)
    report(k, "parameter number %lld is used by more than one parameter", (long long)n);
}

static void check_constant(check_t *k) {
  const hl_literal_t *lit = k->inst->attrs.literal;
  if (!lit) {
    report(k, "constant has no literal");
    return;
  }
  if (!hl_shape_equal(&lit->shape, &k->inst->shape))
    report(k, "literal shape %s differs from result shape %s", shape_str(&lit->shape, 0),
           shape_str(&k->inst->shape, 1));
}

void hl_verify_op(check_t *k) {
  switch (k->inst->opcode) {
    case HL_OP_BITCAST: hl_verify_bitcast(k); break;
    case HL_OP_CONVOLUTION: hl_verify_convolution(k); break;
    case HL_OP_REDUCE_WINDOW: hl_verify_reduce_window(k); break;
    case HL_OP_SELECT_AND_SCATTER: hl_verify_select_and_scatter(k); break;
    case HL_OP_BATCH_NORM_TRAINING: hl_verify_batch_norm(k, 3, 2, true); break;
    case HL_OP_BATCH_NORM_INFERENCE: hl_verify_batch_norm(k, 5, 4, false); break;
    case HL_OP_BATCH_NORM_GRAD: hl_verify_batch_norm(k, 5, 3, true); break;
    case HL_OP_CHOLESKY: hl_verify_cholesky(k); break;
    case HL_OP_TRIANGULAR_SOLVE: hl_verify_triangular_solve(k); break;
    case HL_OP_FFT: hl_verify_fft(k); break;
    case HL_OP_ABS: case HL_OP_ACOS: case HL_OP_ACOSH: case HL_OP_ASIN: case HL_OP_ASINH:
    case HL_OP_ATAN: case HL_OP_ATANH: case HL_OP_CBRT: case HL_OP_CEIL: case HL_OP_CLZ:
    case HL_OP_COS: case HL_OP_COSH: case HL_OP_ERF: case HL_OP_EXP: case HL_OP_EXPM1:
    case HL_OP_FLOOR: case HL_OP_IS_FINITE: case HL_OP_LOG: case HL_OP_LOG1P:
    case HL_OP_LOGISTIC: case HL_OP_NEGATE: case HL_OP_NOT: case HL_OP_POPCNT:
    case HL_OP_ROUND_NEAREST_AFZ: case HL_OP_ROUND_NEAREST_EVEN: case HL_OP_RSQRT:
    case HL_OP_SIGN: case HL_OP_SIN: case HL_OP_SINH: case HL_OP_SQRT: case HL_OP_TAN:
    case HL_OP_TANH: case HL_OP_COPY: case HL_OP_REAL: case HL_OP_IMAG:
      hl_verify_unary(k);
      break;
    case HL_OP_MULHI: check_binary(k, false); break;
    // CHLO special functions (kernels/special_functions.c).
    case HL_OP_BESSEL_I1E: case HL_OP_DIGAMMA: case HL_OP_ERF_INV: case HL_OP_ERFC:
    case HL_OP_LGAMMA:
      hl_verify_unary(k);
      break;
    case HL_OP_NEXT_AFTER: case HL_OP_POLYGAMMA: case HL_OP_ZETA: check_binary(k, false); break;
    case HL_OP_COMPLEX: hl_verify_complex_op(k); break;
    case HL_OP_REDUCE_PRECISION: hl_verify_reduce_precision(k); break;
    case HL_OP_STOCHASTIC_CONVERT: hl_verify_stochastic_convert(k); break;
    case HL_OP_RNG: hl_verify_rng(k); break;
    case HL_OP_RNG_BIT_GENERATOR: hl_verify_rng_bit_generator(k); break;
    case HL_OP_RNG_GET_AND_UPDATE_STATE:
      if (k->inst->shape.dtype != HL_U64 || k->inst->shape.rank != 1 ||
          k->inst->shape.dims[0] != 2)
        report(k, "result shape %s must be u64[2]", shape_str(&k->inst->shape, 0));
      break;
    case HL_OP_ADD: case HL_OP_ATAN2: case HL_OP_DIVIDE: case HL_OP_MAXIMUM: case HL_OP_MINIMUM:
    case HL_OP_MULTIPLY: case HL_OP_POWER: case HL_OP_REMAINDER: case HL_OP_SUBTRACT:
    case HL_OP_AND: case HL_OP_OR: case HL_OP_XOR: case HL_OP_SHIFT_LEFT:
    case HL_OP_SHIFT_RIGHT_ARITHMETIC: case HL_OP_SHIFT_RIGHT_LOGICAL:
      check_binary(k, false);
      break;
    case HL_OP_COMPARE: check_binary(k, true); break;
    case HL_OP_SELECT: check_select(k); break;
    case HL_OP_CLAMP: check_clamp(k); break;
    case HL_OP_CONVERT: check_convert(k); break;
    case HL_OP_BITCAST_CONVERT: check_bitcast_convert(k); break;
    case HL_OP_BROADCAST: check_broadcast(k); break;
    case HL_OP_RESHAPE: check_reshape(k); break;
    case HL_OP_DYNAMIC_RESHAPE: check_dynamic_reshape(k); break;
    case HL_OP_TRANSPOSE: check_transpose(k); break;
    case HL_OP_SLICE: check_slice(k); break;
    case HL_OP_CONCATENATE: check_concatenate(k); break;
    case HL_OP_IOTA: check_iota(k); break;
    case HL_OP_REDUCE: check_reduce(k); break;
    case HL_OP_DOT: check_dot(k); break;
    case HL_OP_RAGGED_DOT: check_ragged_dot(k); break;
    case HL_OP_SCALED_DOT: check_scaled_dot(k); break;
    case HL_OP_SCAN: check_scan(k); break;
    case HL_OP_CALL: check_call_like(k, "called"); break;
    case HL_OP_FUSION: check_call_like(k, "fused"); break;
    case HL_OP_WHILE: check_while(k); break;
    case HL_OP_CONDITIONAL: check_conditional(k); break;
    case HL_OP_TUPLE: check_tuple(k); break;
    case HL_OP_GET_TUPLE_ELEMENT: check_get_tuple_element(k); break;
    case HL_OP_PARAMETER: check_parameter(k); break;
    case HL_OP_CONSTANT: check_constant(k); break;
    case HL_OP_PAD: hl_verify_pad(k); break;
    case HL_OP_REVERSE: hl_verify_reverse(k); break;
    case HL_OP_DYNAMIC_SLICE: hl_verify_dynamic_slice(k); break;
    case HL_OP_DYNAMIC_UPDATE_SLICE: hl_verify_dynamic_update_slice(k); break;
    case HL_OP_GATHER: hl_verify_gather(k); break;
    case HL_OP_SCATTER: hl_verify_scatter(k); break;
    case HL_OP_SORT: hl_verify_sort(k); break;
    case HL_OP_TOPK: hl_verify_topk(k); break;
    case HL_OP_MAP: hl_verify_map(k); break;
    case HL_OP_GET_DIMENSION_SIZE: hl_verify_dimension_size(k, false); break;
    case HL_OP_SET_DIMENSION_SIZE: hl_verify_dimension_size(k, true); break;
    case HL_OP_OPTIMIZATION_BARRIER: case HL_OP_DOMAIN: case HL_OP_ASYNC_UPDATE:
      if (k->inst->operand_count != 1)
        report(k, "expects 1 operand, has %d", k->inst->operand_count);
      else
        expect_result(k, operand_shape(k->inst, 0), "operand shape");
      break;
    case HL_OP_COPY_START: hl_verify_copy_start(k); break;
    case HL_OP_COPY_DONE: hl_verify_done(k, 0, "copy-start"); break;
    case HL_OP_ASYNC_START: hl_verify_async_start(k); break;
    case HL_OP_ASYNC_DONE: hl_verify_done(k, 1, "async-start"); break;
    case HL_OP_REPLICA_ID: case HL_OP_PARTITION_ID:
      if (!is_scalar_of(&k->inst->shape, HL_U32))
        report(k, "result shape %s must be u32[]", shape_str(&k->inst->shape, 0));
      break;
    case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START: case HL_OP_ALL_GATHER:
    case HL_OP_ALL_GATHER_START: case HL_OP_REDUCE_SCATTER: case HL_OP_ALL_TO_ALL:
    case HL_OP_COLLECTIVE_BROADCAST:
      if (k->inst->opcode == HL_OP_COLLECTIVE_BROADCAST && k->inst->attrs.has_dynamic_root) {
        hl_verify_dynamic_root_broadcast(k);
        break;
      }
      hl_verify_collective(k);
      break;
    case HL_OP_COLLECTIVE_REDUCE: hl_verify_collective_reduce(k); break;
    case HL_OP_SHUFFLE: hl_verify_shuffle(k); break;
    case HL_OP_COLLECTIVE_PERMUTE: case HL_OP_COLLECTIVE_PERMUTE_START:
      // slice_sizes marks XLA's combined (in-place) form, checked by its
      // kernel; without it any operand count is the variadic form.
      if (k->inst->attrs.dynamic_slice_sizes.n == 0) hl_verify_collective(k);
      break;
    case HL_OP_ALL_REDUCE_DONE:
      if (k->inst->operand_count == 1) expect_result(k, operand_shape(k->inst, 0), "start");
      break;
    case HL_OP_ALL_GATHER_DONE: hl_verify_done(k, 1, "all-gather-start"); break;
    case HL_OP_COLLECTIVE_PERMUTE_DONE: hl_verify_done(k, 1, "collective-permute-start"); break;
    default:
      break;  // outside the foundation set: generic checks only
  }
}
