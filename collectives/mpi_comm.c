#include "collectives/mpi_comm.h"

#include <limits.h>
#include <stdlib.h>

#include "collectives/mpi_internal.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

// The backend's state (hl_mpi_comm_t) lives in mpi_internal.h, shared with
// the collectives files. Communicators for process groups are created once
// per distinct group set in `prepare` (mpi_collectives.c) and cached there.
static const hl_comm_vtable_t kMpiCommVtable;

hl_status_t hl_mpi_status(int mpi_error, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_error, text, &len) != MPI_SUCCESS) len = 0;
  text[len] = '\0';
  return HL_ERROR(HL_COMM_ERROR, "%s: %s", what, len ? text : "MPI error");
}

static size_t g_max_message_bytes;  // 0: not read yet

size_t hl_mpi_max_message_bytes(void) {
  if (g_max_message_bytes == 0) {
    size_t v = INT_MAX;
    const char *e = getenv("HL_MPI_MAX_MESSAGE_BYTES");
    if (e && *e) {
      char *end = NULL;
      unsigned long long x = strtoull(e, &end, 10);
      if (end != e && *end == '\0' && x >= 1 && x < INT_MAX) v = (size_t)x;
    }
    g_max_message_bytes = v;
  }
  return g_max_message_bytes;
}

hl_status_t hl_mpi_comm_create(MPI_Comm world, hl_comm_t **out_comm) {
  *out_comm = NULL;
  (void)hl_mpi_max_message_bytes();  // read before any progress thread runs
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return HL_INTERNAL_ERROR("hl_mpi_comm_create called before MPI_Init");
  hl_mpi_polite_init(world);  // collective, as this function is (a no-op once decided)
  hl_mpi_comm_t *c = hl_calloc(1, sizeof(*c));
  if (!c) return HL_OOM();
  c->base.vtable = &kMpiCommVtable;
  c->comm = MPI_COMM_NULL;
  hl_mpi_coll_init(&c->coll);
  int err = MPI_Comm_dup(world, &c->comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(c->comm, &c->base.rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(c->comm, &c->base.size);
  if (err != MPI_SUCCESS) {
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    hl_free(c);
    return hl_mpi_status(err, "creating the MPI communicator");
  }
  *out_comm = &c->base;
  return NULL;
}

static void mpi_comm_destroy(hl_comm_t *base) {
  hl_mpi_comm_t *c = (hl_mpi_comm_t *)base;
  hl_mpi_coll_deinit(&c->coll);
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  hl_free(c);
}

static hl_status_t mpi_comm_barrier(hl_comm_t *base) {
  hl_mpi_comm_t *c = (hl_mpi_comm_t *)base;
  int err = hl_polite_barrier(c->comm);
  return err == MPI_SUCCESS ? NULL : hl_mpi_status(err, "MPI_Barrier");
}

static const hl_comm_vtable_t kMpiCommVtable = {
    .destroy = mpi_comm_destroy,
    .barrier = mpi_comm_barrier,
    .wait = hl_mpi_wait,
    .prepare = hl_mpi_prepare,
    .group_of = hl_mpi_group_of,
    .all_reduce = hl_mpi_all_reduce,
    .all_gather = hl_mpi_all_gather,
    .reduce_scatter = hl_mpi_reduce_scatter,
    .all_to_all = hl_mpi_all_to_all,
    .collective_permute = hl_mpi_collective_permute,
    .collective_permute_slot = hl_mpi_collective_permute_slot,
    .collective_broadcast = hl_mpi_collective_broadcast,
    .reduce = hl_mpi_reduce,
    .ragged_all_to_all = hl_mpi_ragged_all_to_all,
};
