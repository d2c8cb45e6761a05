// sort (variadic, any comparator, along one dimension) and topk.
//
// Both sort an index permutation of each 1-d slice with a stable bottom-up
// merge sort, then move elements (by element size, so every dtype works).
// Stable always, so is_stable=false is honoured too. The comparator runs
// through the executor; a comparator that is a single compare of operand 0's
// two parameters (the common `compare(p0, p1), direction=LT/GT`) is
// evaluated directly on preloaded keys.
// Fast-path sorts split their slices over the thread pool; each slice is
// sorted by the same code on any thread, so the bits do not depend on it.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_scratch.h"
#include "runtime/kernels/scalar_call.h"
#include "runtime/kernels/strided_copy.h"
#include "runtime/kernels/total_order.h"
#include "runtime/threads/thread_pool.h"

typedef enum { kKeyCall, kKeyDouble, kKeySigned, kKeyUnsigned } key_kind_t;

typedef struct sort_ctx {
  key_kind_t kind;
  bool descending;           // fast path: GT instead of LT
  union key { double f; int64_t s; uint64_t u; } *keys;  // fast path, per slice position
  // General path: the operands' slice origins and stride.
  int n;
  hl_literal_t *const *ops;
  int64_t base, stride;
  hl_scalar_call_t call;
} sort_ctx_t;

// Chooses the fast path for comparator `c` over operand type t, if any.
static key_kind_t classify_comparator(const hl_computation_t *c, hl_dtype_t t, int n,
                                      bool *descending, bool *total_order) {
  *descending = false;
  *total_order = false;
  if (!c || !c->root || c->root->opcode != HL_OP_COMPARE || c->root->operand_count != 2)
    return kKeyCall;
  if (!hl_elem_is_real_or_int(t) || t == HL_PRED) return kKeyCall;
  const hl_instruction_t *a = c->root->operands[0], *b = c->root->operands[1];
  if (a->opcode != HL_OP_PARAMETER || b->opcode != HL_OP_PARAMETER) return kKeyCall;
  int64_t pa = a->attrs.parameter_number, pb = b->attrs.parameter_number;
  hl_comparison_direction_t dir = c->root->attrs.comparison_direction;
  if (dir != HL_CMP_LT && dir != HL_CMP_GT) return kKeyCall;
  bool gt = dir == HL_CMP_GT;
  if (pa == 1 && pb == 0) gt = !gt;
  else if (!(pa == 0 && pb == 1)) return kKeyCall;
  (void)n;
  hl_comparison_type_t ct = c->root->attrs.comparison_type;
  if (ct == HL_CMPTYPE_DEFAULT) ct = hl_comparison_type_default(t);
  *descending = gt;
  if (hl_dtype_is_float(t)) {
    if (ct == HL_CMPTYPE_TOTALORDER) {
      *total_order = true;
      return kKeySigned;
    }
    return ct == HL_CMPTYPE_FLOAT ? kKeyDouble : kKeyCall;
  }
  if (ct == HL_CMPTYPE_SIGNED && hl_dtype_is_signed_int(t)) return kKeySigned;
  if (ct == HL_CMPTYPE_UNSIGNED && hl_dtype_is_unsigned_int(t)) return kKeyUnsigned;
  return kKeyCall;
}

// less(x, y): element at slice position x sorts before the one at y.
static hl_status_t sort_less(sort_ctx_t *s, int64_t x, int64_t y, bool *out) {
  switch (s->kind) {
    case kKeyDouble:
      *out = s->descending ? s->keys[x].f > s->keys[y].f : s->keys[x].f < s->keys[y].f;
      return NULL;
    case kKeySigned:
      *out = s->descending ? s->keys[x].s > s->keys[y].s : s->keys[x].s < s->keys[y].s;
      return NULL;
    case kKeyUnsigned:
      *out = s->descending ? s->keys[x].u > s->keys[y].u : s->keys[x].u < s->keys[y].u;
      return NULL;
    case kKeyCall: break;
  }
  for (int i = 0; i < s->n; i++) {
    const hl_literal_t *op = s->ops[i];
    size_t es = hl_dtype_size(op->shape.dtype);
    const char *p = (const char *)op->data;
    HL_RETURN_IF_ERROR(hl_scalar_call_set(&s->call, 2 * i, p + (s->base + x * s->stride) * (int64_t)es));
    HL_RETURN_IF_ERROR(
        hl_scalar_call_set(&s->call, 2 * i + 1, p + (s->base + y * s->stride) * (int64_t)es));
  }
  return hl_scalar_call_pred(&s->call, out);
}

// Stable bottom-up merge sort of perm[0..len) (tmp: scratch of len).
static hl_status_t merge_sort(sort_ctx_t *s, int64_t *perm, int64_t *tmp, int64_t len) {
  for (int64_t i = 0; i < len; i++) perm[i] = i;
  int64_t *a = perm, *b = tmp;
  for (int64_t width = 1; width < len; width *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * width) {
      int64_t mid = lo + width < len ? lo + width : len;
      int64_t hi = lo + 2 * width < len ? lo + 2 * width : len;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        bool take_right = false;
        HL_RETURN_IF_ERROR(sort_less(s, a[j], a[i], &take_right));
        b[k++] = take_right ? a[j++] : a[i++];
      }
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    int64_t *t = a;
    a = b;
    b = t;
  }
  if (a != perm) memcpy(perm, a, (size_t)len * sizeof(int64_t));
  return NULL;
}

// Loads the fast-path keys of operand `op` along a slice.
static void load_keys(sort_ctx_t *s, const hl_literal_t *op, bool total_order, int64_t len) {
  hl_dtype_t t = op->shape.dtype;
  for (int64_t x = 0; x < len; x++) {
    int64_t at = s->base + x * s->stride;
    if (total_order) {
      hl_total_order_keys(t, op->data, at, 1, &s->keys[x].s);
    } else if (s->kind == kKeyDouble) {
      hl_elem_load_f64(t, op->data, at, 1, &s->keys[x].f);
    } else {
      int64_t v;
      hl_elem_load_int(t, op->data, at, 1, &v);
      s->keys[x].s = v;  // unsigned types are zero-extended; u64 keeps its bits
    }
  }
}

// Sorts slice number `slice` (of outer * inner) and moves the n operands'
// elements into `results`; perm: scratch of 2 * len.
static hl_status_t sort_one_slice(sort_ctx_t *s, int64_t slice, int64_t len, int64_t inner,
                                  int64_t *perm, hl_literal_t *const *results,
                                  bool total_order) {
  s->base = slice / inner * len * inner + slice % inner;
  if (s->kind != kKeyCall) load_keys(s, s->ops[0], total_order, len);
  HL_RETURN_IF_ERROR(merge_sort(s, perm, perm + len, len));
  for (int j = 0; j < s->n; j++) {
    size_t es = hl_dtype_size(s->ops[j]->shape.dtype);
    const char *src = (const char *)s->ops[j]->data;
    char *dst = (char *)results[j]->data;
    for (int64_t x = 0; x < len; x++)
      memcpy(dst + (s->base + x * inner) * (int64_t)es,
             src + (s->base + perm[x] * inner) * (int64_t)es, es);
  }
  return NULL;
}

// Threads take chunks of slices; each worker has its own keys and scratch.
// Only the fast paths split (they cannot fail and call nothing): a
// comparator computation runs through the one executor context, serially.
typedef struct sort_split {
  const sort_ctx_t *proto;
  hl_literal_t *const *results;
  bool total_order;
  int64_t len, inner, slices, chunk;
  int64_t *perm;     // 2 * len per worker
  union key *keys;   // len per worker
} sort_split_t;

static void sort_slices_task(void *arg, int64_t task, int worker) {
  const sort_split_t *p = arg;
  sort_ctx_t s = *p->proto;
  s.keys = p->keys + (size_t)worker * (size_t)p->len;
  int64_t *perm = p->perm + (size_t)worker * 2 * (size_t)p->len;
  int64_t end = (task + 1) * p->chunk < p->slices ? (task + 1) * p->chunk : p->slices;
  for (int64_t i = task * p->chunk; i < end; i++)
    (void)sort_one_slice(&s, i, p->len, p->inner, perm, p->results, p->total_order);
}

// Threads sorting slices at once (each with its own keys and permutation).
static int sort_threads(key_kind_t kind, int64_t slices, int64_t len, int threads) {
  if (kind == kKeyCall || slices < 2 || slices * len < (INT64_C(1) << 14)) threads = 1;
  if (threads > slices) threads = (int)slices;
  return threads;
}

// Sorts every 1-d slice along `dim` of the n arrays `ops` (same dimensions)
// into `results`, using `less` (set up in s). Slices of length len; each
// slice is sorted by the same code whichever thread takes it, so the result
// does not depend on the thread count.
static hl_status_t sort_slices(sort_ctx_t *s, hl_literal_t *const *ops, int n, int dim,
                               hl_literal_t *const *results, bool total_order,
                               hl_thread_pool_t *pool) {
  const hl_shape_t *sh = &ops[0]->shape;
  int64_t len = sh->dims[dim], inner = 1, outer = 1;
  for (int d = 0; d < dim; d++) outer *= sh->dims[d];
  for (int d = dim + 1; d < sh->rank; d++) inner *= sh->dims[d];
  if (len == 0 || inner == 0 || outer == 0) return NULL;
  int64_t slices = outer * inner;
  int threads = sort_threads(s->kind, slices, len, hl_thread_pool_size(pool));
  int64_t *perm = hl_malloc((size_t)len * sizeof(int64_t) * 2 * (size_t)threads);
  if (!perm) return HL_OOM();
  s->keys = s->kind != kKeyCall ? hl_malloc((size_t)len * sizeof(*s->keys) * (size_t)threads)
                                : NULL;
  if (s->kind != kKeyCall && !s->keys) {
    hl_free(perm);
    return HL_OOM();
  }
  s->stride = inner;
  s->ops = ops;
  s->n = n;
  hl_status_t st = NULL;
  if (threads > 1) {
    sort_split_t p = {s, results, total_order, len, inner, slices, 0, perm, s->keys};
    p.chunk = (slices + 4 * threads - 1) / (4 * threads);
    hl_thread_pool_run(pool, (slices + p.chunk - 1) / p.chunk, sort_slices_task, &p);
  } else {
    for (int64_t i = 0; i < slices && !st; i++)
      st = sort_one_slice(s, i, len, inner, perm, results, total_order);
  }
  hl_free(perm);
  hl_free(s->keys);
  s->keys = NULL;
  return st;
}

hl_status_t hl_kernel_sort(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  int n = inst->operand_count;
  if (n < 1) return HL_INVALID("sort needs at least one operand");
  if (2 * n > HL_SCALAR_CALL_MAX_ARGS) return HL_UNIMPL("sort of %d operands", n);
  const hl_shape_t *s0 = &operands[0]->shape, *rs = &inst->shape;
  if (inst->attrs.dimensions.n != 1)
    return HL_INVALID("needs one sort dimension, has %d", inst->attrs.dimensions.n);
  int64_t dim = inst->attrs.dimensions.v[0];
  if (!hl_shape_is_array(s0) || dim < 0 || dim >= s0->rank)
    return HL_INVALID("dimension %lld out of range for operand %s", (long long)dim,
                      hl_shape_debug_string(s0));
  if (n == 1 ? !hl_shape_equal(rs, s0) : (rs->dtype != HL_TUPLE || rs->tuple_count != n))
    return HL_INVALID("result %s does not match the operands", hl_shape_debug_string(rs));
  hl_dtype_t types[HL_SCALAR_CALL_MAX_ARGS];
  for (int j = 0; j < n; j++) {
    const hl_shape_t *x = &operands[j]->shape;
    if (!hl_shape_is_array(x) || !hl_shape_same_dims(x, s0) ||
        (n > 1 && !hl_shape_equal(&rs->tuple[j], x)))
      return HL_INVALID("operand %d is %s; operands must share operand 0's dimensions %s", j,
                        hl_shape_debug_string(x), hl_shape_debug_string(s0));
    types[2 * j] = types[2 * j + 1] = x->dtype;
  }
  const hl_computation_t *comp = hl_instruction_to_apply(inst);
  sort_ctx_t s;
  memset(&s, 0, sizeof(s));
  bool total_order = false;
  s.kind = classify_comparator(comp, s0->dtype, n, &s.descending, &total_order);
  if (s.kind == kKeyCall)
    HL_RETURN_IF_ERROR(hl_scalar_call_init(&s.call, ctx, comp, types, 2 * n, "comparator"));
  hl_literal_t *results[HL_SCALAR_CALL_MAX_ARGS] = {NULL};
  hl_status_t st = NULL;
  for (int j = 0; j < n && !st; j++)
    st = hl_literal_create_uninitialized(&operands[j]->shape, &results[j]);
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  if (!st)
    st = sort_slices(&s, operands, n, (int)dim, results, total_order, o ? o->pool : NULL);
  if (s.kind == kKeyCall) hl_scalar_call_deinit(&s.call);
  if (!st) {
    if (n == 1) {
      *out = results[0];
      return NULL;
    }
    st = hl_literal_create_tuple(results, n, out);
  }
  for (int j = 0; j < n; j++) hl_literal_release(results[j]);
  return st;
}

// topk: the k largest (or smallest) elements of each last-dimension row, in
// order, with their s32 indices. Floats compare in XLA's total order
// (total_order.h: NaN above +inf, -NaN below -inf; the fnuz NaN lowest of
// all), as XLA's TopK comparator does; equal values keep the lower index
// first (XLA's sort is stable).
hl_status_t hl_kernel_topk(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (!hl_shape_is_array(os) || os->rank < 1)
    return HL_INVALID("operand %s must be an array of rank >= 1", hl_shape_debug_string(os));
  // XLA lowers TopK to a stable sort with CreateScalarGtComputation
  // (xla/hlo/builder/lib/sorting.cc), a GT compare; XLA defines GT only on
  // real types (complex compares support EQ/NE alone), so complex operands
  // are an error there too rather than a missing feature here.
  if (hl_dtype_is_complex(os->dtype))
    return HL_INVALID("%s: topk is not defined on complex element type %s: it ranks with a "
                      "greater-than compare, which complex numbers do not have",
                      hl_instruction_location(inst), hl_dtype_name(os->dtype));
  if (!hl_elem_is_real_or_int(os->dtype))
    return HL_UNIMPL("%s: topk of element type %s", hl_instruction_location(inst),
                     hl_dtype_name(os->dtype));
  int64_t k = inst->attrs.k, len = os->dims[os->rank - 1];
  if (k < 0 || k > len)
    return HL_INVALID("k = %lld out of range for a last dimension of %lld", (long long)k,
                      (long long)len);
  hl_shape_t vs = *os;
  vs.has_layout = false;
  vs.tuple_count = 0;
  vs.tuple = NULL;
  vs.dims[vs.rank - 1] = k;
  hl_shape_t is = vs;
  is.dtype = HL_S32;
  if (rs->dtype != HL_TUPLE || rs->tuple_count != 2 || !hl_shape_equal(&rs->tuple[0], &vs) ||
      !hl_shape_equal(&rs->tuple[1], &is))
    return HL_INVALID("result %s must be (%s, s32 indices) with k = %lld",
                      hl_shape_debug_string(rs), hl_dtype_name(os->dtype), (long long)k);
  hl_literal_t *vals = NULL, *idx = NULL;
  hl_status_t st = hl_literal_create_uninitialized(&rs->tuple[0], &vals);
  if (!st) st = hl_literal_create_uninitialized(&rs->tuple[1], &idx);
  int64_t rows = len ? hl_shape_element_count(os) / len : 0;
  sort_ctx_t s;
  memset(&s, 0, sizeof(s));
  s.descending = inst->attrs.largest;
  bool total_order = hl_dtype_is_float(os->dtype);
  s.kind = total_order || hl_dtype_is_signed_int(os->dtype) ? kKeySigned : kKeyUnsigned;
  int64_t *perm = NULL;
  if (!st && rows > 0 && k > 0) {
    perm = hl_malloc((size_t)len * sizeof(int64_t) * 2);
    s.keys = hl_malloc((size_t)len * sizeof(*s.keys));
    if (!perm || !s.keys) st = HL_OOM();
  }
  size_t es = hl_dtype_size(os->dtype);
  s.stride = 1;
  for (int64_t r = 0; !st && k > 0 && r < rows; r++) {
    s.base = r * len;
    load_keys(&s, op, total_order, len);
    st = merge_sort(&s, perm, perm + len, len);
    for (int64_t x = 0; x < k && !st; x++) {
      memcpy((char *)vals->data + (r * k + x) * (int64_t)es,
             (const char *)op->data + (r * len + perm[x]) * (int64_t)es, es);
      ((int32_t *)idx->data)[r * k + x] = (int32_t)perm[x];
    }
  }
  hl_free(perm);
  hl_free(s.keys);
  if (!st) {
    hl_literal_t *elems[2] = {vals, idx};
    st = hl_literal_create_tuple(elems, 2, out);
  }
  hl_literal_release(vals);
  hl_literal_release(idx);
  return st;
}

// The buffers hl_kernel_sort allocates besides its results (kernel_scratch.h).
void hl_sort_scratch(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out) {
  out->count = 0;
  int n = inst->operand_count;
  const hl_computation_t *comp = hl_instruction_to_apply(inst);
  if (n < 1 || 2 * n > HL_SCALAR_CALL_MAX_ARGS || !comp || inst->attrs.dimensions.n != 1) return;
  const hl_shape_t *s0 = &inst->operands[0]->shape;
  int64_t dim = inst->attrs.dimensions.v[0];
  if (!hl_shape_is_array(s0) || dim < 0 || dim >= s0->rank) return;
  int64_t len = s0->dims[dim], elems = hl_shape_element_count(s0);
  if (len == 0 || elems == 0) return;
  bool descending = false, total_order = false;
  key_kind_t kind = classify_comparator(comp, s0->dtype, n, &descending, &total_order);
  int t = sort_threads(kind, elems / len, len, threads);
  hl_kernel_scratch_add(out, len * (int64_t)sizeof(int64_t) * 2 * t);
  if (kind != kKeyCall) hl_kernel_scratch_add(out, len * (int64_t)sizeof(union key) * t);
}
