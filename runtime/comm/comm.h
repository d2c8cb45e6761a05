// The communicator interface: everything the executor and its kernels need
// from other processes. They never call MPI; they call through this vtable.
// collectives/mpi_comm.c is the MPI backend; a NULL communicator means a
// single process (1x1 grid). A room of its own (runtime/comm: interfaces,
// no code) so the kernels that use it and the backends that implement it
// depend on neither the executor nor each other.
#ifndef HL_RUNTIME_COMM_COMM_H_
#define HL_RUNTIME_COMM_COMM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

typedef struct hl_comm hl_comm_t;
// A pending non-blocking operation (an async collective's -start, a channel
// send or recv); completed and freed by wait.
typedef struct hl_comm_request hl_comm_request_t;

// A reduction for all-reduce / reduce-scatter. The kernel recognises plain
// reducers (to_apply = one add / multiply / ... of its two parameters), so
// the backend can use a native reduction; `combine` is always set and is the
// reference: inout[i] = reducer(in[i], inout[i]) for `count` elements, which
// for HL_COMM_REDUCE_CUSTOM runs the reducer computation in the executor.
typedef enum hl_comm_reduce_op {
  HL_COMM_REDUCE_CUSTOM = 0,
  HL_COMM_REDUCE_ADD, HL_COMM_REDUCE_MUL, HL_COMM_REDUCE_MIN, HL_COMM_REDUCE_MAX,
  HL_COMM_REDUCE_AND, HL_COMM_REDUCE_OR, HL_COMM_REDUCE_XOR,
} hl_comm_reduce_op_t;

typedef struct hl_comm_reducer {
  hl_comm_reduce_op_t op;
  hl_status_t (*combine)(void *state, hl_dtype_t dtype, const void *in, void *inout,
                         int64_t count);
  void *state;
} hl_comm_reducer_t;

typedef struct hl_comm_vtable {
  void (*destroy)(hl_comm_t *comm);
  // Blocks until every process of the job reached this point.
  hl_status_t (*barrier)(hl_comm_t *comm);
  // Completes a pending request and frees it.
  hl_status_t (*wait)(hl_comm_t *comm, hl_comm_request_t *request);

  //--- Collectives (owned by the collectives work, issue 4) ---------------
  // Every collective names its instruction: the backend resolved the
  // instruction's process groups (collectives/groups.h) and built their
  // communicator in `prepare`, so a call does no group work. Buffers are
  // raw element data; `send == recv` (where the shapes allow) runs in place.
  // out_request NULL: blocking. Otherwise the call only posts the transfer
  // and *out_request completes it through `wait` (the buffers must stay
  // alive and untouched until then).
  //
  // Collective over every rank of the job, in the same order everywhere:
  // resolves and validates the groups of every collective of `module` (all
  // computations, in module order) and creates one communicator per distinct
  // group set, so ranks that later take different branches never deadlock
  // on communicator creation. Ranks whose collectives differ (MPMD) make
  // every later call agree first on what it runs (collectives/mpi_collectives.c).
  hl_status_t (*prepare)(hl_comm_t *comm, const hl_module_t *module, int64_t num_replicas,
                         int64_t num_partitions);
  // This process's group for `inst`: its size and this process's position
  // in it (index -1 when it is in no group: collective-broadcast only).
  hl_status_t (*group_of)(hl_comm_t *comm, const hl_instruction_t *inst, int *out_size,
                          int *out_index);
  // recv[i] = reduce over the group of send[i], count elements of dtype.
  hl_status_t (*all_reduce)(hl_comm_t *comm, const hl_instruction_t *inst, hl_dtype_t dtype,
                            const void *send, void *recv, int64_t count,
                            const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request);
  // recv = the group members' `bytes`-byte send blocks, in group order.
  hl_status_t (*all_gather)(hl_comm_t *comm, const hl_instruction_t *inst, const void *send,
                            void *recv, size_t bytes, hl_comm_request_t **out_request);
  // send holds group-size blocks of `count` elements (block k for member
  // k); recv = the reduction of every member's block for this member.
  hl_status_t (*reduce_scatter)(hl_comm_t *comm, const hl_instruction_t *inst,
                                hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                const hl_comm_reducer_t *reducer,
                                hl_comm_request_t **out_request);
  // send holds group-size blocks of `bytes` (block k goes to member k);
  // recv gets block j from member j.
  hl_status_t (*all_to_all)(hl_comm_t *comm, const hl_instruction_t *inst, const void *send,
                            void *recv, size_t bytes, hl_comm_request_t **out_request);
  // recv = the source's send (zeros when no pair targets this process).
  hl_status_t (*collective_permute)(hl_comm_t *comm, const hl_instruction_t *inst,
                                    const void *send, void *recv, size_t bytes,
                                    hl_comm_request_t **out_request);
  // Combined (in-place) collective-permute: the source_target_pairs split
  // into `slots` equal consecutive parts, each a permutation; part `slot`
  // alone moves `bytes`: send goes to this process's target in that part,
  // recv gets its source's bytes, *out_source = that source's flattened id
  // (-1: none, and recv is left untouched). Parts are called in the same
  // order on every process.
  hl_status_t (*collective_permute_slot)(hl_comm_t *comm, const hl_instruction_t *inst,
                                         int slot, int slots, const void *send, void *recv,
                                         size_t bytes, int *out_source,
                                         hl_comm_request_t **out_request);
  // recv = send of the group's first member (zeros outside every group).
  hl_status_t (*collective_broadcast)(hl_comm_t *comm, const hl_instruction_t *inst,
                                      const void *send, void *recv, size_t bytes,
                                      hl_comm_request_t **out_request);
  // collective-reduce: the group member at position `root` of the group
  // gets recv = reduce over the group of send (count elements of dtype);
  // the other members only send (their recv is not written and may be
  // NULL). send == recv on the root runs in place.
  hl_status_t (*reduce)(hl_comm_t *comm, const hl_instruction_t *inst, hl_dtype_t dtype,
                        const void *send, void *recv, int64_t count, int root,
                        const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request);
  // Ragged all-to-all: this process sends send_bytes[j] bytes from
  // send + send_offsets[j] to member j, and receives recv_bytes[j] bytes
  // from member j at recv + recv_offsets[j] (arrays of group size).
  hl_status_t (*ragged_all_to_all)(hl_comm_t *comm, const hl_instruction_t *inst,
                                   const void *send, const int64_t *send_offsets,
                                   const int64_t *send_bytes, void *recv,
                                   const int64_t *recv_offsets, const int64_t *recv_bytes,
                                   hl_comm_request_t **out_request);

  //--- Point-to-point channels (owned by the channels work, issue 5) -----
  // Non-blocking send / receive of `bytes` to / from flattened process id
  // `peer`, matched by `tag` (derived from the channel id).
  hl_status_t (*send)(hl_comm_t *comm, int peer, int64_t tag, const void *data, size_t bytes,
                      hl_comm_request_t **out_request);
  hl_status_t (*recv)(hl_comm_t *comm, int peer, int64_t tag, void *data, size_t bytes,
                      hl_comm_request_t **out_request);
  // Completes a request made by send or recv and frees it. Channel requests
  // are the channel backend's own (channels/mpi_channels.c interposes these
  // three entries on the communicator after its start-up rendezvous), so
  // they complete here rather than through `wait`. A receive that got a
  // different number of bytes than it posted is an error.
  hl_status_t (*channel_wait)(hl_comm_t *comm, hl_comm_request_t *request);
  // After a failed execution: withdraws a request made by send or recv
  // without waiting for the peer, and frees it. A receive is cancelled; a
  // send that has not completed cannot be recalled and still reads its
  // buffer: then false, and the buffer must be kept alive (leaked). NULL:
  // the backend cannot withdraw (the job is expected to end).
  bool (*channel_abandon)(hl_comm_t *comm, hl_comm_request_t *request);
} hl_comm_vtable_t;

struct hl_comm {
  const hl_comm_vtable_t *vtable;
  int rank, size;  // flattened process id and process count
};

static inline void hl_comm_destroy(hl_comm_t *comm) {
  if (comm) comm->vtable->destroy(comm);
}

#endif  // HL_RUNTIME_COMM_COMM_H_
