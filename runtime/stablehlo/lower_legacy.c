// Ops that exporters write beside or instead of today's StableHLO ops, onto
// the module IR with the meaning upstream gives them:
//   - the deprecated StableHLO ops the dialect still parses, as upstream's
//     stablehlo-legalize-deprecated-ops rewrites them
//     (StablehloLegalizeDeprecatedOpsPatterns.td): broadcast (broadcast_in_dim
//     onto the trailing dimensions), dot (dot_general contracting lhs's last
//     and rhs's first dimension), "stablehlo.cross-replica-sum" (all_reduce
//     with add), unary_einsum / einsum (reduce and dot_general, then a
//     transpose into the output's label order), torch_index_select (gather);
//   - the arith ops left beside StableHLO whose meaning a StableHLO op has:
//     constant, element-wise arithmetic, cmpi / cmpf, select, conversions.
//     arith integers are signless; an op that reads them signed (divsi,
//     sitofp, ...) or unsigned (divui, uitofp, ...) must meet a tensor type of
//     that signedness, else it stops naming the op (extui of a signed type
//     reinterprets the bits as unsigned first). Fast-math and overflow flags
//     only permit a result; the exact one is computed;
//   - tensor.extract (one element, a rank-0 value); sdy.constant, a constant
//     Shardy keeps from folding; (cf.br / cf.cond_br stop in the parser:
//     regions here have one block);
//   - custom_call @mhlo.topk {mhlo.attributes = {k, largest}}: what
//     jax.lax.top_k lowers to (XLA's TopK).
// Anything else of these forms stops with an error naming it.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/stablehlo/lower_internal.h"
#include "runtime/stablehlo/mlir_dense.h"

typedef struct legacy_ctx {
  hl_lower_t *L;
  hl_lower_env_t *env;
  const hl_mlir_op_t *op;
  hl_instruction_t *const *in;
  int n;
} lg_t;

#define LERR(...) hl_lower_op_error(c->L, c->op, __VA_ARGS__)

static hl_status_t emit(lg_t *c, hl_opcode_t opcode, const hl_shape_t *shape,
                        hl_instruction_t *const *ops, int n, hl_instruction_t **out) {
  return hl_lower_add(c->L, c->env->computation, c->op, opcode, shape, ops, n, out);
}

// The (single) result type: after '->' / 'to', else the last type listed
// (`: tensor<..>`, arith.select's `: i1, tensor<..>`).
static hl_status_t result_type(lg_t *c, const hl_shape_t **out) {
  const hl_mlir_op_t *op = c->op;
  if (op->has_function_type && op->result_type_count >= 1) *out = &op->result_types[0];
  else if (!op->has_function_type && op->operand_type_count >= 1)
    *out = &op->operand_types[op->operand_type_count - 1];
  else return LERR("needs its result type after ':'");
  return NULL;
}

static hl_status_t need_operands(lg_t *c, int n) {
  if (c->n != n) return LERR("takes %d operand%s, not %d", n, n == 1 ? "" : "s", c->n);
  for (int i = 0; i < n; i++)
    if (!hl_shape_is_array(&c->in[i]->shape)) return LERR("operand %d is not a tensor", i);
  return NULL;
}

// An integer list attribute: [1, 2], array<i64: 1, 2> or dense<[1, 2]>.
static hl_status_t int_list(lg_t *c, const char *name, const char *alt, int64_t *v, int *n,
                            bool required) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(c->op, name);
  if (!a && alt) a = hl_mlir_op_attr(c->op, alt);
  *n = 0;
  if (!a) return required ? LERR("needs %s", name) : NULL;
  if (a->kind == HL_MATTR_ARRAY) {
    if (a->n > HL_MAX_RANK) return LERR("has too many %s", name);
    for (int i = 0; i < a->n; i++) {
      if (a->items[i].kind != HL_MATTR_INT) return LERR("needs integers in %s", name);
      v[i] = a->items[i].i;
    }
    *n = a->n;
    return NULL;
  }
  if (a->kind == HL_MATTR_DENSE && a->has_type && a->type.rank == 1 &&
      a->type.dims[0] <= HL_MAX_RANK) {
    hl_literal_t *lit;
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(c->L->file, a, &a->type, &lit));
    *n = (int)a->type.dims[0];
    for (int i = 0; i < *n; i++) v[i] = hl_literal_get_s64(lit, i);
    hl_literal_release(lit);
    return NULL;
  }
  return LERR("needs %s as a list of integers", name);
}

static hl_status_t int_attr(lg_t *c, const char *name, int64_t dflt, int64_t *out) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(c->op, name);
  *out = dflt;
  if (!a) return NULL;
  if (a->kind != HL_MATTR_INT) return LERR("needs %s as an integer", name);
  *out = a->i;
  return NULL;
}

static hl_status_t transpose(lg_t *c, hl_instruction_t *in, const int64_t *perm,
                             hl_instruction_t **out) {
  const hl_shape_t *s = &in->shape;
  int64_t dims[HL_MAX_RANK];
  for (int d = 0; d < s->rank; d++) dims[d] = s->dims[perm[d]];
  hl_shape_t t = hl_shape_array(s->dtype, s->rank, dims);
  HL_RETURN_IF_ERROR(emit(c, HL_OP_TRANSPOSE, &t, &in, 1, out));
  return hl_i64_list_set(&(*out)->attrs.dimensions, perm, s->rank);
}

static hl_status_t zero_of(lg_t *c, hl_dtype_t t, hl_instruction_t **out) {
  hl_shape_t s = hl_shape_scalar(t);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(&s, &lit));  // zero-filled
  hl_status_t st = emit(c, HL_OP_CONSTANT, &s, NULL, 0, out);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  (*out)->attrs.literal = lit;
  return NULL;
}

// Sums `in` over the dimensions in `dims` (n of them), in dtype t.
static hl_status_t reduce_sum(lg_t *c, hl_instruction_t *in, const int64_t *dims, int n,
                              hl_instruction_t **out) {
  if (n == 0) {
    *out = in;
    return NULL;
  }
  const hl_shape_t *s = &in->shape;
  int64_t rd[HL_MAX_RANK];
  int k = 0;
  for (int d = 0; d < s->rank; d++) {
    bool gone = false;
    for (int i = 0; i < n; i++) gone |= dims[i] == d;
    if (!gone) rd[k++] = s->dims[d];
  }
  hl_shape_t rs = hl_shape_array(s->dtype, k, rd), scalar = hl_shape_scalar(s->dtype);
  hl_instruction_t *ops[2] = {in, NULL};
  HL_RETURN_IF_ERROR(zero_of(c, s->dtype, &ops[1]));
  hl_computation_t *add;
  HL_RETURN_IF_ERROR(hl_lower_binary_computation(c->L, c->op, "stablehlo.add", &scalar, &add));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_REDUCE, &rs, ops, 2, out));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&(*out)->attrs.dimensions, dims, n));
  return hl_instruction_set_called(*out, &add, 1);
}

//===----------------------------------------------------------------------===//
// Deprecated StableHLO ops
//===----------------------------------------------------------------------===//

// broadcast %x, sizes = [a, b]: result dims = sizes ++ operand dims.
static hl_status_t lower_broadcast(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  int64_t sizes[HL_MAX_RANK];
  int n;
  HL_RETURN_IF_ERROR(int_list(c, "broadcast_sizes", "sizes", sizes, &n, true));
  const hl_shape_t *s = &c->in[0]->shape;
  if (n + s->rank > HL_MAX_RANK) return LERR("broadcasts to more than %d dimensions", HL_MAX_RANK);
  int64_t dims[HL_MAX_RANK], map[HL_MAX_RANK];
  for (int i = 0; i < n; i++) dims[i] = sizes[i];
  for (int d = 0; d < s->rank; d++) {
    dims[n + d] = s->dims[d];
    map[d] = n + d;
  }
  hl_shape_t rs = hl_shape_array(s->dtype, n + s->rank, dims);
  HL_RETURN_IF_ERROR(emit(c, HL_OP_BROADCAST, &rs, c->in, 1, out));
  return hl_i64_list_set(&(*out)->attrs.dimensions, map, s->rank);
}

// dot %a, %b (rank 1 or 2 each): contracts lhs's last and rhs's first dimension.
static hl_status_t lower_dot(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 2));
  const hl_shape_t *a = &c->in[0]->shape, *b = &c->in[1]->shape, *rt = NULL;
  if (a->rank < 1 || a->rank > 2 || b->rank < 1 || b->rank > 2)
    return LERR("takes operands of rank 1 or 2");
  HL_RETURN_IF_ERROR(result_type(c, &rt));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_DOT, rt, c->in, 2, out));
  hl_attrs_t *at = &(*out)->attrs;
  at->has_dot_dimension_numbers = true;
  int64_t lc = a->rank - 1, rc = 0;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&at->dot_dimension_numbers.lhs_contracting_dimensions, &lc, 1));
  return hl_i64_list_set(&at->dot_dimension_numbers.rhs_contracting_dimensions, &rc, 1);
}

static hl_status_t lower_cross_replica_sum(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  hl_shape_t scalar = hl_shape_scalar(c->in[0]->shape.dtype);
  hl_computation_t *add;
  HL_RETURN_IF_ERROR(hl_lower_binary_computation(c->L, c->op, "stablehlo.add", &scalar, &add));
  HL_RETURN_IF_ERROR(emit(c, HL_OP_ALL_REDUCE, &c->in[0]->shape, c->in, 1, out));
  HL_RETURN_IF_ERROR(hl_instruction_set_called(*out, &add, 1));
  return hl_lower_collective_attrs(c->L, c->env, c->op, *out);
}

// One operand's labels of an einsum config ("ab" of "ab,bc->ac").
typedef struct labels {
  char l[HL_MAX_RANK];
  int n;
} labels_t;

static int label_at(const labels_t *s, char ch) {
  for (int i = 0; i < s->n; i++)
    if (s->l[i] == ch) return i;
  return -1;
}

static hl_status_t parse_labels(lg_t *c, const char *txt, size_t len, int rank, labels_t *out) {
  out->n = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = txt[i];
    if (ch == '.') return LERR("with an ellipsis ('...') in its config is not supported");
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
      return LERR("has a config with '%c' where a label letter belongs", ch);
    if (label_at(out, ch) >= 0)
      return LERR("repeats label '%c' in one term (a diagonal): not supported", ch);
    if (out->n == HL_MAX_RANK) return LERR("has a term of more than %d labels", HL_MAX_RANK);
    out->l[out->n++] = ch;
  }
  if (rank >= 0 && out->n != rank)
    return LERR("config term '%.*s' has %d labels for a rank-%d operand", (int)len, txt, out->n, rank);
  return NULL;
}

// Sums away the labels of `in` that neither `other` nor `res` has.
static hl_status_t sum_unshared(lg_t *c, hl_instruction_t **in, labels_t *s, const labels_t *other,
                                const labels_t *res) {
  int64_t dims[HL_MAX_RANK];
  int n = 0;
  labels_t kept = {.n = 0};
  for (int i = 0; i < s->n; i++) {
    if (label_at(res, s->l[i]) < 0 && (!other || label_at(other, s->l[i]) < 0)) dims[n++] = i;
    else kept.l[kept.n++] = s->l[i];
  }
  HL_RETURN_IF_ERROR(reduce_sum(c, *in, dims, n, in));
  *s = kept;
  return NULL;
}

// Transposes `in` (labels s) into the result's label order.
static hl_status_t to_result_order(lg_t *c, hl_instruction_t *in, const labels_t *s,
                                   const labels_t *res, hl_instruction_t **out) {
  int64_t perm[HL_MAX_RANK];
  bool identity = true;
  for (int i = 0; i < res->n; i++) {
    int k = label_at(s, res->l[i]);
    if (k < 0) return LERR("has output label '%c' that no input has", res->l[i]);
    perm[i] = k;
    identity &= k == i;
  }
  if (identity) {
    *out = in;
    return NULL;
  }
  return transpose(c, in, perm, out);
}

// einsum %a, %b, config = "ab,bc->ac" / unary_einsum %a, config = "ab->a".
static hl_status_t lower_einsum(lg_t *c, bool unary, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, unary ? 1 : 2));
  const hl_mlir_attr_t *cfg = hl_mlir_op_attr(c->op, "einsum_config");
  if (!cfg) cfg = hl_mlir_op_attr(c->op, "config");
  if (!cfg || cfg->kind != HL_MATTR_STRING) return LERR("needs einsum_config = \"...\"");
  const char *s = cfg->s, *arrow = strstr(s, "->"), *comma = strchr(s, ',');
  if (!arrow || (unary ? comma != NULL : (!comma || comma > arrow)))
    return LERR("has config \"%s\", expected \"%s\"", s, unary ? "ab->a" : "ab,bc->ac");
  const hl_shape_t *rt = NULL;
  HL_RETURN_IF_ERROR(result_type(c, &rt));
  labels_t a, b, res;
  const char *a_end = unary ? arrow : comma;
  HL_RETURN_IF_ERROR(parse_labels(c, s, (size_t)(a_end - s), c->in[0]->shape.rank, &a));
  if (!unary)
    HL_RETURN_IF_ERROR(parse_labels(c, comma + 1, (size_t)(arrow - comma - 1), c->in[1]->shape.rank, &b));
  HL_RETURN_IF_ERROR(parse_labels(c, arrow + 2, strlen(arrow + 2), rt->rank, &res));
  hl_instruction_t *x = c->in[0], *y = unary ? NULL : c->in[1];
  HL_RETURN_IF_ERROR(sum_unshared(c, &x, &a, unary ? NULL : &b, &res));
  if (unary) return to_result_order(c, x, &a, &res, out);
  HL_RETURN_IF_ERROR(sum_unshared(c, &y, &b, &a, &res));
  // dot_general: batch = labels of both and the result, contracted = of both only.
  int64_t lb[HL_MAX_RANK], rb[HL_MAX_RANK], lc[HL_MAX_RANK], rc[HL_MAX_RANK], dims[HL_MAX_RANK];
  int nb = 0, nc = 0, nd = 0;
  labels_t prod = {.n = 0};
  for (int i = 0; i < a.n; i++) {
    int j = label_at(&b, a.l[i]);
    if (j < 0) continue;
    if (x->shape.dims[i] != y->shape.dims[j])
      return LERR("label '%c' has sizes %lld and %lld", a.l[i], (long long)x->shape.dims[i],
                  (long long)y->shape.dims[j]);
    if (label_at(&res, a.l[i]) >= 0) {
      lb[nb] = i, rb[nb++] = j;
      dims[nd++] = x->shape.dims[i];
      prod.l[prod.n++] = a.l[i];
    } else {
      lc[nc] = i, rc[nc++] = j;
    }
  }
  for (int i = 0; i < a.n; i++)
    if (label_at(&b, a.l[i]) < 0) dims[nd++] = x->shape.dims[i], prod.l[prod.n++] = a.l[i];
  for (int j = 0; j < b.n; j++)
    if (label_at(&a, b.l[j]) < 0) dims[nd++] = y->shape.dims[j], prod.l[prod.n++] = b.l[j];
  hl_shape_t ps = hl_shape_array(rt->dtype, nd, dims);
  hl_instruction_t *ops[2] = {x, y}, *d;
  HL_RETURN_IF_ERROR(emit(c, HL_OP_DOT, &ps, ops, 2, &d));
  hl_attrs_t *at = &d->attrs;
  hl_dot_dims_t *dn = &at->dot_dimension_numbers;
  at->has_dot_dimension_numbers = true;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&dn->lhs_batch_dimensions, lb, nb));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&dn->rhs_batch_dimensions, rb, nb));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&dn->lhs_contracting_dimensions, lc, nc));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&dn->rhs_contracting_dimensions, rc, nc));
  return to_result_order(c, d, &prod, &res, out);
}

// torch_index_select(operand, index) {dim, batch_dims}: result =
// operand[:dim] ++ index[batch_dims:] ++ operand[dim+1:], the first
// batch_dims dimensions shared by operand and index.
static hl_status_t lower_torch_index_select(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 2));
  int64_t dim, bd;
  HL_RETURN_IF_ERROR(int_attr(c, "dim", -1, &dim));
  HL_RETURN_IF_ERROR(int_attr(c, "batch_dims", 0, &bd));
  const hl_shape_t *x = &c->in[0]->shape, *ix = &c->in[1]->shape, *rt = NULL;
  if (dim < 0) dim += x->rank;
  if (bd < 0) bd += ix->rank;
  if (dim < 0 || dim >= x->rank || bd < 0 || bd > dim || bd > ix->rank)
    return LERR("has dim %lld / batch_dims %lld out of range", (long long)dim, (long long)bd);
  if (!hl_dtype_is_integer(ix->dtype)) return LERR("needs integer indices");
  for (int d = 0; d < bd; d++)
    if (x->dims[d] != ix->dims[d]) return LERR("batch dimension %d differs in operand and index", d);
  HL_RETURN_IF_ERROR(result_type(c, &rt));
  int64_t off[HL_MAX_RANK], sizes[HL_MAX_RANK], batch[HL_MAX_RANK];
  int noff = 0;
  for (int d = 0; d < x->rank; d++) sizes[d] = d < bd || d == dim ? 1 : x->dims[d];
  for (int d = (int)bd; d < dim; d++) off[noff++] = d;
  for (int d = (int)dim + 1; d < x->rank; d++) off[noff++] = d + ix->rank - bd - 1;
  for (int d = 0; d < bd; d++) batch[d] = d;
  if (rt->rank != ix->rank + noff) return LERR("has a result of rank %d, expected %d", rt->rank, ix->rank + noff);
  HL_RETURN_IF_ERROR(emit(c, HL_OP_GATHER, rt, c->in, 2, out));
  hl_attrs_t *a = &(*out)->attrs;
  a->has_gather_dimension_numbers = true;
  hl_gather_dims_t *g = &a->gather_dimension_numbers;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->offset_dims, off, noff));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->collapsed_slice_dims, &dim, 1));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->start_index_map, &dim, 1));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->operand_batching_dims, batch, (int)bd));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->start_indices_batching_dims, batch, (int)bd));
  g->index_vector_dim = ix->rank;
  return hl_i64_list_set(&a->gather_slice_sizes, sizes, x->rank);
}

//===----------------------------------------------------------------------===//
// Constants: arith.constant, sdy.constant
//===----------------------------------------------------------------------===//

static hl_status_t lower_constant(lg_t *c, hl_instruction_t **out) {
  const hl_mlir_attr_t *v = hl_mlir_op_attr(c->op, "value");
  if (!v && c->op->item_count > 0) v = &c->op->items[0];
  const hl_shape_t *t = NULL;
  hl_shape_t i1 = hl_shape_scalar(HL_PRED);
  if (!v) return LERR("needs a value");
  bool untyped = c->op->result_type_count + c->op->operand_type_count == 0;
  if (untyped && v->has_type) t = &v->type;
  else if (untyped && v->kind == HL_MATTR_BOOL) t = &i1;  // `arith.constant true`: i1
  else HL_RETURN_IF_ERROR(result_type(c, &t));
  if (!hl_shape_is_array(t)) return LERR("needs a tensor or scalar type");
  hl_literal_t *lit;
  if (v->kind == HL_MATTR_DENSE || v->kind == HL_MATTR_RESOURCE) {
    HL_RETURN_IF_ERROR(hl_mlir_dense_literal(c->L->file, v, t, &lit));
  } else if (t->rank == 0 && (v->kind == HL_MATTR_INT || v->kind == HL_MATTR_BOOL ||
                              v->kind == HL_MATTR_FLOAT)) {
    // `arith.constant 3 : i32`, `arith.constant 1.5 : f32`, `arith.constant true`.
    bool fl = hl_dtype_is_float(t->dtype);
    if (fl != (v->kind == HL_MATTR_FLOAT) || (v->kind == HL_MATTR_BOOL && t->dtype != HL_PRED))
      return LERR("has a value whose kind does not match its type %s", hl_shape_debug_string(t));
    if (!fl && !hl_dtype_is_integer(t->dtype) && t->dtype != HL_PRED)
      return LERR("with type %s is not supported", hl_shape_debug_string(t));
    HL_RETURN_IF_ERROR(hl_literal_create(t, &lit));
    if (fl) {
      hl_literal_set_f64(lit, 0, v->f);
    } else {
      uint64_t bits = v->kind == HL_MATTR_BOOL ? (uint64_t)v->b : (uint64_t)v->i;
      if (t->dtype == HL_PRED) bits = bits != 0;
      memcpy(lit->data, &bits, lit->byte_size < 8 ? lit->byte_size : 8);  // little-endian
    }
  } else {
    return LERR("needs a dense<...> or scalar value");
  }
  hl_status_t st = emit(c, HL_OP_CONSTANT, t, NULL, 0, out);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  (*out)->attrs.literal = lit;
  return NULL;
}

//===----------------------------------------------------------------------===//
// arith
//===----------------------------------------------------------------------===//

enum { kAny = 0, kSigned, kUnsigned, kFloat };

static const struct {
  const char *name;
  hl_opcode_t opcode;
  int arity, operand_kind;  // what the op reads its (first) operand as
} kArith[] = {
    {"addf", HL_OP_ADD, 2, kFloat},        {"addi", HL_OP_ADD, 2, kAny},
    {"subf", HL_OP_SUBTRACT, 2, kFloat},   {"subi", HL_OP_SUBTRACT, 2, kAny},
    {"mulf", HL_OP_MULTIPLY, 2, kFloat},   {"muli", HL_OP_MULTIPLY, 2, kAny},
    {"divf", HL_OP_DIVIDE, 2, kFloat},     {"divsi", HL_OP_DIVIDE, 2, kSigned},
    {"divui", HL_OP_DIVIDE, 2, kUnsigned}, {"remf", HL_OP_REMAINDER, 2, kFloat},
    {"remsi", HL_OP_REMAINDER, 2, kSigned}, {"remui", HL_OP_REMAINDER, 2, kUnsigned},
    {"maximumf", HL_OP_MAXIMUM, 2, kFloat}, {"minimumf", HL_OP_MINIMUM, 2, kFloat},
    {"maxsi", HL_OP_MAXIMUM, 2, kSigned},  {"minsi", HL_OP_MINIMUM, 2, kSigned},
    {"maxui", HL_OP_MAXIMUM, 2, kUnsigned}, {"minui", HL_OP_MINIMUM, 2, kUnsigned},
    {"andi", HL_OP_AND, 2, kAny},          {"ori", HL_OP_OR, 2, kAny},
    {"xori", HL_OP_XOR, 2, kAny},          {"shli", HL_OP_SHIFT_LEFT, 2, kAny},
    {"shrsi", HL_OP_SHIFT_RIGHT_ARITHMETIC, 2, kAny},
    {"shrui", HL_OP_SHIFT_RIGHT_LOGICAL, 2, kAny},
    {"negf", HL_OP_NEGATE, 1, kFloat},
    // Conversions (`: type to type`); the source kind here, the target's below.
    {"extf", HL_OP_CONVERT, 1, kFloat},    {"truncf", HL_OP_CONVERT, 1, kFloat},
    {"sitofp", HL_OP_CONVERT, 1, kSigned}, {"uitofp", HL_OP_CONVERT, 1, kUnsigned},
    {"fptosi", HL_OP_CONVERT, 1, kFloat},  {"fptoui", HL_OP_CONVERT, 1, kFloat},
    {"extsi", HL_OP_CONVERT, 1, kSigned},  {"trunci", HL_OP_CONVERT, 1, kAny},
    {"index_cast", HL_OP_CONVERT, 1, kAny}, {"bitcast", HL_OP_BITCAST_CONVERT, 1, kAny},
};

static bool kind_ok(int kind, hl_dtype_t t) {
  switch (kind) {
    case kSigned: return hl_dtype_is_signed_int(t);
    case kUnsigned: return hl_dtype_is_integer(t) && !hl_dtype_is_signed_int(t);
    case kFloat: return hl_dtype_is_float(t) || hl_dtype_is_complex(t);
    default: return true;
  }
}

static const char *const kKindNames[] = {"any", "a signed integer", "an unsigned integer", "a float"};

// arith.cmpi / cmpf: the predicate word (pretty) or its enum number (generic).
static hl_status_t lower_arith_compare(lg_t *c, bool is_float, hl_instruction_t **out) {
  static const char *const kI[] = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"};
  static const char *const kF[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                   "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};
  HL_RETURN_IF_ERROR(need_operands(c, 2));
  const char *pred = NULL;
  const hl_mlir_attr_t *p = hl_mlir_op_attr(c->op, "predicate");
  for (int i = 0; !p && i < c->op->item_count; i++)
    if (c->op->items[i].kind == HL_MATTR_WORD) p = &c->op->items[i];
  int count = is_float ? 16 : 10;
  if (p && p->kind == HL_MATTR_INT && p->i >= 0 && p->i < count) pred = (is_float ? kF : kI)[p->i];
  else if (p && p->kind == HL_MATTR_WORD) pred = p->s;
  if (!pred) return LERR("needs a predicate");
  hl_dtype_t t = c->in[0]->shape.dtype;
  hl_comparison_direction_t dir = HL_CMP_NONE;
  hl_comparison_type_t type = HL_CMPTYPE_DEFAULT;
  static const char *const kDirs[] = {"eq", "ne", "ge", "gt", "le", "lt"};
  static const hl_comparison_direction_t kDirOf[] = {HL_CMP_EQ, HL_CMP_NE, HL_CMP_GE,
                                                    HL_CMP_GT, HL_CMP_LE, HL_CMP_LT};
  if (is_float) {
    if (!kind_ok(kFloat, t)) return LERR("compares %s, not floats", hl_dtype_name(t));
    // FLOAT compares: EQ .. LT are ordered (false on NaN), NE is unordered.
    const char *rest = strcmp(pred, "une") == 0 ? "ne" : pred[0] == 'o' && strcmp(pred, "one") != 0 ? pred + 1 : NULL;
    for (int i = 0; rest && i < 6; i++)
      if (strcmp(rest, kDirs[i]) == 0) dir = kDirOf[i];
    type = HL_CMPTYPE_FLOAT;
  } else {
    if (!hl_dtype_is_integer(t) && t != HL_PRED) return LERR("compares %s, not integers", hl_dtype_name(t));
    const char *rest = pred[0] == 's' || pred[0] == 'u' ? pred + 1 : pred;
    for (int i = 0; i < 6; i++)
      if (strcmp(rest, kDirs[i]) == 0) dir = kDirOf[i];
    type = pred[0] == 'u' ? HL_CMPTYPE_UNSIGNED : pred[0] == 's' ? HL_CMPTYPE_SIGNED : HL_CMPTYPE_DEFAULT;
  }
  if (dir == HL_CMP_NONE) return LERR("with predicate %s is not supported", pred);
  hl_shape_t rs = c->in[0]->shape;
  rs.dtype = HL_PRED;
  rs.has_layout = false;
  HL_RETURN_IF_ERROR(emit(c, HL_OP_COMPARE, &rs, c->in, 2, out));
  (*out)->attrs.comparison_direction = dir;
  (*out)->attrs.comparison_type = type;
  return NULL;
}

static hl_status_t lower_arith(lg_t *c, const char *n, hl_instruction_t **out) {
  if (strcmp(n, "constant") == 0) return lower_constant(c, out);
  if (strcmp(n, "cmpi") == 0 || strcmp(n, "cmpf") == 0) return lower_arith_compare(c, n[3] == 'f', out);
  const hl_shape_t *rt = NULL;
  if (strcmp(n, "select") == 0) {
    HL_RETURN_IF_ERROR(need_operands(c, 3));
    HL_RETURN_IF_ERROR(result_type(c, &rt));
    return emit(c, HL_OP_SELECT, rt, c->in, 3, out);
  }
  int k = -1;
  for (int i = 0; i < (int)(sizeof(kArith) / sizeof(kArith[0])); i++)
    if (strcmp(kArith[i].name, n) == 0) k = i;
  if (k < 0) return LERR("is not supported");
  HL_RETURN_IF_ERROR(need_operands(c, kArith[k].arity));
  HL_RETURN_IF_ERROR(result_type(c, &rt));
  hl_dtype_t from = c->in[0]->shape.dtype, to = rt->dtype;
  if (!kind_ok(kArith[k].operand_kind, from))
    return LERR("reads its operand as %s; %s is not", kKindNames[kArith[k].operand_kind],
                hl_dtype_name(from));
  if (kArith[k].opcode != HL_OP_CONVERT && kArith[k].opcode != HL_OP_BITCAST_CONVERT)
    return emit(c, kArith[k].opcode, rt, c->in, kArith[k].arity, out);
  int target = strstr(n, "tosi") ? kSigned : strstr(n, "toui") ? kUnsigned
               : strstr(n, "tofp") || n[strlen(n) - 1] == 'f' ? kFloat : kAny;
  if (!kind_ok(target, to))
    return LERR("converts to %s; %s is not", kKindNames[target], hl_dtype_name(to));
  return emit(c, kArith[k].opcode, rt, c->in, 1, out);
}

// arith.extui: zero-extends the operand's bits: an unsigned type converts as
// is; a signed one is first reinterpreted as the unsigned type of its width.
static hl_status_t lower_extui(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  const hl_shape_t *rt = NULL;
  HL_RETURN_IF_ERROR(result_type(c, &rt));
  hl_instruction_t *x = c->in[0];
  hl_dtype_t from = x->shape.dtype;
  if (!hl_dtype_is_integer(from) && from != HL_PRED) return LERR("needs an integer operand");
  if (!hl_dtype_is_integer(rt->dtype)) return LERR("needs an integer result");
  if (hl_dtype_is_signed_int(from)) {
    static const hl_dtype_t kU[][2] = {{HL_S8, HL_U8}, {HL_S16, HL_U16}, {HL_S32, HL_U32},
                                       {HL_S64, HL_U64}};
    hl_dtype_t u = HL_INVALID;
    for (int i = 0; i < 4; i++)
      if (kU[i][0] == from) u = kU[i][1];
    if (u == HL_INVALID) return LERR("of %s is not supported", hl_dtype_name(from));
    hl_shape_t us = x->shape;
    us.dtype = u;
    us.has_layout = false;
    HL_RETURN_IF_ERROR(emit(c, HL_OP_BITCAST_CONVERT, &us, &x, 1, &x));
  }
  return emit(c, HL_OP_CONVERT, rt, &x, 1, out);
}

//===----------------------------------------------------------------------===//
// tensor.extract
//===----------------------------------------------------------------------===//

// tensor.extract %t[%i, ...]: the element at the (index-typed) indices, as a
// rank-0 value: a dynamic_slice of size 1 in every dimension, reshaped
// (indices past the end are undefined in MLIR; dynamic_slice clamps them).
static hl_status_t lower_tensor_extract(lg_t *c, hl_instruction_t **out) {
  if (c->n < 1 || !hl_shape_is_array(&c->in[0]->shape)) return LERR("needs a tensor operand");
  const hl_shape_t *s = &c->in[0]->shape;
  if (c->n != 1 + s->rank) return LERR("needs %d indices for a rank-%d tensor", s->rank, s->rank);
  for (int i = 1; i < c->n; i++)
    if (c->in[i]->shape.rank != 0 || !hl_dtype_is_integer(c->in[i]->shape.dtype))
      return LERR("needs scalar integer (index) indices");
  hl_shape_t scalar = hl_shape_scalar(s->dtype);
  if (s->rank == 0) return emit(c, HL_OP_RESHAPE, &scalar, c->in, 1, out);
  int64_t ones[HL_MAX_RANK];
  for (int d = 0; d < s->rank; d++) ones[d] = 1;
  hl_shape_t one = hl_shape_array(s->dtype, s->rank, ones);
  hl_instruction_t *slice;
  HL_RETURN_IF_ERROR(emit(c, HL_OP_DYNAMIC_SLICE, &one, c->in, c->n, &slice));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&slice->attrs.dynamic_slice_sizes, ones, s->rank));
  return emit(c, HL_OP_RESHAPE, &scalar, &slice, 1, out);
}

//===----------------------------------------------------------------------===//
// mhlo.topk
//===----------------------------------------------------------------------===//

static hl_status_t lower_mhlo_topk(lg_t *c, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(need_operands(c, 1));
  const hl_mlir_attr_t *attrs = hl_mlir_op_attr(c->op, "mhlo.attributes");
  const hl_mlir_attr_t *ka = attrs ? hl_mlir_attr_member(attrs, "k") : NULL;
  const hl_mlir_attr_t *la = attrs ? hl_mlir_attr_member(attrs, "largest") : NULL;
  if (!ka || ka->kind != HL_MATTR_INT || ka->i < 0)
    return LERR("(mhlo.topk) needs mhlo.attributes = {k = <non-negative integer>, ...}");
  if (la && la->kind != HL_MATTR_BOOL) return LERR("(mhlo.topk) needs largest = true / false");
  const hl_shape_t *x = &c->in[0]->shape;
  if (x->rank < 1 || ka->i > x->dims[x->rank - 1])
    return LERR("(mhlo.topk) needs k <= the operand's last dimension");
  if (c->op->result_count != 2 || c->op->result_type_count != 2)
    return LERR("(mhlo.topk) needs two results (values, i32 indices)");
  hl_shape_t el[2] = {*x, *x};
  el[0].has_layout = el[1].has_layout = false;
  el[0].dims[x->rank - 1] = el[1].dims[x->rank - 1] = ka->i;
  el[1].dtype = HL_S32;
  for (int i = 0; i < 2; i++) {
    const hl_shape_t *r = &c->op->result_types[i];
    if (!hl_shape_same_dims(r, &el[i]) || r->dtype != el[i].dtype)
      return LERR("(mhlo.topk) result %d has type %s, expected %s", i, hl_shape_debug_string(r),
                  hl_shape_debug_string(&el[i]));
  }
  hl_shape_t t;
  HL_RETURN_IF_ERROR(hl_shape_tuple(el, 2, &t));
  hl_status_t st = emit(c, HL_OP_TOPK, &t, c->in, 1, out);
  hl_shape_deinit(&t);
  if (st) return st;
  (*out)->attrs.k = ka->i;
  (*out)->attrs.largest = la ? la->b : true;
  return NULL;
}

static const char *custom_call_target(const hl_mlir_op_t *op) {
  const hl_mlir_attr_t *t = hl_mlir_op_attr(op, "call_target_name");
  if (t && t->kind == HL_MATTR_STRING) return t->s;
  for (int i = 0; i < op->item_count; i++)
    if (op->items[i].kind == HL_MATTR_SYMBOL) return op->items[i].s;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Entry
//===----------------------------------------------------------------------===//

hl_status_t hl_lower_legacy(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                            hl_instruction_t *const *operands, bool *out_handled) {
  *out_handled = false;
  const char *name = op->name;
  lg_t ctx = {L, env, op, operands, op->operand_count};
  lg_t *c = &ctx;
  hl_instruction_t *out = NULL;
  hl_status_t st;
  if (strncmp(name, "arith.", 6) == 0) {
    st = strcmp(name + 6, "extui") == 0 ? lower_extui(c, &out) : lower_arith(c, name + 6, &out);
  } else if (strcmp(name, "tensor.extract") == 0) {
    st = lower_tensor_extract(c, &out);
  } else if (strcmp(name, "sdy.constant") == 0) {
    st = lower_constant(c, &out);
  } else if (strcmp(name, "stablehlo.broadcast") == 0) {
    st = lower_broadcast(c, &out);
  } else if (strcmp(name, "stablehlo.dot") == 0) {
    st = lower_dot(c, &out);
  } else if (strcmp(name, "stablehlo.cross-replica-sum") == 0) {
    st = lower_cross_replica_sum(c, &out);
  } else if (strcmp(name, "stablehlo.einsum") == 0 || strcmp(name, "stablehlo.unary_einsum") == 0) {
    st = lower_einsum(c, name[10] == 'u', &out);
  } else if (strcmp(name, "stablehlo.torch_index_select") == 0) {
    st = lower_torch_index_select(c, &out);
  } else if (strcmp(name, "stablehlo.custom_call") == 0 && custom_call_target(op) &&
             strcmp(custom_call_target(op), "mhlo.topk") == 0) {
    st = lower_mhlo_topk(c, &out);
    *out_handled = true;
    hl_instruction_t *res[2];
    for (int i = 0; !st && i < 2; i++) st = hl_lower_add_gte(L, env->computation, op, out, i, &res[i]);
    return st ? st : hl_lower_bind_results(L, env, op, res, 2);
  } else {
    return NULL;
  }
  *out_handled = true;
  if (st) return st;
  if (op->result_count != 1) return LERR("has %d results, expected 1", op->result_count);
  return hl_lower_bind_results(L, env, op, &out, 1);
}
