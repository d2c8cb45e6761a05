// gather and scatter with every dimension number of the spec (batching dims
// included). Both walk the "batch" positions of the index array (every
// dimension but index_vector_dim; index_vector_dim == rank means an implicit
// trailing dimension of size 1), build the full operand start of each, and
// move one window: gather copies it (starts clamped into the operand),
// scatter combines it into the result (a window that does not fit in the
// operand is skipped whole, as XLA's scatter expander and evaluator do).
//
// Element movement is by element size, so every dtype works; scatter's
// update computation runs through the executor, with fast paths for a
// computation that returns the update (replace) and for add.
//
// gather splits its batch positions over the thread pool (disjoint windows
// of the result). scatter stays serial: indices may repeat, and the order in
// which colliding updates combine decides the result's bits.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/index_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/scalar_call.h"
#include "runtime/kernels/strided_copy.h"
#include "runtime/threads/thread_pool.h"

//===----------------------------------------------------------------------===//
// Index array walk
//===----------------------------------------------------------------------===//

typedef struct index_walk {
  const hl_literal_t *indices;
  int64_t ivd;            // index_vector_dim
  int vec_len;            // elements per start vector
  int64_t vec_stride;     // element stride between them
  int nb;                 // batch dimensions (index dims without ivd)
  int64_t bdims[HL_MAX_RANK], bstr[HL_MAX_RANK];
  int bsrc[HL_MAX_RANK];  // index-array dimension of batch dimension p
  int64_t count;          // batch positions
} index_walk_t;

static hl_status_t index_walk_init(index_walk_t *w, const hl_literal_t *indices, int64_t ivd) {
  memset(w, 0, sizeof(*w));
  const hl_shape_t *s = &indices->shape;
  if (!hl_shape_is_array(s) || !hl_index_type_ok(s->dtype))
    return HL_INVALID("indices must be an integer array, got %s", hl_shape_debug_string(s));
  if (ivd < 0 || ivd > s->rank)
    return HL_INVALID("index_vector_dim %lld out of range for indices of rank %d",
                      (long long)ivd, s->rank);
  w->indices = indices;
  w->ivd = ivd;
  int64_t str[HL_MAX_RANK];
  hl_shape_strides(s, str);
  w->vec_len = ivd == s->rank ? 1 : (int)s->dims[ivd];
  w->vec_stride = ivd == s->rank ? 0 : str[ivd];
  w->count = 1;
  for (int d = 0; d < s->rank; d++) {
    if (d == ivd) continue;
    w->bdims[w->nb] = s->dims[d];
    w->bstr[w->nb] = str[d];
    w->bsrc[w->nb] = d;
    w->count *= s->dims[d];
    w->nb++;
  }
  return NULL;
}

// Batch position p of index-array dimension d (d != ivd).
static int batch_pos_of(const index_walk_t *w, int64_t d) { return (int)(d < w->ivd ? d : d - 1); }

// Reads the start vector at batch multi-index g.
static void index_walk_read(const index_walk_t *w, const int64_t *g, int64_t *vec) {
  int64_t off = 0;
  for (int p = 0; p < w->nb; p++) off += g[p] * w->bstr[p];
  for (int k = 0; k < w->vec_len; k++)
    vec[k] = hl_index_read(w->indices->shape.dtype, w->indices->data, off + k * w->vec_stride);
}

static bool odometer_next(int64_t *idx, const int64_t *dims, int n) {
  for (int k = n - 1; k >= 0; k--) {
    if (++idx[k] < dims[k]) return true;
    idx[k] = 0;
  }
  return false;
}

// Checks a list of dimension numbers: each in [0, rank), no repeats, and
// not already used by another list (marks them in `used` when given).
static hl_status_t check_dim_list(const char *name, const hl_i64_list_t *l, int rank,
                                  bool *used) {
  bool seen[HL_MAX_RANK] = {false};
  for (int i = 0; i < l->n; i++) {
    int64_t d = l->v[i];
    if (d < 0 || d >= rank) return HL_INVALID("%s[%d] = %lld out of range for rank %d", name, i,
                                              (long long)d, rank);
    if (seen[d] || (used && used[d]))
      return HL_INVALID("%s[%d] = %lld repeats a dimension", name, i, (long long)d);
    seen[d] = true;
  }
  if (used)
    for (int i = 0; i < l->n; i++) used[l->v[i]] = true;
  return NULL;
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

// One gather, split over batch positions: every position copies its window
// into its own part of the result, so chunks of positions are independent
// and any thread count writes the same bytes.
typedef struct gather_job {
  const index_walk_t *w;
  const hl_gather_dims_t *g;
  const hl_literal_t *op;
  hl_literal_t *out;
  const int64_t *sizes, *ostr, *res_bstr, *src_str, *dst_str, *win_dims;
  int nwin;
  int64_t chunk;
} gather_job_t;

// Copies the windows of batch positions [b0, b1).
static void gather_positions(const gather_job_t *j, int64_t b0, int64_t b1) {
  const index_walk_t *w = j->w;
  const hl_gather_dims_t *g = j->g;
  const hl_shape_t *os = &j->op->shape;
  size_t es = hl_dtype_size(os->dtype);
  int64_t gi[HL_MAX_RANK] = {0}, vec[HL_MAX_RANK * 4], start[HL_MAX_RANK];
  for (int64_t rem = b0, p = w->nb - 1; p >= 0; p--) {  // unravel b0
    gi[p] = rem % w->bdims[p];
    rem /= w->bdims[p];
  }
  for (int64_t b = b0; b < b1; b++, odometer_next(gi, w->bdims, w->nb)) {
    index_walk_read(w, gi, vec);
    memset(start, 0, sizeof(start));
    for (int k = 0; k < w->vec_len; k++) {
      int64_t d = g->start_index_map.v[k];
      start[d] = hl_index_clamp(vec[k], 0, os->dims[d] - j->sizes[d]);
    }
    for (int i = 0; i < g->operand_batching_dims.n; i++)
      start[g->operand_batching_dims.v[i]] =
          gi[batch_pos_of(w, g->start_indices_batching_dims.v[i])];
    int64_t src_off = 0, dst_off = 0;
    for (int d = 0; d < os->rank; d++) src_off += start[d] * j->ostr[d];
    for (int p = 0; p < w->nb; p++) dst_off += gi[p] * j->res_bstr[p];
    hl_strided_copy((char *)j->out->data + dst_off * (int64_t)es, j->dst_str,
                    (const char *)j->op->data + src_off * (int64_t)es, j->src_str, j->nwin,
                    j->win_dims, es);
  }
}

static void gather_task(void *arg, int64_t task, int worker) {
  (void)worker;
  const gather_job_t *j = arg;
  int64_t b0 = task * j->chunk, b1 = b0 + j->chunk < j->w->count ? b0 + j->chunk : j->w->count;
  gather_positions(j, b0, b1);
}

hl_status_t hl_kernel_gather(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (!hl_shape_is_array(os) || !hl_shape_is_array(rs) || os->dtype != rs->dtype)
    return HL_INVALID("operand %s and result %s must be arrays of one element type",
                      hl_shape_debug_string(os), hl_shape_debug_string(rs));
  if (!inst->attrs.has_gather_dimension_numbers)
    return HL_INVALID("gather has no dimension numbers");
  const hl_gather_dims_t *g = &inst->attrs.gather_dimension_numbers;
  const hl_i64_list_t *sizes = &inst->attrs.gather_slice_sizes;
  index_walk_t w;
  HL_RETURN_IF_ERROR(index_walk_init(&w, operands[1], g->index_vector_dim));
  int r = os->rank;
  if (sizes->n != r) return HL_INVALID("slice_sizes has %d entries for rank %d", sizes->n, r);
  bool not_window[HL_MAX_RANK] = {false}, out_used[HL_MAX_RANK] = {false};
  HL_RETURN_IF_ERROR(check_dim_list("collapsed_slice_dims", &g->collapsed_slice_dims, r,
                                    not_window));
  HL_RETURN_IF_ERROR(check_dim_list("operand_batching_dims", &g->operand_batching_dims, r,
                                    not_window));
  HL_RETURN_IF_ERROR(check_dim_list("start_index_map", &g->start_index_map, r, NULL));
  HL_RETURN_IF_ERROR(check_dim_list("offset_dims", &g->offset_dims, rs->rank, out_used));
  if (g->start_index_map.n != w.vec_len)
    return HL_INVALID("start_index_map has %d entries, index vectors have %d",
                      g->start_index_map.n, w.vec_len);
  if (g->start_indices_batching_dims.n != g->operand_batching_dims.n)
    return HL_INVALID("operand_batching_dims and start_indices_batching_dims differ in length");
  for (int i = 0; i < g->start_indices_batching_dims.n; i++) {
    int64_t d = g->start_indices_batching_dims.v[i];
    if (d < 0 || d >= operands[1]->shape.rank || d == w.ivd)
      return HL_INVALID("start_indices_batching_dims[%d] = %lld is not a batch dimension of the "
                        "indices", i, (long long)d);
    if (operands[1]->shape.dims[d] != os->dims[g->operand_batching_dims.v[i]])
      return HL_INVALID("batching dimension %d: indices size %lld, operand size %lld", i,
                        (long long)operands[1]->shape.dims[d],
                        (long long)os->dims[g->operand_batching_dims.v[i]]);
  }
  for (int d = 0; d < r; d++)
    if (sizes->v[d] < 0 || sizes->v[d] > os->dims[d] || (not_window[d] && sizes->v[d] > 1))
      return HL_INVALID("slice_sizes[%d] = %lld invalid for operand dimension of size %lld", d,
                        (long long)sizes->v[d], (long long)os->dims[d]);
  // Window dims of the operand, in order, map onto offset_dims in order.
  int nwin = 0;
  int64_t win_dims[HL_MAX_RANK], src_str[HL_MAX_RANK], dst_str[HL_MAX_RANK];
  int64_t ostr[HL_MAX_RANK], rstr[HL_MAX_RANK];
  hl_shape_strides(os, ostr);
  hl_shape_strides(rs, rstr);
  for (int d = 0; d < r; d++) {
    if (not_window[d]) continue;
    if (nwin >= g->offset_dims.n)
      return HL_INVALID("offset_dims has %d entries, the operand has more window dimensions",
                        g->offset_dims.n);
    int64_t od = g->offset_dims.v[nwin];
    if (rs->dims[od] != sizes->v[d])
      return HL_INVALID("result dimension %lld has size %lld, slice size is %lld", (long long)od,
                        (long long)rs->dims[od], (long long)sizes->v[d]);
    win_dims[nwin] = sizes->v[d];
    src_str[nwin] = ostr[d];
    dst_str[nwin] = rstr[od];
    nwin++;
  }
  if (nwin != g->offset_dims.n)
    return HL_INVALID("offset_dims has %d entries for %d window dimensions", g->offset_dims.n,
                      nwin);
  // Result batch dims (those not in offset_dims) follow the index batch dims.
  int64_t res_bstr[HL_MAX_RANK];
  int nb = 0;
  for (int d = 0; d < rs->rank; d++) {
    if (out_used[d]) continue;
    if (nb >= w.nb || rs->dims[d] != w.bdims[nb])
      return HL_INVALID("result %s does not match the batch dimensions of indices %s",
                        hl_shape_debug_string(rs), hl_shape_debug_string(&operands[1]->shape));
    res_bstr[nb++] = rstr[d];
  }
  if (nb != w.nb)
    return HL_INVALID("result %s has %d batch dimensions, indices have %d",
                      hl_shape_debug_string(rs), nb, w.nb);
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (!(*out)->byte_size) return NULL;
  gather_job_t job = {&w, g, op, *out, sizes->v, ostr, res_bstr, src_str, dst_str, win_dims,
                      nwin, 0};
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  int threads = hl_thread_pool_size(o ? o->pool : NULL);
  if (threads > 1 && w.count >= 2 * threads &&
      hl_shape_element_count(rs) >= (INT64_C(1) << 14)) {
    job.chunk = (w.count + 4 * threads - 1) / (4 * threads);
    hl_thread_pool_run(o->pool, (w.count + job.chunk - 1) / job.chunk, gather_task, &job);
  } else {
    gather_positions(&job, 0, w.count);
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// scatter
//===----------------------------------------------------------------------===//

typedef enum { kCombineCall, kCombineReplace, kCombineAdd } combine_t;

// The update computation's kind: returns its update parameter (replace), is
// add(p0, p1) on a type the add fast path handles, or anything else (call).
static combine_t classify_update(const hl_computation_t *c, int n, hl_dtype_t t) {
  if (!c || !c->root) return kCombineCall;
  const hl_instruction_t *root = c->root;
  if (n == 1 && hl_computation_root_parameter(c) == 1) return kCombineReplace;
  if (n > 1 && root->opcode == HL_OP_TUPLE && root->operand_count == n) {
    for (int i = 0; i < n; i++) {
      const hl_instruction_t *e = root->operands[i];
      if (e->opcode != HL_OP_PARAMETER || e->attrs.parameter_number != n + i) return kCombineCall;
    }
    return kCombineReplace;
  }
  if (n == 1 && root->opcode == HL_OP_ADD && root->operand_count == 2 &&
      hl_elem_is_real_or_int(t) && t != HL_PRED) {
    const hl_instruction_t *a = root->operands[0], *b = root->operands[1];
    if (a->opcode == HL_OP_PARAMETER && b->opcode == HL_OP_PARAMETER &&
        a->attrs.parameter_number + b->attrs.parameter_number == 1 &&
        a->attrs.parameter_number != b->attrs.parameter_number)
      return kCombineAdd;
  }
  return kCombineCall;
}

// dst[i] += src[i] for one element of a real or integer type (integers wrap).
static void add_element(hl_dtype_t t, void *dst, const void *src) {
  if (hl_dtype_is_float(t)) {
    double a, b;
    hl_elem_load_f64(t, dst, 0, 1, &a);
    hl_elem_load_f64(t, src, 0, 1, &b);
    a += b;
    hl_elem_store_f64(t, dst, 0, 1, &a);
  } else {
    int64_t a, b;
    hl_elem_load_int(t, dst, 0, 1, &a);
    hl_elem_load_int(t, src, 0, 1, &b);
    a = (int64_t)((uint64_t)a + (uint64_t)b);
    hl_elem_store_int(t, dst, 0, 1, &a);
  }
}

typedef struct scatter_state {
  int n;
  hl_literal_t *results[HL_SCALAR_CALL_MAX_ARGS / 2];
  hl_literal_t *const *updates;
  combine_t combine;
  hl_scalar_call_t call;
} scatter_state_t;

// Combines update element at uoff into result element at roff, every array.
static hl_status_t combine_one(scatter_state_t *s, int64_t roff, int64_t uoff) {
  if (s->combine == kCombineAdd) {
    hl_dtype_t t = s->results[0]->shape.dtype;
    size_t es = hl_dtype_size(t);
    add_element(t, (char *)s->results[0]->data + roff * (int64_t)es,
                (const char *)s->updates[0]->data + uoff * (int64_t)es);
    return NULL;
  }
  for (int j = 0; j < s->n; j++) {
    size_t es = hl_dtype_size(s->results[j]->shape.dtype);
    HL_RETURN_IF_ERROR(
        hl_scalar_call_set(&s->call, j, (const char *)s->results[j]->data + roff * (int64_t)es));
    size_t ues = hl_dtype_size(s->updates[j]->shape.dtype);
    HL_RETURN_IF_ERROR(hl_scalar_call_set(&s->call, s->n + j,
                                          (const char *)s->updates[j]->data + uoff * (int64_t)ues));
  }
  hl_literal_t *r = NULL;
  HL_RETURN_IF_ERROR(hl_scalar_call_run(&s->call, &r));
  hl_status_t st = NULL;
  for (int j = 0; j < s->n && !st; j++) {
    const hl_literal_t *v = s->n == 1 ? r : (r->shape.dtype == HL_TUPLE &&
                                             r->shape.tuple_count == s->n ? r->elements[j] : NULL);
    hl_dtype_t t = s->results[j]->shape.dtype;
    if (!v || v->shape.dtype != t || v->shape.rank != 0) {
      st = HL_INVALID("update computation returned %s, expected %s[]%s",
                      hl_shape_debug_string(&r->shape), hl_dtype_name(t),
                      s->n > 1 ? " in a tuple per input" : "");
      break;
    }
    size_t es = hl_dtype_size(t);
    memcpy((char *)s->results[j]->data + roff * (int64_t)es, v->data, es);
  }
  hl_literal_release(r);
  return st;
}

hl_status_t hl_kernel_scatter(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  if (inst->operand_count < 3 || inst->operand_count % 2 == 0)
    return HL_INVALID("scatter takes N inputs, indices and N updates; got %d operands",
                      inst->operand_count);
  int n = (inst->operand_count - 1) / 2;
  if (n > HL_SCALAR_CALL_MAX_ARGS / 2) return HL_UNIMPL("scatter with %d inputs", n);
  if (!inst->attrs.has_scatter_dimension_numbers)
    return HL_INVALID("scatter has no dimension numbers");
  const hl_scatter_dims_t *sd = &inst->attrs.scatter_dimension_numbers;
  const hl_shape_t *is = &operands[0]->shape, *us = &operands[n + 1]->shape;
  hl_literal_t *const *updates = operands + n + 1;
  const hl_shape_t *rs = &inst->shape;
  if (n == 1 ? !hl_shape_equal(rs, is)
             : (rs->dtype != HL_TUPLE || rs->tuple_count != n))
    return HL_INVALID("result %s does not match the inputs", hl_shape_debug_string(rs));
  for (int j = 0; j < n; j++) {
    const hl_shape_t *x = &operands[j]->shape, *u = &updates[j]->shape;
    if (!hl_shape_is_array(x) || !hl_shape_same_dims(x, is) ||
        (n > 1 && !hl_shape_equal(&rs->tuple[j], x)))
      return HL_INVALID("input %d is %s, input 0 is %s", j, hl_shape_debug_string(x),
                        hl_shape_debug_string(is));
    if (!hl_shape_is_array(u) || !hl_shape_same_dims(u, us) || u->dtype != x->dtype)
      return HL_INVALID("update %d is %s; updates must share dimensions and match input %d (%s)",
                        j, hl_shape_debug_string(u), j, hl_shape_debug_string(x));
  }
  index_walk_t w;
  HL_RETURN_IF_ERROR(index_walk_init(&w, operands[n], sd->index_vector_dim));
  int r = is->rank;
  bool not_window[HL_MAX_RANK] = {false}, upd_window[HL_MAX_RANK] = {false};
  HL_RETURN_IF_ERROR(check_dim_list("inserted_window_dims", &sd->inserted_window_dims, r,
                                    not_window));
  HL_RETURN_IF_ERROR(check_dim_list("input_batching_dims", &sd->input_batching_dims, r,
                                    not_window));
  HL_RETURN_IF_ERROR(check_dim_list("scatter_dims_to_operand_dims",
                                    &sd->scatter_dims_to_operand_dims, r, NULL));
  HL_RETURN_IF_ERROR(check_dim_list("update_window_dims", &sd->update_window_dims, us->rank,
                                    upd_window));
  if (sd->scatter_dims_to_operand_dims.n != w.vec_len)
    return HL_INVALID("scatter_dims_to_operand_dims has %d entries, index vectors have %d",
                      sd->scatter_dims_to_operand_dims.n, w.vec_len);
  if (sd->scatter_indices_batching_dims.n != sd->input_batching_dims.n)
    return HL_INVALID("input_batching_dims and scatter_indices_batching_dims differ in length");
  for (int i = 0; i < sd->scatter_indices_batching_dims.n; i++) {
    int64_t d = sd->scatter_indices_batching_dims.v[i];
    if (d < 0 || d >= operands[n]->shape.rank || d == w.ivd)
      return HL_INVALID("scatter_indices_batching_dims[%d] = %lld is not a batch dimension of "
                        "the indices", i, (long long)d);
    if (operands[n]->shape.dims[d] != is->dims[sd->input_batching_dims.v[i]])
      return HL_INVALID("batching dimension %d: indices size %lld, input size %lld", i,
                        (long long)operands[n]->shape.dims[d],
                        (long long)is->dims[sd->input_batching_dims.v[i]]);
  }
  // Window: input dims not inserted/batching, in order <-> update_window_dims.
  int64_t istr[HL_MAX_RANK], ustr[HL_MAX_RANK];
  hl_shape_strides(is, istr);
  hl_shape_strides(us, ustr);
  int nwin = 0;
  int64_t win_dims[HL_MAX_RANK], win_istr[HL_MAX_RANK], win_ustr[HL_MAX_RANK];
  int64_t wsize[HL_MAX_RANK];
  for (int d = 0; d < r; d++) {
    wsize[d] = 1;
    if (not_window[d]) continue;
    if (nwin >= sd->update_window_dims.n)
      return HL_INVALID("update_window_dims has %d entries, the input has more window "
                        "dimensions", sd->update_window_dims.n);
    int64_t ud = sd->update_window_dims.v[nwin];
    if (us->dims[ud] > is->dims[d])
      return HL_INVALID("update window dimension %lld (size %lld) exceeds input dimension %d "
                        "(size %lld)", (long long)ud, (long long)us->dims[ud], d,
                        (long long)is->dims[d]);
    wsize[d] = win_dims[nwin] = us->dims[ud];
    win_istr[nwin] = istr[d];
    win_ustr[nwin] = ustr[ud];
    nwin++;
  }
  if (nwin != sd->update_window_dims.n)
    return HL_INVALID("update_window_dims has %d entries for %d window dimensions",
                      sd->update_window_dims.n, nwin);
  int64_t upd_bstr[HL_MAX_RANK];
  int nb = 0;
  for (int d = 0; d < us->rank; d++) {
    if (upd_window[d]) continue;
    if (nb >= w.nb || us->dims[d] != w.bdims[nb])
      return HL_INVALID("updates %s do not match the batch dimensions of indices %s",
                        hl_shape_debug_string(us), hl_shape_debug_string(&operands[n]->shape));
    upd_bstr[nb++] = ustr[d];
  }
  if (nb != w.nb)
    return HL_INVALID("updates have %d scatter dimensions, indices have %d", nb, w.nb);

  scatter_state_t s;
  memset(&s, 0, sizeof(s));
  s.n = n;
  s.updates = updates;
  const hl_computation_t *comp = hl_instruction_to_apply(inst);
  s.combine = classify_update(comp, n, is->dtype);
  hl_status_t st = NULL;
  if (s.combine == kCombineCall) {
    hl_dtype_t types[HL_SCALAR_CALL_MAX_ARGS];
    for (int j = 0; j < n; j++) types[j] = types[n + j] = operands[j]->shape.dtype;
    HL_RETURN_IF_ERROR(hl_scalar_call_init(&s.call, ctx, comp, types, 2 * n, "update"));
  }
  // Results start as copies of the inputs (or take a dying input's buffer).
  for (int j = 0; j < n && !st; j++) {
    st = hl_literal_create_uninitialized(&operands[j]->shape, &s.results[j]);
    if (st) break;
    if (!operands[j]->byte_size) continue;
    if (hl_kernel_operand_is_donatable(ctx, j)) {
      void *fresh = s.results[j]->data;
      s.results[j]->data = operands[j]->data;
      operands[j]->data = fresh;
    } else {
      memcpy(s.results[j]->data, operands[j]->data, operands[j]->byte_size);
    }
  }
  int64_t gi[HL_MAX_RANK] = {0}, vec[HL_MAX_RANK * 4], start[HL_MAX_RANK];
  bool any = hl_shape_element_count(us) > 0 && w.count > 0;
  for (int64_t b = 0; any && !st && b < w.count; b++, odometer_next(gi, w.bdims, w.nb)) {
    index_walk_read(&w, gi, vec);
    memset(start, 0, sizeof(start));
    for (int k = 0; k < w.vec_len; k++) start[sd->scatter_dims_to_operand_dims.v[k]] = vec[k];
    for (int i = 0; i < sd->input_batching_dims.n; i++)
      start[sd->input_batching_dims.v[i]] =
          gi[batch_pos_of(&w, sd->scatter_indices_batching_dims.v[i])];
    bool fits = true;
    for (int d = 0; d < r && fits; d++)
      fits = start[d] >= 0 && start[d] <= is->dims[d] - wsize[d];
    if (!fits) continue;
    int64_t roff = 0, uoff = 0;
    for (int d = 0; d < r; d++) roff += start[d] * istr[d];
    for (int p = 0; p < nb; p++) uoff += gi[p] * upd_bstr[p];
    if (s.combine == kCombineReplace) {
      for (int j = 0; j < n; j++) {
        size_t es = hl_dtype_size(s.results[j]->shape.dtype);
        hl_strided_copy((char *)s.results[j]->data + roff * (int64_t)es, win_istr,
                        (const char *)updates[j]->data + uoff * (int64_t)es, win_ustr, nwin,
                        win_dims, es);
      }
      continue;
    }
    int64_t wi[HL_MAX_RANK] = {0};
    do {
      int64_t ro = roff, uo = uoff;
      for (int k = 0; k < nwin; k++) {
        ro += wi[k] * win_istr[k];
        uo += wi[k] * win_ustr[k];
      }
      st = combine_one(&s, ro, uo);
    } while (!st && odometer_next(wi, win_dims, nwin));
  }
  if (s.combine == kCombineCall) hl_scalar_call_deinit(&s.call);
  if (!st) {
    if (n == 1) {
      *out = s.results[0];
      return NULL;
    }
    st = hl_literal_create_tuple(s.results, n, out);
  }
  for (int j = 0; j < n; j++) hl_literal_release(s.results[j]);
  return st;
}
