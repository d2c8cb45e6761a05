// The node-local algorithms over the shared window (shm_internal.h).
//
// Every rank owns two data slots in the window and writes only its own.
// Large messages go in rounds of one slot; round r uses slot r % 2, so a
// rank fills round r + 1 while its peers still read round r. Before a rank
// writes round r >= 2 it waits until every reader has published that it is
// done with round r - 2; at the end of a call it waits until every reader is
// done with its last rounds, so the slots are free for any later call (of
// any group set) when the call returns. Ordering is carried by the counters
// alone (release on publish, acquire on wait): no barrier per chunk.
//
// Reductions split each round across the group: member k reduces the k-th
// slice (64-byte aligned) of every member's chunk, in blocks of kBlockBytes
// that stay in L1, always in the same order, member p-1 first and then
// x_k (op) acc for k = p-2 .. 0 (the rank order a non-commutative MPI
// reduction uses), so the result does not depend on which member reduced a
// slice. Integer, min / max and bitwise results equal the MPI path's; float
// sums and products can differ from MPI's only by association order
// (identical for 2 members, where the one pair is commutative).
#include <string.h>

#include "collectives/shm/shm_internal.h"
#include "runtime/base/alloc.h"

enum { kBlockBytes = 16384 };

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void hl_shm_slice_of(int64_t n, int64_t unit, int p, int j, int64_t *lo, int64_t *hi) {
  int64_t units = (n + unit - 1) / unit;
  *lo = min64(n, units * j / p * unit);
  *hi = min64(n, units * (j + 1) / p * unit);
}

static hl_status_t take_error(hl_shm_reduction_t *red) {
  hl_status_t st = red->error;
  red->error = NULL;
  return st;
}

// acc[0, c) = x_0 (op) (x_1 (op) ... (op) x_{p-1}) where x_k = src[k]; acc may
// not alias any source.
static void fold(hl_shm_reduction_t *red, int p, const char *const *src, char *acc, int64_t c,
                 size_t es) {
  memcpy(acc, src[p - 1], (size_t)c * es);
  for (int k = p - 2; k >= 0; k--) hl_shm_combine(red, src[k], acc, c);
}

hl_status_t hl_shm_all_reduce(hl_shm_group_t *g, hl_shm_reduction_t *red, const void *send,
                              void *recv, int64_t count) {
  g->call++;
  hl_shm_node_t *n = g->node;
  size_t es = hl_dtype_size(red->dtype);
  int p = g->size, me = g->me;
  int64_t per_round = (int64_t)(n->slot_bytes / es);
  int64_t unit = es >= HL_SHM_LINE ? 1 : HL_SHM_LINE / (int64_t)es;
  int64_t block = kBlockBytes / (int64_t)es;
  int64_t rounds = (count + per_round - 1) / per_round;
  _Alignas(64) char tmp[kBlockBytes];
  const char *src[p];
  const char *in = send;
  char *out = recv;
  for (int64_t r = 0; r < rounds; r++) {
    int64_t off = r * per_round, len = min64(per_round, count - off), lo, hi;
    char *mine = hl_shm_slot(n, g->members[me], (uint64_t)r);
    if (r >= 2) hl_shm_wait_all(g, HL_SHM_CONSUMED, (uint64_t)r - 1);
    // Only the slices the others reduce: this rank reads its own from send.
    for (int j = 0; j < p; j++) {
      if (j == me) continue;
      hl_shm_slice_of(len, unit, p, j, &lo, &hi);
      memcpy(mine + lo * es, in + (off + lo) * es, (size_t)(hi - lo) * es);
    }
    hl_shm_publish(g, HL_SHM_COPIED, (uint64_t)r + 1);
    hl_shm_wait_all(g, HL_SHM_COPIED, (uint64_t)r + 1);
    hl_shm_slice_of(len, unit, p, me, &lo, &hi);
    for (int64_t b = lo; b < hi; b += block) {
      int64_t c = min64(block, hi - b);
      for (int k = 0; k < p; k++)
        src[k] = k == me ? in + (off + b) * es
                         : hl_shm_slot(n, g->members[k], (uint64_t)r) + b * es;
      fold(red, p, src, tmp, c, es);
      memcpy(mine + b * es, tmp, (size_t)c * es);
      memcpy(out + (off + b) * es, tmp, (size_t)c * es);
    }
    hl_shm_publish(g, HL_SHM_REDUCED, (uint64_t)r + 1);
    for (int step = 1; step < p; step++) {
      int j = (me + step) % p;
      hl_shm_slice_of(len, unit, p, j, &lo, &hi);
      hl_shm_wait(g, j, HL_SHM_REDUCED, (uint64_t)r + 1);
      memcpy(out + (off + lo) * es, hl_shm_slot(n, g->members[j], (uint64_t)r) + lo * es,
             (size_t)(hi - lo) * es);
    }
    hl_shm_publish(g, HL_SHM_CONSUMED, (uint64_t)r + 1);
  }
  hl_shm_wait_all(g, HL_SHM_CONSUMED, (uint64_t)rounds);
  return take_error(red);
}

hl_status_t hl_shm_reduce_scatter(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                  const void *send, void *recv, int64_t count) {
  g->call++;
  hl_shm_node_t *n = g->node;
  size_t es = hl_dtype_size(red->dtype);
  int p = g->size, me = g->me;
  int64_t unit = es >= HL_SHM_LINE ? 1 : HL_SHM_LINE / (int64_t)es;
  // Each slot holds one piece of every member's block.
  int64_t per_round = (int64_t)(n->slot_bytes / (size_t)p / es) / unit * unit;
  if (per_round < 1) per_round = 1;
  int64_t block = kBlockBytes / (int64_t)es;
  int64_t rounds = (count + per_round - 1) / per_round;
  const char *src[p];
  const char *in = send;
  char *out = recv;
  // In place (recv inside send): the fold would overwrite operand pieces
  // before they are read, so fold from a private copy of the operand.
  size_t total = (size_t)count * (size_t)p * es;
  char *copy = NULL;
  if (out < in + total && in < out + (size_t)count * es && count > 0) {
    copy = hl_malloc(total);
    if (!copy) return HL_OOM();
    memcpy(copy, in, total);
    in = copy;
  }
  for (int64_t r = 0; r < rounds; r++) {
    int64_t off = r * per_round, len = min64(per_round, count - off);
    char *mine = hl_shm_slot(n, g->members[me], (uint64_t)r);
    if (r >= 2) hl_shm_wait_all(g, HL_SHM_REDUCED, (uint64_t)r - 1);
    for (int j = 0; j < p; j++)
      if (j != me)
        memcpy(mine + (size_t)j * (size_t)per_round * es, in + ((int64_t)j * count + off) * es,
               (size_t)len * es);
    hl_shm_publish(g, HL_SHM_COPIED, (uint64_t)r + 1);
    hl_shm_wait_all(g, HL_SHM_COPIED, (uint64_t)r + 1);
    for (int64_t b = 0; b < len; b += block) {
      int64_t c = min64(block, len - b);
      for (int k = 0; k < p; k++)
        src[k] = k == me ? in + ((int64_t)me * count + off + b) * es
                         : hl_shm_slot(n, g->members[k], (uint64_t)r) +
                               ((int64_t)me * per_round + b) * es;
      fold(red, p, src, out + (off + b) * es, c, es);
    }
    hl_shm_publish(g, HL_SHM_REDUCED, (uint64_t)r + 1);
  }
  hl_shm_wait_all(g, HL_SHM_REDUCED, (uint64_t)rounds);
  hl_free(copy);
  return take_error(red);
}

void hl_shm_all_gather(hl_shm_group_t *g, const void *send, void *recv, size_t bytes) {
  g->call++;
  hl_shm_node_t *n = g->node;
  int p = g->size, me = g->me;
  size_t per_round = n->slot_bytes;
  uint64_t rounds = (bytes + per_round - 1) / per_round;
  const char *in = send;
  char *out = recv;
  bool in_place = in == out + (size_t)me * bytes;
  for (uint64_t r = 0; r < rounds; r++) {
    size_t off = r * per_round, len = bytes - off < per_round ? bytes - off : per_round;
    if (r >= 2) hl_shm_wait_all(g, HL_SHM_CONSUMED, r - 1);
    memcpy(hl_shm_slot(n, g->members[me], r), in + off, len);
    hl_shm_publish(g, HL_SHM_COPIED, r + 1);
    if (!in_place) memcpy(out + (size_t)me * bytes + off, in + off, len);
    for (int step = 1; step < p; step++) {
      int j = (me + step) % p;
      hl_shm_wait(g, j, HL_SHM_COPIED, r + 1);
      memcpy(out + (size_t)j * bytes + off, hl_shm_slot(n, g->members[j], r), len);
    }
    hl_shm_publish(g, HL_SHM_CONSUMED, r + 1);
  }
  hl_shm_wait_all(g, HL_SHM_CONSUMED, rounds);
}

void hl_shm_all_to_all(hl_shm_group_t *g, const void *send, void *recv, size_t bytes) {
  g->call++;
  hl_shm_node_t *n = g->node;
  int p = g->size, me = g->me;
  size_t per_round = n->slot_bytes / (size_t)p / HL_SHM_LINE * HL_SHM_LINE;
  if (per_round == 0) per_round = 1;
  uint64_t rounds = (bytes + per_round - 1) / per_round;
  const char *in = send;
  char *out = recv;
  for (uint64_t r = 0; r < rounds; r++) {
    size_t off = r * per_round, len = bytes - off < per_round ? bytes - off : per_round;
    char *mine = hl_shm_slot(n, g->members[me], r);
    if (r >= 2) hl_shm_wait_all(g, HL_SHM_CONSUMED, r - 1);
    for (int j = 0; j < p; j++)
      if (j != me) memcpy(mine + (size_t)j * per_round, in + (size_t)j * bytes + off, len);
    hl_shm_publish(g, HL_SHM_COPIED, r + 1);
    memmove(out + (size_t)me * bytes + off, in + (size_t)me * bytes + off, len);
    for (int step = 1; step < p; step++) {
      int j = (me + step) % p;
      hl_shm_wait(g, j, HL_SHM_COPIED, r + 1);
      memcpy(out + (size_t)j * bytes + off,
             hl_shm_slot(n, g->members[j], r) + (size_t)me * per_round, len);
    }
    hl_shm_publish(g, HL_SHM_CONSUMED, r + 1);
  }
  hl_shm_wait_all(g, HL_SHM_CONSUMED, rounds);
}

void hl_shm_broadcast(hl_shm_group_t *g, const void *send, void *recv, size_t bytes) {
  g->call++;
  hl_shm_node_t *n = g->node;
  size_t per_round = n->slot_bytes;
  uint64_t rounds = (bytes + per_round - 1) / per_round;
  const char *in = send;
  char *out = recv;
  bool root = g->me == 0;
  if (root && in != out) memcpy(out, in, bytes);
  for (uint64_t r = 0; r < rounds; r++) {
    size_t off = r * per_round, len = bytes - off < per_round ? bytes - off : per_round;
    if (root) {
      if (r >= 2) hl_shm_wait_all(g, HL_SHM_CONSUMED, r - 1);
      memcpy(hl_shm_slot(n, g->members[0], r), in + off, len);
      hl_shm_publish(g, HL_SHM_COPIED, r + 1);
    } else {
      hl_shm_wait(g, 0, HL_SHM_COPIED, r + 1);
      memcpy(out + off, hl_shm_slot(n, g->members[0], r), len);
      hl_shm_publish(g, HL_SHM_CONSUMED, r + 1);
    }
  }
  if (root) hl_shm_wait_all(g, HL_SHM_CONSUMED, rounds);
}

void hl_shm_permute(hl_shm_group_t *g, int src, int dst, const void *send, void *recv,
                    size_t bytes) {
  g->call++;
  hl_shm_node_t *n = g->node;
  size_t per_round = n->slot_bytes;
  uint64_t rounds = (bytes + per_round - 1) / per_round;
  const char *in = send;
  char *out = recv;
  for (uint64_t r = 0; r < rounds; r++) {
    size_t off = r * per_round, len = bytes - off < per_round ? bytes - off : per_round;
    if (dst >= 0) {
      if (r >= 2) hl_shm_wait(g, dst, HL_SHM_CONSUMED, r - 1);
      memcpy(hl_shm_slot(n, g->members[g->me], r), in + off, len);
      hl_shm_publish(g, HL_SHM_COPIED, r + 1);
    }
    if (src >= 0) {
      hl_shm_wait(g, src, HL_SHM_COPIED, r + 1);
      memcpy(out + off, hl_shm_slot(n, g->members[src], r), len);
      hl_shm_publish(g, HL_SHM_CONSUMED, r + 1);
    }
  }
  if (dst >= 0) hl_shm_wait(g, dst, HL_SHM_CONSUMED, rounds);
}

void hl_shm_gather_slices(hl_shm_group_t *g, void *buf, int64_t count, size_t es) {
  g->call++;
  hl_shm_node_t *n = g->node;
  int p = g->size, me = g->me;
  int64_t unit = es >= HL_SHM_LINE ? 1 : HL_SHM_LINE / (int64_t)es, lo, hi, most = 0;
  for (int j = 0; j < p; j++) {
    hl_shm_slice_of(count, unit, p, j, &lo, &hi);
    if (hi - lo > most) most = hi - lo;
  }
  size_t per_round = n->slot_bytes;
  uint64_t rounds = ((size_t)most * es + per_round - 1) / per_round;
  char *data = buf;
  for (uint64_t r = 0; r < rounds; r++) {
    size_t off = r * per_round;
    if (r >= 2) hl_shm_wait_all(g, HL_SHM_CONSUMED, r - 1);
    hl_shm_slice_of(count, unit, p, me, &lo, &hi);
    size_t bytes = (size_t)(hi - lo) * es;
    if (off < bytes)
      memcpy(hl_shm_slot(n, g->members[me], r), data + (size_t)lo * es + off,
             bytes - off < per_round ? bytes - off : per_round);
    hl_shm_publish(g, HL_SHM_COPIED, r + 1);
    for (int step = 1; step < p; step++) {
      int j = (me + step) % p;
      hl_shm_slice_of(count, unit, p, j, &lo, &hi);
      bytes = (size_t)(hi - lo) * es;
      hl_shm_wait(g, j, HL_SHM_COPIED, r + 1);
      if (off < bytes)
        memcpy(data + (size_t)lo * es + off, hl_shm_slot(n, g->members[j], r),
               bytes - off < per_round ? bytes - off : per_round);
    }
    hl_shm_publish(g, HL_SHM_CONSUMED, r + 1);
  }
  hl_shm_wait_all(g, HL_SHM_CONSUMED, rounds);
}
