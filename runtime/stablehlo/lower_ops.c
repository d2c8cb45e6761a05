// Per-op lowering: each StableHLO / check op onto the module IR's op and the
// hl_attrs_t fields the HLO text parser fills for the same HLO op (so the
// kernels read them unchanged). Pretty and generic spellings of an attribute
// are both accepted.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/lower_internal.h"
#include "runtime/stablehlo/mlir_dense.h"
#include "runtime/stablehlo/sharding_attrs.h"

typedef struct op_ctx {
  hl_lower_t *L;
  hl_lower_env_t *env;
  const hl_mlir_op_t *op;
  hl_instruction_t **operands;
  int n;
  bool has_refined;    // result 0's static type from its shape operand (refine_shapes.c)
  hl_shape_t refined;
} op_ctx_t;

#define OPERR(...) hl_lower_op_error(x->L, x->op, __VA_ARGS__)

// Result type k: from the function type, or the single / per-result type list.
static hl_status_t result_type(op_ctx_t *x, int k, const hl_shape_t **out) {
  *out = NULL;
  const hl_mlir_op_t *op = x->op;
  if (k == 0 && x->has_refined) {
    *out = &x->refined;
    return NULL;
  }
  if (op->has_function_type) {
    if (k < op->result_type_count) {
      *out = &op->result_types[k];
      return NULL;
    }
  } else if (op->operand_type_count == 1) {
    *out = &op->operand_types[0];
    return NULL;
  } else if (k < op->operand_type_count && op->operand_type_count == op->result_count) {
    *out = &op->operand_types[k];
    return NULL;
  } else if (op->result_count == 1 && op->operand_type_count > 1 && k == 0) {
    *out = &op->operand_types[op->operand_type_count - 1];  // select: `: pred-type, type`
    return NULL;
  }
  return OPERR("needs its result type after ':'");
}

static const hl_mlir_attr_t *attr_any(const hl_mlir_op_t *op, const char *a, const char *b) {
  const hl_mlir_attr_t *r = hl_mlir_op_attr(op, a);
  return r || !b ? r : hl_mlir_op_attr(op, b);
}

// Integer list from ARRAY of INT, array<i64: ...>, or dense<[...]>.
static hl_status_t i64_list(op_ctx_t *x, const hl_mlir_attr_t *a, hl_i64_list_t *out) {
  if (a->kind == HL_MATTR_ARRAY) {
    int64_t *v = hl_calloc((size_t)a->n + 1, sizeof(int64_t));
    if (!v) return HL_OOM();
    for (int i = 0; i < a->n; i++) {
      if (a->items[i].kind != HL_MATTR_INT && a->items[i].kind != HL_MATTR_BOOL) {
        hl_free(v);
        return OPERR("expects a list of integers");
      }
      v[i] = a->items[i].kind == HL_MATTR_BOOL ? a->items[i].b : a->items[i].i;
    }
    hl_status_t st = hl_i64_list_set(out, v, a->n);
    hl_free(v);
    return st;
  }
  if (a->kind == HL_MATTR_DENSE && a->has_type) {
    hl_literal_t *lit;
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(x->L->file, a, &a->type, &lit));
    int64_t n = hl_literal_element_count(lit);
    int64_t *v = hl_calloc((size_t)n + 1, sizeof(int64_t));
    hl_status_t st = v ? NULL : HL_OOM();
    for (int64_t i = 0; !st && i < n; i++) v[i] = hl_literal_get_s64(lit, i);
    if (!st) st = hl_i64_list_set(out, v, (int)n);
    hl_free(v);
    hl_literal_release(lit);
    return st;
  }
  return OPERR("expects an integer list attribute");
}

static hl_status_t need_list(op_ctx_t *x, const char *a, const char *b, hl_i64_list_t *out) {
  const hl_mlir_attr_t *at = attr_any(x->op, a, b);
  if (!at) return OPERR("needs attribute '%s'", a);
  return i64_list(x, at, out);
}

static hl_status_t need_int(op_ctx_t *x, const char *a, const char *b, int64_t *out) {
  const hl_mlir_attr_t *at = attr_any(x->op, a, b);
  if (!at || at->kind != HL_MATTR_INT) return OPERR("needs integer attribute '%s'", a);
  *out = at->i;
  return NULL;
}

// Dynamic-shape ops whose shape operands are constants: their values.
static hl_status_t const_operand_list(op_ctx_t *x, int k, hl_i64_list_t *out) {
  if (k >= x->n) return OPERR("needs operand %d", k);
  const hl_instruction_t *inst = x->operands[k];
  if (x->L->refining) return hl_refine_values(x->L, x->op, k, inst, out);
  if (inst->opcode != HL_OP_CONSTANT || !inst->attrs.literal)
    return OPERR("needs operand %d to be a constant (shapes computed at run time are not "
                 "supported)", k);
  int64_t n = hl_literal_element_count(inst->attrs.literal);
  int64_t *v = hl_calloc((size_t)n + 1, sizeof(int64_t));
  if (!v) return HL_OOM();
  for (int64_t i = 0; i < n; i++) v[i] = hl_literal_get_s64(inst->attrs.literal, i);
  hl_status_t st = hl_i64_list_set(out, v, (int)n);
  hl_free(v);
  return st;
}

static bool bool_attr(const hl_mlir_op_t *op, const char *name) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(op, name);
  return a && (a->kind == HL_MATTR_UNIT || (a->kind == HL_MATTR_BOOL && a->b));
}

// The keyword of an enum attribute: GT, #stablehlo<comparison_direction GT>,
// #stablehlo.comparison_direction<GT>.
static const char *enum_word(const hl_mlir_attr_t *a) {
  if (!a) return NULL;
  if (a->kind == HL_MATTR_WORD || a->kind == HL_MATTR_STRING) return a->s;
  if (a->kind == HL_MATTR_DIALECT && a->n > 0) {
    const hl_mlir_attr_t *last = &a->items[a->n - 1];
    if (last->kind == HL_MATTR_WORD) return last->s;
  }
  return NULL;
}

static int64_t member_int(const hl_mlir_attr_t *a, const char *key, int64_t dflt) {
  const hl_mlir_attr_t *m = hl_mlir_attr_member(a, key);
  return m && m->kind == HL_MATTR_INT ? m->i : dflt;
}

static hl_status_t member_list(op_ctx_t *x, const hl_mlir_attr_t *a, const char *key,
                               hl_i64_list_t *out) {
  const hl_mlir_attr_t *m = hl_mlir_attr_member(a, key);
  if (!m) return NULL;
  return i64_list(x, m, out);
}

static hl_status_t add(op_ctx_t *x, hl_opcode_t opcode, const hl_shape_t *shape,
                       hl_instruction_t *const *ops, int n, hl_instruction_t **out) {
  return hl_lower_add(x->L, x->env->computation, x->op, opcode, shape, ops, n, out);
}

// One-result op of `opcode` on all operands with the op's result type.
static hl_status_t simple(op_ctx_t *x, hl_opcode_t opcode, hl_instruction_t **out) {
  const hl_shape_t *t = NULL;
  HL_RETURN_IF_ERROR(result_type(x, 0, &t));
  return add(x, opcode, t, x->operands, x->n, out);
}

// Multi-result op: the instruction has a tuple shape of the result types.
static hl_status_t tuple_result_shape(op_ctx_t *x, hl_shape_t *out) {
  int n = x->op->result_count;
  hl_shape_t *el = hl_calloc((size_t)n + 1, sizeof(hl_shape_t));
  if (!el) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < n; i++) {
    const hl_shape_t *t = NULL;
    st = result_type(x, i, &t);
    if (!st) el[i] = *t;
  }
  if (!st) st = hl_shape_tuple(el, n, out);
  hl_free(el);
  return st;
}

// Binds a possibly multi-result instruction: one result -> itself, else gtes.
static hl_status_t bind_multi(op_ctx_t *x, hl_instruction_t *inst) {
  int n = x->op->result_count;
  bool split = n > 1 || strcmp(x->op->name, "stablehlo.optimization_barrier") == 0;
  if (inst->shape.dtype != HL_TUPLE || n == 0 || !split)
    return hl_lower_bind_results(x->L, x->env, x->op, &inst, n ? 1 : 0);
  hl_instruction_t **res = hl_calloc((size_t)n + 1, sizeof(*res));
  if (!res) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < n; i++)
    st = hl_lower_add_gte(x->L, x->env->computation, x->op, inst, i, &res[i]);
  if (!st) st = hl_lower_bind_results(x->L, x->env, x->op, res, n);
  hl_free(res);
  return st;
}

static hl_status_t multi(op_ctx_t *x, hl_opcode_t opcode, hl_instruction_t **out) {
  if (x->op->result_count == 1) return simple(x, opcode, out);
  hl_shape_t t;
  HL_RETURN_IF_ERROR(tuple_result_shape(x, &t));
  hl_status_t st = add(x, opcode, NULL, x->operands, x->n, out);
  if (st) {
    hl_shape_deinit(&t);
    return st;
  }
  (*out)->shape = t;
  return NULL;
}

static hl_status_t set_to_apply(op_ctx_t *x, hl_instruction_t *inst, int region) {
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(hl_lower_scalar_region(x->L, x->env, x->op, region, &c));
  return hl_instruction_set_called(inst, &c, 1);
}

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

static const struct {
  const char *name;
  hl_opcode_t opcode;
} kSimpleOps[] = {
    {"abs", HL_OP_ABS}, {"add", HL_OP_ADD}, {"and", HL_OP_AND}, {"atan2", HL_OP_ATAN2},
    {"cbrt", HL_OP_CBRT}, {"ceil", HL_OP_CEIL}, {"clamp", HL_OP_CLAMP},
    {"count_leading_zeros", HL_OP_CLZ}, {"complex", HL_OP_COMPLEX}, {"cosine", HL_OP_COS},
    {"divide", HL_OP_DIVIDE}, {"exponential", HL_OP_EXP}, {"exponential_minus_one", HL_OP_EXPM1},
    {"floor", HL_OP_FLOOR}, {"imag", HL_OP_IMAG}, {"is_finite", HL_OP_IS_FINITE},
    {"log", HL_OP_LOG}, {"log_plus_one", HL_OP_LOG1P}, {"logistic", HL_OP_LOGISTIC},
    {"maximum", HL_OP_MAXIMUM}, {"minimum", HL_OP_MINIMUM}, {"multiply", HL_OP_MULTIPLY},
    {"negate", HL_OP_NEGATE}, {"not", HL_OP_NOT}, {"or", HL_OP_OR}, {"popcnt", HL_OP_POPCNT},
    {"power", HL_OP_POWER}, {"real", HL_OP_REAL}, {"remainder", HL_OP_REMAINDER},
    {"round_nearest_afz", HL_OP_ROUND_NEAREST_AFZ},
    {"round_nearest_even", HL_OP_ROUND_NEAREST_EVEN}, {"rsqrt", HL_OP_RSQRT},
    {"select", HL_OP_SELECT}, {"shift_left", HL_OP_SHIFT_LEFT},
    {"shift_right_arithmetic", HL_OP_SHIFT_RIGHT_ARITHMETIC},
    {"shift_right_logical", HL_OP_SHIFT_RIGHT_LOGICAL}, {"sign", HL_OP_SIGN},
    {"sine", HL_OP_SIN}, {"sqrt", HL_OP_SQRT}, {"subtract", HL_OP_SUBTRACT},
    {"tan", HL_OP_TAN}, {"tanh", HL_OP_TANH}, {"xor", HL_OP_XOR},
    {"convert", HL_OP_CONVERT}, {"bitcast_convert", HL_OP_BITCAST_CONVERT},
    {"reshape", HL_OP_RESHAPE}, {"cholesky", HL_OP_CHOLESKY},
    {"replica_id", HL_OP_REPLICA_ID}, {"partition_id", HL_OP_PARTITION_ID},
    {"acos", HL_OP_ACOS}, {"acosh", HL_OP_ACOSH}, {"asin", HL_OP_ASIN}, {"asinh", HL_OP_ASINH},
    {"atan", HL_OP_ATAN}, {"atanh", HL_OP_ATANH}, {"cosh", HL_OP_COSH}, {"sinh", HL_OP_SINH},
    {"erf", HL_OP_ERF}, {"mulhi", HL_OP_MULHI},
};

static hl_status_t lower_constant(op_ctx_t *x, hl_instruction_t **out) {
  const hl_mlir_attr_t *v = hl_mlir_op_attr(x->op, "value");
  if (!v && x->op->item_count > 0) v = &x->op->items[0];
  if (!v || (v->kind != HL_MATTR_DENSE && v->kind != HL_MATTR_RESOURCE))
    return OPERR("needs a dense<...> value");
  const hl_shape_t *t = NULL;
  if (x->op->operand_type_count == 0 && !x->op->has_function_type && v->has_type) t = &v->type;
  else HL_RETURN_IF_ERROR(result_type(x, 0, &t));
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_mlir_dense_literal(x->L->file, v, t, &lit));
  hl_status_t st = add(x, HL_OP_CONSTANT, t, NULL, 0, out);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  (*out)->attrs.literal = lit;
  return NULL;
}

// broadcast_in_dim may expand operand dimensions of size 1; HLO broadcast may
// not: those dimensions are reshaped away first.
static hl_status_t lower_broadcast_in_dim(op_ctx_t *x, hl_instruction_t **out) {
  const hl_shape_t *rt;
  HL_RETURN_IF_ERROR(result_type(x, 0, &rt));
  hl_i64_list_t dims = {0};
  HL_RETURN_IF_ERROR(need_list(x, "broadcast_dimensions", "dims", &dims));
  hl_instruction_t *in = x->operands[0];
  const hl_shape_t *s = &in->shape;
  hl_status_t st = dims.n == s->rank ? NULL : OPERR("has %d broadcast dimensions for a rank-%d operand", dims.n, s->rank);
  int64_t keep_dims[HL_MAX_RANK], kept_map[HL_MAX_RANK];
  int k = 0;
  for (int d = 0; !st && d < s->rank; d++) {
    if (dims.v[d] < 0 || dims.v[d] >= rt->rank) {
      st = OPERR("has broadcast dimension %lld outside the result", (long long)dims.v[d]);
      break;
    }
    if (s->dims[d] == 1 && rt->dims[dims.v[d]] != 1) continue;
    keep_dims[k] = s->dims[d];
    kept_map[k++] = dims.v[d];
  }
  if (!st && k != s->rank) {
    hl_shape_t r = hl_shape_array(s->dtype, k, keep_dims);
    st = add(x, HL_OP_RESHAPE, &r, &in, 1, &in);
  }
  if (!st) st = add(x, HL_OP_BROADCAST, rt, &in, 1, out);
  if (!st) st = hl_i64_list_set(&(*out)->attrs.dimensions, kept_map, k);
  hl_i64_list_deinit(&dims);
  return st;
}

static hl_status_t lower_compare(op_ctx_t *x, hl_instruction_t **out) {
  const char *dir = enum_word(hl_mlir_op_attr(x->op, "comparison_direction"));
  const char *type = enum_word(hl_mlir_op_attr(x->op, "compare_type"));
  int words = 0;
  for (int i = 0; i < x->op->item_count; i++) {
    if (x->op->items[i].kind != HL_MATTR_WORD) continue;
    if (words == 0) dir = x->op->items[i].s;
    else type = x->op->items[i].s;
    words++;
  }
  if (!dir) return OPERR("needs a comparison direction");
  hl_comparison_direction_t d = hl_comparison_direction_from_name(dir);
  if (d == HL_CMP_NONE) return OPERR("has unknown comparison direction %s", dir);
  HL_RETURN_IF_ERROR(simple(x, HL_OP_COMPARE, out));
  (*out)->attrs.comparison_direction = d;
  if (type && strcmp(type, "NOTYPE") != 0) {
    hl_comparison_type_t ct = hl_comparison_type_from_name(type);
    if (ct == HL_CMPTYPE_DEFAULT) return OPERR("has unknown comparison type %s", type);
    (*out)->attrs.comparison_type = ct;
  }
  return NULL;
}

static hl_status_t lower_slice(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(simple(x, HL_OP_SLICE, out));
  int rank = x->operands[0]->shape.rank;
  hl_attrs_t *a = &(*out)->attrs;
  a->slice_dimensions = hl_calloc((size_t)rank + 1, sizeof(hl_slice_dim_t));
  if (!a->slice_dimensions) return HL_OOM();
  a->slice_count = rank;
  if (x->op->item_count == 1 && x->op->items[0].kind == HL_MATTR_ARRAY) {
    const hl_mlir_attr_t *s = &x->op->items[0];
    if (s->n != rank) return OPERR("slices %d dimensions of a rank-%d operand", s->n, rank);
    for (int d = 0; d < rank; d++) {
      const hl_mlir_attr_t *dim = &s->items[d];
      if (dim->n < 2) return OPERR("needs start:limit per dimension");
      a->slice_dimensions[d] = (hl_slice_dim_t){dim->items[0].i, dim->items[1].i,
                                                dim->n > 2 ? dim->items[2].i : 1};
    }
    return NULL;
  }
  hl_i64_list_t st = {0}, li = {0}, sr = {0};
  hl_status_t e = need_list(x, "start_indices", NULL, &st);
  if (!e) e = need_list(x, "limit_indices", NULL, &li);
  if (!e && attr_any(x->op, "strides", NULL)) e = need_list(x, "strides", NULL, &sr);
  if (!e && (st.n != rank || li.n != rank || (sr.n && sr.n != rank)))
    e = OPERR("slice attributes do not match the operand rank %d", rank);
  for (int d = 0; !e && d < rank; d++)
    a->slice_dimensions[d] = (hl_slice_dim_t){st.v[d], li.v[d], sr.n ? sr.v[d] : 1};
  hl_i64_list_deinit(&st);
  hl_i64_list_deinit(&li);
  hl_i64_list_deinit(&sr);
  return e;
}

// real_dynamic_slice(operand, start, limit, strides): a slice once the three
// index operands fold to values (shape refinement).
static hl_status_t lower_real_dynamic_slice(op_ctx_t *x, hl_instruction_t **out) {
  if (x->n != 4) return OPERR("needs operand, start_indices, limit_indices and strides");
  int rank = x->operands[0]->shape.rank;
  hl_i64_list_t l[3] = {{0}, {0}, {0}};
  hl_status_t st = NULL;
  for (int i = 0; !st && i < 3; i++) st = const_operand_list(x, i + 1, &l[i]);
  for (int i = 0; !st && i < 3; i++)
    if (l[i].n != rank) st = OPERR("operand %d has %d indices for a rank-%d operand", i + 1, l[i].n, rank);
  x->n = 1;
  if (!st) st = simple(x, HL_OP_SLICE, out);
  hl_attrs_t *a = st ? NULL : &(*out)->attrs;
  if (a) {
    a->slice_dimensions = hl_calloc((size_t)rank + 1, sizeof(hl_slice_dim_t));
    if (!a->slice_dimensions) st = HL_OOM();
    else a->slice_count = rank;
  }
  for (int d = 0; !st && d < rank; d++)
    a->slice_dimensions[d] = (hl_slice_dim_t){l[0].v[d], l[1].v[d], l[2].v[d]};
  for (int i = 0; i < 3; i++) hl_i64_list_deinit(&l[i]);
  return st;
}

static hl_status_t lower_reduce(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(multi(x, HL_OP_REDUCE, out));
  HL_RETURN_IF_ERROR(need_list(x, "dimensions", NULL, &(*out)->attrs.dimensions));
  if (x->op->region_count) return set_to_apply(x, *out, 0);
  // Pretty: stablehlo.reduce(%x init: %y) applies stablehlo.add across dimensions = [..]
  for (int i = 0; i + 1 < x->op->item_count; i++)
    if (x->op->items[i].kind == HL_MATTR_WORD && strcmp(x->op->items[i].s, "applies") == 0) {
      hl_computation_t *c;
      hl_shape_t scalar = hl_shape_scalar(x->operands[x->n - 1]->shape.dtype);
      HL_RETURN_IF_ERROR(hl_lower_binary_computation(x->L, x->op, x->op->items[i + 1].s, &scalar, &c));
      return hl_instruction_set_called(*out, &c, 1);
    }
  return OPERR("needs a reducer region or 'applies <op>'");
}

static hl_status_t lower_dot_general(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(simple(x, HL_OP_DOT, out));
  hl_attrs_t *a = &(*out)->attrs;
  a->has_dot_dimension_numbers = true;
  hl_dot_dims_t *d = &a->dot_dimension_numbers;
  const hl_mlir_attr_t *dn = hl_mlir_op_attr(x->op, "dot_dimension_numbers");
  if (dn) {
    HL_RETURN_IF_ERROR(member_list(x, dn, "lhs_batching_dimensions", &d->lhs_batch_dimensions));
    HL_RETURN_IF_ERROR(member_list(x, dn, "rhs_batching_dimensions", &d->rhs_batch_dimensions));
    HL_RETURN_IF_ERROR(member_list(x, dn, "lhs_contracting_dimensions", &d->lhs_contracting_dimensions));
    HL_RETURN_IF_ERROR(member_list(x, dn, "rhs_contracting_dimensions", &d->rhs_contracting_dimensions));
  }
  const hl_mlir_attr_t *b = hl_mlir_op_attr(x->op, "batching_dims");
  if (b && b->n == 2) {
    HL_RETURN_IF_ERROR(i64_list(x, &b->items[0], &d->lhs_batch_dimensions));
    HL_RETURN_IF_ERROR(i64_list(x, &b->items[1], &d->rhs_batch_dimensions));
  }
  const hl_mlir_attr_t *c = hl_mlir_op_attr(x->op, "contracting_dims");
  if (c && c->n == 2) {
    HL_RETURN_IF_ERROR(i64_list(x, &c->items[0], &d->lhs_contracting_dimensions));
    HL_RETURN_IF_ERROR(i64_list(x, &c->items[1], &d->rhs_contracting_dimensions));
  }
  // An algorithm is accepted where it cannot change the result: integer
  // operands, or operand / accumulation types that are the operands' own.
  const hl_mlir_attr_t *alg = hl_mlir_op_attr(x->op, "algorithm");
  if (!alg) alg = hl_mlir_op_attr(x->op, "dot_algorithm");
  if (alg) {
    hl_dtype_t t = x->operands[0]->shape.dtype;
    if (!hl_dtype_is_integer(t) && t != HL_PRED) {
      static const char *const kKeys[] = {"lhs_precision_type", "rhs_precision_type",
                                          "accumulation_type"};
      for (int i = 0; i < 3; i++) {
        const hl_mlir_attr_t *m = hl_mlir_attr_member(alg, kKeys[i]);
        bool same = m && m->kind == HL_MATTR_TYPE && m->type.dtype == t;
        if (!same) return OPERR("with a dot algorithm whose %s is not the operand type is not supported", kKeys[i]);
      }
    }
  }
  return NULL;
}

// chlo.ragged_dot onto ragged-dot: its inner dot dims and the ragged / group dims.
static hl_status_t lower_ragged_dot(op_ctx_t *x, hl_instruction_t **out) {
  const hl_mlir_attr_t *dn = hl_mlir_op_attr(x->op, "ragged_dot_dimension_numbers");
  if (!dn) return OPERR("needs ragged_dot_dimension_numbers");
  HL_RETURN_IF_ERROR(simple(x, HL_OP_RAGGED_DOT, out));
  hl_attrs_t *a = &(*out)->attrs;
  hl_dot_dims_t *d = &a->dot_dimension_numbers;
  a->has_dot_dimension_numbers = true;
  a->has_ragged_dot_dimension_numbers = true;
  HL_RETURN_IF_ERROR(member_list(x, dn, "lhs_batching_dimensions", &d->lhs_batch_dimensions));
  HL_RETURN_IF_ERROR(member_list(x, dn, "rhs_batching_dimensions", &d->rhs_batch_dimensions));
  HL_RETURN_IF_ERROR(member_list(x, dn, "lhs_contracting_dimensions", &d->lhs_contracting_dimensions));
  HL_RETURN_IF_ERROR(member_list(x, dn, "rhs_contracting_dimensions", &d->rhs_contracting_dimensions));
  HL_RETURN_IF_ERROR(member_list(x, dn, "lhs_ragged_dimensions", &a->lhs_ragged_dimensions));
  return member_list(x, dn, "rhs_group_dimensions", &a->rhs_group_dimensions);
}

// chlo.scan(inputs) inits(inits) dimension=d {body}: the IR's scan takes the
// same operands and body; carries are the inits.
static hl_status_t lower_scan(op_ctx_t *x, hl_instruction_t **out) {
  int64_t d;
  HL_RETURN_IF_ERROR(need_int(x, "dimension", NULL, &d));
  int inits = 0;
  const hl_mlir_attr_t *n_inits = hl_mlir_op_attr(x->op, "num_carries");
  if (n_inits && n_inits->kind == HL_MATTR_INT) {
    inits = (int)n_inits->i;
  } else {
    // Pretty form: the operands after the word `inits` are the carries.
    int at = -1;
    for (int i = 0; i < x->op->item_count; i++)
      if (x->op->items[i].kind == HL_MATTR_WORD && strcmp(x->op->items[i].s, "inits") == 0)
        at = (int)x->op->items[i].i;
    if (at < 0) return OPERR("needs inits(...)");
    inits = x->n - at;
  }
  HL_RETURN_IF_ERROR(multi(x, HL_OP_SCAN, out));
  hl_attrs_t *a = &(*out)->attrs;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&a->dimensions, &d, 1));
  a->num_carries = inits;
  a->is_reverse = bool_attr(x->op, "is_reverse") || bool_attr(x->op, "reverse");
  return set_to_apply(x, *out, 0);
}

static hl_status_t lower_gather(op_ctx_t *x, hl_instruction_t **out) {
  hl_i64_list_t sizes = {0};
  if (x->n == 3) {  // dynamic_gather: slice sizes as a constant operand
    HL_RETURN_IF_ERROR(const_operand_list(x, 2, &sizes));
    x->n = 2;
  }
  hl_status_t st0 = simple(x, HL_OP_GATHER, out);
  if (st0) {
    hl_i64_list_deinit(&sizes);
    return st0;
  }
  hl_attrs_t *a = &(*out)->attrs;
  a->gather_slice_sizes = sizes;
  const hl_mlir_attr_t *dn = hl_mlir_op_attr(x->op, "dimension_numbers");
  if (!dn) return OPERR("needs dimension_numbers");
  a->has_gather_dimension_numbers = true;
  hl_gather_dims_t *g = &a->gather_dimension_numbers;
  HL_RETURN_IF_ERROR(member_list(x, dn, "offset_dims", &g->offset_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "collapsed_slice_dims", &g->collapsed_slice_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "start_index_map", &g->start_index_map));
  HL_RETURN_IF_ERROR(member_list(x, dn, "operand_batching_dims", &g->operand_batching_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "start_indices_batching_dims", &g->start_indices_batching_dims));
  g->index_vector_dim = member_int(dn, "index_vector_dim", 0);
  if (!a->gather_slice_sizes.n)
    HL_RETURN_IF_ERROR(need_list(x, "slice_sizes", NULL, &a->gather_slice_sizes));
  a->indices_are_sorted = bool_attr(x->op, "indices_are_sorted");
  return NULL;
}

static hl_status_t lower_scatter(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(multi(x, HL_OP_SCATTER, out));
  hl_attrs_t *a = &(*out)->attrs;
  const hl_mlir_attr_t *dn = hl_mlir_op_attr(x->op, "scatter_dimension_numbers");
  if (!dn) return OPERR("needs scatter_dimension_numbers");
  a->has_scatter_dimension_numbers = true;
  hl_scatter_dims_t *s = &a->scatter_dimension_numbers;
  HL_RETURN_IF_ERROR(member_list(x, dn, "update_window_dims", &s->update_window_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "inserted_window_dims", &s->inserted_window_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "scatter_dims_to_operand_dims", &s->scatter_dims_to_operand_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "input_batching_dims", &s->input_batching_dims));
  HL_RETURN_IF_ERROR(member_list(x, dn, "scatter_indices_batching_dims", &s->scatter_indices_batching_dims));
  s->index_vector_dim = member_int(dn, "index_vector_dim", 0);
  a->indices_are_sorted = bool_attr(x->op, "indices_are_sorted");
  a->unique_indices = bool_attr(x->op, "unique_indices");
  return set_to_apply(x, *out, 0);
}

// padding = dense<[[lo, hi], ...]> into window dims.
static hl_status_t window_padding(op_ctx_t *x, const hl_mlir_attr_t *p, hl_window_t *w) {
  if (!p) return NULL;
  hl_i64_list_t flat = {0};
  if (p->kind == HL_MATTR_ARRAY && p->n > 0 && p->items[0].kind == HL_MATTR_ARRAY) {
    if (p->n != w->n) return OPERR("padding has %d pairs for %d dimensions", p->n, w->n);
    for (int i = 0; i < p->n; i++) {
      if (p->items[i].n != 2) return OPERR("padding needs [low, high] pairs");
      w->dims[i].padding_low = p->items[i].items[0].i;
      w->dims[i].padding_high = p->items[i].items[1].i;
    }
    return NULL;
  }
  HL_RETURN_IF_ERROR(i64_list(x, p, &flat));
  hl_status_t st = flat.n == 2 * w->n ? NULL : OPERR("padding has %d values for %d dimensions", flat.n, w->n);
  for (int i = 0; !st && i < w->n; i++) {
    w->dims[i].padding_low = flat.v[2 * i];
    w->dims[i].padding_high = flat.v[2 * i + 1];
  }
  hl_i64_list_deinit(&flat);
  return st;
}

static hl_status_t window_field(op_ctx_t *x, const hl_mlir_attr_t *a, hl_window_t *w, int field) {
  if (!a) return NULL;
  hl_i64_list_t l = {0};
  HL_RETURN_IF_ERROR(i64_list(x, a, &l));
  hl_status_t st = l.n == w->n ? NULL : OPERR("window attribute has %d values for %d dimensions", l.n, w->n);
  for (int i = 0; !st && i < w->n; i++) {
    hl_window_dim_t *d = &w->dims[i];
    switch (field) {
      case 0: d->size = l.v[i]; break;
      case 1: d->stride = l.v[i]; break;
      case 2: d->base_dilation = l.v[i]; break;
      case 3: d->window_dilation = l.v[i]; break;
      default: d->window_reversal = l.v[i] != 0; break;
    }
  }
  hl_i64_list_deinit(&l);
  return st;
}

static hl_status_t new_window(hl_attrs_t *a, int n) {
  a->has_window = true;
  a->window.n = n;
  a->window.dims = hl_calloc((size_t)n + 1, sizeof(hl_window_dim_t));
  if (!a->window.dims) return HL_OOM();
  for (int i = 0; i < n; i++)
    a->window.dims[i] = (hl_window_dim_t){1, 1, 0, 0, 1, 1, false};
  return NULL;
}

static hl_status_t lower_reduce_window(op_ctx_t *x, hl_instruction_t **out, bool select_scatter) {
  HL_RETURN_IF_ERROR(select_scatter ? simple(x, HL_OP_SELECT_AND_SCATTER, out)
                                    : multi(x, HL_OP_REDUCE_WINDOW, out));
  hl_attrs_t *a = &(*out)->attrs;
  HL_RETURN_IF_ERROR(new_window(a, x->operands[0]->shape.rank));
  const hl_mlir_op_t *op = x->op;
  HL_RETURN_IF_ERROR(window_field(x, hl_mlir_op_attr(op, "window_dimensions"), &a->window, 0));
  HL_RETURN_IF_ERROR(window_field(x, hl_mlir_op_attr(op, "window_strides"), &a->window, 1));
  HL_RETURN_IF_ERROR(window_field(x, hl_mlir_op_attr(op, "base_dilations"), &a->window, 2));
  HL_RETURN_IF_ERROR(window_field(x, hl_mlir_op_attr(op, "window_dilations"), &a->window, 3));
  HL_RETURN_IF_ERROR(window_padding(x, hl_mlir_op_attr(op, "padding"), &a->window));
  if (!select_scatter) return set_to_apply(x, *out, 0);
  hl_computation_t *c[2];
  HL_RETURN_IF_ERROR(hl_lower_scalar_region(x->L, x->env, op, 0, &c[0]));
  HL_RETURN_IF_ERROR(hl_lower_scalar_region(x->L, x->env, op, 1, &c[1]));
  return hl_instruction_set_called(*out, c, 2);
}

// [b, 0, 1, f] -> batch / feature / spatial positions.
static hl_status_t conv_layout(op_ctx_t *x, const hl_mlir_attr_t *l, const char *first,
                               const char *second, int64_t *a, int64_t *b, hl_i64_list_t *sp) {
  int64_t spatial[HL_MAX_RANK];
  int ns = 0;
  *a = *b = -1;
  for (int i = 0; i < l->n; i++) {
    const hl_mlir_attr_t *it = &l->items[i];
    if (it->kind == HL_MATTR_INT) {
      if (it->i < 0 || it->i >= HL_MAX_RANK) return OPERR("bad spatial dimension");
      spatial[it->i] = i;
      if (it->i + 1 > ns) ns = (int)it->i + 1;
    } else if (it->kind == HL_MATTR_WORD && strcmp(it->s, first) == 0) {
      *a = i;
    } else if (it->kind == HL_MATTR_WORD && strcmp(it->s, second) == 0) {
      *b = i;
    } else {
      return OPERR("has an unknown dimension letter in dim_numbers");
    }
  }
  if (*a < 0 || *b < 0) return OPERR("dim_numbers lacks '%s' or '%s'", first, second);
  return hl_i64_list_set(sp, spatial, ns);
}

static hl_status_t lower_convolution_attrs(op_ctx_t *x, hl_instruction_t *inst,
                                           const hl_i64_list_t *dyn_pad);

static hl_status_t lower_convolution(op_ctx_t *x, hl_instruction_t **out) {
  hl_i64_list_t dyn_pad = {0};
  if (x->n == 3) {  // dynamic_conv: padding as a constant operand
    HL_RETURN_IF_ERROR(const_operand_list(x, 2, &dyn_pad));
    x->n = 2;
  }
  hl_status_t st0 = simple(x, HL_OP_CONVOLUTION, out);
  if (!st0) st0 = lower_convolution_attrs(x, *out, &dyn_pad);
  hl_i64_list_deinit(&dyn_pad);
  return st0;
}

static hl_status_t lower_convolution_attrs(op_ctx_t *x, hl_instruction_t *inst,
                                           const hl_i64_list_t *dyn_pad) {
  hl_instruction_t **out = &inst;
  hl_attrs_t *a = &(*out)->attrs;
  const hl_mlir_op_t *op = x->op;
  a->has_convolution_dimension_numbers = true;
  hl_conv_dims_t *cd = &a->convolution_dimension_numbers;
  const hl_mlir_attr_t *dn = attr_any(op, "dim_numbers", "dimension_numbers");
  if (!dn) return OPERR("needs dimension numbers");
  const hl_mlir_attr_t *parts[3] = {NULL, NULL, NULL};
  if (dn->kind == HL_MATTR_DIALECT && hl_mlir_attr_member(dn, "input_batch_dimension")) {
    // #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3, ...>
    // (fields left out are empty lists / 0, as MLIR prints them).
    cd->input_batch_dimension = member_int(dn, "input_batch_dimension", 0);
    cd->input_feature_dimension = member_int(dn, "input_feature_dimension", 0);
    cd->kernel_input_feature_dimension = member_int(dn, "kernel_input_feature_dimension", 0);
    cd->kernel_output_feature_dimension = member_int(dn, "kernel_output_feature_dimension", 0);
    cd->output_batch_dimension = member_int(dn, "output_batch_dimension", 0);
    cd->output_feature_dimension = member_int(dn, "output_feature_dimension", 0);
    HL_RETURN_IF_ERROR(member_list(x, dn, "input_spatial_dimensions", &cd->input_spatial_dimensions));
    HL_RETURN_IF_ERROR(member_list(x, dn, "kernel_spatial_dimensions", &cd->kernel_spatial_dimensions));
    HL_RETURN_IF_ERROR(member_list(x, dn, "output_spatial_dimensions", &cd->output_spatial_dimensions));
  } else if (dn->kind == HL_MATTR_ARRAY && dn->n == 3) {
    for (int i = 0; i < 3; i++) parts[i] = &dn->items[i];
  } else if (dn->kind == HL_MATTR_DIALECT) {
    int k = 0;
    for (int i = 0; i < dn->n && k < 3; i++)
      if (dn->items[i].kind == HL_MATTR_ARRAY) parts[k++] = &dn->items[i];
    if (k != 3) return OPERR("supports only the [b, 0, f]x[0, i, o]->[b, 0, f] form of dimension numbers");
  } else {
    return OPERR("has malformed dimension numbers");
  }
  if (parts[0]) HL_RETURN_IF_ERROR(conv_layout(x, parts[0], "b", "f", &cd->input_batch_dimension,
                                 &cd->input_feature_dimension, &cd->input_spatial_dimensions));
  if (parts[1]) HL_RETURN_IF_ERROR(conv_layout(x, parts[1], "i", "o", &cd->kernel_input_feature_dimension,
                                 &cd->kernel_output_feature_dimension, &cd->kernel_spatial_dimensions));
  if (parts[2]) HL_RETURN_IF_ERROR(conv_layout(x, parts[2], "b", "f", &cd->output_batch_dimension,
                                 &cd->output_feature_dimension, &cd->output_spatial_dimensions));
  int ns = cd->kernel_spatial_dimensions.n;
  for (int i = 0; i < ns; i++)  // the window sizes below read the kernel's dimensions
    if (cd->kernel_spatial_dimensions.v[i] < 0 ||
        cd->kernel_spatial_dimensions.v[i] >= x->operands[1]->shape.rank)
      return OPERR("has kernel spatial dimension %lld outside the rank-%d kernel",
                   (long long)cd->kernel_spatial_dimensions.v[i], x->operands[1]->shape.rank);
  HL_RETURN_IF_ERROR(new_window(a, ns));
  for (int i = 0; i < ns; i++)
    a->window.dims[i].size = x->operands[1]->shape.dims[cd->kernel_spatial_dimensions.v[i]];
  const hl_mlir_attr_t *w = hl_mlir_op_attr(op, "window");
  const hl_mlir_attr_t *src = w ? w : NULL;
#define WIN(pretty, generic) (src ? hl_mlir_attr_member(src, pretty) : hl_mlir_op_attr(op, generic))
  HL_RETURN_IF_ERROR(window_field(x, WIN("stride", "window_strides"), &a->window, 1));
  HL_RETURN_IF_ERROR(window_field(x, WIN("lhs_dilate", "lhs_dilation"), &a->window, 2));
  HL_RETURN_IF_ERROR(window_field(x, WIN("rhs_dilate", "rhs_dilation"), &a->window, 3));
  HL_RETURN_IF_ERROR(window_field(x, WIN("reverse", "window_reversal"), &a->window, 4));
  HL_RETURN_IF_ERROR(window_padding(x, WIN("pad", "padding"), &a->window));
#undef WIN
  if (dyn_pad->n) {
    if (dyn_pad->n != 2 * ns) return OPERR("padding operand has %d values for %d dimensions", dyn_pad->n, ns);
    for (int i = 0; i < ns; i++) {
      a->window.dims[i].padding_low = dyn_pad->v[2 * i];
      a->window.dims[i].padding_high = dyn_pad->v[2 * i + 1];
    }
  }
  // Optional (default 1): read only when written (need_int's error for a
  // missing one would otherwise be dropped).
  int64_t v;
  if (hl_mlir_op_attr(op, "feature_group_count")) {
    HL_RETURN_IF_ERROR(need_int(x, "feature_group_count", NULL, &v));
    a->feature_group_count = v;
  }
  if (hl_mlir_op_attr(op, "batch_group_count")) {
    HL_RETURN_IF_ERROR(need_int(x, "batch_group_count", NULL, &v));
    a->batch_group_count = v;
  }
  return NULL;
}

static hl_status_t lower_pad(op_ctx_t *x, hl_instruction_t **out) {
  int given = x->n;
  x->n = 2;
  HL_RETURN_IF_ERROR(simple(x, HL_OP_PAD, out));
  x->n = given;
  hl_attrs_t *a = &(*out)->attrs;
  hl_i64_list_t lo = {0}, hi = {0}, in = {0};
  hl_status_t st;
  if (x->n == 5) {  // dynamic_pad: the paddings as constant operands
    st = const_operand_list(x, 2, &lo);
    if (!st) st = const_operand_list(x, 3, &hi);
    if (!st) st = const_operand_list(x, 4, &in);
  } else {
    st = need_list(x, "edge_padding_low", "low", &lo);
    if (!st) st = need_list(x, "edge_padding_high", "high", &hi);
    if (!st) st = need_list(x, "interior_padding", "interior", &in);
  }
  int rank = x->operands[0]->shape.rank;
  if (!st && (lo.n != rank || hi.n != rank || in.n != rank)) st = OPERR("padding lists do not match rank %d", rank);
  if (!st) {
    a->padding_config = hl_calloc((size_t)rank + 1, sizeof(hl_padding_dim_t));
    if (!a->padding_config) st = HL_OOM();
    a->padding_count = rank;
  }
  for (int d = 0; !st && d < rank; d++)
    a->padding_config[d] = (hl_padding_dim_t){lo.v[d], hi.v[d], in.v[d]};
  hl_i64_list_deinit(&lo);
  hl_i64_list_deinit(&hi);
  hl_i64_list_deinit(&in);
  return st;
}

static hl_status_t lower_sort(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(multi(x, HL_OP_SORT, out));
  int64_t dim = -1;
  const hl_mlir_attr_t *d = attr_any(x->op, "dimension", NULL);
  if (d && d->kind == HL_MATTR_INT) dim = d->i;
  if (dim < 0) dim += x->operands[0]->shape.rank;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&(*out)->attrs.dimensions, &dim, 1));
  (*out)->attrs.is_stable = bool_attr(x->op, "is_stable");
  return set_to_apply(x, *out, 0);
}

static hl_status_t lower_fft(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(simple(x, HL_OP_FFT, out));
  const char *t = enum_word(attr_any(x->op, "fft_type", "type"));
  if (!t) return OPERR("needs fft_type");
  static const char *const kTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  int k = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(t, kTypes[i]) == 0) k = i;
  if (k < 0) return OPERR("has unknown fft_type %s", t);
  (*out)->attrs.fft_type = k;
  return need_list(x, "fft_length", "length", &(*out)->attrs.fft_length);
}

static hl_status_t lower_triangular_solve(op_ctx_t *x, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(simple(x, HL_OP_TRIANGULAR_SOLVE, out));
  hl_attrs_t *a = &(*out)->attrs;
  a->triangular_left_side = bool_attr(x->op, "left_side");
  a->triangular_lower = bool_attr(x->op, "lower");
  a->triangular_unit_diagonal = bool_attr(x->op, "unit_diagonal");
  const char *t = enum_word(hl_mlir_op_attr(x->op, "transpose_a"));
  if (!t) return OPERR("needs transpose_a");
  a->triangular_transpose_a = strcmp(t, "NO_TRANSPOSE") == 0 ? HL_NO_TRANSPOSE
                              : strcmp(t, "TRANSPOSE") == 0  ? HL_TRANSPOSE
                              : strcmp(t, "ADJOINT") == 0    ? HL_ADJOINT
                                                             : HL_TRANSPOSE_INVALID;
  if (a->triangular_transpose_a == HL_TRANSPOSE_INVALID) return OPERR("has unknown transpose_a %s", t);
  return NULL;
}

// check.* ops: a side-effecting custom-call "check.<name>" whose kernel
// (runtime/kernels/check.c) compares; tolerances travel in backend_config
// (the op's own, else these defaults).
static hl_status_t lower_check(op_ctx_t *x, const char *check, double default_tolerance,
                               int64_t default_max_ulp) {
  const hl_mlir_op_t *op = x->op;
  hl_instruction_t *ops[2] = {x->n > 0 ? x->operands[0] : NULL, x->n > 1 ? x->operands[1] : NULL};
  int nops = x->n;
  char target[64];
  bool is_const = strlen(check) > 6 && strcmp(check + strlen(check) - 6, "_const") == 0;
  snprintf(target, sizeof(target), "check.%.*s", (int)(is_const ? strlen(check) - 6 : strlen(check)),
           check);
  if (is_const) {
    if (nops != 1) return OPERR("takes one operand and a constant");
    const hl_mlir_attr_t *v = hl_mlir_op_attr(op, "value");
    if (!v && op->item_count) v = &op->items[0];
    if (!v) return OPERR("needs the expected dense<...> value");
    hl_literal_t *lit;
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(x->L->file, v, &ops[0]->shape, &lit));
    hl_status_t st = add(x, HL_OP_CONSTANT, &ops[0]->shape, NULL, 0, &ops[1]);
    if (st) {
      hl_literal_release(lit);
      return st;
    }
    ops[1]->attrs.literal = lit;
    nops = 2;
  }
  if (nops != 2 && strcmp(target, "check.expect_serialized_eq") != 0)
    return OPERR("takes two operands, got %d", nops);
  if (nops == 2 && !hl_shape_equal(&ops[0]->shape, &ops[1]->shape) &&
      strcmp(target, "check.expect_serialized_eq") != 0)
    return OPERR("compares %s with %s", hl_shape_debug_string(&ops[0]->shape), hl_shape_debug_string(&ops[1]->shape));
  char config[256];
  const hl_mlir_attr_t *tol = hl_mlir_op_attr(op, "tolerance");
  const hl_mlir_attr_t *minu = hl_mlir_op_attr(op, "min_ulp_difference");
  const hl_mlir_attr_t *maxu = hl_mlir_op_attr(op, "max_ulp_difference");
  double t = tol ? (tol->kind == HL_MATTR_FLOAT ? tol->f : (double)tol->i) : default_tolerance;
  snprintf(config, sizeof(config), "tolerance=%.17g;min_ulp=%lld;max_ulp=%lld", t,
           (long long)(minu ? minu->i : 0), (long long)(maxu ? maxu->i : default_max_ulp));
  if (strcmp(target, "check.expect_serialized_eq") == 0) {
    const hl_mlir_attr_t *id = hl_mlir_op_attr(op, "probe_id");
    const hl_mlir_attr_t *it = hl_mlir_op_attr(op, "iter");
    if (!id || id->kind != HL_MATTR_STRING || nops != 1)
      return OPERR("needs one operand and probe_id = \"...\"");
    snprintf(config, sizeof(config), "probe_id=%s;iteration=%lld", id->s,
             (long long)(it && it->kind == HL_MATTR_INT ? it->i : 0));
  }
  hl_shape_t empty;
  HL_RETURN_IF_ERROR(hl_shape_tuple(NULL, 0, &empty));
  hl_instruction_t *cc;
  hl_status_t st = add(x, HL_OP_CUSTOM_CALL, &empty, ops, nops, &cc);
  hl_shape_deinit(&empty);
  if (st) return st;
  cc->attrs.custom_call_target = hl_strdup(target);
  cc->attrs.backend_config = hl_strdup(config);
  cc->attrs.custom_call_has_side_effect = true;
  if (!cc->attrs.custom_call_target || !cc->attrs.backend_config) return HL_OOM();
  if (op->result_count == 0) return hl_lower_bind_results(x->L, x->env, op, NULL, 0);
  // custom_call @check.eq's i1 result: true (a failed check stops the run
  // first, as in upstream's interpreter).
  const hl_shape_t *rt;
  HL_RETURN_IF_ERROR(result_type(x, 0, &rt));
  if (op->result_count != 1 || !hl_shape_is_array(rt) || rt->dtype != HL_PRED)
    return OPERR("has results other than one i1 tensor");
  hl_literal_t *yes;
  HL_RETURN_IF_ERROR(hl_literal_create(rt, &yes));
  memset(yes->data, 1, yes->byte_size);
  hl_instruction_t *k;
  st = add(x, HL_OP_CONSTANT, rt, NULL, 0, &k);
  if (st) {
    hl_literal_release(yes);
    return st;
  }
  k->attrs.literal = yes;
  return hl_lower_bind_results(x->L, x->env, op, &k, 1);
}

static hl_status_t lower_custom_call(op_ctx_t *x, hl_instruction_t **out) {
  const hl_mlir_op_t *op = x->op;
  const char *target = NULL;
  const hl_mlir_attr_t *t = hl_mlir_op_attr(op, "call_target_name");
  if (t && t->kind == HL_MATTR_STRING) target = t->s;
  for (int i = 0; !target && i < op->item_count; i++)
    if (op->items[i].kind == HL_MATTR_SYMBOL) target = op->items[i].s;
  if (!target) return OPERR("needs call_target_name");
  // custom_call @check.* as upstream's interpreter runs them
  // (StablehloTranslateMain.cpp): expect_close within 0..3 ULP; check.eq
  // compares integers exactly and floats within 0.0001.
  if (strncmp(target, "check.", 6) == 0) {
    const char *name = target + 6;
    double tol = 0.001;
    if (strcmp(name, "eq") == 0) {
      hl_dtype_t t = x->n == 2 ? x->operands[1]->shape.dtype : HL_INVALID;
      bool exact = hl_dtype_is_integer(t) || t == HL_PRED;
      name = exact ? "expect_eq" : "expect_almost_eq";
      tol = 0.0001;
    }
    *out = NULL;
    return lower_check(x, name, tol, strcmp(name, "expect_close") == 0 ? 3 : 1);
  }
  HL_RETURN_IF_ERROR(multi(x, HL_OP_CUSTOM_CALL, out));
  (*out)->attrs.custom_call_target = hl_strdup(target);
  if (!(*out)->attrs.custom_call_target) return HL_OOM();
  (*out)->attrs.custom_call_has_side_effect = bool_attr(op, "has_side_effect");
  return hl_lower_custom_call_attrs(x->L, op, *out);
}

static hl_status_t lower_tuple_ops(op_ctx_t *x, hl_instruction_t **out) {
  const char *n = x->op->name + strlen("stablehlo.");
  if (strcmp(n, "tuple") == 0)
    return hl_lower_add_tuple(x->L, x->env->computation, x->op, x->operands, x->n, out);
  // get_tuple_element %t[2] / {index = 2 : i32}
  int64_t index = -1;
  const hl_mlir_attr_t *ia = hl_mlir_op_attr(x->op, "index");
  if (ia && ia->kind == HL_MATTR_INT) index = ia->i;
  if (x->op->item_count == 1 && x->op->items[0].kind == HL_MATTR_ARRAY &&
      x->op->items[0].n == 1 && x->op->items[0].items[0].n == 1)
    index = x->op->items[0].items[0].items[0].i;
  if (index < 0 || x->n != 1) return OPERR("needs a tuple operand and an index");
  return hl_lower_add_gte(x->L, x->env->computation, x->op, x->operands[0], (int)index, out);
}

// Ops whose results are the operands' tuple through one IR op (opt-barrier).
static hl_status_t lower_optimization_barrier(op_ctx_t *x, hl_instruction_t **out) {
  hl_instruction_t *t;
  HL_RETURN_IF_ERROR(hl_lower_add_tuple(x->L, x->env->computation, x->op, x->operands, x->n, &t));
  return add(x, HL_OP_OPTIMIZATION_BARRIER, &t->shape, &t, 1, out);
}

// replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64> (-1 pads ragged
// groups), channel_handle, use_global_device_ids: the fields XLA stores.
static hl_status_t collective_attrs(op_ctx_t *x, hl_instruction_t *inst) {
  hl_attrs_t *a = &inst->attrs;
  const hl_mlir_attr_t *g = hl_mlir_op_attr(x->op, "replica_groups");
  if (g) {
    if (g->kind != HL_MATTR_DENSE || !g->has_type || g->type.rank != 2)
      return OPERR("needs replica_groups as a 2-d dense<...> tensor");
    hl_literal_t *lit;
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(x->L->file, g, &g->type, &lit));
    int rows = (int)g->type.dims[0], cols = (int)g->type.dims[1];
    a->replica_groups.kind = HL_GROUPS_LIST;
    a->replica_groups.groups = hl_calloc((size_t)rows + 1, sizeof(hl_i64_list_t));
    hl_status_t st = a->replica_groups.groups ? NULL : HL_OOM();
    int64_t *row = hl_calloc((size_t)cols + 1, sizeof(int64_t));
    if (!row) st = HL_OOM();
    for (int r = 0; !st && r < rows; r++) {
      int n = 0;
      for (int k = 0; k < cols; k++) {
        int64_t v = hl_literal_get_s64(lit, (int64_t)r * cols + k);
        if (v >= 0) row[n++] = v;
      }
      st = hl_i64_list_set(&a->replica_groups.groups[r], row, n);
      a->replica_groups.group_count = r + 1;
    }
    hl_free(row);
    hl_literal_release(lit);
    HL_RETURN_IF_ERROR(st);
  }
  const hl_mlir_attr_t *ch = hl_mlir_op_attr(x->op, "channel_handle");
  if (ch) a->channel_id = member_int(ch, "handle", 0);
  a->use_global_device_ids = bool_attr(x->op, "use_global_device_ids");
  a->has_dynamic_root = bool_attr(x->op, "has_dynamic_root");
  return NULL;
}

hl_status_t hl_lower_collective_attrs(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                      hl_instruction_t *inst) {
  op_ctx_t ctx = {.L = L, .env = env, .op = op};
  return collective_attrs(&ctx, inst);
}

static hl_status_t add_transpose(op_ctx_t *x, hl_instruction_t *in, const int64_t *perm,
                                 hl_instruction_t **out) {
  const hl_shape_t *s = &in->shape;
  int64_t dims[HL_MAX_RANK];
  for (int d = 0; d < s->rank; d++) dims[d] = s->dims[perm[d]];
  hl_shape_t t = hl_shape_array(s->dtype, s->rank, dims);
  HL_RETURN_IF_ERROR(add(x, HL_OP_TRANSPOSE, &t, &in, 1, out));
  return hl_i64_list_set(&(*out)->attrs.dimensions, perm, s->rank);
}

// all_to_all with split_dimension s != concat_dimension c: split s into
// [n, size/n], bring n to the front, all-to-all along 0 (one dimension, as
// HLO has it), then move the source axis in front of c and merge it into c.
static hl_status_t all_to_all_2d_one(op_ctx_t *x, hl_instruction_t *in, const hl_shape_t *rt,
                                     int64_t s, int64_t c, int64_t n, hl_instruction_t **out) {
  const hl_shape_t *sh = &in->shape;
  int r = sh->rank;
  if (s < 0 || s >= r || c < 0 || c >= r || n < 1 || sh->dims[s] % n || r + 1 > HL_MAX_RANK)
    return OPERR("has bad split / concat dimensions or split_count");
  int64_t dims[HL_MAX_RANK], perm[HL_MAX_RANK];
  int k = 0;
  for (int d = 0; d < r; d++) {
    if (d == s) dims[k++] = n;
    dims[k++] = d == s ? sh->dims[d] / n : sh->dims[d];
  }
  hl_shape_t split = hl_shape_array(sh->dtype, r + 1, dims);
  hl_instruction_t *a, *b, *t, *u;
  HL_RETURN_IF_ERROR(add(x, HL_OP_RESHAPE, &split, &in, 1, &a));
  perm[0] = s;
  for (int d = 0, q = 1; d <= r; d++)
    if (d != s) perm[q++] = d;
  HL_RETURN_IF_ERROR(add_transpose(x, a, perm, &b));
  HL_RETURN_IF_ERROR(add(x, HL_OP_ALL_TO_ALL, &b->shape, &b, 1, &t));
  int64_t zero = 0;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&t->attrs.dimensions, &zero, 1));
  HL_RETURN_IF_ERROR(collective_attrs(x, t));
  // t: [n, S with S[s] / n]; put axis 0 right before S-axis c (index c + 1).
  k = 0;
  for (int d = 1; d <= c; d++) perm[k++] = d;
  perm[k++] = 0;
  for (int d = (int)c + 1; d <= r; d++) perm[k++] = d;
  HL_RETURN_IF_ERROR(add_transpose(x, t, perm, &u));
  return add(x, HL_OP_RESHAPE, rt, &u, 1, out);
}

// all_to_all with split_dimension s != concat_dimension c: per operand, split
// s into [n, size/n], bring n to the front, all-to-all along 0 (one
// dimension, as HLO has it), then move the source axis in front of c and
// merge it into c.
static hl_status_t lower_all_to_all_2d(op_ctx_t *x, int64_t s, int64_t c, hl_instruction_t **out) {
  int64_t n = 0;
  HL_RETURN_IF_ERROR(need_int(x, "split_count", NULL, &n));
  if (x->n != x->op->result_count) return OPERR("needs one result per operand");
  hl_instruction_t **res = hl_calloc((size_t)x->n + 1, sizeof(*res));
  if (!res) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < x->n; i++) {
    const hl_shape_t *rt;
    st = result_type(x, i, &rt);
    if (!st) st = all_to_all_2d_one(x, x->operands[i], rt, s, c, n, &res[i]);
  }
  if (!st) {
    if (x->n == 1) *out = res[0];
    else st = hl_lower_add_tuple(x->L, x->env->computation, x->op, res, x->n, out);
  }
  hl_free(res);
  return st;
}

static hl_status_t lower_collective(op_ctx_t *x, const char *n, hl_instruction_t **out) {
  const hl_mlir_op_t *op = x->op;
  if (strcmp(n, "all_reduce") == 0 || strcmp(n, "reduce_scatter") == 0 ||
      strcmp(n, "collective_reduce") == 0) {
    bool rs = n[0] == 'r';
    HL_RETURN_IF_ERROR(multi(x, rs ? HL_OP_REDUCE_SCATTER
                                : n[0] == 'c' ? HL_OP_COLLECTIVE_REDUCE : HL_OP_ALL_REDUCE, out));
    if (rs) {
      int64_t d;
      HL_RETURN_IF_ERROR(need_int(x, "scatter_dimension", NULL, &d));
      HL_RETURN_IF_ERROR(hl_i64_list_set(&(*out)->attrs.dimensions, &d, 1));
    }
    HL_RETURN_IF_ERROR(set_to_apply(x, *out, 0));
  } else if (strcmp(n, "all_gather") == 0) {
    int64_t d;
    HL_RETURN_IF_ERROR(need_int(x, "all_gather_dim", NULL, &d));
    HL_RETURN_IF_ERROR(multi(x, HL_OP_ALL_GATHER, out));
    HL_RETURN_IF_ERROR(hl_i64_list_set(&(*out)->attrs.dimensions, &d, 1));
  } else if (strcmp(n, "all_to_all") == 0) {
    int64_t s = 0, c = 0;
    HL_RETURN_IF_ERROR(need_int(x, "split_dimension", NULL, &s));
    HL_RETURN_IF_ERROR(need_int(x, "concat_dimension", NULL, &c));
    if (s != c) return lower_all_to_all_2d(x, s, c, out);
    HL_RETURN_IF_ERROR(multi(x, HL_OP_ALL_TO_ALL, out));
    HL_RETURN_IF_ERROR(hl_i64_list_set(&(*out)->attrs.dimensions, &s, 1));
  } else if (strcmp(n, "collective_permute") == 0) {
    HL_RETURN_IF_ERROR(multi(x, HL_OP_COLLECTIVE_PERMUTE, out));
    const hl_mlir_attr_t *p = hl_mlir_op_attr(op, "source_target_pairs");
    if (!p || p->kind != HL_MATTR_DENSE || !p->has_type || p->type.rank != 2 || p->type.dims[1] != 2)
      return OPERR("needs source_target_pairs as an Nx2 dense<...> tensor");
    hl_literal_t *lit;
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(x->L->file, p, &p->type, &lit));
    int rows = (int)p->type.dims[0];
    hl_attrs_t *a = &(*out)->attrs;
    a->source_target_pairs = hl_calloc((size_t)rows + 1, sizeof(hl_source_target_t));
    if (!a->source_target_pairs) {
      hl_literal_release(lit);
      return HL_OOM();
    }
    a->source_target_count = rows;
    for (int r = 0; r < rows; r++)
      a->source_target_pairs[r] = (hl_source_target_t){hl_literal_get_s64(lit, 2 * r),
                                                       hl_literal_get_s64(lit, 2 * r + 1)};
    hl_literal_release(lit);
  } else {
    HL_RETURN_IF_ERROR(multi(x, HL_OP_COLLECTIVE_BROADCAST, out));
  }
  return collective_attrs(x, *out);
}

// The ops whose lowerings below read fixed operands (operands[0], [1], ...):
// fewer than this many is an error here rather than a NULL dereference
// (fuzz_program_loader: `broadcast_in_dim 1arg1` parses with no operand).
static int min_operands(const char *n) {
  static const struct {
    const char *name;
    int min;
  } kMin[] = {
      {"broadcast_in_dim", 1},         {"dynamic_broadcast_in_dim", 2}, {"dynamic_reshape", 2},
      {"slice", 1},                    {"pad", 2},                      {"dynamic_pad", 2},
      {"reduce_window", 2},            {"select_and_scatter", 3},       {"sort", 1},
      {"dot_general", 2},              {"convolution", 2},              {"dynamic_conv", 2},
  };
  for (size_t i = 0; i < sizeof(kMin) / sizeof(kMin[0]); i++)
    if (strcmp(kMin[i].name, n) == 0) return kMin[i].min;
  return 0;
}

hl_status_t hl_lower_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op) {
  op_ctx_t ctx = {L, env, op, NULL, op->operand_count, false, {0}};
  op_ctx_t *x = &ctx;
  ctx.operands = hl_calloc((size_t)op->operand_count + 1, sizeof(hl_instruction_t *));
  if (!ctx.operands) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < op->operand_count; i++)
    st = hl_lower_lookup(L, env, &op->operands[i], &ctx.operands[i]);
  bool handled = false;
  if (!st) st = hl_quant_lower_op(L, env, op, ctx.operands, &handled);  // quant_lower.c
  if (!st && !handled) st = hl_lower_control_flow(L, env, op, ctx.operands, &handled);
  if (!st && !handled) st = hl_lower_channel_op(L, env, op, ctx.operands, ctx.n, &handled);
  if (!st && !handled) st = hl_lower_chlo(L, env, op, ctx.operands, &handled);
  if (!st && !handled) st = hl_refine_custom_call(L, env, op, ctx.operands, ctx.n, &handled);
  if (!st && !handled) st = hl_lower_legacy(L, env, op, ctx.operands, &handled);
  if (!st && !handled && L->refining && op->result_count > 0) {
    const hl_shape_t *declared = NULL;
    hl_status_t none = result_type(x, 0, &declared);
    hl_status_free(none);
    if (declared)
      st = hl_refine_dynamic_type(L, op, ctx.operands, ctx.n, declared, &ctx.refined,
                                  &ctx.has_refined);
  }
  if (st || handled) {
    hl_free(ctx.operands);
    return st;
  }
  const char *name = op->name;
  hl_instruction_t *out = NULL;
  bool bound = false;  // the lowering bound the results itself
  if (strncmp(name, "check.", 6) == 0) {
    st = lower_check(x, name + 6, 0.001, 1);
    bound = true;
  } else if (strcmp(name, "interpreter.probe") == 0) {
    // The operand, written to the probe directory by the kernel (check.c).
    const hl_mlir_attr_t *id = hl_mlir_op_attr(op, "probe_id");
    if (!id || id->kind != HL_MATTR_STRING || x->n != 1) {
      st = OPERR("needs one operand and probe_id = \"...\"");
    } else if (strchr(id->s, ';')) {
      st = OPERR("probe_id \"%s\" cannot hold ';'", id->s);
    } else {
      st = add(x, HL_OP_CUSTOM_CALL, &x->operands[0]->shape, x->operands, 1, &out);
      char config[300];
      snprintf(config, sizeof(config), "probe_id=%s", id->s);
      if (!st) {
        out->attrs.custom_call_target = hl_strdup("interpreter.probe");
        out->attrs.backend_config = hl_strdup(config);
        out->attrs.custom_call_has_side_effect = true;
        if (!out->attrs.custom_call_target || !out->attrs.backend_config) st = HL_OOM();
      }
    }
  } else if (strncmp(name, "stablehlo.", 10) == 0 || strncmp(name, "chlo.", 5) == 0) {
    const char *n = name + (name[0] == 's' ? 10 : 5);
    int simple_index = -1;
    for (int i = 0; i < (int)(sizeof(kSimpleOps) / sizeof(kSimpleOps[0])); i++)
      if (strcmp(kSimpleOps[i].name, n) == 0) simple_index = i;
    // chlo ops sharing a name with an IR op and its semantics.
    if (name[0] == 'c' && strcmp(n, "mulhi") != 0 && strcmp(n, "erf") != 0 &&
        strcmp(n, "tan") != 0 && strcmp(n, "acos") != 0 && strcmp(n, "asin") != 0 &&
        strcmp(n, "atan") != 0 && strcmp(n, "acosh") != 0 && strcmp(n, "asinh") != 0 &&
        strcmp(n, "atanh") != 0 && strcmp(n, "cosh") != 0 && strcmp(n, "sinh") != 0)
      simple_index = -1;
    if (x->n < min_operands(n)) {
      st = OPERR("needs at least %d operands, has %d", min_operands(n), x->n);
    } else if (simple_index >= 0) {
      st = simple(x, kSimpleOps[simple_index].opcode, &out);
    } else if (strcmp(n, "ragged_dot") == 0) {
      st = lower_ragged_dot(x, &out);
    } else if (strcmp(n, "scan") == 0) {
      st = lower_scan(x, &out);
    } else if (strcmp(n, "constant") == 0) {
      st = lower_constant(x, &out);
    } else if (strcmp(n, "compare") == 0) {
      st = lower_compare(x, &out);
    } else if (strcmp(n, "iota") == 0) {
      int64_t d;
      st = need_int(x, "iota_dimension", "dim", &d);
      if (!st) st = simple(x, HL_OP_IOTA, &out);
      if (!st) st = hl_i64_list_set(&out->attrs.dimensions, &d, 1);
    } else if (strcmp(n, "dynamic_iota") == 0) {
      int64_t d;
      x->n = 0;  // the shape operand: the result type is static
      st = need_int(x, "iota_dimension", "dim", &d);
      if (!st) st = simple(x, HL_OP_IOTA, &out);
      if (!st) st = hl_i64_list_set(&out->attrs.dimensions, &d, 1);
    } else if (strcmp(n, "dynamic_reshape") == 0) {
      x->n = 1;
      st = simple(x, HL_OP_RESHAPE, &out);
    } else if (strcmp(n, "dynamic_broadcast_in_dim") == 0) {
      x->n = 1;
      st = lower_broadcast_in_dim(x, &out);
    } else if (strcmp(n, "broadcast_in_dim") == 0) {
      st = lower_broadcast_in_dim(x, &out);
    } else if (strcmp(n, "transpose") == 0) {
      st = simple(x, HL_OP_TRANSPOSE, &out);
      if (!st) st = need_list(x, "permutation", "dims", &out->attrs.dimensions);
    } else if (strcmp(n, "reverse") == 0) {
      st = simple(x, HL_OP_REVERSE, &out);
      if (!st) st = need_list(x, "dimensions", "dims", &out->attrs.dimensions);
    } else if (strcmp(n, "concatenate") == 0) {
      int64_t d;
      st = need_int(x, "dimension", "dim", &d);
      if (!st) st = simple(x, HL_OP_CONCATENATE, &out);
      if (!st) st = hl_i64_list_set(&out->attrs.dimensions, &d, 1);
    } else if (strcmp(n, "get_dimension_size") == 0) {
      int64_t d;
      st = need_int(x, "dimension", "dim", &d);
      if (!st) st = simple(x, HL_OP_GET_DIMENSION_SIZE, &out);
      if (!st) st = hl_i64_list_set(&out->attrs.dimensions, &d, 1);
    } else if (strcmp(n, "slice") == 0) {
      st = lower_slice(x, &out);
    } else if (strcmp(n, "real_dynamic_slice") == 0) {
      st = lower_real_dynamic_slice(x, &out);
    } else if (strcmp(n, "dynamic_slice") == 0) {
      st = simple(x, HL_OP_DYNAMIC_SLICE, &out);
      if (!st) st = need_list(x, "slice_sizes", "sizes", &out->attrs.dynamic_slice_sizes);
    } else if (strcmp(n, "dynamic_update_slice") == 0) {
      st = simple(x, HL_OP_DYNAMIC_UPDATE_SLICE, &out);
    } else if (strcmp(n, "pad") == 0 || strcmp(n, "dynamic_pad") == 0) {
      st = lower_pad(x, &out);
    } else if (strcmp(n, "reduce") == 0) {
      st = lower_reduce(x, &out);
    } else if (strcmp(n, "reduce_window") == 0) {
      st = lower_reduce_window(x, &out, false);
    } else if (strcmp(n, "select_and_scatter") == 0) {
      st = lower_reduce_window(x, &out, true);
    } else if (strcmp(n, "sort") == 0) {
      st = lower_sort(x, &out);
    } else if (strcmp(n, "map") == 0) {
      st = simple(x, HL_OP_MAP, &out);
      if (!st) st = need_list(x, "dimensions", NULL, &out->attrs.dimensions);
      if (!st) st = set_to_apply(x, out, 0);
    } else if (strcmp(n, "dot_general") == 0) {
      st = lower_dot_general(x, &out);
    } else if (strcmp(n, "gather") == 0 || strcmp(n, "dynamic_gather") == 0) {
      st = lower_gather(x, &out);
    } else if (strcmp(n, "scatter") == 0) {
      st = lower_scatter(x, &out);
    } else if (strcmp(n, "convolution") == 0 || strcmp(n, "dynamic_conv") == 0) {
      st = lower_convolution(x, &out);
    } else if (strcmp(n, "fft") == 0) {
      st = lower_fft(x, &out);
    } else if (strcmp(n, "triangular_solve") == 0) {
      st = lower_triangular_solve(x, &out);
    } else if (strcmp(n, "reduce_precision") == 0) {
      int64_t e = 0, m = 0;
      const char *format = enum_word(hl_mlir_op_attr(op, "format"));  // pretty: format = e5m10
      if (format) {
        long long le, lm;
        char tail;
        if (sscanf(format, "e%lldm%lld%c", &le, &lm, &tail) != 2)
          st = OPERR("has malformed format %s (expected eXmY)", format);
        e = le;
        m = lm;
      } else {
        st = need_int(x, "exponent_bits", NULL, &e);
        if (!st) st = need_int(x, "mantissa_bits", NULL, &m);
      }
      if (!st) st = simple(x, HL_OP_REDUCE_PRECISION, &out);
      if (!st) {
        out->attrs.exponent_bits = (int32_t)e;
        out->attrs.mantissa_bits = (int32_t)m;
      }
    } else if (strcmp(n, "rng_bit_generator") == 0) {
      // (state) -> (new state, bits): XLA's RngBitGenerator (kernels/rng.c).
      const char *alg = enum_word(attr_any(op, "rng_algorithm", "algorithm"));
      static const char *const kAlg[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
      int k = -1;
      for (int i = 0; alg && i < 3; i++)
        if (strcmp(alg, kAlg[i]) == 0) k = i;
      st = k < 0 ? OPERR("needs rng_algorithm DEFAULT, THREE_FRY or PHILOX") : NULL;
      if (!st) st = multi(x, HL_OP_RNG_BIT_GENERATOR, &out);
      if (!st) out->attrs.rng_algorithm = k;
    } else if (strcmp(n, "tuple") == 0 || strcmp(n, "get_tuple_element") == 0) {
      st = lower_tuple_ops(x, &out);
    } else if (strcmp(n, "optimization_barrier") == 0) {
      st = lower_optimization_barrier(x, &out);
    } else if (strcmp(n, "outfeed") == 0) {
      // outfeed(inputs..., token): the IR's outfeed takes the inputs as one tuple.
      if (x->n < 1 || x->operands[x->n - 1]->shape.dtype != HL_TOKEN) {
        st = OPERR("needs its inputs and a token");
      } else {
        hl_instruction_t *ops2[2];
        hl_shape_t tok = hl_shape_token();
        st = hl_lower_add_tuple(L, env->computation, op, x->operands, x->n - 1, &ops2[0]);
        ops2[1] = x->operands[x->n - 1];
        if (!st) st = add(x, HL_OP_OUTFEED, &tok, ops2, 2, &out);
        if (!st) {
          out->attrs.outfeed_shape = hl_calloc(1, sizeof(hl_shape_t));
          st = out->attrs.outfeed_shape ? hl_shape_copy(&ops2[0]->shape, out->attrs.outfeed_shape)
                                        : HL_OOM();
        }
        const hl_mlir_attr_t *cfg = hl_mlir_op_attr(op, "outfeed_config");
        if (!st && cfg && cfg->kind == HL_MATTR_STRING) {
          out->attrs.outfeed_config = hl_strdup(cfg->s);
          if (!out->attrs.outfeed_config) st = HL_OOM();
        }
      }
    } else if (strcmp(n, "after_all") == 0 || strcmp(n, "create_token") == 0) {
      hl_shape_t tok = hl_shape_token();
      st = add(x, HL_OP_AFTER_ALL, &tok, x->operands, x->n, &out);
    } else if (strcmp(n, "all_reduce") == 0 || strcmp(n, "all_gather") == 0 ||
               strcmp(n, "reduce_scatter") == 0 || strcmp(n, "all_to_all") == 0 ||
               strcmp(n, "collective_permute") == 0 || strcmp(n, "collective_broadcast") == 0 ||
               strcmp(n, "collective_reduce") == 0) {
      st = lower_collective(x, n, &out);
    } else if (strcmp(n, "custom_call") == 0) {
      st = lower_custom_call(x, &out);
      bound = out == NULL && !st;
    } else {
      st = hl_lower_op_error(L, op, "is not supported");
    }
  } else {
    st = hl_lower_op_error(L, op, "is not supported");
  }
  if (!st && out) st = hl_refine_result(L, op, out);  // dynamic dimensions (refine_shapes.c)
  if (!st && out) st = hl_lower_op_sharding(L, op, out);  // mhlo.sharding / sdy.sharding
  if (!st && !bound) st = out ? bind_multi(x, out) : hl_lower_bind_results(L, env, op, NULL, 0);
  hl_free(ctx.operands);
  return st;
}
