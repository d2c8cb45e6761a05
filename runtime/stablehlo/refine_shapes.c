// Shape refinement: programs written with dynamic dimensions ('?', what
// jax.export writes for symbolic shapes) run the way StableHLO's own tools
// run them (stablehlo-refine-arguments + stablehlo-refine-shapes): every
// dynamic shape becomes the static one the concrete arguments imply. It
// happens during the one lowering, op by op, with every call inlined (JAX's
// exports call @_wrapped_jax_export_main and friends with dimension values
// computed by get_dimension_size, which must fold through the call):
//  - the entry's parameters take the shapes of the arguments given;
//  - integer shape computations (get_dimension_size, constants, the entry's
//    integer arguments, arithmetic, reshapes, concatenations, ...) fold to
//    values (fold());
//  - the dynamic_* ops take those values as the static attributes of their
//    static forms (hl_refine_values, hl_refine_dynamic_type);
//  - every other result takes its dimensions from its operands (refine_result);
//  - shape_assertion custom calls are checked (and vanish), failing with
//    their own message; the stablehlo.dynamic_* custom calls become their
//    static ops.
// A dimension that cannot be refined is an error naming the op.
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/stablehlo/lower_internal.h"

// An integer (or i1) array known before running.
struct hl_refine_value {
  int rank;
  int64_t dims[HL_MAX_RANK];
  int64_t n;   // < 0: not foldable (remembered so that shared values are not retried)
  int64_t *v;  // owned; n elements, row-major
};

enum { kMaxFoldElements = 1 << 16, kMaxFoldDepth = 4000 };

static bool shape_is_dynamic(const hl_shape_t *s) {
  if (s->dtype == HL_TUPLE) {
    for (int i = 0; i < s->tuple_count; i++)
      if (shape_is_dynamic(&s->tuple[i])) return true;
    return false;
  }
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] < 0) return true;
  return (s->dynamic_mask & ((s->rank >= 32 ? 0xFFFFFFFFu : (1u << s->rank) - 1))) != 0;
}

bool hl_refine_shape_is_dynamic(const hl_shape_t *s) { return shape_is_dynamic(s); }

// `actual` may stand where `declared` was written: same type, every static
// dimension equal, every bounded dynamic one within its bound.
bool hl_refine_compatible(const hl_shape_t *declared, const hl_shape_t *actual) {
  if (declared->dtype != actual->dtype) return false;
  if (declared->dtype == HL_TUPLE) {
    if (declared->tuple_count != actual->tuple_count) return false;
    for (int i = 0; i < declared->tuple_count; i++)
      if (!hl_refine_compatible(&declared->tuple[i], &actual->tuple[i])) return false;
    return true;
  }
  if (declared->rank != actual->rank) return false;
  for (int d = 0; d < declared->rank; d++) {
    bool dynamic = declared->dynamic_mask & (1u << d);
    if (declared->dims[d] >= 0 && !dynamic && declared->dims[d] != actual->dims[d]) return false;
    // A bounded dynamic dimension (`?` with a bound, f32[<=8]) takes at most its bound.
    if (dynamic && declared->dims[d] >= 0 && actual->dims[d] > declared->dims[d]) return false;
  }
  return true;
}

static void make_static(hl_shape_t *s) {
  s->dynamic_mask = 0;
  for (int i = 0; s->dtype == HL_TUPLE && i < s->tuple_count; i++) make_static(&s->tuple[i]);
}

//===----------------------------------------------------------------------===//
// Folding integer values
//===----------------------------------------------------------------------===//

static void value_free(hl_refine_value_t *v) {
  if (!v) return;
  hl_free(v->v);
  hl_free(v);
}

void hl_refine_release(hl_lower_t *L) {
  for (int64_t i = 0; i < L->folded_size; i++) value_free(L->folded[i]);
  hl_free(L->folded);
  L->folded = NULL;
  L->folded_size = 0;
}

static hl_status_t memo_put(hl_lower_t *L, int64_t id, hl_refine_value_t *v) {
  if (id < 0) return HL_INTERNAL_ERROR("negative instruction id");
  if (id >= L->folded_size) {
    int64_t size = L->folded_size ? L->folded_size : 256;
    while (size <= id) size *= 2;
    hl_refine_value_t **grown = hl_realloc(L->folded, (size_t)size * sizeof(*grown));
    if (!grown) return HL_OOM();
    memset(grown + L->folded_size, 0, (size_t)(size - L->folded_size) * sizeof(*grown));
    L->folded = grown;
    L->folded_size = size;
  }
  L->folded[id] = v;
  return NULL;
}

// The value as the element type holds it (wrapping, as the kernels compute).
static int64_t wrap(hl_dtype_t t, int64_t x) {
  if (t == HL_PRED) return x != 0;
  int bits = hl_dtype_bit_width(t);
  if (bits <= 0 || bits >= 64) return x;
  uint64_t mask = (UINT64_C(1) << bits) - 1, u = (uint64_t)x & mask;
  if (hl_dtype_is_signed_int(t) && (u >> (bits - 1))) u |= ~mask;
  return (int64_t)u;
}

static bool foldable_type(hl_dtype_t t) { return t == HL_PRED || hl_dtype_is_integer(t); }

static hl_status_t new_value(const hl_shape_t *s, hl_refine_value_t **out) {
  *out = NULL;
  int64_t n = hl_shape_element_count(s);
  hl_refine_value_t *v = hl_calloc(1, sizeof(*v));
  if (!v) return HL_OOM();
  v->rank = s->rank;
  memcpy(v->dims, s->dims, sizeof(v->dims));
  v->n = n;
  v->v = hl_calloc((size_t)n + 1, sizeof(int64_t));
  if (!v->v) {
    hl_free(v);
    return HL_OOM();
  }
  *out = v;
  return NULL;
}

static hl_status_t not_known(const hl_instruction_t *inst, const char *why) {
  return HL_INVALID("line %d:%d: %s (%s) %s", inst->line, inst->column, hl_opcode_name(inst->opcode),
                    hl_shape_debug_string(&inst->shape), why);
}

static hl_status_t fold(hl_lower_t *L, const hl_instruction_t *inst, int depth,
                        const hl_refine_value_t **out);

// Row-major index of `idx` in dims.
static int64_t linear(const int64_t *dims, int rank, const int64_t *idx) {
  int64_t k = 0;
  for (int d = 0; d < rank; d++) k = k * dims[d] + idx[d];
  return k;
}

// idx lies inside the value (folding runs before the verifier: attributes
// may be malformed).
static bool inside(const hl_refine_value_t *a, const int64_t *idx) {
  for (int d = 0; d < a->rank; d++)
    if (idx[d] < 0 || idx[d] >= a->dims[d]) return false;
  return true;
}

static void unlinear(const int64_t *dims, int rank, int64_t k, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = dims[d] ? k % dims[d] : 0;
    k = dims[d] ? k / dims[d] : 0;
  }
}

static bool compare(hl_comparison_direction_t dir, hl_dtype_t t, int64_t a, int64_t b) {
  bool u = hl_dtype_is_unsigned_int(t) || t == HL_PRED;
  int c = u ? ((uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b)
            : (a < b ? -1 : a > b);
  switch (dir) {
    case HL_CMP_EQ: return c == 0;
    case HL_CMP_NE: return c != 0;
    case HL_CMP_GE: return c >= 0;
    case HL_CMP_GT: return c > 0;
    case HL_CMP_LE: return c <= 0;
    case HL_CMP_LT: return c < 0;
    default: return false;
  }
}

static hl_status_t binary(const hl_instruction_t *inst, hl_dtype_t t, int64_t a, int64_t b,
                          int64_t *r) {
  bool u = hl_dtype_is_unsigned_int(t);
  switch (inst->opcode) {
    case HL_OP_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return NULL;
    case HL_OP_SUBTRACT: *r = (int64_t)((uint64_t)a - (uint64_t)b); return NULL;
    case HL_OP_MULTIPLY: *r = (int64_t)((uint64_t)a * (uint64_t)b); return NULL;
    case HL_OP_DIVIDE:
    case HL_OP_REMAINDER:
      if (b == 0) return not_known(inst, "divides by zero while computing a shape");
      if (u) *r = (int64_t)(inst->opcode == HL_OP_DIVIDE ? (uint64_t)a / (uint64_t)b
                                                          : (uint64_t)a % (uint64_t)b);
      else if (b == -1) *r = inst->opcode == HL_OP_DIVIDE ? (int64_t)(0 - (uint64_t)a) : 0;
      else *r = inst->opcode == HL_OP_DIVIDE ? a / b : a % b;  // C truncates, as StableHLO
      return NULL;
    case HL_OP_MAXIMUM: *r = compare(HL_CMP_GT, t, a, b) ? a : b; return NULL;
    case HL_OP_MINIMUM: *r = compare(HL_CMP_LT, t, a, b) ? a : b; return NULL;
    case HL_OP_AND: *r = a & b; return NULL;
    case HL_OP_OR: *r = a | b; return NULL;
    case HL_OP_XOR: *r = a ^ b; return NULL;
    default: return not_known(inst, "is not folded while refining shapes");
  }
}

static hl_status_t fold_op(hl_lower_t *L, const hl_instruction_t *inst, int depth,
                           hl_refine_value_t *r) {
  hl_dtype_t t = inst->shape.dtype;
  const hl_refine_value_t *a[3] = {NULL, NULL, NULL};
  int nops = inst->operand_count;
  switch (inst->opcode) {
    case HL_OP_CONSTANT:
      if (!inst->attrs.literal) return not_known(inst, "has no value");
      for (int64_t i = 0; i < r->n; i++) r->v[i] = hl_literal_get_s64(inst->attrs.literal, i);
      return NULL;
    case HL_OP_PARAMETER: {
      int64_t k = inst->attrs.parameter_number;
      // Scalar integer arguments only: JAX's older exports pass the dimension
      // variables so (`%arg0: tensor<i64>` before the arrays).
      if (inst->parent != L->refine_entry || k < 0 || k >= L->refine_arg_count ||
          !L->refine_args[k] || L->refine_args[k]->shape.rank != 0)
        return not_known(inst, "is a parameter whose value is not known before running");
      const hl_literal_t *lit = L->refine_args[k];
      if (hl_shape_element_count(&lit->shape) != r->n) return not_known(inst, "has another size");
      for (int64_t i = 0; i < r->n; i++) r->v[i] = hl_literal_get_s64(lit, i);
      return NULL;
    }
    case HL_OP_GET_DIMENSION_SIZE: {
      const hl_shape_t *s = &inst->operands[0]->shape;
      int64_t d = inst->attrs.dimensions.n ? inst->attrs.dimensions.v[0] : -1;
      if (d < 0 || d >= s->rank || s->dims[d] < 0) return not_known(inst, "has no static size");
      r->v[0] = s->dims[d];
      return NULL;
    }
    case HL_OP_IOTA: {
      int64_t d = inst->attrs.dimensions.n ? inst->attrs.dimensions.v[0] : 0;
      int64_t idx[HL_MAX_RANK];
      if (r->rank && (d < 0 || d >= r->rank)) return not_known(inst, "has a malformed dimension");
      for (int64_t i = 0; i < r->n; i++) {
        unlinear(r->dims, r->rank, i, idx);
        r->v[i] = r->rank ? idx[d] : 0;
      }
      return NULL;
    }
    default:
      break;
  }
  if (nops < 1 || nops > 3) return not_known(inst, "is not folded while refining shapes");
  for (int i = 0; i < nops; i++) HL_RETURN_IF_ERROR(fold(L, inst->operands[i], depth + 1, &a[i]));
  hl_dtype_t in_t = inst->operands[0]->shape.dtype;
  int64_t idx[HL_MAX_RANK], src[HL_MAX_RANK];
  switch (inst->opcode) {
    case HL_OP_CONVERT:
    case HL_OP_RESHAPE:
    case HL_OP_COPY:
    case HL_OP_BITCAST:
      if (a[0]->n != r->n) return not_known(inst, "changes the element count");
      for (int64_t i = 0; i < r->n; i++) r->v[i] = a[0]->v[i];
      return NULL;
    case HL_OP_BROADCAST: {
      const hl_i64_list_t *m = &inst->attrs.dimensions;
      if (m->n != a[0]->rank) return not_known(inst, "has malformed dimensions");
      for (int d = 0; d < m->n; d++)
        if (m->v[d] < 0 || m->v[d] >= r->rank) return not_known(inst, "has malformed dimensions");
      for (int64_t i = 0; i < r->n; i++) {
        unlinear(r->dims, r->rank, i, idx);
        for (int d = 0; d < m->n; d++) src[d] = a[0]->dims[d] == 1 ? 0 : idx[m->v[d]];
        if (!inside(a[0], src)) return not_known(inst, "reads outside its operand");
        r->v[i] = a[0]->v[linear(a[0]->dims, a[0]->rank, src)];
      }
      return NULL;
    }
    case HL_OP_TRANSPOSE: {
      const hl_i64_list_t *p = &inst->attrs.dimensions;
      if (p->n != r->rank || a[0]->rank != r->rank) return not_known(inst, "has a malformed permutation");
      for (int d = 0; d < r->rank; d++)
        if (p->v[d] < 0 || p->v[d] >= r->rank) return not_known(inst, "has a malformed permutation");
      for (int64_t i = 0; i < r->n; i++) {
        unlinear(r->dims, r->rank, i, idx);
        for (int d = 0; d < r->rank; d++) src[p->v[d]] = idx[d];
        if (!inside(a[0], src)) return not_known(inst, "reads outside its operand");
        r->v[i] = a[0]->v[linear(a[0]->dims, a[0]->rank, src)];
      }
      return NULL;
    }
    case HL_OP_SLICE: {
      if (inst->attrs.slice_count != r->rank || a[0]->rank != r->rank)
        return not_known(inst, "has malformed slices");
      for (int64_t i = 0; i < r->n; i++) {
        unlinear(r->dims, r->rank, i, idx);
        for (int d = 0; d < r->rank; d++) {
          const hl_slice_dim_t *sd = &inst->attrs.slice_dimensions[d];
          src[d] = sd->start + idx[d] * (sd->stride ? sd->stride : 1);
        }
        if (!inside(a[0], src)) return not_known(inst, "reads outside its operand");
        r->v[i] = a[0]->v[linear(a[0]->dims, a[0]->rank, src)];
      }
      return NULL;
    }
    default:
      break;
  }
  // Elementwise (a scalar operand of clamp / select stands for every element).
  for (int k = 0; k < nops; k++)
    if (a[k]->n != r->n && a[k]->n != 1) return not_known(inst, "has operands of other sizes");
  for (int64_t i = 0; i < r->n; i++) {
    int64_t x = a[0]->v[a[0]->n == 1 ? 0 : i];
    int64_t y = nops > 1 ? a[1]->v[a[1]->n == 1 ? 0 : i] : 0;
    int64_t z = nops > 2 ? a[2]->v[a[2]->n == 1 ? 0 : i] : 0;
    switch (inst->opcode) {
      case HL_OP_NEGATE: r->v[i] = (int64_t)(0 - (uint64_t)x); break;
      case HL_OP_ABS: r->v[i] = x < 0 && !hl_dtype_is_unsigned_int(t) ? (int64_t)(0 - (uint64_t)x) : x; break;
      case HL_OP_SIGN: r->v[i] = hl_dtype_is_unsigned_int(t) ? x != 0 : (x > 0) - (x < 0); break;
      case HL_OP_NOT: r->v[i] = t == HL_PRED ? !x : ~x; break;
      case HL_OP_COMPARE: r->v[i] = compare(inst->attrs.comparison_direction, in_t, x, y); break;
      case HL_OP_SELECT: r->v[i] = x ? y : z; break;
      case HL_OP_CLAMP: {  // clamp(min, x, max)
        int64_t v = compare(HL_CMP_LT, t, y, x) ? x : y;
        r->v[i] = compare(HL_CMP_GT, t, v, z) ? z : v;
        break;
      }
      default:
        if (nops != 2) return not_known(inst, "is not folded while refining shapes");
        HL_RETURN_IF_ERROR(binary(inst, t, x, y, &r->v[i]));
    }
  }
  return NULL;
}

static hl_status_t fold_concatenate(hl_lower_t *L, const hl_instruction_t *inst, int depth,
                                    hl_refine_value_t *r) {
  int64_t d = inst->attrs.dimensions.n ? inst->attrs.dimensions.v[0] : 0;
  int64_t offset = 0, idx[HL_MAX_RANK];
  if (d < 0 || d >= r->rank) return not_known(inst, "has a malformed dimension");
  for (int k = 0; k < inst->operand_count; k++) {
    const hl_refine_value_t *a;
    HL_RETURN_IF_ERROR(fold(L, inst->operands[k], depth + 1, &a));
    if (a->rank != r->rank) return not_known(inst, "has operands of another rank");
    for (int64_t i = 0; i < a->n; i++) {
      unlinear(a->dims, a->rank, i, idx);
      idx[d] += offset;
      if (!inside(r, idx)) return not_known(inst, "writes outside its result");
      r->v[linear(r->dims, r->rank, idx)] = a->v[i];
    }
    offset += a->dims[d];
  }
  return NULL;
}

static hl_status_t fold(hl_lower_t *L, const hl_instruction_t *inst, int depth,
                        const hl_refine_value_t **out) {
  *out = NULL;
  if (inst->id >= 0 && inst->id < L->folded_size && L->folded[inst->id]) {
    if (L->folded[inst->id]->n < 0)  // failed before (not retried: DAGs share values)
      return not_known(inst, "depends on a value not known before running");
    *out = L->folded[inst->id];
    return NULL;
  }
  if (depth > kMaxFoldDepth) return not_known(inst, "is too deep a shape computation to fold");
  const hl_shape_t *s = &inst->shape;
  if (s->dtype == HL_TUPLE || !foldable_type(s->dtype))
    return not_known(inst, "is not an integer value (shape computations are)");
  if (shape_is_dynamic(s)) return not_known(inst, "has a dynamic shape");
  if (hl_shape_element_count(s) > kMaxFoldElements)
    return not_known(inst, "is too large a value for a shape computation");
  hl_refine_value_t *r;
  HL_RETURN_IF_ERROR(new_value(s, &r));
  hl_status_t st = inst->opcode == HL_OP_CONCATENATE ? fold_concatenate(L, inst, depth, r)
                                                     : fold_op(L, inst, depth, r);
  for (int64_t i = 0; !st && i < r->n; i++) r->v[i] = wrap(s->dtype, r->v[i]);
  if (st && hl_status_code(st) != HL_OUT_OF_MEMORY) {
    r->n = -1;  // remembered as not foldable
    hl_status_t e = memo_put(L, inst->id, r);
    if (e) {
      value_free(r);
      hl_status_free(st);
      return e;
    }
    return st;
  }
  if (!st) st = memo_put(L, inst->id, r);
  if (st) {
    value_free(r);
    return st;
  }
  *out = r;
  return NULL;
}

hl_status_t hl_refine_values(hl_lower_t *L, const hl_mlir_op_t *op, int operand,
                             const hl_instruction_t *inst, hl_i64_list_t *out) {
  const hl_refine_value_t *v;
  hl_status_t st = fold(L, inst, 0, &v);
  if (st) {
    hl_status_t e = hl_lower_op_error(L, op,
                                      "needs operand %d as a value known from the argument shapes; "
                                      "it depends on %s",
                                      operand, hl_status_message(st));
    hl_status_free(st);
    return e;
  }
  if (v->n > HL_MAX_RANK * 4 + 64)
    return hl_lower_op_error(L, op, "has a shape operand of %lld values", (long long)v->n);
  return hl_i64_list_set(out, v->v, (int)v->n);
}

//===----------------------------------------------------------------------===//
// Result types
//===----------------------------------------------------------------------===//

// dynamic_broadcast_in_dim, dynamic_iota, dynamic_reshape: the result's
// dimensions are the values of their shape operand.
hl_status_t hl_refine_dynamic_type(hl_lower_t *L, const hl_mlir_op_t *op,
                                   hl_instruction_t *const *operands, int n,
                                   const hl_shape_t *declared, hl_shape_t *out, bool *handled) {
  *handled = false;
  const char *name = op->name;
  int k = -1;
  if (strcmp(name, "stablehlo.dynamic_broadcast_in_dim") == 0 ||
      strcmp(name, "stablehlo.dynamic_reshape") == 0)
    k = 1;
  else if (strcmp(name, "stablehlo.dynamic_iota") == 0)
    k = 0;
  if (k < 0 || !L->refining || !shape_is_dynamic(declared)) return NULL;
  if (k >= n) return hl_lower_op_error(L, op, "needs its output shape operand");
  hl_i64_list_t dims = {0};
  HL_RETURN_IF_ERROR(hl_refine_values(L, op, k, operands[k], &dims));
  hl_status_t st = NULL;
  if (dims.n != declared->rank)
    st = hl_lower_op_error(L, op, "has %d output dimensions for a rank-%d result", dims.n,
                           declared->rank);
  for (int d = 0; !st && d < dims.n; d++)
    if (dims.v[d] < 0 || (declared->dims[d] >= 0 && declared->dims[d] != dims.v[d]))
      st = hl_lower_op_error(L, op, "has output dimension %d = %lld, its type says %s", d,
                             (long long)dims.v[d], hl_shape_debug_string(declared));
  if (!st) {
    *out = hl_shape_array(declared->dtype, dims.n, dims.v);
    *handled = true;
  }
  hl_i64_list_deinit(&dims);
  return st;
}

static int64_t window_out(int64_t in, const hl_window_dim_t *w) {
  int64_t base = w->base_dilation > 1 ? w->base_dilation : 1;
  int64_t wd = w->window_dilation > 1 ? w->window_dilation : 1;
  int64_t stride = w->stride > 0 ? w->stride : 1;
  int64_t dilated = in > 0 ? (in - 1) * base + 1 : 0;
  int64_t padded = dilated + w->padding_low + w->padding_high;
  int64_t win = w->size > 0 ? (w->size - 1) * wd + 1 : 0;
  if (padded < win) return 0;
  return (padded - win) / stride + 1;
}

// Every entry of l is a dimension of a rank-`rank` shape.
static bool dims_in(const hl_i64_list_t *l, int rank) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] < 0 || l->v[i] >= rank) return false;
  return true;
}

static bool dim_in(int64_t d, int rank) { return d >= 0 && d < rank; }

static bool contains(const hl_i64_list_t *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return true;
  return false;
}

// Fills the dynamic dimensions of `r` (an array result) from the op's
// semantics; leaves those it cannot know at -1.
static void infer_array(const hl_instruction_t *inst, int result_index, hl_shape_t *r) {
  const hl_attrs_t *a = &inst->attrs;
  const hl_shape_t *o0 = inst->operand_count ? &inst->operands[0]->shape : NULL;
  int64_t want[HL_MAX_RANK];
  for (int d = 0; d < r->rank; d++) want[d] = -1;
  switch (inst->opcode) {
    case HL_OP_CONCATENATE: {
      int64_t cd = a->dimensions.n ? a->dimensions.v[0] : 0, sum = 0;
      if (!dim_in(cd, r->rank)) return;
      for (int k = 0; k < inst->operand_count; k++) {
        const hl_shape_t *s = &inst->operands[k]->shape;
        if (s->rank != r->rank) return;
        sum = sum < 0 || s->dims[cd] < 0 ? -1 : sum + s->dims[cd];
        for (int d = 0; d < r->rank; d++)
          if (d != cd && s->dims[d] >= 0) want[d] = s->dims[d];
      }
      want[cd] = sum;
      break;
    }
    case HL_OP_SLICE:
      for (int d = 0; d < r->rank && d < a->slice_count; d++) {
        const hl_slice_dim_t *s = &a->slice_dimensions[d];
        int64_t stride = s->stride > 0 ? s->stride : 1;
        want[d] = s->limit > s->start ? (s->limit - s->start + stride - 1) / stride : 0;
      }
      break;
    case HL_OP_TRANSPOSE:
      if (!o0 || !dims_in(&a->dimensions, o0->rank)) return;
      for (int d = 0; d < r->rank && d < a->dimensions.n; d++) want[d] = o0->dims[a->dimensions.v[d]];
      break;
    case HL_OP_BROADCAST:
      if (!o0 || !dims_in(&a->dimensions, r->rank)) return;
      for (int d = 0; d < a->dimensions.n && d < o0->rank; d++) want[a->dimensions.v[d]] = o0->dims[d];
      break;
    case HL_OP_REDUCE: {
      int nin = inst->operand_count / 2;
      if (nin < 1) return;
      const hl_shape_t *in = &inst->operands[result_index < nin ? result_index : 0]->shape;
      int k = 0;
      for (int d = 0; d < in->rank; d++)
        if (!contains(&a->dimensions, d) && k < r->rank) want[k++] = in->dims[d];
      break;
    }
    case HL_OP_REDUCE_WINDOW: {
      if (!o0) return;
      const hl_shape_t *in = &inst->operands[0]->shape;
      for (int d = 0; d < r->rank && d < a->window.n && d < in->rank; d++)
        if (in->dims[d] >= 0) want[d] = window_out(in->dims[d], &a->window.dims[d]);
      break;
    }
    case HL_OP_PAD:
      if (!o0) return;
      for (int d = 0; d < r->rank && d < a->padding_count && d < o0->rank; d++) {
        const hl_padding_dim_t *p = &a->padding_config[d];
        int64_t in = o0->dims[d];
        if (in >= 0)
          want[d] = in + p->edge_padding_low + p->edge_padding_high +
                    (in > 0 ? (in - 1) * p->interior_padding : 0);
      }
      break;
    case HL_OP_DYNAMIC_SLICE:
      for (int d = 0; d < r->rank && d < a->dynamic_slice_sizes.n; d++)
        want[d] = a->dynamic_slice_sizes.v[d];
      break;
    case HL_OP_DOT: {
      const hl_dot_dims_t *dn = &a->dot_dimension_numbers;
      if (inst->operand_count < 2) return;
      const hl_shape_t *l = o0, *rh = &inst->operands[1]->shape;
      if (!dims_in(&dn->lhs_batch_dimensions, l->rank)) return;
      int k = 0;
      for (int i = 0; i < dn->lhs_batch_dimensions.n && k < r->rank; i++)
        want[k++] = l->dims[dn->lhs_batch_dimensions.v[i]];
      for (int d = 0; d < l->rank && k < r->rank; d++)
        if (!contains(&dn->lhs_batch_dimensions, d) && !contains(&dn->lhs_contracting_dimensions, d))
          want[k++] = l->dims[d];
      for (int d = 0; d < rh->rank && k < r->rank; d++)
        if (!contains(&dn->rhs_batch_dimensions, d) && !contains(&dn->rhs_contracting_dimensions, d))
          want[k++] = rh->dims[d];
      break;
    }
    case HL_OP_GATHER: {
      const hl_gather_dims_t *g = &a->gather_dimension_numbers;
      if (inst->operand_count < 2) return;
      const hl_shape_t *idx = &inst->operands[1]->shape;
      int64_t ivd = g->index_vector_dim;
      int64_t batch[HL_MAX_RANK];
      int nb = 0;
      for (int d = 0; d < idx->rank; d++)
        if (d != ivd) batch[nb++] = idx->dims[d];
      int64_t offs[HL_MAX_RANK];
      int no = 0;
      for (int d = 0; d < a->gather_slice_sizes.n; d++)
        if (!contains(&g->collapsed_slice_dims, d) && !contains(&g->operand_batching_dims, d))
          if (no < HL_MAX_RANK) offs[no++] = a->gather_slice_sizes.v[d];
      int bi = 0, oi = 0;
      for (int d = 0; d < r->rank; d++) {
        if (contains(&g->offset_dims, d)) want[d] = oi < no ? offs[oi++] : -1;
        else want[d] = bi < nb ? batch[bi++] : -1;
      }
      break;
    }
    case HL_OP_CONVOLUTION: {
      const hl_conv_dims_t *c = &a->convolution_dimension_numbers;
      if (inst->operand_count < 2) return;
      const hl_shape_t *in = o0, *k = &inst->operands[1]->shape;
      if (!dim_in(c->input_batch_dimension, in->rank) || !dim_in(c->output_batch_dimension, r->rank) ||
          !dim_in(c->output_feature_dimension, r->rank) ||
          !dim_in(c->kernel_output_feature_dimension, k->rank) ||
          !dims_in(&c->input_spatial_dimensions, in->rank) ||
          !dims_in(&c->output_spatial_dimensions, r->rank) ||
          c->input_spatial_dimensions.n < c->output_spatial_dimensions.n)
        return;
      int64_t bgc = a->batch_group_count > 1 ? a->batch_group_count : 1;
      if (c->output_batch_dimension < r->rank && in->dims[c->input_batch_dimension] >= 0)
        want[c->output_batch_dimension] = in->dims[c->input_batch_dimension] / bgc;
      if (c->output_feature_dimension < r->rank)
        want[c->output_feature_dimension] = k->dims[c->kernel_output_feature_dimension];
      for (int i = 0; i < c->output_spatial_dimensions.n && i < a->window.n; i++) {
        int64_t ind = in->dims[c->input_spatial_dimensions.v[i]];
        if (ind >= 0 && c->output_spatial_dimensions.v[i] < r->rank)
          want[c->output_spatial_dimensions.v[i]] = window_out(ind, &a->window.dims[i]);
      }
      break;
    }
    case HL_OP_TRIANGULAR_SOLVE:
      if (inst->operand_count > 1) o0 = &inst->operands[1]->shape;
      // fall through
    default: {
      // Elementwise and shape-preserving ops (sort, scatter, reverse,
      // dynamic-update-slice, select-and-scatter, ...): the first operand of
      // the result's rank (clamp / select: a scalar bound or predicate
      // stands aside).
      // Unary and binary ops of one operand kind are elementwise, except these.
      static const hl_opcode_t kNotElementwise[] = {
          HL_OP_RESHAPE, HL_OP_GET_DIMENSION_SIZE, HL_OP_FFT, HL_OP_GET_TUPLE_ELEMENT,
          HL_OP_SET_DIMENSION_SIZE, HL_OP_BITCAST, HL_OP_RNG_BIT_GENERATOR};
      static const hl_opcode_t kPreserving[] = {
          HL_OP_SORT, HL_OP_SCATTER, HL_OP_DYNAMIC_UPDATE_SLICE, HL_OP_SELECT_AND_SCATTER,
          HL_OP_SELECT, HL_OP_CLAMP, HL_OP_TRIANGULAR_SOLVE, HL_OP_MAP};
      int arity = hl_opcode_arity(inst->opcode);
      bool ok = arity == 1 || arity == 2;
      for (size_t i = 0; i < sizeof(kNotElementwise) / sizeof(kNotElementwise[0]); i++)
        if (kNotElementwise[i] == inst->opcode) ok = false;
      for (size_t i = 0; i < sizeof(kPreserving) / sizeof(kPreserving[0]); i++)
        if (kPreserving[i] == inst->opcode) ok = true;
      if (!ok || !o0) return;
      const hl_shape_t *src = NULL;
      if (inst->opcode == HL_OP_SORT || inst->opcode == HL_OP_SCATTER) {
        if (result_index < inst->operand_count) src = &inst->operands[result_index]->shape;
      } else if (inst->opcode == HL_OP_TRIANGULAR_SOLVE) {
        src = o0;
      } else {
        for (int k = 0; k < inst->operand_count && !src; k++)
          if (inst->operands[k]->shape.rank == r->rank) src = &inst->operands[k]->shape;
      }
      if (!src || src->rank != r->rank) return;
      for (int d = 0; d < r->rank; d++) want[d] = src->dims[d];
      break;
    }
  }
  for (int d = 0; d < r->rank; d++)
    if ((r->dims[d] < 0 || (r->dynamic_mask & (1u << d))) && want[d] >= 0) {
      r->dims[d] = want[d];
      r->dynamic_mask &= ~(1u << d);
    }
}

hl_status_t hl_refine_result(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  if (!L->refining || !shape_is_dynamic(&inst->shape)) return NULL;
  hl_shape_t *s = &inst->shape;
  if (s->dtype == HL_TUPLE) {
    for (int i = 0; i < s->tuple_count; i++)
      if (s->tuple[i].dtype != HL_TUPLE) infer_array(inst, i, &s->tuple[i]);
  } else {
    infer_array(inst, 0, s);
  }
  if (shape_is_dynamic(s))
    return hl_lower_op_error(L, op, "has the result type %s, whose dynamic dimensions cannot be "
                             "refined from the argument shapes", hl_shape_debug_string(s));
  make_static(s);
  return NULL;
}

// The entry's parameter `i`: the shape of the argument given.
hl_status_t hl_refine_parameter(hl_lower_t *L, const hl_mlir_op_t *fn, int i,
                                const hl_shape_t *declared, hl_shape_t *out) {
  if (L->refine_arg_count != fn->regions[0].blocks[0].arg_count)
    return hl_lower_op_error(L, fn, "@%s takes %d arguments, %d were given to refine its shapes",
                             fn->symbol, fn->regions[0].blocks[0].arg_count, L->refine_arg_count);
  const hl_literal_t *arg = L->refine_args[i];
  if (!arg) return hl_shape_copy(declared, out);
  if (!hl_refine_compatible(declared, &arg->shape)) {
    char got[256];
    snprintf(got, sizeof(got), "%s", hl_shape_debug_string(&arg->shape));
    return hl_lower_op_error(L, fn, "@%s argument %d is %s, which does not fit its type %s",
                             fn->symbol, i, got, hl_shape_debug_string(declared));
  }
  HL_RETURN_IF_ERROR(hl_shape_copy(&arg->shape, out));
  out->has_layout = false;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Custom calls of shape-polymorphic exports
//===----------------------------------------------------------------------===//

static const char *call_target(const hl_mlir_op_t *op) {
  const hl_mlir_attr_t *t = hl_mlir_op_attr(op, "call_target_name");
  if (t && t->kind == HL_MATTR_STRING) return t->s;
  for (int i = 0; i < op->item_count; i++)
    if (op->items[i].kind == HL_MATTR_SYMBOL) return op->items[i].s;
  return NULL;
}

// custom_call @shape_assertion(%ok, %v0, %v1, ...) {error_message = "... {0} ... {1}"}:
// JAX's check that the arguments' shapes satisfy the export's constraints.
// Its operands fold to values; a false one stops with the message, {k}
// replaced by the value of operand k + 1.
static hl_status_t shape_assertion(hl_lower_t *L, const hl_mlir_op_t *op,
                                   hl_instruction_t *const *operands, int n) {
  const hl_mlir_attr_t *msg = hl_mlir_op_attr(op, "error_message");
  if (!msg || msg->kind != HL_MATTR_STRING)
    return hl_lower_op_error(L, op, "(shape_assertion) needs error_message = \"...\"");
  if (n < 1) return hl_lower_op_error(L, op, "(shape_assertion) needs its assertion operand");
  int64_t *vals = hl_calloc((size_t)n + 1, sizeof(int64_t));
  if (!vals) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; !st && k < n; k++) {
    const hl_refine_value_t *v;
    hl_status_t e = fold(L, operands[k], 0, &v);
    if (e) {
      st = hl_lower_op_error(L, op, "(shape_assertion) cannot be checked before running: operand "
                             "%d depends on %s", k, hl_status_message(e));
      hl_status_free(e);
    } else if (v->n != 1) {
      st = hl_lower_op_error(L, op, "(shape_assertion) operand %d is not a scalar", k);
    } else {
      vals[k] = v->v[0];
    }
  }
  if (!st && !vals[0]) {
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    for (const char *c = msg->s; *c; c++) {
      long k;
      char *end;
      if (*c == '{' && c[1] >= '0' && c[1] <= '9' && (k = strtol(c + 1, &end, 10)) >= 0 &&
          *end == '}' && k + 1 < n) {
        hl_dtype_t t = operands[k + 1]->shape.dtype;
        if (hl_dtype_is_unsigned_int(t)) hl_strbuf_appendf(&sb, "%" PRIu64, (uint64_t)vals[k + 1]);
        else hl_strbuf_appendf(&sb, "%" PRId64, vals[k + 1]);
        c = end;
      } else {
        hl_strbuf_appendf(&sb, "%c", *c);
      }
    }
    hl_strbuf_appendf(&sb, " (shape_assertion operand values:");
    for (int k = 1; k < n; k++) hl_strbuf_appendf(&sb, " %" PRId64, vals[k]);
    hl_strbuf_appendf(&sb, "%s)", n > 1 ? "" : " none");
    st = hl_lower_op_error(L, op, "shape assertion failed: %s",
                           sb.failed ? msg->s : hl_strbuf_cstr(&sb));
    hl_strbuf_deinit(&sb);
  }
  hl_free(vals);
  return st;
}

// Binds a lowered custom call's results (one value, or a tuple split).
static hl_status_t bind_all(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                            hl_instruction_t *inst) {
  int n = op->result_count;
  if (n <= 1 || inst->shape.dtype != HL_TUPLE) return hl_lower_bind_results(L, env, op, &inst, 1);
  hl_instruction_t **res = hl_calloc((size_t)n + 1, sizeof(*res));
  if (!res) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < n; i++)
    st = hl_lower_add_gte(L, env->computation, op, inst, i, &res[i]);
  if (!st) st = hl_lower_bind_results(L, env, op, res, n);
  hl_free(res);
  return st;
}

// The declared result types: one, or a tuple of them.
static hl_status_t result_shape(hl_lower_t *L, const hl_mlir_op_t *op, hl_shape_t *out) {
  if (!op->has_function_type || op->result_type_count != op->result_count || op->result_count < 1)
    return hl_lower_op_error(L, op, "needs its type as (operands) -> (results)");
  if (op->result_count == 1) return hl_shape_copy(&op->result_types[0], out);
  return hl_shape_tuple(op->result_types, op->result_count, out);
}

// Init value k of a reduce is the identity of what the reducer computes for
// output k: a constant and `op(param k, param N + k)` (either order) with op
// add / multiply / maximum / minimum / and / or. Otherwise the result depends
// on how often and where the init is applied, which the StableHLO spec
// (reduce) leaves to the implementation, as it does the order of a
// non-associative reducer: JAX's TPU data for dynamic_reduce_window differs
// from the one-init left fold here, so such a call is refused.
static bool init_is_identity(const hl_computation_t *reducer, int N, int k,
                             const hl_instruction_t *init) {
  const hl_instruction_t *root = reducer->root;
  while (init && (init->opcode == HL_OP_BROADCAST || init->opcode == HL_OP_RESHAPE ||
                  init->opcode == HL_OP_COPY) && init->operand_count == 1 &&
         hl_shape_element_count(&init->operands[0]->shape) == 1)
    init = init->operands[0];  // the same single value (JAX broadcasts its init to a scalar)
  if (!root || !init || init->opcode != HL_OP_CONSTANT || !init->attrs.literal) return false;
  const hl_instruction_t *r = root;
  if (root->opcode == HL_OP_TUPLE) {
    if (k >= root->operand_count) return false;
    r = root->operands[k];
  } else if (N != 1) {
    return false;
  }
  if (r->operand_count != 2) return false;
  const hl_instruction_t *a = r->operands[0], *b = r->operands[1];
  bool params = a->opcode == HL_OP_PARAMETER && b->opcode == HL_OP_PARAMETER &&
                ((a->attrs.parameter_number == k && b->attrs.parameter_number == N + k) ||
                 (a->attrs.parameter_number == N + k && b->attrs.parameter_number == k));
  if (!params) return false;
  hl_dtype_t t = init->shape.dtype;
  const hl_literal_t *lit = init->attrs.literal;
  bool fl = hl_dtype_is_float(t);
  double f = fl ? hl_literal_get_f64(lit, 0) : 0;
  int64_t i = fl ? 0 : hl_literal_get_s64(lit, 0);
  uint64_t u = fl ? 0 : hl_literal_get_u64(lit, 0);
  int bits = hl_dtype_bit_width(t);
  bool uns = hl_dtype_is_unsigned_int(t) || t == HL_PRED;
  uint64_t umax = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  int64_t smax = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
  switch (r->opcode) {
    case HL_OP_ADD: case HL_OP_OR: return fl ? f == 0 : i == 0;
    case HL_OP_MULTIPLY: return fl ? f == 1 : i == 1;
    case HL_OP_AND: return !fl && (uns ? u == umax : i == -1);
    case HL_OP_MAXIMUM: return fl ? f == -INFINITY : uns ? u == 0 : i == -smax - 1;
    case HL_OP_MINIMUM: return fl ? f == INFINITY : uns ? u == umax : i == smax;
    default: return false;
  }
}

// custom_call @stablehlo.dynamic_reduce_window(inputs..., inits...,
// window_dimensions, window_strides, base_dilations, window_dilations,
// padding) {called_computations = [@reducer]}: reduce_window once the five
// shape operands fold.
static hl_status_t dynamic_reduce_window(hl_lower_t *L, hl_lower_env_t *env,
                                         const hl_mlir_op_t *op, hl_instruction_t *const *operands,
                                         int n) {
  int N = (n - 5) / 2;
  if (n < 7 || (n - 5) % 2) return hl_lower_op_error(L, op, "needs inputs, inits and 5 window operands");
  int rank = operands[0]->shape.rank;
  hl_i64_list_t w[5] = {{0}, {0}, {0}, {0}, {0}};
  hl_status_t st = NULL;
  for (int i = 0; !st && i < 5; i++) st = hl_refine_values(L, op, 2 * N + i, operands[2 * N + i], &w[i]);
  for (int i = 0; !st && i < 5; i++)
    if (w[i].n != (i == 4 ? 2 * rank : rank))
      st = hl_lower_op_error(L, op, "window operand %d has %d values for rank %d", 2 * N + i,
                             w[i].n, rank);
  const hl_mlir_attr_t *cc = hl_mlir_op_attr(op, "called_computations");
  if (!st && (!cc || cc->kind != HL_MATTR_ARRAY || cc->n != 1 || cc->items[0].kind != HL_MATTR_SYMBOL))
    st = hl_lower_op_error(L, op, "needs called_computations = [@reducer]");
  hl_computation_t *reducer = NULL;
  if (!st) st = hl_lower_function(L, cc->items[0].s, op, &reducer);
  for (int k = 0; !st && k < N; k++)
    if (!init_is_identity(reducer, N, k, operands[N + k]))
      st = hl_lower_op_error(L, op, "(custom call @stablehlo.dynamic_reduce_window): init value "
                             "%d is not the identity of its reducer's operation, so the result "
                             "depends on how often the init is applied (implementation-defined "
                             "in the StableHLO spec; JAX's data for it comes from TPUs)", k);
  hl_shape_t shape = {0};
  if (!st) st = result_shape(L, op, &shape);
  hl_instruction_t *inst = NULL;
  if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_REDUCE_WINDOW, NULL, operands, 2 * N, &inst);
  if (!st) {
    inst->shape = shape;
    memset(&shape, 0, sizeof(shape));
    inst->attrs.has_window = true;
    inst->attrs.window.dims = hl_calloc((size_t)rank + 1, sizeof(hl_window_dim_t));
    if (!inst->attrs.window.dims) st = HL_OOM();
    else inst->attrs.window.n = rank;
  }
  for (int d = 0; !st && d < rank; d++)
    inst->attrs.window.dims[d] = (hl_window_dim_t){w[0].v[d], w[1].v[d], w[4].v[2 * d],
                                                   w[4].v[2 * d + 1], w[3].v[d], w[2].v[d], false};
  if (!st) st = hl_instruction_set_called(inst, &reducer, 1);
  if (!st) st = hl_refine_result(L, op, inst);
  if (!st) st = bind_all(L, env, op, inst);
  hl_shape_deinit(&shape);
  for (int i = 0; i < 5; i++) hl_i64_list_deinit(&w[i]);
  return st;
}

// custom_call @stablehlo.dynamic_top_k(operand, k): top-k along the last
// dimension (values, i32 indices) once k folds.
static hl_status_t dynamic_top_k(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                 hl_instruction_t *const *operands, int n) {
  if (n != 2 || op->result_count != 2)
    return hl_lower_op_error(L, op, "needs (operand, k) and two results");
  hl_i64_list_t k = {0};
  HL_RETURN_IF_ERROR(hl_refine_values(L, op, 1, operands[1], &k));
  const hl_shape_t *x = &operands[0]->shape;
  hl_status_t st = k.n == 1 ? NULL : hl_lower_op_error(L, op, "needs a scalar k");
  if (!st && (x->rank < 1 || k.v[0] < 0 || k.v[0] > x->dims[x->rank - 1]))
    st = hl_lower_op_error(L, op, "has k = %lld for an operand %s", (long long)k.v[0],
                           hl_shape_debug_string(x));
  hl_shape_t shape = {0};
  if (!st) st = result_shape(L, op, &shape);
  for (int i = 0; !st && i < 2; i++) {
    hl_shape_t *r = &shape.tuple[i];
    if (r->rank != x->rank) {
      st = hl_lower_op_error(L, op, "result %d has rank %d for a rank-%d operand", i, r->rank, x->rank);
      break;
    }
    memcpy(r->dims, x->dims, sizeof(r->dims));
    r->dims[r->rank - 1] = k.v[0];
    r->dynamic_mask = 0;
  }
  if (!st && (shape.tuple[0].dtype != x->dtype || shape.tuple[1].dtype != HL_S32))
    st = hl_lower_op_error(L, op, "needs results of the operand's type and i32 indices");
  hl_instruction_t *inst = NULL;
  if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_TOPK, NULL, operands, 1, &inst);
  if (!st) {
    inst->shape = shape;
    memset(&shape, 0, sizeof(shape));
    inst->attrs.k = k.v[0];
    inst->attrs.largest = true;
    st = bind_all(L, env, op, inst);
  }
  hl_shape_deinit(&shape);
  hl_i64_list_deinit(&k);
  return st;
}

// custom_call @stablehlo.dynamic_rng_bit_generator(state, output_shape)
// {rng_algorithm = ...}: rng_bit_generator once the output shape folds.
static hl_status_t dynamic_rng_bit_generator(hl_lower_t *L, hl_lower_env_t *env,
                                             const hl_mlir_op_t *op,
                                             hl_instruction_t *const *operands, int n) {
  if (n != 2 || op->result_count != 2)
    return hl_lower_op_error(L, op, "needs (state, output_shape) and two results");
  const hl_mlir_attr_t *alg = hl_mlir_op_attr(op, "rng_algorithm");
  const char *word = NULL;
  if (alg && alg->kind == HL_MATTR_DIALECT && alg->n > 0 && alg->items[alg->n - 1].kind == HL_MATTR_WORD)
    word = alg->items[alg->n - 1].s;
  else if (alg && alg->kind == HL_MATTR_WORD)
    word = alg->s;
  int algorithm = -1;
  if (!alg || (word && strcmp(word, "DEFAULT") == 0)) algorithm = 0;
  else if (word && strcmp(word, "THREE_FRY") == 0) algorithm = 1;
  else if (word && strcmp(word, "PHILOX") == 0) algorithm = 2;
  if (algorithm < 0) return hl_lower_op_error(L, op, "has an unknown rng_algorithm");
  hl_i64_list_t dims = {0};
  HL_RETURN_IF_ERROR(hl_refine_values(L, op, 1, operands[1], &dims));
  hl_shape_t shape = {0};
  hl_status_t st = result_shape(L, op, &shape);
  if (!st && (shape.tuple[1].rank != dims.n || !hl_refine_compatible(&shape.tuple[0], &operands[0]->shape)))
    st = hl_lower_op_error(L, op, "has an output shape of %d dimensions for a rank-%d result, or a "
                           "state type other than its operand's", dims.n, shape.tuple[1].rank);
  for (int d = 0; !st && d < dims.n; d++) {
    if (dims.v[d] < 0) st = hl_lower_op_error(L, op, "has output dimension %lld", (long long)dims.v[d]);
    shape.tuple[1].dims[d] = dims.v[d];
  }
  if (!st) {
    shape.tuple[1].dynamic_mask = 0;
    hl_shape_deinit(&shape.tuple[0]);
    st = hl_shape_copy(&operands[0]->shape, &shape.tuple[0]);
  }
  hl_instruction_t *inst = NULL;
  if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_RNG_BIT_GENERATOR, NULL, operands, 1, &inst);
  if (!st) {
    inst->shape = shape;
    memset(&shape, 0, sizeof(shape));
    inst->attrs.rng_algorithm = algorithm;
    st = bind_all(L, env, op, inst);
  }
  hl_shape_deinit(&shape);
  hl_i64_list_deinit(&dims);
  return st;
}

// custom_call @stablehlo.dynamic_approx_top_k(inputs..., inits..., k,
// result shapes...) {called_computations = [@comparator], mhlo.backend_config
// = {aggregate_to_topk = true, reduction_dim = d, ...}}: what XLA's CPU and
// GPU backends run for it (ApproxTopKFallback): the inputs sorted together
// along d by the comparator, then the first k of each. The sort here is
// stable (ties keep their order); XLA's leaves the order of ties open.
static hl_status_t dynamic_approx_top_k(hl_lower_t *L, hl_lower_env_t *env,
                                        const hl_mlir_op_t *op, hl_instruction_t *const *operands,
                                        int n) {
  int N = op->result_count;
  if (N < 1 || n != 3 * N + 1 || op->result_type_count != N)
    return hl_lower_op_error(L, op, "needs inputs, init values, k and a shape per result, and "
                             "its result types");
  const hl_mlir_attr_t *cfg = hl_mlir_op_attr(op, "mhlo.backend_config");
  const hl_mlir_attr_t *agg = cfg ? hl_mlir_attr_member(cfg, "aggregate_to_topk") : NULL;
  const hl_mlir_attr_t *rd = cfg ? hl_mlir_attr_member(cfg, "reduction_dim") : NULL;
  if (!agg || agg->kind != HL_MATTR_BOOL || !agg->b || !rd || rd->kind != HL_MATTR_INT)
    return hl_lower_op_error(L, op, "is supported with mhlo.backend_config = {aggregate_to_topk = "
                             "true, reduction_dim = d} only");
  int rank = operands[0]->shape.rank;
  int64_t dim = rd->i < 0 ? rd->i + rank : rd->i;
  if (dim < 0 || dim >= rank) return hl_lower_op_error(L, op, "has reduction_dim %lld", (long long)rd->i);
  hl_i64_list_t k = {0};
  HL_RETURN_IF_ERROR(hl_refine_values(L, op, 2 * N, operands[2 * N], &k));
  hl_status_t st = k.n == 1 && k.v[0] >= 0 && k.v[0] <= operands[0]->shape.dims[dim]
                       ? NULL
                       : hl_lower_op_error(L, op, "has k out of range of dimension %lld", (long long)dim);
  const hl_mlir_attr_t *cc = hl_mlir_op_attr(op, "called_computations");
  if (!st && (!cc || cc->kind != HL_MATTR_ARRAY || cc->n != 1 || cc->items[0].kind != HL_MATTR_SYMBOL))
    st = hl_lower_op_error(L, op, "needs called_computations = [@comparator]");
  hl_computation_t *cmp = NULL;
  if (!st) st = hl_lower_function(L, cc->items[0].s, op, &cmp);
  hl_shape_t *el = st ? NULL : hl_calloc((size_t)N + 1, sizeof(hl_shape_t));
  if (!st && !el) st = HL_OOM();
  for (int i = 0; !st && i < N; i++) {
    el[i] = operands[i]->shape;  // shallow: hl_shape_tuple copies
    if (el[i].rank != rank) st = hl_lower_op_error(L, op, "has inputs of different ranks");
  }
  hl_instruction_t *sorted = NULL;
  if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_SORT, N == 1 ? &el[0] : NULL, operands, N, &sorted);
  if (!st && N > 1) st = hl_shape_tuple(el, N, &sorted->shape);
  hl_free(el);
  if (!st) st = hl_i64_list_set(&sorted->attrs.dimensions, &dim, 1);
  if (!st) {
    sorted->attrs.is_stable = true;
    st = hl_instruction_set_called(sorted, &cmp, 1);
  }
  hl_instruction_t **res = st ? NULL : hl_calloc((size_t)N + 1, sizeof(*res));
  if (!st && !res) st = HL_OOM();
  for (int i = 0; !st && i < N; i++) {
    hl_instruction_t *v = sorted;
    if (N > 1) st = hl_lower_add_gte(L, env->computation, op, sorted, i, &v);
    hl_shape_t r = v ? v->shape : (hl_shape_t){0};
    if (!st) {
      r.dims[dim] = k.v[0];
      if (!hl_refine_compatible(&op->result_types[i], &r))
        st = hl_lower_op_error(L, op, "result %d is %s, its type says %s", i,
                               hl_shape_debug_string(&r), hl_shape_debug_string(&op->result_types[i]));
    }
    if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_SLICE, &r, &v, 1, &res[i]);
    hl_attrs_t *a = st ? NULL : &res[i]->attrs;
    if (a) {
      a->slice_dimensions = hl_calloc((size_t)rank + 1, sizeof(hl_slice_dim_t));
      if (!a->slice_dimensions) st = HL_OOM();
      else a->slice_count = rank;
    }
    for (int d = 0; !st && d < rank; d++)
      a->slice_dimensions[d] = (hl_slice_dim_t){0, d == dim ? k.v[0] : r.dims[d], 1};
  }
  if (!st) st = hl_lower_bind_results(L, env, op, res, N);
  hl_free(res);
  hl_i64_list_deinit(&k);
  return st;
}

hl_status_t hl_refine_custom_call(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *operands, int n, bool *out_handled) {
  (void)env;
  *out_handled = false;
  if (strcmp(op->name, "stablehlo.custom_call") != 0) return NULL;
  const char *target = call_target(op);
  if (!target) return NULL;
  if (strcmp(target, "shape_assertion") == 0) {
    *out_handled = true;
    HL_RETURN_IF_ERROR(shape_assertion(L, op, operands, n));
    return hl_lower_bind_results(L, env, op, NULL, 0);
  }
  if (strcmp(target, "stablehlo.dynamic_reduce_window") == 0) {
    *out_handled = true;
    return dynamic_reduce_window(L, env, op, operands, n);
  }
  if (strcmp(target, "stablehlo.dynamic_top_k") == 0) {
    *out_handled = true;
    return dynamic_top_k(L, env, op, operands, n);
  }
  if (strcmp(target, "stablehlo.dynamic_rng_bit_generator") == 0) {
    *out_handled = true;
    return dynamic_rng_bit_generator(L, env, op, operands, n);
  }
  if (strcmp(target, "stablehlo.dynamic_approx_top_k") == 0) {
    *out_handled = true;
    return dynamic_approx_top_k(L, env, op, operands, n);
  }
  if (strncmp(target, "stablehlo.dynamic_", 18) == 0)
    return hl_lower_op_error(L, op, "(custom call @%s) is not supported yet", target);
  return NULL;
}
