// CHLO ops onto the module IR, each with the semantics of its decomposition
// in openxla/stablehlo stablehlo/transforms/ChloLegalizeToStablehlo.cpp and
// ChloDecompositionPatterns*.td (the pattern is named at each):
//   - the special functions (lgamma, digamma, polygamma, zeta, bessel_i1e,
//     erf_inv, erfc, next_after) onto their opcodes, whose kernels
//     (kernels/special_functions.c) run upstream's algorithms;
//   - is_inf / is_pos_inf / is_neg_inf, conj, square, constant_like, top_k,
//     and sinh / cosh of real floats onto the IR ops their decompositions
//     produce;
//   - chlo.broadcast_* binary ops (and broadcast_select): each operand is
//     broadcast to the result's dimensions (numpy-style: trailing dimensions
//     line up and size-1 dimensions expand; or, for the lower-rank operand,
//     the dimensions named by broadcast_dimensions), then the plain op runs.
// The CHLO ops that share an IR op (acos ... tan, erf, mulhi, ragged_dot,
// scan) stay in lower_ops.c.
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/lower_internal.h"

typedef struct chlo_ctx {
  hl_lower_t *L;
  hl_lower_env_t *env;
  const hl_mlir_op_t *op;
  hl_instruction_t *const *in;
  int n;
} chlo_t;

#define CERR(...) hl_lower_op_error(c->L, c->op, __VA_ARGS__)

static hl_status_t emit(chlo_t *c, hl_opcode_t opcode, const hl_shape_t *shape,
                        hl_instruction_t *const *ops, int n, hl_instruction_t **out) {
  return hl_lower_add(c->L, c->env->computation, c->op, opcode, shape, ops, n, out);
}

static hl_status_t emit2(chlo_t *c, hl_opcode_t opcode, hl_instruction_t *a, hl_instruction_t *b,
                         hl_instruction_t **out) {
  hl_instruction_t *ops[2] = {a, b};
  return emit(c, opcode, &a->shape, ops, 2, out);
}

static hl_status_t emit1(chlo_t *c, hl_opcode_t opcode, hl_instruction_t *a,
                         hl_instruction_t **out) {
  return emit(c, opcode, &a->shape, &a, 1, out);
}

// Result k's type from the `-> type` part of the signature.
static hl_status_t result_type(chlo_t *c, int k, const hl_shape_t **out) {
  if (k < c->op->result_type_count) {
    *out = &c->op->result_types[k];
    return NULL;
  }
  return CERR("needs its result type after ':' (operand types -> result types)");
}

static hl_status_t need_operands(chlo_t *c, int n) {
  if (c->n != n) return CERR("takes %d operand%s, not %d", n, n == 1 ? "" : "s", c->n);
  for (int i = 0; i < n; i++)
    if (!hl_shape_is_array(&c->in[i]->shape)) return CERR("operand %d is not a tensor", i);
  return NULL;
}

// The keyword of an enum attribute: LT, #chlo<comparison_direction LT>.
static const char *enum_word(const hl_mlir_attr_t *a) {
  if (!a) return NULL;
  if (a->kind == HL_MATTR_WORD || a->kind == HL_MATTR_STRING) return a->s;
  if (a->kind == HL_MATTR_DIALECT && a->n > 0 && a->items[a->n - 1].kind == HL_MATTR_WORD)
    return a->items[a->n - 1].s;
  return NULL;
}

// A constant of `shape` with every element `v` (broadcast from a scalar).
static hl_status_t splat(chlo_t *c, const hl_shape_t *shape, double v, hl_instruction_t **out) {
  hl_shape_t scalar = hl_shape_scalar(shape->dtype);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(&scalar, &lit));
  hl_literal_set_f64(lit, 0, v);
  hl_instruction_t *k;
  hl_status_t st = emit(c, HL_OP_CONSTANT, &scalar, NULL, 0, &k);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  k->attrs.literal = lit;
  if (shape->rank == 0) {
    *out = k;
    return NULL;
  }
  return emit(c, HL_OP_BROADCAST, shape, &k, 1, out);
}

//===----------------------------------------------------------------------===//
// Broadcasting (ConvertTrivialNumpyBroadcastBinaryOp, ConvertSelectOp)
//===----------------------------------------------------------------------===//

// `x` broadcast to `dims` (rank `rank`) keeping its element type; `map[d]` is
// the result dimension of x's dimension d. Size-1 dimensions that expand are
// reshaped away first (HLO broadcast maps dimensions one to one).
static hl_status_t broadcast_to(chlo_t *c, hl_instruction_t *x, const int64_t *dims, int rank,
                                const int64_t *map, hl_instruction_t **out) {
  const hl_shape_t *s = &x->shape;
  hl_shape_t target = hl_shape_array(s->dtype, rank, dims);
  if (hl_shape_same_dims(s, &target)) {
    *out = x;
    return NULL;
  }
  int64_t keep_dims[HL_MAX_RANK], keep_map[HL_MAX_RANK];
  int k = 0;
  for (int d = 0; d < s->rank; d++) {
    if (map[d] < 0 || map[d] >= rank)
      return CERR("maps operand dimension %d outside the result", d);
    if (s->dims[d] == dims[map[d]]) {
      keep_dims[k] = s->dims[d];
      keep_map[k++] = map[d];
    } else if (s->dims[d] != 1) {
      return CERR("cannot broadcast an operand of shape %s to the result", hl_shape_debug_string(s));
    }
  }
  for (int i = 1; i < k; i++)
    if (keep_map[i] <= keep_map[i - 1]) return CERR("has broadcast_dimensions out of order");
  hl_instruction_t *in = x;
  if (k != s->rank) {
    hl_shape_t r = hl_shape_array(s->dtype, k, keep_dims);
    HL_RETURN_IF_ERROR(emit(c, HL_OP_RESHAPE, &r, &in, 1, &in));
  }
  HL_RETURN_IF_ERROR(emit(c, HL_OP_BROADCAST, &target, &in, 1, out));
  return hl_i64_list_set(&(*out)->attrs.dimensions, keep_map, k);
}

// Operand i of a broadcasting op brought to the result's dimensions: by
// broadcast_dimensions when it is the lower-rank operand and they are given,
// else numpy-style (trailing dimensions line up).
static hl_status_t broadcast_operand(chlo_t *c, int i, const hl_shape_t *rt,
                                     hl_instruction_t **out) {
  const hl_shape_t *s = &c->in[i]->shape;
  if (s->rank > rt->rank) return CERR("operand %d has a higher rank than the result", i);
  int64_t map[HL_MAX_RANK];
  for (int d = 0; d < s->rank; d++) map[d] = rt->rank - s->rank + d;
  const hl_mlir_attr_t *bd = hl_mlir_op_attr(c->op, "broadcast_dimensions");
  int max_rank = 0;
  for (int j = 0; j < c->n; j++)
    if (c->in[j]->shape.rank > max_rank) max_rank = c->in[j]->shape.rank;
  if (bd && s->rank < max_rank) {
    if (bd->kind != HL_MATTR_ARRAY) return CERR("needs broadcast_dimensions as array<i64: ...>");
    if (bd->n != s->rank)
      return CERR("has %d broadcast_dimensions for a rank-%d operand", bd->n, s->rank);
    for (int d = 0; d < s->rank; d++) {
      if (bd->items[d].kind != HL_MATTR_INT) return CERR("needs integer broadcast_dimensions");
      map[d] = bd->items[d].i;
    }
  }
  return broadcast_to(c, c->in[i], rt->dims, rt->rank, map, out);
}

static const struct {
  const char *name;
  hl_opcode_t opcode;
} kBroadcastOps[] = {
    {"broadcast_add", HL_OP_ADD},
    {"broadcast_atan2", HL_OP_ATAN2},
    {"broadcast_divide", HL_OP_DIVIDE},
    {"broadcast_maximum", HL_OP_MAXIMUM},
    {"broadcast_minimum", HL_OP_MINIMUM},
    {"broadcast_multiply", HL_OP_MULTIPLY},
    {"broadcast_next_after", HL_OP_NEXT_AFTER},
    {"broadcast_polygamma", HL_OP_POLYGAMMA},
    {"broadcast_power", HL_OP_POWER},
    {"broadcast_remainder", HL_OP_REMAINDER},
    {"broadcast_shift_left", HL_OP_SHIFT_LEFT},
    {"broadcast_shift_right_arithmetic", HL_OP_SHIFT_RIGHT_ARITHMETIC},
    {"broadcast_shift_right_logical", HL_OP_SHIFT_RIGHT_LOGICAL},
    {"broadcast_subtract", HL_OP_SUBTRACT},
    {"broadcast_zeta", HL_OP_ZETA},
    {"broadcast_and", HL_OP_AND},
    {"broadcast_or", HL_OP_OR},
    {"broadcast_xor", HL_OP_XOR},
    {"broadcast_complex", HL_OP_COMPLEX},
    {"broadcast_compare", HL_OP_COMPARE},
    {"broadcast_select", HL_OP_SELECT},
};

static hl_status_t lower_broadcasting(chlo_t *c, hl_opcode_t opcode, hl_instruction_t **out) {
  int arity = opcode == HL_OP_SELECT ? 3 : 2;
  HL_RETURN_IF_ERROR(need_operands(c, arity));
  const hl_shape_t *rt = NULL;
  HL_RETURN_IF_ERROR(result_type(c, 0, &rt));
  hl_instruction_t *ops[3];
  for (int i = 0; i < arity; i++) HL_RETURN_IF_ERROR(broadcast_operand(c, i, rt, &ops[i]));
  HL_RETURN_IF_ERROR(emit(c, opcode, rt, ops, arity, out));
  if (opcode != HL_OP_COMPARE) return NULL;
  const char *dir = enum_word(hl_mlir_op_attr(c->op, "comparison_direction"));
  const char *type = enum_word(hl_mlir_op_attr(c->op, "compare_type"));
  if (!dir) return CERR("needs comparison_direction");
  hl_comparison_direction_t d = hl_comparison_direction_from_name(dir);
  if (d == HL_CMP_NONE) return CERR("has unknown comparison direction %s", dir);
  (*out)->attrs.comparison_direction = d;
  if (type && strcmp(type, "NOTYPE") != 0) {
    hl_comparison_type_t ct = hl_comparison_type_from_name(type);
    if (ct == HL_CMPTYPE_DEFAULT) return CERR("has unknown comparison type %s", type);
    (*out)->attrs.comparison_type = ct;
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Element-wise decompositions
//===----------------------------------------------------------------------===//

static bool is_real_float(hl_dtype_t t) {
  return !hl_dtype_is_integer(t) && t != HL_PRED && !hl_dtype_is_complex(t) && t != HL_TUPLE &&
         t != HL_TOKEN;
}

static hl_status_t check_float(chlo_t *c, const hl_instruction_t *x) {
  hl_dtype_t t = x->shape.dtype;
  if (!is_real_float(t))
    return CERR("is defined for floating-point operands, not %s", hl_dtype_name(t));
  return NULL;
}

// CHLO_IsInfOp: is_pos_inf(abs(x)); CHLO_IsPosInfOp / IsNegInfOp: compare EQ
// with +inf / -inf (ChloDecompositionPatterns.td).
static hl_status_t lower_is_inf(chlo_t *c, int which, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  hl_instruction_t *x = c->in[0];
  HL_RETURN_IF_ERROR(check_float(c, x));
  if (which == 0) HL_RETURN_IF_ERROR(emit1(c, HL_OP_ABS, x, &x));
  hl_instruction_t *inf;
  HL_RETURN_IF_ERROR(splat(c, &x->shape, which < 0 ? -INFINITY : INFINITY, &inf));
  hl_shape_t pred = x->shape;
  pred.dtype = HL_PRED;
  pred.has_layout = false;
  hl_instruction_t *ops[2] = {x, inf};
  HL_RETURN_IF_ERROR(emit(c, HL_OP_COMPARE, &pred, ops, 2, out));
  (*out)->attrs.comparison_direction = HL_CMP_EQ;
  return NULL;
}

// CHLO_ConjOp: complex(real(v), -imag(v)); the value itself when not complex.
static hl_status_t lower_conj(chlo_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  hl_instruction_t *v = c->in[0];
  if (!hl_dtype_is_complex(v->shape.dtype)) {
    *out = v;
    return NULL;
  }
  hl_shape_t part = v->shape;
  part.dtype = v->shape.dtype == HL_C64 ? HL_F32 : HL_F64;
  part.has_layout = false;
  hl_instruction_t *re, *im, *neg;
  HL_RETURN_IF_ERROR(emit(c, HL_OP_REAL, &part, &v, 1, &re));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_IMAG, &part, &v, 1, &im));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_NEGATE, im, &neg));
  hl_instruction_t *ops[2] = {re, neg};
  return emit(c, HL_OP_COMPLEX, &v->shape, ops, 2, out);
}

// CHLO_SquareOp (ChloDecompositionPatternsMath.td): x * x; for complex
// z = x + iy: complex(|x| == |y| and x finite ? 0 : (x - y)(x + y), 2xy).
static hl_status_t lower_square(chlo_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  hl_instruction_t *z = c->in[0];
  if (!hl_dtype_is_complex(z->shape.dtype)) return emit2(c, HL_OP_MULTIPLY, z, z, out);
  hl_shape_t part = z->shape, pred = z->shape;
  part.dtype = z->shape.dtype == HL_C64 ? HL_F32 : HL_F64;
  part.has_layout = false;
  pred.dtype = HL_PRED;
  pred.has_layout = false;
  hl_instruction_t *x, *y, *ax, *ay, *fin, *eq, *both, *zero, *diff, *sum, *re, *xy, *two, *im;
  HL_RETURN_IF_ERROR(emit(c, HL_OP_REAL, &part, &z, 1, &x));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_IMAG, &part, &z, 1, &y));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_ABS, x, &ax));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_ABS, y, &ay));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_IS_FINITE, &pred, &x, 1, &fin));
  hl_instruction_t *cmp[2] = {ax, ay};
  HL_RETURN_IF_ERROR(emit(c, HL_OP_COMPARE, &pred, cmp, 2, &eq));
  eq->attrs.comparison_direction = HL_CMP_EQ;
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_AND, fin, eq, &both));
  HL_RETURN_IF_ERROR(splat(c, &part, 0, &zero));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_SUBTRACT, x, y, &diff));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_ADD, x, y, &sum));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_MULTIPLY, diff, sum, &diff));
  hl_instruction_t *sel[3] = {both, zero, diff};
  HL_RETURN_IF_ERROR(emit(c, HL_OP_SELECT, &part, sel, 3, &re));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_MULTIPLY, x, y, &xy));
  HL_RETURN_IF_ERROR(splat(c, &part, 2, &two));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_MULTIPLY, two, xy, &im));
  hl_instruction_t *parts[2] = {re, im};
  return emit(c, HL_OP_COMPLEX, &z->shape, parts, 2, out);
}

// materializeCoshApproximation / materializeSinhApproximation, evaluated in
// the element type (f16 / bf16 in f32, materializeWithUpcast):
//   cosh(x) = e^(x + log(1/2)) + e^(log(1/2) - x)
//   sinh(x) = e^(x + log(1/2)) - e^(log(1/2) - x) for |x| >= 1, else
//             (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2.
// Complex operands keep the IR's cosh / sinh (lower_ops.c).
static hl_status_t lower_sinh_cosh(chlo_t *c, bool is_sinh, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  hl_instruction_t *x = c->in[0];
  hl_dtype_t t = x->shape.dtype;
  bool upcast = t == HL_F16 || t == HL_BF16;
  if (upcast) {
    hl_shape_t f32 = x->shape;
    f32.dtype = HL_F32;
    f32.has_layout = false;
    HL_RETURN_IF_ERROR(emit(c, HL_OP_CONVERT, &f32, &x, 1, &x));
  }
  hl_instruction_t *half, *log_half, *a, *b, *ea, *eb, *r;
  HL_RETURN_IF_ERROR(splat(c, &x->shape, 0.5, &half));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_LOG, half, &log_half));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_ADD, x, log_half, &a));
  HL_RETURN_IF_ERROR(emit2(c, HL_OP_SUBTRACT, log_half, x, &b));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_EXP, a, &ea));
  HL_RETURN_IF_ERROR(emit1(c, HL_OP_EXP, b, &eb));
  HL_RETURN_IF_ERROR(emit2(c, is_sinh ? HL_OP_SUBTRACT : HL_OP_ADD, ea, eb, &r));
  if (is_sinh) {
    hl_instruction_t *em1, *one, *em1p1, *ratio, *sum, *small, *ax, *lt;
    HL_RETURN_IF_ERROR(emit1(c, HL_OP_EXPM1, x, &em1));
    HL_RETURN_IF_ERROR(splat(c, &x->shape, 1.0, &one));
    HL_RETURN_IF_ERROR(emit2(c, HL_OP_ADD, em1, one, &em1p1));
    HL_RETURN_IF_ERROR(emit2(c, HL_OP_DIVIDE, em1, em1p1, &ratio));
    HL_RETURN_IF_ERROR(emit2(c, HL_OP_ADD, em1, ratio, &sum));
    HL_RETURN_IF_ERROR(emit2(c, HL_OP_MULTIPLY, half, sum, &small));
    HL_RETURN_IF_ERROR(emit1(c, HL_OP_ABS, x, &ax));
    hl_shape_t pred = x->shape;
    pred.dtype = HL_PRED;
    pred.has_layout = false;
    hl_instruction_t *cmp[2] = {ax, one};
    HL_RETURN_IF_ERROR(emit(c, HL_OP_COMPARE, &pred, cmp, 2, &lt));
    lt->attrs.comparison_direction = HL_CMP_LT;
    hl_instruction_t *sel[3] = {lt, small, r};
    HL_RETURN_IF_ERROR(emit(c, HL_OP_SELECT, &x->shape, sel, 3, &r));
  }
  if (!upcast) {
    *out = r;
    return NULL;
  }
  return emit(c, HL_OP_CONVERT, &c->in[0]->shape, &r, 1, out);
}

// ConvertConstantLikeOp: a constant of the result type holding `value`.
static hl_status_t lower_constant_like(chlo_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  const hl_shape_t *rt = NULL;
  HL_RETURN_IF_ERROR(result_type(c, 0, &rt));
  const hl_mlir_attr_t *v = hl_mlir_op_attr(c->op, "value");
  if (!v) return CERR("needs a value attribute");
  hl_dtype_t t = rt->dtype;
  bool is_float = !hl_dtype_is_integer(t) && t != HL_PRED && !hl_dtype_is_complex(t);
  if (hl_dtype_is_complex(t)) return CERR("with a complex value is not supported");
  if (v->kind == HL_MATTR_FLOAT && !is_float)
    return CERR("has a float value for element type %s", hl_dtype_name(t));
  if (v->kind != HL_MATTR_FLOAT && v->kind != HL_MATTR_INT && v->kind != HL_MATTR_BOOL)
    return CERR("needs a scalar number or boolean value");
  hl_shape_t scalar = hl_shape_scalar(t);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(&scalar, &lit));
  if (v->kind == HL_MATTR_FLOAT) {
    hl_literal_set_f64(lit, 0, v->f);
  } else if (is_float) {
    hl_literal_set_f64(lit, 0, v->kind == HL_MATTR_BOOL ? v->b : (double)v->i);
  } else {  // integers keep their low bits, little-endian, in the element's bytes
    uint64_t bits = v->kind == HL_MATTR_BOOL ? v->b : (uint64_t)v->i;
    int bytes = hl_dtype_bit_width(t) < 8 ? 1 : hl_dtype_bit_width(t) / 8;
    if (hl_dtype_bit_width(t) < 8) bits &= (UINT64_C(1) << hl_dtype_bit_width(t)) - 1;
    memcpy(lit->data, &bits, (size_t)bytes);
  }
  hl_instruction_t *k;
  hl_status_t st = emit(c, HL_OP_CONSTANT, &scalar, NULL, 0, &k);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  k->attrs.literal = lit;
  if (rt->rank == 0) {
    *out = k;
    return NULL;
  }
  return emit(c, HL_OP_BROADCAST, rt, &k, 1, out);
}

// ConvertTopKOp: a stable descending sort (total order) of the last
// dimension with an i32 iota, sliced to min(k, size): the IR's topk.
static hl_status_t lower_top_k(chlo_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  const hl_mlir_attr_t *ka = hl_mlir_op_attr(c->op, "k");
  if (!ka || ka->kind != HL_MATTR_INT || ka->i < 0) return CERR("needs k = <non-negative integer>");
  const hl_shape_t *x = &c->in[0]->shape;
  if (x->rank < 1) return CERR("needs an operand of rank >= 1");
  int64_t k = ka->i < x->dims[x->rank - 1] ? ka->i : x->dims[x->rank - 1];
  hl_shape_t el[2] = {*x, *x};
  el[0].has_layout = el[1].has_layout = false;
  el[0].dims[x->rank - 1] = el[1].dims[x->rank - 1] = k;
  el[1].dtype = HL_S32;
  for (int i = 0; i < 2; i++) {
    const hl_shape_t *rt = NULL;
    HL_RETURN_IF_ERROR(result_type(c, i, &rt));
    if (!hl_shape_same_dims(rt, &el[i]) || rt->dtype != el[i].dtype)
      return CERR("result %d has type %s, expected %s", i, hl_shape_debug_string(rt),
                  i ? "the values' dimensions with i32 elements" : "the operand's with k in the last");
  }
  hl_shape_t t;
  HL_RETURN_IF_ERROR(hl_shape_tuple(el, 2, &t));
  hl_status_t st = emit(c, HL_OP_TOPK, NULL, c->in, 1, out);
  if (st) {
    hl_shape_deinit(&t);
    return st;
  }
  (*out)->shape = t;
  (*out)->attrs.k = k;
  (*out)->attrs.largest = true;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Entry
//===----------------------------------------------------------------------===//

static const struct {
  const char *name;
  hl_opcode_t opcode;
  int arity;
} kSpecialOps[] = {
    {"lgamma", HL_OP_LGAMMA, 1},        {"digamma", HL_OP_DIGAMMA, 1},
    {"erf_inv", HL_OP_ERF_INV, 1},      {"erfc", HL_OP_ERFC, 1},
    {"bessel_i1e", HL_OP_BESSEL_I1E, 1}, {"polygamma", HL_OP_POLYGAMMA, 2},
    {"zeta", HL_OP_ZETA, 2},            {"next_after", HL_OP_NEXT_AFTER, 2},
};

hl_status_t hl_lower_chlo(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                          hl_instruction_t *const *operands, bool *out_handled) {
  *out_handled = false;
  if (strncmp(op->name, "chlo.", 5) != 0) return NULL;
  const char *n = op->name + 5;
  chlo_t ctx = {L, env, op, operands, op->operand_count};
  chlo_t *c = &ctx;
  hl_instruction_t *out = NULL;
  hl_status_t st = NULL;
  bool handled = true;
  int special = -1, broadcasting = -1;
  for (int i = 0; i < (int)(sizeof(kSpecialOps) / sizeof(kSpecialOps[0])); i++)
    if (strcmp(n, kSpecialOps[i].name) == 0) special = i;
  for (int i = 0; i < (int)(sizeof(kBroadcastOps) / sizeof(kBroadcastOps[0])); i++)
    if (strcmp(n, kBroadcastOps[i].name) == 0) broadcasting = i;
  if (special >= 0) {
    const hl_shape_t *rt = NULL;
    st = need_operands(c, kSpecialOps[special].arity);
    if (!st) st = result_type(c, 0, &rt);
    for (int i = 0; !st && i < c->n; i++) st = check_float(c, c->in[i]);
    if (!st) st = emit(c, kSpecialOps[special].opcode, rt, c->in, c->n, &out);
  } else if (broadcasting >= 0) {
    st = lower_broadcasting(c, kBroadcastOps[broadcasting].opcode, &out);
  } else if (strcmp(n, "is_inf") == 0) {
    st = lower_is_inf(c, 0, &out);
  } else if (strcmp(n, "is_pos_inf") == 0) {
    st = lower_is_inf(c, 1, &out);
  } else if (strcmp(n, "is_neg_inf") == 0) {
    st = lower_is_inf(c, -1, &out);
  } else if ((strcmp(n, "sinh") == 0 || strcmp(n, "cosh") == 0) && op->operand_count == 1 &&
             is_real_float(operands[0]->shape.dtype)) {
    st = lower_sinh_cosh(c, n[0] == 's', &out);
  } else if (strcmp(n, "conj") == 0) {
    st = lower_conj(c, &out);
  } else if (strcmp(n, "square") == 0) {
    st = lower_square(c, &out);
  } else if (strcmp(n, "constant_like") == 0) {
    st = lower_constant_like(c, &out);
  } else if (strcmp(n, "top_k") == 0) {
    st = lower_top_k(c, &out);
    if (!st) {
      hl_instruction_t *res[2];
      for (int i = 0; !st && i < 2; i++)
        st = hl_lower_add_gte(L, env->computation, op, out, i, &res[i]);
      if (!st) st = hl_lower_bind_results(L, env, op, res, 2);
      *out_handled = true;
      return st;
    }
  } else {
    handled = false;
  }
  *out_handled = handled;
  if (st || !handled) return st;
  return hl_lower_bind_results(L, env, op, &out, 1);
}
