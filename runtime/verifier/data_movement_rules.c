// The verifier's rules of data movement, indexing and structural ops: pad,
// reverse, dynamic slices, gather / scatter, sort, top-k, map, dimension
// sizes, copy-start / async-start and their -done.
#include "runtime/verifier/verifier_internal.h"

//===----------------------------------------------------------------------===//
// Data movement / indexing / structural ops (pad ... async-*)
//===----------------------------------------------------------------------===//

// `l` lists distinct dimensions below rank, none already in `used` (marked).
bool hl_verify_dim_set(check_t *k, const char *field, const hl_i64_list_t *l, int rank,
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

void hl_verify_pad(check_t *k) {
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

void hl_verify_reverse(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0);
  if (!expect_array(k, x, "operand 0")) return;
  if (!hl_verify_dim_set(k, "dimensions", &k->inst->attrs.dimensions, x->rank, NULL)) return;
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

void hl_verify_dynamic_slice(check_t *k) {
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

void hl_verify_dynamic_update_slice(check_t *k) {
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
  if (!hl_verify_dim_set(k, field, idxd, idx->rank, dummy)) return false;
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

void hl_verify_gather(check_t *k) {
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
  if (!hl_verify_dim_set(k, "collapsed_slice_dims", &g->collapsed_slice_dims, x->rank,
                         not_window) ||
      !hl_verify_dim_set(k, "operand_batching_dims", &g->operand_batching_dims, x->rank,
                         not_window) ||
      !hl_verify_dim_set(k, "start_index_map", &g->start_index_map, x->rank, NULL) ||
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
  if (!hl_verify_dim_set(k, "offset_dims", &g->offset_dims, out_rank, is_offset)) return;
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
  if (!hl_verify_callee_parameters(k, c, role, ptrs, n) || !ret) return;
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

void hl_verify_scatter(check_t *k) {
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
  if (!hl_verify_dim_set(k, "inserted_window_dims", &sd->inserted_window_dims, x->rank,
                         not_window) ||
      !hl_verify_dim_set(k, "input_batching_dims", &sd->input_batching_dims, x->rank, not_window) ||
      !hl_verify_dim_set(k, "scatter_dims_to_operand_dims", &sd->scatter_dims_to_operand_dims,
                         x->rank, NULL) ||
      !hl_verify_dim_set(k, "update_window_dims", &sd->update_window_dims, u->rank, upd_window) ||
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

void hl_verify_sort(check_t *k) {
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

void hl_verify_topk(check_t *k) {
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

void hl_verify_map(check_t *k) {
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

void hl_verify_dimension_size(check_t *k, bool set) {
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

void hl_verify_copy_start(check_t *k) {
  const hl_shape_t *x = operand_shape(k->inst, 0), *r = &k->inst->shape;
  if (r->dtype != HL_TUPLE || r->tuple_count != 3 || !hl_shape_equal(&r->tuple[0], x) ||
      !hl_shape_equal(&r->tuple[1], x) || !is_scalar_of(&r->tuple[2], HL_U32))
    report(k, "result shape %s must be (%s, %s, u32[])", shape_str(r, 0), shape_str(x, 1),
           shape_str(x, 1));
}

// copy-done / async-done: element `i` of the start's tuple.
void hl_verify_done(check_t *k, int i, const char *start) {
  const hl_shape_t *t = operand_shape(k->inst, 0);
  if (t->dtype != HL_TUPLE || t->tuple_count <= i) {
    report(k, "operand %s must be the tuple of a %s", shape_str(t, 0), start);
    return;
  }
  expect_result(k, &t->tuple[i], start);
}

void hl_verify_async_start(check_t *k) {
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
  if (hl_verify_callee_parameters(k, c, "wrapped", ptrs, inst->operand_count) &&
      !hl_shape_equal(&c->root->shape, &r->tuple[1]))
    report(k, "wrapped computation '%s' returns %s, result element 1 is %s", c->name,
           shape_str(&c->root->shape, 0), shape_str(&r->tuple[1], 1));
}
