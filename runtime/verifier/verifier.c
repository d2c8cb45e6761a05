// Module verifier: the shape and attribute rules of XLA's ShapeVerifier /
// ShapeInference for the foundation op set, plus generic structure checks
// for every op. Every problem is collected (one line each) so a user fixes a
// program in one pass; checks never trust an attribute before bounding it.
#include "runtime/verifier/verifier.h"

#include <stdarg.h>
#include <string.h>

#include "runtime/base/layout.h"
#include "runtime/base/strbuf.h"

typedef struct verifier {
  const hl_module_t *module;
  hl_strbuf_t problems;
  int count;
} verifier_t;

typedef struct check {
  verifier_t *v;
  const hl_instruction_t *inst;
} check_t;

static void reportv(verifier_t *v, const hl_instruction_t *inst, const hl_computation_t *c,
                    const char *fmt, va_list ap) {
  hl_strbuf_t *out = &v->problems;
  if (v->count++) hl_strbuf_append_char(out, '\n');
  if (inst && inst->line > 0) {
    const char *file = v->module->source_path ? v->module->source_path : "<text>";
    hl_strbuf_appendf(out, "%s:%d:%d: instruction '%s' (%s): ", file, inst->line, inst->column,
                      inst->name ? inst->name : "?", hl_opcode_name(inst->opcode));
  } else if (inst) {
    hl_strbuf_appendf(out, "computation '%s', instruction '%s' (%s): ",
                      c && c->name ? c->name : "?", inst->name ? inst->name : "?",
                      hl_opcode_name(inst->opcode));
  } else if (c) {
    hl_strbuf_appendf(out, "computation '%s': ", c->name ? c->name : "?");
  } else {
    hl_strbuf_appendf(out, "module '%s': ", v->module->name ? v->module->name : "?");
  }
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  hl_strbuf_append(out, buf);
}

static void report(check_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(check_t *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  reportv(k->v, k->inst, k->inst->parent, fmt, ap);
  va_end(ap);
}

static void report_comp(verifier_t *v, const hl_computation_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report_comp(verifier_t *v, const hl_computation_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  reportv(v, NULL, c, fmt, ap);
  va_end(ap);
}

// Shape strings for messages; two buffers so a message can show two shapes.
static const char *shape_str(const hl_shape_t *s, int slot) {
  static _Thread_local char bufs[2][256];
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_shape_print(s, false, &sb);
  snprintf(bufs[slot & 1], sizeof(bufs[0]), "%s", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return bufs[slot & 1];
}

//===----------------------------------------------------------------------===//
// Generic checks
//===----------------------------------------------------------------------===//

static bool shape_valid(const hl_shape_t *s, int depth) {
  if (depth > 64 || !hl_dtype_is_valid(s->dtype)) return false;
  if (s->dtype == HL_TUPLE) {
    if (s->tuple_count < 0 || (s->tuple_count > 0 && !s->tuple)) return false;
    for (int i = 0; i < s->tuple_count; i++)
      if (!shape_valid(&s->tuple[i], depth + 1)) return false;
    return true;
  }
  if (s->rank < 0 || s->rank > HL_MAX_RANK) return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0 && !(s->dynamic_mask & (1u << i))) return false;
  return hl_layout_is_permutation(s);
}

// Number of computations an op must call; -1 when any count (or none) is fine.
static bool may_call(hl_opcode_t op) {
  switch (op) {
    case HL_OP_WHILE: case HL_OP_CONDITIONAL: case HL_OP_CALL: case HL_OP_FUSION: case HL_OP_MAP:
    case HL_OP_REDUCE: case HL_OP_REDUCE_WINDOW: case HL_OP_SCATTER: case HL_OP_SORT:
    case HL_OP_SELECT_AND_SCATTER: case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START:
    case HL_OP_REDUCE_SCATTER: case HL_OP_CUSTOM_CALL: case HL_OP_ASYNC_START:
    case HL_OP_ASYNC_UPDATE: case HL_OP_ASYNC_DONE: case HL_OP_SCAN: case HL_OP_COLLECTIVE_REDUCE:
      return true;
    default:
      return false;
  }
}

static int required_called(hl_opcode_t op) {
  switch (op) {
    case HL_OP_WHILE: case HL_OP_SELECT_AND_SCATTER:
      return 2;
    case HL_OP_CALL: case HL_OP_FUSION: case HL_OP_REDUCE: case HL_OP_MAP: case HL_OP_SORT:
    case HL_OP_REDUCE_WINDOW: case HL_OP_SCATTER: case HL_OP_ALL_REDUCE:
    case HL_OP_ALL_REDUCE_START: case HL_OP_REDUCE_SCATTER: case HL_OP_ASYNC_START:
      return 1;
    default:
      return -1;
  }
}

// Returns false when the instruction is too malformed for op-specific checks.
static bool check_generic(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  bool ok = true;
  if (inst->opcode < 0 || inst->opcode >= HL_OP_COUNT_) {
    report(k, "unknown opcode %d", (int)inst->opcode);
    return false;
  }
  if (!shape_valid(&inst->shape, 0)) {
    report(k, "result shape has an unsupported element type, bad dimensions or a layout that "
           "is not a permutation of its dimensions");
    ok = false;
  } else if (!hl_shape_size_fits(&inst->shape)) {
    report(k, "result shape %s is too large (its byte size overflows int64)",
           shape_str(&inst->shape, 0));
    ok = false;
  }
  int arity = hl_opcode_arity(inst->opcode);
  if (arity >= 0 && inst->operand_count != arity) {
    report(k, "expects %d operand%s, has %d", arity, arity == 1 ? "" : "s", inst->operand_count);
    ok = false;
  }
  for (int i = 0; i < inst->operand_count; i++) {
    const hl_instruction_t *op = inst->operands ? inst->operands[i] : NULL;
    if (!op) {
      report(k, "operand %d is missing", i);
      ok = false;
    } else if (op->parent != inst->parent) {
      report(k, "operand %d '%s' belongs to another computation", i, op->name ? op->name : "?");
      ok = false;
    } else if (!shape_valid(&op->shape, 0) || !hl_shape_size_fits(&op->shape)) {
      ok = false;  // reported on the operand itself
    }
  }
  int need = required_called(inst->opcode);
  if (need >= 0 && inst->called_count != need) {
    report(k, "expects %d called computation%s, has %d", need, need == 1 ? "" : "s",
           inst->called_count);
    ok = false;
  }
  if (!may_call(inst->opcode) && inst->called_count > 0) {
    report(k, "takes no called computations, has %d", inst->called_count);
    ok = false;
  }
  if (inst->opcode == HL_OP_CONDITIONAL && inst->called_count < 1) {
    report(k, "expects at least 1 branch computation, has %d", inst->called_count);
    ok = false;
  }
  for (int i = 0; i < inst->called_count; i++) {
    const hl_computation_t *c = inst->called_computations ? inst->called_computations[i] : NULL;
    if (!c || !c->root) {
      report(k, "called computation %d is missing or empty", i);
      ok = false;
    }
  }
  for (int i = 0; i < inst->control_predecessor_count; i++) {
    const hl_instruction_t *p = inst->control_predecessors[i];
    if (!p || p->parent != inst->parent) {
      report(k, "control predecessor %d is not in the same computation", i);
      ok = false;
    }
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Op-specific checks
//===----------------------------------------------------------------------===//

static const hl_shape_t *operand_shape(const hl_instruction_t *inst, int i) {
  return &inst->operands[i]->shape;
}

static bool expect_array(check_t *k, const hl_shape_t *s, const char *what) {
  if (hl_shape_is_array(s)) return true;
  report(k, "%s must be an array, is %s", what, shape_str(s, 0));
  return false;
}

static void expect_result(check_t *k, const hl_shape_t *want, const char *why) {
  if (!hl_shape_equal(&k->inst->shape, want))
    report(k, "result shape %s does not match %s %s", shape_str(&k->inst->shape, 0), why,
           shape_str(want, 1));
}

static bool is_scalar_of(const hl_shape_t *s, hl_dtype_t t) {
  return s->dtype == t && s->rank == 0;
}

static hl_dtype_t complex_component(hl_dtype_t t) {
  return t == HL_C64 ? HL_F32 : t == HL_C128 ? HL_F64 : t;
}

static void check_unary(check_t *k) {
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
static bool check_callee_parameters(check_t *k, const hl_computation_t *c, const char *role,
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
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= x0->rank) {
      report(k, "attribute dimensions[%d] = %lld out of range for rank %d", i, (long long)d->v[i],
             x0->rank);
      return;
    }
    if (reduced[d->v[i]]) {
      report(k, "attribute dimensions repeats %lld", (long long)d->v[i]);
      return;
    }
    reduced[d->v[i]] = true;
  }
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
    if (check_callee_parameters(k, reducer, "reducer", ptrs, 2 * n) && n == 1 &&
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
  if (!check_callee_parameters(k, body, "to_apply", params, n)) return;
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
  check_callee_parameters(k, c, role, shapes, inst->operand_count);
  if (!hl_shape_equal(&inst->shape, &c->root->shape))
    report(k, "result shape %s does not match %s computation '%s' root shape %s",
           shape_str(&inst->shape, 0), role, c->name, shape_str(&c->root->shape, 1));
}

static void check_while(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_computation_t *body = inst->called_computations[0];
  const hl_computation_t *cond = inst->called_computations[1];
  const hl_shape_t *init = operand_shape(inst, 0);
  check_callee_parameters(k, cond, "condition", &init, 1);
  check_callee_parameters(k, body, "body", &init, 1);
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
    check_callee_parameters(k, b, role, &arg, 1);
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

//===----------------------------------------------------------------------===//
// Data movement / indexing / structural ops (pad ... async-*)
//===----------------------------------------------------------------------===//

// `l` lists distinct dimensions below rank, none already in `used` (marked).
static bool check_dim_set(check_t *k, const char *field, const hl_i64_list_t *l, int rank,
                          bool *used) {
  bool seen[HL_MAX_RANK] = {false};
  for (int i = 0; i < l->n; i++) {
    int64_t d = l->v[i];
    if (d < 0 || d >= rank) {
      report(k, "attribute %s[%d] = %lld out of range for rank %d", field, i, (long long)d, rank);
      return false;
    }
    if (seen[d] || (used && used[d])) {
      report(k, "attribute %s repeats dimension %lld", field, (long long)d);
      return false;
    }
    seen[d] = true;
  }
  if (used)
    for (int i = 0; i < l->n; i++) used[l->v[i]] = true;
  return true;
}

static bool is_int_array(const hl_shape_t *s) {
  return hl_shape_is_array(s) && hl_dtype_is_integer(s->dtype);
}

static void check_pad(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *pv = operand_shape(k->inst, 1);
  if (!expect_array(k, x, "operand 0")) return;
  if (!is_scalar_of(pv, x->dtype)) {
    report(k, "padding value %s must be a %s scalar", shape_str(pv, 0), hl_dtype_name(x->dtype));
    return;
  }
  const hl_attrs_t *a = &k->inst->attrs;
  if (a->padding_count != x->rank) {
    report(k, "attribute padding has %d dimensions, operand rank is %d", a->padding_count,
           x->rank);
    return;
  }
  hl_shape_t want = hl_shape_array(x->dtype, x->rank, x->dims);
  for (int d = 0; d < x->rank; d++) {
    const hl_padding_dim_t *p = &a->padding_config[d];
    if (p->interior_padding < 0) {
      report(k, "attribute padding: interior padding %lld of dimension %d is negative",
             (long long)p->interior_padding, d);
      return;
    }
    int64_t n = x->dims[d];
    want.dims[d] = p->edge_padding_low + p->edge_padding_high + n +
                   (n > 0 ? (n - 1) * p->interior_padding : 0);
    if (want.dims[d] < 0) {
      report(k, "attribute padding makes dimension %d negative (%lld)", d,
             (long long)want.dims[d]);
      return;
    }
  }
  expect_result(k, &want, "padded shape");
}

static void check_reverse(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0);
  if (!expect_array(k, x, "operand 0")) return;
  if (!check_dim_set(k, "dimensions", &k->inst->attrs.dimensions, x->rank, NULL)) return;
  expect_result(k, x, "operand shape");
}

// Start indices from operand `first` on: rank integer scalars of one type,
// or (legacy) one integer vector of rank elements.
static bool check_starts(check_t *k, int first, int rank) {
  const hl_instruction_t *inst = k->inst;
  int count = inst->operand_count - first;
  if (count == 1 && rank != 0 && operand_shape(inst, first)->rank == 1) {
    const hl_shape_t *v = operand_shape(inst, first);
    if (!is_int_array(v) || v->dims[0] != rank) {
      report(k, "start index vector %s must be an integer vector of %d elements", shape_str(v, 0),
             rank);
      return false;
    }
    return true;
  }
  if (count != rank) {
    report(k, "has %d start indices for an operand of rank %d", count, rank);
    return false;
  }
  for (int i = 0; i < count; i++) {
    const hl_shape_t *s = operand_shape(inst, first + i);
    if (!is_int_array(s) || s->rank != 0 || s->dtype != operand_shape(inst, first)->dtype) {
      report(k, "start index %d is %s; start indices must be integer scalars of one type", i,
             shape_str(s, 0));
      return false;
    }
  }
  return true;
}

static void check_dynamic_slice(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count < 1) return;
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "operand 0") || !check_starts(k, 1, x->rank)) return;
  const hl_i64_list_t *sz = &inst->attrs.dynamic_slice_sizes;
  if (sz->n != x->rank) {
    report(k, "attribute dynamic_slice_sizes has %d entries, operand rank is %d", sz->n, x->rank);
    return;
  }
  hl_shape_t want = hl_shape_array(x->dtype, x->rank, sz->v);
  for (int d = 0; d < x->rank; d++)
    if (sz->v[d] < 0 || sz->v[d] > x->dims[d]) {
      report(k, "attribute dynamic_slice_sizes[%d] = %lld out of range [0, %lld]", d,
             (long long)sz->v[d], (long long)x->dims[d]);
      return;
    }
  expect_result(k, &want, "slice shape");
}

static void check_dynamic_update_slice(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  if (inst->operand_count < 2) {
    report(k, "expects an operand, an update and start indices, has %d operands",
           inst->operand_count);
    return;
  }
  const hl_shape_t *x = operand_shape(inst, 0), *u = operand_shape(inst, 1);
  if (!expect_array(k, x, "operand 0") || !expect_array(k, u, "update")) return;
  if (u->dtype != x->dtype || u->rank != x->rank) {
    report(k, "update %s must have the element type and rank of operand %s", shape_str(u, 0),
           shape_str(x, 1));
    return;
  }
  for (int d = 0; d < x->rank; d++)
    if (u->dims[d] > x->dims[d]) {
      report(k, "update dimension %d (size %lld) exceeds the operand's (%lld)", d,
             (long long)u->dims[d], (long long)x->dims[d]);
      return;
    }
  if (!check_starts(k, 2, x->rank)) return;
  expect_result(k, x, "operand shape");
}

// Batch dimensions of an index array: its dims without index_vector_dim.
static bool index_batch_dims(check_t *k, const hl_shape_t *idx, int64_t ivd, int64_t *dims,
                             int *n, int *vec_len) {
  if (!is_int_array(idx)) {
    report(k, "indices %s must be an integer array", shape_str(idx, 0));
    return false;
  }
  if (ivd < 0 || ivd > idx->rank) {
    report(k, "attribute index_vector_dim = %lld out of range for indices of rank %d",
           (long long)ivd, idx->rank);
    return false;
  }
  *n = 0;
  for (int d = 0; d < idx->rank; d++)
    if (d != ivd) dims[(*n)++] = idx->dims[d];
  *vec_len = ivd == idx->rank ? 1 : (int)idx->dims[ivd];
  return true;
}

// Batching dims: pairs of (operand dim, index dim) of equal sizes.
static bool check_batching(check_t *k, const char *field, const hl_i64_list_t *opd,
                           const hl_i64_list_t *idxd, const hl_shape_t *x, const hl_shape_t *idx,
                           int64_t ivd) {
  if (opd->n != idxd->n) {
    report(k, "attribute %s has %d entries, its operand-side list %d", field, idxd->n, opd->n);
    return false;
  }
  bool dummy[HL_MAX_RANK] = {false};
  if (!check_dim_set(k, field, idxd, idx->rank, dummy)) return false;
  for (int i = 0; i < idxd->n; i++) {
    if (idxd->v[i] == ivd) {
      report(k, "attribute %s[%d] is index_vector_dim", field, i);
      return false;
    }
    if (idx->dims[idxd->v[i]] != x->dims[opd->v[i]]) {
      report(k, "batching dimension %d: indices size %lld, operand size %lld", i,
             (long long)idx->dims[idxd->v[i]], (long long)x->dims[opd->v[i]]);
      return false;
    }
  }
  return true;
}

static void check_gather(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *x = operand_shape(inst, 0), *idx = operand_shape(inst, 1);
  if (!expect_array(k, x, "operand 0")) return;
  if (!inst->attrs.has_gather_dimension_numbers) {
    report(k, "gather dimension numbers are missing");
    return;
  }
  const hl_gather_dims_t *g = &inst->attrs.gather_dimension_numbers;
  const hl_i64_list_t *sizes = &inst->attrs.gather_slice_sizes;
  int64_t bdims[HL_MAX_RANK];
  int nb = 0, vec_len = 0;
  if (!index_batch_dims(k, idx, g->index_vector_dim, bdims, &nb, &vec_len)) return;
  bool not_window[HL_MAX_RANK] = {false};
  if (!check_dim_set(k, "collapsed_slice_dims", &g->collapsed_slice_dims, x->rank, not_window) ||
      !check_dim_set(k, "operand_batching_dims", &g->operand_batching_dims, x->rank,
                     not_window) ||
      !check_dim_set(k, "start_index_map", &g->start_index_map, x->rank, NULL) ||
      !check_batching(k, "start_indices_batching_dims", &g->operand_batching_dims,
                      &g->start_indices_batching_dims, x, idx, g->index_vector_dim))
    return;
  bool batching[HL_MAX_RANK] = {false};
  for (int i = 0; i < g->operand_batching_dims.n; i++) batching[g->operand_batching_dims.v[i]] = true;
  for (int i = 0; i < g->start_index_map.n; i++)
    if (batching[g->start_index_map.v[i]]) {
      report(k, "attribute start_index_map[%d] is a batching dimension", i);
      return;
    }
  if (g->start_index_map.n != vec_len) {
    report(k, "attribute start_index_map has %d entries, index vectors have %d",
           g->start_index_map.n, vec_len);
    return;
  }
  if (sizes->n != x->rank) {
    report(k, "attribute slice_sizes has %d entries, operand rank is %d", sizes->n, x->rank);
    return;
  }
  int64_t win[HL_MAX_RANK];
  int nwin = 0;
  for (int d = 0; d < x->rank; d++) {
    if (sizes->v[d] < 0 || sizes->v[d] > x->dims[d] || (not_window[d] && sizes->v[d] > 1)) {
      report(k, "attribute slice_sizes[%d] = %lld invalid for operand dimension of size %lld", d,
             (long long)sizes->v[d], (long long)x->dims[d]);
      return;
    }
    if (!not_window[d]) win[nwin++] = sizes->v[d];
  }
  int out_rank = nb + nwin;
  if (g->offset_dims.n != nwin || out_rank > HL_MAX_RANK) {
    report(k, "attribute offset_dims has %d entries for %d window dimensions", g->offset_dims.n,
           nwin);
    return;
  }
  bool is_offset[HL_MAX_RANK] = {false};
  if (!check_dim_set(k, "offset_dims", &g->offset_dims, out_rank, is_offset)) return;
  for (int i = 1; i < g->offset_dims.n; i++)
    if (g->offset_dims.v[i] < g->offset_dims.v[i - 1]) {
      report(k, "attribute offset_dims must be sorted");
      return;
    }
  hl_shape_t want = hl_shape_array(x->dtype, 0, NULL);
  want.rank = out_rank;
  for (int d = 0, b = 0, w = 0; d < out_rank; d++)
    want.dims[d] = is_offset[d] ? win[w++] : bdims[b++];
  // XLA's shape check lets a collapsed (or batching) dimension's slice size
  // be 0: every slice is then empty, yet the result (which omits that
  // dimension) has elements, and each would read past the operand's end
  // (start indices clamp to [0, size - 0]). Only an empty result means
  // something.
  for (int d = 0; d < x->rank; d++)
    if (not_window[d] && sizes->v[d] == 0 && hl_shape_element_count(&want) > 0) {
      report(k, "attribute slice_sizes[%d] = 0 on a collapsed or batching dimension: the slices "
                "are empty but the result has %lld elements",
             d, (long long)hl_shape_element_count(&want));
      return;
    }
  expect_result(k, &want, "gathered shape");
}

// A computation of `n` scalar parameters of `types` returning `ret` scalars
// (a tuple when nret > 1).
static void check_scalar_computation(check_t *k, const char *role, const hl_dtype_t *types,
                                     int n, const hl_dtype_t *ret, int nret) {
  if (k->inst->called_count != 1 || n > 64) return;
  const hl_computation_t *c = k->inst->called_computations[0];
  hl_shape_t scalars[64];
  const hl_shape_t *ptrs[64];
  for (int i = 0; i < n; i++) {
    scalars[i] = hl_shape_scalar(types[i]);
    ptrs[i] = &scalars[i];
  }
  if (!check_callee_parameters(k, c, role, ptrs, n) || !ret) return;
  const hl_shape_t *r = &c->root->shape;
  bool ok = nret == 1 ? is_scalar_of(r, ret[0])
                      : r->dtype == HL_TUPLE && r->tuple_count == nret;
  for (int i = 0; ok && nret > 1 && i < nret; i++) ok = is_scalar_of(&r->tuple[i], ret[i]);
  if (!ok)
    report(k, "%s computation '%s' returns %s, expected %d scalar%s of the operand types", role,
           c->name, shape_str(r, 0), nret, nret == 1 ? "" : "s in a tuple");
}

// Result: the array itself for one operand, a tuple of them otherwise.
static void expect_variadic_result(check_t *k, const hl_shape_t *const *arrays, int n) {
  if (n == 1) {
    expect_result(k, arrays[0], "operand shape");
    return;
  }
  const hl_shape_t *r = &k->inst->shape;
  bool ok = r->dtype == HL_TUPLE && r->tuple_count == n;
  for (int i = 0; ok && i < n; i++) ok = hl_shape_equal(&r->tuple[i], arrays[i]);
  if (!ok) report(k, "result shape %s must be a tuple of the %d operand shapes", shape_str(r, 0), n);
}

static void check_scatter(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  int count = inst->operand_count;
  if (count < 3 || count % 2 == 0 || count > 65) {
    report(k, "expects N inputs, indices and N updates (an odd count >= 3), has %d", count);
    return;
  }
  int n = (count - 1) / 2;
  const hl_shape_t *x = operand_shape(inst, 0), *idx = operand_shape(inst, n);
  const hl_shape_t *u = operand_shape(inst, n + 1);
  const hl_shape_t *inputs[32];
  hl_dtype_t types[64];
  for (int j = 0; j < n; j++) {
    const hl_shape_t *xj = operand_shape(inst, j), *uj = operand_shape(inst, n + 1 + j);
    if (!expect_array(k, xj, "input") || !expect_array(k, uj, "update")) return;
    if (!hl_shape_same_dims(xj, x) || !hl_shape_same_dims(uj, u) || uj->dtype != xj->dtype) {
      report(k, "input %d %s / update %d %s must match input 0 / update 0 in dimensions and "
             "each other in element type", j, shape_str(xj, 0), j, shape_str(uj, 1));
      return;
    }
    inputs[j] = xj;
    types[j] = types[n + j] = xj->dtype;
  }
  if (!inst->attrs.has_scatter_dimension_numbers) {
    report(k, "scatter dimension numbers are missing");
    return;
  }
  const hl_scatter_dims_t *sd = &inst->attrs.scatter_dimension_numbers;
  int64_t bdims[HL_MAX_RANK];
  int nb = 0, vec_len = 0;
  if (!index_batch_dims(k, idx, sd->index_vector_dim, bdims, &nb, &vec_len)) return;
  bool not_window[HL_MAX_RANK] = {false}, upd_window[HL_MAX_RANK] = {false};
  if (!check_dim_set(k, "inserted_window_dims", &sd->inserted_window_dims, x->rank, not_window) ||
      !check_dim_set(k, "input_batching_dims", &sd->input_batching_dims, x->rank, not_window) ||
      !check_dim_set(k, "scatter_dims_to_operand_dims", &sd->scatter_dims_to_operand_dims,
                     x->rank, NULL) ||
      !check_dim_set(k, "update_window_dims", &sd->update_window_dims, u->rank, upd_window) ||
      !check_batching(k, "scatter_indices_batching_dims", &sd->input_batching_dims,
                      &sd->scatter_indices_batching_dims, x, idx, sd->index_vector_dim))
    return;
  if (sd->scatter_dims_to_operand_dims.n != vec_len) {
    report(k, "attribute scatter_dims_to_operand_dims has %d entries, index vectors have %d",
           sd->scatter_dims_to_operand_dims.n, vec_len);
    return;
  }
  int nwin = 0;
  for (int d = 0; d < x->rank; d++) {
    if (not_window[d]) continue;
    if (nwin >= sd->update_window_dims.n) break;
    int64_t ud = sd->update_window_dims.v[nwin++];
    if (u->dims[ud] > x->dims[d]) {
      report(k, "update window dimension %lld (size %lld) exceeds input dimension %d (%lld)",
             (long long)ud, (long long)u->dims[ud], d, (long long)x->dims[d]);
      return;
    }
  }
  if (sd->update_window_dims.n != x->rank - sd->inserted_window_dims.n -
                                      sd->input_batching_dims.n) {
    report(k, "attribute update_window_dims has %d entries for %d window dimensions",
           sd->update_window_dims.n,
           x->rank - sd->inserted_window_dims.n - sd->input_batching_dims.n);
    return;
  }
  for (int d = 0, b = 0; d < u->rank; d++) {
    if (upd_window[d]) continue;
    if (b >= nb || u->dims[d] != bdims[b]) {
      report(k, "updates %s do not match the batch dimensions of indices %s", shape_str(u, 0),
             shape_str(idx, 1));
      return;
    }
    b++;
  }
  if (u->rank - sd->update_window_dims.n != nb) {
    report(k, "updates have %d scatter dimensions, indices have %d",
           u->rank - sd->update_window_dims.n, nb);
    return;
  }
  check_scalar_computation(k, "update", types, 2 * n, types, n);
  expect_variadic_result(k, inputs, n);
}

static void check_sort(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  int n = inst->operand_count;
  if (n < 1 || n > 32) {
    report(k, "expects 1 to 32 operands, has %d", n);
    return;
  }
  const hl_shape_t *x = operand_shape(inst, 0);
  const hl_shape_t *arrays[32];
  hl_dtype_t types[64];
  for (int j = 0; j < n; j++) {
    const hl_shape_t *xj = operand_shape(inst, j);
    if (!expect_array(k, xj, "operand")) return;
    if (!hl_shape_same_dims(xj, x)) {
      report(k, "operand %d %s differs in dimensions from operand 0 %s", j, shape_str(xj, 0),
             shape_str(x, 1));
      return;
    }
    arrays[j] = xj;
    types[2 * j] = types[2 * j + 1] = xj->dtype;
  }
  const hl_i64_list_t *d = &inst->attrs.dimensions;
  if (d->n != 1 || d->v[0] < 0 || d->v[0] >= x->rank) {
    report(k, "attribute dimensions must name one dimension below rank %d", x->rank);
    return;
  }
  hl_dtype_t pred = HL_PRED;
  check_scalar_computation(k, "comparator", types, 2 * n, &pred, 1);
  expect_variadic_result(k, arrays, n);
}

static void check_topk(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (!expect_array(k, x, "operand 0")) return;
  int64_t kk = k->inst->attrs.k;
  if (x->rank < 1 || kk < 0 || kk > x->dims[x->rank - 1]) {
    report(k, "attribute k = %lld out of range for operand %s", (long long)kk, shape_str(x, 0));
    return;
  }
  hl_shape_t v = hl_shape_array(x->dtype, x->rank, x->dims);
  v.dims[v.rank - 1] = kk;
  hl_shape_t i = v;
  i.dtype = HL_S32;
  if (r->dtype != HL_TUPLE || r->tuple_count != 2 || !hl_shape_equal(&r->tuple[0], &v) ||
      !hl_shape_equal(&r->tuple[1], &i))
    report(k, "result shape %s must be (%s, s32 indices of the same dimensions)", shape_str(r, 0),
           shape_str(&v, 1));
}

static void check_map(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *r = &inst->shape;
  if (!expect_array(k, r, "result")) return;
  int n = inst->operand_count;
  if (n < 1 || n > 64) {
    report(k, "expects 1 to 64 operands, has %d", n);
    return;
  }
  hl_dtype_t types[64];
  for (int j = 0; j < n; j++) {
    const hl_shape_t *xj = operand_shape(inst, j);
    if (!expect_array(k, xj, "operand")) return;
    if (!hl_shape_same_dims(xj, r)) {
      report(k, "operand %d %s does not have the result's dimensions %s", j, shape_str(xj, 0),
             shape_str(r, 1));
      return;
    }
    types[j] = xj->dtype;
  }
  check_scalar_computation(k, "mapped", types, n, &r->dtype, 1);
}

static void check_dimension_size(check_t *k, bool set) {
  const hl_shape_t *x = operand_shape(k->inst, 0);
  if (!expect_array(k, x, "operand 0")) return;
  const hl_i64_list_t *d = &k->inst->attrs.dimensions;
  if (d->n != 1 || d->v[0] < 0 || d->v[0] >= x->rank) {
    report(k, "attribute dimensions must name one dimension below rank %d", x->rank);
    return;
  }
  const hl_shape_t *r = &k->inst->shape;
  if (!set) {
    if (!is_scalar_of(r, HL_S32)) report(k, "result shape %s must be s32[]", shape_str(r, 0));
    return;
  }
  if (!is_scalar_of(operand_shape(k->inst, 1), HL_S32))
    report(k, "size operand %s must be s32[]", shape_str(operand_shape(k->inst, 1), 0));
  if (!hl_shape_is_array(r) || r->dtype != x->dtype || !hl_shape_same_dims(r, x))
    report(k, "result shape %s must have the operand's type and dimensions %s", shape_str(r, 0),
           shape_str(x, 1));
}

static void check_copy_start(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (r->dtype != HL_TUPLE || r->tuple_count != 3 || !hl_shape_equal(&r->tuple[0], x) ||
      !hl_shape_equal(&r->tuple[1], x) || !is_scalar_of(&r->tuple[2], HL_U32))
    report(k, "result shape %s must be (%s, %s, u32[])", shape_str(r, 0), shape_str(x, 1),
           shape_str(x, 1));
}

// copy-done / async-done: element `i` of the start's tuple.
static void check_done(check_t *k, int i, const char *start) {
  const hl_shape_t *t = operand_shape(k->inst, 0);
  if (t->dtype != HL_TUPLE || t->tuple_count <= i) {
    report(k, "operand %s must be the tuple of a %s", shape_str(t, 0), start);
    return;
  }
  expect_result(k, &t->tuple[i], start);
}

static void check_async_start(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_shape_t *r = &inst->shape;
  if (r->dtype != HL_TUPLE || r->tuple_count < 2 || r->tuple[0].dtype != HL_TUPLE ||
      r->tuple[0].tuple_count != inst->operand_count) {
    report(k, "result shape %s must be ((operands...), result, state...)", shape_str(r, 0));
    return;
  }
  for (int i = 0; i < inst->operand_count; i++)
    if (!hl_shape_equal(&r->tuple[0].tuple[i], operand_shape(inst, i))) {
      report(k, "result element {0, %d} %s differs from operand %d %s", i,
             shape_str(&r->tuple[0].tuple[i], 0), i, shape_str(operand_shape(inst, i), 1));
      return;
    }
  if (inst->called_count != 1 || inst->operand_count > 64) return;
  const hl_computation_t *c = inst->called_computations[0];
  const hl_shape_t *ptrs[64];
  for (int i = 0; i < inst->operand_count; i++) ptrs[i] = operand_shape(inst, i);
  if (check_callee_parameters(k, c, "wrapped", ptrs, inst->operand_count) &&
      !hl_shape_equal(&c->root->shape, &r->tuple[1]))
    report(k, "wrapped computation '%s' returns %s, result element 1 is %s", c->name,
           shape_str(&c->root->shape, 0), shape_str(&r->tuple[1], 1));
}

// Collectives (issue 4). Grid-independent checks only: the group size is
// known here when the groups are written and the mode does not multiply
// them by the partition count (cross_replica_and_partition); groups
// themselves are validated against the grid by collectives/groups.c.
static int64_t written_group_size(const hl_instruction_t *inst) {
  const hl_replica_groups_t *g = &inst->attrs.replica_groups;
  bool crp = inst->attrs.channel_id > 0 && !inst->attrs.use_global_device_ids &&
             (inst->opcode == HL_OP_ALL_GATHER || inst->opcode == HL_OP_ALL_GATHER_START ||
              inst->opcode == HL_OP_REDUCE_SCATTER);
  if (crp) return 0;
  if (g->kind == HL_GROUPS_LIST && g->group_count > 0 && g->groups) return g->groups[0].n;
  if (g->kind == HL_GROUPS_IOTA) return g->iota_group_size;
  return 0;
}

// Result element k of a variadic collective (array, or tuple of arrays).
static const hl_shape_t *collective_result(check_t *k, const hl_shape_t *r, int i, int n) {
  if (n == 1 && r->dtype != HL_TUPLE) return r;
  if (r->dtype != HL_TUPLE || r->tuple_count != n) {
    report(k, "result shape %s must be a tuple of %d arrays, one per operand", shape_str(r, 0), n);
    return NULL;
  }
  return &r->tuple[i];
}

static void check_collective(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  hl_opcode_t op = inst->opcode;
  int n = inst->operand_count;
  const hl_shape_t *r = &inst->shape;
  if (n < 1) {
    report(k, "needs at least one operand");
    return;
  }
  if (op == HL_OP_ALL_GATHER_START || op == HL_OP_COLLECTIVE_PERMUTE_START) {
    if (r->dtype != HL_TUPLE || r->tuple_count < 2) {
      report(k, "result shape %s must be a tuple (operands, results%s)", shape_str(r, 0),
             op == HL_OP_COLLECTIVE_PERMUTE_START ? ", contexts..." : "");
      return;
    }
    r = &r->tuple[1];
  }
  int64_t g = written_group_size(inst);
  bool has_dim = inst->attrs.dimensions.n > 0;
  int64_t d = has_dim ? inst->attrs.dimensions.v[0] : -1;
  if ((op == HL_OP_ALL_REDUCE || op == HL_OP_ALL_REDUCE_START || op == HL_OP_REDUCE_SCATTER) &&
      !hl_instruction_to_apply(inst)) {
    report(k, "needs a reducer computation (to_apply)");
    return;
  }
  if (op == HL_OP_ALL_TO_ALL && !has_dim) {  // tuple form: one operand per member
    if (r->dtype != HL_TUPLE || r->tuple_count != n)
      report(k, "without dimensions, the result %s must be a tuple of the %d operands' shape",
             shape_str(r, 0), n);
    else if (g > 0 && g != n)
      report(k, "without dimensions, the %d operands must equal the group size %lld", n,
             (long long)g);
    for (int i = 0; i < n && r->dtype == HL_TUPLE && r->tuple_count == n; i++)
      if (!hl_shape_equal(operand_shape(inst, i), operand_shape(inst, 0)) ||
          !hl_shape_equal(&r->tuple[i], operand_shape(inst, 0))) {
        report(k, "the tuple form needs operands and results of one shape");
        break;
      }
    return;
  }
  for (int i = 0; i < n; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    const hl_shape_t *y = collective_result(k, r, i, n);
    if (!y || !expect_array(k, x, "operand")) return;
    bool gathers = op == HL_OP_ALL_GATHER || op == HL_OP_ALL_GATHER_START;
    if (gathers || op == HL_OP_REDUCE_SCATTER || op == HL_OP_ALL_TO_ALL) {
      if (inst->attrs.dimensions.n != 1 || d < 0 || d >= x->rank) {
        report(k, "attribute dimensions must name one dimension of operand %s", shape_str(x, 0));
        return;
      }
      bool ok = y->rank == x->rank && y->dtype == x->dtype;
      for (int j = 0; ok && j < x->rank; j++) ok = j == d || y->dims[j] == x->dims[j];
      int64_t big = gathers ? y->dims[d] : x->dims[d], small = gathers ? x->dims[d] : y->dims[d];
      if (op == HL_OP_ALL_TO_ALL) {
        ok = ok && hl_shape_equal(x, y);
        if (ok && g > 0 && x->dims[d] % g != 0) {
          report(k, "dimension %lld (%lld) of operand %s cannot be split among %lld processes",
                 (long long)d, (long long)x->dims[d], shape_str(x, 0), (long long)g);
          return;
        }
      } else if (ok && g > 0) {
        ok = big == small * g;
      } else if (ok) {
        ok = small == 0 ? big == 0 : big % small == 0;
      }
      if (!ok) {
        report(k, "result %s does not fit operand %s %s along dimension %lld%s", shape_str(y, 0),
               shape_str(x, 1), gathers ? "gathered" : op == HL_OP_ALL_TO_ALL ? "exchanged"
                                                                             : "scattered",
               (long long)d, g > 0 ? " by the group size" : "");
        return;
      }
    } else if (!hl_shape_equal(x, y)) {
      report(k, "result %s differs from operand %d %s", shape_str(y, 0), i, shape_str(x, 1));
      return;
    }
  }
}

// The data operands of collective-reduce / dynamic-root collective-broadcast
// (newest XLA): their shapes are the result's (a tuple for several); with
// has_dynamic_root the last operand is s32[number of data operands]. `verb`
// names what the instruction does with them ("reduce", "broadcast").
static void check_rooted_collective_operands(check_t *k, const char *verb) {
  const hl_instruction_t *inst = k->inst;
  int n = inst->operand_count, data = inst->attrs.has_dynamic_root ? n - 1 : n;
  if (data < 1) {
    report(k, "needs at least one operand to %s%s", verb,
           inst->attrs.has_dynamic_root ? " besides the roots operand" : "");
    return;
  }
  if (inst->attrs.has_dynamic_root) {
    const hl_shape_t *r = operand_shape(inst, n - 1);
    if (r->dtype != HL_S32 || r->rank != 1 || r->dims[0] != data)
      report(k, "with has_dynamic_root=true the last operand %s must be s32[%d] (one root per "
             "%s operand)", shape_str(r, 0), data, verb[0] == 'r' ? "reduced" : "broadcast");
  }
  for (int i = 0; i < data; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    const hl_shape_t *y = collective_result(k, &inst->shape, i, data);
    if (!y || !expect_array(k, x, "operand")) return;
    if (!hl_shape_equal(x, y)) {
      report(k, "result %s differs from operand %d %s", shape_str(y, 0), i, shape_str(x, 1));
      return;
    }
  }
}

// collective-reduce (runtime/kernels/collective_reduce.c).
static void check_collective_reduce(check_t *k) {
  if (!hl_instruction_to_apply(k->inst)) {
    report(k, "needs a reducer computation (to_apply)");
    return;
  }
  check_rooted_collective_operands(k, "reduce");
}

// collective-broadcast with has_dynamic_root
// (runtime/kernels/collective_broadcast_root.c).
static void check_dynamic_root_broadcast(check_t *k) {
  check_rooted_collective_operands(k, "broadcast");
}

// shuffle (newest XLA; runtime/kernels/shuffle.c): result = operand shape,
// distinct in-range dimensions, a mode with its attribute.
static void check_shuffle(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_attrs_t *a = &inst->attrs;
  if (inst->operand_count != 1) return;
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "operand")) return;
  expect_result(k, x, "operand shape");
  if (!check_dim_set(k, "dimensions", &a->dimensions, x->rank, NULL)) return;
  if (a->shuffle_mode == HL_SHUFFLE_ROTATE) {
    if (a->shuffle_shifts.n != a->dimensions.n)
      report(k, "mode=rotate needs one shift per dimension (%d), has %d", a->dimensions.n,
             a->shuffle_shifts.n);
  } else if (a->shuffle_mode == HL_SHUFFLE_PERMUTE) {
    if (!a->shuffle_indices) report(k, "mode=permute needs indices=<literal>");
  } else {
    report(k, "needs mode=rotate or mode=permute");
  }
}

// complex, reduce-precision, stochastic-convert, rng, rng-bit-generator,
// rng-get-and-update-state (runtime/kernels/complex.c, precision.c, rng.c).
static void check_complex_op(check_t *k) {
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

static void check_reduce_precision(check_t *k) {
  check_unary(k);
  if (k->inst->attrs.exponent_bits < 1 || k->inst->attrs.mantissa_bits < 0)
    report(k, "exponent_bits=%d must be >= 1 and mantissa_bits=%d >= 0",
           k->inst->attrs.exponent_bits, k->inst->attrs.mantissa_bits);
}

static void check_stochastic_convert(check_t *k) {
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

static void check_rng(check_t *k) {
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

static void check_rng_bit_generator(check_t *k) {
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

static void check_convolution(check_t *k) {
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

static void check_reduce_window(check_t *k) {
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

static void check_select_and_scatter(check_t *k) {
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
static void check_batch_norm(check_t *k, int count, int nvec, bool tuple_result) {
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

static void check_cholesky(check_t *k) {
  const hl_shape_t *a = operand_shape(k->inst, 0);
  if (!expect_array(k, a, "operand")) return;
  if (a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2])
    report(k, "operand %s must be [..., n, n]", shape_str(a, 0));
  expect_result(k, a, "operand shape");
}

static void check_triangular_solve(check_t *k) {
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

static void check_fft(check_t *k) {
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
static void check_bitcast(check_t *k) {
  hl_status_t st = hl_layout_check_bitcast(operand_shape(k->inst, 0), &k->inst->shape);
  if (st) report(k, "%s", hl_status_message(st));
  hl_status_free(st);
}

static void check_op(check_t *k) {
  switch (k->inst->opcode) {
    case HL_OP_BITCAST: check_bitcast(k); break;
    case HL_OP_CONVOLUTION: check_convolution(k); break;
    case HL_OP_REDUCE_WINDOW: check_reduce_window(k); break;
    case HL_OP_SELECT_AND_SCATTER: check_select_and_scatter(k); break;
    case HL_OP_BATCH_NORM_TRAINING: check_batch_norm(k, 3, 2, true); break;
    case HL_OP_BATCH_NORM_INFERENCE: check_batch_norm(k, 5, 4, false); break;
    case HL_OP_BATCH_NORM_GRAD: check_batch_norm(k, 5, 3, true); break;
    case HL_OP_CHOLESKY: check_cholesky(k); break;
    case HL_OP_TRIANGULAR_SOLVE: check_triangular_solve(k); break;
    case HL_OP_FFT: check_fft(k); break;
    case HL_OP_ABS: case HL_OP_ACOS: case HL_OP_ACOSH: case HL_OP_ASIN: case HL_OP_ASINH:
    case HL_OP_ATAN: case HL_OP_ATANH: case HL_OP_CBRT: case HL_OP_CEIL: case HL_OP_CLZ:
    case HL_OP_COS: case HL_OP_COSH: case HL_OP_ERF: case HL_OP_EXP: case HL_OP_EXPM1:
    case HL_OP_FLOOR: case HL_OP_IS_FINITE: case HL_OP_LOG: case HL_OP_LOG1P:
    case HL_OP_LOGISTIC: case HL_OP_NEGATE: case HL_OP_NOT: case HL_OP_POPCNT:
    case HL_OP_ROUND_NEAREST_AFZ: case HL_OP_ROUND_NEAREST_EVEN: case HL_OP_RSQRT:
    case HL_OP_SIGN: case HL_OP_SIN: case HL_OP_SINH: case HL_OP_SQRT: case HL_OP_TAN:
    case HL_OP_TANH: case HL_OP_COPY: case HL_OP_REAL: case HL_OP_IMAG:
      check_unary(k);
      break;
    case HL_OP_MULHI: check_binary(k, false); break;
    // CHLO special functions (kernels/special_functions.c).
    case HL_OP_BESSEL_I1E: case HL_OP_DIGAMMA: case HL_OP_ERF_INV: case HL_OP_ERFC:
    case HL_OP_LGAMMA:
      check_unary(k);
      break;
    case HL_OP_NEXT_AFTER: case HL_OP_POLYGAMMA: case HL_OP_ZETA: check_binary(k, false); break;
    case HL_OP_COMPLEX: check_complex_op(k); break;
    case HL_OP_REDUCE_PRECISION: check_reduce_precision(k); break;
    case HL_OP_STOCHASTIC_CONVERT: check_stochastic_convert(k); break;
    case HL_OP_RNG: check_rng(k); break;
    case HL_OP_RNG_BIT_GENERATOR: check_rng_bit_generator(k); break;
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
    case HL_OP_PAD: check_pad(k); break;
    case HL_OP_REVERSE: check_reverse(k); break;
    case HL_OP_DYNAMIC_SLICE: check_dynamic_slice(k); break;
    case HL_OP_DYNAMIC_UPDATE_SLICE: check_dynamic_update_slice(k); break;
    case HL_OP_GATHER: check_gather(k); break;
    case HL_OP_SCATTER: check_scatter(k); break;
    case HL_OP_SORT: check_sort(k); break;
    case HL_OP_TOPK: check_topk(k); break;
    case HL_OP_MAP: check_map(k); break;
    case HL_OP_GET_DIMENSION_SIZE: check_dimension_size(k, false); break;
    case HL_OP_SET_DIMENSION_SIZE: check_dimension_size(k, true); break;
    case HL_OP_OPTIMIZATION_BARRIER: case HL_OP_DOMAIN: case HL_OP_ASYNC_UPDATE:
      if (k->inst->operand_count != 1)
        report(k, "expects 1 operand, has %d", k->inst->operand_count);
      else
        expect_result(k, operand_shape(k->inst, 0), "operand shape");
      break;
    case HL_OP_COPY_START: check_copy_start(k); break;
    case HL_OP_COPY_DONE: check_done(k, 0, "copy-start"); break;
    case HL_OP_ASYNC_START: check_async_start(k); break;
    case HL_OP_ASYNC_DONE: check_done(k, 1, "async-start"); break;
    case HL_OP_REPLICA_ID: case HL_OP_PARTITION_ID:
      if (!is_scalar_of(&k->inst->shape, HL_U32))
        report(k, "result shape %s must be u32[]", shape_str(&k->inst->shape, 0));
      break;
    case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START: case HL_OP_ALL_GATHER:
    case HL_OP_ALL_GATHER_START: case HL_OP_REDUCE_SCATTER: case HL_OP_ALL_TO_ALL:
    case HL_OP_COLLECTIVE_BROADCAST:
      if (k->inst->opcode == HL_OP_COLLECTIVE_BROADCAST && k->inst->attrs.has_dynamic_root) {
        check_dynamic_root_broadcast(k);
        break;
      }
      check_collective(k);
      break;
    case HL_OP_COLLECTIVE_REDUCE: check_collective_reduce(k); break;
    case HL_OP_SHUFFLE: check_shuffle(k); break;
    case HL_OP_COLLECTIVE_PERMUTE: case HL_OP_COLLECTIVE_PERMUTE_START:
      // slice_sizes marks XLA's combined (in-place) form, checked by its
      // kernel; without it any operand count is the variadic form.
      if (k->inst->attrs.dynamic_slice_sizes.n == 0) check_collective(k);
      break;
    case HL_OP_ALL_REDUCE_DONE:
      if (k->inst->operand_count == 1) expect_result(k, operand_shape(k->inst, 0), "start");
      break;
    case HL_OP_ALL_GATHER_DONE: check_done(k, 1, "all-gather-start"); break;
    case HL_OP_COLLECTIVE_PERMUTE_DONE: check_done(k, 1, "collective-permute-start"); break;
    default:
      break;  // outside the foundation set: generic checks only
  }
}

//===----------------------------------------------------------------------===//
// Module walk
//===----------------------------------------------------------------------===//

static void verify_computation(verifier_t *v, const hl_computation_t *c) {
  if (!c->root)
    report_comp(v, c, "has no root instruction");
  else if (c->root->parent != c)
    report_comp(v, c, "root instruction '%s' belongs to another computation", c->root->name);
  for (int i = 0; i < c->instruction_count; i++) {
    const hl_instruction_t *inst = c->instructions[i];
    if (!inst) {
      report_comp(v, c, "instruction %d is missing", i);
      continue;
    }
    check_t k = {v, inst};
    if (inst->parent != c) {
      report(&k, "is listed in computation '%s' but belongs to another", c->name);
      continue;
    }
    // Operands must come first so evaluation order is the list order.
    for (int j = 0; j < inst->operand_count; j++) {
      const hl_instruction_t *op = inst->operands ? inst->operands[j] : NULL;
      if (op && op->parent == c && op->index >= i)
        report(&k, "operand %d '%s' is defined after its use", j, op->name);
    }
    if (check_generic(&k)) check_op(&k);
  }
}

hl_status_t hl_verify_module(const hl_module_t *module) {
  if (!module) return HL_INVALID("verifier: no module");
  verifier_t v = {module, {0}, 0};
  hl_strbuf_init(&v.problems);
  if (!module->entry) report_comp(&v, NULL, "has no entry computation");
  for (int i = 0; i < module->computation_count; i++) {
    const hl_computation_t *c = module->computations[i];
    if (!c) {
      v.count++;
      hl_strbuf_appendf(&v.problems, "%smodule '%s': computation %d is missing",
                        v.count > 1 ? "\n" : "", module->name ? module->name : "?", i);
      continue;
    }
    verify_computation(&v, c);
  }
  if (v.count == 0) {
    hl_strbuf_deinit(&v.problems);
    return NULL;
  }
  if (v.problems.failed) {
    hl_strbuf_deinit(&v.problems);
    return HL_OOM();
  }
  hl_status_t st = HL_INVALID("%s", hl_strbuf_cstr(&v.problems));
  hl_strbuf_deinit(&v.problems);
  return st;
}
