// Collective kernels: all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute, collective-broadcast, ragged-all-to-all and the async
// pairs (all-reduce-start/-done, all-gather-start/-done,
// collective-permute-start/-done).
//
// Kernels only shape the data: they lay the operand out as the
// communicator's contiguous per-member blocks, call the communicator
// (runtime/comm/comm.h; never MPI), and lay the received blocks out as the
// result. When the split / concat dimension is the outermost non-trivial
// one the blocks already are the operand's / result's memory and nothing is
// copied; all-reduce of an operand that dies here runs in place in its
// buffer.
//
// Async: a -start posts the non-blocking transfer into a freshly made result
// (whose buffers it keeps alive in a parked "job") and returns at once; the
// matching -done waits and finishes the layout. Compute placed between the
// two overlaps the transfer.
//
// Without a communicator (one process, 1x1 grid) every group is the process
// itself.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/collective_support.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/strided_copy.h"

//===----------------------------------------------------------------------===//
// Jobs: the transfers of one instruction and what to do once they are done
//===----------------------------------------------------------------------===//

// Received blocks laid out along a dimension of the destination:
// block k (contiguous [outer][cnt][inner]) goes to dst[:, k*cnt:(k+1)*cnt, :]
// of the destination viewed as [outer][n_total][inner] (inner in bytes).
typedef struct unpack {
  char *tmp;
  char *dst;
  int64_t outer, n_total, cnt, inner, blocks;
} unpack_t;

// A received slice (contiguous in tmp) placed into a larger array: dst is
// at the slice's origin, strides are the array's (elements, row-major).
typedef struct slice_unpack {
  const char *tmp;
  char *dst;
  int rank;
  size_t es;
  int64_t dims[HL_MAX_RANK], strides[HL_MAX_RANK];
} slice_unpack_t;

typedef struct job {
  hl_comm_t *comm;
  hl_comm_request_t **reqs;
  int nreq, capreq;
  unpack_t *unpacks;
  int nunpack, capunpack;
  slice_unpack_t *slices;
  int nslice, capslice;
  void **temps;  // freed at the end
  int ntemp, captemp;
  hl_literal_t *keep;  // the start's value: keeps the buffers alive
} job_t;

static hl_status_t grow(void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return NULL;
  int c = *cap ? *cap * 2 : 4;
  while (c < need) c *= 2;
  void *p = hl_realloc(*arr, (size_t)c * elem);
  if (!p) return HL_OOM();
  *arr = p;
  *cap = c;
  return NULL;
}

static hl_status_t job_temp(job_t *j, size_t bytes, void **out) {
  *out = NULL;
  HL_RETURN_IF_ERROR(grow((void **)&j->temps, &j->captemp, j->ntemp + 1, sizeof(void *)));
  void *p = hl_malloc(bytes ? bytes : 1);
  if (!p) return HL_OOM();
  j->temps[j->ntemp++] = p;
  *out = p;
  return NULL;
}

// Where a call's request goes: NULL for a blocking call.
static hl_status_t job_slot(job_t *j, bool async, hl_comm_request_t ***out) {
  *out = NULL;
  if (!async) return NULL;
  HL_RETURN_IF_ERROR(grow((void **)&j->reqs, &j->capreq, j->nreq + 1, sizeof(void *)));
  j->reqs[j->nreq] = NULL;
  *out = &j->reqs[j->nreq++];
  return NULL;
}

static void unpack_blocks(const unpack_t *u) {
  size_t block = (size_t)(u->outer * u->cnt * u->inner), row = (size_t)(u->cnt * u->inner);
  for (int64_t k = 0; k < u->blocks; k++) {
    const char *src = u->tmp + (size_t)k * block;
    for (int64_t a = 0; a < u->outer; a++)
      memcpy(u->dst + (size_t)((a * u->n_total + k * u->cnt) * u->inner), src + (size_t)a * row,
             row);
  }
}

// Waits for every request, lays out the received blocks, frees the job.
static hl_status_t job_finish(job_t *j) {
  hl_status_t st = NULL;
  for (int i = 0; i < j->nreq; i++) {
    if (!j->reqs[i]) continue;
    hl_status_t s = j->comm->vtable->wait(j->comm, j->reqs[i]);
    if (!st) st = s;
    else hl_status_free(s);
  }
  if (!st)
    for (int i = 0; i < j->nunpack; i++) unpack_blocks(&j->unpacks[i]);
  for (int i = 0; i < j->nslice && !st; i++) {
    const slice_unpack_t *u = &j->slices[i];
    int64_t dense[HL_MAX_RANK], acc = 1;
    for (int d = u->rank - 1; d >= 0; d--) {
      dense[d] = acc;
      acc *= u->dims[d];
    }
    hl_strided_copy(u->dst, u->strides, u->tmp, dense, u->rank, u->dims, u->es);
  }
  for (int i = 0; i < j->ntemp; i++) hl_free(j->temps[i]);
  hl_free(j->temps);
  hl_free(j->reqs);
  hl_free(j->unpacks);
  hl_free(j->slices);
  hl_literal_release(j->keep);
  hl_free(j);
  return st;
}

static void job_discard(void *state) { hl_status_free(job_finish(state)); }

static hl_status_t job_new(hl_kernel_context_t *ctx, job_t **out) {
  *out = hl_calloc(1, sizeof(job_t));
  if (!*out) return HL_OOM();
  (*out)->comm = hl_kernel_options(ctx)->comm;
  return NULL;
}

// The end of every collective kernel: a synchronous op (or one that already
// failed with `st`) waits for its job here; a -start parks the job, holding
// its result `*out`, until the matching -done.
static hl_status_t job_complete(hl_kernel_context_t *ctx, const hl_instruction_t *inst, job_t *j,
                                bool async, hl_status_t st, hl_literal_t **out) {
  if (!j) return st;
  if (st || !async) {
    hl_status_t f = job_finish(j);
    if (!st) return f;
    hl_status_free(f);
    return st;
  }
  j->keep = hl_literal_retain(*out);
  st = hl_kernel_pending_put(ctx, inst, j, job_discard);
  if (st) job_discard(j);
  return st;
}

//===----------------------------------------------------------------------===//
// Layout helpers
//===----------------------------------------------------------------------===//

// shape viewed as [outer][dims[d]][inner bytes].
static void split_at(const hl_shape_t *s, int d, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = (int64_t)hl_dtype_size(s->dtype);
  for (int i = 0; i < d; i++) *outer *= s->dims[i];
  for (int i = d + 1; i < s->rank; i++) *inner *= s->dims[i];
}

// Copies the G chunks of src along d (each cnt long) into contiguous blocks.
static void pack_blocks(const char *src, char *dst, int64_t outer, int64_t n_total, int64_t cnt,
                        int64_t inner, int64_t blocks) {
  size_t row = (size_t)(cnt * inner);
  for (int64_t k = 0; k < blocks; k++)
    for (int64_t a = 0; a < outer; a++)
      memcpy(dst + (size_t)((k * outer + a) * cnt * inner),
             src + (size_t)((a * n_total + k * cnt) * inner), row);
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

// operands of a variadic collective: either the array operands themselves,
// and the result one array or a tuple of them.
static const hl_shape_t *result_shape(const hl_shape_t *s, int k) {
  return s->dtype == HL_TUPLE ? &s->tuple[k] : s;
}

static hl_status_t make_result(const hl_shape_t *shape, hl_literal_t **elems, int n,
                               hl_literal_t **out) {
  if (shape->dtype != HL_TUPLE) {
    *out = hl_literal_retain(elems[0]);
    return NULL;
  }
  return hl_literal_create_tuple(elems, n, out);
}

static void release_all(hl_literal_t **elems, int n) {
  for (int k = 0; k < n; k++) hl_literal_release(elems[k]);
}

//===----------------------------------------------------------------------===//
// Reducers
//===----------------------------------------------------------------------===//

// The reducer of an all-reduce / reduce-scatter: its to_apply.
static hl_status_t make_reducer(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_collective_reducer_state_t *state, hl_comm_reducer_t *out) {
  const hl_computation_t *c = hl_instruction_to_apply(inst);
  if (!c) return HL_INVALID("%s: no reducer computation (to_apply)", hl_instruction_location(inst));
  hl_collective_make_reducer(ctx, c, c->root ? c->root->shape.dtype : HL_TUPLE, state, out);
  return NULL;
}

//===----------------------------------------------------------------------===//
// all-reduce (+ start / done)
//===----------------------------------------------------------------------===//

static hl_status_t all_reduce(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, bool async, hl_literal_t **out) {
  int n = inst->operand_count, size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  hl_collective_reducer_state_t rstate;
  hl_comm_reducer_t reducer;
  HL_RETURN_IF_ERROR(make_reducer(ctx, inst, &rstate, &reducer));
  hl_literal_t **res = hl_calloc((size_t)n, sizeof(*res));
  job_t *j = NULL;
  hl_status_t st = res ? job_new(ctx, &j) : HL_OOM();
  for (int k = 0; k < n && !st; k++) {
    const hl_literal_t *x = operands[k];
    const hl_shape_t *rs = result_shape(&inst->shape, k);
    if (!hl_shape_equal(rs, &x->shape)) {
      st = HL_INVALID("%s: operand %d is %s but the result is %s", hl_instruction_location(inst),
                      k, HL_SHAPE_STR(&x->shape), HL_SHAPE_STR(rs));
      break;
    }
    if (size == 1 || !j->comm) {  // reducing one value gives it back
      res[k] = hl_literal_retain(operands[k]);
      continue;
    }
    bool donate = hl_kernel_operand_is_donatable(ctx, k);
    if (donate) res[k] = hl_literal_retain(operands[k]);
    else st = hl_literal_create_uninitialized(rs, &res[k]);
    hl_comm_request_t **slot;
    if (!st) st = job_slot(j, async, &slot);
    if (!st)
      st = j->comm->vtable->all_reduce(j->comm, inst, x->shape.dtype, donate ? res[k]->data : x->data,
                                       res[k]->data, hl_literal_element_count(x), &reducer, slot);
  }
  if (!st) st = make_result(&inst->shape, res, n, out);
  if (res) release_all(res, n);
  hl_free(res);
  return job_complete(ctx, inst, j, async, st, out);
}

hl_status_t hl_kernel_all_reduce(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  return all_reduce(ctx, inst, operands, false, out);
}

hl_status_t hl_kernel_all_reduce_start(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                       hl_literal_t *const *operands, hl_literal_t **out) {
  return all_reduce(ctx, inst, operands, true, out);
}

// The -done of every async pair: waits for the start's job. `element`: the
// tuple element of the start's value that is the result (-1: the value).
static hl_status_t async_done(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, int element, hl_literal_t **out) {
  const hl_instruction_t *start = inst->operands[0];
  job_t *j = hl_kernel_pending_take(ctx, start);
  if (j) HL_RETURN_IF_ERROR(job_finish(j));
  const hl_literal_t *v = operands[0];
  if (element >= 0) {
    if (v->shape.dtype != HL_TUPLE || v->shape.tuple_count <= element)
      return HL_INVALID("%s: operand is %s, expected the tuple of a start instruction",
                        hl_instruction_location(inst), HL_SHAPE_STR(&v->shape));
    v = v->elements[element];
  }
  *out = hl_literal_retain((hl_literal_t *)v);
  return NULL;
}

hl_status_t hl_kernel_all_reduce_done(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, hl_literal_t **out) {
  return async_done(ctx, inst, operands, -1, out);
}

//===----------------------------------------------------------------------===//
// all-gather (+ start / done)
//===----------------------------------------------------------------------===//

static hl_status_t gather_one(hl_kernel_context_t *ctx, job_t *j, const hl_instruction_t *inst,
                              const hl_literal_t *x, const hl_shape_t *rs, int size, bool async,
                              hl_literal_t **out) {
  if (inst->attrs.dimensions.n != 1)
    return HL_INVALID("%s: all-gather needs dimensions={d}", hl_instruction_location(inst));
  int d = (int)inst->attrs.dimensions.v[0];
  if (d < 0 || d >= x->shape.rank || rs->rank != x->shape.rank || rs->dtype != x->shape.dtype)
    return HL_INVALID("%s: dimension %d does not fit operand %s / result %s",
                      hl_instruction_location(inst), d, HL_SHAPE_STR(&x->shape),
                      HL_SHAPE_STR(rs));
  for (int i = 0; i < rs->rank; i++)
    if (rs->dims[i] != x->shape.dims[i] * (i == d ? size : 1))
      return HL_INVALID("%s: result %s is not operand %s gathered over %d processes along "
                        "dimension %d", hl_instruction_location(inst), HL_SHAPE_STR(rs),
                        HL_SHAPE_STR(&x->shape), size, d);
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (size == 1 || !j->comm) {
    memcpy((*out)->data, x->data, x->byte_size);
    return NULL;
  }
  int64_t outer, inner;
  split_at(&x->shape, d, &outer, &inner);
  hl_comm_request_t **slot;
  HL_RETURN_IF_ERROR(job_slot(j, async, &slot));
  if (outer == 1) {
    // Blocks are the result's own slices: gather straight into it. Out of
    // place, not "copy our block to our slot, then MPI_IN_PLACE": MPI's own
    // local copy overlaps the transfer, and ours measured +30 us at 1 MiB on 2
    // ranks (bench_collectives) against +0 for this.
    return j->comm->vtable->all_gather(j->comm, inst, x->data, (*out)->data, x->byte_size, slot);
  }
  void *tmp;
  HL_RETURN_IF_ERROR(job_temp(j, x->byte_size * (size_t)size, &tmp));
  HL_RETURN_IF_ERROR(grow((void **)&j->unpacks, &j->capunpack, j->nunpack + 1, sizeof(unpack_t)));
  j->unpacks[j->nunpack++] = (unpack_t){tmp, (*out)->data, outer, rs->dims[d], x->shape.dims[d],
                                        inner, size};
  return j->comm->vtable->all_gather(j->comm, inst, x->data, tmp, x->byte_size, slot);
}

// start: the result is (operand, result) or ((operands...), (results...)).
static hl_status_t all_gather(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, bool async, hl_literal_t **out) {
  int n = inst->operand_count, size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  const hl_shape_t *rshape = &inst->shape;
  if (async) {
    if (inst->shape.dtype != HL_TUPLE || inst->shape.tuple_count != 2)
      return HL_INVALID("%s: all-gather-start must produce (operands, results), not %s",
                        hl_instruction_location(inst), HL_SHAPE_STR(&inst->shape));
    rshape = &inst->shape.tuple[1];
  }
  if (n > 1 && (rshape->dtype != HL_TUPLE || rshape->tuple_count != n))
    return HL_INVALID("%s: %d operands need a tuple of %d results", hl_instruction_location(inst),
                      n, n);
  hl_literal_t **res = hl_calloc((size_t)n, sizeof(*res));
  job_t *j = NULL;
  hl_status_t st = res ? job_new(ctx, &j) : HL_OOM();
  for (int k = 0; k < n && !st; k++)
    st = gather_one(ctx, j, inst, operands[k], n > 1 ? &rshape->tuple[k] : rshape, size, async,
                    &res[k]);
  hl_literal_t *results = NULL;
  if (!st) st = make_result(rshape, res, n, &results);
  if (!st && async) {
    hl_literal_t *ins = NULL;
    st = n > 1 ? hl_literal_create_tuple(operands, n, &ins) : NULL;
    if (!st) {
      hl_literal_t *pair[2] = {n > 1 ? ins : operands[0], results};
      st = hl_literal_create_tuple(pair, 2, out);
    }
    hl_literal_release(ins);
  } else if (!st) {
    *out = hl_literal_retain(results);
  }
  hl_literal_release(results);
  if (res) release_all(res, n);
  hl_free(res);
  return job_complete(ctx, inst, j, async, st, out);
}

hl_status_t hl_kernel_all_gather(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  return all_gather(ctx, inst, operands, false, out);
}

hl_status_t hl_kernel_all_gather_start(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                       hl_literal_t *const *operands, hl_literal_t **out) {
  return all_gather(ctx, inst, operands, true, out);
}

hl_status_t hl_kernel_all_gather_done(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, hl_literal_t **out) {
  return async_done(ctx, inst, operands, 1, out);
}

//===----------------------------------------------------------------------===//
// reduce-scatter
//===----------------------------------------------------------------------===//

hl_status_t hl_kernel_reduce_scatter(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                     hl_literal_t *const *operands, hl_literal_t **out) {
  int n = inst->operand_count, size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  if (inst->attrs.dimensions.n != 1)
    return HL_INVALID("%s: reduce-scatter needs dimensions={d}", hl_instruction_location(inst));
  int d = (int)inst->attrs.dimensions.v[0];
  hl_collective_reducer_state_t rstate;
  hl_comm_reducer_t reducer;
  HL_RETURN_IF_ERROR(make_reducer(ctx, inst, &rstate, &reducer));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  hl_literal_t **res = hl_calloc((size_t)n, sizeof(*res));
  hl_status_t st = res ? NULL : HL_OOM();
  for (int k = 0; k < n && !st; k++) {
    const hl_literal_t *x = operands[k];
    const hl_shape_t *rs = result_shape(&inst->shape, k);
    bool ok = d >= 0 && d < x->shape.rank && rs->rank == x->shape.rank &&
              rs->dtype == x->shape.dtype;
    for (int i = 0; ok && i < rs->rank; i++)
      ok = rs->dims[i] * (i == d ? size : 1) == x->shape.dims[i];
    if (!ok) {
      st = HL_INVALID("%s: result %s is not operand %s scattered over %d processes along "
                      "dimension %d", hl_instruction_location(inst), HL_SHAPE_STR(rs),
                      HL_SHAPE_STR(&x->shape), size, d);
      break;
    }
    if (size == 1 || !comm) {
      res[k] = hl_literal_retain(operands[k]);
      continue;
    }
    st = hl_literal_create_uninitialized(rs, &res[k]);
    if (st) break;
    int64_t outer, inner;
    split_at(&x->shape, d, &outer, &inner);
    const void *send = x->data;
    void *tmp = NULL;
    if (outer > 1) {
      tmp = hl_malloc(x->byte_size);
      if (!tmp) {
        st = HL_OOM();
        break;
      }
      pack_blocks(x->data, tmp, outer, x->shape.dims[d], rs->dims[d], inner, size);
      send = tmp;
    }
    st = comm->vtable->reduce_scatter(comm, inst, x->shape.dtype, send, res[k]->data,
                                      hl_literal_element_count(res[k]), &reducer, NULL);
    hl_free(tmp);
  }
  if (!st) st = make_result(&inst->shape, res, n, out);
  if (res) release_all(res, n);
  hl_free(res);
  return st;
}

//===----------------------------------------------------------------------===//
// all-to-all
//===----------------------------------------------------------------------===//

// Tuple form: operand k goes to member k; result element j comes from j.
static hl_status_t all_to_all_tuple(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                    hl_literal_t *const *operands, int size,
                                    hl_literal_t **out) {
  int n = inst->operand_count;
  if (n != size || inst->shape.dtype != HL_TUPLE || inst->shape.tuple_count != n)
    return HL_INVALID("%s: all-to-all without dimensions needs one operand per group member "
                      "(%d) and a tuple of as many results", hl_instruction_location(inst), size);
  size_t bytes = operands[0]->byte_size;
  for (int k = 0; k < n; k++)
    if (!hl_shape_equal(&operands[k]->shape, &operands[0]->shape) ||
        !hl_shape_equal(&inst->shape.tuple[k], &operands[0]->shape))
      return HL_INVALID("%s: the tuple form needs operands and results of one shape",
                        hl_instruction_location(inst));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  if (size == 1 || !comm) return hl_literal_create_tuple(operands, n, out);
  char *send = hl_malloc(bytes * (size_t)n), *recv = hl_malloc(bytes * (size_t)n);
  hl_literal_t **res = hl_calloc((size_t)n, sizeof(*res));
  hl_status_t st = send && recv && res ? NULL : HL_OOM();
  for (int k = 0; k < n && !st; k++) memcpy(send + (size_t)k * bytes, operands[k]->data, bytes);
  if (!st) st = comm->vtable->all_to_all(comm, inst, send, recv, bytes, NULL);
  for (int k = 0; k < n && !st; k++) {
    st = hl_literal_create_uninitialized(&operands[0]->shape, &res[k]);
    if (!st) memcpy(res[k]->data, recv + (size_t)k * bytes, bytes);
  }
  if (!st) st = hl_literal_create_tuple(res, n, out);
  if (res) release_all(res, n);
  hl_free(res);
  hl_free(send);
  hl_free(recv);
  return st;
}

hl_status_t hl_kernel_all_to_all(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  int size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  if (inst->attrs.dimensions.n == 0) return all_to_all_tuple(ctx, inst, operands, size, out);
  // Array form: dimensions={split_dim}; XLA's all-to-all splits and
  // concatenates along the same dimension.
  if (inst->operand_count != 1 || inst->attrs.dimensions.n != 1)
    return HL_INVALID("%s: the array form of all-to-all takes one operand and dimensions={d}",
                      hl_instruction_location(inst));
  const hl_literal_t *x = operands[0];
  int s = (int)inst->attrs.dimensions.v[0], c = s;
  const hl_shape_t *rs = &inst->shape;
  if (s < 0 || s >= x->shape.rank || x->shape.dims[s] % size != 0 || !hl_shape_equal(rs, &x->shape))
    return HL_INVALID("%s: operand %s cannot be split %d ways along dimension %d into result %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(&x->shape), size, s,
                      HL_SHAPE_STR(rs));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  if (size == 1 || !comm) {
    *out = hl_literal_retain(operands[0]);
    return NULL;
  }
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  int64_t so, si, co, ci;
  split_at(&x->shape, s, &so, &si);
  split_at(rs, c, &co, &ci);
  int64_t cnt = x->shape.dims[s] / size;
  size_t block = x->byte_size / (size_t)size;
  const void *send = x->data;
  void *recv = (*out)->data, *stmp = NULL, *rtmp = NULL;
  hl_status_t st = NULL;
  if (so > 1) {
    stmp = hl_malloc(x->byte_size);
    if (!stmp) st = HL_OOM();
    else pack_blocks(x->data, stmp, so, x->shape.dims[s], cnt, si, size);
    send = stmp;
  }
  if (!st && co > 1) {
    rtmp = hl_malloc(x->byte_size);
    if (!rtmp) st = HL_OOM();
    recv = rtmp;
  }
  if (!st) st = comm->vtable->all_to_all(comm, inst, send, recv, block, NULL);
  if (!st && rtmp) {
    unpack_t u = {rtmp, (*out)->data, co, rs->dims[c], rs->dims[c] / size, ci, size};
    unpack_blocks(&u);
  }
  hl_free(stmp);
  hl_free(rtmp);
  if (st) {
    hl_literal_release(*out);
    *out = NULL;
  }
  return st;
}

//===----------------------------------------------------------------------===//
// collective-permute (+ start / done), collective-broadcast
//===----------------------------------------------------------------------===//

// Without a communicator: the single process is its own source when a pair
// {0,0} exists, otherwise it gets zeros.
static bool self_pair(const hl_instruction_t *inst) {
  for (int i = 0; i < inst->attrs.source_target_count; i++)
    if (inst->attrs.source_target_pairs[i].source == 0 &&
        inst->attrs.source_target_pairs[i].target == 0)
      return true;
  return false;
}

//--- The combined (in-place) form -------------------------------------------
//
// collective-permute(input, output, input_start_indices, output_start_indices),
// slice_sizes={{...},...} (XLA's HloCollectivePermuteInstruction with
// inplace()): input / output are arrays or tuples of as many arrays; the
// result is a copy of `output` in which every process that is a target
// writes, at its own output start indices, the slice of its source's input
// at the source's input start indices. Each buffer's start indices are a
// tuple of rank scalars (one slice), or a tuple of K such tuples (K slices;
// source_target_pairs then split into K equal consecutive parts, part k
// moving slice k: XLA's verifier allows each source / target K times).
// slice_sizes holds one list per (buffer, slice), buffer-major. Start
// indices are clamped so the slice fits, as dynamic-slice does. Regions
// nobody writes keep the output operand's values (no zeros: it is an
// update in place).

// Start index of slice k (of `slots`) of a buffer of `rank` from its start
// indices `e`, clamped to [0, dims - sizes].
static hl_status_t slice_starts(const hl_instruction_t *inst, const hl_literal_t *e, int k,
                                int slots, const hl_shape_t *buf, const int64_t *sizes,
                                const char *what, int64_t *out) {
  if (e->shape.dtype == HL_TUPLE && e->shape.tuple_count > 0 &&
      e->elements[0]->shape.dtype == HL_TUPLE) {
    if (e->shape.tuple_count != slots)
      return HL_INVALID("%s: %s has %d index tuples, the input's %d", hl_instruction_location(inst),
                        what, e->shape.tuple_count, slots);
    e = e->elements[k];
  }
  if (e->shape.dtype != HL_TUPLE || e->shape.tuple_count != buf->rank)
    return HL_INVALID("%s: %s must be a tuple of %d integer scalars (one per dimension of %s)",
                      hl_instruction_location(inst), what, buf->rank, HL_SHAPE_STR(buf));
  for (int d = 0; d < buf->rank; d++) {
    const hl_literal_t *x = e->elements[d];
    if (x->shape.dtype == HL_TUPLE || !hl_dtype_is_integer(x->shape.dtype) ||
        hl_literal_element_count(x) != 1)
      return HL_INVALID("%s: %s entry %d is %s, expected an integer scalar",
                        hl_instruction_location(inst), what, d, HL_SHAPE_STR(&x->shape));
    int64_t v = hl_literal_get_s64(x, 0), hi = buf->dims[d] - sizes[d];
    out[d] = v < 0 ? 0 : v > hi ? hi : v;
  }
  return NULL;
}

static void dense_strides(const hl_shape_t *s, int64_t *strides) {
  int64_t acc = 1;
  for (int d = s->rank - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= s->dims[d];
  }
}

static int64_t origin(const int64_t *start, const int64_t *strides, int rank) {
  int64_t o = 0;
  for (int d = 0; d < rank; d++) o += start[d] * strides[d];
  return o;
}

// Without a communicator: the single process is its own source in part k
// when that part holds the pair {0,0}.
static bool self_pair_in(const hl_instruction_t *inst, int k, int slots) {
  int per = inst->attrs.source_target_count / slots;
  for (int i = k * per; i < (k + 1) * per; i++)
    if (inst->attrs.source_target_pairs[i].source == 0 &&
        inst->attrs.source_target_pairs[i].target == 0)
      return true;
  return false;
}

// Moves slice k of one buffer: packs it, posts the exchange into job j, and
// registers where the received slice goes.
static hl_status_t permute_slice(hl_kernel_context_t *ctx, job_t *j, const hl_instruction_t *inst,
                                 int k, int slots, const hl_literal_t *x, hl_literal_t *dst,
                                 const hl_literal_t *in_idx, const hl_literal_t *out_idx,
                                 const int64_t *sizes, bool async) {
  (void)ctx;
  int rank = x->shape.rank;
  if (dst->shape.rank != rank || dst->shape.dtype != x->shape.dtype)
    return HL_INVALID("%s: input %s and output %s differ in rank or type",
                      hl_instruction_location(inst), HL_SHAPE_STR(&x->shape),
                      HL_SHAPE_STR(&dst->shape));
  size_t es = hl_dtype_size(x->shape.dtype);
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    if (sizes[d] < 0 || sizes[d] > x->shape.dims[d] || sizes[d] > dst->shape.dims[d])
      return HL_INVALID("%s: slice_sizes entry %d (%lld) does not fit input %s and output %s",
                        hl_instruction_location(inst), d, (long long)sizes[d],
                        HL_SHAPE_STR(&x->shape), HL_SHAPE_STR(&dst->shape));
    n *= sizes[d];
  }
  int64_t in_start[HL_MAX_RANK], out_start[HL_MAX_RANK];
  int64_t in_str[HL_MAX_RANK], out_str[HL_MAX_RANK], dense[HL_MAX_RANK];
  HL_RETURN_IF_ERROR(slice_starts(inst, in_idx, k, slots, &x->shape, sizes,
                                  "input_start_indices", in_start));
  HL_RETURN_IF_ERROR(slice_starts(inst, out_idx, k, slots, &dst->shape, sizes,
                                  "output_start_indices", out_start));
  dense_strides(&x->shape, in_str);
  dense_strides(&dst->shape, out_str);
  hl_shape_t slice = x->shape;
  for (int d = 0; d < rank; d++) slice.dims[d] = sizes[d];
  dense_strides(&slice, dense);
  size_t bytes = (size_t)n * es;
  char *dst_at = (char *)dst->data + (size_t)origin(out_start, out_str, rank) * es;
  const char *src_at = (const char *)x->data + (size_t)origin(in_start, in_str, rank) * es;
  if (!j->comm) {
    if (self_pair_in(inst, k, slots))
      hl_strided_copy(dst_at, out_str, src_at, in_str, rank, sizes, es);
    return NULL;
  }
  void *send, *recv;
  HL_RETURN_IF_ERROR(job_temp(j, bytes, &send));
  HL_RETURN_IF_ERROR(job_temp(j, bytes, &recv));
  if (n > 0) hl_strided_copy(send, dense, src_at, in_str, rank, sizes, es);
  hl_comm_request_t **slot;
  HL_RETURN_IF_ERROR(job_slot(j, async, &slot));
  int source = -1;
  HL_RETURN_IF_ERROR(j->comm->vtable->collective_permute_slot(j->comm, inst, k, slots, send, recv,
                                                              bytes, &source, slot));
  if (source < 0 || n == 0) return NULL;
  HL_RETURN_IF_ERROR(
      grow((void **)&j->slices, &j->capslice, j->nslice + 1, sizeof(slice_unpack_t)));
  slice_unpack_t *u = &j->slices[j->nslice++];
  u->tmp = recv;
  u->dst = dst_at;
  u->rank = rank;
  u->es = es;
  memcpy(u->dims, sizes, (size_t)rank * sizeof(int64_t));
  memcpy(u->strides, out_str, (size_t)rank * sizeof(int64_t));
  return NULL;
}

static hl_status_t permute_combined(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                    hl_literal_t *const *operands, bool async,
                                    hl_literal_t **out) {
  if (inst->operand_count != 4)
    return HL_INVALID("%s: the combined form (slice_sizes) takes (input, output, "
                      "input_start_indices, output_start_indices), not %d operands",
                      hl_instruction_location(inst), inst->operand_count);
  const hl_literal_t *in = operands[0], *outp = operands[1];
  bool tup = in->shape.dtype == HL_TUPLE;
  int nb = tup ? in->shape.tuple_count : 1;
  if (tup != (outp->shape.dtype == HL_TUPLE) || (tup && outp->shape.tuple_count != nb) ||
      (tup && (operands[2]->shape.dtype != HL_TUPLE || operands[2]->shape.tuple_count != nb ||
               operands[3]->shape.dtype != HL_TUPLE || operands[3]->shape.tuple_count != nb)))
    return HL_INVALID("%s: input %s, output %s and their start indices must be arrays or "
                      "tuples of as many", hl_instruction_location(inst),
                      HL_SHAPE_STR(&in->shape), HL_SHAPE_STR(&outp->shape));
  const hl_shape_t *rshape = &inst->shape;
  if (async) {
    if (inst->shape.dtype != HL_TUPLE || inst->shape.tuple_count < 2)
      return HL_INVALID("%s: collective-permute-start must produce (input, output, ...), not %s",
                        hl_instruction_location(inst), HL_SHAPE_STR(&inst->shape));
    rshape = &inst->shape.tuple[1];
  }
  if (!hl_shape_equal(rshape, &outp->shape))
    return HL_INVALID("%s: result %s is not the output operand's shape %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(rshape),
                      HL_SHAPE_STR(&outp->shape));
  int slots = hl_instruction_permute_slot_count(inst);
  const hl_i64_list_t *sz = &inst->attrs.dynamic_slice_sizes;
  int64_t want = 0;
  for (int b = 0; b < nb; b++) want += (int64_t)slots * (tup ? in->elements[b] : in)->shape.rank;
  if (sz->n != want)
    return HL_INVALID("%s: slice_sizes has %d entries, expected %lld (%d slice(s) per buffer, one "
                      "entry per dimension)", hl_instruction_location(inst), sz->n,
                      (long long)want, slots);
  if (inst->attrs.source_target_count % slots != 0)
    return HL_INVALID("%s: %d source_target_pairs do not split into %d equal parts",
                      hl_instruction_location(inst), inst->attrs.source_target_count, slots);
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  if (!o->comm && o->num_replicas * o->num_partitions != 1)
    return HL_INVALID("%s: a %lldx%lld grid needs a communicator (run it with hlo-launch)",
                      hl_instruction_location(inst), (long long)o->num_replicas,
                      (long long)o->num_partitions);
  hl_literal_t *res = NULL;
  hl_status_t st;
  if (!tup && operands[0] != operands[1] && hl_kernel_operand_is_donatable(ctx, 1)) {
    res = hl_literal_retain(operands[1]);
    st = NULL;
  } else {
    st = hl_literal_clone(outp, &res);
  }
  job_t *j = NULL;
  if (!st) st = job_new(ctx, &j);
  // Slice-major, buffer-minor: the same order on every process, so
  // messages between one pair of processes match in sequence.
  for (int k = 0; k < slots && !st; k++) {
    const int64_t *sizes = sz->v;
    for (int b = 0; b < nb && !st; b++) {
      const hl_literal_t *x = tup ? in->elements[b] : in;
      st = permute_slice(ctx, j, inst, k, slots, x, tup ? res->elements[b] : res,
                         tup ? operands[2]->elements[b] : operands[2],
                         tup ? operands[3]->elements[b] : operands[3],
                         sizes + (size_t)k * (size_t)x->shape.rank, async);
      sizes += (size_t)slots * (size_t)x->shape.rank;
    }
  }
  if (!st && async) {
    int tc = inst->shape.tuple_count;
    hl_literal_t **parts = hl_calloc((size_t)tc, sizeof(*parts));
    if (!parts) st = HL_OOM();
    if (!st) {
      parts[0] = hl_literal_retain(operands[0]);
      parts[1] = hl_literal_retain(res);
    }
    for (int i = 2; i < tc && !st; i++) st = hl_literal_create(&inst->shape.tuple[i], &parts[i]);
    if (!st) st = hl_literal_create_tuple(parts, tc, out);
    if (parts) release_all(parts, tc);
    hl_free(parts);
  } else if (!st) {
    *out = hl_literal_retain(res);
  }
  hl_literal_release(res);
  return job_complete(ctx, inst, j, async, st, out);
}

static hl_status_t permute(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, bool async, hl_literal_t **out) {
  // XLA: the form with slice_sizes is the in-place one; without, any
  // number of operands is the variadic form (a tuple of results).
  if (inst->attrs.dynamic_slice_sizes.n > 0)
    return permute_combined(ctx, inst, operands, async, out);
  int n = inst->operand_count;
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  if (!o->comm && o->num_replicas * o->num_partitions != 1)
    return HL_INVALID("%s: a %lldx%lld grid needs a communicator (run it with hlo-launch)",
                      hl_instruction_location(inst), (long long)o->num_replicas,
                      (long long)o->num_partitions);
  const hl_shape_t *rshape = &inst->shape;
  if (async) {
    // (input, output[, contexts...]): the output is element 1.
    if (inst->shape.dtype != HL_TUPLE || inst->shape.tuple_count < 2)
      return HL_INVALID("%s: collective-permute-start must produce (input, output, ...), not %s",
                        hl_instruction_location(inst), HL_SHAPE_STR(&inst->shape));
    rshape = &inst->shape.tuple[1];
  }
  hl_literal_t **res = hl_calloc((size_t)n, sizeof(*res));
  job_t *j = NULL;
  hl_status_t st = res ? job_new(ctx, &j) : HL_OOM();
  for (int k = 0; k < n && !st; k++) {
    const hl_literal_t *x = operands[k];
    const hl_shape_t *rs = n > 1 ? (rshape->dtype == HL_TUPLE && rshape->tuple_count == n
                                        ? &rshape->tuple[k] : NULL)
                                 : rshape;
    if (!rs || !hl_shape_equal(rs, &x->shape)) {
      st = HL_INVALID("%s: operand %d is %s, which the result does not match",
                      hl_instruction_location(inst), k, HL_SHAPE_STR(&x->shape));
      break;
    }
    if (!j->comm) {
      st = self_pair(inst) ? hl_literal_clone(x, &res[k]) : hl_literal_create(rs, &res[k]);
      continue;
    }
    st = hl_literal_create_uninitialized(rs, &res[k]);
    hl_comm_request_t **slot;
    if (!st) st = job_slot(j, async, &slot);
    if (!st)
      st = j->comm->vtable->collective_permute(j->comm, inst, x->data, res[k]->data, x->byte_size,
                                               slot);
  }
  hl_literal_t *results = NULL;
  if (!st) st = make_result(rshape, res, n, &results);
  if (!st && async) {
    int tc = inst->shape.tuple_count;
    hl_literal_t **parts = hl_calloc((size_t)tc, sizeof(*parts));
    hl_literal_t *ins = NULL;
    if (!parts) st = HL_OOM();
    if (!st && n > 1) st = hl_literal_create_tuple(operands, n, &ins);
    if (!st) {
      parts[0] = hl_literal_retain(n > 1 ? ins : operands[0]);
      parts[1] = hl_literal_retain(results);
    }
    for (int i = 2; i < tc && !st; i++) st = hl_literal_create(&inst->shape.tuple[i], &parts[i]);
    if (!st) st = hl_literal_create_tuple(parts, tc, out);
    if (parts) release_all(parts, tc);
    hl_free(parts);
    hl_literal_release(ins);
  } else if (!st) {
    *out = hl_literal_retain(results);
  }
  hl_literal_release(results);
  if (res) release_all(res, n);
  hl_free(res);
  return job_complete(ctx, inst, j, async, st, out);
}

hl_status_t hl_kernel_collective_permute(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                         hl_literal_t *const *operands, hl_literal_t **out) {
  return permute(ctx, inst, operands, false, out);
}

hl_status_t hl_kernel_collective_permute_start(hl_kernel_context_t *ctx,
                                               const hl_instruction_t *inst,
                                               hl_literal_t *const *operands,
                                               hl_literal_t **out) {
  return permute(ctx, inst, operands, true, out);
}

hl_status_t hl_kernel_collective_permute_done(hl_kernel_context_t *ctx,
                                              const hl_instruction_t *inst,
                                              hl_literal_t *const *operands, hl_literal_t **out) {
  return async_done(ctx, inst, operands, 1, out);
}

hl_status_t hl_kernel_collective_broadcast(hl_kernel_context_t *ctx,
                                           const hl_instruction_t *inst,
                                           hl_literal_t *const *operands, hl_literal_t **out) {
  int n = inst->operand_count, size, index;
  // has_dynamic_root: the last operand holds each data operand's root
  // (collective_broadcast_root.c); otherwise every root is position 0.
  int data = inst->attrs.has_dynamic_root ? n - 1 : n;
  if (data < 1)
    return HL_INVALID("%s: collective-broadcast needs an operand to broadcast",
                      hl_instruction_location(inst));
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  hl_literal_t **res = hl_calloc((size_t)data, sizeof(*res));
  int32_t *roots = hl_calloc((size_t)data, sizeof(*roots));
  hl_status_t st = res && roots ? NULL : HL_OOM();
  if (!st && inst->attrs.has_dynamic_root && index >= 0)
    st = hl_collective_dynamic_roots(ctx, inst, operands, data, size, roots);
  for (int k = 0; k < data && !st; k++) {
    const hl_literal_t *x = operands[k];
    const hl_shape_t *rs = result_shape(&inst->shape, k);
    if (!hl_shape_equal(rs, &x->shape)) {
      st = HL_INVALID("%s: operand %d is %s but the result is %s", hl_instruction_location(inst),
                      k, HL_SHAPE_STR(&x->shape), HL_SHAPE_STR(rs));
      break;
    }
    if (roots[k] != 0 && index >= 0) {  // a dynamic root other than position 0
      st = hl_literal_create_uninitialized(rs, &res[k]);
      if (!st)
        st = hl_collective_broadcast_from(comm, inst, roots[k], size, x->data, res[k]->data,
                                          x->byte_size);
      continue;
    }
    if (!comm || index == 0) {
      // The group's root keeps its operand as its result (no copy); MPI
      // only reads the root's buffer.
      res[k] = hl_literal_retain(operands[k]);
      if (comm)
        st = comm->vtable->collective_broadcast(comm, inst, x->data, x->data, x->byte_size,
                                                NULL);
      continue;
    }
    st = hl_literal_create_uninitialized(rs, &res[k]);
    if (!st)
      st = comm->vtable->collective_broadcast(comm, inst, x->data, res[k]->data, x->byte_size,
                                              NULL);
  }
  if (!st) st = make_result(&inst->shape, res, data, out);
  if (res) release_all(res, data);
  hl_free(res);
  hl_free(roots);
  return st;
}

//===----------------------------------------------------------------------===//
// ragged-all-to-all
//===----------------------------------------------------------------------===//

// (input, output, input_offsets, send_sizes, output_offsets, recv_sizes), as
// XLA's operation semantics: for every member j of the group this process
// sends send_sizes[j] rows of input starting at row input_offsets[j] to j,
// which writes them into its output starting at row output_offsets[j] (the
// sender's value); recv_sizes[j] is how many rows this process gets from j.
// The rows' placement on the receiver is the sender's output_offsets, so the
// offsets are exchanged first (an all-to-all of one value per member).
// Rows of the output nobody writes keep the output operand's values.
static int64_t read_index(const hl_literal_t *l, int64_t i) { return hl_literal_get_s64(l, i); }

hl_status_t hl_kernel_ragged_all_to_all(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, hl_literal_t **out) {
  int size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  const hl_literal_t *in = operands[0], *outp = operands[1];
  if (inst->operand_count != 6 || in->shape.rank < 1 || outp->shape.rank != in->shape.rank ||
      outp->shape.dtype != in->shape.dtype || !hl_shape_equal(&inst->shape, &outp->shape))
    return HL_INVALID("%s: ragged-all-to-all takes (input, output, input_offsets, send_sizes, "
                      "output_offsets, recv_sizes) with input and output of one rank and type",
                      hl_instruction_location(inst));
  // Offsets and sizes: rank 1 or 2, all of one shape (XLA's verifier). With
  // several updates per peer (G*m entries, e.g. s32[G,m]), update u of peer
  // j is entry j*m + u in row-major order, as XLA's GPU kernel indexes them.
  for (int k = 2; k < 6; k++) {
    const hl_literal_t *l = operands[k];
    int64_t n = l->shape.dtype == HL_TUPLE ? 0 : hl_literal_element_count(l);
    if ((l->shape.rank != 1 && l->shape.rank != 2) || !hl_dtype_is_integer(l->shape.dtype) ||
        n % size != 0 || n == 0)
      return HL_INVALID("%s: operand %d must be a 1-d or 2-d integer array with a multiple of the "
                        "group size (%d) entries", hl_instruction_location(inst), k, size);
    if (k > 2 && !hl_shape_equal(&l->shape, &operands[2]->shape))
      return HL_INVALID("%s: offsets and sizes must all have one shape (%s, operand %d is %s)",
                        hl_instruction_location(inst), HL_SHAPE_STR(&operands[2]->shape), k,
                        HL_SHAPE_STR(&l->shape));
  }
  int64_t m = hl_literal_element_count(operands[2]) / size;
  int64_t row_in = (int64_t)in->byte_size / (in->shape.dims[0] ? in->shape.dims[0] : 1);
  int64_t row_out = (int64_t)outp->byte_size / (outp->shape.dims[0] ? outp->shape.dims[0] : 1);
  if (in->shape.dims[0] == 0) row_in = row_out;
  HL_RETURN_IF_ERROR(hl_literal_clone(outp, out));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  int64_t total = m * size;
  int64_t *v = hl_calloc((size_t)total * 6, sizeof(int64_t));
  if (!v) return HL_OOM();
  int64_t *in_off = v, *ssz = v + total, *out_off = v + 2 * total, *rsz = v + 3 * total;
  int64_t *peer_off = v + 4 * total;  // where each sender wants its rows in our output
  hl_status_t st = NULL;
  for (int64_t i = 0; i < total; i++) {
    in_off[i] = read_index(operands[2], i);
    ssz[i] = read_index(operands[3], i);
    out_off[i] = read_index(operands[4], i);
    rsz[i] = read_index(operands[5], i);
  }
  if (!comm || size == 1) {
    memcpy(peer_off, out_off, (size_t)total * sizeof(int64_t));
  } else {
    // Entry j*m+u of out_off goes to peer j; we get peer j's entries for us.
    st = comm->vtable->all_to_all(comm, inst, out_off, peer_off, (size_t)m * sizeof(int64_t),
                                  NULL);
  }
  for (int64_t i = 0; i < total && !st; i++) {
    if (in_off[i] < 0 || ssz[i] < 0 || in_off[i] + ssz[i] > in->shape.dims[0])
      st = HL_INVALID("%s: send rows [%lld, %lld) are outside the input's %lld rows",
                      hl_instruction_location(inst), (long long)in_off[i],
                      (long long)(in_off[i] + ssz[i]), (long long)in->shape.dims[0]);
    else if (peer_off[i] < 0 || rsz[i] < 0 || peer_off[i] + rsz[i] > outp->shape.dims[0])
      st = HL_INVALID("%s: receive rows [%lld, %lld) are outside the output's %lld rows",
                      hl_instruction_location(inst), (long long)peer_off[i],
                      (long long)(peer_off[i] + rsz[i]), (long long)outp->shape.dims[0]);
  }
  if (!st && row_in != row_out)
    st = HL_INVALID("%s: input and output rows differ in size", hl_instruction_location(inst));
  if (!st) {
    if (!comm || size == 1) {
      for (int64_t u = 0; u < m; u++)
        memcpy((char *)(*out)->data + (size_t)(peer_off[u] * row_out),
               (const char *)in->data + (size_t)(in_off[u] * row_in), (size_t)(ssz[u] * row_in));
    } else {
      // One exchange per update index u: member j's part is entry j*m + u.
      int64_t *sb = hl_malloc((size_t)size * 4 * sizeof(int64_t));
      if (!sb) st = HL_OOM();
      for (int64_t u = 0; u < m && !st; u++) {
        int64_t *so = sb, *sbytes = sb + size, *ro = sb + 2 * size, *rbytes = sb + 3 * size;
        for (int jj = 0; jj < size; jj++) {
          int64_t e = jj * m + u;
          so[jj] = in_off[e] * row_in;
          sbytes[jj] = ssz[e] * row_in;
          ro[jj] = peer_off[e] * row_out;
          rbytes[jj] = rsz[e] * row_out;
        }
        st = comm->vtable->ragged_all_to_all(comm, inst, in->data, so, sbytes, (*out)->data, ro,
                                             rbytes, NULL);
      }
      hl_free(sb);
    }
  }
  hl_free(v);
  if (st) {
    hl_literal_release(*out);
    *out = NULL;
  }
  return st;
}
