// The direct (single-copy) node-local algorithms, for nodes whose ranks can
// read each other's memory (node->direct, probed in shm_node.c).
//
// The window path (shm_ops.c) stages every byte through the shared window:
// a member copies its operand into its slot and the peers copy it out, two
// copies per byte, as MPI's shared-memory transport without a single-copy
// mechanism does. Here a member instead publishes the addresses of its own
// send and recv buffers (in its COPIED counter line, before the release
// store that says "call c has begun") and every peer copies straight from
// those buffers into its own with process_vm_readv (cross-memory attach: the
// kernel copies once, from the owner's pages to the reader's). A call
// publishes COPIED (my addresses are out), for an all-reduce REDUCED (how
// many blocks of my slice of the result are final, block by block, so peers
// copy each while it is still in the shared cache), and CONSUMED (I have
// read everything I need from the others); no slots, no barrier. A member
// returns only after every peer published CONSUMED, so no one reads its
// buffers after the call. Exposed buffers are first moved onto huge pages
// where the kernel can (shm_pages.c): process_vm_readv pins the owner's
// pages one by one and costs about twice as much from 4 KiB pages.
//
// Bytes each member moves (p members; "n" as in bench_collectives: the
// larger per-member buffer), counted as read + written, against the
// minimum for the op (the bench's `min_traffic`) and the window path:
//   all-reduce      n + n/p + 2n(p-1)/p   = the minimum (window: + 2n(p-1)/p
//                   for the slot copies in and out of the result slices)
//   reduce-scatter  n + n/p               = the minimum (window: + 2n(p-1)/p)
//   all-gather      2n                    = the minimum (window: + 2n/p)
//   all-to-all      2n                    = the minimum (window: + 2n(p-1)/p)
//   permute         2n                    = the minimum (window: + 2n)
//   broadcast       2n (non-root)         = the minimum (window: + 2n/p ...)
// Reductions fold in the same rank order as the window path (x_{p-1} first,
// then x_k (op) acc down to x_0), block by block (node->block_bytes: a
// peer's block and the accumulator stay in L2), so results are identical to
// the window path's and, for integers and min / max, to the MPI path's.
//
// Buffers that overlap where a peer could read what this member already
// overwrote (in-place all-to-all, reduce-scatter, permute) are exposed
// through a private snapshot of the operand; an in-place all-reduce or
// all-gather needs none (a member overwrites only parts nobody reads any
// more).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // process_vm_readv
#endif
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "collectives/shm/shm_internal.h"
#include "runtime/base/alloc.h"


static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool overlaps(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

void hl_shm_direct_read(const hl_shm_group_t *g, int k, void *local, uint64_t remote,
                        size_t bytes, hl_status_t *st) {
  const hl_shm_node_t *n = g->node;
  int node_rank = g->members[k];
  if (*st || bytes == 0) return;
  if (node_rank == n->rank) {
    memcpy(local, (const void *)(uintptr_t)remote, bytes);
    return;
  }
  char *l = local;
  while (bytes > 0) {
    struct iovec li = {l, bytes}, ri = {(void *)(uintptr_t)remote, bytes};
    ssize_t got = process_vm_readv(n->pids[node_rank], &li, 1, &ri, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      *st = HL_INTERNAL_ERROR("reading node rank %d's buffer (process_vm_readv: %s)",
                              node_rank, got < 0 ? strerror(errno) : "no progress");
      return;
    }
    l += got;
    remote += (uint64_t)got;
    bytes -= (size_t)got;
  }
}

void hl_shm_direct_expose(hl_shm_group_t *g, const void *send, size_t send_bytes,
                          const void *recv, size_t recv_bytes) {
  hl_shm_prefer_huge_pages(send, send_bytes);
  hl_shm_prefer_huge_pages(recv, recv_bytes);
  uint64_t *w = hl_shm_words(g->node, g->members[g->me], g->set);
  w[HL_SHM_SEND] = (uint64_t)(uintptr_t)send;
  w[HL_SHM_RECV] = (uint64_t)(uintptr_t)recv;
  hl_shm_publish(g, HL_SHM_COPIED, 1);
}

uint64_t hl_shm_direct_address(const hl_shm_group_t *g, int k, int which) {
  hl_shm_wait(g, k, HL_SHM_COPIED, 1);
  return hl_shm_words(g->node, g->members[k], g->set)[which];
}

void hl_shm_direct_finish(const hl_shm_group_t *g) {
  hl_shm_publish(g, HL_SHM_CONSUMED, 1);
  hl_shm_wait_all(g, HL_SHM_CONSUMED, 1);
}

hl_status_t hl_shm_direct_snapshot(const void **send, size_t bytes, void **owned) {
  *owned = hl_malloc(bytes ? bytes : 1);
  if (!*owned) return HL_OOM();
  memcpy(*owned, *send, bytes);
  *send = *owned;
  return NULL;
}

hl_status_t hl_shm_direct_result(hl_status_t st, hl_shm_reduction_t *red) {
  hl_status_t e = red->error;
  red->error = NULL;
  if (!st) return e;
  hl_status_free(e);
  return st;
}

void hl_shm_direct_fold(hl_shm_group_t *g, hl_shm_reduction_t *red, const uint64_t *bases,
                       const char *own, size_t off, int64_t c, size_t es, char *acc,
                       hl_status_t *st) {
  char *tmp = g->node->scratch;
  size_t len = (size_t)c * es;
  for (int k = g->size - 1; k >= 0; k--) {
    bool last = k == g->size - 1;
    const char *x;
    if (k == g->me) {
      x = own + off;
      if (last) memcpy(acc, x, len);
    } else {
      char *to = last ? acc : tmp;
      hl_shm_direct_read(g, k, to, bases[k] + off, len, st);
      x = to;
    }
    if (!last) hl_shm_combine(red, x, acc, c);
  }
}

// Member j's slice of an all-reduce result as this member copies it out:
// REDUCED counts the slice's blocks its owner has made final, and the reader
// takes every run of final blocks in one read.
typedef struct {
  int64_t lo, hi;    // the slice, elements
  int64_t copied;    // blocks copied so far
  uint64_t theirs;   // the owner's recv
} peer_slice_t;

static int64_t blocks_of(const peer_slice_t *s, int64_t block) {
  return (s->hi - s->lo + block - 1) / block;
}

// Copies member j's final blocks not copied yet; with `wait`, until all are.
static void copy_out(hl_shm_group_t *g, int j, peer_slice_t *s, int64_t block, size_t es,
                     char *out, bool wait, hl_status_t *st) {
  int64_t blocks = blocks_of(s, block);
  while (s->copied < blocks) {
    if (wait) hl_shm_wait(g, j, HL_SHM_REDUCED, (uint64_t)s->copied + 1);
    int64_t ready = min64((int64_t)hl_shm_published(g, j, HL_SHM_REDUCED), blocks);
    if (ready <= s->copied) return;
    int64_t a = s->lo + s->copied * block, z = min64(s->hi, s->lo + ready * block);
    hl_shm_direct_read(g, j, out + (size_t)a * es, s->theirs + (uint64_t)a * es,
                       (size_t)(z - a) * es, st);
    s->copied = ready;
  }
}

hl_status_t hl_shm_direct_all_reduce_with(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                          const void *send, void *recv, int64_t count,
                                          hl_shm_slice_fn between, void *ctx) {
  g->call++;
  hl_shm_node_t *n = g->node;
  size_t es = hl_dtype_size(red->dtype);
  int p = g->size, me = g->me;
  int64_t unit = es >= HL_SHM_LINE ? 1 : HL_SHM_LINE / (int64_t)es;
  int64_t block = (int64_t)(n->block_bytes / es);
  const char *in = send;
  char *out = recv;
  // In place, the accumulator is scratch: this member's slice of recv is
  // its own operand slice until the fold is done. (Only member j reads
  // slice j of this member's operand, and this member overwrites a block
  // of it only after j said that block is REDUCED.)
  bool in_place = overlaps(send, (size_t)count * es, recv, (size_t)count * es);
  hl_status_t st = NULL;
  uint64_t bases[p];
  peer_slice_t slices[p];
  hl_shm_direct_expose(g, send, (size_t)count * es, recv, (size_t)count * es);
  for (int k = 0; k < p; k++) {
    bases[k] = k == me ? 0 : hl_shm_direct_address(g, k, HL_SHM_SEND);
    slices[k].theirs = k == me ? 0 : hl_shm_direct_address(g, k, HL_SHM_RECV);
    slices[k].copied = 0;
    hl_shm_slice_of(count, unit, p, k, &slices[k].lo, &slices[k].hi);
  }
  int64_t lo = slices[me].lo, hi = slices[me].hi, done = 0;
  for (int64_t b = lo; b < hi; b += block) {
    int64_t c = min64(block, hi - b);
    size_t off = (size_t)b * es;
    char *acc = in_place ? n->scratch + n->block_bytes : out + off;
    hl_shm_direct_fold(g, red, bases, in, off, c, es, acc, &st);
    if (in_place) memmove(out + off, acc, (size_t)c * es);
    if (between) continue;
    // Each block is final as soon as it is folded: peers copy it while it
    // is still in the shared cache, and this member copies theirs between
    // its own blocks (no wait) instead of all at the end.
    hl_shm_publish(g, HL_SHM_REDUCED, (uint64_t)++done);
    for (int step = 1; step < p; step++) {
      int j = (me + step) % p;
      copy_out(g, j, &slices[j], block, es, out, false, &st);
    }
  }
  if (between) {
    if (!st) st = between(ctx, recv, lo, hi);
    hl_shm_publish(g, HL_SHM_REDUCED, (uint64_t)blocks_of(&slices[me], block));
  }
  for (int step = 1; step < p; step++) {
    int j = (me + step) % p;
    copy_out(g, j, &slices[j], block, es, out, true, &st);
  }
  hl_shm_direct_finish(g);
  return hl_shm_direct_result(st, red);
}

hl_status_t hl_shm_direct_all_reduce(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                     const void *send, void *recv, int64_t count) {
  return hl_shm_direct_all_reduce_with(g, red, send, recv, count, NULL, NULL);
}

hl_status_t hl_shm_direct_reduce_scatter(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                         const void *send, void *recv, int64_t count) {
  hl_shm_node_t *n = g->node;
  size_t es = hl_dtype_size(red->dtype);
  int p = g->size, me = g->me;
  size_t total = (size_t)count * (size_t)p * es;
  void *owned = NULL;
  if (overlaps(send, total, recv, (size_t)count * es))
    HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, total, &owned));
  g->call++;
  int64_t block = (int64_t)(n->block_bytes / es);
  hl_status_t st = NULL;
  uint64_t bases[p];
  hl_shm_direct_expose(g, send, total, recv, 0);
  for (int k = 0; k < p; k++) bases[k] = k == me ? 0 : hl_shm_direct_address(g, k, HL_SHM_SEND);
  char *out = recv;
  for (int64_t b = 0; b < count; b += block) {
    int64_t c = min64(block, count - b);
    hl_shm_direct_fold(g, red, bases, send, ((size_t)me * (size_t)count + (size_t)b) * es, c, es,
               out + (size_t)b * es, &st);
  }
  hl_shm_direct_finish(g);
  hl_free(owned);
  return hl_shm_direct_result(st, red);
}

hl_status_t hl_shm_direct_all_gather(hl_shm_group_t *g, const void *send, void *recv,
                                     size_t bytes) {
  int p = g->size, me = g->me;
  char *out = recv;
  bool in_place = send == out + (size_t)me * bytes;
  void *owned = NULL;
  if (!in_place && overlaps(send, bytes, recv, (size_t)p * bytes))
    HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, bytes, &owned));
  g->call++;
  hl_status_t st = NULL;
  hl_shm_direct_expose(g, send, bytes, recv, 0);
  if (!in_place) memcpy(out + (size_t)me * bytes, send, bytes);
  for (int step = 1; step < p; step++) {
    int j = (me + step) % p;
    hl_shm_direct_read(g, j, out + (size_t)j * bytes, hl_shm_direct_address(g, j, HL_SHM_SEND), bytes, &st);
  }
  hl_shm_direct_finish(g);
  hl_free(owned);
  return st;
}

hl_status_t hl_shm_direct_all_to_all(hl_shm_group_t *g, const void *send, void *recv,
                                     size_t bytes) {
  int p = g->size, me = g->me;
  size_t total = (size_t)p * bytes;
  void *owned = NULL;
  if (overlaps(send, total, recv, total)) HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, total, &owned));
  g->call++;
  hl_status_t st = NULL;
  char *out = recv;
  hl_shm_direct_expose(g, send, total, recv, 0);
  memcpy(out + (size_t)me * bytes, (const char *)send + (size_t)me * bytes, bytes);
  for (int step = 1; step < p; step++) {
    int j = (me + step) % p;
    hl_shm_direct_read(g, j, out + (size_t)j * bytes, hl_shm_direct_address(g, j, HL_SHM_SEND) + (uint64_t)me * bytes,
              bytes, &st);
  }
  hl_shm_direct_finish(g);
  hl_free(owned);
  return st;
}

hl_status_t hl_shm_direct_broadcast(hl_shm_group_t *g, const void *send, void *recv,
                                    size_t bytes) {
  bool root = g->me == 0;
  void *owned = NULL;
  if (root && send != recv && overlaps(send, bytes, recv, bytes))
    HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, bytes, &owned));
  g->call++;
  hl_status_t st = NULL;
  if (root) {
    hl_shm_direct_expose(g, send, bytes, recv, 0);
    if (send != recv) memcpy(recv, send, bytes);
  } else {
    hl_shm_direct_read(g, 0, recv, hl_shm_direct_address(g, 0, HL_SHM_SEND), bytes, &st);
  }
  hl_shm_publish(g, HL_SHM_CONSUMED, 1);
  if (root) hl_shm_wait_all(g, HL_SHM_CONSUMED, 1);
  hl_free(owned);
  return st;
}

hl_status_t hl_shm_direct_permute(hl_shm_group_t *g, int src, int dst, const void *send,
                                  void *recv, size_t bytes) {
  void *owned = NULL;
  if (dst >= 0 && src >= 0 && overlaps(send, bytes, recv, bytes))
    HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, bytes, &owned));
  g->call++;
  hl_status_t st = NULL;
  if (dst >= 0) hl_shm_direct_expose(g, send, bytes, recv, 0);
  if (src >= 0) hl_shm_direct_read(g, src, recv, hl_shm_direct_address(g, src, HL_SHM_SEND), bytes, &st);
  hl_shm_publish(g, HL_SHM_CONSUMED, 1);
  if (dst >= 0) hl_shm_wait(g, dst, HL_SHM_CONSUMED, 1);
  hl_free(owned);
  return st;
}
