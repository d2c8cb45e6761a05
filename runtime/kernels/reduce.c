// reduce (XLA Reduce; StableHLO reduce): N inputs and N scalar inits,
// `dimensions` reduced away, the result holding the kept dimensions in
// order (a tuple of N arrays when N > 1).
//
// General path: the reducer computation runs through the executor on scalar
// literals, (acc_0..acc_N-1, x_0..x_N-1) -> new accs, visiting the reduced
// elements of each result element in ascending row-major order, starting
// from the inits.
//
// With a thread pool (--threads) the fast path splits rows or columns over
// the threads without changing any element's order, and a few long rows
// (a full reduction) at the top levels of their pairwise tree, combined
// along the same tree (docs/NUMERICS.md: thread-count independent bits).
//
// Fast path: one input whose reducer is a single add / multiply / maximum /
// minimum / and / or / xor of its two parameters runs as typed loops. It
// accumulates in the element type, like XLA's CPU backend, but in a pairwise
// order (halves down to 4096-element blocks, each folded by 16 running
// partial results), which the spec allows (the schedule is
// implementation-defined) and which keeps f32 sums accurate; f16/bf16 run
// sequentially, rounding after every step as their reducer would. Float
// maximum/minimum propagate NaN.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/float_minmax.h"
#include "runtime/base/simd_clones.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/reduce_fast.h"
#include "runtime/kernels/reducer_match.h"
#include "runtime/threads/thread_pool.h"

//===----------------------------------------------------------------------===//
// Fast path: typed fold (a contiguous run into one accumulator) and combine
// (a contiguous run into as many accumulators) per (type, op)
//===----------------------------------------------------------------------===//

typedef void (*run_fn)(const void *x, int64_t n, void *acc);
typedef struct reduce_fns {
  run_fn fold, combine;
  // Pairwise types (not f16 / bf16): tree: *out = the pairwise fold of a run
  // (fold without the accumulator); op: *acc = OP(*acc, *v).
  run_fn tree;
  void (*op)(void *acc, const void *v);
} reduce_fns_t;

#define ADD_(a, b) ((a) + (b))
#define MULF_(a, b) ((a) * (b))
#define MULU_(a, b) ((a) * 1u * (b))  // 1u: no signed-int promotion overflow
#define AND_(a, b) ((a) & (b))
#define OR_(a, b) ((a) | (b))
#define XOR_(a, b) ((a) ^ (b))
#define MAXI_(a, b) ((a) > (b) ? (a) : (b))
#define MINI_(a, b) ((a) < (b) ? (a) : (b))
#define MAXF_(a, b) _Generic((a), float: max_bits_f32, default: max_bits_f64)(a, b)
#define MINF_(a, b) _Generic((a), float: min_bits_f32, default: min_bits_f64)(a, b)

// hl_maximum / hl_minimum (float_minmax.h) without branches, so the lanes
// of a fold vectorize, with the same result bits for every input (NaN: the
// first NaN operand, payload kept; +0 above -0). Non-NaN floats compare as
// signed integer keys (a negative value's magnitude bits flipped), which
// order -0 below +0 and keep equal values equal.
#define HL_MINMAX_BITS_(T, F, U, S, SHIFT, INF)                               \
  static inline S key_##T(U u) { return (S)(u ^ ((U)((S)u >> SHIFT) >> 1)); } \
  static inline F max_bits_##T(F a, F b) {                                    \
    U ua, ub;                                                                 \
    memcpy(&ua, &a, sizeof ua);                                               \
    memcpy(&ub, &b, sizeof ub);                                               \
    U na = (ua << 1) > (INF << 1), nb = (ub << 1) > (INF << 1);               \
    U r = key_##T(ua) >= key_##T(ub) ? ua : ub;                               \
    r = nb ? ub : r;                                                          \
    r = na ? ua : r;                                                          \
    F f;                                                                      \
    memcpy(&f, &r, sizeof f);                                                 \
    return f;                                                                 \
  }                                                                           \
  static inline F min_bits_##T(F a, F b) {                                    \
    U ua, ub;                                                                 \
    memcpy(&ua, &a, sizeof ua);                                               \
    memcpy(&ub, &b, sizeof ub);                                               \
    U na = (ua << 1) > (INF << 1), nb = (ub << 1) > (INF << 1);               \
    U r = key_##T(ua) <= key_##T(ub) ? ua : ub;                               \
    r = nb ? ub : r;                                                          \
    r = na ? ua : r;                                                          \
    F f;                                                                      \
    memcpy(&f, &r, sizeof f);                                                 \
    return f;                                                                 \
  }
HL_MINMAX_BITS_(f32, float, uint32_t, int32_t, 31, UINT32_C(0x7f800000))
HL_MINMAX_BITS_(f64, double, uint64_t, int64_t, 63, UINT64_C(0x7ff0000000000000))
#undef HL_MINMAX_BITS_

#define LANES 16

// fold: pairwise halving down to blocks of PAIRWISE_BLOCK elements, each
// folded by LANES running partial results (vectorisable) combined pairwise;
// the rounding error of float sums then grows with log(n), not n.
#define PAIRWISE_BLOCK 4096
#define HL_REDUCE_STAMP_(name, T, OP)                                   \
  HL_SIMD_CLONES static T name##_block(const T *x, int64_t n) {         \
    T r = x[0];                                                         \
    int64_t i = 1;                                                      \
    if (n >= 2 * LANES) {                                               \
      T p[LANES];                                                       \
      for (int j = 0; j < LANES; j++) p[j] = x[j];                      \
      for (i = LANES; i + LANES <= n; i += LANES)                       \
        for (int j = 0; j < LANES; j++) p[j] = OP(p[j], x[i + j]);      \
      for (int w = LANES / 2; w > 0; w /= 2)                            \
        for (int j = 0; j < w; j++) p[j] = OP(p[j], p[j + w]);          \
      r = p[0];                                                         \
    }                                                                   \
    for (; i < n; i++) r = OP(r, x[i]);                                 \
    return r;                                                           \
  }                                                                     \
  static T name##_tree(const T *x, int64_t n) {                         \
    if (n < 2 * LANES) { /* _block's own short path, without the call */ \
      T r = x[0];                                                       \
      for (int64_t i = 1; i < n; i++) r = OP(r, x[i]);                  \
      return r;                                                         \
    }                                                                   \
    if (n <= PAIRWISE_BLOCK) return name##_block(x, n);                 \
    int64_t h = n / 2;                                                  \
    return OP(name##_tree(x, h), name##_tree(x + h, n - h));            \
  }                                                                     \
  static void name##_fold(const void *xv, int64_t n, void *accv) {      \
    if (n > 0) *(T *)accv = OP(*(T *)accv, name##_tree(xv, n));         \
  }                                                                     \
  static void name##_treev(const void *xv, int64_t n, void *outv) {     \
    *(T *)outv = name##_tree(xv, n);                                    \
  }                                                                     \
  static void name##_op(void *accv, const void *v) {                    \
    *(T *)accv = OP(*(T *)accv, *(const T *)v);                         \
  }                                                                     \
  static void name##_combine(const void *xv, int64_t n, void *accv) {   \
    const T *restrict x = xv;                                           \
    T *restrict acc = accv;                                             \
    for (int64_t i = 0; i < n; i++) acc[i] = OP(acc[i], x[i]);          \
  }

HL_REDUCE_STAMP_(f32_add, float, ADD_)
HL_REDUCE_STAMP_(f32_mul, float, MULF_)
HL_REDUCE_STAMP_(f32_max, float, MAXF_)
HL_REDUCE_STAMP_(f32_min, float, MINF_)
HL_REDUCE_STAMP_(f64_add, double, ADD_)
HL_REDUCE_STAMP_(f64_mul, double, MULF_)
HL_REDUCE_STAMP_(f64_max, double, MAXF_)
HL_REDUCE_STAMP_(f64_min, double, MINF_)

// Wrapping integer ops run on the unsigned type of the width (also for
// signed and pred data: the bits are the same).
#define HL_REDUCE_STAMP_UINT_(W)                          \
  HL_REDUCE_STAMP_(u##W##_add, uint##W##_t, ADD_)         \
  HL_REDUCE_STAMP_(u##W##_mul, uint##W##_t, MULU_)        \
  HL_REDUCE_STAMP_(u##W##_and, uint##W##_t, AND_)         \
  HL_REDUCE_STAMP_(u##W##_or, uint##W##_t, OR_)           \
  HL_REDUCE_STAMP_(u##W##_xor, uint##W##_t, XOR_)         \
  HL_REDUCE_STAMP_(u##W##_max, uint##W##_t, MAXI_)        \
  HL_REDUCE_STAMP_(u##W##_min, uint##W##_t, MINI_)        \
  HL_REDUCE_STAMP_(s##W##_max, int##W##_t, MAXI_)         \
  HL_REDUCE_STAMP_(s##W##_min, int##W##_t, MINI_)
HL_REDUCE_STAMP_UINT_(8)
HL_REDUCE_STAMP_UINT_(16)
HL_REDUCE_STAMP_UINT_(32)
HL_REDUCE_STAMP_UINT_(64)
#undef HL_REDUCE_STAMP_UINT_
#undef HL_REDUCE_STAMP_

// f16/bf16: computed in f32, rounded back after every step.
static inline uint16_t f32_to_f16(float f) { return hl_elem_f64_to_f16(f); }
#define HL_REDUCE_STAMP16_(name, TO, FROM, OP)                                    \
  static void name##_fold(const void *xv, int64_t n, void *accv) {                \
    const uint16_t *x = xv;                                                       \
    uint16_t r = *(uint16_t *)accv;                                               \
    for (int64_t i = 0; i < n; i++) r = TO(OP(FROM(r), FROM(x[i])));              \
    *(uint16_t *)accv = r;                                                        \
  }                                                                               \
  static void name##_combine(const void *xv, int64_t n, void *accv) {             \
    const uint16_t *x = xv;                                                       \
    uint16_t *acc = accv;                                                         \
    for (int64_t i = 0; i < n; i++) acc[i] = TO(OP(FROM(acc[i]), FROM(x[i])));    \
  }
HL_REDUCE_STAMP16_(f16_add, f32_to_f16, hl_f16_to_f32, ADD_)
HL_REDUCE_STAMP16_(f16_mul, f32_to_f16, hl_f16_to_f32, MULF_)
HL_REDUCE_STAMP16_(f16_max, f32_to_f16, hl_f16_to_f32, MAXF_)
HL_REDUCE_STAMP16_(f16_min, f32_to_f16, hl_f16_to_f32, MINF_)
HL_REDUCE_STAMP16_(bf16_add, hl_f32_to_bf16, hl_bf16_to_f32, ADD_)
HL_REDUCE_STAMP16_(bf16_mul, hl_f32_to_bf16, hl_bf16_to_f32, MULF_)
HL_REDUCE_STAMP16_(bf16_max, hl_f32_to_bf16, hl_bf16_to_f32, MAXF_)
HL_REDUCE_STAMP16_(bf16_min, hl_f32_to_bf16, hl_bf16_to_f32, MINF_)
#undef HL_REDUCE_STAMP16_

#define FNS_(name) ((reduce_fns_t){name##_fold, name##_combine, name##_treev, name##_op})
#define FNS16_(name) ((reduce_fns_t){name##_fold, name##_combine, NULL, NULL})

// The typed loops for (element type, reducer op); false when there are none.
static bool fast_fns(hl_dtype_t t, hl_opcode_t op, reduce_fns_t *out) {
  // pred: add/maximum are or, multiply/minimum are and.
  if (t == HL_PRED) {
    if (op == HL_OP_ADD || op == HL_OP_MAXIMUM) op = HL_OP_OR;
    if (op == HL_OP_MULTIPLY || op == HL_OP_MINIMUM) op = HL_OP_AND;
  }
#define INT_CASES_(W, SW)                                            \
  switch (op) {                                                      \
    case HL_OP_ADD: *out = FNS_(u##W##_add); return true;            \
    case HL_OP_MULTIPLY: *out = FNS_(u##W##_mul); return true;       \
    case HL_OP_AND: *out = FNS_(u##W##_and); return true;            \
    case HL_OP_OR: *out = FNS_(u##W##_or); return true;              \
    case HL_OP_XOR: *out = FNS_(u##W##_xor); return true;            \
    case HL_OP_MAXIMUM: *out = FNS_(SW##W##_max); return true;       \
    case HL_OP_MINIMUM: *out = FNS_(SW##W##_min); return true;       \
    default: return false;                                           \
  }
#define FLOAT_CASES_(P)                                              \
  switch (op) {                                                      \
    case HL_OP_ADD: *out = FNS_(P##_add); return true;               \
    case HL_OP_MULTIPLY: *out = FNS_(P##_mul); return true;          \
    case HL_OP_MAXIMUM: *out = FNS_(P##_max); return true;           \
    case HL_OP_MINIMUM: *out = FNS_(P##_min); return true;           \
    default: return false;                                           \
  }
#define HALF_CASES_(P)                                               \
  switch (op) {                                                      \
    case HL_OP_ADD: *out = FNS16_(P##_add); return true;             \
    case HL_OP_MULTIPLY: *out = FNS16_(P##_mul); return true;        \
    case HL_OP_MAXIMUM: *out = FNS16_(P##_max); return true;         \
    case HL_OP_MINIMUM: *out = FNS16_(P##_min); return true;         \
    default: return false;                                           \
  }
  switch (t) {
    case HL_PRED: case HL_U8: INT_CASES_(8, u)
    case HL_U16: INT_CASES_(16, u)
    case HL_U32: INT_CASES_(32, u)
    case HL_U64: INT_CASES_(64, u)
    case HL_S8: INT_CASES_(8, s)
    case HL_S16: INT_CASES_(16, s)
    case HL_S32: INT_CASES_(32, s)
    case HL_S64: INT_CASES_(64, s)
    case HL_F16: HALF_CASES_(f16)
    case HL_BF16: HALF_CASES_(bf16)
    case HL_F32: FLOAT_CASES_(f32)
    case HL_F64: FLOAT_CASES_(f64)
    default: return false;
  }
#undef INT_CASES_
#undef FLOAT_CASES_
#undef HALF_CASES_
}
#undef FNS_
#undef FNS16_

bool hl_reduce_fast_fns(hl_dtype_t t, hl_opcode_t op, hl_reduce_run_fn *fold,
                        hl_reduce_run_fn *combine) {
  reduce_fns_t fns;
  if (!fast_fns(t, op, &fns)) return false;
  *fold = fns.fold;
  *combine = fns.combine;
  return true;
}

typedef struct segment {
  int64_t size;
  bool reduced;
  int64_t out_stride;  // kept segments: stride in the result
} segment_t;

// Walks the input in row-major order as runs of its (merged) minor segment:
// a reduced minor segment folds into one result element, a kept one
// combines element-wise into a row of the result.
// Split over threads (bit-identical: every output element is folded in the
// same order by one thread): a reduced minor segment alone gives one output
// per run, so runs are split; a kept minor segment is split by columns, each
// thread combining every run into its own columns.
typedef struct split_state {
  const reduce_fns_t *fns;
  const char *in;
  char *out;
  size_t es;
  int64_t len, runs, chunk;
  const segment_t *seg;
  int ns;
} split_state_t;

static void fold_rows_task(void *arg, int64_t task, int worker) {
  const split_state_t *s = arg;
  int64_t r0 = task * s->chunk, r1 = r0 + s->chunk < s->runs ? r0 + s->chunk : s->runs;
  for (int64_t r = r0; r < r1; r++)
    s->fns->fold(s->in + (size_t)(r * s->len) * s->es, s->len, s->out + (size_t)r * s->es);
}

static void combine_columns_task(void *arg, int64_t task, int worker) {
  const split_state_t *s = arg;
  int64_t c0 = task * s->chunk, c1 = c0 + s->chunk < s->len ? c0 + s->chunk : s->len;
  int64_t idx[HL_MAX_RANK + 1] = {0}, out_off = 0;
  for (int64_t r = 0; r < s->runs; r++) {
    s->fns->combine(s->in + (size_t)(r * s->len + c0) * s->es, c1 - c0,
                    s->out + (size_t)(out_off + c0) * s->es);
    for (int k = s->ns - 2; k >= 0; k--) {
      if (!s->seg[k].reduced) out_off += s->seg[k].out_stride;
      if (++idx[k] < s->seg[k].size) break;
      if (!s->seg[k].reduced) out_off -= s->seg[k].out_stride * s->seg[k].size;
      idx[k] = 0;
    }
  }
}

// A few long reduced runs (a full reduction, a handful of rows): each run's
// pairwise tree is split at its top levels into leaves that the threads
// fold, and the leaves' values are combined along the same tree, so the
// result has the bits of the serial fold whatever the thread count. The
// depth is fixed (not derived from the thread count) for the same reason.
#define SPLIT_DEPTH 5  // up to 32 leaves
typedef struct tree_split {
  const reduce_fns_t *fns;
  const char *x;
  size_t es;
  int64_t off[1 << SPLIT_DEPTH], n[1 << SPLIT_DEPTH];
  int leaves;
  uint64_t value[1 << SPLIT_DEPTH];  // one element each (es <= 8)
} tree_split_t;

// The tree's halving (reduce.c's _tree: h = n / 2 while n > PAIRWISE_BLOCK).
static void split_leaves(tree_split_t *t, int64_t off, int64_t n, int depth) {
  if (n > PAIRWISE_BLOCK && depth < SPLIT_DEPTH) {
    split_leaves(t, off, n / 2, depth + 1);
    split_leaves(t, off + n / 2, n - n / 2, depth + 1);
    return;
  }
  t->off[t->leaves] = off;
  t->n[t->leaves++] = n;
}

static void split_combine(const tree_split_t *t, int64_t n, int depth, int *next, void *out) {
  if (n > PAIRWISE_BLOCK && depth < SPLIT_DEPTH) {
    uint64_t b;
    split_combine(t, n / 2, depth + 1, next, out);
    split_combine(t, n - n / 2, depth + 1, next, &b);
    t->fns->op(out, &b);
    return;
  }
  memcpy(out, &t->value[(*next)++], t->es);
}

static void tree_leaf_task(void *arg, int64_t task, int worker) {
  tree_split_t *t = arg;
  t->fns->tree(t->x + (size_t)t->off[task] * t->es, t->n[task], &t->value[task]);
}

static void fold_split(const reduce_fns_t *fns, const char *x, int64_t len, size_t es,
                       char *acc, hl_thread_pool_t *pool) {
  tree_split_t t = {.fns = fns, .x = x, .es = es};
  split_leaves(&t, 0, len, 0);
  hl_thread_pool_run(pool, t.leaves, tree_leaf_task, &t);
  uint64_t total;
  int next = 0;
  split_combine(&t, len, 0, &next, &total);
  fns->op(acc, &total);
}

static void reduce_fast(const reduce_fns_t *fns, const hl_literal_t *x, const bool *reduced,
                        const hl_literal_t *init, hl_literal_t *y, hl_thread_pool_t *pool) {
  size_t es = hl_dtype_size(x->shape.dtype);
  int64_t n_out = hl_literal_element_count(y), n_in = hl_literal_element_count(x);
  for (int64_t i = 0; i < n_out; i++) memcpy((char *)y->data + (size_t)i * es, init->data, es);
  if (n_in == 0) return;
  segment_t seg[HL_MAX_RANK + 1];
  int ns = 0;
  for (int d = 0; d < x->shape.rank; d++) {
    if (x->shape.dims[d] == 1) continue;
    if (ns > 0 && seg[ns - 1].reduced == reduced[d]) {
      seg[ns - 1].size *= x->shape.dims[d];
    } else {
      seg[ns++] = (segment_t){x->shape.dims[d], reduced[d], 0};
    }
  }
  if (ns == 0) seg[ns++] = (segment_t){1, false, 0};
  int64_t stride = 1;
  for (int k = ns - 1; k >= 0; k--) {
    if (seg[k].reduced) continue;
    seg[k].out_stride = stride;
    stride *= seg[k].size;
  }
  const segment_t *minor = &seg[ns - 1];
  int64_t len = minor->size, runs = n_in / len, out_off = 0;
  int threads = hl_thread_pool_size(pool);
  if (threads > 1 && n_in >= (INT64_C(1) << 16)) {
    bool only_minor_reduced = minor->reduced;
    for (int k = 0; k < ns - 1; k++) only_minor_reduced &= !seg[k].reduced;
    split_state_t st = {fns, x->data, y->data, es, len, runs, 0, seg, ns};
    if (only_minor_reduced && runs < threads && fns->tree && es <= 8 &&
        len >= 4 * PAIRWISE_BLOCK) {
      for (int64_t r = 0; r < runs; r++)
        fold_split(fns, (const char *)x->data + (size_t)(r * len) * es, len, es,
                   (char *)y->data + (size_t)r * es, pool);
      return;
    }
    if (only_minor_reduced && runs >= threads) {
      st.chunk = (runs + 4 * threads - 1) / (4 * threads);
      hl_thread_pool_run(pool, (runs + st.chunk - 1) / st.chunk, fold_rows_task, &st);
      return;
    }
    if (!minor->reduced && len >= 64 * threads) {
      st.chunk = (len + threads - 1) / threads;
      hl_thread_pool_run(pool, (len + st.chunk - 1) / st.chunk, combine_columns_task, &st);
      return;
    }
  }
  int64_t idx[HL_MAX_RANK + 1] = {0};
  const char *in = x->data;
  char *out = y->data;
  for (int64_t r = 0; r < runs; r++, in += (size_t)len * es) {
    (minor->reduced ? fns->fold : fns->combine)(in, len, out + (size_t)out_off * es);
    for (int k = ns - 2; k >= 0; k--) {
      if (!seg[k].reduced) out_off += seg[k].out_stride;
      if (++idx[k] < seg[k].size) break;
      if (!seg[k].reduced) out_off -= seg[k].out_stride * seg[k].size;
      idx[k] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// General path
//===----------------------------------------------------------------------===//

typedef struct general_state {
  hl_kernel_context_t *ctx;
  const hl_instruction_t *inst;
  const hl_computation_t *reducer;
  int n;                        // number of inputs
  hl_literal_t *const *inputs;  // n
  hl_literal_t **acc;           // n accumulators (owned references)
  hl_literal_t **elem;          // n scalar element literals (owned)
  hl_literal_t **args;          // 2n borrowed pointers
} general_state_t;

// Runs acc = reducer(acc, inputs[..][offset]).
static hl_status_t general_step(general_state_t *s, int64_t offset) {
  for (int k = 0; k < s->n; k++) {
    const hl_literal_t *x = s->inputs[k];
    if (!s->elem[k] || s->elem[k]->refcount > 1) {  // kept by a previous result: make a new one
      hl_literal_release(s->elem[k]);
      s->elem[k] = NULL;
      hl_shape_t shape = hl_shape_scalar(x->shape.dtype);
      HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&shape, &s->elem[k]));
    }
    size_t es = hl_dtype_size(x->shape.dtype);
    memcpy(s->elem[k]->data, (const char *)x->data + (size_t)offset * es, es);
    s->args[k] = s->acc[k];
    s->args[s->n + k] = s->elem[k];
  }
  hl_literal_t *res;
  HL_RETURN_IF_ERROR(hl_kernel_call_computation(s->ctx, s->reducer, s->args, 2 * s->n, &res));
  bool ok = s->n == 1 ? hl_shape_equal(&res->shape, &s->acc[0]->shape)
                      : res->shape.dtype == HL_TUPLE && res->shape.tuple_count == s->n;
  for (int k = 0; ok && s->n > 1 && k < s->n; k++)
    ok = hl_shape_equal(&res->elements[k]->shape, &s->acc[k]->shape);
  if (!ok) {
    hl_status_t st = HL_INVALID("%s: reducer '%s' returned %s, expected the init values' shapes",
                                hl_instruction_location(s->inst), s->reducer->name,
                                HL_SHAPE_STR(&res->shape));
    hl_literal_release(res);
    return st;
  }
  for (int k = 0; k < s->n; k++) {
    hl_literal_t *next = s->n == 1 ? hl_literal_retain(res) : hl_literal_retain(res->elements[k]);
    hl_literal_release(s->acc[k]);
    s->acc[k] = next;
  }
  hl_literal_release(res);
  return NULL;
}

static hl_status_t reduce_general(general_state_t *s, hl_literal_t *const *inits,
                                  const bool *reduced, hl_literal_t **outs) {
  const hl_shape_t *xs = &s->inputs[0]->shape;
  int64_t strides[HL_MAX_RANK], kept_dims[HL_MAX_RANK], kept_strides[HL_MAX_RANK];
  int64_t red_dims[HL_MAX_RANK], red_strides[HL_MAX_RANK];
  int nk = 0, nr = 0;
  hl_shape_strides(xs, strides);
  int64_t n_out = 1, n_red = 1;
  for (int d = 0; d < xs->rank; d++) {
    if (reduced[d]) {
      red_dims[nr] = xs->dims[d];
      red_strides[nr++] = strides[d];
      n_red *= xs->dims[d];
    } else {
      kept_dims[nk] = xs->dims[d];
      kept_strides[nk++] = strides[d];
      n_out *= xs->dims[d];
    }
  }
  hl_status_t st = NULL;
  for (int64_t o = 0; o < n_out && !st; o++) {
    int64_t base = 0, rest = o;
    for (int k = nk - 1; k >= 0; k--) {
      base += (rest % kept_dims[k]) * kept_strides[k];
      rest /= kept_dims[k];
    }
    for (int k = 0; k < s->n; k++) s->acc[k] = hl_literal_retain(inits[k]);
    for (int64_t r = 0; r < n_red && !st; r++) {
      int64_t off = base;
      rest = r;
      for (int k = nr - 1; k >= 0; k--) {
        off += (rest % red_dims[k]) * red_strides[k];
        rest /= red_dims[k];
      }
      st = general_step(s, off);
    }
    for (int k = 0; k < s->n; k++) {
      if (!st) {
        size_t es = hl_dtype_size(outs[k]->shape.dtype);
        memcpy((char *)outs[k]->data + (size_t)o * es, s->acc[k]->data, es);
      }
      hl_literal_release(s->acc[k]);
      s->acc[k] = NULL;
    }
  }
  return st;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

// Checks operands, dimensions and result shapes; fills reduced[].
static hl_status_t check_reduce(const hl_instruction_t *inst, hl_literal_t *const *operands,
                                int n, bool *reduced) {
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *xs = &operands[0]->shape;
  HL_RETURN_IF_ERROR(hl_check_reducer_inputs(loc, operands, n));
  memset(reduced, 0, sizeof(bool) * HL_MAX_RANK);
  const hl_i64_list_t *dims = &inst->attrs.dimensions;
  for (int i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= xs->rank || reduced[d])
      return HL_INVALID("%s: bad or repeated reduced dimension %lld for %s", loc, (long long)d,
                        HL_SHAPE_STR(xs));
    reduced[d] = true;
  }
  for (int k = 0; k < n; k++) {
    const hl_shape_t *rs = n == 1 ? &inst->shape
                           : (inst->shape.dtype == HL_TUPLE && inst->shape.tuple_count == n)
                               ? &inst->shape.tuple[k]
                               : NULL;
    bool ok = rs && hl_shape_is_array(rs) && rs->dtype == operands[k]->shape.dtype &&
              rs->rank == xs->rank - dims->n;
    for (int d = 0, j = 0; ok && d < xs->rank; d++)
      if (!reduced[d]) ok = rs->dims[j++] == xs->dims[d];
    if (!ok)
      return HL_INVALID("%s: result shape %s does not match reducing %s over %d dimension(s)",
                        loc, HL_SHAPE_STR(&inst->shape), HL_SHAPE_STR(xs), dims->n);
  }
  return NULL;
}

hl_status_t hl_kernel_reduce(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  int count = inst->operand_count;
  if (count < 2 || count % 2)
    return HL_INVALID("%s: reduce needs N inputs and N init values, got %d operands",
                      hl_instruction_location(inst), count);
  int n = count / 2;
  bool reduced[HL_MAX_RANK];
  HL_RETURN_IF_ERROR(check_reduce(inst, operands, n, reduced));
  const hl_computation_t *reducer = hl_instruction_to_apply(inst);
  if (!reducer)
    return HL_INVALID("%s: reduce has no to_apply computation", hl_instruction_location(inst));

  reduce_fns_t fns;
  if (n == 1 && fast_fns(operands[0]->shape.dtype,
                         hl_simple_reducer_op(reducer, operands[0]->shape.dtype), &fns)) {
    hl_literal_t *y;
    HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
    const hl_exec_options_t *options = hl_kernel_options(ctx);
    reduce_fast(&fns, operands[0], reduced, operands[1], y, options ? options->pool : NULL);
    *out = y;
    return NULL;
  }

  // One block: n results, then n accumulators, n element literals, 2n args.
  hl_literal_t **scratch = hl_calloc((size_t)(5 * n), sizeof(hl_literal_t *));
  if (!scratch) return HL_OOM();
  hl_literal_t **outv = scratch;
  general_state_t s = {ctx, inst, reducer, n, operands, scratch + n, scratch + 2 * n,
                       scratch + 3 * n};
  hl_status_t st = NULL;
  for (int k = 0; k < n && !st; k++)
    st = hl_literal_create(n == 1 ? &inst->shape : &inst->shape.tuple[k], &outv[k]);
  if (!st) st = reduce_general(&s, operands + n, reduced, outv);
  if (!st && n == 1) *out = hl_literal_retain(outv[0]);
  if (!st && n > 1) st = hl_literal_create_tuple(outv, n, out);
  for (int k = 0; k < n; k++) {
    hl_literal_release(outv[k]);
    hl_literal_release(s.elem[k]);
  }
  hl_free(scratch);
  return st;
}
