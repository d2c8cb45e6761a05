// Private to the MPI backend (collectives/*.c): the backend's state, the
// request type and the pieces the collectives files share.
#ifndef HL_COLLECTIVES_MPI_INTERNAL_H_
#define HL_COLLECTIVES_MPI_INTERNAL_H_

#include <mpi.h>
#include <stdbool.h>

#include "collectives/groups.h"
#include "collectives/mpi_comm.h"

// One distinct group set: every instruction with equal groups shares it.
typedef struct hl_mpi_group_set {
  hl_process_groups_t groups;
  MPI_Comm comm;       // this rank's group; MPI_COMM_NULL for permute or no group
  bool owns_comm;      // false when comm is the backend's whole-job communicator
  int my_group, my_index, my_size;
} hl_mpi_group_set_t;

typedef struct hl_mpi_inst_slot {
  const hl_instruction_t *inst;  // NULL: empty slot
  int set;
} hl_mpi_inst_slot_t;

// Per (dtype, op) state of the typed user reductions (lazily made).
typedef struct hl_mpi_typed_op {
  MPI_Datatype type;  // MPI_DATATYPE_NULL until made
} hl_mpi_typed_op_t;

typedef struct hl_mpi_coll {
  hl_mpi_group_set_t *sets;
  int set_count;
  hl_mpi_inst_slot_t *slots;  // open addressing on the instruction pointer
  int slot_cap;               // power of two (0: not prepared)
  MPI_Comm p2p;               // collective-permute traffic (own context, no tag clashes)
  int64_t num_replicas, num_partitions;
  hl_mpi_typed_op_t typed[HL_DTYPE_COUNT_][8];
  struct hl_mpi_progress *progress;  // NULL: no progress thread (mpi_progress.c)
  bool check_calls;  // agree on every call's (opcode, type, size) first (differing programs)
} hl_mpi_coll_t;

// The backend's state. hl_comm_t first, so a hl_comm_t * is a hl_mpi_comm_t *.
typedef struct hl_mpi_comm {
  hl_comm_t base;
  MPI_Comm comm;        // the duplicate of the world the launcher handed in
  hl_mpi_coll_t coll;   // collectives state (mpi_collectives.c)
  struct hl_shm_layer *shm;  // the shared-memory layer on top (collectives/shm/); NULL: none
} hl_mpi_comm_t;

// A pending operation: its MPI requests (two inline; a message split into
// chunks (hl_mpi_max_message_bytes) needs more, then `reqs` is grown on the
// heap), plus what to release and report once they completed. Freed by wait.
struct hl_comm_request {
  MPI_Request *reqs;  // inline_reqs, or owned when grown
  int n, cap;
  MPI_Request inline_reqs[2];
  struct hl_mpi_reduction *reduction;  // owned; NULL when none
  hl_status_t deferred;                // error to report at wait (owned)
  struct hl_mpi_progress *progress;    // registered with this progress thread
  // For the progress hook (progress_hook.h): what the request moves, and
  // the progress thread's work on it so far (start 0: not tested yet).
  const hl_instruction_t *inst;
  int64_t bytes;
  int64_t hook_start_ns;
  int hook_tests;
  bool hook_reported;
};

// The progress thread (mpi_progress.c). create leaves *out NULL when MPI
// lacks MPI_THREAD_MULTIPLE.
typedef struct hl_mpi_progress hl_mpi_progress_t;
hl_status_t hl_mpi_progress_create(hl_mpi_progress_t **out);
void hl_mpi_progress_destroy(hl_mpi_progress_t *progress);  // NULL-safe
void hl_mpi_progress_add(hl_mpi_progress_t *progress, hl_comm_request_t *request);
void hl_mpi_progress_remove(hl_mpi_progress_t *progress, hl_comm_request_t *request);

hl_status_t hl_mpi_request_new(hl_comm_request_t **out_request);
// The next free MPI_Request of r (grown as needed); r->n counts it.
hl_status_t hl_mpi_request_next(hl_comm_request_t *r, MPI_Request **out);
hl_status_t hl_mpi_wait(hl_comm_t *comm, hl_comm_request_t *request);

// Collectives entry points (mpi_collectives.c), installed in the vtable.
void hl_mpi_coll_init(hl_mpi_coll_t *coll);
void hl_mpi_coll_deinit(hl_mpi_coll_t *coll);
hl_status_t hl_mpi_prepare(hl_comm_t *comm, const hl_module_t *module, int64_t num_replicas,
                           int64_t num_partitions);
hl_status_t hl_mpi_group_of(hl_comm_t *comm, const hl_instruction_t *inst, int *out_size,
                            int *out_index);
hl_status_t hl_mpi_all_reduce(hl_comm_t *comm, const hl_instruction_t *inst, hl_dtype_t dtype,
                              const void *send, void *recv, int64_t count,
                              const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request);
hl_status_t hl_mpi_all_gather(hl_comm_t *comm, const hl_instruction_t *inst, const void *send,
                              void *recv, size_t bytes, hl_comm_request_t **out_request);
hl_status_t hl_mpi_reduce_scatter(hl_comm_t *comm, const hl_instruction_t *inst,
                                  hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                  const hl_comm_reducer_t *reducer,
                                  hl_comm_request_t **out_request);
hl_status_t hl_mpi_all_to_all(hl_comm_t *comm, const hl_instruction_t *inst, const void *send,
                              void *recv, size_t bytes, hl_comm_request_t **out_request);
hl_status_t hl_mpi_collective_permute(hl_comm_t *comm, const hl_instruction_t *inst,
                                      const void *send, void *recv, size_t bytes,
                                      hl_comm_request_t **out_request);
hl_status_t hl_mpi_collective_permute_slot(hl_comm_t *comm, const hl_instruction_t *inst,
                                           int slot, int slots, const void *send, void *recv,
                                           size_t bytes, int *out_source,
                                           hl_comm_request_t **out_request);
hl_status_t hl_mpi_collective_broadcast(hl_comm_t *comm, const hl_instruction_t *inst,
                                        const void *send, void *recv, size_t bytes,
                                        hl_comm_request_t **out_request);
hl_status_t hl_mpi_ragged_all_to_all(hl_comm_t *comm, const hl_instruction_t *inst,
                                     const void *send, const int64_t *send_offsets,
                                     const int64_t *send_bytes, void *recv,
                                     const int64_t *recv_offsets, const int64_t *recv_bytes,
                                     hl_comm_request_t **out_request);

// For collectives implemented outside mpi_collectives.c (mpi_reduce.c): the
// group set of `inst` this process is a member of, after the per-call
// agreement on (opcode, what, bytes) that differing programs need.
hl_status_t hl_mpi_member_set_checked(hl_comm_t *comm, const hl_instruction_t *inst,
                                      int64_t what, int64_t bytes,
                                      hl_mpi_group_set_t **out_set);
// The index into coll.sets of inst's group set; -1 when it was not prepared
// (for layers on top of the backend: collectives/shm/shm_layer.c).
int hl_mpi_set_index_of(hl_comm_t *comm, const hl_instruction_t *inst);
// collective-reduce (mpi_reduce.c).
hl_status_t hl_mpi_reduce(hl_comm_t *comm, const hl_instruction_t *inst, hl_dtype_t dtype,
                          const void *send, void *recv, int64_t count, int root,
                          const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request);

// Reductions (mpi_reduce_ops.c): the MPI datatype and op for reducing
// `dtype` with `reducer`: built-in ones where MPI has them, otherwise a user
// op. A user op has no context argument, so the state it needs travels as an
// attribute of the datatype passed to the MPI call (re-entrant: nothing
// global is set around the call, and concurrent non-blocking reductions each
// carry their own datatype).
typedef struct hl_mpi_reduction {
  MPI_Datatype type;
  MPI_Op op;
  MPI_Datatype owned_type;        // freed by end (custom reducers)
  struct hl_mpi_custom_state *state;  // owned (custom reducers)
  bool calls_executor;            // the user op runs the reducer computation
} hl_mpi_reduction_t;

// The reductions neither path defines (min / max of complex values, element
// types without data), as errors; shared by the MPI and shared-memory paths.
hl_status_t hl_reduction_check_type(hl_dtype_t dtype, hl_comm_reduce_op_t op);

hl_status_t hl_mpi_reduction_begin(hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                   const hl_comm_reducer_t *reducer,
                                   hl_mpi_reduction_t *out_reduction);
// Releases what begin made; returns the first error the reducer reported
// inside MPI (NULL when none).
hl_status_t hl_mpi_reduction_end(hl_mpi_reduction_t *reduction);
void hl_mpi_reduce_ops_deinit(hl_mpi_coll_t *coll);

#endif  // HL_COLLECTIVES_MPI_INTERNAL_H_
