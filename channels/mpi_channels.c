// The channel transport interposes on the communicator's vtable: setup
// copies the backend's vtable into a layer that also holds the channels'
// own communicator and points comm->vtable at the copy, with send / recv /
// channel_wait / destroy replaced. The backend (collectives/mpi_comm.c) needs
// no knowledge of channels, and channel messages, tagged by channel id on a
// duplicate of the world, can never match a collective's.
#include "channels/mpi_channels.h"

#include <limits.h>
#include <string.h>

#include "collectives/mpi_comm.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

typedef struct channel_layer {
  hl_comm_vtable_t vtable;       // first: comm->vtable points here
  const hl_comm_vtable_t *base;  // the backend's own vtable
  MPI_Comm comm;                 // channel traffic only
  bool retired;                  // hl_mpi_channels_retire: never freed
} channel_layer_t;

// A message beyond hl_mpi_max_message_bytes() (MPI counts are int) goes as
// consecutive chunks on the same tag, which MPI's non-overtaking rule
// matches in order; one chunk (the usual case) uses the inline request.
typedef struct channel_request {
  MPI_Request *mpi;  // inline_mpi, or owned for several chunks
  int n;
  MPI_Request inline_mpi[1];
  size_t bytes;
  bool is_recv;
  int peer;
} channel_request_t;

static channel_layer_t *layer_of(hl_comm_t *comm) { return (channel_layer_t *)comm->vtable; }

static void request_free(channel_request_t *r) {
  if (r->mpi != r->inline_mpi) hl_free(r->mpi);
  hl_free(r);
}

static hl_status_t start(hl_comm_t *comm, bool is_recv, int peer, int64_t tag, void *data,
                         size_t bytes, hl_comm_request_t **out_request) {
  *out_request = NULL;
  size_t cb = hl_mpi_max_message_bytes();
  size_t chunks = bytes == 0 ? 1 : (bytes - 1) / cb + 1;
  if (chunks > INT_MAX)
    return HL_UNIMPL("a channel message of %zu bytes (%zu chunks)", bytes, chunks);
  channel_request_t *r = hl_calloc(1, sizeof(*r));
  if (!r) return HL_OOM();
  r->mpi = chunks == 1 ? r->inline_mpi : hl_malloc(chunks * sizeof(MPI_Request));
  if (!r->mpi) {
    hl_free(r);
    return HL_OOM();
  }
  r->bytes = bytes;
  r->is_recv = is_recv;
  r->peer = peer;
  MPI_Comm c = layer_of(comm)->comm;
  int err = MPI_SUCCESS;
  for (size_t i = 0, a = 0; i < chunks && err == MPI_SUCCESS; i++, a += cb) {
    int n = (int)(bytes - a < cb ? bytes - a : cb);
    char *at = (char *)data + a;
    err = is_recv ? MPI_Irecv(at, n, MPI_BYTE, peer, (int)tag, c, &r->mpi[i])
                  : MPI_Isend(at, n, MPI_BYTE, peer, (int)tag, c, &r->mpi[i]);
    if (err == MPI_SUCCESS) r->n++;
  }
  if (err != MPI_SUCCESS) {
    // Chunks already posted stay with MPI; their buffers are the caller's.
    request_free(r);
    return hl_mpi_status(err, is_recv ? "MPI_Irecv" : "MPI_Isend");
  }
  *out_request = (hl_comm_request_t *)r;
  return NULL;
}

static hl_status_t channel_send(hl_comm_t *comm, int peer, int64_t tag, const void *data,
                                size_t bytes, hl_comm_request_t **out_request) {
  return start(comm, false, peer, tag, (void *)data, bytes, out_request);
}

static hl_status_t channel_recv(hl_comm_t *comm, int peer, int64_t tag, void *data, size_t bytes,
                                hl_comm_request_t **out_request) {
  return start(comm, true, peer, tag, data, bytes, out_request);
}

static hl_status_t channel_wait(hl_comm_t *comm, hl_comm_request_t *request) {
  channel_request_t *r = (channel_request_t *)request;
  if (!r) return NULL;
  hl_status_t st = NULL;
  size_t got = 0, cb = hl_mpi_max_message_bytes();
  for (int i = 0; i < r->n && !st; i++) {
    MPI_Status status;
    int err = hl_mpi_polite_wait(&r->mpi[i], &status);
    if (err != MPI_SUCCESS) {
      st = hl_mpi_status(err, r->is_recv ? "waiting for a receive" : "waiting for a send");
    } else if (r->is_recv) {
      int n = 0;
      MPI_Get_count(&status, MPI_BYTE, &n);
      got += (size_t)n;
      // A short chunk before the last: the sender had fewer bytes, so the
      // remaining chunk receives would never match; withdraw them.
      if ((size_t)n < cb && i + 1 < r->n) {
        for (int k = i + 1; k < r->n; k++) {
          MPI_Cancel(&r->mpi[k]);
          hl_mpi_polite_wait(&r->mpi[k], MPI_STATUS_IGNORE);
        }
        break;
      }
    }
  }
  if (!st && r->is_recv && got != r->bytes)
    st = HL_INVALID("received %zu bytes from process %d, expected %zu (shape mismatch)", got,
                    r->peer, r->bytes);
  request_free(r);
  return st;
}

static bool channel_abandon(hl_comm_t *comm, hl_comm_request_t *request) {
  (void)comm;
  channel_request_t *r = (channel_request_t *)request;
  if (!r) return true;
  bool buffer_free = true;
  for (int i = 0; i < r->n; i++) {
    int done = 0;
    MPI_Test(&r->mpi[i], &done, MPI_STATUS_IGNORE);
    if (done) continue;
    if (r->is_recv) {
      // Else the message could still land in the buffer after it was freed
      // (or reused by the next program of a batch).
      MPI_Cancel(&r->mpi[i]);
      hl_mpi_polite_wait(&r->mpi[i], MPI_STATUS_IGNORE);  // returns once cancelled or done
    } else {
      MPI_Request_free(&r->mpi[i]);
      buffer_free = false;
    }
  }
  request_free(r);
  return buffer_free;
}

static void channel_destroy(hl_comm_t *comm) {
  channel_layer_t *l = layer_of(comm);
  comm->vtable = l->base;
  if (l->comm != MPI_COMM_NULL && !l->retired) MPI_Comm_free(&l->comm);
  hl_free(l);
  comm->vtable->destroy(comm);
}

void hl_mpi_channels_retire(hl_comm_t *comm) {
  if (comm && comm->vtable->destroy == channel_destroy) layer_of(comm)->retired = true;
}

static hl_status_t gather(MPI_Comm world, const hl_channel_endpoint_t *mine, int mine_count,
                          hl_channel_endpoint_t **out_all, int *out_total) {
  *out_all = NULL;
  *out_total = 0;
  int size;
  MPI_Comm_size(world, &size);
  const int fields = (int)(sizeof(hl_channel_endpoint_t) / sizeof(int64_t));
  int *counts = hl_calloc((size_t)size, sizeof(int));
  int *offsets = hl_calloc((size_t)size, sizeof(int));
  if (!counts || !offsets) {
    hl_free(counts);
    hl_free(offsets);
    return HL_OOM();
  }
  int n = mine_count * fields;
  int err = hl_polite_allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, world);
  long long total = 0;
  for (int r = 0; r < size; r++) {
    offsets[r] = (int)total;
    total += counts[r];
  }
  hl_status_t st = err == MPI_SUCCESS ? NULL : hl_mpi_status(err, "gathering channel tables");
  // Every process computes the same total, so all take the same branch.
  if (!st && total > INT_MAX) st = HL_UNIMPL("too many channel endpoints (%lld values)", total);
  hl_channel_endpoint_t *all = NULL;
  if (!st) {
    all = hl_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    if (!all) st = HL_OOM();
  }
  if (!st) {
    err = hl_polite_allgatherv(mine, n, MPI_INT64_T, all, counts, offsets, MPI_INT64_T, world);
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "gathering channel tables");
  }
  hl_free(counts);
  hl_free(offsets);
  if (st) {
    hl_free(all);
    return st;
  }
  *out_all = all;
  *out_total = (int)(total / fields);
  return NULL;
}

static hl_status_t check_tags(MPI_Comm c, const hl_channel_endpoint_t *all, int total) {
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(c, MPI_TAG_UB, &ub, &flag);
  int64_t limit = flag && ub ? *ub : 32767;
  for (int i = 0; i < total; i++)
    if (all[i].channel_id > limit)
      return HL_UNIMPL("channel %lld: ids above %lld cannot be MPI tags",
                       (long long)all[i].channel_id, (long long)limit);
  return NULL;
}

hl_status_t hl_mpi_channels_setup(hl_comm_t *comm, MPI_Comm world,
                                  const hl_channel_endpoint_t *mine, int mine_count,
                                  hl_channel_env_t *env) {
  env->routes = NULL;
  env->route_count = 0;
  channel_layer_t *l = hl_calloc(1, sizeof(*l));
  if (!l) return HL_OOM();
  l->comm = MPI_COMM_NULL;
  // Collective: done first so every process reaches it whatever follows.
  int err = MPI_Comm_dup(world, &l->comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_set_errhandler(l->comm, MPI_ERRORS_RETURN);
  if (err != MPI_SUCCESS) {
    if (l->comm != MPI_COMM_NULL) MPI_Comm_free(&l->comm);
    hl_free(l);
    return hl_mpi_status(err, "creating the channel communicator");
  }
  l->base = comm->vtable;
  l->vtable = *comm->vtable;
  l->vtable.send = channel_send;
  l->vtable.recv = channel_recv;
  l->vtable.channel_wait = channel_wait;
  l->vtable.channel_abandon = channel_abandon;
  l->vtable.destroy = channel_destroy;
  comm->vtable = &l->vtable;

  hl_channel_endpoint_t *all = NULL;
  int total = 0;
  HL_RETURN_IF_ERROR(gather(world, mine, mine_count, &all, &total));
  hl_status_t st = check_tags(l->comm, all, total);
  if (!st) {
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    st = hl_channel_resolve(all, total, rank, size, &env->routes, &env->route_count);
  }
  hl_free(all);
  return st;
}

void hl_mpi_channels_release_routes(hl_channel_env_t *env) {
  hl_free(env->routes);
  env->routes = NULL;
  env->route_count = 0;
}

hl_status_t hl_mpi_channels_connect(hl_comm_t *comm, MPI_Comm world, const hl_module_t *module,
                                    int64_t replicas, int64_t partitions, int rank,
                                    hl_channel_env_t *env) {
  hl_channel_grid_t grid = {replicas, partitions, rank};
  hl_channel_endpoint_t *mine = NULL;
  int count = 0;
  hl_status_t local = hl_channel_collect(module, &grid, &mine, &count);
  hl_status_t st = hl_mpi_channels_setup(comm, world, mine, count, env);
  hl_free(mine);
  if (local) {
    hl_status_free(st);
    return local;
  }
  return st;
}
