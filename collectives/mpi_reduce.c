// collective-reduce on MPI: MPI_Reduce / MPI_Ireduce rooted at a position of
// the instruction's group communicator, which mpi_collectives.c's prepare
// splits with the group position as key, so communicator rank == group
// position. The reduction (built-in op, typed user op or the executor's
// reducer) comes from mpi_reduce_ops.c exactly as for all-reduce, so a
// collective-reduce reduces the same as an all-reduce of the same reducer.
//
// Messages beyond hl_mpi_max_message_bytes() go as several reduces of
// whole-element chunks, each a complete reduction, like all-reduce's chunks.
// As with all-reduce, a reduction that runs the executor completes inside
// the call even when a request is asked for (the executor is not re-entrant
// across frames).
#include <stdint.h>

#include "collectives/mpi_internal.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

// Frees a request without waiting (its posted transfers failed to post or it
// already completed) and returns the reducer's status.
static hl_status_t release(hl_comm_request_t *r) {
  r->n = 0;
  return hl_mpi_wait(NULL, r);
}

hl_status_t hl_mpi_reduce(hl_comm_t *base, const hl_instruction_t *inst, hl_dtype_t dtype,
                          const void *send, void *recv, int64_t count, int root,
                          const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request) {
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)base;
  if (out_request) *out_request = NULL;
  if (count < 0) return HL_INVALID("%s: negative element count", hl_instruction_location(inst));
  size_t es = hl_dtype_size(dtype);
  hl_mpi_group_set_t *s;
  // The root takes part in the agreement so members disagreeing on it fail
  // instead of pairing different reduces.
  HL_RETURN_IF_ERROR(hl_mpi_member_set_checked(base, inst, ((int64_t)root * 64 + dtype) * 16 +
                                                   reducer->op,
                                               count * (int64_t)es, &s));
  if (root < 0 || root >= s->my_size)
    return HL_INVALID("%s: root %d is not a position in its group of %d processes",
                      hl_instruction_location(inst), root, s->my_size);
  bool is_root = s->my_index == root;
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  r->reduction = hl_calloc(1, sizeof(*r->reduction));
  if (!r->reduction) {
    hl_status_free(release(r));
    return HL_OOM();
  }
  hl_status_t st = hl_mpi_reduction_begin(&m->coll, dtype, reducer, r->reduction);
  if (st) {
    hl_free(r->reduction);
    r->reduction = NULL;
    hl_status_free(release(r));
    return hl_status_annotate(st, "%s", hl_instruction_location(inst));
  }
  hl_mpi_reduction_t *red = r->reduction;
  bool blocking = !out_request || red->calls_executor;
  size_t limit = hl_mpi_max_message_bytes() / (es ? es : 1);
  int64_t ce = limit < 1 ? 1 : limit > INT32_MAX ? INT32_MAX : (int64_t)limit;
  int err = MPI_SUCCESS;
  // At least one call even for zero elements, so every member matches it.
  int64_t a = 0;
  do {
    int c = (int)(count - a < ce ? count - a : ce);
    const char *sb = (const char *)send + (size_t)a * es;
    char *rb = is_root ? (char *)recv + (size_t)a * es : NULL;
    const void *sarg = is_root && send == recv ? MPI_IN_PLACE : (const void *)sb;
    if (blocking) {
      // The executor's reducer runs inside this thread's own call only: a
      // polite wait's non-blocking form could run it from the progress thread.
      err = (red->calls_executor ? MPI_Reduce : hl_polite_reduce)(sarg, rb, c, red->type, red->op,
                                                                root, s->comm);
    } else {
      MPI_Request *q;
      st = hl_mpi_request_next(r, &q);
      if (!st) err = MPI_Ireduce(sarg, rb, c, red->type, red->op, root, s->comm, q);
    }
    a += c;
  } while (a < count && !st && err == MPI_SUCCESS);
  if (st || err != MPI_SUCCESS) {
    hl_status_free(release(r));
    return st ? st : hl_mpi_status(err, "MPI collective-reduce");
  }
  if (blocking && !out_request) return release(r);
  if (blocking) {  // completed already: the request only reports the reducer's status
    r->deferred = hl_mpi_reduction_end(r->reduction);
    hl_free(r->reduction);
    r->reduction = NULL;
  }
  hl_mpi_progress_add(m->coll.progress, r);
  *out_request = r;
  return NULL;
}
