// The node's shared window and the progress counters in it.
//
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds the ranks that share
// memory with this one; MPI_Win_allocate_shared gives each of them a part of
// one segment that all of them map (alloc_shared_noncontig: each part lives
// on its owner's NUMA node). The window stays in a passive-target epoch
// (MPI_Win_lock_all) for its whole life, so plain loads and stores and C11
// atomics on it are legal between the ranks.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // process_vm_readv
#endif
#include "collectives/shm/shm_node.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collectives/mpi_comm.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

// One slot: big enough that a round's fixed cost (a few counter round trips)
// is small against its copies, small enough that 2 slots per rank stay in
// the last-level cache. HL_SHM_SLOT_BYTES overrides (tests use it to
// exercise many rounds with small arrays).
static size_t slot_bytes(int node_size) {
  size_t v = node_size <= 4 ? (size_t)1 << 20 : (size_t)512 << 10;
  const char *e = getenv("HL_SHM_SLOT_BYTES");
  if (e && *e) {
    long long x = atoll(e);
    if (x >= 64 * 64) v = (size_t)x;
  }
  return (v + HL_SHM_LINE - 1) / HL_SHM_LINE * HL_SHM_LINE;
}

// The direct path's reduction block: two of them (a peer's block and the
// accumulator) stay in L2 while a block is folded. At most the slot size, so
// HL_SHM_SLOT_BYTES=4096 also gives the tests many direct blocks.
static size_t block_bytes(size_t slot) {
  size_t v = (size_t)256 << 10;
  return slot < v ? slot : v;
}

// Whether every rank of the node can read every other's memory with
// process_vm_readv (cross-memory attach: containers without ptrace rights
// and Yama's ptrace_scope >= 1 refuse it). Each rank reads a word of every
// peer and checks it; the node agrees with a logical and, so it takes the
// direct path all together or not at all. Also records the node's pids.
static hl_status_t probe_direct(hl_shm_node_t *n) {
  const char *e = getenv("HL_SHM_DIRECT");
  bool off = e && !strcmp(e, "0"), required = e && !strcmp(e, "1");
  uint64_t *word = hl_malloc(sizeof(uint64_t));
  uint64_t *all = hl_malloc((size_t)n->size * 2 * sizeof(uint64_t));
  n->pids = hl_malloc((size_t)n->size * sizeof(pid_t));
  if (!word || !all || !n->pids) {
    hl_free(word);
    hl_free(all);
    return HL_OOM();
  }
  *word = UINT64_C(0x5eed5eed00000000) | (uint64_t)n->rank;
  uint64_t mine[2] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)word};
  int err = hl_polite_allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, n->comm);
  int ok = !off, why = 0;
  for (int k = 0; k < n->size && err == MPI_SUCCESS; k++) {
    n->pids[k] = (pid_t)all[2 * k];
    if (!ok || k == n->rank) continue;
    uint64_t got = 0;
    struct iovec local = {&got, sizeof got}, remote = {(void *)(uintptr_t)all[2 * k + 1], sizeof got};
    ok = process_vm_readv(n->pids[k], &local, 1, &remote, 1, 0) == (ssize_t)sizeof got &&
         got == (UINT64_C(0x5eed5eed00000000) | (uint64_t)k);
    if (!ok) why = errno;
  }
  // Every rank stays here until all have read its word.
  int all_ok = 0;
  if (err == MPI_SUCCESS) err = hl_polite_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, n->comm);
  hl_free(word);
  hl_free(all);
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "probing the node's direct path");
  n->direct = all_ok && n->size >= 2;
  if (required && !n->direct && n->size >= 2)
    return HL_INVALID("HL_SHM_DIRECT=1, but the node's ranks cannot read each other's memory "
                      "(process_vm_readv: %s)", ok ? "refused on a peer" : strerror(why));
  if (n->direct) {
    const char *m = getenv("HL_SHM_DIRECT_MIN_BYTES");
    n->direct_min_bytes = m && *m ? (size_t)atoll(m) : (size_t)32 << 10;
    n->block_bytes = block_bytes(n->slot_bytes);
    n->scratch = hl_malloc(2 * n->block_bytes);
    if (!n->scratch) return HL_OOM();
  }
  return NULL;
}

hl_status_t hl_shm_node_create(MPI_Comm job, int set_count, hl_shm_node_t **out) {
  *out = NULL;
  hl_shm_node_t *n = hl_calloc(1, sizeof(*n));
  if (!n) return HL_OOM();
  n->comm = MPI_COMM_NULL;
  n->win = MPI_WIN_NULL;
  int job_rank, job_size, err;
  MPI_Comm_rank(job, &job_rank);
  MPI_Comm_size(job, &job_size);
  err = MPI_Comm_split_type(job, MPI_COMM_TYPE_SHARED, job_rank, MPI_INFO_NULL, &n->comm);
  // HL_SHM_NODE_RANKS=k cuts each node into nodes of k ranks, so the
  // hierarchical path across nodes can be tested on one machine.
  const char *k_text = getenv("HL_SHM_NODE_RANKS");
  int k = k_text && *k_text ? atoi(k_text) : 0;
  if (err == MPI_SUCCESS && k > 0) {
    int node_rank;
    MPI_Comm whole = n->comm;
    MPI_Comm_rank(whole, &node_rank);
    err = MPI_Comm_split(whole, node_rank / k, node_rank, &n->comm);
    MPI_Comm_free(&whole);
  }
  if (err == MPI_SUCCESS) err = MPI_Comm_set_errhandler(n->comm, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(n->comm, &n->rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(n->comm, &n->size);
  hl_status_t st = err == MPI_SUCCESS ? NULL : hl_mpi_status(err, "finding the node's ranks");
  // Which node every job rank is on: (its node's first job rank, node rank).
  int *pairs = NULL;
  if (!st) {
    n->node_rank_of = hl_malloc((size_t)job_size * sizeof(int));
    n->node_of = hl_malloc((size_t)job_size * sizeof(int));
    n->parts = hl_calloc((size_t)n->size, sizeof(char *));
    n->identity = hl_malloc((size_t)n->size * sizeof(int));
    pairs = hl_malloc((size_t)job_size * 2 * sizeof(int));
    if (!n->node_rank_of || !n->node_of || !n->parts || !n->identity || !pairs) st = HL_OOM();
  }
  if (!st) {
    int leader = job_rank;
    hl_polite_bcast(&leader, 1, MPI_INT, 0, n->comm);
    int mine[2] = {leader, n->rank};
    err = hl_polite_allgather(mine, 2, MPI_INT, pairs, 2, MPI_INT, job);
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "exchanging the node map");
    for (int r = 0; !st && r < job_size; r++) {
      n->node_of[r] = pairs[2 * r];
      n->node_rank_of[r] = pairs[2 * r] == leader ? pairs[2 * r + 1] : -1;
    }
    for (int k = 0; !st && k < n->size; k++) n->identity[k] = k;
  }
  hl_free(pairs);
  if (!st) {
    n->set_count = set_count;
    n->slot_bytes = slot_bytes(n->size);
    n->counters_bytes = (size_t)(set_count > 0 ? set_count : 1) * HL_SHM_COUNTERS * HL_SHM_LINE;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    char *base = NULL;
    err = MPI_Win_allocate_shared((MPI_Aint)(n->counters_bytes + 2 * n->slot_bytes), 1, info,
                                  n->comm, &base, &n->win);
    MPI_Info_free(&info);
    if (err != MPI_SUCCESS) {
      n->win = MPI_WIN_NULL;
      st = hl_mpi_status(err, "allocating the node's shared memory");
    } else {
      MPI_Win_set_errhandler(n->win, MPI_ERRORS_RETURN);
    }
  }
  if (!st) {
    for (int k = 0; k < n->size && err == MPI_SUCCESS; k++) {
      MPI_Aint size;
      int disp;
      err = MPI_Win_shared_query(n->win, k, &size, &disp, &n->parts[k]);
    }
    if (err == MPI_SUCCESS) err = MPI_Win_lock_all(MPI_MODE_NOCHECK, n->win);
    n->locked = err == MPI_SUCCESS;
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "mapping the node's shared memory");
  }
  if (!st) {
    memset(n->parts[n->rank], 0, n->counters_bytes);
    MPI_Win_sync(n->win);
    err = hl_polite_barrier(n->comm);  // every part's counters are zero before any use
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "starting the node's shared memory");
  }
  if (!st) st = probe_direct(n);
  if (st) {
    hl_shm_node_destroy(n);
    return st;
  }
  *out = n;
  return NULL;
}

void hl_shm_node_destroy(hl_shm_node_t *n) {
  if (!n) return;
  if (n->win != MPI_WIN_NULL) {
    if (n->locked) MPI_Win_unlock_all(n->win);
    MPI_Win_free(&n->win);
  }
  if (n->comm != MPI_COMM_NULL) MPI_Comm_free(&n->comm);
  hl_free(n->node_rank_of);
  hl_free(n->node_of);
  hl_free(n->parts);
  hl_free(n->identity);
  hl_free(n->pids);
  hl_free(n->scratch);
  hl_free(n);
}

void hl_shm_publish(const hl_shm_group_t *g, int which, uint64_t rounds) {
  atomic_store_explicit(hl_shm_counter(g->node, g->members[g->me], g->set, which),
                        g->call << 32 | rounds, memory_order_release);
}

void hl_shm_wait(const hl_shm_group_t *g, int member, int which, uint64_t rounds) {
  _Atomic uint64_t *c = hl_shm_counter(g->node, g->members[member], g->set, which);
  uint64_t want = g->call << 32 | rounds;
  // Spin briefly (a peer on another core answers within a microsecond), then
  // yield: with more ranks than cores the peer needs this core to get there;
  // a peer that is far behind (computing before its -start) gets 50 us naps,
  // so a waiting progress thread does not steal its core.
  for (long spins = 0; atomic_load_explicit(c, memory_order_acquire) < want; spins++) {
    if (spins < 256) {
      CPU_RELAX();
    } else if (spins < 20000) {
      sched_yield();
    } else {
      struct timespec nap = {0, 50000};
      nanosleep(&nap, NULL);
    }
  }
}

uint64_t hl_shm_published(const hl_shm_group_t *g, int member, int which) {
  uint64_t v = atomic_load_explicit(hl_shm_counter(g->node, g->members[member], g->set, which),
                                    memory_order_acquire);
  return v >> 32 == g->call ? v & UINT32_MAX : 0;
}

void hl_shm_wait_all(const hl_shm_group_t *g, int which, uint64_t rounds) {
  for (int k = 0; k < g->size; k++)
    if (k != g->me) hl_shm_wait(g, k, which, rounds);
}
