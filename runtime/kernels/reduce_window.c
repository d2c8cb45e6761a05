// reduce-window (XLA ReduceWindow; StableHLO reduce_window) and
// select-and-scatter (XLA SelectAndScatter; StableHLO select_and_scatter).
//
// reduce-window: N inputs and N scalar inits; every result element reduces
// its window of the padded, base-dilated inputs, starting from the inits.
// As both specs say, padding and base-dilation holes hold the init values
// and take part in the reduction (so an init that is not the reducer's
// identity counts once per padded position, as in the StableHLO
// definition). Fast path: one input whose reducer is one add / multiply /
// maximum / minimum of its parameters (recognised by reducer_match.h) runs
// as a typed loop (f32 and f64 in their type, f16 / bf16 in f32 rounded
// after each step, integers in 64 bits with wrap-around); anything else
// calls the reducer computation per element.
//
// select-and-scatter: for every source element, the window of the operand
// is scanned in row-major order over the positions inside the operand
// (padding is never selected, as in XLA); the first one is the candidate and
// a later element replaces it when select(candidate, element) is false. The
// result starts as init everywhere and result[selected] =
// scatter(result[selected], source) in source row-major order. A window
// without operand elements scatters nothing.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/float_minmax.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/reducer_match.h"

//===----------------------------------------------------------------------===//
// Window geometry
//===----------------------------------------------------------------------===//

typedef struct win_plan {
  int rank;
  int64_t in_dims[HL_MAX_RANK], out_dims[HL_MAX_RANK], win[HL_MAX_RANK];
  int64_t n_out, n_win;        // result elements, elements per window
  int64_t *tab;                // per dim d: [win[d]][out[d]] input offset or -1 (owned)
  int64_t tstart[HL_MAX_RANK];
} win_plan_t;

static int64_t window_count(int64_t in, const hl_window_dim_t *w) {
  int64_t dil_in = in == 0 ? 0 : (in - 1) * w->base_dilation + 1;
  int64_t padded = w->padding_low + dil_in + w->padding_high;
  int64_t dil_w = (w->size - 1) * w->window_dilation + 1;
  if (padded <= 0 || dil_w > padded) return 0;
  return (padded - dil_w) / w->stride + 1;
}

static void win_plan_deinit(win_plan_t *p) {
  hl_free(p->tab);
  p->tab = NULL;
}

// Checks the window against `in` and `out` (the result / source shape) and
// builds the offset tables.
static hl_status_t win_plan_init(const hl_instruction_t *inst, const hl_shape_t *in,
                                 const hl_shape_t *out, const char *out_role, win_plan_t *p) {
  const char *loc = hl_instruction_location(inst);
  const hl_window_t *w = &inst->attrs.window;
  memset(p, 0, sizeof(*p));
  p->rank = in->rank;
  if ((in->rank > 0 && !inst->attrs.has_window) || (inst->attrs.has_window && w->n != in->rank))
    return HL_INVALID("%s: window has %d dimensions, operand %s has rank %d", loc,
                      inst->attrs.has_window ? w->n : 0, HL_SHAPE_STR(in), in->rank);
  bool ok = hl_shape_is_array(out) && out->rank == in->rank;
  int64_t total = 0;
  p->n_out = p->n_win = 1;
  int64_t strides[HL_MAX_RANK];
  hl_shape_strides(in, strides);
  for (int d = 0; d < in->rank; d++) {
    const hl_window_dim_t *wd = &w->dims[d];
    if (wd->size < 1 || wd->stride < 1 || wd->base_dilation < 1 || wd->window_dilation < 1)
      return HL_INVALID("%s: window dimension %d has size %lld, stride %lld, lhs_dilate %lld, "
                        "rhs_dilate %lld; all must be >= 1", loc, d, (long long)wd->size,
                        (long long)wd->stride, (long long)wd->base_dilation,
                        (long long)wd->window_dilation);
    p->in_dims[d] = in->dims[d];
    p->win[d] = wd->size;
    p->out_dims[d] = window_count(in->dims[d], wd);
    ok = ok && out->dims[d] == p->out_dims[d];
    p->tstart[d] = total;
    total += p->win[d] * p->out_dims[d];
    p->n_out *= p->out_dims[d];
    p->n_win *= p->win[d];
  }
  if (!ok)
    return HL_INVALID("%s: %s %s does not match the windows of %s", loc, out_role,
                      HL_SHAPE_STR(out), HL_SHAPE_STR(in));
  p->tab = hl_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
  if (!p->tab) return HL_OOM();
  for (int d = 0; d < in->rank; d++) {
    const hl_window_dim_t *wd = &w->dims[d];
    int64_t extent = (in->dims[d] - 1) * wd->base_dilation;
    for (int64_t k = 0; k < p->win[d]; k++) {
      for (int64_t o = 0; o < p->out_dims[d]; o++) {
        int64_t x = o * wd->stride + k * wd->window_dilation - wd->padding_low;
        int64_t v = -1;
        if (in->dims[d] > 0 && x >= 0 && x <= extent && x % wd->base_dilation == 0)
          v = (x / wd->base_dilation) * strides[d];
        p->tab[p->tstart[d] + k * p->out_dims[d] + o] = v;
      }
    }
  }
  return NULL;
}

// Input offsets of the window of result element `oidx`, in row-major window
// order; -1 for padding. offs has n_win entries.
static void window_offsets(const win_plan_t *p, const int64_t *oidx, int64_t *offs) {
  int64_t widx[HL_MAX_RANK] = {0};
  for (int64_t i = 0; i < p->n_win; i++) {
    int64_t off = 0;
    for (int d = 0; d < p->rank; d++) {
      int64_t v = p->tab[p->tstart[d] + widx[d] * p->out_dims[d] + oidx[d]];
      if (v < 0) {
        off = -1;
        break;
      }
      off += v;
    }
    offs[i] = off;
    for (int d = p->rank - 1; d >= 0; d--) {
      if (++widx[d] < p->win[d]) break;
      widx[d] = 0;
    }
  }
}

static void next_index(const int64_t *dims, int rank, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) break;
    idx[d] = 0;
  }
}

//===----------------------------------------------------------------------===//
// reduce-window fast path
//===----------------------------------------------------------------------===//

#define RW_FLOAT_(name, T)                                                              \
  static void name(const win_plan_t *p, hl_opcode_t op, const T *x, T init, T *y,       \
                   int64_t *offs, int round16) {                                        \
    int64_t oidx[HL_MAX_RANK] = {0};                                                    \
    for (int64_t o = 0; o < p->n_out; o++, next_index(p->out_dims, p->rank, oidx)) {    \
      window_offsets(p, oidx, offs);                                                    \
      T acc = init;                                                                     \
      for (int64_t i = 0; i < p->n_win; i++) {                                          \
        T v = offs[i] >= 0 ? x[offs[i]] : init;                                         \
        switch (op) {                                                                   \
          case HL_OP_ADD: acc = acc + v; break;                                         \
          case HL_OP_MULTIPLY: acc = acc * v; break;                                    \
          case HL_OP_MAXIMUM: acc = (T)hl_maximum_f64(acc, v); break;                         \
          default: acc = (T)hl_minimum_f64(acc, v); break;                                    \
        }                                                                               \
        if (round16 == 1) acc = hl_f16_to_f32(hl_f32_to_f16((float)acc));              \
        if (round16 == 2) acc = hl_bf16_to_f32(hl_f32_to_bf16((float)acc));            \
      }                                                                                 \
      y[o] = acc;                                                                       \
    }                                                                                   \
  }
RW_FLOAT_(rw_f32, float)
RW_FLOAT_(rw_f64, double)
#undef RW_FLOAT_

// Integers: sign- or zero-extended to 64 bits; add / multiply wrap and the
// stored low bits are exact, max / min compare the extended values (as
// unsigned ones for an unsigned type: a u64 above 2^63 is no negative).
static void rw_int(const win_plan_t *p, hl_opcode_t op, const int64_t *x, int64_t init,
                   int64_t *y, int64_t *offs, bool is_unsigned) {
  int64_t oidx[HL_MAX_RANK] = {0};
  for (int64_t o = 0; o < p->n_out; o++, next_index(p->out_dims, p->rank, oidx)) {
    window_offsets(p, oidx, offs);
    int64_t acc = init;
    for (int64_t i = 0; i < p->n_win; i++) {
      int64_t v = offs[i] >= 0 ? x[offs[i]] : init;
      switch (op) {
        case HL_OP_ADD: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
        case HL_OP_MULTIPLY: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
        case HL_OP_MAXIMUM:
          if (is_unsigned ? (uint64_t)v > (uint64_t)acc : v > acc) acc = v;
          break;
        default:
          if (is_unsigned ? (uint64_t)v < (uint64_t)acc : v < acc) acc = v;
          break;
      }
    }
    y[o] = acc;
  }
}

static bool fast_op(hl_opcode_t op) {
  return op == HL_OP_ADD || op == HL_OP_MULTIPLY || op == HL_OP_MAXIMUM || op == HL_OP_MINIMUM;
}

static bool fast_type(hl_dtype_t t) {
  switch (t) {
    case HL_S8: case HL_S16: case HL_S32: case HL_S64:
    case HL_U8: case HL_U16: case HL_U32: case HL_U64:
    case HL_F16: case HL_BF16: case HL_F32: case HL_F64:
      return true;
    default:
      return false;
  }
}

static hl_status_t reduce_window_fast(const win_plan_t *p, hl_opcode_t op, const hl_literal_t *x,
                                      const hl_literal_t *init, hl_literal_t *y) {
  hl_dtype_t t = x->shape.dtype;
  int64_t n_in = hl_literal_element_count(x);
  int64_t *offs = hl_malloc((size_t)(p->n_win ? p->n_win : 1) * sizeof(int64_t));
  if (!offs) return HL_OOM();
  hl_status_t st = NULL;
  if (t == HL_F32) {
    rw_f32(p, op, x->data, *(const float *)init->data, y->data, offs, 0);
  } else if (t == HL_F64) {
    rw_f64(p, op, x->data, *(const double *)init->data, y->data, offs, 0);
  } else {
    // Widened copies of the input and the result.
    bool is_int = !hl_dtype_is_float(t);
    size_t cs = is_int ? sizeof(int64_t) : sizeof(float);
    void *xin = hl_malloc((size_t)(n_in ? n_in : 1) * cs);
    void *yout = hl_malloc((size_t)(p->n_out ? p->n_out : 1) * cs);
    if (!xin || !yout) {
      st = HL_OOM();
    } else if (is_int) {
      int64_t iv;
      hl_elem_load_int(t, x->data, 0, n_in, xin);
      hl_elem_load_int(t, init->data, 0, 1, &iv);
      rw_int(p, op, xin, iv, yout, offs, hl_dtype_is_unsigned_int(t));
      hl_elem_store_int(t, y->data, 0, p->n_out, yout);
    } else {
      double v[HL_ELEM_BLOCK];
      for (int64_t b = 0; b < n_in; b += HL_ELEM_BLOCK) {
        int64_t m = n_in - b < HL_ELEM_BLOCK ? n_in - b : HL_ELEM_BLOCK;
        hl_elem_load_f64(t, x->data, b, m, v);
        for (int64_t i = 0; i < m; i++) ((float *)xin)[b + i] = (float)v[i];
      }
      double iv;
      hl_elem_load_f64(t, init->data, 0, 1, &iv);
      rw_f32(p, op, xin, (float)iv, yout, offs, t == HL_F16 ? 1 : 2);
      for (int64_t b = 0; b < p->n_out; b += HL_ELEM_BLOCK) {
        int64_t m = p->n_out - b < HL_ELEM_BLOCK ? p->n_out - b : HL_ELEM_BLOCK;
        for (int64_t i = 0; i < m; i++) v[i] = ((float *)yout)[b + i];
        hl_elem_store_f64(t, y->data, b, m, v);
      }
    }
    hl_free(xin);
    hl_free(yout);
  }
  hl_free(offs);
  return st;
}

//===----------------------------------------------------------------------===//
// Calling scalar computations
//===----------------------------------------------------------------------===//

// A scalar literal holding element `offset` of `x` (reuses *slot when no
// earlier result kept it).
static hl_status_t scalar_of(const hl_literal_t *x, int64_t offset, hl_literal_t **slot) {
  if (!*slot || (*slot)->refcount > 1) {
    hl_literal_release(*slot);
    *slot = NULL;
    hl_shape_t s = hl_shape_scalar(x->shape.dtype);
    HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&s, slot));
  }
  size_t es = hl_dtype_size(x->shape.dtype);
  memcpy((*slot)->data, (const char *)x->data + (size_t)offset * es, es);
  return NULL;
}

//===----------------------------------------------------------------------===//
// reduce-window general path
//===----------------------------------------------------------------------===//

static hl_status_t reduce_window_general(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                         const win_plan_t *p, int n,
                                         hl_literal_t *const *inputs,
                                         hl_literal_t *const *inits, hl_literal_t **outs) {
  const hl_computation_t *reducer = hl_instruction_to_apply(inst);
  hl_literal_t **acc = hl_calloc((size_t)(4 * n), sizeof(hl_literal_t *));
  int64_t *offs = hl_malloc((size_t)(p->n_win ? p->n_win : 1) * sizeof(int64_t));
  hl_status_t st = (acc && offs) ? NULL : HL_OOM();
  hl_literal_t **elem = acc ? acc + n : NULL, **args = acc ? acc + 2 * n : NULL;
  int64_t oidx[HL_MAX_RANK] = {0};
  for (int64_t o = 0; !st && o < p->n_out; o++, next_index(p->out_dims, p->rank, oidx)) {
    window_offsets(p, oidx, offs);
    for (int k = 0; k < n; k++) acc[k] = hl_literal_retain(inits[k]);
    for (int64_t i = 0; !st && i < p->n_win; i++) {
      for (int k = 0; k < n && !st; k++) {
        if (offs[i] >= 0) st = scalar_of(inputs[k], offs[i], &elem[k]);
        args[k] = acc[k];
        args[n + k] = offs[i] >= 0 ? elem[k] : inits[k];
      }
      hl_literal_t *res = NULL;
      if (!st) st = hl_kernel_call_computation(ctx, reducer, args, 2 * n, &res);
      if (st) break;
      bool ok = n == 1 ? hl_shape_equal(&res->shape, &inits[0]->shape)
                       : res->shape.dtype == HL_TUPLE && res->shape.tuple_count == n;
      for (int k = 0; ok && n > 1 && k < n; k++)
        ok = hl_shape_equal(&res->elements[k]->shape, &inits[k]->shape);
      if (!ok) {
        st = HL_INVALID("%s: reducer '%s' returned %s, expected the init values' shapes",
                        hl_instruction_location(inst), reducer->name,
                        HL_SHAPE_STR(&res->shape));
      } else {
        for (int k = 0; k < n; k++) {
          hl_literal_t *next = hl_literal_retain(n == 1 ? res : res->elements[k]);
          hl_literal_release(acc[k]);
          acc[k] = next;
        }
      }
      hl_literal_release(res);
    }
    for (int k = 0; k < n; k++) {
      if (!st) {
        size_t es = hl_dtype_size(outs[k]->shape.dtype);
        memcpy((char *)outs[k]->data + (size_t)o * es, acc[k]->data, es);
      }
      hl_literal_release(acc[k]);
      acc[k] = NULL;
    }
  }
  for (int k = 0; acc && k < n; k++) hl_literal_release(elem[k]);
  hl_free(acc);
  hl_free(offs);
  return st;
}

hl_status_t hl_kernel_reduce_window(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                    hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  int count = inst->operand_count;
  if (count < 2 || count % 2)
    return HL_INVALID("%s: reduce-window needs N inputs and N init values, got %d operands",
                      loc, count);
  int n = count / 2;
  const hl_shape_t *xs = &operands[0]->shape;
  HL_RETURN_IF_ERROR(hl_check_reducer_inputs(loc, operands, n));
  for (int k = 0; k < n; k++) {
    const hl_shape_t *s = &operands[k]->shape;
    const hl_shape_t *rs = n == 1 ? &inst->shape
                           : (inst->shape.dtype == HL_TUPLE && inst->shape.tuple_count == n)
                               ? &inst->shape.tuple[k]
                               : NULL;
    if (!rs || !hl_shape_is_array(rs) || rs->dtype != s->dtype)
      return HL_INVALID("%s: result %s does not hold one %s array per input", loc,
                        HL_SHAPE_STR(&inst->shape), hl_dtype_name(s->dtype));
  }
  const hl_computation_t *reducer = hl_instruction_to_apply(inst);
  if (!reducer) return HL_INVALID("%s: reduce-window has no to_apply computation", loc);
  win_plan_t p;
  hl_status_t st =
      win_plan_init(inst, xs, n == 1 ? &inst->shape : &inst->shape.tuple[0], "result", &p);
  for (int k = 1; !st && k < n; k++)
    if (!hl_shape_same_dims(&inst->shape.tuple[k], &inst->shape.tuple[0]))
      st = HL_INVALID("%s: result elements differ in dimensions", loc);
  if (st) {
    win_plan_deinit(&p);
    return st;
  }
  hl_opcode_t op = hl_simple_reducer_op(reducer, xs->dtype);
  if (n == 1 && fast_type(xs->dtype) && fast_op(op)) {
    hl_literal_t *y;
    st = hl_literal_create_uninitialized(&inst->shape, &y);
    if (!st) st = reduce_window_fast(&p, op, operands[0], operands[1], y);
    win_plan_deinit(&p);
    if (st) {
      hl_literal_release(y);
      return st;
    }
    *out = y;
    return NULL;
  }
  hl_literal_t **outs = hl_calloc((size_t)n, sizeof(hl_literal_t *));
  if (!outs) st = HL_OOM();
  for (int k = 0; k < n && !st; k++)
    st = hl_literal_create(n == 1 ? &inst->shape : &inst->shape.tuple[k], &outs[k]);
  if (!st) st = reduce_window_general(ctx, inst, &p, n, operands, operands + n, outs);
  if (!st && n == 1) *out = hl_literal_retain(outs[0]);
  if (!st && n > 1) st = hl_literal_create_tuple(outs, n, out);
  for (int k = 0; outs && k < n; k++) hl_literal_release(outs[k]);
  hl_free(outs);
  win_plan_deinit(&p);
  return st;
}

//===----------------------------------------------------------------------===//
// select-and-scatter
//===----------------------------------------------------------------------===//

// select is compare(param0, param1) with direction GE / GT / LE / LT on the
// default or FLOAT comparison; scatter is add: run typed (f32 / f64).
static hl_comparison_direction_t simple_select(const hl_computation_t *c, hl_dtype_t t) {
  if (!c || c->parameter_count != 2 || !c->root) return HL_CMP_NONE;
  const hl_instruction_t *r = c->root;
  if (r->opcode != HL_OP_COMPARE || r->operand_count != 2) return HL_CMP_NONE;
  const hl_instruction_t *a = r->operands[0], *b = r->operands[1];
  if (a->opcode != HL_OP_PARAMETER || b->opcode != HL_OP_PARAMETER ||
      a->attrs.parameter_number != 0 || b->attrs.parameter_number != 1 ||
      a->shape.dtype != t || b->shape.dtype != t || a->shape.rank || b->shape.rank)
    return HL_CMP_NONE;
  if (r->attrs.comparison_type != HL_CMPTYPE_DEFAULT &&
      r->attrs.comparison_type != HL_CMPTYPE_FLOAT)
    return HL_CMP_NONE;
  switch (r->attrs.comparison_direction) {
    case HL_CMP_GE: case HL_CMP_GT: case HL_CMP_LE: case HL_CMP_LT:
      return r->attrs.comparison_direction;
    default:
      return HL_CMP_NONE;
  }
}

static inline bool cmp_dir(hl_comparison_direction_t d, double a, double b) {
  switch (d) {
    case HL_CMP_GE: return a >= b;
    case HL_CMP_GT: return a > b;
    case HL_CMP_LE: return a <= b;
    default: return a < b;
  }
}

#define SAS_FAST_(name, T)                                                              \
  static void name(const win_plan_t *p, hl_comparison_direction_t dir, const T *x,      \
                   const T *src, T *y, int64_t *offs) {                                 \
    int64_t oidx[HL_MAX_RANK] = {0};                                                    \
    for (int64_t o = 0; o < p->n_out; o++, next_index(p->out_dims, p->rank, oidx)) {    \
      window_offsets(p, oidx, offs);                                                    \
      int64_t sel = -1;                                                                 \
      for (int64_t i = 0; i < p->n_win; i++) {                                          \
        if (offs[i] < 0) continue;                                                      \
        if (sel < 0 || !cmp_dir(dir, x[sel], x[offs[i]])) sel = offs[i];                \
      }                                                                                 \
      if (sel >= 0) y[sel] = y[sel] + src[o];                                           \
    }                                                                                   \
  }
SAS_FAST_(sas_f32, float)
SAS_FAST_(sas_f64, double)
#undef SAS_FAST_

static hl_status_t call_pred(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             const hl_computation_t *c, hl_literal_t **args, bool *out) {
  hl_literal_t *res = NULL;
  HL_RETURN_IF_ERROR(hl_kernel_call_computation(ctx, c, args, 2, &res));
  hl_status_t st = NULL;
  if (res->shape.dtype != HL_PRED || res->shape.rank != 0)
    st = HL_INVALID("%s: select computation '%s' returned %s, expected pred[]",
                    hl_instruction_location(inst), c->name, HL_SHAPE_STR(&res->shape));
  else
    *out = *(const uint8_t *)res->data != 0;
  hl_literal_release(res);
  return st;
}

static hl_status_t sas_general(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                               const win_plan_t *p, const hl_literal_t *x,
                               const hl_literal_t *src, hl_literal_t *y) {
  const hl_computation_t *sel_c = inst->called_computations[0];
  const hl_computation_t *sc_c = inst->called_computations[1];
  size_t es = hl_dtype_size(x->shape.dtype);
  int64_t *offs = hl_malloc((size_t)(p->n_win ? p->n_win : 1) * sizeof(int64_t));
  if (!offs) return HL_OOM();
  hl_literal_t *a = NULL, *b = NULL;
  hl_status_t st = NULL;
  int64_t oidx[HL_MAX_RANK] = {0};
  for (int64_t o = 0; !st && o < p->n_out; o++, next_index(p->out_dims, p->rank, oidx)) {
    window_offsets(p, oidx, offs);
    int64_t sel = -1;
    for (int64_t i = 0; !st && i < p->n_win; i++) {
      if (offs[i] < 0) continue;
      if (sel < 0) {
        sel = offs[i];
        continue;
      }
      bool keep = true;
      st = scalar_of(x, sel, &a);
      if (!st) st = scalar_of(x, offs[i], &b);
      hl_literal_t *args[2] = {a, b};
      if (!st) st = call_pred(ctx, inst, sel_c, args, &keep);
      if (!st && !keep) sel = offs[i];
    }
    if (st || sel < 0) continue;
    st = scalar_of(y, sel, &a);
    if (!st) st = scalar_of(src, o, &b);
    hl_literal_t *args[2] = {a, b}, *res = NULL;
    if (!st) st = hl_kernel_call_computation(ctx, sc_c, args, 2, &res);
    if (st) break;
    if (res->shape.dtype != y->shape.dtype || res->shape.rank != 0)
      st = HL_INVALID("%s: scatter computation '%s' returned %s, expected %s[]",
                      hl_instruction_location(inst), sc_c->name, HL_SHAPE_STR(&res->shape),
                      hl_dtype_name(y->shape.dtype));
    else
      memcpy((char *)y->data + (size_t)sel * es, res->data, es);
    hl_literal_release(res);
  }
  hl_literal_release(a);
  hl_literal_release(b);
  hl_free(offs);
  return st;
}

hl_status_t hl_kernel_select_and_scatter(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                         hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  if (inst->operand_count != 3)
    return HL_INVALID("%s: select-and-scatter takes operand, source, init_value; got %d "
                      "operands", loc, inst->operand_count);
  if (inst->called_count != 2)
    return HL_INVALID("%s: select-and-scatter needs select and scatter computations, has %d",
                      loc, inst->called_count);
  const hl_literal_t *x = operands[0], *src = operands[1], *init = operands[2];
  hl_dtype_t t = x->shape.dtype;
  if (!hl_shape_is_array(&x->shape) || !hl_shape_is_array(&src->shape) ||
      src->shape.dtype != t || init->shape.rank != 0 || init->shape.dtype != t ||
      !hl_shape_equal(&inst->shape, &x->shape))
    return HL_INVALID("%s: operand %s, source %s, init %s and result %s must share one element "
                      "type, the result the operand's shape", loc, HL_SHAPE_STR(&x->shape),
                      HL_SHAPE_STR(&src->shape), HL_SHAPE_STR(&init->shape),
                      HL_SHAPE_STR(&inst->shape));
  for (int d = 0; inst->attrs.has_window && d < inst->attrs.window.n; d++) {
    const hl_window_dim_t *wd = &inst->attrs.window.dims[d];
    if (wd->base_dilation != 1 || wd->window_dilation != 1)
      return HL_INVALID("%s: select-and-scatter windows take no dilation (dimension %d)", loc,
                        d);
  }
  win_plan_t p;
  hl_status_t st = win_plan_init(inst, &x->shape, &src->shape, "source", &p);
  hl_literal_t *y = NULL;
  if (!st) st = hl_literal_create_uninitialized(&inst->shape, &y);
  if (!st) {
    size_t es = hl_dtype_size(t);
    int64_t n = hl_literal_element_count(y);
    for (int64_t i = 0; i < n; i++) memcpy((char *)y->data + (size_t)i * es, init->data, es);
    const hl_computation_t *sel_c = inst->called_computations[0];
    const hl_computation_t *sc_c = inst->called_computations[1];
    hl_comparison_direction_t dir = simple_select(sel_c, t);
    if ((t == HL_F32 || t == HL_F64) && dir != HL_CMP_NONE &&
        hl_simple_reducer_op(sc_c, t) == HL_OP_ADD) {
      int64_t *offs = hl_malloc((size_t)(p.n_win ? p.n_win : 1) * sizeof(int64_t));
      if (!offs) {
        st = HL_OOM();
      } else if (t == HL_F32) {
        sas_f32(&p, dir, x->data, src->data, y->data, offs);
      } else {
        sas_f64(&p, dir, x->data, src->data, y->data, offs);
      }
      hl_free(offs);
    } else {
      st = sas_general(ctx, inst, &p, x, src, y);
    }
  }
  win_plan_deinit(&p);
  if (st) {
    hl_literal_release(y);
    return st;
  }
  *out = y;
  return NULL;
}
