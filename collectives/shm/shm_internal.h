// Private to the shared-memory layer (collectives/shm/*.c): the node's
// shared segment, the per-group-set view of it, the progress counters and
// the reduction kernels the algorithms share.
#ifndef HL_COLLECTIVES_SHM_SHM_INTERNAL_H_
#define HL_COLLECTIVES_SHM_SHM_INTERNAL_H_

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/base/status.h"
#include "runtime/comm/comm.h"

// The three progress counters every (group set, node rank) owns, each on its
// own cache line: COPIED (its operand chunk of a round is in its slot),
// REDUCED (its share of a round is reduced / read), CONSUMED (it has copied
// out everything it needs from the round). A value is (call << 32) | rounds,
// so counters only grow and a call never mistakes an earlier call's rounds
// for its own.
enum { HL_SHM_COPIED = 0, HL_SHM_REDUCED = 1, HL_SHM_CONSUMED = 2, HL_SHM_COUNTERS = 3 };
enum { HL_SHM_LINE = 64 };

// The node: every rank of the job that shares memory with this one
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) and one shared window on it.
// Node rank k's part of the window: set_count * 3 counter lines, then two
// data slots of slot_bytes (double buffering: round r uses slot r % 2).
typedef struct hl_shm_node {
  MPI_Comm comm;        // the node's ranks
  MPI_Win win;
  int rank, size;       // in the node
  int *node_rank_of;    // job rank -> node rank; -1 when on another node
  int *node_of;         // job rank -> its node's first job rank (a node id)
  bool locked;          // in the window's lock_all epoch
  char **parts;         // node rank -> its part of the window (mapped here)
  int *identity;        // identity[k] = k: members of point-to-point "groups"
  size_t slot_bytes;    // one data slot
  size_t counters_bytes;
  int set_count;
  // The direct (single-copy) path, shm_direct.c: every node rank can read
  // every other's memory with process_vm_readv (probed at creation, agreed
  // over the node; HL_SHM_DIRECT=0 turns it off, =1 requires it).
  bool direct;
  pid_t *pids;          // node rank -> process id
  char *scratch;        // 2 * block_bytes, this process's (calls run one at a time)
  size_t block_bytes;   // the direct reductions' block
  // Smaller messages (bytes per member) take the window path even so: a
  // process_vm_readv costs about a microsecond more than a cached slot copy.
  // HL_SHM_DIRECT_MIN_BYTES overrides (tests use 0).
  size_t direct_min_bytes;
} hl_shm_node_t;

// One group of a group set as the algorithms see it: members' node ranks in
// group order, this rank's position, and the set's call counter.
typedef struct hl_shm_group {
  hl_shm_node_t *node;
  int set;              // counter row
  int size, me;         // group size, this rank's position
  const int *members;   // node rank of each member
  uint64_t call;        // calls made on this set (the counters' high half)
} hl_shm_group_t;

static inline _Atomic uint64_t *hl_shm_counter(const hl_shm_node_t *n, int node_rank, int set,
                                               int which) {
  return (_Atomic uint64_t *)(n->parts[node_rank] +
                              ((size_t)set * HL_SHM_COUNTERS + (size_t)which) * HL_SHM_LINE);
}

// The words a member publishes for the direct path (its buffers' addresses),
// in its COPIED line after the counter: written before its COPIED release,
// read by peers after their acquire of it.
static inline uint64_t *hl_shm_words(const hl_shm_node_t *n, int node_rank, int set) {
  return (uint64_t *)(void *)(hl_shm_counter(n, node_rank, set, HL_SHM_COPIED) + 1);
}

static inline char *hl_shm_slot(const hl_shm_node_t *n, int node_rank, uint64_t round) {
  return n->parts[node_rank] + n->counters_bytes + (size_t)(round & 1) * n->slot_bytes;
}

// Publishes `rounds` done for the group's current call (release: the data
// written before is visible to whoever sees the value).
void hl_shm_publish(const hl_shm_group_t *g, int which, uint64_t rounds);
// Waits until member `member` published at least `rounds` (acquire).
void hl_shm_wait(const hl_shm_group_t *g, int member, int which, uint64_t rounds);
// The rounds member `member` published so far in the group's current call
// (0 when it has not reached it), without waiting (acquire).
uint64_t hl_shm_published(const hl_shm_group_t *g, int member, int which);
// Waits for every member but this one.
void hl_shm_wait_all(const hl_shm_group_t *g, int which, uint64_t rounds);

// Reductions (shm_reduce.c): inout[i] = in[i] (op) inout[i], bit-for-bit the
// operation the MPI path applies to the same pair (mpi_reduce_ops.c), or
// reducer->combine where the MPI path calls the executor.
typedef struct hl_shm_reduction {
  hl_dtype_t dtype;
  const hl_comm_reducer_t *reducer;
  bool native;          // a C loop of shm_reduce.c; else reducer->combine
  hl_status_t error;    // the first error combine reported
} hl_shm_reduction_t;

hl_status_t hl_shm_reduction_init(hl_dtype_t dtype, const hl_comm_reducer_t *reducer,
                                  hl_shm_reduction_t *out);
void hl_shm_combine(hl_shm_reduction_t *r, const void *in, void *inout, int64_t count);

// The algorithms (shm_ops.c). All block until the group is done; each call
// advances g->call on every member alike.
hl_status_t hl_shm_all_reduce(hl_shm_group_t *g, hl_shm_reduction_t *red, const void *send,
                              void *recv, int64_t count);
hl_status_t hl_shm_reduce_scatter(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                  const void *send, void *recv, int64_t count);
void hl_shm_all_gather(hl_shm_group_t *g, const void *send, void *recv, size_t bytes);
void hl_shm_all_to_all(hl_shm_group_t *g, const void *send, void *recv, size_t bytes);
void hl_shm_broadcast(hl_shm_group_t *g, const void *send, void *recv, size_t bytes);
// Elements [*lo, *hi) of slice j when n elements are split over p members
// in units of `unit` elements (the all-reduce's split).
void hl_shm_slice_of(int64_t n, int64_t unit, int p, int j, int64_t *lo, int64_t *hi);
// buf holds `count` elements of es bytes, of which this member's slice (the
// all-reduce's split) is valid: copies in every other member's slice.
void hl_shm_gather_slices(hl_shm_group_t *g, void *buf, int64_t count, size_t es);
// Point-to-point within the node: sends to node rank `dst` and receives from
// node rank `src` (-1: none). Counters of the set's row of this rank.
void hl_shm_permute(hl_shm_group_t *g, int src, int dst, const void *send, void *recv,
                    size_t bytes);

// The direct (single-copy) algorithms (shm_direct.c), for nodes with
// node->direct: members publish their buffers' addresses and peers copy
// straight between the processes' own buffers (process_vm_readv), with no
// staging through the window. Same contracts as the functions above.
hl_status_t hl_shm_direct_all_reduce(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                     const void *send, void *recv, int64_t count);
hl_status_t hl_shm_direct_reduce_scatter(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                         const void *send, void *recv, int64_t count);
hl_status_t hl_shm_direct_all_gather(hl_shm_group_t *g, const void *send, void *recv,
                                     size_t bytes);
hl_status_t hl_shm_direct_all_to_all(hl_shm_group_t *g, const void *send, void *recv,
                                     size_t bytes);
hl_status_t hl_shm_direct_broadcast(hl_shm_group_t *g, const void *send, void *recv,
                                    size_t bytes);
hl_status_t hl_shm_direct_permute(hl_shm_group_t *g, int src, int dst, const void *send,
                                  void *recv, size_t bytes);
// The all-reduce in its two halves with `between` run on this member's
// reduced slice [lo, hi) of recv before any peer copies it (the
// hierarchical all-reduce's step across nodes); NULL: nothing.
typedef hl_status_t (*hl_shm_slice_fn)(void *ctx, void *recv, int64_t lo, int64_t hi);
hl_status_t hl_shm_direct_all_reduce_with(hl_shm_group_t *g, hl_shm_reduction_t *red,
                                          const void *send, void *recv, int64_t count,
                                          hl_shm_slice_fn between, void *ctx);


// The direct path's steps (shm_direct.c), shared with shm_hier.c. A call:
// expose (publish this member's send / recv addresses: COPIED), reads of
// peers' buffers, finish (CONSUMED; returns once no peer reads this
// member's buffers any more).
enum { HL_SHM_SEND = 0, HL_SHM_RECV = 1 };
// send_bytes / recv_bytes: how much of each peers may read (0: none),
// which hl_shm_prefer_huge_pages backs with huge pages first.
void hl_shm_direct_expose(hl_shm_group_t *g, const void *send, size_t send_bytes,
                          const void *recv, size_t recv_bytes);
// Member k's address HL_SHM_SEND / HL_SHM_RECV (waits for its expose).
uint64_t hl_shm_direct_address(const hl_shm_group_t *g, int k, int which);
// Copies `bytes` at address `remote` of member k's process into `local`.
// A failure does not stop the call's protocol (the peers would wait
// forever): it is kept in *st (and later reads skipped), the call returns it.
void hl_shm_direct_read(const hl_shm_group_t *g, int k, void *local, uint64_t remote,
                        size_t bytes, hl_status_t *st);
void hl_shm_direct_finish(const hl_shm_group_t *g);
// A private copy of `bytes` at *send, exposed instead of the caller's buffer
// (which this member overwrites while peers still read it); *owned frees it.
hl_status_t hl_shm_direct_snapshot(const void **send, size_t bytes, void **owned);
// acc[0, c) = x_0 (op) (x_1 (op) ... (op) x_{p-1}), x_k = elements at byte
// offset `off` of member k's send (bases[k]; this member's own at `own`),
// through node->scratch.
void hl_shm_direct_fold(hl_shm_group_t *g, hl_shm_reduction_t *red, const uint64_t *bases,
                        const char *own, size_t off, int64_t c, size_t es, char *acc,
                        hl_status_t *st);
// Asks the kernel to back the whole huge pages inside [buf, buf + bytes)
// with huge pages (shm_pages.c): process_vm_readv from them costs about
// half what it costs from 4 KiB pages. Best effort, contents unchanged.
void hl_shm_prefer_huge_pages(const void *buf, size_t bytes);
// st, else the reduction's first combine error (taken).
hl_status_t hl_shm_direct_result(hl_status_t st, hl_shm_reduction_t *red);

#endif  // HL_COLLECTIVES_SHM_SHM_INTERNAL_H_
