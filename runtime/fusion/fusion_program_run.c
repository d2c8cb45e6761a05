// Running blocked fusion programs: per block, each output pulls its
// operands through eval(), which memoizes contiguous evaluations and
// allocates from a per-worker bump arena reset after every block; copy
// programs move blocks of rows with the strided copy engine.
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_program_internal.h"
#include "runtime/fusion/fusion_rows.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/strided_copy.h"

//===----------------------------------------------------------------------===//
// Run
//===----------------------------------------------------------------------===//

typedef struct run_state {
  hl_fusion_program_t *p;
  const void **param_data;
  char **out_data;  // per output
  int64_t blocks;
  _Atomic int64_t turn;  // ordered runs: the block whose reductions combine next
} run_state_t;

// One block of a copy program: output rows [start / row, + m / row).
static void copy_block(const hl_fusion_program_t *p, const void *const *params, char *out,
                       int64_t start, int64_t m) {
  const node_t *n = &p->nodes[p->outs[0].node];
  int64_t r0 = start / p->copy_row, dims[HL_MAX_RANK], dst_strides[HL_MAX_RANK];
  memcpy(dims, n->dims, sizeof(int64_t) * (size_t)n->rank);
  dims[0] = m / p->copy_row;
  strides_of(n->rank, n->dims, dst_strides);
  const char *src = (const char *)params[p->nodes[n->ops[0]].param] +
                    (n->offset + r0 * n->stride[0]) * (int64_t)n->es;
  hl_strided_copy(out + (size_t)start * n->es, dst_strides, src, n->stride, n->rank, dims, n->es);
}

void *hl_fp_arena_alloc(workspace_t *w, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  int best = -1;
  for (int i = 0; i < w->free_count; i++)
    if (w->free_list[i].bytes >= bytes && (best < 0 || w->free_list[i].bytes < w->free_list[best].bytes))
      best = i;
  if (best >= 0) {
    void *r = w->free_list[best].ptr;
    w->free_list[best] = w->free_list[--w->free_count];
    return r;
  }
  if (w->used + bytes <= w->cap) {
    void *r = w->arena + w->used;
    w->used += bytes;
    return r;
  }
  // Beyond the arena (a fresh workspace's first block, or a program that
  // takes more than those before it): a separate allocation, released when
  // the next block starts, which then grows the arena to what this block took.
  if (w->extra_count == w->extra_cap) {
    int cap = w->extra_cap ? 2 * w->extra_cap : 8;
    void **e = hl_realloc(w->extra, sizeof(void *) * (size_t)cap);
    if (!e) abort();  // out of memory in the middle of a block: nothing to unwind to
    w->extra = e;
    w->extra_cap = cap;
  }
  void *r = hl_malloc(bytes);
  if (!r) abort();
  w->extra[w->extra_count++] = r;
  w->extra_bytes += bytes;
  return r;
}

// The arena at `bytes` at least (between blocks: nothing points into it);
// false when it already was or when out of memory (blocks then take extra
// allocations as before, so a run never fails on it).
static bool grow_arena(workspace_t *w, size_t bytes) {
  if (bytes <= w->cap) return false;
  bytes = (bytes + 4095) & ~(size_t)4095;
  void *a = hl_malloc(bytes);
  if (!a) return false;
  hl_free(w->arena);
  w->arena = a;
  w->cap = bytes;
  return true;
}

static void free_extras(workspace_t *w) {
  for (int i = 0; i < w->extra_count; i++) hl_free(w->extra[i]);
  w->extra_count = 0;
  w->extra_bytes = 0;
}

// Ends a block: a block that overflowed the arena grows it to what the
// block took (the same allocations in the same order then fit: a value
// never depends on where its buffer is), so the arena settles at the
// largest block's real need of the programs sharing it.
static void workspace_settle(workspace_t *w) {
  if (!w->extra_count) return;
  size_t took = w->used + w->extra_bytes;
  free_extras(w);
  w->used = 0;
  w->free_count = 0;
  grow_arena(w, took);
}

// Starts a block: the arena is empty and memoized values are stale.
static void workspace_reset(workspace_t *w) {
  workspace_settle(w);
  w->used = 0;
  w->free_count = 0;
  w->gen++;
}

static void gather(size_t es, const char *base, const int64_t *idx, void *dst, int64_t m) {
  switch (es) {
    case 1:
      for (int64_t i = 0; i < m; i++) ((uint8_t *)dst)[i] = ((const uint8_t *)base)[idx[i]];
      break;
    case 2:
      for (int64_t i = 0; i < m; i++) ((uint16_t *)dst)[i] = ((const uint16_t *)base)[idx[i]];
      break;
    case 4:
      for (int64_t i = 0; i < m; i++) ((uint32_t *)dst)[i] = ((const uint32_t *)base)[idx[i]];
      break;
    case 8:
      for (int64_t i = 0; i < m; i++) ((uint64_t *)dst)[i] = ((const uint64_t *)base)[idx[i]];
      break;
    default:
      for (int64_t i = 0; i < m; i++)
        memcpy((char *)dst + (size_t)i * es, base + (size_t)idx[i] * es, es);
  }
}

static void splat(size_t es, const void *v, void *dst, int64_t m) {
  switch (es) {
    case 1:
      memset(dst, *(const uint8_t *)v, (size_t)m);
      break;
    case 2: {
      uint16_t x;
      memcpy(&x, v, 2);
      for (int64_t i = 0; i < m; i++) ((uint16_t *)dst)[i] = x;
      break;
    }
    case 4: {
      uint32_t x;
      memcpy(&x, v, 4);
      for (int64_t i = 0; i < m; i++) ((uint32_t *)dst)[i] = x;
      break;
    }
    case 8: {
      uint64_t x;
      memcpy(&x, v, 8);
      for (int64_t i = 0; i < m; i++) ((uint64_t *)dst)[i] = x;
      break;
    }
    default:
      for (int64_t i = 0; i < m; i++) memcpy((char *)dst + (size_t)i * es, v, es);
  }
}

// Operand indices of a K_MAP node for its elements start.. (idx NULL) or idx[].
void hl_fp_map_indices(const node_t *n, int64_t start, const int64_t *idx, int64_t m,
                       int64_t *oi) {
  int r = n->rank;
  if (r == 0) {
    for (int64_t i = 0; i < m; i++) oi[i] = n->offset;
    return;
  }
  if (idx) {
    for (int64_t i = 0; i < m; i++) {
      int64_t rest = idx[i], off = n->offset;
      for (int d = r - 1; d >= 0; d--) {
        off += (rest % n->dims[d]) * n->stride[d];
        rest /= n->dims[d];
      }
      oi[i] = off;
    }
    return;
  }
  // Strided walk: one division per block, then carries.
  int64_t ctr[HL_MAX_RANK], rest = start, off = n->offset;
  for (int d = r - 1; d >= 0; d--) {
    ctr[d] = rest % n->dims[d];
    rest /= n->dims[d];
    off += ctr[d] * n->stride[d];
  }
  int64_t inner = n->dims[r - 1], s = n->stride[r - 1];
  int64_t i = 0;
  while (i < m) {
    int64_t run = inner - ctr[r - 1];
    if (run > m - i) run = m - i;
    for (int64_t j = 0; j < run; j++) oi[i + j] = off + j * s;
    i += run;
    off += run * s;
    ctr[r - 1] += run;
    for (int d = r - 1; d > 0 && ctr[d] == n->dims[d]; d--) {
      off -= n->dims[d] * n->stride[d];
      ctr[d] = 0;
      ctr[d - 1]++;
      off += n->stride[d - 1];
    }
  }
}

static void iota_values(const node_t *n, int64_t start, const int64_t *idx, int64_t m, void *y,
                        workspace_t *w) {
  int64_t *v = hl_fp_arena_alloc(w, (size_t)m * sizeof(int64_t));
  for (int64_t i = 0; i < m; i++)
    v[i] = ((idx ? idx[i] : start + i) / n->iota_inner) % n->iota_size;
  if (n->dtype == HL_F32) {
    for (int64_t i = 0; i < m; i++) ((float *)y)[i] = (float)(double)v[i];
  } else if (n->dtype == HL_F64) {
    for (int64_t i = 0; i < m; i++) ((double *)y)[i] = (double)v[i];
  } else {
    // Integers keep the low bits, as hl_elem_store_int does (via convert's loop).
    hl_convert_array(HL_S64, n->dtype, v, y, m);
  }
}

// Where a node's values go: dst when the caller gave one (an output), else
// the arena.
static void *result_buffer(workspace_t *w, void *dst, size_t bytes) {
  return dst ? dst : hl_fp_arena_alloc(w, bytes);
}

// A K_MAP over a contiguous range whose innermost dimension maps to stride
// 0 (a broadcast along the minor dimension: runs of one value, at least
// HL_FUSION_SPLAT_RUN long) or to stride 1 (contiguous runs of the operand,
// at least 64 long): evaluates the operand once per distinct value / per
// run instead of per element.
static bool map_runs(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                     const node_t *n, int64_t start, int64_t m, void *y) {
  int r = n->rank;
  int64_t inner = r ? n->dims[r - 1] : 0, s = r ? n->stride[r - 1] : 0;
  if (r == 0 || inner < (s == 0 ? HL_FUSION_SPLAT_RUN : 64) || (s != 0 && s != 1)) return false;
  int64_t first = start % inner, nruns = (first + m + inner - 1) / inner;
  int64_t *heads = hl_fp_arena_alloc(w, (size_t)nruns * sizeof(int64_t));
  // Operand index of the first element of each run (the rest follow at
  // stride s): the operand of a row start, via the generic index map.
  for (int64_t j = 0; j < nruns; j++) heads[j] = j == 0 ? start : start - first + j * inner;
  int64_t *ops = hl_fp_arena_alloc(w, (size_t)nruns * sizeof(int64_t));
  hl_fp_map_indices(n, 0, heads, nruns, ops);
  char *out = y;
  if (s == 0) {
    // Consecutive operand elements (a row broadcast: one per row of the
    // block) are one contiguous evaluation, memoized like the block's own.
    bool consecutive = true;
    for (int64_t j = 1; j < nruns && consecutive; j++) consecutive = ops[j] == ops[0] + j;
    const char *v = consecutive ? eval(p, w, params, n->ops[0], ops[0], NULL, nruns)
                                : eval(p, w, params, n->ops[0], 0, ops, nruns);
    for (int64_t j = 0, done = 0; j < nruns; j++) {
      int64_t len = (j == 0 ? inner - first : inner);
      if (len > m - done) len = m - done;
      splat(n->es, v + (size_t)j * n->es, out + (size_t)done * n->es, len);
      done += len;
    }
    return true;
  }
  for (int64_t j = 0, done = 0; j < nruns; j++) {
    int64_t len = (j == 0 ? inner - first : inner);
    if (len > m - done) len = m - done;
    const void *v = eval(p, w, params, n->ops[0], ops[j], NULL, len);
    memcpy(out + (size_t)done * n->es, v, (size_t)len * n->es);
    done += len;
  }
  return true;
}

// Operand k of an element-wise node was read as `v` over the node's own
// contiguous range: when k's block buffer has no other reader, it goes back
// to the arena for the next value (its memo is dropped with it).
static void release(const hl_fusion_program_t *p, workspace_t *w, int k, const void *v,
                    int64_t m) {
  const node_t *n = &p->nodes[k];
  if (!n->single_use || w->memo_gen[k] != w->gen || w->memo_ptr[k] != v || !w->memo_owned[k] ||
      w->free_count == (int)(sizeof(w->free_list) / sizeof(w->free_list[0])))
    return;
  w->free_list[w->free_count].ptr = (void *)v;
  w->free_list[w->free_count].bytes = ((size_t)m * n->es + 63) & ~(size_t)63;
  w->free_count++;
  w->memo_gen[k] = 0;
}

// Values of node k at its elements start..start+m (idx NULL) or idx[0..m),
// written to dst when given (the returned pointer may still differ: a
// parameter's own data or a memoized value).
const void *hl_fp_eval_to(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                          int k, int64_t start, const int64_t *idx, int64_t m, void *dst) {
  const node_t *n = &p->nodes[k];
  if (!idx && w->memo_gen[k] == w->gen && w->memo_start[k] == start && w->memo_m[k] == m)
    return w->memo_ptr[k];
  const void *r = NULL;
  void *y = NULL;
  // A region whose loop is still being compiled runs interpreted (same bits).
  if (n->jit && !idx && hl_fp_jit_region_runs(n->jit, start)) {
    r = y = result_buffer(w, dst, (size_t)m * n->es);
    hl_fp_jit_region_run(p, w, params, n->jit, n->es, start, m, y, dst && w->stream);
  } else switch (n->kind) {
    case K_PARAM:
    case K_CONST: {
      const char *base = n->kind == K_PARAM ? params[n->param] : n->data;
      if (!idx) return base + (size_t)start * n->es;
      y = result_buffer(w, dst, (size_t)m * n->es);
      gather(n->es, base, idx, y, m);
      return y;
    }
    case K_UNARY: {
      const void *x = eval(p, w, params, n->ops[0], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_ew_unary_array(n->op, n->in_dtype, n->dtype, x, y, m);
      release(p, w, n->ops[0], x, m);
      r = y;
      break;
    }
    case K_BINARY: {
      // A broadcast scalar operand is read once instead of repeated.
      bool sa = p->nodes[n->ops[0]].kind == K_SPLAT, sb = p->nodes[n->ops[1]].kind == K_SPLAT;
      if (sa != sb && n->in_dtype == n->dtype && (n->dtype == HL_F32 || n->dtype == HL_F64)) {
        int vk = n->ops[sa ? 1 : 0], sk = p->nodes[n->ops[sa ? 0 : 1]].ops[0];
        const void *sv = eval(p, w, params, sk, 0, NULL, 1);
        const void *v = eval(p, w, params, vk, start, idx, m);
        y = result_buffer(w, dst, (size_t)m * n->es);
        if (hl_ew_binary_array_scalar(n->op, n->dtype, sa ? sv : v, sa, sa ? v : sv, y, m)) {
          release(p, w, vk, v, m);
          r = y;
          break;
        }
      }
      const void *a = eval(p, w, params, n->ops[0], start, idx, m);
      const void *b = eval(p, w, params, n->ops[1], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_ew_binary_array(n->op, n->in_dtype, n->dtype, a, b, y, m);
      release(p, w, n->ops[0], a, m);
      release(p, w, n->ops[1], b, m);
      r = y;
      break;
    }
    case K_COMPARE: {
      const void *a = eval(p, w, params, n->ops[0], start, idx, m);
      const void *b = eval(p, w, params, n->ops[1], start, idx, m);
      y = result_buffer(w, dst, (size_t)m);
      hl_compare_array(n->dir, n->ctype, n->in_dtype, a, b, y, m);
      release(p, w, n->ops[0], a, m);
      release(p, w, n->ops[1], b, m);
      r = y;
      break;
    }
    case K_SELECT: {
      if (n->scalar_op[0]) {
        const uint8_t *pred = eval(p, w, params, n->ops[0], 0, NULL, 1);
        r = eval(p, w, params, n->ops[pred[0] ? 1 : 2], start, idx, m);
        break;
      }
      const uint8_t *pred = eval(p, w, params, n->ops[0], start, idx, m);
      const void *t = eval(p, w, params, n->ops[1], start, idx, m);
      const void *f = eval(p, w, params, n->ops[2], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_select_array(n->es, pred, t, f, y, m);
      release(p, w, n->ops[0], pred, m);
      release(p, w, n->ops[1], t, m);
      release(p, w, n->ops[2], f, m);
      r = y;
      break;
    }
    case K_CLAMP: {
      const void *lo = n->scalar_op[0] ? eval(p, w, params, n->ops[0], 0, NULL, 1)
                                       : eval(p, w, params, n->ops[0], start, idx, m);
      const void *x = eval(p, w, params, n->ops[1], start, idx, m);
      const void *hi = n->scalar_op[2] ? eval(p, w, params, n->ops[2], 0, NULL, 1)
                                       : eval(p, w, params, n->ops[2], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_clamp_array(n->dtype, lo, n->scalar_op[0], x, hi, n->scalar_op[2], y, m);
      if (!n->scalar_op[0]) release(p, w, n->ops[0], lo, m);
      release(p, w, n->ops[1], x, m);
      if (!n->scalar_op[2]) release(p, w, n->ops[2], hi, m);
      r = y;
      break;
    }
    case K_CONVERT: {
      const void *x = eval(p, w, params, n->ops[0], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_convert_array(n->in_dtype, n->dtype, x, y, m);
      release(p, w, n->ops[0], x, m);
      r = y;
      break;
    }
    case K_IOTA:
      y = result_buffer(w, dst, (size_t)m * n->es);
      iota_values(n, start, idx, m, y, w);
      r = y;
      break;
    case K_SAME:
      // Same elements: an output's buffer can take the operand's values directly.
      r = hl_fp_eval_to(p, w, params, n->ops[0], start, idx, m, dst);
      break;
    case K_SPLAT: {
      const void *v = eval(p, w, params, n->ops[0], 0, NULL, 1);
      y = result_buffer(w, dst, (size_t)m * n->es);
      splat(n->es, v, y, m);
      r = y;
      break;
    }
    case K_REDUCE: {
      if (idx) {
        // Rows a block reads (plan_rows: its own): folded once, gathered.
        int64_t lo = idx[0], hi = idx[0];
        for (int64_t i = 1; i < m; i++) {
          if (idx[i] < lo) lo = idx[i];
          if (idx[i] > hi) hi = idx[i];
        }
        const char *v = eval(p, w, params, k, lo, NULL, hi - lo + 1);
        int64_t *oi = hl_fp_arena_alloc(w, (size_t)m * sizeof(int64_t));
        for (int64_t i = 0; i < m; i++) oi[i] = idx[i] - lo;
        y = result_buffer(w, dst, (size_t)m * n->es);
        gather(n->es, v, oi, y, m);
        r = y;
        break;
      }
      // Rows start.. of the input, each folded from the init value as the
      // reduce kernel folds a run of its minor segment (the same bits).
      const char *x = eval(p, w, params, n->ops[0], start * n->row, NULL, m * n->row);
      const void *init = eval(p, w, params, n->ops[1], 0, NULL, 1);
      y = result_buffer(w, dst, (size_t)m * n->es);
      for (int64_t j = 0; j < m; j++) {
        char *acc = (char *)y + (size_t)j * n->es;
        memcpy(acc, init, n->es);
        n->fold(x + (size_t)(j * n->row) * n->es, n->row, acc);
      }
      release(p, w, n->ops[0], x, m * n->row);
      r = y;
      break;
    }
    case K_MAP:
      if (!idx && n->contiguous) {
        r = eval(p, w, params, n->ops[0], start + n->offset, NULL, m);
      } else if (!idx && map_runs(p, w, params, n, start, m,
                                  y = result_buffer(w, dst, (size_t)m * n->es))) {
        r = y;
      } else {
        int64_t *oi = hl_fp_arena_alloc(w, (size_t)m * sizeof(int64_t));
        hl_fp_map_indices(n, start, idx, m, oi);
        r = eval(p, w, params, n->ops[0], 0, oi, m);
      }
      break;
  }
  if (!idx) {
    w->memo_gen[k] = w->gen;
    w->memo_start[k] = start;
    w->memo_m[k] = m;
    w->memo_ptr[k] = r;
    w->memo_owned[k] = !dst && r == y;
  }
  return r;
}

// The output offset of run r (reduce.c's walk, as an index computation).
static int64_t run_output_offset(const hl_fusion_program_t *p, int64_t r) {
  int64_t off = 0;
  for (int k = p->nseg - 2; k >= 0; k--) {
    int64_t i = r % p->seg[k].size;
    r /= p->seg[k].size;
    if (!p->seg[k].reduced) off += i * p->seg[k].out_stride;
  }
  return off;
}

// Folds (or combines) the nr runs of output o's block values v into the
// output, in run order.
static void combine_runs(const hl_fusion_program_t *p, const output_t *o, const char *v,
                         int64_t r0, int64_t nr, char *out) {
  size_t es = p->nodes[o->node].es;
  bool fold = p->seg[p->nseg - 1].reduced;
  for (int64_t j = 0; j < nr; j++) {
    int64_t off = run_output_offset(p, r0 + j);
    (fold ? o->fold : o->combine)(v + (size_t)(j * p->run_len) * es, p->run_len,
                                  out + (size_t)off * es);
  }
}

// Waits until every block before b has combined its reductions. The pool
// hands blocks out in ascending order, so the smallest block not yet
// combined is always held by a worker that waits on no one.
static void wait_turn(_Atomic int64_t *turn, int64_t b) {
  for (int spins = 0; atomic_load_explicit(turn, memory_order_acquire) != b; spins++) {
    if (spins < 64) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();  // oversubscribed cores: let the holder of block b - 1 run
    }
  }
}

// One block: array outputs written in place, reduce outputs folded into
// theirs. `ordered`: the block's values are computed first and combined
// only when every earlier block has combined, so blocks whose reductions
// overlap can run on several threads and still combine in block order,
// the serial order (the same bits).
static void run_block_impl(run_state_t *s, int64_t b, int worker, bool ordered) {
  hl_fusion_program_t *p = s->p;
  workspace_t *w = p->set->ws[worker];
  workspace_reset(w);
  int64_t runs = p->total / p->run_len;
  int64_t r0 = b * p->block_runs, nr = runs - r0 < p->block_runs ? runs - r0 : p->block_runs;
  int64_t start = r0 * p->run_len, m = nr * p->run_len;
  if (p->copy_row) {
    copy_block(p, s->param_data, s->out_data[0], start, m);
    return;
  }
  const char *vals[MAX_ORDERED_OUTPUTS];
  for (int i = 0; i < p->out_count; i++) {
    const output_t *o = &p->outs[i];
    const node_t *n = &p->nodes[o->node];
    if (!o->reduce) {
      char *dst = s->out_data[i] + (size_t)start * n->es;
      const void *v = hl_fp_eval_to(p, w, s->param_data, o->node, start, NULL, m, dst);
      if (v != dst) memcpy(dst, v, (size_t)m * n->es);
      continue;
    }
    const char *v = eval(p, w, s->param_data, o->node, start, NULL, m);
    if (ordered) vals[i] = v;
    else combine_runs(p, o, v, r0, nr, s->out_data[i]);
  }
  if (!ordered) return;
  wait_turn(&s->turn, b);
  for (int i = 0; i < p->out_count; i++)
    if (p->outs[i].reduce) combine_runs(p, &p->outs[i], vals[i], r0, nr, s->out_data[i]);
  atomic_store_explicit(&s->turn, b + 1, memory_order_release);
}

static void run_block(void *arg, int64_t b, int worker) {
  run_block_impl(arg, b, worker, false);
}

static void run_block_ordered(void *arg, int64_t b, int worker) {
  run_block_impl(arg, b, worker, true);
}

// The L3 size in bytes as Linux reports it for cpu0 (what lscpu shows), 0
// when unknown. Not sysconf(_SC_LEVEL3_CACHE_SIZE): under KVM glibc's CPUID
// reading gave 320 MiB for a 32 MiB L3.
static size_t l3_bytes(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (!f) return 0;
  unsigned long v = 0;
  char unit = 0;
  int got = fscanf(f, "%lu%c", &v, &unit);
  fclose(f);
  if (got < 1) return 0;
  return (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
}

// Bytes of array outputs from which a run streams them: the last-level
// cache's size (32 MiB when the system does not say), or
// HL_FUSION_STREAM_BYTES from the environment (tests force it low).
static size_t streaming_threshold(void) {
  static _Atomic size_t bytes;
  size_t b = atomic_load_explicit(&bytes, memory_order_relaxed);
  if (!b) {
    const char *env = getenv("HL_FUSION_STREAM_BYTES");
    char *end = NULL;
    unsigned long long v = env ? strtoull(env, &end, 10) : 0;
    if (env && end != env && !*end && v > 0) b = (size_t)v;
    if (!b) b = l3_bytes();
    if (!b) b = (size_t)32 << 20;
    atomic_store_explicit(&bytes, b, memory_order_relaxed);
  }
  return b;
}

static void workspace_destroy(workspace_t *w) {
  if (!w) return;
  free_extras(w);
  hl_free(w->extra);
  hl_free(w->arena);
  hl_free(w->memo_gen);
  hl_free(w->memo_start);
  hl_free(w->memo_m);
  hl_free(w->memo_ptr);
  hl_free(w->memo_owned);
  hl_free(w);
}

hl_fusion_workspaces_t *hl_fusion_workspaces_create(void) {
  return hl_calloc(1, sizeof(hl_fusion_workspaces_t));
}

void hl_fusion_workspaces_destroy(hl_fusion_workspaces_t *set) {
  if (!set) return;
  for (int i = 0; i < MAX_WORKERS; i++) workspace_destroy(set->ws[i]);
  hl_free(set);
}

size_t hl_fusion_workspaces_arena_bytes(const hl_fusion_workspaces_t *set) {
  size_t b = 0;
  for (int i = 0; set && i < MAX_WORKERS; i++)
    if (set->ws[i]) b += set->ws[i]->cap;
  return b;
}

void hl_fusion_program_use_workspaces(hl_fusion_program_t *p, hl_fusion_workspaces_t *set) {
  if (!set || p->set == set) return;
  hl_fusion_workspaces_destroy(p->own);
  p->own = NULL;
  p->set = set;
}

size_t hl_fusion_program_workspace_bytes(const hl_fusion_program_t *p) {
  return hl_fusion_workspaces_arena_bytes(p->set);
}

size_t hl_fusion_program_arena_bound(const hl_fusion_program_t *p) { return p->arena_bytes; }

static hl_status_t workspaces_of(hl_fusion_program_t *p, hl_fusion_workspaces_t **out) {
  if (!p->set) {
    p->own = hl_fusion_workspaces_create();
    if (!p->own) return HL_OOM();
    p->set = p->own;
  }
  *out = p->set;
  return NULL;
}

// Worker `worker`'s workspace in set, its memo arrays holding `count` nodes
// at least. The arena starts empty: the first block grows it (workspace_settle).
static hl_status_t ensure_workspace(hl_fusion_workspaces_t *set, int worker, int count) {
  workspace_t *w = set->ws[worker];
  if (!w) {
    w = hl_calloc(1, sizeof(*w));
    if (!w) return HL_OOM();
    w->gen = 1;
    set->ws[worker] = w;
  }
  if (count <= w->memo_cap) return NULL;
  size_t c = (size_t)count;
  uint64_t *gen = hl_realloc(w->memo_gen, c * sizeof(uint64_t));
  if (gen) w->memo_gen = gen;
  int64_t *start = hl_realloc(w->memo_start, c * sizeof(int64_t));
  if (start) w->memo_start = start;
  int64_t *m = hl_realloc(w->memo_m, c * sizeof(int64_t));
  if (m) w->memo_m = m;
  const void **ptr = hl_realloc((void *)w->memo_ptr, c * sizeof(void *));
  if (ptr) w->memo_ptr = ptr;
  bool *owned = hl_realloc(w->memo_owned, c * sizeof(bool));
  if (owned) w->memo_owned = owned;
  if (!gen || !start || !m || !ptr || !owned) return HL_OOM();
  size_t old = (size_t)w->memo_cap;
  memset(w->memo_gen + old, 0, (c - old) * sizeof(uint64_t));  // never this block's gen
  memset(w->memo_owned + old, 0, (c - old) * sizeof(bool));
  w->memo_cap = count;
  return NULL;
}

// Arenas made resident ahead at the program's upper bound: only one this
// small (a large bound is mostly never touched: 44 MB for the JAX
// transformer step's largest fusion, of which a block takes a few MB).
#define WARM_ARENA_BYTES ((size_t)256 << 10)

hl_status_t hl_fusion_program_warm(hl_fusion_program_t *p) {
  (void)streaming_threshold();
  hl_fusion_workspaces_t *set = NULL;
  HL_RETURN_IF_ERROR(workspaces_of(p, &set));
  HL_RETURN_IF_ERROR(ensure_workspace(set, 0, p->count ? p->count : 1));
  workspace_t *w = set->ws[0];
  if (p->arena_bytes <= WARM_ARENA_BYTES && grow_arena(w, p->arena_bytes))
    memset(w->arena, 0, w->cap);  // its pages, before the run needs them
  return NULL;
}

hl_status_t hl_fusion_program_run(hl_fusion_program_t *p, hl_literal_t *const *args, int arg_count,
                                  hl_thread_pool_t *pool, hl_literal_t **out) {
  *out = NULL;
  if (arg_count != p->param_count)
    return HL_INTERNAL_ERROR("fusion program takes %d arguments, got %d", p->param_count,
                             arg_count);
  const void *params_local[16];
  const void **params =
      arg_count <= 16 ? params_local : hl_malloc(sizeof(void *) * (size_t)arg_count);
  hl_literal_t *outs_local[16] = {NULL}, **outs = outs_local;
  char *out_data_local[16];
  char **out_data = out_data_local;
  if (p->out_count > 16) {
    outs = hl_calloc((size_t)p->out_count, sizeof(*outs));
    out_data = hl_malloc(sizeof(char *) * (size_t)p->out_count);
  }
  hl_status_t st = (!params || !outs || !out_data) ? HL_OOM() : NULL;
  for (int i = 0; !st && i < arg_count; i++) params[i] = args[i]->data;
  for (int i = 0; !st && i < p->out_count; i++) {
    st = hl_literal_create_uninitialized(p->outs[i].shape, &outs[i]);
    if (st) break;
    out_data[i] = outs[i]->data;
  }
  // One workspace per worker: a pool larger than MAX_WORKERS runs serially.
  int workers = hl_thread_pool_size(pool);
  int64_t runs = p->total / (p->run_len ? p->run_len : 1);
  int64_t blocks = p->total ? (runs + p->block_runs - 1) / p->block_runs : 0;
  bool threaded = blocks > 1 && workers > 1 && workers <= MAX_WORKERS;
  bool parallel = threaded && p->parallel;
  // Reductions whose blocks overlap (kept minor dimensions: column sums)
  // combine in block order while the blocks' values are computed in
  // parallel.
  bool ordered = threaded && !p->parallel && p->has_reduce && p->ordered_pays &&
                 p->out_count <= MAX_ORDERED_OUTPUTS;
  hl_fusion_workspaces_t *set = NULL;
  int used_workers = parallel || ordered ? workers : 1;
  if (!st) st = workspaces_of(p, &set);
  for (int i = 0; !st && i < used_workers; i++)
    st = ensure_workspace(set, i, p->count ? p->count : 1);
  if (!st) {
    // Array outputs larger than the last-level cache would be evicted before
    // anything reads them: written around the caches (no read for ownership
    // of every line, and the inputs stay cached). Same values either way.
    size_t array_bytes = 0;
    for (int i = 0; i < p->out_count; i++)
      if (!p->outs[i].reduce) array_bytes += outs[i]->byte_size;
    bool stream = array_bytes >= streaming_threshold();
    for (int i = 0; i < MAX_WORKERS; i++)
      if (set->ws[i]) set->ws[i]->stream = stream;
    // Reduce outputs start from the init value (evaluated once).
    for (int i = 0; i < p->out_count; i++) {
      const output_t *o = &p->outs[i];
      if (!o->reduce) continue;
      workspace_t *w = set->ws[0];
      workspace_reset(w);
      const void *init = eval(p, w, params, o->init, 0, NULL, 1);
      splat(p->nodes[o->node].es, init, out_data[i], hl_literal_element_count(outs[i]));
    }
    run_state_t s = {p, params, out_data, blocks, 0};
    if (parallel)
      hl_thread_pool_run_ranges(pool, blocks, run_block, &s);
    else if (ordered)
      hl_thread_pool_run(pool, blocks, run_block_ordered, &s);  // one block a task, ascending
    else
      for (int64_t b = 0; b < blocks; b++) run_block(&s, b, 0);
    // The last blocks' extra allocations go now, not at the next run.
    for (int i = 0; i < used_workers; i++) workspace_settle(set->ws[i]);
  }
  if (!st) {
    if (p->tuple)
      st = hl_literal_create_tuple(outs, p->out_count, out);
    else
      *out = hl_literal_retain(outs[0]);
  }
  for (int i = 0; i < p->out_count; i++) hl_literal_release(outs[i]);
  if (params != params_local) hl_free(params);
  if (outs != outs_local) hl_free(outs);
  if (out_data != out_data_local) hl_free(out_data);
  return st;
}
