// The collectives of the MPI backend.
//
// prepare: every rank walks its module (computations in module order,
// instructions in order) and resolves each collective's groups; the ranks
// then exchange their distinct group sets and every rank calls
// MPI_Comm_split once per set of the union, in the same order. Communicator
// creation therefore never depends on the branches a rank takes later, nor
// on the ranks running the same program (MPMD jobs). A group set that is the
// whole job in rank order reuses the job's communicator.
//
// Mismatched programs: prepare agrees on a fingerprint of the module's
// collectives (opcode, shape, groups of each) in one MPI_Allreduce. Equal
// fingerprints (the usual SPMD run of one file) mean no per-call checks: a
// per-call agreement costs a round trip, more than the 2 us allowed over a
// raw 4-byte call. Different fingerprints (MPMD, or differing files) switch
// on a per-call agreement on (opcode, type, size) within the group, so a
// group whose members run different collectives fails on every member with
// a clear message instead of hanging (HL_COLLECTIVES_CHECK=1 forces it on).
// Ranks of one program that take different data-dependent paths are the
// program's bug, as on XLA; a rank that fails while the others wait in a
// collective ends the job through the launcher's agreement timeout.
//
// Custom reducers under -start: the reduction runs in the executor, which is
// not re-entrant across frames, so such an all-reduce completes inside the
// start call (the request is already complete). Built-in and typed
// reductions stay non-blocking.
#include <limits.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "collectives/mpi_internal.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

void hl_mpi_coll_init(hl_mpi_coll_t *coll) {
  memset(coll, 0, sizeof(*coll));
  coll->p2p = MPI_COMM_NULL;
  for (int t = 0; t < HL_DTYPE_COUNT_; t++)
    for (int o = 0; o < 8; o++) coll->typed[t][o].type = MPI_DATATYPE_NULL;
}

void hl_mpi_coll_deinit(hl_mpi_coll_t *coll) {
  hl_mpi_progress_destroy(coll->progress);
  coll->progress = NULL;
  for (int i = 0; i < coll->set_count; i++) {
    hl_mpi_group_set_t *s = &coll->sets[i];
    if (s->owns_comm && s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    hl_process_groups_deinit(&s->groups);
  }
  hl_free(coll->sets);
  hl_free(coll->slots);
  if (coll->p2p != MPI_COMM_NULL) MPI_Comm_free(&coll->p2p);
  hl_mpi_reduce_ops_deinit(coll);
  coll->sets = NULL;
  coll->slots = NULL;
  coll->set_count = coll->slot_cap = 0;
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

hl_status_t hl_mpi_request_new(hl_comm_request_t **out) {
  *out = hl_calloc(1, sizeof(**out));
  if (!*out) return HL_OOM();
  (*out)->reqs = (*out)->inline_reqs;
  (*out)->cap = 2;
  (*out)->reqs[0] = (*out)->reqs[1] = MPI_REQUEST_NULL;
  return NULL;
}

hl_status_t hl_mpi_request_next(hl_comm_request_t *r, MPI_Request **out) {
  if (r->n == r->cap) {
    int cap = r->cap * 2;
    MPI_Request *grown = hl_malloc((size_t)cap * sizeof(*grown));
    if (!grown) return HL_OOM();
    memcpy(grown, r->reqs, (size_t)r->n * sizeof(*grown));
    if (r->reqs != r->inline_reqs) hl_free(r->reqs);
    r->reqs = grown;
    r->cap = cap;
  }
  r->reqs[r->n] = MPI_REQUEST_NULL;
  *out = &r->reqs[r->n++];
  return NULL;
}

static void request_free(hl_comm_request_t *r) {
  if (!r) return;
  if (r->reqs != r->inline_reqs) hl_free(r->reqs);
  if (r->reduction) {
    hl_status_free(hl_mpi_reduction_end(r->reduction));
    hl_free(r->reduction);
  }
  hl_status_free(r->deferred);
  hl_free(r);
}

hl_status_t hl_mpi_wait(hl_comm_t *comm, hl_comm_request_t *r) {
  (void)comm;
  if (!r) return NULL;
  if (r->progress) hl_mpi_progress_remove(r->progress, r);
  hl_status_t st = NULL;
  if (r->n > 0) {
    int err = hl_mpi_polite_waitall(r->n, r->reqs);
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "completing a non-blocking operation");
  }
  if (r->reduction) {
    hl_status_t red = hl_mpi_reduction_end(r->reduction);
    hl_free(r->reduction);
    r->reduction = NULL;
    if (!st) st = red;
    else hl_status_free(red);
  }
  if (!st) {
    st = r->deferred;
    r->deferred = NULL;
  }
  request_free(r);
  return st;
}

//===----------------------------------------------------------------------===//
// Instruction -> group set
//===----------------------------------------------------------------------===//

static size_t hash_ptr(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= (uintptr_t)0xed5ad4bbu;
  x ^= x >> 11;
  return (size_t)x;
}

static hl_status_t slots_insert(hl_mpi_coll_t *c, const hl_instruction_t *inst, int set) {
  size_t mask = (size_t)c->slot_cap - 1;
  for (size_t i = hash_ptr(inst) & mask;; i = (i + 1) & mask) {
    if (!c->slots[i].inst || c->slots[i].inst == inst) {
      c->slots[i].inst = inst;
      c->slots[i].set = set;
      return NULL;
    }
  }
}

static hl_mpi_group_set_t *lookup(hl_mpi_comm_t *m, const hl_instruction_t *inst,
                                  hl_status_t *out_status) {
  hl_mpi_coll_t *c = &m->coll;
  if (c->slot_cap) {
    size_t mask = (size_t)c->slot_cap - 1;
    for (size_t i = hash_ptr(inst) & mask; c->slots[i].inst; i = (i + 1) & mask)
      if (c->slots[i].inst == inst) {
        *out_status = NULL;
        return &c->sets[c->slots[i].set];
      }
  }
  *out_status = HL_INTERNAL_ERROR("%s: its process groups were not prepared (the module was "
                                  "not passed to the communicator's prepare step)",
                                  hl_instruction_location(inst));
  return NULL;
}

// FNV-1a over the bytes.
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

static uint64_t fingerprint_inst(uint64_t h, const hl_instruction_t *inst,
                                 const hl_process_groups_t *g) {
  int32_t op = inst->opcode;
  h = fnv(h, &op, sizeof(op));
  const char *shape = hl_shape_debug_string(&inst->shape);
  h = fnv(h, shape, strlen(shape));
  h = fnv(h, g->offsets, (size_t)(g->group_count + 1) * sizeof(int));
  if (g->group_count) h = fnv(h, g->ranks, (size_t)g->offsets[g->group_count] * sizeof(int));
  return h;
}

static hl_status_t add_set(hl_mpi_comm_t *m, hl_process_groups_t *g, int *out_set) {
  hl_mpi_coll_t *c = &m->coll;
  for (int i = 0; i < c->set_count; i++)
    if (c->sets[i].groups.is_permute == g->is_permute &&
        hl_process_groups_equal(&c->sets[i].groups, g)) {
      hl_process_groups_deinit(g);
      *out_set = i;
      return NULL;
    }
  hl_mpi_group_set_t *sets = hl_realloc(c->sets, (size_t)(c->set_count + 1) * sizeof(*sets));
  if (!sets) return HL_OOM();
  c->sets = sets;
  hl_mpi_group_set_t *s = &sets[c->set_count];
  memset(s, 0, sizeof(*s));
  s->groups = *g;
  memset(g, 0, sizeof(*g));
  s->comm = MPI_COMM_NULL;
  s->my_group = hl_process_groups_find(&s->groups, m->base.rank, &s->my_index);
  s->my_size = s->my_group >= 0 ? hl_process_groups_size(&s->groups, s->my_group) : 0;
  *out_set = c->set_count++;
  return NULL;
}

static bool is_whole_job_in_order(const hl_process_groups_t *g, int size) {
  if (g->group_count != 1 || g->offsets[1] != size) return false;
  for (int i = 0; i < size; i++)
    if (g->ranks[i] != i) return false;
  return true;
}

// Every rank's distinct group sets, united in rank order: MPMD jobs (and
// ranks whose programs differ) hold different collectives, but
// MPI_Comm_split is collective over the whole job, so every rank must create
// the same sequence of communicators. Each rank sends its sets as ints
// [is_permute, group_count, rank_count, offsets..., ranks...] and every rank
// builds the same union; the local sets are then remapped into it.
static hl_status_t unite_sets(hl_mpi_comm_t *m) {
  hl_mpi_coll_t *c = &m->coll;
  int size = m->base.size;
  int64_t len = 0;
  for (int i = 0; i < c->set_count; i++) {
    const hl_process_groups_t *g = &c->sets[i].groups;
    len += 3 + (g->group_count + 1) + g->offsets[g->group_count];
  }
  if (len > INT_MAX / 2) return HL_UNIMPL("too many process groups to exchange");
  int mine = (int)len;
  int *lens = hl_calloc((size_t)size, sizeof(int)), *displs = hl_calloc((size_t)size, sizeof(int));
  int *buf = hl_malloc((size_t)(len ? len : 1) * sizeof(int));
  int *map = hl_malloc((size_t)(c->set_count ? c->set_count : 1) * sizeof(int));
  int *all = NULL;
  hl_mpi_group_set_t *gsets = NULL;
  int gcount = 0;
  if (!lens || !displs || !buf || !map) {
    hl_free(lens);
    hl_free(displs);
    hl_free(buf);
    hl_free(map);
    return HL_OOM();
  }
  hl_status_t st = NULL;
  int err = hl_polite_allgather(&mine, 1, MPI_INT, lens, 1, MPI_INT, m->comm);
  if (err != MPI_SUCCESS) st = hl_mpi_status(err, "exchanging process groups");
  int64_t total = 0;
  for (int r = 0; !st && r < size; r++) {
    displs[r] = (int)total;
    total += lens[r];
  }
  if (!st && total > INT_MAX) st = HL_UNIMPL("too many process groups to exchange");
  if (!st) {
    all = hl_malloc((size_t)(total ? total : 1) * sizeof(int));
    if (!all) st = HL_OOM();
  }
  if (!st) {
    int64_t at = 0;
    for (int i = 0; i < c->set_count; i++) {
      const hl_process_groups_t *g = &c->sets[i].groups;
      int nr = g->offsets[g->group_count];
      buf[at++] = g->is_permute;
      buf[at++] = g->group_count;
      buf[at++] = nr;
      memcpy(buf + at, g->offsets, (size_t)(g->group_count + 1) * sizeof(int));
      at += g->group_count + 1;
      if (nr) memcpy(buf + at, g->ranks, (size_t)nr * sizeof(int));  // no pairs: ranks NULL
      at += nr;
    }
    err = hl_polite_allgatherv(buf, mine, MPI_INT, all, lens, displs, MPI_INT, m->comm);
    if (err != MPI_SUCCESS) st = hl_mpi_status(err, "exchanging process groups");
  }
  for (int r = 0; !st && r < size; r++) {
    int64_t at = displs[r], end = at + lens[r];
    for (int local = 0; !st && at < end; local++) {
      hl_process_groups_t g = {.is_permute = all[at] != 0, .group_count = all[at + 1]};
      int nr = all[at + 2];
      at += 3;
      const int *offsets = all + at, *ranks = all + at + g.group_count + 1;
      at += g.group_count + 1 + nr;
      hl_process_groups_t view = g;
      view.offsets = (int *)offsets;
      view.ranks = (int *)ranks;
      int found = -1;
      for (int k = 0; k < gcount && found < 0; k++)
        if (gsets[k].groups.is_permute == g.is_permute &&
            hl_process_groups_equal(&gsets[k].groups, &view))
          found = k;
      if (found < 0) {
        hl_mpi_group_set_t *grown = hl_realloc(gsets, (size_t)(gcount + 1) * sizeof(*gsets));
        if (!grown) {
          st = HL_OOM();
          break;
        }
        gsets = grown;
        hl_mpi_group_set_t *s = &gsets[gcount];
        memset(s, 0, sizeof(*s));
        s->comm = MPI_COMM_NULL;
        s->groups = g;
        s->groups.offsets = hl_malloc((size_t)(g.group_count + 1) * sizeof(int));
        s->groups.ranks = hl_malloc((size_t)(nr ? nr : 1) * sizeof(int));
        if (!s->groups.offsets || !s->groups.ranks) {
          hl_process_groups_deinit(&s->groups);
          st = HL_OOM();
          break;
        }
        memcpy(s->groups.offsets, offsets, (size_t)(g.group_count + 1) * sizeof(int));
        memcpy(s->groups.ranks, ranks, (size_t)nr * sizeof(int));
        s->my_group = hl_process_groups_find(&s->groups, m->base.rank, &s->my_index);
        s->my_size = s->my_group >= 0 ? hl_process_groups_size(&s->groups, s->my_group) : 0;
        found = gcount++;
      }
      if (r == m->base.rank) map[local] = found;
    }
  }
  if (!st) {
    for (int i = 0; i < c->set_count; i++) hl_process_groups_deinit(&c->sets[i].groups);
    hl_free(c->sets);
    c->sets = gsets;
    c->set_count = gcount;
    gsets = NULL;
    for (int i = 0; i < c->slot_cap; i++)
      if (c->slots[i].inst) c->slots[i].set = map[c->slots[i].set];
  }
  for (int k = 0; k < gcount && gsets; k++) hl_process_groups_deinit(&gsets[k].groups);
  hl_free(gsets);
  hl_free(lens);
  hl_free(displs);
  hl_free(buf);
  hl_free(map);
  hl_free(all);
  return st;
}

hl_status_t hl_mpi_prepare(hl_comm_t *base, const hl_module_t *module, int64_t num_replicas,
                           int64_t num_partitions) {
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)base;
  hl_mpi_coll_t *c = &m->coll;
  hl_mpi_coll_deinit(c);
  hl_mpi_coll_init(c);
  c->num_replicas = num_replicas > 0 ? num_replicas : 1;
  c->num_partitions = num_partitions > 0 ? num_partitions : 1;
  if (c->num_replicas * c->num_partitions != base->size)
    return HL_INVALID("the grid %lldx%lld does not match the %d processes of the job",
                      (long long)c->num_replicas, (long long)c->num_partitions, base->size);
  int count = 0;
  for (int k = 0; k < module->computation_count; k++) {
    const hl_computation_t *comp = module->computations[k];
    for (int i = 0; i < comp->instruction_count; i++)
      count += hl_opcode_is_collective(comp->instructions[i]->opcode);
  }
  int cap = 16;
  while (cap < 2 * count) cap *= 2;
  c->slots = hl_calloc((size_t)cap, sizeof(*c->slots));
  if (!c->slots) return HL_OOM();
  c->slot_cap = cap;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  hl_status_t st = NULL;
  for (int k = 0; k < module->computation_count && !st; k++) {
    const hl_computation_t *comp = module->computations[k];
    for (int i = 0; i < comp->instruction_count && !st; i++) {
      const hl_instruction_t *inst = comp->instructions[i];
      if (!hl_opcode_is_collective(inst->opcode)) continue;
      hl_process_groups_t g;
      st = hl_process_groups_resolve(inst, c->num_replicas, c->num_partitions, &g);
      if (st) break;
      h = fingerprint_inst(h, inst, &g);
      int set = -1;
      st = add_set(m, &g, &set);
      hl_process_groups_deinit(&g);
      if (!st) st = slots_insert(c, inst, set);
    }
  }
  // The agreement runs even after a local error, so no rank is left waiting
  // in it: every rank's prepare returns (the launcher then reports).
  uint64_t mine[3] = {h, ~h, st ? 1 : 0}, all[3];
  int err = hl_polite_allreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, m->comm);
  if (st) return st;
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "agreeing on the program's collectives");
  if (all[2]) return HL_INVALID("another rank failed to resolve the collectives' groups");
  // Different programs (an MPMD job): legal, but then a collective's peers
  // may disagree on what they run, so every call first checks.
  const char *force = getenv("HL_COLLECTIVES_CHECK");
  c->check_calls = all[0] != h || all[1] != ~h || (force && *force && *force != '0');
  HL_RETURN_IF_ERROR(unite_sets(m));
  HL_RETURN_IF_ERROR(hl_mpi_progress_create(&c->progress));
  err = MPI_Comm_dup(m->comm, &c->p2p);
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "creating the permute communicator");
  for (int i = 0; i < c->set_count; i++) {
    hl_mpi_group_set_t *s = &c->sets[i];
    if (s->groups.is_permute) continue;
    if (is_whole_job_in_order(&s->groups, base->size)) {
      s->comm = m->comm;
      continue;
    }
    err = MPI_Comm_split(m->comm, s->my_group >= 0 ? s->my_group : MPI_UNDEFINED,
                         s->my_index, &s->comm);
    if (err != MPI_SUCCESS) return hl_mpi_status(err, "creating a group communicator");
    s->owns_comm = s->comm != MPI_COMM_NULL;
    if (s->comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  }
  return NULL;
}

hl_status_t hl_mpi_group_of(hl_comm_t *base, const hl_instruction_t *inst, int *out_size,
                            int *out_index) {
  hl_status_t st;
  hl_mpi_group_set_t *s = lookup((hl_mpi_comm_t *)base, inst, &st);
  if (!s) return st;
  *out_size = s->my_size;
  *out_index = s->my_index;
  return NULL;
}

//===----------------------------------------------------------------------===//
// The operations
//===----------------------------------------------------------------------===//
//
// Messages of any size: MPI counts are int, so one call moves at most
// INT_MAX elements. What exceeds hl_mpi_max_message_bytes() is split into
// chunks: reductions into element ranges (each chunk a complete reduction
// of whole elements, so user ops and executor reducers stay correct),
// byte collectives into byte ranges of every member's block (a resized
// datatype places the chunk of block j at j * block), point-to-point into
// consecutive messages, which MPI's non-overtaking rule matches in order. A
// non-blocking call posts every chunk into its one request. Messages within
// the limit take the single-call path (no extra allocation or copy).

// Units of `unit` bytes per chunk: within the byte limit and INT_MAX.
static int64_t chunk_units(size_t unit) {
  size_t m = hl_mpi_max_message_bytes() / (unit ? unit : 1);
  if (m < 1) m = 1;
  if (m > INT_MAX) m = INT_MAX;
  return (int64_t)m;
}

// With differing programs (check_calls), the group first agrees on what it
// runs: one small MPI_Iallreduce of (opcode, element type, bytes) and its
// complement, so a member running something else fails here, on every
// member, instead of matching the wrong collective. Members stuck in
// different groups' checks (or waiting for a rank that has finished) give
// up after HL_COLLECTIVES_CHECK_TIMEOUT seconds (default 60) with an error
// naming the collective, which the launcher reports and ends the job on.
static double check_timeout_s(void) {
  const char *t = getenv("HL_COLLECTIVES_CHECK_TIMEOUT");
  double v = t && *t ? atof(t) : 60.0;
  return v > 0 ? v : 60.0;
}

static hl_status_t check_call(hl_mpi_comm_t *m, hl_mpi_group_set_t *s,
                              const hl_instruction_t *inst, int64_t what, int64_t bytes) {
  if (!m->coll.check_calls || s->comm == MPI_COMM_NULL) return NULL;
  uint64_t key = fnv(UINT64_C(0xcbf29ce484222325), &inst->opcode, sizeof(inst->opcode));
  key = fnv(key, &what, sizeof(what));
  key = fnv(key, &bytes, sizeof(bytes));
  // Heap buffers: after a timeout the request stays pending and may still
  // write them, so they are then deliberately not freed.
  uint64_t *buf = hl_malloc(4 * sizeof(uint64_t));
  if (!buf) return HL_OOM();
  buf[0] = key;
  buf[1] = ~key;
  MPI_Request req;
  int err = MPI_Iallreduce(buf, buf + 2, 2, MPI_UINT64_T, MPI_MAX, s->comm, &req);
  if (err != MPI_SUCCESS) {
    hl_free(buf);
    return hl_mpi_status(err, "agreeing on a collective");
  }
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double limit = check_timeout_s();
  for (int done = 0, spins = 0;; spins++) {
    err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS) {
      hl_free(buf);
      return hl_mpi_status(err, "agreeing on a collective");
    }
    if (done) break;
    if (spins > 1000) {
      struct timespec pause = {0, 50000};
      nanosleep(&pause, NULL);
      clock_gettime(CLOCK_MONOTONIC, &now);
      double waited = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9;
      if (waited > limit)
        return HL_INVALID("%s: waited %.0f s for the other processes of its group to reach a "
                          "collective; the ranks' programs disagree (they run different "
                          "collectives, or some finished early)",
                          hl_instruction_location(inst), waited);
    }
  }
  bool same = buf[2] == key && buf[3] == ~key;
  hl_free(buf);
  if (!same)
    return HL_INVALID("%s: the processes of its group run different collectives here (this "
                      "one: %s of %lld bytes); the ranks' programs disagree",
                      hl_instruction_location(inst), hl_opcode_name(inst->opcode),
                      (long long)bytes);
  return NULL;
}

static hl_status_t member_set(hl_comm_t *base, const hl_instruction_t *inst,
                              hl_mpi_group_set_t **out) {
  hl_status_t st;
  *out = lookup((hl_mpi_comm_t *)base, inst, &st);
  if (!*out) return st;
  if ((*out)->comm == MPI_COMM_NULL)
    return HL_INTERNAL_ERROR("%s: this process is in none of its groups",
                             hl_instruction_location(inst));
  return NULL;
}

// Finishes a call: blocking -> report; non-blocking -> hand the request out.
// `st` is an error met while posting (it wins over `err`).
static hl_status_t finish_in(hl_comm_t *base, hl_status_t st, int err, const char *what,
                             hl_comm_request_t *r, hl_comm_request_t **out_request) {
  if (st || err != MPI_SUCCESS) {
    request_free(r);
    return st ? st : hl_mpi_status(err, what);
  }
  if (out_request) {
    if (base) hl_mpi_progress_add(((hl_mpi_comm_t *)base)->coll.progress, r);
    *out_request = r;
    return NULL;
  }
  r->n = 0;
  if (r->reduction) {
    st = hl_mpi_reduction_end(r->reduction);
    hl_free(r->reduction);
    r->reduction = NULL;
  }
  request_free(r);
  return st;
}

// The next request slot of r into *q (NULL when r is NULL: a blocking
// call); false after setting *st when that fails.
static bool next_slot(hl_comm_request_t *r, MPI_Request **q, hl_status_t *st) {
  *q = NULL;
  if (!r) return true;
  *st = hl_mpi_request_next(r, q);
  return *st == NULL;
}

static hl_status_t reduce_common(hl_comm_t *base, const hl_instruction_t *inst,
                                 hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                 const hl_comm_reducer_t *reducer, bool scatter,
                                 hl_comm_request_t **out_request) {
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)base;
  if (out_request) *out_request = NULL;
  hl_mpi_group_set_t *s;
  HL_RETURN_IF_ERROR(member_set(base, inst, &s));
  HL_RETURN_IF_ERROR(check_call(m, s, inst, dtype * 16 + reducer->op,
                                count * (int64_t)hl_dtype_size(dtype)));
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  r->inst = inst;  // for the progress hook
  r->bytes = count * (int64_t)hl_dtype_size(dtype);
  r->reduction = hl_calloc(1, sizeof(*r->reduction));
  if (!r->reduction) {
    request_free(r);
    return HL_OOM();
  }
  hl_status_t st = hl_mpi_reduction_begin(&m->coll, dtype, reducer, r->reduction);
  if (st) {
    hl_free(r->reduction);
    r->reduction = NULL;
    request_free(r);
    return hl_status_annotate(st, "%s", hl_instruction_location(inst));
  }
  // The executor's reducer cannot run while MPI progresses another frame.
  // An in-place reduce-scatter cut into chunks writes this member's result
  // over block 0 while the reduces rooted at the others read their blocks:
  // those reads must be over first, so the chunks run one after another.
  size_t es = hl_dtype_size(dtype);
  int64_t ce = chunk_units(es);
  bool chunked = count > ce || (scatter && count * s->my_size > ce);
  bool blocking = !out_request || r->reduction->calls_executor ||
                  (scatter && chunked && send == recv);
  hl_comm_request_t *q_of = blocking ? NULL : r;  // where chunks' requests go
  hl_mpi_reduction_t *red = r->reduction;
  // The executor's reducer runs inside this thread's own blocking call only:
  // a polite wait's non-blocking form could run it from the progress thread.
  bool raw = red->calls_executor;
  int err = MPI_SUCCESS;
  MPI_Request *q = NULL;
  if (!chunked) {
    // In place (send == recv) is MPI_IN_PLACE: MPI forbids aliased buffers
    // (MPICH checks; reduce-scatter then reads every block from recv).
    const void *sb = send == recv ? MPI_IN_PLACE : send;
    if (!next_slot(q_of, &q, &st)) {
      // st says why
    } else if (!scatter) {
      err = blocking ? (raw ? MPI_Allreduce : hl_polite_allreduce)(sb, recv, (int)count,
                                                                    red->type, red->op, s->comm)
                     : MPI_Iallreduce(sb, recv, (int)count, red->type, red->op, s->comm, q);
    } else {
      err = blocking ? (raw ? MPI_Reduce_scatter_block : hl_polite_reduce_scatter_block)(
                           sb, recv, (int)count, red->type, red->op, s->comm)
                     : MPI_Ireduce_scatter_block(sb, recv, (int)count, red->type, red->op,
                                                 s->comm, q);
    }
  } else if (!scatter) {
    for (int64_t a = 0; a < count && !st && err == MPI_SUCCESS; a += ce) {
      int c = (int)(count - a < ce ? count - a : ce);
      char *rb = (char *)recv + (size_t)a * es;
      const void *sb = send == recv ? MPI_IN_PLACE : (const char *)send + (size_t)a * es;
      if (!next_slot(q_of, &q, &st)) break;
      err = blocking ? (raw ? MPI_Allreduce : hl_polite_allreduce)(sb, rb, c, red->type,
                                                                    red->op, s->comm)
                     : MPI_Iallreduce(sb, rb, c, red->type, red->op, s->comm, q);
    }
  } else {
    // Chunk [a, a + c) of every member's block: one reduce per member, rooted
    // there (contiguous on both sides, no packing; rank order as
    // reduce-scatter for non-commutative reducers).
    for (int64_t a = 0; a < count && !st && err == MPI_SUCCESS; a += ce) {
      int c = (int)(count - a < ce ? count - a : ce);
      for (int k = 0; k < s->my_size && !st && err == MPI_SUCCESS; k++) {
        const void *sb = (const char *)send + ((size_t)k * (size_t)count + (size_t)a) * es;
        void *rb = k == s->my_index ? (char *)recv + (size_t)a * es : NULL;
        if (sb == rb) sb = MPI_IN_PLACE;  // in place, member 0
        if (!next_slot(q_of, &q, &st)) break;
        err = blocking ? (raw ? MPI_Reduce : hl_polite_reduce)(sb, rb, c, red->type, red->op, k,
                                                               s->comm)
                       : MPI_Ireduce(sb, rb, c, red->type, red->op, k, s->comm, q);
      }
    }
  }
  if (blocking && out_request && !st && err == MPI_SUCCESS) {
    // Completed already: the request only reports the reducer's status.
    r->deferred = hl_mpi_reduction_end(r->reduction);
    hl_free(r->reduction);
    r->reduction = NULL;
  }
  return finish_in(base, st, err, scatter ? "MPI reduce-scatter" : "MPI all-reduce", r,
                   out_request);
}

hl_status_t hl_mpi_all_reduce(hl_comm_t *base, const hl_instruction_t *inst, hl_dtype_t dtype,
                              const void *send, void *recv, int64_t count,
                              const hl_comm_reducer_t *reducer, hl_comm_request_t **out_request) {
  return reduce_common(base, inst, dtype, send, recv, count, reducer, false, out_request);
}

hl_status_t hl_mpi_reduce_scatter(hl_comm_t *base, const hl_instruction_t *inst,
                                  hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                  const hl_comm_reducer_t *reducer,
                                  hl_comm_request_t **out_request) {
  return reduce_common(base, inst, dtype, send, recv, count, reducer, true, out_request);
}

// `c` bytes at the start of every `extent`-byte block: one element of it per
// member places the chunk of member j at j * extent.
static int block_chunk_type(size_t c, size_t extent, MPI_Datatype *out) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  int err = MPI_Type_contiguous((int)c, MPI_BYTE, &t);
  if (err == MPI_SUCCESS) err = MPI_Type_create_resized(t, 0, (MPI_Aint)extent, out);
  if (err == MPI_SUCCESS) err = MPI_Type_commit(out);
  if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  return err;
}

// All-gather (gather == true) or all-to-all of `bytes`-byte blocks in chunks.
// Datatypes are freed once posted: MPI keeps them until the transfers end.
static hl_status_t blocks_chunked(hl_comm_request_t *r, bool gather, const void *send,
                                  void *recv, size_t bytes, bool in_place, MPI_Comm comm,
                                  int *out_err) {
  size_t cb = (size_t)chunk_units(1);
  MPI_Datatype types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};  // full, remainder
  hl_status_t st = NULL;
  int err = MPI_SUCCESS;
  MPI_Request *q = NULL;
  for (size_t a = 0; a < bytes && !st && err == MPI_SUCCESS; a += cb) {
    size_t c = bytes - a < cb ? bytes - a : cb;
    MPI_Datatype *t = &types[c == cb ? 0 : 1];
    if (*t == MPI_DATATYPE_NULL && (err = block_chunk_type(c, bytes, t)) != MPI_SUCCESS) break;
    if (!next_slot(r, &q, &st)) break;
    char *rb = (char *)recv + a;
    const char *sb = (const char *)send + a;
    if (gather) {
      const void *s0 = in_place ? MPI_IN_PLACE : sb;
      err = r ? MPI_Iallgather(s0, (int)c, MPI_BYTE, rb, 1, *t, comm, q)
              : hl_polite_allgather(s0, (int)c, MPI_BYTE, rb, 1, *t, comm);
    } else {
      err = r ? MPI_Ialltoall(sb, 1, *t, rb, 1, *t, comm, q)
              : hl_polite_alltoall(sb, 1, *t, rb, 1, *t, comm);
    }
  }
  for (int i = 0; i < 2; i++)
    if (types[i] != MPI_DATATYPE_NULL) MPI_Type_free(&types[i]);
  *out_err = err;
  return st;
}

// all-gather (`gather`) or all-to-all of `bytes`-sized blocks: one MPI call,
// or blocks_chunked past the message limit.
static hl_status_t exchange_blocks(hl_comm_t *base, const hl_instruction_t *inst, bool gather,
                                   const void *send, void *recv, size_t bytes,
                                   hl_comm_request_t **out_request) {
  if (out_request) *out_request = NULL;
  hl_mpi_group_set_t *s;
  HL_RETURN_IF_ERROR(member_set(base, inst, &s));
  HL_RETURN_IF_ERROR(check_call((hl_mpi_comm_t *)base, s, inst, 0, (int64_t)bytes));
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  r->inst = inst;  // for the progress hook
  r->bytes = (int64_t)bytes;
  // all-gather is in place when the caller already put its block at its own slot.
  bool in_place = gather && send == (const char *)recv + (size_t)s->my_index * bytes;
  int err = MPI_SUCCESS;
  hl_status_t st = NULL;
  if (bytes <= (size_t)chunk_units(1)) {
    const void *sb = in_place ? MPI_IN_PLACE : send;
    int n = (int)bytes;
    MPI_Request *q = NULL;
    if (out_request && (st = hl_mpi_request_next(r, &q)) == NULL)
      err = gather ? MPI_Iallgather(sb, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm, q)
                   : MPI_Ialltoall(sb, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm, q);
    else if (!out_request)
      err = gather ? hl_polite_allgather(sb, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm)
                   : hl_polite_alltoall(sb, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm);
  } else {
    st = blocks_chunked(out_request ? r : NULL, gather, send, recv, bytes, in_place, s->comm,
                        &err);
  }
  return finish_in(base, st, err, gather ? "MPI all-gather" : "MPI all-to-all", r, out_request);
}

hl_status_t hl_mpi_all_gather(hl_comm_t *base, const hl_instruction_t *inst, const void *send,
                              void *recv, size_t bytes, hl_comm_request_t **out_request) {
  return exchange_blocks(base, inst, true, send, recv, bytes, out_request);
}

hl_status_t hl_mpi_all_to_all(hl_comm_t *base, const hl_instruction_t *inst, const void *send,
                              void *recv, size_t bytes, hl_comm_request_t **out_request) {
  return exchange_blocks(base, inst, false, send, recv, bytes, out_request);
}

// Posts `bytes` from / into buf as consecutive messages of at most the
// message limit (at least one message, so empty transfers still match).
static hl_status_t post_p2p(hl_comm_request_t *r, bool is_recv, void *buf, size_t bytes,
                            int peer, int tag, MPI_Comm comm, int *out_err) {
  size_t cb = (size_t)chunk_units(1), a = 0;
  hl_status_t st = NULL;
  int err = MPI_SUCCESS;
  do {
    size_t c = bytes - a < cb ? bytes - a : cb;
    MPI_Request *q;
    if ((st = hl_mpi_request_next(r, &q)) != NULL) break;
    err = is_recv ? MPI_Irecv((char *)buf + a, (int)c, MPI_BYTE, peer, tag, comm, q)
                  : MPI_Isend((char *)buf + a, (int)c, MPI_BYTE, peer, tag, comm, q);
    a += c;
  } while (a < bytes && err == MPI_SUCCESS);
  *out_err = err;
  return st;
}

// Permute traffic of one instruction never matches another's: the tag is
// derived from the instruction id, on a communicator of its own.
static int permute_tag(const hl_instruction_t *inst) {
  return (int)(((uint64_t)inst->id * 2654435761u) % 32000u);
}

// The source sending to / the target of `me` among pair groups [lo, hi).
static void permute_peers(const hl_process_groups_t *g, int lo, int hi, int me, int *out_src,
                          int *out_dst) {
  *out_src = *out_dst = -1;
  for (int k = lo; k < hi; k++) {
    const int *p = g->ranks + g->offsets[k];
    if (p[1] == me) *out_src = p[0];
    if (p[0] == me) *out_dst = p[1];
  }
}

// The pairs [lo, hi) of the instruction's groups; `zero_fill`: a process
// without a source gets zeros (otherwise recv is left as it is).
static hl_status_t permute_range(hl_comm_t *base, const hl_instruction_t *inst, int slot,
                                 int slots, const void *send, void *recv, size_t bytes,
                                 bool zero_fill, int *out_source,
                                 hl_comm_request_t **out_request) {
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)base;
  if (out_request) *out_request = NULL;
  hl_status_t st;
  hl_mpi_group_set_t *s = lookup(m, inst, &st);
  if (!s) return st;
  int gc = s->groups.group_count;
  if (slots < 1 || slot < 0 || slot >= slots || gc % slots != 0)
    return HL_INTERNAL_ERROR("%s: part %d of %d of its %d source-target pairs",
                             hl_instruction_location(inst), slot, slots, gc);
  int me = base->rank, src, dst;
  permute_peers(&s->groups, slot * (gc / slots), (slot + 1) * (gc / slots), me, &src, &dst);
  if (out_source) *out_source = src;
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  r->inst = inst;  // for the progress hook
  r->bytes = (int64_t)bytes;
  int tag = permute_tag(inst), err = MPI_SUCCESS;
  if (src < 0 && zero_fill) memset(recv, 0, bytes);
  if (src == me && dst == me) {
    if (recv != send) memmove(recv, send, bytes);
  } else {
    if (src >= 0) st = post_p2p(r, true, recv, bytes, src, tag, m->coll.p2p, &err);
    if (!st && err == MPI_SUCCESS && dst >= 0)
      st = post_p2p(r, false, (void *)send, bytes, dst, tag, m->coll.p2p, &err);
    if (!st && err == MPI_SUCCESS && !out_request && r->n)
      err = hl_mpi_polite_waitall(r->n, r->reqs);
  }
  return finish_in(base, st, err, "MPI collective-permute", r, out_request);
}

hl_status_t hl_mpi_collective_permute(hl_comm_t *base, const hl_instruction_t *inst,
                                      const void *send, void *recv, size_t bytes,
                                      hl_comm_request_t **out_request) {
  return permute_range(base, inst, 0, 1, send, recv, bytes, true, NULL, out_request);
}

hl_status_t hl_mpi_collective_permute_slot(hl_comm_t *base, const hl_instruction_t *inst,
                                           int slot, int slots, const void *send, void *recv,
                                           size_t bytes, int *out_source,
                                           hl_comm_request_t **out_request) {
  return permute_range(base, inst, slot, slots, send, recv, bytes, false, out_source,
                       out_request);
}

hl_status_t hl_mpi_collective_broadcast(hl_comm_t *base, const hl_instruction_t *inst,
                                        const void *send, void *recv, size_t bytes,
                                        hl_comm_request_t **out_request) {
  if (out_request) *out_request = NULL;
  hl_status_t st;
  hl_mpi_group_set_t *s = lookup((hl_mpi_comm_t *)base, inst, &st);
  if (!s) return st;
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  r->inst = inst;  // for the progress hook
  r->bytes = (int64_t)bytes;
  if (s->comm == MPI_COMM_NULL) {  // in no group: zeros
    memset(recv, 0, bytes);
    return finish_in(base, NULL, MPI_SUCCESS, "", r, out_request);
  }
  hl_status_t chk = check_call((hl_mpi_comm_t *)base, s, inst, 0, (int64_t)bytes);
  if (chk) {
    request_free(r);
    return chk;
  }
  if (s->my_index == 0 && recv != send) memcpy(recv, send, bytes);
  size_t cb = (size_t)chunk_units(1), a = 0;
  int err = MPI_SUCCESS;
  do {
    size_t c = bytes - a < cb ? bytes - a : cb;
    MPI_Request *q = NULL;
    if (out_request && (st = hl_mpi_request_next(r, &q)) != NULL) break;
    err = out_request ? MPI_Ibcast((char *)recv + a, (int)c, MPI_BYTE, 0, s->comm, q)
                      : hl_polite_bcast((char *)recv + a, (int)c, MPI_BYTE, 0, s->comm);
    a += c;
  } while (a < bytes && err == MPI_SUCCESS);
  return finish_in(base, st, err, "MPI collective-broadcast", r, out_request);
}

// Ragged exchanges beyond int counts / offsets or the message limit go
// point-to-point on the group's communicator (which no other
// point-to-point traffic uses), each piece chunked; MPI's non-overtaking
// order keeps a peer's chunks in sequence.
static hl_status_t ragged_p2p(hl_mpi_group_set_t *s, const void *send,
                              const int64_t *send_offsets, const int64_t *send_bytes,
                              void *recv, const int64_t *recv_offsets,
                              const int64_t *recv_bytes, int *out_err) {
  hl_comm_request_t *r;
  HL_RETURN_IF_ERROR(hl_mpi_request_new(&r));
  hl_status_t st = NULL;
  int err = MPI_SUCCESS;
  enum { kRaggedTag = 1 };
  for (int j = 0; j < s->my_size && !st && err == MPI_SUCCESS; j++)
    if (recv_bytes[j] > 0)
      st = post_p2p(r, true, (char *)recv + recv_offsets[j], (size_t)recv_bytes[j], j, kRaggedTag,
                    s->comm, &err);
  for (int j = 0; j < s->my_size && !st && err == MPI_SUCCESS; j++)
    if (send_bytes[j] > 0)
      st = post_p2p(r, false, (char *)send + send_offsets[j], (size_t)send_bytes[j], j,
                    kRaggedTag, s->comm, &err);
  if (!st && err == MPI_SUCCESS && r->n) err = hl_mpi_polite_waitall(r->n, r->reqs);
  *out_err = err;
  r->n = 0;
  request_free(r);
  return st;
}

hl_status_t hl_mpi_ragged_all_to_all(hl_comm_t *base, const hl_instruction_t *inst,
                                     const void *send, const int64_t *send_offsets,
                                     const int64_t *send_bytes, void *recv,
                                     const int64_t *recv_offsets, const int64_t *recv_bytes,
                                     hl_comm_request_t **out_request) {
  if (out_request) *out_request = NULL;
  hl_mpi_group_set_t *s;
  HL_RETURN_IF_ERROR(member_set(base, inst, &s));
  int g = s->my_size;
  int64_t cb = chunk_units(1);
  bool small = true;
  for (int j = 0; j < g; j++) {
    const int64_t v[4] = {send_bytes[j], send_offsets[j], recv_bytes[j], recv_offsets[j]};
    for (int k = 0; k < 4; k++)
      if (v[k] < 0)
        return HL_INVALID("%s: negative ragged size or offset", hl_instruction_location(inst));
    if (v[1] > INT_MAX || v[3] > INT_MAX || v[0] > cb || v[2] > cb) small = false;
  }
  int err = MPI_SUCCESS;
  hl_status_t st = NULL;
  if (small) {
    int *ints = hl_malloc((size_t)4 * (size_t)g * sizeof(int));
    if (!ints) return HL_OOM();
    int *sc = ints, *sd = ints + g, *rc = ints + 2 * g, *rd = ints + 3 * g;
    for (int j = 0; j < g; j++) {
      sc[j] = (int)send_bytes[j];
      sd[j] = (int)send_offsets[j];
      rc[j] = (int)recv_bytes[j];
      rd[j] = (int)recv_offsets[j];
    }
    // Ialltoallv may read the count arrays until completion, so the
    // non-blocking form completes here too (ragged exchanges are small).
    err = hl_polite_alltoallv(send, sc, sd, MPI_BYTE, recv, rc, rd, MPI_BYTE, s->comm);
    hl_free(ints);
  } else {
    st = ragged_p2p(s, send, send_offsets, send_bytes, recv, recv_offsets, recv_bytes, &err);
  }
  hl_comm_request_t *r = NULL;
  if (!st) st = hl_mpi_request_new(&r);
  if (st) return st;
  return finish_in(base, NULL, err, "MPI ragged all-to-all", r, out_request);
}

hl_status_t hl_mpi_member_set_checked(hl_comm_t *base, const hl_instruction_t *inst,
                                      int64_t what, int64_t bytes, hl_mpi_group_set_t **out) {
  HL_RETURN_IF_ERROR(member_set(base, inst, out));
  return check_call((hl_mpi_comm_t *)base, *out, inst, what, bytes);
}

int hl_mpi_set_index_of(hl_comm_t *base, const hl_instruction_t *inst) {
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)base;
  hl_status_t st;
  hl_mpi_group_set_t *s = lookup(m, inst, &st);
  hl_status_free(st);
  return s ? (int)(s - m->coll.sets) : -1;
}
