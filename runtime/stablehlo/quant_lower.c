// Quantized tensors (StableHLO spec, "Quantization computations"), lowered
// into ordinary IR instructions at lowering time, so the one executor runs
// them: a quantized value is its storage-type tensor, and
//   dequantize(x) = convert(convert(x, f64) - zero_points, E) * scales
//   quantize(y)   = convert(clamp(min, convert(round_nearest_even(y / scales), f64)
//                                        + zero_points, max), storage)
// with E the expressed type and scales / zero points broadcast along the
// quantization dimension (per-axis) or everywhere (per-tensor). The integer
// steps run in f64, which holds every value of a <= 32-bit storage type
// exactly, so they are the spec's formulas without the storage type's
// wrap-around (the spec writes them in the storage type). uniform_quantize /
// uniform_dequantize are these; the spec's dequantize_op_quantize ops
// (element-wise math, compare, select, clamp, dot_general, convolution, ...)
// run as dequantize -> the op in E -> quantize (hybrid float x quantized
// forms: dequantize only); ops that only move elements run on the storage
// values. Anything else on quantized tensors is an error naming the op.
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/lower_internal.h"

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

int hl_quant_of(const hl_lower_t *L, const hl_instruction_t *inst) {
  return inst && inst->id >= 0 && inst->id < L->quant_by_id_size ? L->quant_by_id[inst->id] : 0;
}

hl_status_t hl_quant_note(hl_lower_t *L, const hl_instruction_t *inst, int id) {
  if (!id || !inst || inst->id < 0) return NULL;
  if (inst->id >= L->quant_by_id_size) {
    int64_t size = L->quant_by_id_size ? L->quant_by_id_size : 64;
    while (size <= inst->id) size *= 2;
    int *n = hl_realloc(L->quant_by_id, (size_t)size * sizeof(int));
    if (!n) return HL_OOM();
    memset(n + L->quant_by_id_size, 0, (size_t)(size - L->quant_by_id_size) * sizeof(int));
    L->quant_by_id = n;
    L->quant_by_id_size = size;
  }
  L->quant_by_id[inst->id] = id;
  return NULL;
}

static const hl_mlir_quant_type_t *quant_type(const hl_lower_t *L, int id) {
  return id > 0 && id <= L->file->quant_type_count ? &L->file->quant_types[id - 1] : NULL;
}

// The quantization of result k as the op's written types give it (the same
// mapping as lower_ops.c's result_type).
static int result_quant(const hl_mlir_op_t *op, int k) {
  if (op->has_function_type) return hl_mlir_quant_id(&op->result_type_quant, k);
  int n = op->operand_type_count;
  if (n == 0) {  // pretty constant: `dense<...> : type`
    const hl_mlir_attr_t *v = hl_mlir_op_attr(op, "value");
    if (!v && op->item_count > 0) v = &op->items[0];
    return v && v->has_type ? v->type_quant : 0;
  }
  if (n == 1) return hl_mlir_quant_id(&op->operand_type_quant, 0);
  if (k < n && n == op->result_count) return hl_mlir_quant_id(&op->operand_type_quant, k);
  if (op->result_count == 1 && n > 1 && k == 0)
    return hl_mlir_quant_id(&op->operand_type_quant, n - 1);
  return 0;
}

// The quantization of operand k: its written type where the signature gives
// one per operand (or one for all), else the value's own.
static int operand_quant(const hl_lower_t *L, const hl_mlir_op_t *op,
                         hl_instruction_t *const *operands, int k) {
  int n = op->operand_type_count;
  if (op->has_function_type || n == op->operand_count)
    return hl_mlir_quant_id(&op->operand_type_quant, k);
  if (n == 1 && op->result_count <= 1) return hl_mlir_quant_id(&op->operand_type_quant, 0);
  return hl_quant_of(L, operands[k]);
}

hl_status_t hl_quant_note_results(hl_lower_t *L, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *values, int count) {
  for (int k = 0; k < count; k++) HL_RETURN_IF_ERROR(hl_quant_note(L, values[k], result_quant(op, k)));
  return NULL;
}

static bool quant_equal(const hl_mlir_quant_type_t *a, const hl_mlir_quant_type_t *b) {
  if (a->storage != b->storage || a->expressed != b->expressed || a->axis != b->axis ||
      a->storage_min != b->storage_min || a->storage_max != b->storage_max || a->count != b->count)
    return false;
  for (int i = 0; i < a->count; i++)
    if (a->scales[i] != b->scales[i] || a->zero_points[i] != b->zero_points[i]) return false;
  return true;
}

//===----------------------------------------------------------------------===//
// quantize / dequantize as instructions
//===----------------------------------------------------------------------===//

typedef struct qctx {
  hl_lower_t *L;
  hl_lower_env_t *env;
  const hl_mlir_op_t *op;
} qctx_t;

static hl_status_t add(qctx_t *x, hl_opcode_t opcode, const hl_shape_t *shape,
                       hl_instruction_t *const *ops, int n, hl_instruction_t **out) {
  return hl_lower_add(x->L, x->env->computation, x->op, opcode, shape, ops, n, out);
}

static hl_shape_t with_dtype(const hl_shape_t *s, hl_dtype_t t) {
  return hl_shape_array(t, s->rank, s->dims);
}

static hl_status_t unary(qctx_t *x, hl_opcode_t opcode, hl_instruction_t *in, hl_dtype_t t,
                         hl_instruction_t **out) {
  hl_shape_t s = with_dtype(&in->shape, t);
  return add(x, opcode, &s, &in, 1, out);
}

static hl_status_t binary(qctx_t *x, hl_opcode_t opcode, hl_instruction_t *a, hl_instruction_t *b,
                          hl_instruction_t **out) {
  hl_instruction_t *ops[2] = {a, b};
  return add(x, opcode, &a->shape, ops, 2, out);
}

// One value per quantization parameter (`vals[count]`, or `vals[0]` when
// per-tensor), as a tensor of dtype t shaped like `like`: a constant
// broadcast along the quantization dimension (or everywhere).
static hl_status_t params(qctx_t *x, const hl_mlir_quant_type_t *q, const double *vals,
                          hl_dtype_t t, const hl_shape_t *like, hl_instruction_t **out) {
  bool per_axis = q->axis >= 0;
  if (per_axis && (q->axis >= like->rank || like->dims[q->axis] != q->count))
    return hl_lower_op_error(x->L, x->op,
                             "has a per-axis quantized type (dimension %d, %d scales) that does "
                             "not fit the shape %s", q->axis, q->count,
                             hl_shape_debug_string(like));
  int64_t n = per_axis ? q->count : 1;
  hl_shape_t cs = per_axis ? hl_shape_array(t, 1, &n) : hl_shape_scalar(t);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(&cs, &lit));
  for (int64_t i = 0; i < n; i++) hl_literal_set_f64(lit, i, vals[i]);
  hl_instruction_t *c;
  hl_status_t st = add(x, HL_OP_CONSTANT, &cs, NULL, 0, &c);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  c->attrs.literal = lit;
  hl_shape_t bs = with_dtype(like, t);
  HL_RETURN_IF_ERROR(add(x, HL_OP_BROADCAST, &bs, &c, 1, out));
  int64_t axis = q->axis;
  return hl_i64_list_set(&(*out)->attrs.dimensions, &axis, per_axis ? 1 : 0);
}

static hl_status_t zero_points(qctx_t *x, const hl_mlir_quant_type_t *q, const hl_shape_t *like,
                               hl_instruction_t **out) {
  double *z = hl_calloc((size_t)q->count, sizeof(double));
  if (!z) return HL_OOM();
  for (int i = 0; i < q->count; i++) z[i] = (double)q->zero_points[i];
  hl_status_t st = params(x, q, z, HL_F64, like, out);
  hl_free(z);
  return st;
}

static hl_status_t storage_bound(qctx_t *x, const hl_mlir_quant_type_t *q, int64_t v,
                                 const hl_shape_t *like, hl_instruction_t **out) {
  hl_mlir_quant_type_t per_tensor = *q;
  per_tensor.axis = -1;
  double d = (double)v;
  return params(x, &per_tensor, &d, HL_F64, like, out);
}

static hl_status_t dequantize(qctx_t *x, hl_instruction_t *in, const hl_mlir_quant_type_t *q,
                              hl_instruction_t **out) {
  if (in->shape.dtype != q->storage)
    return hl_lower_op_error(x->L, x->op, "has a quantized operand of type %s, not its storage type",
                             hl_shape_debug_string(&in->shape));
  hl_instruction_t *wide, *zp, *sub, *e, *sc;
  HL_RETURN_IF_ERROR(unary(x, HL_OP_CONVERT, in, HL_F64, &wide));
  HL_RETURN_IF_ERROR(zero_points(x, q, &wide->shape, &zp));
  HL_RETURN_IF_ERROR(binary(x, HL_OP_SUBTRACT, wide, zp, &sub));
  HL_RETURN_IF_ERROR(unary(x, HL_OP_CONVERT, sub, q->expressed, &e));
  HL_RETURN_IF_ERROR(params(x, q, q->scales, q->expressed, &e->shape, &sc));
  return binary(x, HL_OP_MULTIPLY, e, sc, out);
}

static hl_status_t quantize(qctx_t *x, hl_instruction_t *in, const hl_mlir_quant_type_t *q,
                            hl_instruction_t **out) {
  if (in->shape.dtype != q->expressed)
    return hl_lower_op_error(x->L, x->op,
                             "quantizes a %s value into a type whose expressed type is %s",
                             hl_dtype_name(in->shape.dtype), hl_dtype_name(q->expressed));
  hl_instruction_t *sc, *div, *rounded, *wide, *zp, *sum, *lo, *hi, *clamped;
  HL_RETURN_IF_ERROR(params(x, q, q->scales, q->expressed, &in->shape, &sc));
  HL_RETURN_IF_ERROR(binary(x, HL_OP_DIVIDE, in, sc, &div));
  HL_RETURN_IF_ERROR(unary(x, HL_OP_ROUND_NEAREST_EVEN, div, q->expressed, &rounded));
  HL_RETURN_IF_ERROR(unary(x, HL_OP_CONVERT, rounded, HL_F64, &wide));
  HL_RETURN_IF_ERROR(zero_points(x, q, &wide->shape, &zp));
  HL_RETURN_IF_ERROR(binary(x, HL_OP_ADD, wide, zp, &sum));
  HL_RETURN_IF_ERROR(storage_bound(x, q, q->storage_min, &sum->shape, &lo));
  HL_RETURN_IF_ERROR(storage_bound(x, q, q->storage_max, &sum->shape, &hi));
  hl_instruction_t *ops[3] = {lo, sum, hi};
  HL_RETURN_IF_ERROR(add(x, HL_OP_CLAMP, &sum->shape, ops, 3, &clamped));
  return unary(x, HL_OP_CONVERT, clamped, q->storage, out);
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

// The spec's dequantize_op_quantize / dequantize_compare /
// dequantize_select_quantize / hybrid_dequantize_then_op ops.
static const char *const kComputeOps[] = {
    "abs", "add", "atan2", "cbrt", "ceil", "cholesky", "clamp", "compare", "convolution",
    "cosine", "divide", "dot_general", "exponential", "exponential_minus_one", "floor", "log",
    "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate", "power",
    "reduce_precision", "remainder", "round_nearest_afz", "round_nearest_even", "rsqrt",
    "select", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "triangular_solve",
    "is_finite",  // always true on dequantized values, as the spec says
    "iota",       // quantize(index)
};

// Ops that only move, copy or reinterpret elements: they run on the storage
// values (the spec requires their operand and result element types to match).
static const char *const kStorageOps[] = {
    "reshape", "transpose", "broadcast_in_dim", "slice", "dynamic_slice",
    "dynamic_update_slice", "concatenate", "reverse", "gather", "optimization_barrier",
    "all_gather", "all_to_all", "collective_permute", "collective_broadcast", "pad",
};

// Ops applying a region to quantized elements: they run on the storage
// values, and the region's own ops on its quantized block arguments do the
// dequantize -> op -> quantize.
static const char *const kRegionOps[] = {
    "reduce", "reduce_window", "sort", "map", "scatter", "all_reduce", "reduce_scatter",
};

static bool in_list(const char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0) return true;
  return false;
}

static bool is_control_flow(const char *n) {
  return strcmp(n, "func.call") == 0 || strcmp(n, "call") == 0 ||
         strcmp(n, "stablehlo.composite") == 0 || strcmp(n, "stablehlo.while") == 0 ||
         strcmp(n, "stablehlo.if") == 0 || strcmp(n, "stablehlo.case") == 0 ||
         strcmp(n, "interpreter.run_parallel") == 0;
}

// The result whose element type operand k carries (-1: none, e.g. indices):
// reduce / reduce_window (inputs then inits), scatter (inputs, indices,
// updates), one result per operand, or a single result.
static int result_for_operand(const hl_mlir_op_t *op, const char *n, int k) {
  int ops = op->operand_count, res = op->result_count;
  if (res <= 0) return -1;
  if (strcmp(n, "scatter") == 0) return k < res ? k : k == res ? -1 : k - res - 1;
  if (ops == 2 * res) return k % res;
  if (ops == res) return k;
  return res == 1 ? 0 : -1;
}

// The operand whose element type block argument j of a region op has.
static int operand_for_region_arg(const hl_mlir_op_t *op, const char *n, int j) {
  int ops = op->operand_count;
  if (strcmp(n, "sort") == 0) return j / 2;
  if (strcmp(n, "reduce") == 0 || strcmp(n, "reduce_window") == 0) return j % (ops / 2 ? ops / 2 : 1);
  if (strcmp(n, "scatter") == 0) return j % ((ops - 1) / 2 ? (ops - 1) / 2 : 1);
  return j % (ops ? ops : 1);  // map, all_reduce, reduce_scatter
}

static bool same_quant(const hl_lower_t *L, int a, int b) {
  const hl_mlir_quant_type_t *qa = quant_type(L, a), *qb = quant_type(L, b);
  if (!qa || !qb) return !qa && !qb;
  return quant_equal(qa, qb);
}

// Storage and region ops: each quantized operand's quantization is its
// result's (per-tensor; per-axis may move its dimension), and a region's
// block arguments have their operands' quantization.
static hl_status_t check_storage_op(qctx_t *x, const char *n, const int *oq, bool region_op) {
  const hl_mlir_op_t *op = x->op;
  const hl_lower_t *L = x->L;
  bool any_operand = false;
  for (int k = 0; k < op->operand_count; k++) {
    if (!oq[k]) continue;
    any_operand = true;
    int r = result_for_operand(op, n, k);
    const hl_mlir_quant_type_t *q = quant_type(L, oq[k]);
    const hl_mlir_quant_type_t *rq = r >= 0 ? quant_type(L, result_quant(op, r)) : NULL;
    if (!rq || (q->axis < 0 && rq->axis < 0 && !quant_equal(q, rq)))
      return hl_lower_op_error(x->L, op, "changes the quantization of operand %d (only "
                               "uniform_quantize requantizes)", k);
  }
  if (!any_operand && strcmp(n, "constant") != 0)
    return hl_lower_op_error(x->L, op, "has a quantized result but no quantized operand");
  if (region_op && op->region_count == 0)
    return hl_lower_op_error(x->L, op, "on quantized tensors needs its region written out (the "
                             "'applies' form would combine storage integers)");
  for (int r = 0; r < op->region_count; r++) {
    const hl_mlir_block_t *b = &op->regions[r].blocks[0];
    for (int j = 0; op->regions[r].block_count && j < b->arg_count; j++) {
      int k = operand_for_region_arg(op, n, j);
      if (k < 0 || k >= op->operand_count || !same_quant(L, hl_mlir_quant_id(&b->arg_quant, j), oq[k]))
        return hl_lower_op_error(x->L, op, "has region argument %d whose quantization is not "
                                 "its operand's", j);
    }
  }
  return NULL;
}

static void env_free(hl_lower_env_t *e) {
  for (int i = 0; i < e->binding_count; i++) {
    hl_free(e->bindings[i].name);
    hl_free(e->bindings[i].values);
  }
  hl_free(e->bindings);
  hl_free(e->inner);
}

// Types of the op with each quantized type replaced by its expressed type.
static hl_status_t expressed_types(const hl_lower_t *L, const hl_shape_t *in, int n,
                                   const hl_mlir_quant_ids_t *ids, hl_shape_t **out) {
  *out = NULL;
  if (!n) return NULL;
  hl_shape_t *t = hl_calloc((size_t)n, sizeof(hl_shape_t));
  if (!t) return HL_OOM();
  for (int i = 0; i < n; i++) {
    t[i] = in[i];  // shallow: array types parsed from MLIR own nothing
    const hl_mlir_quant_type_t *q = quant_type(L, hl_mlir_quant_id(ids, i));
    if (q) t[i].dtype = q->expressed;
  }
  *out = t;
  return NULL;
}

// dequantize -> the op in the expressed type -> quantize: the op is lowered
// as usual from a copy whose operands are the dequantized values (bound under
// names MLIR cannot spell) and whose types are the expressed types.
static hl_status_t lower_dequantize_op_quantize(qctx_t *x, hl_instruction_t *const *operands,
                                                const int *oq) {
  const hl_mlir_op_t *op = x->op;
  hl_lower_t *L = x->L;
  hl_lower_env_t sub = {.parent = x->env, .computation = x->env->computation};
  hl_mlir_op_t copy = *op;
  hl_mlir_value_ref_t *refs = hl_calloc((size_t)op->operand_count + 1, sizeof(*refs));
  char (*names)[32] = hl_calloc((size_t)op->operand_count + 1, sizeof(*names));
  char result_name[] = "quant.result";
  char *result_names[1] = {result_name};
  int result_counts[1] = {op->result_count};
  hl_instruction_t **finals = hl_calloc((size_t)op->result_count + 1, sizeof(*finals));
  hl_shape_t *ot = NULL, *rt = NULL;
  hl_status_t st = refs && names && finals ? NULL : HL_OOM();
  for (int k = 0; !st && k < op->operand_count; k++) {
    hl_instruction_t *v = operands[k];
    if (oq[k]) st = dequantize(x, v, quant_type(L, oq[k]), &v);
    snprintf(names[k], sizeof(names[k]), "quant.operand.%d", k);
    refs[k] = op->operands[k];
    refs[k].name = names[k];
    refs[k].index = 0;
    if (!st) st = hl_lower_bind(&sub, names[k], &v, 1);
  }
  if (!st) st = expressed_types(L, op->operand_types, op->operand_type_count,
                                &op->operand_type_quant, &ot);
  if (!st) st = expressed_types(L, op->result_types, op->result_type_count,
                                &op->result_type_quant, &rt);
  if (!st) {
    copy.operands = refs;
    copy.operand_types = ot;
    copy.result_types = rt;
    copy.operand_type_quant = (hl_mlir_quant_ids_t){0};
    copy.result_type_quant = (hl_mlir_quant_ids_t){0};
    copy.result_names = op->result_count ? result_names : NULL;
    copy.result_counts = op->result_count ? result_counts : NULL;
    copy.result_group_count = op->result_count ? 1 : 0;
    st = hl_lower_op(L, &sub, &copy);
  }
  hl_lower_binding_t *res = !st && op->result_count ? &sub.bindings[sub.binding_count - 1] : NULL;
  if (res && (strcmp(res->name, result_name) != 0 || res->count != op->result_count))
    st = hl_lower_op_error(L, op, "did not produce its results in the expressed type");
  for (int k = 0; !st && k < op->result_count; k++) {
    hl_instruction_t *v = res->values[k];
    const hl_mlir_quant_type_t *q = quant_type(L, result_quant(op, k));
    if (q) st = quantize(x, v, q, &v);
    finals[k] = v;
  }
  if (!st) st = hl_lower_bind_results(L, x->env, op, finals, op->result_count);
  hl_free(ot);
  hl_free(rt);
  hl_free(refs);
  hl_free(names);
  hl_free(finals);
  env_free(&sub);
  return st;
}

static hl_status_t bind_one(qctx_t *x, hl_instruction_t *v) {
  return hl_lower_bind_results(x->L, x->env, x->op, &v, 1);
}

hl_status_t hl_quant_lower_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                              hl_instruction_t *const *operands, bool *out_handled) {
  *out_handled = false;
  if (L->file->quant_type_count == 0) return NULL;  // a file without quantized types
  qctx_t ctx = {L, env, op}, *x = &ctx;
  int *oq = hl_calloc((size_t)op->operand_count + 1, sizeof(int));
  if (!oq) return HL_OOM();
  bool any = false;
  for (int k = 0; k < op->operand_count; k++) {
    oq[k] = operand_quant(L, op, operands, k);
    any |= oq[k] != 0;
  }
  for (int k = 0; k < op->result_count; k++) any |= result_quant(op, k) != 0;
  for (int r = 0; r < op->region_count; r++)
    for (int b = 0; b < op->regions[r].block_count; b++)
      for (int i = 0; i < op->regions[r].blocks[b].arg_count; i++)
        any |= hl_mlir_quant_id(&op->regions[r].blocks[b].arg_quant, i) != 0;
  const char *n = strncmp(op->name, "stablehlo.", 10) == 0 ? op->name + 10 : NULL;
  hl_status_t st = NULL;
  if (!any || is_control_flow(op->name)) {
    // Lowered as usual; quantized results are recorded from the op's types.
  } else if (n && strcmp(n, "uniform_quantize") == 0) {
    const hl_mlir_quant_type_t *rq = quant_type(L, result_quant(op, 0));
    hl_instruction_t *v = op->operand_count == 1 ? operands[0] : NULL;
    if (!rq || !v) st = hl_lower_op_error(L, op, "needs one operand and a quantized result type");
    if (!st && oq[0]) st = dequantize(x, v, quant_type(L, oq[0]), &v);
    if (!st) st = quantize(x, v, rq, &v);
    if (!st) st = bind_one(x, v);
    *out_handled = true;
  } else if (n && strcmp(n, "uniform_dequantize") == 0) {
    hl_instruction_t *v = op->operand_count == 1 ? operands[0] : NULL;
    if (!v || !oq[0] || result_quant(op, 0))
      st = hl_lower_op_error(L, op, "needs one quantized operand and a float result type");
    if (!st) st = dequantize(x, v, quant_type(L, oq[0]), &v);
    if (!st) st = bind_one(x, v);
    *out_handled = true;
  } else if (n && in_list(kComputeOps, sizeof(kComputeOps) / sizeof(kComputeOps[0]), n)) {
    st = lower_dequantize_op_quantize(x, operands, oq);
    *out_handled = true;
  } else if (n && strcmp(n, "bitcast_convert") == 0) {
    // Reinterprets the storage bits (quantized <-> its storage integer type).
  } else if (n && strcmp(n, "get_dimension_size") == 0) {
    // Reads the shape only.
  } else if (n && (strcmp(n, "constant") == 0 ||
                   in_list(kStorageOps, sizeof(kStorageOps) / sizeof(kStorageOps[0]), n))) {
    st = check_storage_op(x, n, oq, false);
  } else if (n && in_list(kRegionOps, sizeof(kRegionOps) / sizeof(kRegionOps[0]), n)) {
    st = check_storage_op(x, n, oq, true);
  } else {
    st = hl_lower_op_error(L, op, "on quantized tensors is not supported");
  }
  hl_free(oq);
  return st;
}
