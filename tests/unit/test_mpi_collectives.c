// The MPI backend's collectives (collectives/mpi_collectives.c,
// mpi_reduce_ops.c, mpi_progress.c) called through the communicator
// interface. Run by ctest as one process (MPI singleton) and by
// tests/integration/test_collectives_backend.py under mpiexec with 2 and 4
// ranks. Expected values are closed forms of the rank count N worked out by
// hand (e.g. the sum over ranks r of (r + 1) is N(N+1)/2).
// hl-test-libs: hl_collectives hl_text hl_exec hl_ir hl_base
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/mpi_comm.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

static int g_rank, g_size;

// A module with one collective of each kind on an N x 1 grid.
static hl_module_t *make_module(bool extra) {
  int n = g_size;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb,
                    "HloModule t\n"
                    "sum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
                    "  ROOT s = s32[] add(a, b)\n}\n"
                    "ENTRY e {\n  p = s32[4] parameter(0)\n"
                    "  ar = s32[4] all-reduce(p), replica_groups={}, to_apply=sum\n"
                    "  ag = s32[%d] all-gather(p), replica_groups={}, dimensions={0}\n"
                    "  rs = s32[1] reduce-scatter(p), replica_groups={}, dimensions={0}, "
                    "to_apply=sum\n"
                    "  a2a = s32[4] all-to-all(p), replica_groups={}, dimensions={0}\n",
                    4 * n);
  // Permute: i -> i+1 for i < N-1, so rank 0 has no source.
  hl_strbuf_append(&sb, "  cp = s32[4] collective-permute(p), source_target_pairs={");
  for (int i = 0; i + 1 < n; i++) hl_strbuf_appendf(&sb, "%s{%d,%d}", i ? "," : "", i, i + 1);
  hl_strbuf_append(&sb, "}\n");
  // Broadcast and the reversed flattened group: member 0 is rank N-1.
  hl_strbuf_append(&sb, "  cb = s32[4] collective-broadcast(p), replica_groups={{");
  hl_strbuf_appendf(&sb, "%d", n - 1);
  for (int i = 0; i + 1 < n; i++) hl_strbuf_appendf(&sb, ",%d", i);
  hl_strbuf_append(&sb, "}}\n  rev = s32[4] all-reduce(p), channel_id=1, "
                        "use_global_device_ids=true, replica_groups={{");
  for (int i = n - 1; i >= 0; i--) hl_strbuf_appendf(&sb, i < n - 1 ? ",%d" : "%d", i);
  hl_strbuf_append(&sb, "}}, to_apply=sum\n");
  if (extra) hl_strbuf_append(&sb, "  x = s32[4] all-reduce(p), to_apply=sum\n");
  hl_strbuf_append(&sb, "  ROOT t = (s32[4]) tuple(ar)\n}\n");
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(hl_strbuf_cstr(&sb), sb.length, "t", &m);
  if (st) {
    fprintf(stderr, "parse: %s\n%s\n", hl_status_message(st), hl_strbuf_cstr(&sb));
    hl_status_free(st);
  }
  hl_strbuf_deinit(&sb);
  return m;
}

static const hl_instruction_t *find(const hl_module_t *m, const char *name) {
  return hl_computation_find_instruction(m->entry, name);
}

typedef struct fixture {
  hl_module_t *m;
  hl_comm_t *c;
} fixture_t;

static bool setup(fixture_t *f) {
  f->m = make_module(false);
  f->c = NULL;
  if (!f->m) return false;
  return hl_mpi_test_comm(f->m, g_size, &f->c);
}

static void teardown(fixture_t *f) {
  hl_comm_destroy(f->c);
  hl_module_destroy(f->m);
}

static hl_comm_reducer_t plain(hl_comm_reduce_op_t op) {
  return (hl_comm_reducer_t){.op = op};
}

static void test_group_of(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  int size = -1, index = -1;
  HL_ASSERT_OK(f.c->vtable->group_of(f.c, find(f.m, "ar"), &size, &index));
  CU_ASSERT_EQUAL(size, g_size);
  CU_ASSERT_EQUAL(index, g_rank);
  HL_ASSERT_OK(f.c->vtable->group_of(f.c, find(f.m, "rev"), &size, &index));
  CU_ASSERT_EQUAL(index, g_size - 1 - g_rank);
  teardown(&f);
}

// sum over r of (r+1)*(i+1) = N(N+1)/2 * (i+1); blocking, in place and
// non-blocking.
static void test_all_reduce_sum(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  const hl_instruction_t *ar = find(f.m, "ar");
  hl_comm_reducer_t add = plain(HL_COMM_REDUCE_ADD);
  int32_t x[4], y[4];
  for (int i = 0; i < 4; i++) x[i] = (g_rank + 1) * (i + 1);
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_S32, x, y, 4, &add, NULL));
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(y[i], g_size * (g_size + 1) / 2 * (i + 1));
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_S32, x, x, 4, &add, NULL));  // in place
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(x[i], g_size * (g_size + 1) / 2 * (i + 1));
  for (int i = 0; i < 4; i++) x[i] = g_rank == 0 ? 7 : 1 << g_rank;
  hl_comm_request_t *req = NULL;
  hl_comm_reducer_t bor = plain(HL_COMM_REDUCE_OR);
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_S32, x, y, 4, &bor, &req));
  CU_ASSERT_PTR_NOT_NULL(req);
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  int32_t want = 7;
  for (int r = 1; r < g_size; r++) want |= 1 << r;
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(y[i], want);
  teardown(&f);
}

// Types MPI lacks (f16, bf16) and float max with NaN (IEEE maximum
// propagates NaN; MPI_MAX would not).
static void test_all_reduce_typed(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  const hl_instruction_t *ar = find(f.m, "ar");
  hl_comm_reducer_t add = plain(HL_COMM_REDUCE_ADD), max = plain(HL_COMM_REDUCE_MAX);
  uint16_t h[3], hr[3], b[3], br[3];
  for (int i = 0; i < 3; i++) {
    h[i] = hl_f32_to_f16(0.5f * (float)(g_rank + 1) + (float)i);  // exact in f16
    b[i] = hl_f32_to_bf16(0.25f * (float)(g_rank + 1));
  }
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_F16, h, hr, 3, &add, NULL));
  hl_comm_request_t *req = NULL;
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_BF16, b, br, 3, &add, &req));
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  double n = g_size;
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_DOUBLE_EQUAL(hl_f16_to_f32(hr[i]), 0.5 * n * (n + 1) / 2 + n * i, 0);
    CU_ASSERT_DOUBLE_EQUAL(hl_bf16_to_f32(br[i]), 0.25 * n * (n + 1) / 2, 0);
  }
  float v[2] = {g_rank == 0 ? NAN : (float)g_rank, (float)g_rank}, vr[2];
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, ar, HL_F32, v, vr, 2, &max, NULL));
  CU_ASSERT_TRUE(isnan(vr[0]));
  CU_ASSERT_DOUBLE_EQUAL(vr[1], g_size - 1, 0);
  // Complex min/max has no meaning (the spec defines no order).
  float cz[2] = {1, 2}, czr[2];
  HL_ASSERT_ERROR_CONTAINS(f.c->vtable->all_reduce(f.c, ar, HL_C64, cz, czr, 1, &max, NULL),
                           "complex");
  teardown(&f);
}

// A custom reducer "take the left operand" is associative but not
// commutative: the result is the value of the group's member 0, which for
// the reversed group {N-1, ..., 0} is rank N-1's.
static hl_status_t take_left(void *state, hl_dtype_t dtype, const void *in, void *inout,
                             int64_t count) {
  (*(int *)state)++;
  memcpy(inout, in, (size_t)count * hl_dtype_size(dtype));
  return NULL;
}

static hl_status_t failing(void *state, hl_dtype_t dtype, const void *in, void *inout,
                           int64_t count) {
  (void)state, (void)dtype, (void)in, (void)inout, (void)count;
  return HL_INVALID("reducer failed on purpose");
}

static void test_all_reduce_custom(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  const hl_instruction_t *rev = find(f.m, "rev");
  int calls = 0;
  hl_comm_reducer_t left = {.op = HL_COMM_REDUCE_CUSTOM, .combine = take_left, .state = &calls};
  int32_t x[5], y[5];
  for (int i = 0; i < 5; i++) x[i] = 100 * g_rank + i;
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, rev, HL_S32, x, y, 5, &left, NULL));
  for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(y[i], 100 * (g_size - 1) + i);
  // The async form of a custom reducer completes in the call (documented).
  hl_comm_request_t *req = NULL;
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, rev, HL_S32, x, y, 5, &left, &req));
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(y[i], 100 * (g_size - 1) + i);
  // s4 has no MPI type: a plain add on it goes through combine too.
  int8_t s4[2] = {1, 2}, s4r[2];
  hl_comm_reducer_t s4add = {.op = HL_COMM_REDUCE_ADD, .combine = take_left, .state = &calls};
  HL_ASSERT_OK(f.c->vtable->all_reduce(f.c, rev, HL_S4, s4, s4r, 2, &s4add, NULL));
  CU_ASSERT_EQUAL(s4r[0], 1);
  if (g_size > 1) {
    CU_ASSERT_TRUE(calls > 0);
    // An error inside the reducer comes back on the ranks that ran it.
    hl_comm_reducer_t bad = {.op = HL_COMM_REDUCE_CUSTOM, .combine = failing};
    hl_status_t st = f.c->vtable->all_reduce(f.c, rev, HL_S32, x, y, 5, &bad, NULL);
    int mine = st && strstr(hl_status_message(st), "on purpose") ? 1 : 0, any = 0;
    hl_status_free(st);
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CU_ASSERT_EQUAL(any, 1);
  }
  teardown(&f);
}

static void test_gather_scatter_a2a(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  int n = g_size;
  int32_t two[2] = {g_rank, -g_rank};
  int32_t *all = hl_calloc((size_t)(2 * n), sizeof(int32_t));
  hl_comm_request_t *req = NULL;
  HL_ASSERT_OK(f.c->vtable->all_gather(f.c, find(f.m, "ag"), two, all, sizeof(two), &req));
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  for (int k = 0; k < n; k++) {
    CU_ASSERT_EQUAL(all[2 * k], k);
    CU_ASSERT_EQUAL(all[2 * k + 1], -k);
  }
  // reduce-scatter: block k of rank r is 10r + k; member me gets
  // sum_r (10r + me) = 10 N(N-1)/2 + N me.
  int32_t *blocks = hl_calloc((size_t)n, sizeof(int32_t)), got = -1;
  for (int k = 0; k < n; k++) blocks[k] = 10 * g_rank + k;
  hl_comm_reducer_t add = plain(HL_COMM_REDUCE_ADD);
  HL_ASSERT_OK(f.c->vtable->reduce_scatter(f.c, find(f.m, "rs"), HL_S32, blocks, &got, 1, &add,
                                           NULL));
  CU_ASSERT_EQUAL(got, 10 * n * (n - 1) / 2 + n * g_rank);
  // all-to-all: block k of rank r is 100r + k; we get 100j + me from j.
  int32_t *recv = hl_calloc((size_t)n, sizeof(int32_t));
  for (int k = 0; k < n; k++) blocks[k] = 100 * g_rank + k;
  HL_ASSERT_OK(f.c->vtable->all_to_all(f.c, find(f.m, "a2a"), blocks, recv, sizeof(int32_t),
                                       NULL));
  for (int j = 0; j < n; j++) CU_ASSERT_EQUAL(recv[j], 100 * j + g_rank);
  // ragged: send j+1 values (all equal to 1000r + j) to member j, packed at
  // offsets 0, 1, 3, ...; receive me+1 values from each j, placed by j.
  int64_t *so = hl_calloc((size_t)n * 4, sizeof(int64_t)), *sbytes = so + n, *ro = so + 2 * n,
          *rbytes = so + 3 * n;
  int32_t *sbuf = hl_calloc((size_t)(n * (n + 1) / 2), sizeof(int32_t));
  int32_t *rbuf = hl_calloc((size_t)(n * (g_rank + 1)), sizeof(int32_t));
  for (int j = 0, off = 0; j < n; off += j + 1, j++) {
    so[j] = off * 4;
    sbytes[j] = (j + 1) * 4;
    for (int q = 0; q <= j; q++) sbuf[off + q] = 1000 * g_rank + j;
    ro[j] = (int64_t)j * (g_rank + 1) * 4;
    rbytes[j] = (g_rank + 1) * 4;
  }
  HL_ASSERT_OK(f.c->vtable->ragged_all_to_all(f.c, find(f.m, "a2a"), sbuf, so, sbytes, rbuf, ro,
                                              rbytes, NULL));
  for (int j = 0; j < n; j++)
    for (int q = 0; q <= g_rank; q++) CU_ASSERT_EQUAL(rbuf[j * (g_rank + 1) + q], 1000 * j + g_rank);
  hl_free(so);
  hl_free(sbuf);
  hl_free(rbuf);
  hl_free(all);
  hl_free(blocks);
  hl_free(recv);
  teardown(&f);
}

static void test_permute_broadcast(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  int32_t x[4], y[4];
  for (int i = 0; i < 4; i++) x[i] = 10 * g_rank + i + 1;
  hl_comm_request_t *req = NULL;
  HL_ASSERT_OK(f.c->vtable->collective_permute(f.c, find(f.m, "cp"), x, y, sizeof(x), &req));
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  for (int i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(y[i], g_rank == 0 ? 0 : 10 * (g_rank - 1) + i + 1);  // rank 0: no source
  HL_ASSERT_OK(f.c->vtable->collective_broadcast(f.c, find(f.m, "cb"), x, y, sizeof(x), NULL));
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(y[i], 10 * (g_size - 1) + i + 1);
  teardown(&f);
}

// Invalid groups fail in prepare on every rank; ranks with different
// programs fail the fingerprint agreement on every rank. Neither hangs.
static void test_prepare_errors(void) {
  hl_comm_t *c = NULL;
  HL_ASSERT_OK(hl_mpi_comm_create(MPI_COMM_WORLD, &c));
  const char *bad =
      "HloModule b\nsum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
      "  ROOT s = s32[] add(a, b)\n}\nENTRY e {\n  p = s32[4] parameter(0)\n"
      "  ROOT ar = s32[4] all-reduce(p), replica_groups={{0,0}}, to_apply=sum\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(bad, strlen(bad), "b", &m));
  HL_ASSERT_ERROR_CONTAINS(c->vtable->prepare(c, m, g_size, 1), "more than once");
  hl_module_destroy(m);
  if (g_size > 1) {
    // Rank 0 has one collective more (as in an MPMD job): prepare works on
    // every rank, and a call where the group disagrees fails everywhere.
    m = make_module(g_rank == 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    HL_ASSERT_OK(c->vtable->prepare(c, m, g_size, 1));
    int32_t x[4] = {1, 2, 3, 4}, y[4 * 64];
    hl_comm_reducer_t add = plain(HL_COMM_REDUCE_ADD);
    HL_ASSERT_OK(c->vtable->all_reduce(c, find(m, "ar"), HL_S32, x, y, 4, &add, NULL));
    CU_ASSERT_EQUAL(y[0], g_size);
    hl_status_t st = g_rank == 0
                         ? c->vtable->all_reduce(c, find(m, "x"), HL_S32, x, y, 4, &add, NULL)
                         : c->vtable->all_gather(c, find(m, "ag"), x, y, sizeof(x), NULL);
    HL_ASSERT_ERROR_CONTAINS(st, "run different collectives");
    hl_module_destroy(m);
  }
  // A collective that was never prepared is an error, not a crash.
  m = make_module(false);
  HL_ASSERT_OK(c->vtable->prepare(c, m, g_size, 1));
  hl_module_t *other = make_module(false);
  int s, i;
  HL_ASSERT_ERROR_CONTAINS(c->vtable->group_of(c, find(other, "ar"), &s, &i), "not prepared");
  hl_module_destroy(other);
  hl_module_destroy(m);
  hl_comm_destroy(c);
}

static CU_TestInfo tests[] = {
    {"group_of", test_group_of},
    {"all_reduce sum / in place / async", test_all_reduce_sum},
    {"all_reduce f16 bf16 NaN-max, complex max", test_all_reduce_typed},
    {"all_reduce custom reducer order", test_all_reduce_custom},
    {"all_gather reduce_scatter all_to_all ragged", test_gather_scatter_a2a},
    {"collective_permute broadcast", test_permute_broadcast},
    {"prepare errors", test_prepare_errors},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  return hl_mpi_test_run("mpi_collectives", tests);
}
